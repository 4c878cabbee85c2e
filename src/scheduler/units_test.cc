// Unit tests of the scheduler's parts: device ledger, queue, framework, explanations, resources.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>

#include "api/meta/time.h"
#include "scheduler/decision_recorder.h"
#include "scheduler/device_ledger.h"
#include "scheduler/explain.h"
#include "scheduler/explain_pod.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/dynamic_resources.h"
#include "scheduler/plugins/node_plugins.h"
#include "scheduler/queue.h"

namespace draplane::scheduler {
namespace {

namespace rv1 = api::resourcev1;
using std::chrono::seconds;

std::shared_ptr<const rv1::DeviceClass> Class(const std::string& name,
                                              const std::string& expression) {
  auto c = std::make_shared<rv1::DeviceClass>();
  c->metadata.name = name;
  c->spec.selectors.emplace_back();
  c->spec.selectors.back().cel.emplace();
  c->spec.selectors.back().cel->expression = expression;
  return c;
}

std::shared_ptr<const rv1::ResourceSlice> Slice(const std::string& node,
                                                const std::vector<std::string>& models,
                                                bool shared = false) {
  auto s = std::make_shared<rv1::ResourceSlice>();
  s->metadata.name = node + "-slice";
  s->spec.driver = "gpu.example.com";
  if (!node.empty()) s->spec.node_name = node;
  s->spec.pool.name = node.empty() ? "shared" : node;
  for (size_t i = 0; i < models.size(); ++i) {
    rv1::Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes["model"].string_value = models[i];
    if (shared) d.allow_multiple_allocations = true;
    s->spec.devices.push_back(std::move(d));
  }
  return s;
}

std::shared_ptr<const rv1::ResourceClaim> AllocatedClaim(const std::string& name,
                                                         const std::string& uid,
                                                         const std::string& pool,
                                                         const std::string& device) {
  auto c = std::make_shared<rv1::ResourceClaim>();
  c->metadata.name = name;
  c->metadata.namespace_ = "team-a";
  c->metadata.uid = uid;
  c->status.allocation.emplace();
  rv1::DeviceRequestAllocationResult r;
  r.request = "req";
  r.driver = "gpu.example.com";
  r.pool = pool;
  r.device = device;
  c->status.allocation->devices.results.push_back(r);
  return c;
}

TEST(DeviceLedgerTest, CountsFreeDevicesPerClassAndNode) {
  DeviceLedger ledger;
  ledger.SetClass(Class("h100", R"(device.attributes["gpu.example.com"].model == "H100")"));
  ledger.SetClass(Class("any", R"(device.driver == "gpu.example.com")"));
  ledger.SetSlice(Slice("node-a", {"H100", "A100", "A100"}));
  EXPECT_EQ(ledger.FreeDevices("h100", "node-a"), 1);
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 3);
  EXPECT_EQ(ledger.FreeDevices("any", "node-b"), 0);
  EXPECT_EQ(ledger.FreeDevices("missing", "node-a"), 0);

  EXPECT_FALSE(ledger.Commit(AllocatedClaim("c1", "u1", "node-a", "gpu-0")));
  EXPECT_EQ(ledger.FreeDevices("h100", "node-a"), 0);
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 2);
  auto c2 = AllocatedClaim("c2", "u2", "node-a", "gpu-1");
  auto in_flight = std::make_shared<rv1::AllocationResult>(*c2->status.allocation);
  ledger.AddInFlight("u2", c2, in_flight);
  EXPECT_TRUE(ledger.IsInFlight("u2"));
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 1);
  ledger.RemoveInFlight("u2");
  ledger.Uncommit("u1");
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 3);

  // A class change re-evaluates every device.
  ledger.SetClass(Class("h100", R"(device.attributes["gpu.example.com"].model != "H100")"));
  EXPECT_EQ(ledger.FreeDevices("h100", "node-a"), 2);
  // A class added later has an id beyond those the nodes' counts were kept for.
  ledger.SetClass(Class("a100", R"(device.attributes["gpu.example.com"].model == "A100")"));
  EXPECT_EQ(ledger.FreeDevices("a100", "node-a"), 2);
  EXPECT_EQ(ledger.Devices("a100", "node-a"), 2);
  EXPECT_EQ(ledger.FreeDevices("a100", "node-b"), 0);
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("c3", "u3", "node-a", "gpu-2")));
  EXPECT_EQ(ledger.FreeDevices("a100", "node-a"), 1);
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 2);

  // The per-node view the scheduler asks for each candidate node answers the same.
  NodeEntryCache cache_a;
  NodeEntryCache cache_b;
  const DeviceLedger::NodeFree node_a = ledger.FreeOn(HashedString("node-a"), &cache_a);
  const DeviceLedger::NodeFree node_b = ledger.FreeOn(HashedString("node-b"), &cache_b);
  EXPECT_EQ(node_a.Free(ledger.ClassId("a100")), 1);
  EXPECT_EQ(node_a.Free(ledger.ClassId("any")), 2);
  EXPECT_EQ(node_a.Free(ledger.ClassId("h100")), 1);
  EXPECT_EQ(ledger.ClassId("missing"), DeviceLedger::kNoClass);
  EXPECT_EQ(node_a.Free(DeviceLedger::kNoClass), 0);
  EXPECT_EQ(node_b.Free(ledger.ClassId("any")), 0);

  // The remembered entries follow the ledger: node-b gains devices, every count is rebuilt by a
  // class change, an allocation frees none of node-b's.
  ledger.SetSlice(Slice("node-b", {"A100"}));
  EXPECT_EQ(ledger.FreeOn(HashedString("node-b"), &cache_b).Free(ledger.ClassId("any")), 1);
  ledger.SetClass(Class("h100", R"(device.attributes["gpu.example.com"].model == "H100")"));
  EXPECT_EQ(ledger.FreeOn(HashedString("node-a"), &cache_a).Free(ledger.ClassId("h100")), 1);
  EXPECT_EQ(ledger.FreeOn(HashedString("node-b"), &cache_b).Free(ledger.ClassId("h100")), 0);
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("c4", "u4", "node-b", "gpu-0")));
  EXPECT_EQ(ledger.FreeOn(HashedString("node-b"), &cache_b).Free(ledger.ClassId("a100")), 0);
  EXPECT_EQ(ledger.FreeDevices("a100", "node-b"), 0);
}

TEST(DeviceLedgerTest, BoundsAreUnknownWhereCountingProvesNothing) {
  DeviceLedger ledger;
  ledger.SetClass(Class("any", R"(device.driver == "gpu.example.com")"));
  ledger.SetSlice(Slice("node-a", {"NIC"}, /*shared=*/true));
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), DeviceLedger::kUnknown);
  ledger.RemoveSlice("node-a-slice");
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 0);
  ledger.SetSlice(Slice("", {"H100"}));  // published for several nodes
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), DeviceLedger::kUnknown);
  NodeEntryCache cache;
  EXPECT_EQ(ledger.FreeOn(HashedString("node-a"), &cache).Free(ledger.ClassId("any")),
            DeviceLedger::kUnknown);
}

