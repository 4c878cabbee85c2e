// The queue's active orders (queue_order.h): today's order without a policy, and the fair-share
// order as a deterministic function of (state, time), checked against a brute-force sort over
// random states.
#include "scheduler/queue_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/random.h"
#include "scheduler/fair_share_testing.h"
#include "scheduler/queue.h"

namespace draplane::scheduler {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

struct TestPod {
  std::shared_ptr<api::corev1::Pod> pod;
  Duration enqueued_at{0};
  uint64_t sequence = 0;
  bool indebted = false;
  std::vector<std::string> classes;
  const std::string& uid() const { return pod->metadata.uid; }
  ActiveOrder::Entry entry() const {
    return {.uid = pod->metadata.uid,
            .pod = *pod,
            .enqueued_at = enqueued_at,
            .sequence = sequence,
            .indebted = indebted};
  }
};

int64_t BandOf(const TestPod* p) { return -static_cast<int64_t>(*p->pod->spec.priority); }

TestPod MakePod(const std::string& ns, const std::string& name, int64_t priority) {
  TestPod p;
  p.pod = std::make_shared<api::corev1::Pod>();
  p.pod->metadata.namespace_ = ns;
  p.pod->metadata.name = name;
  p.pod->metadata.uid = "uid-" + ns + "-" + name;
  p.pod->spec.priority = priority;
  return p;
}

// --- no policy --------------------------------------------------------------------------------

// PrioritySortOrder is the queue's order before the seam: (-priority, indebted, sequence, uid).
TEST(PrioritySortOrderTest, RandomAddsAndRemovesKeepTodaysOrder) {
  std::unique_ptr<Random> random = NewSeededRandom(17);
  for (int round = 0; round < 50; ++round) {
    PrioritySortOrder order;
    std::map<std::string, TestPod> in;
    uint64_t sequence = 0;
    for (int step = 0; step < 200; ++step) {
      if (in.empty() || random->Uniform(3) != 0) {
        TestPod p = MakePod("ns-" + std::to_string(random->Uniform(3)), "p" + std::to_string(step),
                            static_cast<int64_t>(random->Uniform(3)));
        p.sequence = ++sequence;
        p.indebted = random->Uniform(4) == 0;
        order.Add(p.entry());
        in.emplace(p.uid(), std::move(p));
      } else {
        auto it = std::next(in.begin(), static_cast<long>(random->Uniform(in.size())));
        order.Remove(it->second.entry());
        in.erase(it);
      }
      std::optional<std::tuple<int64_t, bool, uint64_t, std::string>> best;
      for (const auto& [uid, p] : in) {
        auto key = std::make_tuple(BandOf(&p), p.indebted, p.sequence, uid);
        if (!best || key < *best) best = key;
      }
      std::optional<std::string> peeked = order.Peek(Duration::zero());
      ASSERT_EQ(peeked.has_value(), best.has_value());
      if (best) {
        ASSERT_EQ(*peeked, std::get<3>(*best));
      }
    }
  }
}

// Without a policy the queue behaves as before the seam (the SchedulingQueueTest cases in
// units_test.cc run on the default order too).
TEST(PrioritySortOrderTest, TheQueueUsesItWithoutAPolicy) {
  ManualClock clock;
  SchedulingQueue q(clock, {}, [](const api::corev1::Pod&) { return std::nullopt; });
  for (auto [ns, name, priority] : std::vector<std::tuple<std::string, std::string, int64_t>>{
           {"b", "x", 0}, {"a", "y", 0}, {"c", "z", 5}}) {
    TestPod p = MakePod(ns, name, priority);
    q.AddOrUpdate(p.pod);
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(q.Pop()->pod->metadata.name, "z");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "x");
  EXPECT_EQ(q.Pop()->pod->metadata.name, "y");
}

// --- fair share -------------------------------------------------------------------------------

constexpr const char* kTenants[] = {"team-a", "team-b", "team-c", "team-d"};

FairShareConfig RandomConfig(Random& random) {
  FairShareConfig config;
  config.domains = {{.name = "accelerators",
                     .device_classes = {"h100", "a100"},
                     .cost = {{"h100", {.per_device = 4}}, {"a100", {.per_device = 2}}}}};
  // Half the time a second domain: the A100s alone.
  if (random.Uniform(2) == 0) {
    config.domains[0].device_classes = {"h100"};
    config.domains[0].cost.erase("a100");
    config.domains.push_back({.name = "small", .device_classes = {"a100"}});
  }
  for (const char* t : kTenants) {
    if (random.Uniform(2) == 0) {
      config.tenants.push_back(
          {.namespaces = {t}, .weight = static_cast<double>(1 + random.Uniform(4))});
    }
  }
  config.half_life = hours(1);
  config.history_fraction = static_cast<double>(random.Uniform(5)) / 4;
  config.full_credit_after = minutes(30);
  config.starvation_threshold = hours(2);
  return config;
}

// A cluster whose devices are held at random by the tenants, with a history: holdings change
// at a few instants before `now`.
void RandomHoldings(Random& random, FairShareWorld& world) {
  int claims = 0;
  for (int instant = 0; instant < 3; ++instant) {
    for (int n = 0; n < 3; ++n) {
      std::string node = "node-" + std::to_string(n);
      for (int d = 0; d < 4; ++d) {
        std::string device = "gpu-" + std::to_string(d);
        std::string cls = d < 2 ? "h100" : "a100";
        if (random.Uniform(3) == 0) {
          for (const std::string& holder :
               world.ledger.HoldersOf("gpu.example.com", node, device)) {
            world.ledger.Uncommit(holder);  // uid == "ns/name"
          }
        } else if (random.Uniform(2) == 0 &&
                   world.ledger.HoldersOf("gpu.example.com", node, device).empty()) {
          world.Hold(kTenants[random.Uniform(4)], "c" + std::to_string(claims++), cls, node,
                     device);
        }
      }
    }
    world.clock.Advance(minutes(10 + static_cast<int64_t>(random.Uniform(60))));
  }
}

std::vector<TestPod> RandomPods(Random& random, Duration now) {
  std::vector<TestPod> pods;
  int count = 5 + static_cast<int>(random.Uniform(30));
  for (int i = 0; i < count; ++i) {
    TestPod p = MakePod(kTenants[random.Uniform(4)], "p" + std::to_string(i),
                        random.Uniform(4) == 0 ? 100 : 0);
    // Waits from 0 to 3 h, on a coarse grid so that ties happen.
    p.enqueued_at = now - minutes(15 * static_cast<int64_t>(random.Uniform(13)));
    p.indebted = random.Uniform(5) == 0;
    p.sequence = static_cast<uint64_t>(i + 1);
    for (const char* cls : {"h100", "a100", "cpu"}) {
      if (random.Uniform(2) == 0) p.classes.push_back(cls);
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

double Credit(const FairShareConfig& config, Duration enqueued_at, Duration now) {
  double wait = std::chrono::duration<double>(now - enqueued_at).count();
  return std::min(wait / std::chrono::duration<double>(config.full_credit_after).count(), 1.0);
}

// The brute force: §3 written as a sort over the pods left, reading the model's shares.
std::string Expected(const std::vector<const TestPod*>& left, FairShareModel& model, Duration now) {
  const FairShareConfig& config = model.config();
  auto fifo = [](const TestPod* p) {
    return std::make_tuple(p->enqueued_at, p->pod->metadata.namespace_, p->pod->metadata.name,
                           p->uid());
  };
  int64_t top = std::numeric_limits<int64_t>::max();
  for (const TestPod* p : left) top = std::min(top, BandOf(p));
  std::vector<const TestPod*> band;
  for (const TestPod* p : left) {
    if (BandOf(p) == top) band.push_back(p);
  }
  std::sort(band.begin(), band.end(),
            [&](const TestPod* a, const TestPod* b) { return fifo(a) < fifo(b); });
  for (const TestPod* p : band) {
    if (now - p->enqueued_at >= config.starvation_threshold) return p->uid();
  }
  std::vector<const TestPod*> free;
  std::map<std::string, const TestPod*> heads;
  for (const TestPod* p : band) {
    if (model.DomainsOf(p->classes).empty()) {
      free.push_back(p);
      continue;
    }
    const TestPod*& head = heads[p->pod->metadata.namespace_];
    if (head == nullptr ||
        std::make_tuple(p->indebted, fifo(p)) < std::make_tuple(head->indebted, fifo(head))) {
      head = p;
    }
  }
  std::sort(free.begin(), free.end(), [&](const TestPod* a, const TestPod* b) {
    return std::make_tuple(a->indebted, fifo(a)) < std::make_tuple(b->indebted, fifo(b));
  });
  if (!free.empty() && !free[0]->indebted) return free[0]->uid();
  const TestPod* best = nullptr;
  std::tuple<bool, double, std::tuple<Duration, std::string, std::string, std::string>> best_key;
  for (const auto& [ns, head] : heads) {
    auto key = std::make_tuple(
        head->indebted,
        model.PodShare(ns, model.DomainsOf(head->classes)) - Credit(config, head->enqueued_at, now),
        fifo(head));
    if (best == nullptr || key < best_key) {
      best = head;
      best_key = key;
    }
  }
  if (!free.empty() && (best == nullptr || best->indebted)) return free[0]->uid();
  return best->uid();
}

struct FairShareSetup {
  explicit FairShareSetup(uint64_t seed) {
    std::unique_ptr<Random> random = NewSeededRandom(seed);
    config = RandomConfig(*random);
    world = std::make_unique<FairShareWorld>(
        FairShareWorld::Nodes{{"node-0", {"H100", "H100", "A100", "A100"}},
                              {"node-1", {"H100", "H100", "A100", "A100"}},
                              {"node-2", {"H100", "H100", "A100", "A100"}}});
    RandomHoldings(*random, *world);
    pods = RandomPods(*random, world->clock.MonotonicNow() + hours(3));
    world->clock.Advance(hours(3));
    model = std::make_unique<FairShareModel>(config, world->ledger, world->clock);
    for (const TestPod& p : pods) classes[p.uid()] = p.classes;
    order = std::make_unique<FairShareOrder>(*model, [this](const api::corev1::Pod& pod) {
      const std::vector<std::string>& c = classes.at(pod.metadata.uid);
      return PodClasses{.all = c, .preferred = c};
    });
  }
  FairShareConfig config;
  std::unique_ptr<FairShareWorld> world;
  std::vector<TestPod> pods;
  std::map<std::string, std::vector<std::string>> classes;
  std::unique_ptr<FairShareModel> model;
  std::unique_ptr<FairShareOrder> order;
};

// Pops every pod, checking each against the brute force; returns the pop order.
std::vector<std::string> PopAll(FairShareSetup& s, const std::vector<size_t>& insertion,
                                Duration now) {
  for (size_t i : insertion) s.order->Add(s.pods[i].entry());
  std::map<std::string, const TestPod*> left;
  for (const TestPod& p : s.pods) left[p.uid()] = &p;
  std::vector<std::string> popped;
  while (!left.empty()) {
    std::vector<const TestPod*> view;
    for (const auto& [uid, p] : left) view.push_back(p);
    std::string expected = Expected(view, *s.model, now);
    std::optional<std::string> peeked = s.order->Peek(now);
    EXPECT_TRUE(peeked.has_value());
    if (!peeked) break;
    EXPECT_EQ(*peeked, expected);
    s.order->Remove(left.at(*peeked)->entry());
    left.erase(*peeked);
    popped.push_back(*peeked);
  }
  EXPECT_FALSE(s.order->Peek(now).has_value());
  return popped;
}

TEST(FairShareOrderTest, PopOrderIsADeterministicFunctionOfStateAndTime) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    FairShareSetup a(seed);
    FairShareSetup b(seed);
    std::vector<size_t> forward(a.pods.size());
    for (size_t i = 0; i < forward.size(); ++i) forward[i] = i;
    std::vector<size_t> backward(forward.rbegin(), forward.rend());
    Duration now = a.world->clock.MonotonicNow();
    std::vector<std::string> first = PopAll(a, forward, now);
    // The same state built in another insertion order pops in the same order.
    EXPECT_EQ(PopAll(b, backward, now), first);
  }
}

TEST(FairShareOrderTest, AStarvingPodIsAlwaysAtTheHeadOfItsBand) {
  int starving_seen = 0;
  for (uint64_t seed = 100; seed < 160; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    FairShareSetup s(seed);
    Duration now = s.world->clock.MonotonicNow();
    for (const TestPod& p : s.pods) s.order->Add(p.entry());
    std::map<std::string, const TestPod*> left;
    for (const TestPod& p : s.pods) left[p.uid()] = &p;
    while (!left.empty()) {
      int64_t top = std::numeric_limits<int64_t>::max();
      for (const auto& [uid, p] : left) top = std::min(top, BandOf(p));
      const TestPod* oldest_starving = nullptr;
      for (const auto& [uid, p] : left) {
        if (BandOf(p) != top || now - p->enqueued_at < s.config.starvation_threshold) {
          continue;
        }
        auto fifo = [](const TestPod* q) {
          return std::make_tuple(q->enqueued_at, q->pod->metadata.namespace_,
                                 q->pod->metadata.name);
        };
        if (oldest_starving == nullptr || fifo(p) < fifo(oldest_starving)) oldest_starving = p;
      }
      std::string peeked = *s.order->Peek(now);
      if (oldest_starving != nullptr) {
        ++starving_seen;
        ASSERT_EQ(peeked, oldest_starving->uid());
      }
      s.order->Remove(left.at(peeked)->entry());
      left.erase(peeked);
    }
  }
  EXPECT_GT(starving_seen, 100) << "the random states must contain starving pods";
}

TEST(FairShareOrderTest, TenantsGoByWeightedShareAndAgingLetsAWaitingTenantCatchUp) {
  FairShareConfig config;
  config.domains = {{.name = "accelerators", .device_classes = {"h100"}}};
  config.tenants = {{.namespaces = {"team-a"}, .weight = 3}};
  config.history_fraction = 0;
  FairShareWorld world{{"node-0", {"H100", "H100", "H100", "H100"}}};
  world.Hold("team-a", "a1", "h100", "node-0", "gpu-0");
  world.Hold("team-a", "a2", "h100", "node-0", "gpu-1");
  world.Hold("team-b", "b1", "h100", "node-0", "gpu-2");
  FairShareModel model(config, world.ledger, world.clock);
  FairShareOrder order(model, [](const api::corev1::Pod&) {
    return PodClasses{.all = {"h100"}, .preferred = {"h100"}};
  });
  world.clock.Advance(hours(1));
  Duration now = world.clock.MonotonicNow();
  TestPod a = MakePod("team-a", "a", 0);
  TestPod b = MakePod("team-b", "b", 0);
  a.enqueued_at = now;
  b.enqueued_at = now;
  order.Add(a.entry());
  order.Add(b.entry());
  // team-a: 2/4 of the devices for a fair 3/4 (0.67); team-b: 1/4 for 1/4 (1.0).
  EXPECT_NEAR(model.EffectiveShare("team-a", 0), 2.0 / 3, 1e-12);
  EXPECT_NEAR(model.EffectiveShare("team-b", 0), 1.0, 1e-12);
  EXPECT_EQ(*order.Peek(now), a.uid());
  // team-b's pod waited 30 minutes (full credit), team-a's is new: 1 − 1 < 2/3 − 0.
  order.Remove(b.entry());
  b.enqueued_at = now - minutes(30);
  order.Add(b.entry());
  EXPECT_EQ(*order.Peek(now), b.uid());
  EXPECT_DOUBLE_EQ(order.Credit(b.enqueued_at, now), 1);
  EXPECT_DOUBLE_EQ(order.Credit(now - minutes(15), now), 0.5);
  // A higher band goes first whatever the shares.
  TestPod urgent = MakePod("team-a", "urgent", 1000);
  urgent.enqueued_at = now;
  order.Add(urgent.entry());
  EXPECT_EQ(*order.Peek(now), urgent.uid());
}

// Contested: the first choices of other tenants' active pods, at the same or a higher priority,
// while those tenants are under their fair share in the class's domain.
TEST(FairShareOrderTest, ContestedClassesAreUnderServedTenantsFirstChoices) {
  FairShareConfig config;
  config.domains = {{.name = "accelerators", .device_classes = {"h100", "a100"}}};
  config.history_fraction = 0;
  FairShareWorld world{{"node-0", {"H100", "H100", "A100", "A100"}}};
  world.Hold("team-a", "a1", "a100", "node-0", "gpu-2");
  FairShareModel model(config, world.ledger, world.clock);
  // team-a's pods prefer H100s and fall back to A100s; team-b's and team-c's want H100s only.
  std::map<std::string, PodClasses> classes = {
      {"team-a", {.all = {"a100", "h100"}, .preferred = {"h100"}}},
      {"team-b", {.all = {"h100"}, .preferred = {"h100"}}},
      {"team-c", {.all = {"h100"}, .preferred = {"h100"}}}};
  FairShareOrder order(
      model, [&](const api::corev1::Pod& pod) { return classes.at(pod.metadata.namespace_); });
  TestPod a = MakePod("team-a", "a", 0);
  TestPod b = MakePod("team-b", "b", 0);
  order.Add(a.entry());
  order.Add(b.entry());
  using Contested = allocator::ContestedClasses;
  EXPECT_EQ(order.Contested("team-a", 0), (Contested{{"h100", {"team-b"}}}));
  EXPECT_EQ(order.Contested("team-b", 0), (Contested{{"h100", {"team-a"}}}))
      << "team-a holds 1 of 4 devices for a fair 2: under its share too";
  // team-b at its fair share (2 of 4) no longer contests.
  world.Hold("team-b", "b1", "h100", "node-0", "gpu-0");
  world.Hold("team-b", "b2", "h100", "node-0", "gpu-1");
  EXPECT_EQ(order.Contested("team-a", 0), Contested{});
  // A lower band's pods do not contest a higher band's placement; the same or higher do.
  TestPod c = MakePod("team-c", "c", -10);
  order.Add(c.entry());
  EXPECT_EQ(order.Contested("team-a", 0), Contested{});
  EXPECT_EQ(order.Contested("team-a", -10), (Contested{{"h100", {"team-c"}}}));
  order.Remove(c.entry());
  EXPECT_EQ(order.Contested("team-a", -10), Contested{});
}

}  // namespace
}  // namespace draplane::scheduler
