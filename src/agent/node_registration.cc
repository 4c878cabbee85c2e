#include "agent/node_registration.h"

#include <algorithm>
#include <vector>

#include "api/gen/coordination_v1_types.h"
#include "api/gen/core_v1_types.h"
#include "client/typed.h"
#include "common/log.h"

namespace draplane::agent {

namespace cv1 = api::corev1;

namespace {

Status EnsureLease(client::ApiClient& api, const NodeRegistration& options, const Clock& clock) {
  namespace co = api::coordinationv1;
  const api::Time now = api::Time::MicroFromTimestamp(clock.Now());
  StatusOr<co::Lease> got = client::Get<co::Lease>(api, kNodeLeaseNamespace, options.node_name);
  if (got.ok()) {
    got->spec.renew_time = now;
    got->spec.holder_identity = options.node_name;
    got->spec.lease_duration_seconds = options.lease_duration_seconds;
    return client::Update(api, *got, options.field_manager).status();
  }
  if (got.status().code() != StatusCode::kNotFound) return got.status();
  co::Lease lease;
  lease.metadata.name = options.node_name;
  lease.metadata.namespace_ = std::string(kNodeLeaseNamespace);
  StatusOr<cv1::Node> node = client::Get<cv1::Node>(api, "", options.node_name);
  if (node.ok()) {
    api::metav1::OwnerReference owner;
    owner.api_version = "v1";
    owner.kind = "Node";
    owner.name = node->metadata.name;
    owner.uid = node->metadata.uid;
    lease.metadata.owner_references.push_back(std::move(owner));
  }
  lease.spec.holder_identity = options.node_name;
  lease.spec.lease_duration_seconds = options.lease_duration_seconds;
  lease.spec.renew_time = now;
  StatusOr<co::Lease> created = client::Create(api, lease, options.field_manager);
  if (!created.ok() && created.status().code() == StatusCode::kNotFound) {
    // The API server normally creates kube-node-lease; a bare one (tests) may not have.
    cv1::Namespace ns;
    ns.metadata.name = std::string(kNodeLeaseNamespace);
    StatusOr<cv1::Namespace> created_ns = client::Create(api, ns, options.field_manager);
    if (!created_ns.ok() && created_ns.status().code() != StatusCode::kAlreadyExists) {
      return created_ns.status();
    }
    created = client::Create(api, lease, options.field_manager);
  }
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  return Status::Ok();
}

}  // namespace

cv1::Node RegisteredNode(const NodeRegistration& options, Timestamp now) {
  cv1::Node node;
  node.metadata.name = options.node_name;
  node.metadata.labels.insert(options.labels.begin(), options.labels.end());
  node.metadata.labels.emplace("kubernetes.io/hostname", options.node_name);
  node.metadata.labels.emplace("kubernetes.io/os", "linux");
  node.metadata.annotations[std::string(kAgentAnnotation)] = "true";
  std::map<std::string, api::Quantity, std::less<>> capacity(options.capacity.begin(),
                                                             options.capacity.end());
  for (const auto& [name, value] :
       {std::pair<const char*, const char*>{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}}) {
    if (capacity.count(name) == 0) capacity.emplace(name, *api::Quantity::Parse(value));
  }
  node.status.capacity = capacity;
  node.status.allocatable = std::move(capacity);
  // The kubelet's four conditions, in its order: the node lifecycle controller turns each
  // Unknown when the heartbeats stop, and one never posted would read "Kubelet never posted
  // node status." for ever after.
  struct Reported {
    const char* type;
    const char* status;
    const char* reason;
    std::string message;
  };
  for (const Reported& r : {Reported{"MemoryPressure", "False", "KubeletHasSufficientMemory",
                                     "kubelet has sufficient memory available"},
                            Reported{"DiskPressure", "False", "KubeletHasNoDiskPressure",
                                     "kubelet has no disk pressure"},
                            Reported{"PIDPressure", "False", "KubeletHasSufficientPID",
                                     "kubelet has sufficient PID available"},
                            Reported{"Ready", "True", "KubeletReady", options.ready_message}}) {
    cv1::NodeCondition c;
    c.type = r.type;
    c.status = r.status;
    c.reason = r.reason;
    c.message = r.message;
    c.last_heartbeat_time = api::Time::FromTimestamp(now);
    c.last_transition_time = c.last_heartbeat_time;
    node.status.conditions.push_back(std::move(c));
  }
  node.status.node_info.kubelet_version = options.kubelet_version;
  node.status.node_info.operating_system = "linux";
  return node;
}

Status SyncNodeRegistration(client::ApiClient& api, const NodeRegistration& options,
                            const Clock& clock, Timestamp* last_status) {
  const cv1::Node desired = RegisteredNode(options, clock.Now());
  StatusOr<cv1::Node> got = client::Get<cv1::Node>(api, "", options.node_name);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound) return got.status();
  cv1::Node node;
  if (got.ok()) {
    node = std::move(*got);
  } else {
    node.metadata.name = options.node_name;
  }
  // Metadata: labels and the agent annotation.
  bool meta_changed = !got.ok();
  for (const auto& [k, v] : desired.metadata.labels) {
    auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) {
      node.metadata.labels[k] = v;
      meta_changed = true;
    }
  }
  for (const auto& [k, v] : desired.metadata.annotations) {
    if (node.metadata.annotations[k] != v) {
      node.metadata.annotations[k] = v;
      meta_changed = true;
    }
  }
  if (!got.ok()) {
    StatusOr<cv1::Node> created = client::Create(api, node, options.field_manager);
    if (!created.ok()) return created.status();
    node = std::move(*created);
    log::Info("node {}: registered", options.node_name);
  } else if (meta_changed) {
    StatusOr<cv1::Node> updated = client::Update(api, node, options.field_manager);
    if (!updated.ok()) return updated.status();
    node = std::move(*updated);
  }
  // Status: capacity, allocatable, Ready.
  bool status_changed = node.status.capacity != desired.status.capacity ||
                        node.status.allocatable != desired.status.allocatable;
  auto find = [&](const std::string& type) -> const cv1::NodeCondition* {
    for (const cv1::NodeCondition& c : node.status.conditions) {
      if (c.type == type) return &c;
    }
    return nullptr;
  };
  for (const cv1::NodeCondition& want : desired.status.conditions) {
    const cv1::NodeCondition* have = find(want.type);
    status_changed = status_changed || have == nullptr || have->status != want.status;
  }
  if (status_changed || clock.Now() - *last_status >= options.status_interval) {
    node.status.capacity = desired.status.capacity;
    node.status.allocatable = desired.status.allocatable;
    // The reported conditions replace their earlier selves (a transition keeps its time while
    // the status stays); conditions others report stay.
    std::vector<cv1::NodeCondition> conditions;
    for (cv1::NodeCondition want : desired.status.conditions) {
      if (const cv1::NodeCondition* have = find(want.type);
          have != nullptr && have->status == want.status) {
        want.last_transition_time = have->last_transition_time;
      }
      conditions.push_back(std::move(want));
    }
    for (cv1::NodeCondition& other : node.status.conditions) {
      if (std::none_of(desired.status.conditions.begin(), desired.status.conditions.end(),
                       [&](const cv1::NodeCondition& d) { return d.type == other.type; })) {
        conditions.push_back(std::move(other));
      }
    }
    node.status.conditions = std::move(conditions);
    node.status.node_info.kubelet_version = desired.status.node_info.kubelet_version;
    node.status.node_info.operating_system = desired.status.node_info.operating_system;
    StatusOr<cv1::Node> updated = client::UpdateStatus(api, node, options.field_manager);
    if (!updated.ok()) return updated.status();
    *last_status = clock.Now();
  }
  return EnsureLease(api, options, clock);
}

}  // namespace draplane::agent