TEST(DeviceLedgerTest, ALaterOverlappingAllocationIsAConflict) {
  DeviceLedger ledger;
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("first", "u1", "node-a", "gpu-0")));
  EXPECT_TRUE(ledger.Commit(AllocatedClaim("second", "u2", "node-a", "gpu-0")));
  EXPECT_FALSE(ledger.IsConflicting("u1"));
  EXPECT_TRUE(ledger.IsConflicting("u2"));
  EXPECT_EQ(ledger.HoldersOf("gpu.example.com", "node-a", "gpu-0"),
            (std::vector<std::string>{"team-a/first", "team-a/second"}));
  // Re-observing the same allocation does not change the verdict.
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("first", "u1", "node-a", "gpu-0")));
  ledger.Uncommit("u2");
  EXPECT_TRUE(ledger.allocated().IsAllocated("gpu.example.com", "node-a", "gpu-0"));
  ledger.Uncommit("u1");
  EXPECT_FALSE(ledger.allocated().IsAllocated("gpu.example.com", "node-a", "gpu-0"));
  // Our own in-flight allocation of the same claim is not a conflict.
  auto third = AllocatedClaim("third", "u3", "node-a", "gpu-1");
  auto own = std::make_shared<rv1::AllocationResult>(*third->status.allocation);
  ledger.AddInFlight("u3", third, own);
  EXPECT_TRUE(ledger.holdings().Find("u3")->in_flight);
  EXPECT_FALSE(ledger.Commit(third));
  EXPECT_FALSE(ledger.IsInFlight("u3"));
  EXPECT_FALSE(ledger.holdings().Find("u3")->in_flight);
  EXPECT_EQ(ledger.holdings().DevicesOf("team-a").size(), 1u);
}

TEST(DeviceLedgerTest, CommittingTheReservedAllocationKeepsItsPoolsVersions) {
  // The allocator's per-node verdicts stay valid while a pool's version stays (allocated_state.h):
  // the claim the scheduler reserved, written as reserved, changes nothing a node can see.
  DeviceLedger ledger;
  ledger.SetClass(Class("any", R"(device.driver == "gpu.example.com")"));
  ledger.SetSlice(Slice("node-a", {"H100", "H100", "H100"}));
  auto claim = AllocatedClaim("c1", "u1", "node-a", "gpu-0");
  ledger.AddInFlight("u1", claim,
                     std::make_shared<rv1::AllocationResult>(*claim->status.allocation));
  const allocator::AllocatedState::PoolRecord* pool =
      ledger.allocated().PoolFor("gpu.example.com", "node-a");
  const uint64_t reserved = pool->version;
  EXPECT_FALSE(ledger.Commit(claim));
  EXPECT_EQ(pool->version, reserved);
  EXPECT_FALSE(ledger.IsInFlight("u1"));
  // The reserved holding, now committed, is the holding the written claim makes.
  EXPECT_EQ(*ledger.holdings().Find("u1"),
            allocator::Holdings::Make("u1", *claim, *claim->status.allocation, ledger.catalog(),
                                      /*in_flight=*/false));
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 2);
  ledger.Uncommit("u1");
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 3);
  EXPECT_FALSE(ledger.allocated().IsAllocated("gpu.example.com", "node-a", "gpu-0"));

  // Written with other devices than reserved: the reserved ones are free again.
  ledger.AddInFlight("u2", claim,
                     std::make_shared<rv1::AllocationResult>(*claim->status.allocation));
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("c1", "u2", "node-a", "gpu-1")));
  EXPECT_GT(pool->version, reserved);
  EXPECT_FALSE(ledger.allocated().IsAllocated("gpu.example.com", "node-a", "gpu-0"));
  EXPECT_TRUE(ledger.allocated().IsAllocated("gpu.example.com", "node-a", "gpu-1"));
  EXPECT_EQ(ledger.FreeDevices("any", "node-a"), 2);
  EXPECT_EQ(ledger.holdings().DevicesOf("team-a"),
            (std::map<std::string, int, std::less<>>{{"gpu.example.com/node-a/gpu-1", 1}}));
}

TEST(DeviceLedgerTest, HoldingsChargeTenantsAndRecheckHealsStaleCharges) {
  DeviceLedger ledger;
  auto slice = Slice("node-a", {"H100", "H100"});
  ledger.SetSlice(slice);
  auto c1 = AllocatedClaim("c1", "u1", "node-a", "gpu-0");
  auto spec = std::const_pointer_cast<rv1::ResourceClaim>(c1);
  rv1::DeviceRequest request;
  request.name = "req";
  request.exactly.emplace();
  request.exactly->device_class_name = "h100";
  spec->spec.devices.requests.push_back(request);
  ledger.Commit(c1);
  const auto& usage = ledger.holdings().Usage("team-a");
  EXPECT_EQ(usage.at("h100.deviceclass.resource.k8s.io/devices").ToString(), "1");
  auto c2 = std::make_shared<rv1::ResourceClaim>(*c1);
  c2->metadata.name = "c2";
  c2->metadata.uid = "u2";
  c2->status.allocation->devices.results[0].device = "gpu-1";
  ledger.AddInFlight("u2", c2, std::make_shared<rv1::AllocationResult>(*c2->status.allocation));
  EXPECT_EQ(ledger.holdings()
                .Usage("team-a", allocator::Holdings::Scope::kInFlight)
                .at("h100.deviceclass.resource.k8s.io/devices")
                .ToString(),
            "1");
  EXPECT_TRUE(ledger.Recheck({c1.get()}).empty());
  // The claim's slice is republished with a capacity: its holding is charged again.
  auto republished = std::make_shared<rv1::ResourceSlice>(*slice);
  republished->spec.devices[0].capacity["memory"].value = *api::Quantity::Parse("80Gi");
  ledger.SetSlice(republished);
  EXPECT_EQ(ledger.holdings()
                .Usage("team-a")
                .at("h100.deviceclass.draplane.dev/capacity.memory")
                .ToString(),
            "80Gi");
  EXPECT_TRUE(ledger.Recheck({c1.get()}).empty());
  // A claim allocated in the claims the ledger never saw is reported.
  auto c3 = std::make_shared<rv1::ResourceClaim>(*c1);
  c3->metadata.name = "c3";
  c3->metadata.uid = "u3";
  std::vector<allocator::HoldingsDifference> drift = ledger.Recheck({c1.get(), c3.get()});
  ASSERT_FALSE(drift.empty());
  EXPECT_EQ(drift[0].text, "team-a/c3: allocated in the store, not held in the ledger");
  EXPECT_TRUE(ledger.holdings().Find("u2")->in_flight) << "in-flight holdings survive a recheck";
  // Written as reserved: the committed holding is the one the written claim makes.
  EXPECT_FALSE(ledger.Commit(c2));
  EXPECT_EQ(*ledger.holdings().Find("u2"),
            allocator::Holdings::Make("u2", *c2, *c2->status.allocation, ledger.catalog(),
                                      /*in_flight=*/false));
  ledger.Uncommit("u2");
  ledger.Uncommit("u1");
  EXPECT_TRUE(ledger.holdings().Usage("team-a").empty());
}

TEST(DeviceLedgerTest, AnotherClaimsInFlightAllocationIsNoConflict) {
  // The API's write order decides: a claim written by another scheduler and observed while this
  // scheduler still has its own allocation of the device in flight was first.
  DeviceLedger ledger;
  auto mine_claim = AllocatedClaim("mine", "u1", "node-a", "gpu-0");
  auto mine = std::make_shared<rv1::AllocationResult>(*mine_claim->status.allocation);
  ledger.AddInFlight("u1", mine_claim, mine);
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("theirs", "u2", "node-a", "gpu-0")));
  EXPECT_FALSE(ledger.IsConflicting("u2"));
  // Our write comes later in that order: it lost.
  EXPECT_TRUE(ledger.Commit(AllocatedClaim("mine", "u1", "node-a", "gpu-0")));
  EXPECT_TRUE(ledger.IsConflicting("u1"));
  // Once the winner is gone, a new allocation of the device is no conflict.
  ledger.Uncommit("u1");
  ledger.Uncommit("u2");
  EXPECT_FALSE(ledger.Commit(AllocatedClaim("next", "u3", "node-a", "gpu-0")));
}

std::shared_ptr<const api::corev1::Pod> QueuePod(const std::string& name, int priority = 0) {
  auto p = std::make_shared<api::corev1::Pod>();
  p->metadata.name = name;
  p->metadata.uid = "uid-" + name;
  p->spec.priority = priority;
  return p;
}

