// draplane_scheduler_perf: recreates upstream's scheduler_perf DRA workloads
// (test/integration/scheduler_perf/dra/performance-config.yaml, ../shared/docs/upstream-dra.md
// §7) against a running API server with a scheduler and a claim controller, and reports Pods/s
// and per-Pod scheduling latency.
//
// The driver is only an API client: it creates the nodes, the ResourceSlices (one per node,
// `devices-per-node` devices of the test driver test-driver.cdi.k8s.io), the DeviceClass, the
// claim template (or shared claims) and the Pods, and watches the Pods get bound.
//
//   --workload template  SchedulingWithResourceClaimTemplate: init Pods, then measured Pods,
//                        each with a claim from the template (one device)
//   --workload claim     SchedulingWithResourceClaim: one shared claim per `pods-per-claim`
//                        Pods
//   --workload steady    SteadyStateClusterResourceClaimTemplate: after `init-pods` Pods
//                        fill the cluster, `concurrency` Pods at a time are created, each deleted
//                        as soon as it is bound and replaced by a new one, for `duration`
//   --variant plain|selector|match
//                        selector: the template's request carries a CEL selector;
//                        match: two requests with a matchAttribute constraint on the device's
//                        NUMA node (each node has two NUMA nodes of devices-per-node/2 devices)
//   --allocation-quota   an Allocation-mode ResourceQuota on the class (issue 20), never
//                        exhausted: the quota constraint in every search and every Pod's charge
//   --tenants N          the Pods spread round-robin over N namespaces perf-0 ... (default 1:
//                        all in `perf`), each with its template (and quota)
//   --sharing-policy     the DeviceSharingPolicy `default` (issue 22): the class in one domain,
//                        tenant perf-i weighted i+1: the fair-share order in every pop
//
// Throughput is measured Pods / (last measured Pod bound - first measured Pod created); latency
// is, per measured Pod, bound time - creation request time. Output: a human line and a JSON line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/informer.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "client/typed.h"
#include "common/clock.h"
#include "common/status_macros.h"

