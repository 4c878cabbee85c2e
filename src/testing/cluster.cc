#include "testing/cluster.h"

#include "common/check.h"
#include "common/mutex.h"

namespace draplane::testing {

Cluster::Cluster() : api_(std::make_unique<TestApi>(TestApiOptions{.clock = &clock_})) {
  auto bump = [this] {
    MutexLock lock(mu_);
    ++changes_;
    cv_.NotifyAll();
  };
  pod_watch_ = std::make_unique<client::Informer<api::corev1::Pod>>(*api_);
  pod_watch_->AddHandlers({.on_add = [bump](const auto&) { bump(); },
                           .on_update = [bump](const auto&, const auto&) { bump(); },
                           .on_delete = [bump](const auto&) { bump(); }});
  claim_watch_ = std::make_unique<client::Informer<rv1::ResourceClaim>>(*api_);
  claim_watch_->AddHandlers({.on_add = [bump](const auto&) { bump(); },
                             .on_update = [bump](const auto&, const auto&) { bump(); },
                             .on_delete = [bump](const auto&) { bump(); }});
  pod_watch_->Start();
  claim_watch_->Start();
  pod_watch_->WaitForSync();
  claim_watch_->WaitForSync();
}

Cluster::~Cluster() {
  pod_watch_->Stop();
  claim_watch_->Stop();
}

void Cluster::Namespace(const std::string& name) {
  api::corev1::Namespace n;
  n.metadata.name = name;
  DRAPLANE_CHECK(client::Create(*api_, n).ok());
}

void Cluster::Node(const std::string& name, std::map<std::string, std::string> labels,
                   std::map<std::string, std::string> allocatable) {
  api::corev1::Node node;
  node.metadata.name = name;
  for (auto& [k, v] : labels) node.metadata.labels[k] = v;
  node.metadata.labels["kubernetes.io/hostname"] = name;
  allocatable.emplace("pods", "110");
  allocatable.emplace("cpu", "8");
  allocatable.emplace("memory", "32Gi");
  for (auto& [k, v] : allocatable) {
    node.status.allocatable[k] = api::Quantity::Parse(v).value();
    node.status.capacity[k] = api::Quantity::Parse(v).value();
  }
  StatusOr<api::corev1::Node> created = client::Create(*api_, node);
  DRAPLANE_CHECK_MSG(created.ok(), created.status().ToString().c_str());
}

void Cluster::Class(const std::string& name, const std::string& expression,
                    const std::string& extended_resource) {
  rv1::DeviceClass c;
  c.metadata.name = name;
  if (!expression.empty()) {
    c.spec.selectors.emplace_back();
    c.spec.selectors.back().cel.emplace();
    c.spec.selectors.back().cel->expression = expression;
  }
  if (!extended_resource.empty()) c.spec.extended_resource_name = extended_resource;
  DRAPLANE_CHECK(client::Create(*api_, c).ok());
}

void Cluster::Slice(const std::string& node, const std::string& driver,
                    const std::vector<DeviceSpec>& devices) {
  rv1::ResourceSlice s;
  s.metadata.name = node + "-" + driver;
  s.spec.driver = driver;
  s.spec.node_name = node;
  s.spec.pool.name = node;
  s.spec.pool.generation = 1;
  s.spec.pool.resource_slice_count = 1;
  for (const DeviceSpec& d : devices) {
    rv1::Device device;
    device.name = d.name;
    for (const auto& [k, v] : d.attributes) device.attributes[k].string_value = v;
    s.spec.devices.push_back(std::move(device));
  }
  StatusOr<rv1::ResourceSlice> created = client::Create(*api_, s);
  DRAPLANE_CHECK_MSG(created.ok(), created.status().ToString().c_str());
}

rv1::ResourceClaim Cluster::ClaimSpec(const std::string& name, const std::string& device_class,
                                      int64_t count, const std::string& selector) {
  rv1::ResourceClaim c;
  c.metadata.name = name;
  c.metadata.namespace_ = ns;
  rv1::DeviceRequest r;
  r.name = "req";
  r.exactly.emplace();
  r.exactly->device_class_name = device_class;
  r.exactly->allocation_mode = "ExactCount";
  r.exactly->count = count;
  if (!selector.empty()) {
    r.exactly->selectors.emplace_back();
    r.exactly->selectors.back().cel.emplace();
    r.exactly->selectors.back().cel->expression = selector;
  }
  c.spec.devices.requests.push_back(std::move(r));
  return c;
}

void Cluster::Claim(const rv1::ResourceClaim& claim) {
  StatusOr<rv1::ResourceClaim> created = client::Create(*api_, claim);
  DRAPLANE_CHECK_MSG(created.ok(), created.status().ToString().c_str());
}

void Cluster::Template(const std::string& name, const rv1::ResourceClaimSpec& spec) {
  rv1::ResourceClaimTemplate t;
  t.metadata.name = name;
  t.metadata.namespace_ = ns;
  t.spec.spec = spec;
  DRAPLANE_CHECK(client::Create(*api_, t).ok());
}

api::corev1::Pod Cluster::PodSpec(const std::string& name, const std::vector<std::string>& claims) {
  api::corev1::Pod pod;
  pod.metadata.name = name;
  pod.metadata.namespace_ = ns;
  api::corev1::Container c;
  c.name = "main";
  c.image = "registry.example/app:1";
  for (const std::string& claim : claims) {
    api::corev1::PodResourceClaim entry;
    if (claim.starts_with("tmpl:")) {
      entry.name = claim.substr(5);
      entry.resource_claim_template_name = claim.substr(5);
    } else {
      entry.name = claim;
      entry.resource_claim_name = claim;
    }
    pod.spec.resource_claims.push_back(entry);
    api::corev1::ResourceClaim ref;
    ref.name = entry.name;
    c.resources.claims.push_back(ref);
  }
  pod.spec.containers.push_back(std::move(c));
  return pod;
}

void Cluster::Pod(const api::corev1::Pod& pod) {
  StatusOr<api::corev1::Pod> created = client::Create(*api_, pod);
  DRAPLANE_CHECK_MSG(created.ok(), created.status().ToString().c_str());
}

bool Cluster::WaitUntil(const std::function<bool()>& done) {
  MutexLock lock(mu_);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    uint64_t seen = changes_;
    lock.Unlock();
    bool ok = done();
    lock.Lock();
    if (ok) return true;
    // Wait for the next change (or re-check every 100 ms: conditions may also depend on
    // resources the watch does not cover).
    if (!cv_.WaitUntil(
            lock,
            std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)),
            [&]() DRAPLANE_REQUIRES(mu_) { return changes_ != seen; }) &&
        std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
  }
}

StatusOr<api::corev1::Pod> Cluster::GetPod(const std::string& name) {
  return client::Get<api::corev1::Pod>(*api_, ns, name);
}

StatusOr<rv1::ResourceClaim> Cluster::GetClaim(const std::string& name) {
  return client::Get<rv1::ResourceClaim>(*api_, ns, name);
}

std::vector<rv1::ResourceClaim> Cluster::Claims() {
  return client::List<rv1::ResourceClaim>(*api_, "").value().items;
}

std::vector<api::corev1::Pod> Cluster::Pods() {
  return client::List<api::corev1::Pod>(*api_, "").value().items;
}

std::vector<api::corev1::Event> Cluster::Events() {
  return client::List<api::corev1::Event>(*api_, "").value().items;
}

}  // namespace draplane::testing