TEST(AllocationConfirmationsTest, EachWriteGetsTheVerdictOnItsOwnVersion) {
  AllocationConfirmations c;
  // An earlier attempt on the claim lost; its verdict must not stick to the next write.
  c.Observe("u1", 10, /*lost=*/true);
  EXPECT_EQ(c.Await("u1", 10, seconds(0)), AllocationConfirmations::Outcome::kLost);
  c.Observe("u1", 14, /*lost=*/false);
  EXPECT_EQ(c.Await("u1", 14, seconds(0)), AllocationConfirmations::Outcome::kWon);
  // Not seen yet.
  EXPECT_EQ(c.Await("u1", 20, seconds(0)), AllocationConfirmations::Outcome::kTimedOut);
  // Seen only at a later version: the write's own verdict is unknown.
  c.Observe("u1", 21, /*lost=*/false);
  EXPECT_EQ(c.Await("u1", 20, seconds(0)), AllocationConfirmations::Outcome::kUnknown);
  c.Forget("u1");
  EXPECT_EQ(c.Await("u1", 14, seconds(0)), AllocationConfirmations::Outcome::kTimedOut);
}

TEST(AllocationConfirmationsTest, AnObservationWakesTheBindersWaitingForThatClaim) {
  AllocationConfirmations c;
  std::atomic<int> done{0};
  AllocationConfirmations::Outcome first{}, second{}, other{};
  std::thread a([&] {
    first = c.Await("u1", 5, seconds(30));
    ++done;
  });
  std::thread b([&] {
    second = c.Await("u1", 5, seconds(30));
    ++done;
  });
  std::thread d([&] {
    other = c.Await("u2", 7, seconds(30));
    ++done;
  });
  c.Observe("u1", 5, /*lost=*/false);
  a.join();
  b.join();
  EXPECT_EQ(first, AllocationConfirmations::Outcome::kWon);
  EXPECT_EQ(second, AllocationConfirmations::Outcome::kWon);
  EXPECT_EQ(done.load(), 2);  // u2's binder still waits
  c.Observe("u2", 7, /*lost=*/true);
  d.join();
  EXPECT_EQ(other, AllocationConfirmations::Outcome::kLost);
}

TEST(SchedulingQueueTest, PopsByPriorityThenArrival) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  q.AddOrUpdate(QueuePod("a"));
  q.AddOrUpdate(QueuePod("b", 10));
  q.AddOrUpdate(QueuePod("c"));
  EXPECT_EQ(q.Pop()->pod->metadata.name, "b");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "a");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "c");
  EXPECT_FALSE(q.Pop().has_value());
}

// Issue 17: a tenant whose pods spent their evaluation budget queues behind other tenants of the
// same priority until its attempts settle the debt; priority still comes first.
TEST(SchedulingQueueTest, ATenantInCostDebtQueuesBehindOthersOfItsPriority) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  auto pod = [](const std::string& name, const std::string& ns, int priority = 0) {
    auto p = std::make_shared<api::corev1::Pod>(*QueuePod(name, priority));
    p->metadata.namespace_ = ns;
    return std::shared_ptr<const api::corev1::Pod>(p);
  };
  q.RecordAttemptCost("mallory", true);
  q.RecordAttemptCost("mallory", true);
  EXPECT_EQ(q.CostDebt("mallory"), 2);
  q.AddOrUpdate(pod("m1", "mallory"));
  q.AddOrUpdate(pod("m2", "mallory"));
  q.AddOrUpdate(pod("b1", "bob"));
  q.AddOrUpdate(pod("m-high", "mallory", 10));
  EXPECT_EQ(q.Pop()->pod->metadata.name, "m-high");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "b1");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "m1");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "m2");
  // Attempts within the budget pay the debt off; the tenant's order is the arrival order again.
  q.RecordAttemptCost("mallory", false);
  q.RecordAttemptCost("mallory", false);
  q.RecordAttemptCost("mallory", false);
  EXPECT_EQ(q.CostDebt("mallory"), 0);
  q.AddOrUpdate(pod("m3", "mallory"));
  q.AddOrUpdate(pod("b2", "bob"));
  EXPECT_EQ(q.Pop()->pod->metadata.name, "m3");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "b2");
}

TEST(SchedulingQueueTest, UnschedulablePodsWaitForARelevantEventThenBackOff) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  q.AddOrUpdate(QueuePod("a"));
  QueuedPod a = *q.Pop();
  a.attempts = 1;
  q.RequeueUnschedulable(a, {"DynamicResources"});
  EXPECT_EQ(q.unschedulable(), 1u);
  q.OnEvent(
      [](const std::string& plugin, const api::corev1::Pod&) { return plugin == "NodeAffinity"; });
  EXPECT_EQ(q.unschedulable(), 1u) << "no interest from the rejecting plugin";
  q.OnEvent([](const std::string& plugin, const api::corev1::Pod&) {
    return plugin == "DynamicResources";
  });
  EXPECT_EQ(q.unschedulable(), 0u);
  EXPECT_EQ(q.backoff(), 1u) << "moved within its backoff";
  EXPECT_FALSE(q.Pop().has_value());
  EXPECT_EQ(q.NextReady(), std::optional<Duration>(seconds(1)));
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Pop()->pod->metadata.name, "a");
}

// Upstream orders the active queue by priority, then QueuedPodInfo.Timestamp: when the pod was
// created or last failed, kept when an event moves it. Pods that failed at one instant keep the
// order they failed in (not their uids'), and a pod that failed before another was created goes
// before it.
TEST(SchedulingQueueTest, MovedPodsGoInTheOrderTheyFailedIn) {
  ManualClock clock;
  QueueOptions options;
  options.initial_backoff = Duration{0};
  SchedulingQueue q(clock, options, [](const api::corev1::Pod&) { return std::nullopt; });
  for (const char* name : {"z", "a", "m"}) q.AddOrUpdate(QueuePod(name));
  for (int i = 0; i < 3; ++i) {
    QueuedPod p = *q.Pop();
    p.attempts = 1;
    q.RequeueUnschedulable(p, {"DynamicResources"});  // z, a, m: all at the same instant
  }
  q.AddOrUpdate(QueuePod("new"));
  q.OnEvent([](const std::string&, const api::corev1::Pod&) { return true; });
  std::vector<std::string> popped;
  while (std::optional<QueuedPod> p = q.Pop()) popped.push_back(p->pod->metadata.name);
  EXPECT_EQ(popped, (std::vector<std::string>{"z", "a", "m", "new"}));
}

TEST(SchedulingQueueTest, ATargetedEventOnlyConsidersTheNamedPods) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  for (const char* name : {"a", "b", "c"}) q.AddOrUpdate(QueuePod(name));
  for (int i = 0; i < 3; ++i) {
    QueuedPod p = *q.Pop();
    p.attempts = 1;
    q.RequeueUnschedulable(p, {"DynamicResources"});
  }
  std::vector<std::string> asked;
  auto interest = [&](const std::string&, const api::corev1::Pod& pod) {
    asked.push_back(pod.metadata.name);
    return true;
  };
  q.OnEventFor({"uid-c", "uid-unknown", "uid-a", "uid-c"}, interest);
  EXPECT_EQ(asked, (std::vector<std::string>{"a", "c"})) << "by uid, once each, known pods only";
  EXPECT_EQ(q.unschedulable(), 1u);
  EXPECT_EQ(q.backoff(), 2u);
  asked.clear();
  q.OnEvent(interest);
  EXPECT_EQ(asked, (std::vector<std::string>{"b"}));
  EXPECT_EQ(q.unschedulable(), 0u);
}