namespace draplane::bench {
namespace {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

constexpr char kDriver[] = "test-driver.cdi.k8s.io";
constexpr char kNamespace[] = "perf";

struct Flags {
  std::string kubeconfig;
  std::string workload = "template";
  std::string variant = "plain";
  std::string name;
  int nodes = 500;
  int devices_per_node = 10;
  int init_pods = 2500;
  int measure_pods = 2500;
  int pods_per_claim = 5;
  int concurrency = 10;
  double duration_seconds = 10;
  int threads = 8;
  double target = 0;  // Pods/s; 0: none
  // An Allocation-mode ResourceQuota on the class in the namespace (issue 20): every Pod is
  // charged by the scheduler; the limit is never reached.
  bool allocation_quota = false;
  int tenants = 1;
  bool sharing_policy = false;
};

// The namespace of the Pod numbered `i` (and of its claims).
std::string NamespaceOf(const Flags& flags, int i) {
  return flags.tenants <= 1 ? kNamespace : kNamespace + ("-" + std::to_string(i % flags.tenants));
}

// Every namespace Pods are created in.
std::vector<std::string> Namespaces(const Flags& flags) {
  std::vector<std::string> out;
  for (int i = 0; i < std::max(flags.tenants, 1); ++i) out.push_back(NamespaceOf(flags, i));
  return out;
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Watches the pods of the namespace (of every namespace with tenants) and remembers when each got
// bound (Pod names are unique across the namespaces).
class BoundTracker {
 public:
  BoundTracker(client::ApiClient& api, const Flags& flags)
      : informer_(api, client::InformerOptions{.namespace_ = flags.tenants > 1 ? "" : kNamespace}) {
    informer_.AddHandlers({.on_add = [this](const auto& p) { Saw(*p); },
                           .on_update = [this](const auto&, const auto& p) { Saw(*p); }});
    informer_.Start();
    informer_.WaitForSync();
  }
  ~BoundTracker() { informer_.Stop(); }

  void Saw(const Pod& pod) {
    if (pod.spec.node_name.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (bound_.emplace(pod.metadata.name, RealClock().MonotonicNow()).second) {
      ++bound_by_prefix_[pod.metadata.name.substr(0, pod.metadata.name.rfind('-') + 1)];
      cv_.notify_all();
    }
  }
  // Waits until `n` pods named `prefix`<number> are bound (or `limit` passes).
  bool WaitBound(const std::string& prefix, int n, Duration limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return Count(prefix) >= n; });
  }
  std::optional<Duration> BoundAt(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bound_.find(name);
    if (it == bound_.end()) return std::nullopt;
    return it->second;
  }
  int CountBound(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    return Count(prefix);
  }

 private:
  int Count(const std::string& prefix) const {
    auto it = bound_by_prefix_.find(prefix);
    return it == bound_by_prefix_.end() ? 0 : it->second;
  }
  client::Informer<Pod> informer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Duration> bound_;
  std::map<std::string, int> bound_by_prefix_;  // "init-", "measure-", "steady-"
};

// Runs f(i) for i in [0, n) on `threads` threads; returns the first error.
Status Parallel(int n, int threads, const std::function<Status(int)>& f) {
  std::atomic<int> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        Status s = f(i);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first.ok()) first = s;
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return first;
}

Status CreateIgnoringExisting(const Status& s) {
  return s.code() == StatusCode::kAlreadyExists ? Status::Ok() : s;
}

rv1::DeviceRequest Request(const std::string& name, const Flags& flags) {
  rv1::DeviceRequest r;
  r.name = name;
  r.exactly.emplace();
  r.exactly->device_class_name = "test-class";
  r.exactly->allocation_mode = "ExactCount";
  r.exactly->count = 1;
  if (flags.variant == "selector") {
    r.exactly->selectors.emplace_back();
    r.exactly->selectors.back().cel.emplace();
    r.exactly->selectors.back().cel->expression =
        R"(device.attributes["test-driver.cdi.k8s.io"].model == "perf-gpu")";
  }
  return r;
}

rv1::ResourceClaimSpec ClaimSpec(const Flags& flags) {
  rv1::ResourceClaimSpec spec;
  spec.devices.requests.push_back(Request("req-0", flags));
  if (flags.variant == "match") {
    spec.devices.requests.push_back(Request("req-1", flags));
    rv1::DeviceConstraint c;
    c.requests = {"req-0", "req-1"};
    c.match_attribute = std::string(kDriver) + "/numa";
    spec.devices.constraints.push_back(c);
  }
  return spec;
}

Status Setup(client::ApiClient& api, const Flags& flags) {
  rv1::DeviceClass c;
  c.metadata.name = "test-class";
  c.spec.selectors.emplace_back();
  c.spec.selectors.back().cel.emplace();
  c.spec.selectors.back().cel->expression = R"(device.driver == "test-driver.cdi.k8s.io")";
  DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, c).status()));
  for (const std::string& name : Namespaces(flags)) {
    api::corev1::Namespace ns;
    ns.metadata.name = name;
    DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, ns).status()));
    if (flags.allocation_quota) {
      api::corev1::ResourceQuota q;
      q.metadata.name = "devices";
      q.metadata.namespace_ = name;
      q.metadata.annotations["draplane.dev/device-quota-mode"] = "Allocation";
      q.spec.hard["test-class.deviceclass.resource.k8s.io/devices"] =
          api::Quantity::FromInt64(1'000'000);
      DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, q).status()));
    }
    rv1::ResourceClaimTemplate t;
    t.metadata.name = "test-claim-template";
    t.metadata.namespace_ = name;
    t.spec.spec = ClaimSpec(flags);
    DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, t).status()));
  }
  if (flags.sharing_policy) {
    api::draplanev1alpha1::DeviceSharingPolicy policy;
    policy.metadata.name = "default";
    api::draplanev1alpha1::SharingDomain& domain = policy.spec.domains.emplace_back();
    domain.name = "devices";
    domain.device_classes = {"test-class"};
    std::vector<std::string> namespaces = Namespaces(flags);
    for (size_t i = 0; i < namespaces.size(); ++i) {
      api::draplanev1alpha1::SharingTenant& tenant = policy.spec.tenants.emplace_back();
      tenant.namespaces = {namespaces[i]};
      tenant.weight = static_cast<int32_t>(i + 1);
    }
    DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, policy).status()));
  }
  return Parallel(flags.nodes, flags.threads, [&](int i) -> Status {
    std::string name = "node-" + std::to_string(i);
    api::corev1::Node node;
    node.metadata.name = name;
    node.metadata.labels["kubernetes.io/hostname"] = name;
    for (auto [k, v] : {std::pair{"pods", "110"}, {"cpu", "4"}, {"memory", "32Gi"}}) {
      node.status.allocatable[k] = api::Quantity::Parse(v).value();
      node.status.capacity[k] = api::Quantity::Parse(v).value();
    }
    DRAPLANE_RETURN_IF_ERROR(CreateIgnoringExisting(client::Create(api, node).status()));
    rv1::ResourceSlice s;
    s.metadata.name = name + "-" + kDriver;
    s.spec.driver = kDriver;
    s.spec.node_name = name;
    s.spec.pool.name = name;
    s.spec.pool.generation = 1;
    s.spec.pool.resource_slice_count = 1;
    for (int d = 0; d < flags.devices_per_node; ++d) {
      rv1::Device device;
      device.name = "device-" + std::to_string(d);
      device.attributes["model"].string_value = "perf-gpu";
      device.attributes["numa"].int_value = d < flags.devices_per_node / 2 ? 0 : 1;
      s.spec.devices.push_back(std::move(device));
    }
    return CreateIgnoringExisting(client::Create(api, s).status());
  });
}

