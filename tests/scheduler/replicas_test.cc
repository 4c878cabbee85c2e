// Two scheduler replicas without leader election, racing for the same Pods and devices, with the
// controller manager beside them: tests/e2e/scheduler_replicas_e2e.sh and
// scheduler_quota_replicas_e2e.sh at a reduced size, in one process, so that ThreadSanitizer
// (label tsan) sees every thread of the scenario: the server's handlers and watch hub, each
// replica's informers, loop and binder threads, the claim controller's workers and the kubelet
// simulator.
//
// The components are the ones `draplane scheduler` and `draplane controller-manager` run, each
// with its own client of the real server (testing/test_api.h), as its own identity, as the e2e
// starts them with --leader-elect=false. The assertions are the e2e's, read from the server:
// every Pod that fits is bound, the rest stay Pending, no device is allocated twice (from the
// final claim statuses) and each allocated claim serves a Pod bound on the device's node; with
// an Allocation-mode quota, no more Pods than the quota allows are ever bound (checked on every
// Pod event, in the server's write order) and the quota's status.used agrees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "allocator/features.h"
#include "client/informer.h"
#include "client/typed.h"
#include "common/mutex.h"
#include "controllers/controller_manager.h"
#include "scheduler/scheduler.h"
#include "testing/cluster.h"

namespace draplane {
namespace {

namespace rv1 = api::resourcev1;
using testing::Cluster;
using testing::DeviceSpec;

constexpr char kDriver[] = "dev.example.com";
constexpr char kQuotaKey[] = "dev.example.com.deviceclass.resource.k8s.io/devices";

// Bound Pods as the informer sees them: now, and the most ever bound at once.
class BoundPods {
 public:
  explicit BoundPods(client::ApiClient& api) : pods_(api) {
    using Ptr = client::Informer<api::corev1::Pod>::Ptr;
    pods_.AddHandlers({.on_add = [this](const Ptr& p) { Count(nullptr, p.get()); },
                       .on_update = [this](const Ptr& o, const Ptr& n) { Count(o.get(), n.get()); },
                       .on_delete = [this](const Ptr& p) { Count(p.get(), nullptr); }});
    pods_.Start();
    pods_.WaitForSync();
  }
  ~BoundPods() { pods_.Stop(); }

  int now() const {
    MutexLock lock(mu_);
    return bound_;
  }
  int most() const {
    MutexLock lock(mu_);
    return most_;
  }

 private:
  static bool Bound(const api::corev1::Pod* p) {
    return p != nullptr && !p->spec.node_name.empty();
  }
  // Handler calls of one informer are serialised: each event is counted in the server's order.
  void Count(const api::corev1::Pod* before, const api::corev1::Pod* after) {
    MutexLock lock(mu_);
    bound_ += (Bound(after) ? 1 : 0) - (Bound(before) ? 1 : 0);
    most_ = std::max(most_, bound_);
  }

  client::Informer<api::corev1::Pod> pods_;
  mutable Mutex mu_;
  int bound_ DRAPLANE_GUARDED_BY(mu_) = 0;
  int most_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

class SchedulerReplicasTest : public ::testing::Test {
 protected:
  // NODES nodes with DEVICES devices each (pool = node), the device class, the template
  // "one-device" (one device of the class) and PODS Pods using it.
  void Populate(int nodes, int devices, int pods) {
    cluster_.Class(kDriver, std::string("device.driver == \"") + kDriver + "\"");
    for (int n = 0; n < nodes; ++n) {
      std::string node = "node-" + std::to_string(n);
      cluster_.Node(node);
      std::vector<DeviceSpec> specs;
      for (int d = 0; d < devices; ++d) specs.push_back({"dev-" + std::to_string(d), {}, "", 0});
      cluster_.Slice(node, kDriver, specs);
    }
    cluster_.Template("one-device", cluster_.ClaimSpec("", kDriver).spec);
    for (int i = 1; i <= pods; ++i) {
      cluster_.Pod(cluster_.PodSpec("p-" + std::to_string(i), {"tmpl:one-device"}));
    }
  }