TEST(SchedulingQueueTest, BackoffDoublesUpToTheMaximum) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  q.AddOrUpdate(QueuePod("a"));
  QueuedPod a = *q.Pop();
  std::vector<int> waits;
  for (int attempt = 1; attempt <= 6; ++attempt) {
    a.attempts = attempt;
    q.RequeueAfterError(a);
    waits.push_back(static_cast<int>(std::chrono::duration_cast<seconds>(*q.NextReady()).count()));
    clock.Advance(*q.NextReady());
    a = *q.Pop();
  }
  EXPECT_EQ(waits, (std::vector<int>{1, 2, 4, 8, 10, 10}));
}

TEST(SchedulingQueueTest, GatedPodsWaitUntilTheGateOpens) {
  ManualClock clock;
  bool open = false;
  SchedulingQueue q(clock, {}, [&](const api::corev1::Pod&) -> std::optional<std::string> {
    if (open) return std::nullopt;
    return "SchedulingGates";
  });
  q.AddOrUpdate(QueuePod("a"));
  EXPECT_EQ(q.gated(), 1u);
  EXPECT_FALSE(q.Pop().has_value());
  open = true;
  q.OnEvent([](const std::string& plugin, const api::corev1::Pod&) {
    return plugin == "SchedulingGates";
  });
  EXPECT_EQ(q.gated(), 0u);
  EXPECT_EQ(q.Pop()->pod->metadata.name, "a");
}

TEST(SchedulingQueueTest, LongWaitingPodsAreFlushed) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  q.AddOrUpdate(QueuePod("a"));
  QueuedPod a = *q.Pop();
  a.attempts = 1;
  q.RequeueUnschedulable(a, {"DynamicResources"});
  clock.Advance(std::chrono::minutes(4));
  q.FlushUnschedulable();
  EXPECT_EQ(q.unschedulable(), 1u);
  clock.Advance(std::chrono::minutes(1));
  q.FlushUnschedulable();
  EXPECT_EQ(q.unschedulable(), 0u);
  EXPECT_EQ(q.Pop()->pod->metadata.name, "a");
}

TEST(NumFeasibleNodesTest, FollowsUpstream) {
  EXPECT_EQ(NumFeasibleNodesToFind(50, 0), 50);
  EXPECT_EQ(NumFeasibleNodesToFind(500, 0), 230);    // 46 %
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 0), 500);   // 10 %
  EXPECT_EQ(NumFeasibleNodesToFind(10000, 0), 500);  // at least 5 %
  EXPECT_EQ(NumFeasibleNodesToFind(200, 10), 100);   // at least 100
}

// A filter that accepts the nodes named in `fit`, and a scorer whose score is given per node.
class FakePlugin final : public FilterPlugin, public ScorePlugin {
 public:
  std::string_view name() const override { return "Fake"; }
  PluginStatus Filter(CycleState&, const PodInfo&, const NodeInfo& node, bool) override {
    ++filtered;
    if (fit.contains(node.name())) return PluginStatus::Success();
    return PluginStatus::Unresolvable("not " + node.name());
  }
  std::optional<int64_t> PreScore(CycleState&, const PodInfo&) override {
    if (scores.empty()) return std::nullopt;
    return 8;
  }
  int64_t Score(CycleState&, const PodInfo&, const NodeInfo& node) override {
    auto it = scores.find(node.name());
    return it == scores.end() ? 0 : it->second;
  }
  void NormalizeScore(CycleState&, std::vector<int64_t>&) override {}

  std::set<std::string> fit;
  std::map<std::string, int64_t> scores;
  int filtered = 0;
};

class FrameworkTest : public ::testing::Test {
 protected:
  FrameworkTest() {
    for (const char* n : {"n1", "n2", "n3", "n4"}) {
      auto node = std::make_shared<api::corev1::Node>();
      node->metadata.name = n;
      cluster_.UpsertNode(node);
    }
    plugin_ = std::make_shared<FakePlugin>();
    framework_.AddPlugin(plugin_);
    pod_.pod = QueuePod("p");
  }
  ClusterState cluster_;
  Framework framework_;
  std::shared_ptr<FakePlugin> plugin_;
  PodInfo pod_;
};

TEST_F(FrameworkTest, WithoutScoresTheFirstFeasibleNodeInRoundRobinOrderWins) {
  plugin_->fit = {"n2", "n3", "n4"};
  size_t start = 0;
  CycleState s1;
  ScheduleResult r1 = framework_.Schedule(s1, pod_, cluster_, &start);
  EXPECT_EQ(r1.node, "n2");
  EXPECT_EQ(r1.evaluated_nodes, 2);
  EXPECT_EQ(start, 2u);
  CycleState s2;
  EXPECT_EQ(framework_.Schedule(s2, pod_, cluster_, &start).node, "n3");
}

TEST_F(FrameworkTest, APerfectScoreStopsTheSearchAndTheBestScoreWins) {
  plugin_->fit = {"n1", "n2", "n3", "n4"};
  plugin_->scores = {{"n1", 3}, {"n2", 7}, {"n3", 8}, {"n4", 8}};
  size_t start = 0;
  CycleState state;
  ScheduleResult r = framework_.Schedule(state, pod_, cluster_, &start);
  EXPECT_EQ(r.node, "n3");
  EXPECT_EQ(r.evaluated_nodes, 3) << "n3 reached the maximum; n4 was not evaluated";
}

TEST_F(FrameworkTest, AFailedAttemptCarriesEveryNodesReason) {
  size_t start = 0;
  CycleState state;
  ScheduleResult r = framework_.Schedule(state, pod_, cluster_, &start);
  EXPECT_EQ(r.status.code(), Code::kUnschedulable);
  ASSERT_EQ(r.diagnosis.nodes.size(), 4u);
  EXPECT_EQ(r.diagnosis.rejectors, std::set<std::string>{"Fake"});
  EXPECT_EQ(FailedSchedulingMessage(r.diagnosis),
            "0/4 nodes are available: 1 node: not n1; 1 node: not n2; 1 node: not n3; 1 node: "
            "not n4.");
}