Pod MakePod(const std::string& namespace_, const std::string& name, const std::string& claim,
            bool from_template) {
  Pod pod;
  pod.metadata.name = name;
  pod.metadata.namespace_ = namespace_;
  api::corev1::PodResourceClaim entry;
  entry.name = "resource";
  if (from_template) {
    entry.resource_claim_template_name = claim;
  } else {
    entry.resource_claim_name = claim;
  }
  pod.spec.resource_claims.push_back(entry);
  api::corev1::Container c;
  c.name = "pause";
  c.image = "registry.k8s.io/pause:3.10";
  api::corev1::ResourceClaim ref;
  ref.name = "resource";
  c.resources.claims.push_back(ref);
  pod.spec.containers.push_back(std::move(c));
  return pod;
}

// Creates `count` pods named prefix-<i>; returns each pod's creation start time.
StatusOr<std::vector<Duration>> CreatePods(client::ApiClient& api, const Flags& flags,
                                           const std::string& prefix, int count) {
  std::vector<Duration> started(static_cast<size_t>(count));
  bool shared = flags.workload == "claim";
  if (shared) {
    int claims = (count + flags.pods_per_claim - 1) / flags.pods_per_claim;
    DRAPLANE_RETURN_IF_ERROR(Parallel(claims, flags.threads, [&](int i) -> Status {
      rv1::ResourceClaim claim;
      claim.metadata.name = prefix + "-claim-" + std::to_string(i);
      claim.metadata.namespace_ = NamespaceOf(flags, i * flags.pods_per_claim);
      claim.spec = ClaimSpec(flags);
      return CreateIgnoringExisting(client::Create(api, claim).status());
    }));
  }
  DRAPLANE_RETURN_IF_ERROR(Parallel(count, flags.threads, [&](int i) -> Status {
    std::string claim = shared ? prefix + "-claim-" + std::to_string(i / flags.pods_per_claim)
                               : "test-claim-template";
    started[static_cast<size_t>(i)] = RealClock().MonotonicNow();
    // A shared claim's Pods are in its namespace (that of its first Pod).
    std::string ns =
        NamespaceOf(flags, shared ? i / flags.pods_per_claim * flags.pods_per_claim : i);
    return client::Create(api, MakePod(ns, prefix + "-" + std::to_string(i), claim, !shared))
        .status();
  }));
  return started;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int Run(const Flags& flags) {
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(flags.kubeconfig);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  config->user_agent = "draplane-scheduler-perf";
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) {
    std::fprintf(stderr, "%s\n", api.status().ToString().c_str());
    return 2;
  }
  Status setup = Setup(**api, flags);
  if (!setup.ok()) {
    std::fprintf(stderr, "setup: %s\n", setup.ToString().c_str());
    return 2;
  }
  BoundTracker tracker(**api, flags);
  const Duration limit = std::chrono::minutes(10);

  if (flags.init_pods > 0) {
    StatusOr<std::vector<Duration>> init = CreatePods(**api, flags, "init", flags.init_pods);
    if (!init.ok() || !tracker.WaitBound("init-", flags.init_pods, limit)) {
      std::fprintf(stderr, "init: %d of %d pods bound (%s)\n", tracker.CountBound("init-"),
                   flags.init_pods, init.ok() ? "timeout" : init.status().ToString().c_str());
      return 1;
    }
  }

  std::vector<double> latencies;
  int measured = 0;
  Duration begin = RealClock().MonotonicNow();
  Duration end = begin;
  if (flags.workload == "steady") {
    // `concurrency` pods in flight; each bound pod is deleted and replaced.
    std::unordered_map<std::string, Duration> live;
    std::unordered_map<std::string, std::string> namespace_of;  // live pod -> its namespace
    int next = 0;
    auto create = [&](int i) -> Status {
      std::string name = "steady-" + std::to_string(i);
      live[name] = RealClock().MonotonicNow();
      namespace_of[name] = NamespaceOf(flags, i);
      return client::Create(**api, MakePod(namespace_of[name], name, "test-claim-template", true))
          .status();
    };
    for (; next < flags.concurrency; ++next) {
      if (Status s = create(next); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    Duration stop_at = begin + std::chrono::duration_cast<Duration>(
                                   std::chrono::duration<double>(flags.duration_seconds));
    while (RealClock().MonotonicNow() < stop_at) {
      tracker.WaitBound("steady-", measured + 1, std::chrono::milliseconds(200));
      std::vector<std::string> done;
      for (const auto& [name, created] : live) {
        if (std::optional<Duration> bound = tracker.BoundAt(name)) {
          latencies.push_back(Seconds(*bound - created));
          end = std::max(end, *bound);
          done.push_back(name);
        }
      }
      // Replace the bound pods concurrently: one driver thread issuing each delete and create in
      // turn made the driver, not the scheduler, the limit (each call waits for a durable write).
      std::vector<std::thread> replacing;
      std::vector<Status> results(done.size());
      for (size_t d = 0; d < done.size(); ++d) {
        live.erase(done[d]);
        ++measured;
        std::string old_namespace = namespace_of[done[d]];
        namespace_of.erase(done[d]);
        int index = next++;
        std::string name = "steady-" + std::to_string(index);
        live[name] = RealClock().MonotonicNow();
        namespace_of[name] = NamespaceOf(flags, index);
        replacing.emplace_back([&, d, old = done[d], old_namespace, name, ns = namespace_of[name]] {
          client::Delete<Pod>(**api, old_namespace, old, {.grace_period_seconds = 0})
              .IgnoreError();  // a leftover pod only keeps its device
          results[d] =
              client::Create(**api, MakePod(ns, name, "test-claim-template", true)).status();
        });
      }
      for (std::thread& t : replacing) t.join();
      for (const Status& s : results) {
        if (!s.ok()) {
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
          return 1;
        }
      }
    }
  } else {
    StatusOr<std::vector<Duration>> started =
        CreatePods(**api, flags, "measure", flags.measure_pods);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
      return 1;
    }
    if (!tracker.WaitBound("measure-", flags.measure_pods, limit)) {
      std::fprintf(stderr, "measure: %d of %d pods bound\n", tracker.CountBound("measure-"),
                   flags.measure_pods);
      return 1;
    }
    for (int i = 0; i < flags.measure_pods; ++i) {
      Duration bound = *tracker.BoundAt("measure-" + std::to_string(i));
      latencies.push_back(Seconds(bound - (*started)[static_cast<size_t>(i)]));
      end = std::max(end, bound);
    }
    measured = flags.measure_pods;
  }
  double elapsed = Seconds(end - begin);
  double throughput = elapsed > 0 ? measured / elapsed : 0;
  double p50 = Percentile(latencies, 0.50) * 1000;
  double p99 = Percentile(latencies, 0.99) * 1000;
  std::string name = flags.name.empty() ? flags.workload + "/" + flags.variant : flags.name;
  std::printf("%-52s %8.1f Pods/s  p50 %7.1f ms  p99 %7.1f ms  (%d pods, %.2f s)\n", name.c_str(),
              throughput, p50, p99, measured, elapsed);
  boost::json::object json{{"workload", name},
                           {"pods_per_second", throughput},
                           {"latency_p50_ms", p50},
                           {"latency_p99_ms", p99},
                           {"measured_pods", measured},
                           {"seconds", elapsed},
                           {"nodes", flags.nodes},
                           {"devices_per_node", flags.devices_per_node},
                           {"init_pods", flags.init_pods}};
  if (flags.target > 0) {
    // run_all.sh repeats SHORT lines in its summary; a miss does not fail the run (shared VM).
    std::printf("%s: %.0f Pods/s, target %.0f: %s\n", name.c_str(), throughput, flags.target,
                throughput >= flags.target ? "met" : "SHORT");
    json["target_pods_per_second"] = flags.target;
  }
  std::printf("%s\n", boost::json::serialize(json).c_str());
  return 0;
}

}  // namespace
}  // namespace draplane::bench