  // The controller manager as the e2e runs it (`--simulate-kubelet`), then two replicas as
  // `draplane scheduler --leader-elect=false` does (the 1.36 defaults), each its own identity.
  void StartControlPlane() {
    manager_client_ = cluster_.api().ClientAs("system:kube-controller-manager", {});
    controllers::ControllerManagerOptions manager_options;
    manager_options.simulate_kubelet = true;
    manager_options.resource_claim.workers = 4;
    manager_ = std::make_unique<controllers::ControllerManager>(*manager_client_, RealClock(),
                                                                manager_options);
    ASSERT_TRUE(manager_->Start().ok());
    for (int i = 0; i < 2; ++i) {
      replica_clients_.push_back(cluster_.api().ClientAs("system:kube-scheduler", {}));
      scheduler::SchedulerOptions options;
      options.features = allocator::DefaultFeatures("1.36").value();
      options.identity = "scheduler-" + std::to_string(i + 1);
      options.random_seed = 17 + i;
      options.binder_threads = 4;
      replicas_.push_back(
          std::make_unique<scheduler::Scheduler>(*replica_clients_.back(), RealClock(), options));
    }
    for (auto& replica : replicas_) ASSERT_TRUE(replica->Start().ok());
  }

  void TearDown() override {
    for (auto& replica : replicas_) replica->Stop();
    if (manager_) manager_->Stop();
  }

  // Waits until `done` holds; fails when nothing was written to the API for a whole guard period
  // (Cluster::WaitUntil's, 60 s of real time) or after five of them: hang guards that tolerate a
  // slow sanitizer build, not timing assertions.
  bool Settle(const std::function<bool()>& done) {
    int64_t seen = -1;
    for (int period = 0; period < 5; ++period) {
      if (cluster_.WaitUntil(done)) return true;
      int64_t now = cluster_.api().resource_version();
      if (now == seen) return false;
      seen = now;
    }
    return false;
  }

  // The e2e's check of the final claim statuses: no device in two allocations, every allocated
  // claim reserved for a Pod bound on its device's node, `want_bound` Pods bound and as many
  // claims allocated. "" when it holds, else what does not.
  std::string CheckClaims(int want_bound) {
    std::map<std::string, std::string> node_of;
    int bound = 0;
    for (const api::corev1::Pod& p : cluster_.Pods()) {
      node_of[p.metadata.name] = p.spec.node_name;
      bound += p.spec.node_name.empty() ? 0 : 1;
    }
    std::map<std::tuple<std::string, std::string, std::string>, std::string> held;
    int allocated = 0;
    for (const rv1::ResourceClaim& c : cluster_.Claims()) {
      if (!c.status.allocation.has_value()) continue;
      ++allocated;
      const auto& results = c.status.allocation->devices.results;
      if (results.empty()) return "claim " + c.metadata.name + " allocated without devices";
      for (const auto& r : results) {
        auto [it, fresh] = held.emplace(std::tuple(r.driver, r.pool, r.device), c.metadata.name);
        if (!fresh) {
          return "device " + r.pool + "/" + r.device + " allocated to " + it->second + " and " +
                 c.metadata.name;
        }
      }
      bool serves_bound_pod = false;
      for (const auto& ref : c.status.reserved_for) {
        const std::string& node = node_of[ref.name];
        if (node.empty()) continue;
        if (node != results[0].pool) {
          return "claim " + c.metadata.name + " on " + results[0].pool + " but pod " + ref.name +
                 " on " + node;
        }
        serves_bound_pod = true;
      }
      if (!serves_bound_pod) return "claim " + c.metadata.name + " serves no bound pod";
    }
    if (bound != want_bound) {
      return std::to_string(bound) + " pods bound, expected " + std::to_string(want_bound);
    }
    if (allocated != bound) {
      return std::to_string(allocated) + " claims allocated for " + std::to_string(bound) +
             " bound pods";
    }
    return "";
  }

  // The unbound Pods without a PodScheduled=False condition whose message contains `text`, with
  // the condition they have: what a failed wait prints, to tell a lost update from a slow one.
  std::string UnboundWithout(const std::string& text) {
    std::string out;
    for (const api::corev1::Pod& p : cluster_.Pods()) {
      if (!p.spec.node_name.empty()) continue;
      std::string scheduled = "no PodScheduled condition";
      bool has = false;
      for (const auto& c : p.status.conditions) {
        if (c.type != "PodScheduled") continue;
        scheduled = c.status + " " + c.reason + ": " + c.message;
        has = has || (c.status == "False" && c.message.find(text) != std::string::npos);
      }
      if (!has) out += "\n  " + p.metadata.name + " (" + scheduled + ")";
    }
    return out;
  }