// A filter that rejects the nodes named in `refuse` (without a reason unless explaining), and
// skips itself for the attempt when `skip` is set.
class RefusingPlugin final : public PreFilterPlugin, public FilterPlugin {
 public:
  explicit RefusingPlugin(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  PluginStatus PreFilter(CycleState&, const PodInfo&, PreFilterResult*) override {
    return skip ? PluginStatus::Skip() : PluginStatus::Success();
  }
  PluginStatus Filter(CycleState&, const PodInfo&, const NodeInfo& node, bool explain) override {
    ++filtered;
    if (!refuse.contains(node.name())) return PluginStatus::Success();
    if (!explain) return PluginStatus::UnexplainedRejection();
    return PluginStatus::Unresolvable(name_ + " refuses " + node.name());
  }

  bool FilterIsPure() const override { return pure; }
  bool HasCertainRejection() const override { return !certain.empty(); }
  bool CertainlyRejects(const CycleState&, const PodInfo&, const NodeInfo& node) const override {
    return certain.contains(node.name());
  }

  std::set<std::string> refuse;
  std::set<std::string> certain;  // a subset of `refuse`
  bool pure = false;
  bool skip = false;
  int filtered = 0;

 private:
  std::string name_;
};

TEST_F(FrameworkTest, ACertainRejectionLeavesThePureFiltersBeforeItOutUntilNothingFits) {
  auto first = std::make_shared<RefusingPlugin>("First");
  auto second = std::make_shared<RefusingPlugin>("Second");
  Framework framework;
  framework.AddPlugin(first);
  framework.AddPlugin(second);
  first->pure = true;
  first->refuse = {"n1"};
  second->refuse = second->certain = {"n1", "n2"};

  // n1 and n2 are turned away without the filters; n3 fits.
  size_t start = 0;
  CycleState fits;
  ScheduleResult r = framework.Schedule(fits, pod_, cluster_, &start);
  EXPECT_EQ(r.node, "n3");
  EXPECT_EQ(r.evaluated_nodes, 3);
  EXPECT_EQ(start, 3u);
  EXPECT_EQ(first->filtered, 1) << "only on n3";
  EXPECT_EQ(second->filtered, 1);

  // Nothing fits: the rejectors are those of running every filter in order, First on n1 first.
  second->refuse = second->certain = {"n1", "n2", "n3", "n4"};
  start = 0;
  CycleState fails;
  r = framework.Schedule(fails, pod_, cluster_, &start);
  EXPECT_EQ(r.status.code(), Code::kUnschedulable);
  EXPECT_EQ(r.evaluated_nodes, 4);
  EXPECT_EQ(r.diagnosis.rejectors, (std::set<std::string>{"First", "Second"}));
  ASSERT_EQ(r.diagnosis.nodes.size(), 4u);
  EXPECT_EQ(r.diagnosis.nodes[0].status.plugin(), "First");
  EXPECT_EQ(r.diagnosis.nodes[1].status.plugin(), "Second");

  // A filter that is not pure runs on every node: the certain rejection is not asked after it.
  first->pure = false;
  first->filtered = 0;
  second->refuse = second->certain = {"n1", "n2"};
  start = 0;
  CycleState impure;
  r = framework.Schedule(impure, pod_, cluster_, &start);
  EXPECT_EQ(r.node, "n3");
  EXPECT_EQ(first->filtered, 3);
}

TEST_F(FrameworkTest, RejectionsNameTheirPluginsAndSkippedFiltersDoNotRun) {
  auto first = std::make_shared<RefusingPlugin>("First");
  auto second = std::make_shared<RefusingPlugin>("Second");
  Framework framework;
  framework.AddPlugin(first);
  framework.AddPlugin(second);
  first->refuse = {"n1", "n2"};
  second->refuse = {"n3", "n4"};
  size_t start = 0;
  CycleState state;
  ScheduleResult r = framework.Schedule(state, pod_, cluster_, &start);
  EXPECT_EQ(r.status.code(), Code::kUnschedulable);
  EXPECT_EQ(r.diagnosis.rejectors, (std::set<std::string>{"First", "Second"}));
  ASSERT_EQ(r.diagnosis.nodes.size(), 4u);
  EXPECT_EQ(r.diagnosis.nodes[0].status.plugin(), "First");
  EXPECT_EQ(r.diagnosis.nodes[3].status.plugin(), "Second");
  EXPECT_EQ(FailedSchedulingMessage(r.diagnosis),
            "0/4 nodes are available: 1 node: First refuses n1; 1 node: First refuses n2; 1 node: "
            "Second refuses n3; 1 node: Second refuses n4.");
  CycleState again;
  Framework::Evaluation evaluation = framework.Evaluate(again, pod_, cluster_);
  ASSERT_EQ(evaluation.nodes.size(), 4u);
  EXPECT_EQ(evaluation.nodes[1].status.plugin(), "First");
  EXPECT_EQ(evaluation.nodes[2].status.plugin(), "Second");

  // The second skips itself in PreFilter: its filter does not run, and only the first rejects.
  second->skip = true;
  second->filtered = 0;
  CycleState skipped;
  start = 0;
  ScheduleResult fits = framework.Schedule(skipped, pod_, cluster_, &start);
  EXPECT_EQ(fits.node, "n3");
  EXPECT_EQ(second->filtered, 0);
  CycleState evaluated;
  Framework::Evaluation without_second = framework.Evaluate(evaluated, pod_, cluster_);
  ASSERT_EQ(without_second.nodes.size(), 4u);
  EXPECT_TRUE(without_second.nodes[3].status.ok());
  EXPECT_EQ(second->filtered, 0);
}

TEST(ClusterStateTest, NodesStaySortedByNameWhateverTheOrderOfEvents) {
  ClusterState cluster;
  auto upsert = [&](const char* name) {
    auto node = std::make_shared<api::corev1::Node>();
    node->metadata.name = name;
    cluster.UpsertNode(node);
  };
  for (const char* n : {"node-b", "node-10", "node-a", "node-2", "node-1"}) upsert(n);
  upsert("node-a");  // an update keeps its place
  cluster.RemoveNode("node-2");
  cluster.RemoveNode("node-x");  // unknown: nothing happens
  upsert("node-0");
  std::vector<std::string> names;
  for (const NodeInfo* n : cluster.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"node-0", "node-1", "node-10", "node-a", "node-b"}));
  ASSERT_NE(cluster.FindNode("node-10"), nullptr);
  EXPECT_EQ(cluster.FindNode("node-10")->name(), "node-10");
  EXPECT_EQ(cluster.FindNode("node-2"), nullptr);
}

TEST(ExplainTest, NodesAreGroupedByReasonLargestFirst) {
  Diagnosis d;
  d.total_nodes = 12;
  for (int i = 0; i < 4; ++i) {
    d.nodes.push_back({"cpu-" + std::to_string(i), PluginStatus::Unresolvable("node affinity")});
  }
  for (int i = 0; i < 8; ++i) {
    d.nodes.push_back({"gpu-" + std::to_string(i), PluginStatus::Unresolvable("request gpu")});
  }
  EXPECT_EQ(FailedSchedulingMessage(d),
            "0/12 nodes are available: 8 nodes: request gpu; 4 nodes: node affinity.");
  Diagnosis pre;
  pre.total_nodes = 3;
  pre.pre_filter = PluginStatus::Unschedulable("request gpu: device class x does not exist");
  EXPECT_EQ(FailedSchedulingMessage(pre),
            "0/3 nodes are available: request gpu: device class x does not exist.");
}

TEST(ExplainTest, ARequestNoDeviceCanEverServeIsNotReportedAsWaitingForCapacity) {
  allocator::Explanation e;
  e.node = "node-1";
  e.outcome = "unsatisfiable";
  e.pools.push_back({"nic.example.com", "node-1", "usable", "", 2});
  allocator::ClaimExplanation c;
  allocator::RequestExplanation r;
  r.name = "nic";
  r.count = 1;
  r.allocation_mode = "ExactCount";
  r.outcome = "unsatisfiable";
  r.candidates.push_back({"nic.example.com", "node-1", "nic-0",
                          allocator::CandidateStatus::kCapacityUnservable,
                          "capacity bandwidth: 300G violates the device's request policy", ""});
  r.candidates.push_back(
      {"nic.example.com", "node-1", "nic-1", allocator::CandidateStatus::kCapacity, "", ""});
  c.requests.push_back(r);
  e.claims.push_back(c);
  EXPECT_EQ(SummarizeDevices(e, {"nic"}),
            "request nic: 0 of 1 needed device available (1 lacks capacity, 1 cannot give the "
            "requested capacity)");
}