int main(int argc, char** argv) {
  draplane::bench::Flags flags;
  CLI::App app{"scheduler_perf DRA workloads against a running draplane (or Kubernetes) cluster"};
  app.add_option("--kubeconfig", flags.kubeconfig)->required();
  app.add_option("--workload", flags.workload, "template, claim or steady")->capture_default_str();
  app.add_option("--variant", flags.variant, "plain, selector or match")->capture_default_str();
  app.add_option("--name", flags.name, "Name printed with the result");
  app.add_option("--nodes", flags.nodes)->capture_default_str();
  app.add_option("--devices-per-node", flags.devices_per_node)->capture_default_str();
  app.add_option("--init-pods", flags.init_pods)->capture_default_str();
  app.add_option("--measure-pods", flags.measure_pods)->capture_default_str();
  app.add_option("--pods-per-claim", flags.pods_per_claim)->capture_default_str();
  app.add_option("--concurrency", flags.concurrency)->capture_default_str();
  app.add_option("--duration", flags.duration_seconds, "Seconds (steady)")->capture_default_str();
  app.add_option("--threads", flags.threads, "Creating threads")->capture_default_str();
  app.add_option("--target", flags.target, "Pods/s to report as met or SHORT");
  app.add_flag("--allocation-quota", flags.allocation_quota,
               "Create an Allocation-mode ResourceQuota for the class (never exhausted)");
  app.add_option("--tenants", flags.tenants, "Spread the Pods over this many namespaces")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--sharing-policy", flags.sharing_policy,
               "Create the DeviceSharingPolicy default over the tenants (weights 1, 2, ...)");
  CLI11_PARSE(app, argc, argv);
  return draplane::bench::Run(flags);
}