  // Pods with PodScheduled=False whose message contains `text`.
  int PendingWith(const std::string& text) {
    int n = 0;
    for (const api::corev1::Pod& p : cluster_.Pods()) {
      if (!p.spec.node_name.empty()) continue;
      for (const auto& c : p.status.conditions) {
        if (c.type == "PodScheduled" && c.status == "False" &&
            c.message.find(text) != std::string::npos) {
          ++n;
        }
      }
    }
    return n;
  }

  int64_t Scheduled() {
    int64_t n = 0;
    for (const auto& replica : replicas_) n += replica->stats().scheduled;
    return n;
  }

  std::string Used() {
    StatusOr<api::corev1::ResourceQuota> q =
        client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", "devices");
    if (!q.ok()) return "";
    auto it = q->status.used.find(kQuotaKey);
    return it == q->status.used.end() ? "" : it->second.ToString();
  }

  // Declared first: the server outlives the clients and components below.
  Cluster cluster_;
  std::unique_ptr<client::ApiClient> manager_client_;
  std::vector<std::unique_ptr<client::ApiClient>> replica_clients_;
  std::unique_ptr<controllers::ControllerManager> manager_;
  std::vector<std::unique_ptr<scheduler::Scheduler>> replicas_;
};

// scheduler_replicas_e2e.sh: 300 Pods for 10 x 20 devices; 200 fit.
TEST_F(SchedulerReplicasTest, EveryPodThatFitsIsBoundAndNoDeviceIsAllocatedTwice) {
  constexpr int kNodes = 10, kDevices = 20, kPods = 300, kFits = kNodes * kDevices;
  Populate(kNodes, kDevices, kPods);
  BoundPods bound(cluster_.api());
  StartControlPlane();

  ASSERT_TRUE(Settle([&] { return bound.now() >= kFits; })) << bound.now() << " bound";
  std::string problem;
  ASSERT_TRUE(Settle([&] { return (problem = CheckClaims(kFits)).empty(); })) << problem;
  EXPECT_EQ(bound.most(), kFits);
  // Each Pod bound once, by one replica: the loser of a race never counts it.
  EXPECT_TRUE(Settle([&] { return Scheduled() == kFits; })) << Scheduled() << " bindings";
  // The rest stay Pending, told why.
  ASSERT_TRUE(Settle([&] { return PendingWith("") == kPods - kFits; }))
      << PendingWith("") << " of " << kPods - kFits << " pods told why they wait";
  std::printf(
      "bindings the replicas lost to each other: %lld\n",
      static_cast<long long>(replicas_[0]->stats().lost_races + replicas_[1]->stats().lost_races));
}

// scheduler_quota_replicas_e2e.sh: an Allocation-mode quota of 15 devices, 60 Pods, 5 x 12
// devices (four times the quota).
TEST_F(SchedulerReplicasTest, TwoReplicasNeverSpendAQuotaTwice) {
  constexpr int kNodes = 5, kDevices = 12, kPods = 60, kQuota = 15;
  api::corev1::ResourceQuota quota;
  quota.metadata.name = "devices";
  quota.metadata.namespace_ = "default";
  quota.metadata.annotations["draplane.dev/device-quota-mode"] = "Allocation";
  quota.spec.hard.emplace(kQuotaKey, api::Quantity::FromInt64(kQuota));
  ASSERT_TRUE(client::Create(cluster_.api(), quota).ok());
  ASSERT_TRUE(Settle([&] { return !Used().empty(); }));
  Populate(kNodes, kDevices, kPods);
  BoundPods bound(cluster_.api());
  StartControlPlane();

  // Settled: the quota's worth of Pods bound, every other one told that the quota refused it.
  ASSERT_TRUE(Settle([&] {
    return bound.now() == kQuota && PendingWith("refused by quota") == kPods - kQuota;
  })) << bound.now()
      << " bound, " << PendingWith("refused by quota") << " pending on the quota; the others:"
      << UnboundWithout("refused by quota");
  std::string problem;
  ASSERT_TRUE(Settle([&] { return (problem = CheckClaims(kQuota)).empty(); })) << problem;
  ASSERT_TRUE(Settle([&] { return Used() == std::to_string(kQuota); })) << "used " << Used();
  // Never more than the quota bound at once, in any state the server went through.
  EXPECT_EQ(bound.most(), kQuota);
  EXPECT_TRUE(Settle([&] { return Scheduled() == kQuota; })) << Scheduled() << " bindings";
}

}  // namespace
}  // namespace draplane