TEST(ExplainTest, DeviceSummariesHaveNoNodeOrDeviceNames) {
  allocator::Explanation e;
  e.node = "node-7";
  e.outcome = "unsatisfiable";
  e.pools.push_back({"gpu.example.com", "node-7", "usable", "", 3});
  allocator::ClaimExplanation c;
  c.claim = "team-a/pod-gpu-x1";
  allocator::RequestExplanation r;
  r.name = "gpu";
  r.outcome = "unsatisfiable";
  allocator::RequestExplanation h100;
  h100.name = "gpu/h100";
  h100.count = 1;
  h100.allocation_mode = "ExactCount";
  h100.outcome = "unsatisfiable";
  for (int i = 0; i < 3; ++i) {
    h100.candidates.push_back({"gpu.example.com", "node-7", "gpu-" + std::to_string(i),
                               allocator::CandidateStatus::kRequestSelectorFalse, "", ""});
  }
  allocator::RequestExplanation pair = h100;
  pair.name = "gpu/a100-pair";
  pair.count = 2;
  pair.candidates[0].status = allocator::CandidateStatus::kAllocated;
  pair.candidates[1].status = allocator::CandidateStatus::kNotReached;
  r.subrequests = {h100, pair};
  c.requests.push_back(r);
  e.claims.push_back(c);
  EXPECT_EQ(SummarizeDevices(e, {"gpu"}),
            "request gpu: subrequest h100: no device matches (3 do not match the request's "
            "selectors), subrequest a100-pair: 1 of 2 needed devices available (1 is already "
            "allocated)");
  // A quota refusal names the quota and its numbers.
  allocator::RequestExplanation& refused = e.claims[0].requests[0].subrequests[0];
  refused.candidates[0].status = allocator::CandidateStatus::kPolicy;
  refused.candidates[0].policy_code = "quota";
  refused.candidates[0].detail =
      "quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1";
  EXPECT_EQ(SummarizeDevices(e, {"gpu"}),
            "request gpu: subrequest h100: 0 of 1 needed device available (1 refused by quota "
            "team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1), subrequest a100-pair: "
            "1 of 2 needed devices available (1 is already allocated)");
  // A request with enough devices of its own did not fail the node: said so, not as a shortage.
  allocator::RequestExplanation& enough = e.claims[0].requests[0].subrequests[1];
  enough.candidates[0].status = allocator::CandidateStatus::kNotReached;
  EXPECT_EQ(SummarizeDevices(e, {"gpu"}),
            "request gpu: subrequest h100: 0 of 1 needed device available (1 refused by quota "
            "team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1), subrequest a100-pair: "
            "2 devices available, enough for this request alone");
  enough.candidates[0].status = allocator::CandidateStatus::kAllocated;
  // Several claims are named by position, with the pod's names: an explanation built for other
  // claims of the same specs (the allocator's per-node memory) reads the same.
  allocator::ClaimExplanation other = e.claims[0];
  other.claim = "team-a/another-pods-claim";
  e.claims.push_back(other);
  EXPECT_EQ(SummarizeDevices(e, {"gpu", "team-a/standalone"}).substr(0, 38),
            "claim gpu: request gpu: subrequest h10");
  EXPECT_NE(SummarizeDevices(e, {"gpu", "team-a/standalone"})
                .find("; claim team-a/standalone: request gpu: "),
            std::string::npos);
  e.pools[0].status = "incomplete";
  EXPECT_EQ(SummarizeDevices(e, {}), "no devices offered to the node");
}

TEST(ResourcesTest, PodRequestsFollowUpstreamRules) {
  api::corev1::Pod pod;
  auto container = [](const char* cpu, const char* memory) {
    api::corev1::Container c;
    c.resources.requests["cpu"] = api::Quantity::Parse(cpu).value();
    c.resources.limits["memory"] = api::Quantity::Parse(memory).value();
    return c;
  };
  pod.spec.containers = {container("500m", "1Gi"), container("250m", "1Gi")};
  pod.spec.init_containers = {container("2", "512Mi")};
  api::corev1::Container sidecar = container("100m", "128Mi");
  sidecar.restart_policy = "Always";
  pod.spec.init_containers.insert(pod.spec.init_containers.begin(), sidecar);
  pod.spec.overhead["cpu"] = api::Quantity::Parse("10m").value();
  Resources r = ComputePodRequests(pod);
  // cpu: max(500+250+100 sidecar, 2000 + 100 sidecar before it) + 10 overhead.
  EXPECT_EQ(r.milli_cpu, 2110);
  // memory: limits stand in for requests: max(2Gi + 128Mi, 512Mi + 128Mi).
  EXPECT_EQ(r.memory, int64_t{2048 + 128} * 1024 * 1024);
  EXPECT_EQ(r.pods, 1);
  EXPECT_TRUE(IsExtendedResourceName("example.com/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("cpu"));
  EXPECT_FALSE(IsExtendedResourceName("kubernetes.io/batteries"));
  EXPECT_FALSE(IsExtendedResourceName("deviceclass.resource.kubernetes.io/gpu"));
}

// A tenant may write requests at the int64 limit in every container: their sum saturates
// (upstream's int64 wraps; here it was undefined behaviour that took the server down).
TEST(ResourcesTest, RequestsPastTheInt64RangeSaturate) {
  api::corev1::Pod pod;
  api::corev1::Container c;
  c.resources.requests["cpu"] = api::Quantity::Parse("9223372036854775807").value();
  c.resources.requests["memory"] = api::Quantity::Parse("9223372036854775807").value();
  c.resources.requests["example.com/gpu"] = api::Quantity::Parse("9223372036854775807").value();
  pod.spec.containers = {c, c};
  pod.spec.overhead["cpu"] = api::Quantity::Parse("9223372036854775807").value();
  Resources r = ComputePodRequests(pod);
  EXPECT_EQ(r.milli_cpu, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r.memory, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r.scalar["example.com/gpu"], std::numeric_limits<int64_t>::max());
  // A node's running total comes back exactly once the huge Pod and a small one are gone.
  Resources small;
  small.milli_cpu = 500;
  small.memory = int64_t{10} << 30;
  small.scalar["example.com/gpu"] = 1;
  Resources node;
  node.Add(small);
  node.Add(r);
  node.Subtract(small);
  node.Subtract(r);
  EXPECT_EQ(node.milli_cpu, 0);
  EXPECT_EQ(node.memory, 0);
  EXPECT_TRUE(node.scalar.empty());
}

TEST(BindingConditionsTest, ReadyWhenEveryBindingConditionIsTrueFailedWhenAFailureConditionIs) {
  auto claim = std::make_shared<rv1::ResourceClaim>(*AllocatedClaim("c", "u", "node-a", "gpu-0"));
  EXPECT_EQ(ClaimBindingReadiness(*claim).kind, BindingReadiness::Kind::kReady);
  rv1::DeviceRequestAllocationResult& r = claim->status.allocation->devices.results[0];
  r.binding_conditions = {"gpu.example.com/attached", "gpu.example.com/powered"};
  r.binding_failure_conditions = {"gpu.example.com/attach-failed"};
  EXPECT_TRUE(HasBindingConditions(*claim->status.allocation));
  BindingReadiness readiness = ClaimBindingReadiness(*claim);
  EXPECT_EQ(readiness.kind, BindingReadiness::Kind::kWaiting);
  EXPECT_EQ(readiness.message,
            "claim team-a/c: device gpu.example.com/node-a/gpu-0: binding condition "
            "gpu.example.com/attached is not reported");
  rv1::AllocatedDeviceStatus status;
  status.driver = "gpu.example.com";
  status.pool = "node-a";
  status.device = "gpu-0";
  auto condition = [](const std::string& type, const std::string& value) {
    api::metav1::Condition c;
    c.type = type;
    c.status = value;
    return c;
  };
  status.conditions = {condition("gpu.example.com/attached", "True"),
                       condition("gpu.example.com/powered", "False")};
  claim->status.devices = {status};
  readiness = ClaimBindingReadiness(*claim);
  EXPECT_EQ(readiness.kind, BindingReadiness::Kind::kWaiting);
  EXPECT_NE(readiness.message.find("gpu.example.com/powered is \"False\""), std::string::npos)
      << readiness.message;
  claim->status.devices[0].conditions[1].status = "True";
  EXPECT_EQ(ClaimBindingReadiness(*claim).kind, BindingReadiness::Kind::kReady);
  // A failure condition wins over readiness.
  api::metav1::Condition failed = condition("gpu.example.com/attach-failed", "True");
  failed.reason = "PortBusy";
  failed.message = "fabric port 3 busy";
  claim->status.devices[0].conditions.push_back(failed);
  readiness = ClaimBindingReadiness(*claim);
  EXPECT_EQ(readiness.kind, BindingReadiness::Kind::kFailed);
  EXPECT_EQ(readiness.message,
            "claim team-a/c: device gpu.example.com/node-a/gpu-0: binding failure condition "
            "gpu.example.com/attach-failed is True (PortBusy: fabric port 3 busy)");
}

TEST(BindTimeHealthTest, AGoneOrUntoleratedTaintedDeviceIsAProblem) {
  std::vector<std::shared_ptr<const rv1::ResourceSlice>> pool = {Slice("node-a", {"A100", "A100"})};
  auto slices = [&](std::string_view driver, std::string_view name) {
    std::vector<std::shared_ptr<const rv1::ResourceSlice>> out;
    for (const auto& s : pool) {
      if (s->spec.driver == driver && s->spec.pool.name == name) out.push_back(s);
    }
    return out;
  };
  rv1::AllocationResult allocation =
      *AllocatedClaim("c", "u", "node-a", "gpu-1")->status.allocation;
  EXPECT_EQ(AllocatedDeviceProblem(allocation, slices), "");
  // Tainted: NoSchedule blocks unless tolerated; effect None never does.
  auto tainted = std::make_shared<rv1::ResourceSlice>(*pool[0]);
  tainted->spec.devices[1].taints.emplace_back();
  tainted->spec.devices[1].taints.back().key = "gpu.example.com/unhealthy";
  tainted->spec.devices[1].taints.back().effect = "None";
  pool = {tainted};
  EXPECT_EQ(AllocatedDeviceProblem(allocation, slices), "");
  tainted->spec.devices[1].taints.back().effect = "NoSchedule";
  EXPECT_EQ(
      AllocatedDeviceProblem(allocation, slices),
      "device gpu.example.com/node-a/gpu-1 has the taint gpu.example.com/unhealthy:NoSchedule, "
      "which is not tolerated");
  allocation.devices.results[0].tolerations.emplace_back();
  allocation.devices.results[0].tolerations.back().key = "gpu.example.com/unhealthy";
  allocation.devices.results[0].tolerations.back().operator_ = "Exists";
  EXPECT_EQ(AllocatedDeviceProblem(allocation, slices), "");
  // Only the pool's newest generation counts: a newer slice without the device means it is gone.
  auto newer = std::make_shared<rv1::ResourceSlice>(*Slice("node-a", {"A100"}));
  newer->metadata.name = "node-a-slice-2";
  newer->spec.pool.generation = 2;
  pool = {tainted, newer};
  EXPECT_EQ(AllocatedDeviceProblem(allocation, slices),
            "device gpu.example.com/node-a/gpu-1 is no longer published");
  pool = {};
  EXPECT_EQ(AllocatedDeviceProblem(allocation, slices),
            "device gpu.example.com/node-a/gpu-1 is no longer published");
}

// A device a starvation hold keeps for another Pod is kept from the explained Pod too: the
// explanation says what the scheduler's attempts say, not "fits".
TEST(ExplainTest, ADeviceHeldForAStarvingPodIsNotOffered) {
  ManualClock clock;
  ClusterState cluster;
  cluster.UpsertClass(Class("gpu", R"(device.driver == "gpu.example.com")"));
  auto node = std::make_shared<api::corev1::Node>();
  node->metadata.name = "node-a";
  node->status.allocatable["pods"] = api::Quantity::FromInt64(110);
  cluster.UpsertNode(node);
  auto slice = std::make_shared<rv1::ResourceSlice>(*Slice("node-a", {"A100"}));
  slice->spec.pool.generation = 1;
  slice->spec.pool.resource_slice_count = 1;
  cluster.UpsertSlice(slice);
  auto claim = std::make_shared<rv1::ResourceClaim>();
  claim->metadata.name = "c";
  claim->metadata.namespace_ = "team-a";
  claim->metadata.uid = "claim-uid";
  claim->spec.devices.requests.emplace_back();
  claim->spec.devices.requests.back().name = "gpu";
  claim->spec.devices.requests.back().exactly.emplace();
  claim->spec.devices.requests.back().exactly->device_class_name = "gpu";
  claim->spec.devices.requests.back().exactly->allocation_mode = "ExactCount";
  claim->spec.devices.requests.back().exactly->count = 1;
  cluster.UpsertClaim(claim);
  auto pod = std::make_shared<api::corev1::Pod>(*QueuePod("p"));
  pod->metadata.namespace_ = "team-a";
  pod->spec.resource_claims.emplace_back();
  pod->spec.resource_claims.back().name = "gpu";
  pod->spec.resource_claims.back().resource_claim_name = "c";
  EXPECT_EQ(ExplainPod(cluster, *pod, allocator::AllFeatures(), clock).summary,
            "fits on 1 of 1 nodes: node-a");
  allocator::DeviceHold hold{.pod = "team-b/train",
                             .pod_uid = "uid-train",
                             .node = "node-a",
                             .since = "2026-12-02T12:03:00Z",
                             .starving = std::chrono::minutes(134),
                             .devices = {{"gpu.example.com", "node-a", "gpu-0"}}};
  PodExplanation e = ExplainPod(cluster, *pod, allocator::AllFeatures(), clock, {hold});
  ASSERT_EQ(e.nodes.size(), 1u);
  EXPECT_FALSE(e.nodes[0].fits);
  EXPECT_NE(e.nodes[0].reason.find(
                "1 is held for team-b/train since 2026-12-02T12:03:00Z (starving 2h14m)"),
            std::string::npos)
      << e.nodes[0].reason;
}

// A node the agent isolated for failing prepares until `until` (api/labels/node_isolation.h).
std::shared_ptr<api::corev1::Node> IsolatedNode(const std::string& name, const std::string& until) {
  auto node = std::make_shared<api::corev1::Node>();
  node->metadata.name = name;
  node->spec.taints.emplace_back();
  node->spec.taints.back().key = "draplane.dev/device-prepare-failures";
  node->spec.taints.back().effect = "NoSchedule";
  node->metadata.annotations["draplane.dev/device-prepare-failures-until"] = until;
  return node;
}

// A bound Pod still Pending waits for its node, not for the scheduler: the explanation says the
// node is isolated for failing prepares, with the agent's condition, while the isolation lasts.
TEST(ExplainTest, ABoundPendingPodOnAnIsolatedNodeSaysSo) {
  ManualClock clock;
  ClusterState cluster;
  const std::string until = api::Time::FromTimestamp(clock.Now() + std::chrono::seconds(30)).text();
  auto node = IsolatedNode("flaky-0", until);
  node->status.conditions.emplace_back();
  node->status.conditions.back().type = "DevicePrepareFailures";
  node->status.conditions.back().status = "True";
  node->status.conditions.back().message = "3 prepare failures in a row";
  cluster.UpsertNode(node);
  auto pod = std::make_shared<api::corev1::Pod>(*QueuePod("p"));
  pod->spec.node_name = "flaky-0";
  PodExplanation e = ExplainPod(cluster, *pod, allocator::Features{}, clock);
  EXPECT_EQ(e.summary,
            "bound to node flaky-0; the node is isolated after repeated device prepare failures "
            "until " +
                until + " (3 prepare failures in a row)");
  clock.Advance(std::chrono::seconds(30));
  EXPECT_EQ(ExplainPod(cluster, *pod, allocator::Features{}, clock).summary,
            "bound to node flaky-0");
}

// A Running Pod on a node whose heartbeats stopped: the explanation says the node is not ready
// since when and why, and when the Pod's toleration of the unreachable taint ends.
TEST(ExplainTest, APodOnAnUnreachableNodeSaysWhenItIsEvicted) {
  ManualClock clock;
  ClusterState cluster;
  const Timestamp tainted = clock.Now();
  auto node = std::make_shared<api::corev1::Node>();
  node->metadata.name = "gpu-7";
  node->status.conditions.emplace_back();
  node->status.conditions.back().type = "Ready";
  node->status.conditions.back().status = "Unknown";
  node->status.conditions.back().message = "Kubelet stopped posting node status.";
  node->status.conditions.back().last_transition_time = api::Time::FromTimestamp(tainted);
  node->spec.taints.emplace_back();
  node->spec.taints.back().key = "node.kubernetes.io/unreachable";
  node->spec.taints.back().effect = "NoExecute";
  node->spec.taints.back().time_added = api::Time::FromTimestamp(tainted);
  cluster.UpsertNode(node);
  auto pod = std::make_shared<api::corev1::Pod>(*QueuePod("p"));
  pod->spec.node_name = "gpu-7";
  pod->status.phase = "Running";
  pod->spec.tolerations.emplace_back();
  pod->spec.tolerations.back().key = "node.kubernetes.io/unreachable";
  pod->spec.tolerations.back().operator_ = "Exists";
  pod->spec.tolerations.back().effect = "NoExecute";
  pod->spec.tolerations.back().toleration_seconds = 300;
  clock.Advance(std::chrono::seconds(10));
  const std::string since = api::Time::FromTimestamp(tainted).text();
  EXPECT_EQ(ExplainPod(cluster, *pod, allocator::Features{}, clock).summary,
            "bound to node gpu-7; the node is not ready (Ready Unknown since " + since +
                ": Kubelet stopped posting node status.); it will be evicted at " +
                api::Time::FromTimestamp(tainted + std::chrono::seconds(300)).text() +
                " for the node's taints node.kubernetes.io/unreachable:NoExecute unless they go "
                "first");
  clock.Advance(std::chrono::seconds(300));
  EXPECT_EQ(ExplainPod(cluster, *pod, allocator::Features{}, clock).summary,
            "bound to node gpu-7; the node is not ready (Ready Unknown since " + since +
                ": Kubelet stopped posting node status.); it is being evicted for the node's "
                "taints node.kubernetes.io/unreachable:NoExecute");
  // A taint without timeAdded: counted from now here, from when the controller first saw it
  // there, so the time is an upper bound.
  node->spec.taints.back().time_added.reset();
  EXPECT_THAT(ExplainPod(cluster, *pod, allocator::Features{}, clock).summary,
              ::testing::HasSubstr(
                  "it will be evicted by " +
                  api::Time::FromTimestamp(clock.Now() + std::chrono::seconds(300)).text() +
                  " at the latest for the node's taints node.kubernetes.io/unreachable:NoExecute "
                  "unless they go first (node.kubernetes.io/unreachable carry no timeAdded"));
}

TEST(TaintTolerationTest, AnIsolatedNodeIsRejectedUntilItsIsolationEnds) {
  ManualClock clock;
  std::shared_ptr<Plugin> plugin = NewTaintTolerationPlugin(clock);
  auto* filter = dynamic_cast<FilterPlugin*>(plugin.get());
  ASSERT_NE(filter, nullptr);
  const std::string until = api::Time::FromTimestamp(clock.Now() + std::chrono::seconds(30)).text();
  auto node = IsolatedNode("flaky-0", until);
  NodeInfo info(node);
  PodInfo pod;
  pod.pod = QueuePod("p");
  CycleState state;
  PluginStatus s = filter->Filter(state, pod, info, false);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "node isolated after repeated device prepare failures until " + until +
                             " (taint draplane.dev/device-prepare-failures)");
  clock.Advance(std::chrono::seconds(30));
  EXPECT_TRUE(filter->Filter(state, pod, info, false).ok());
  // A pod tolerating the taint may go there anyway.
  auto tolerant = std::make_shared<api::corev1::Pod>(*pod.pod);
  tolerant->spec.tolerations.emplace_back();
  tolerant->spec.tolerations.back().key = "draplane.dev/device-prepare-failures";
  tolerant->spec.tolerations.back().operator_ = "Exists";
  node->metadata.annotations["draplane.dev/device-prepare-failures-until"] =
      api::Time::FromTimestamp(clock.Now() + std::chrono::seconds(30)).text();
  NodeInfo again(node);
  PodInfo tolerant_pod;
  tolerant_pod.pod = tolerant;
  EXPECT_TRUE(filter->Filter(state, tolerant_pod, again, false).ok());
  EXPECT_FALSE(filter->Filter(state, pod, again, false).ok());
}

TEST(DecisionRecordTest, RecordsTheDecisionWithinTheServersCaps) {
  api::corev1::Pod pod;
  pod.metadata.name = "llm-2";
  pod.metadata.namespace_ = "team-a";
  pod.metadata.uid = "7c1e0123-4567";
  DeviceDecision d;
  d.node = "gpu-1";
  DeviceDecision::Claim claim;
  claim.name = "llm-2-gpu";
  claim.uid = "51aa";
  claim.charges["a100.deviceclass.resource.k8s.io/devices"] = api::Quantity::FromInt64(2);
  DeviceDecision::Request request;
  request.name = "gpu";
  request.subrequest = "a100-pair";
  request.device_class = "a100";
  request.devices.resize(2);
  DeviceDecision::Tier tier;
  tier.subrequest = "h100";
  for (int i = 0; i < 12; ++i) {
    tier.reasons.push_back({.reason = "quota",
                            .message = std::string(2000, 'x'),
                            .devices = 1,
                            .nodes = {"gpu-1"},
                            .node_count = 1});
  }
  // A reason seen on more nodes than a record names: exemplars capped, the count kept.
  tier.reasons[1].nodes.clear();
  for (int n = 0; n < 10; ++n) tier.reasons[1].nodes.push_back("gpu-" + std::to_string(n));
  tier.reasons[1].node_count = 10;
  request.tiers_not_taken.push_back(tier);
  claim.requests.push_back(request);
  d.claims.push_back(claim);
  DecisionContext c{.pod = &pod,
                    .decision = &d,
                    .inputs = {{"v1", "ResourceQuota", "team-a", "devices", "9101", "Allocation"}},
                    .scheduler_name = "default-scheduler",
                    .instance = "sched-0",
                    .time = Timestamp(std::chrono::seconds(1'700'000'000)),
                    .nodes_evaluated = 3,
                    .nodes_feasible = 1};
  api::draplanev1alpha1::AllocationDecision a = MakeAllocationDecision(c);
  EXPECT_EQ(a.metadata.name, "llm-2-7c1e0123");
  EXPECT_EQ(a.metadata.namespace_, "team-a");
  EXPECT_EQ(a.spec.outcome, "Allocated");
  EXPECT_EQ(a.spec.node_name, "gpu-1");
  EXPECT_EQ(a.spec.scheduler.instance, "sched-0");
  ASSERT_EQ(a.spec.claims.size(), 1u);
  const auto& r = a.spec.claims[0].requests[0];
  EXPECT_EQ(r.subrequest, "a100-pair");
  ASSERT_EQ(r.tiers_not_taken.size(), 1u);
  EXPECT_EQ(r.tiers_not_taken[0].reasons.size(), 8u) << "capped";
  EXPECT_EQ(r.tiers_not_taken[0].reasons[0].message.size(), 1024u) << "capped";
  EXPECT_EQ(r.tiers_not_taken[0].reasons[0].nodes, std::vector<std::string>{"gpu-1"});
  EXPECT_EQ(r.tiers_not_taken[0].reasons[1].nodes.size(), 8u) << "capped";
  EXPECT_EQ(r.tiers_not_taken[0].reasons[1].node_count, 10);
  EXPECT_TRUE(a.spec.truncated);
  EXPECT_EQ(a.spec.policy_version.inputs[0].resource_version, "9101");
  EXPECT_EQ(a.spec.policy_version.digest.size(), 16u);
  // The same inputs give the same digest; another version another one.
  EXPECT_EQ(MakeAllocationDecision(c).spec.policy_version.digest, a.spec.policy_version.digest);
  c.inputs[0].resource_version = "9102";
  EXPECT_NE(MakeAllocationDecision(c).spec.policy_version.digest, a.spec.policy_version.digest);
}

}  // namespace
}  // namespace draplane::scheduler
