#include "allocator/internal/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace draplane::allocator::internal {
namespace {

api::Quantity Q(const char* text) { return api::Quantity::Parse(text).value(); }

// Builds problems by hand: one driver, pools "pool-0", "pool-1", ...; devices in search order.
class Builder {
 public:
  Builder() { AddPool(); }

  uint32_t AddPool() {
    Pool pool;
    pool.driver = "driver";
    pool.name = "pool-" + std::to_string(problem.pools.size());
    pool.first_counter = static_cast<uint32_t>(problem.counters.size());
    problem.pools.push_back(pool);
    return static_cast<uint32_t>(problem.pools.size() - 1);
  }

  DeviceIndex AddDevice(uint32_t pool = 0) {
    Device d;
    d.name = "device-" + std::to_string(problem.devices.size());
    d.pool = pool;
    problem.devices.push_back(d);
    for (Claim& claim : problem.claims) {
      for (Constraint& c : claim.constraints) c.value_of_device.push_back(kNone);
    }
    return static_cast<DeviceIndex>(problem.devices.size() - 1);
  }

  std::vector<DeviceIndex> AddDevices(int n, uint32_t pool = 0) {
    std::vector<DeviceIndex> out;
    for (int i = 0; i < n; ++i) out.push_back(AddDevice(pool));
    return out;
  }

  uint32_t AddCounter(uint32_t pool, const char* available) {
    Counter c;
    c.set = "set";
    c.name = "counter-" + std::to_string(problem.counters.size());
    c.available = Q(available);
    problem.counters.push_back(c);
    problem.pools[pool].num_counters++;
    if (c.available.Sign() < 0) problem.pools[pool].overcommitted = true;
    return static_cast<uint32_t>(problem.counters.size() - 1);
  }

  void Consume(DeviceIndex d, uint32_t counter, const char* amount) {
    problem.devices[d].consumes_counters = true;
    problem.devices[d].counter_uses.push_back(CounterUse{counter, Q(amount)});
  }

  uint32_t AddClaim(const std::string& name = "") {
    Claim c;
    c.name = name.empty() ? "claim-" + std::to_string(problem.claims.size()) : name;
    problem.claims.push_back(c);
    return static_cast<uint32_t>(problem.claims.size() - 1);
  }

  struct KeySpec {
    std::string name;
    int count = 1;
    bool all = false;
    bool admin = false;
    std::vector<DeviceIndex> candidates;
  };

  uint32_t MakeKey(uint32_t claim, uint32_t request, int sub, const std::string& parent,
                   const KeySpec& spec) {
    RequestKey key;
    key.claim = claim;
    key.request = request;
    key.subrequest = sub;
    key.name = spec.name;
    key.parent = parent;
    key.device_class = "class";
    key.all_mode = spec.all;
    key.admin_access = spec.admin;
    for (DeviceIndex d : spec.candidates) {
      Candidate c;
      c.device = d;
      (spec.all ? key.all_devices : key.candidates).push_back(c);
    }
    key.num_devices = spec.all ? static_cast<int>(key.all_devices.size()) : spec.count;
    problem.keys.push_back(key);
    return static_cast<uint32_t>(problem.keys.size() - 1);
  }

  uint32_t AddRequest(uint32_t claim, const KeySpec& spec) {
    Request r;
    uint32_t index = static_cast<uint32_t>(problem.claims[claim].requests.size());
    r.keys.push_back(MakeKey(claim, index, -1, "", spec));
    problem.claims[claim].requests.push_back(r);
    return r.keys[0];
  }

  std::vector<uint32_t> AddFirstAvailable(uint32_t claim, const std::string& name,
                                          const std::vector<KeySpec>& subs) {
    Request r;
    r.has_subrequests = true;
    uint32_t index = static_cast<uint32_t>(problem.claims[claim].requests.size());
    for (size_t s = 0; s < subs.size(); ++s) {
      r.keys.push_back(MakeKey(claim, index, static_cast<int>(s), name, subs[s]));
    }
    problem.claims[claim].requests.push_back(r);
    return r.keys;
  }

  // A constraint over `scope` keys (all keys of the claim when empty); value per device by int.
  void AddConstraint(uint32_t claim, Constraint::Kind kind, const std::vector<int64_t>& ints,
                     const std::vector<uint32_t>& scope = {}) {
    Constraint c;
    c.kind = kind;
    c.attribute = "driver/attr";
    for (int64_t v : ints) {
      if (v < 0) {
        c.value_of_device.push_back(kNone);
        continue;
      }
      AttributeValue a;
      a.present = true;
      a.int_value = v;
      a.set_type = AttributeValue::SetType::kInt;
      a.set = {v};
      auto it = std::find(problem.values.begin(), problem.values.end(), a);
      if (it == problem.values.end()) {
        problem.values.push_back(a);
        it = problem.values.end() - 1;
      }
      c.value_of_device.push_back(static_cast<uint32_t>(it - problem.values.begin()));
    }
    uint32_t bit = static_cast<uint32_t>(problem.claims[claim].constraints.size());
    problem.claims[claim].constraints.push_back(c);
    for (RequestKey& key : problem.keys) {
      if (key.claim != claim) continue;
      bool in = scope.empty();
      for (uint32_t k : scope) {
        if (&problem.keys[k] == &key) in = true;
      }
      if (in) key.constraint_scope |= uint64_t{1} << bit;
    }
  }

  Problem& Finish() {
    AssignSymmetryClasses(problem);
    return problem;
  }

  Problem problem;
};

std::vector<std::string> Names(const Problem& p, const SearchResult& r) {
  std::vector<std::string> out;
  for (const auto& claim : r.choices) {
    for (const DeviceChoice& c : claim) {
      out.push_back(p.keys[c.key].FullName() + "=" + p.devices[c.device].name);
    }
  }
  return out;
}

SearchResult MustSearch(const Problem& p, Features f = AllFeatures(), bool prune = true) {
  SearchOptions o;
  o.features = f;
  o.prune = prune;
  StatusOr<SearchResult> r = Search(p, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SearchResult{};
}

TEST(SearchTest, PicksDevicesInSearchOrder) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(3);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 2, .candidates = {d[1], d[0], d[2]}});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r), std::vector<std::string>({"req-0=device-1", "req-0=device-0"}));
}

TEST(SearchTest, BacktracksAcrossRequestsWithCombinations) {
  // req-1 takes two devices, req-2 needs device-0: the first combination {0, 1} fails.
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(3);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-1", .count = 2, .candidates = d});
  b.AddRequest(claim, {.name = "req-2", .count = 1, .candidates = {d[0]}});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r),
            std::vector<std::string>({"req-1=device-1", "req-1=device-2", "req-2=device-0"}));
}

TEST(SearchTest, FirstAvailableFallsBackAndRecordsTheChoice) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(2);
  uint32_t claim = b.AddClaim();
  b.AddFirstAvailable(claim, "req",
                      {{.name = "big", .count = 3, .candidates = d},
                       {.name = "small", .count = 1, .candidates = d}});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r), std::vector<std::string>({"req/small=device-0"}));
  EXPECT_EQ(r.selected_subrequest[0][0], 1);
}

TEST(SearchTest, MaxSizeSkipsToSubrequestNeedingFewerDevices) {
  // req-0 takes 31 devices; req-1's first alternative (2 devices) would exceed 32 results.
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(40);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 31, .candidates = d});
  b.AddFirstAvailable(
      claim, "req-1",
      {{.name = "two", .count = 2, .candidates = d}, {.name = "one", .count = 1, .candidates = d}});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(r.selected_subrequest[0][1], 1);
  EXPECT_EQ(r.choices[0].size(), 32u);
}

TEST(SearchTest, MaxSizeEscapingTheFirstClaimIsAnError) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(40);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 31, .candidates = d});
  b.AddFirstAvailable(claim, "req-1", {{.name = "two", .count = 2, .candidates = d}});
  SearchOptions o;
  o.features = AllFeatures();
  StatusOr<SearchResult> r = Search(b.Finish(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "allocation max size exceeded");
}

TEST(SearchTest, CountBoundStopsHopelessRequestAtOnce) {
  // Ask for 32 devices when 31 exist: upstream walks 2^31 combinations.
  Builder b;
  std::vector<DeviceIndex> d;
  for (int pool = 0; pool < 31; ++pool) {
    uint32_t p = pool == 0 ? 0 : b.AddPool();
    d.push_back(b.AddDevice(p));
  }
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 32, .candidates = d});
  SearchResult r = MustSearch(b.Finish());
  EXPECT_FALSE(r.solved);
  EXPECT_EQ(r.stats.count_bound_prunes, 1);
  EXPECT_LE(r.stats.allocate_one_calls, 2);
}

TEST(SearchTest, SymmetryAvoidsEnumeratingIdenticalDevices) {
  // req-a chooses 8 of 24 identical devices, req-b can never be satisfied: upstream tries all
  // C(24, 8) = 735471 combinations.
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(24);
  DeviceIndex other = b.AddDevice();
  b.problem.devices[other].allocated = true;
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-a", .count = 8, .candidates = d});
  b.AddRequest(claim, {.name = "req-b", .count = 1, .candidates = {other}});
  SearchResult r = MustSearch(b.Finish());
  EXPECT_FALSE(r.solved);
  EXPECT_LT(r.stats.allocate_one_calls, 2000);
  EXPECT_GT(r.stats.symmetry_skips, 0);
}

TEST(SearchTest, MemoRemembersInfeasibleStatesAcrossClaims) {
  // Four one-device claims over four distinct devices, then a claim that cannot be satisfied:
  // without memo the first four claims enumerate 4! orders of the same device set.
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(6);
  b.problem.devices[d[5]].allocated = true;
  for (int c = 0; c < 4; ++c) {
    uint32_t claim = b.AddClaim();
    b.AddRequest(claim, {.name = "req", .count = 1, .candidates = {d[0], d[1], d[2], d[3]}});
    b.AddConstraint(claim, Constraint::Kind::kMatch, {0, 1, 2, 3, 4, 5});
  }
  uint32_t last = b.AddClaim();
  b.AddRequest(last, {.name = "req", .count = 1, .candidates = {d[5]}});
  Problem& p = b.Finish();
  SearchResult pruned = MustSearch(p);
  SearchResult plain = MustSearch(p, AllFeatures(), /*prune=*/false);
  EXPECT_FALSE(pruned.solved);
  EXPECT_FALSE(plain.solved);
  EXPECT_GT(pruned.stats.memo_hits, 0);
  EXPECT_LT(pruned.stats.allocate_one_calls, plain.stats.allocate_one_calls);
}

TEST(SearchTest, ConstraintAcrossRequestsForcesBacktracking) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(4);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "a", .count = 1, .candidates = d});
  b.AddRequest(claim, {.name = "b", .count = 1, .candidates = d});
  b.AddConstraint(claim, Constraint::Kind::kMatch, {1, 2, 3, 2});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r), std::vector<std::string>({"a=device-1", "b=device-3"}));
}

TEST(SearchTest, AdminAccessMayReuseAllocatedDeviceButNotTwiceInOneClaim) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(2);
  b.problem.devices[d[0]].allocated = true;
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "a", .count = 1, .admin = true, .candidates = {d[0]}});
  b.AddRequest(claim, {.name = "b", .count = 1, .admin = true, .candidates = {d[0], d[1]}});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r), std::vector<std::string>({"a=device-0", "b=device-1"}));
}

TEST(SearchTest, AllModeConstraintViolationIsFatal) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(2);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .all = true, .candidates = d});
  b.AddConstraint(claim, Constraint::Kind::kMatch, {1, 2});
  SearchOptions o;
  o.features = AllFeatures();
  StatusOr<SearchResult> r = Search(b.Finish(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "claim claim-0, request req-0: cannot add device driver/pool-0/device-1 because a "
            "claim constraint would not be satisfied");
}

TEST(SearchTest, AllModeDeviceInUseMakesRequestUnsatisfiable) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(2);
  b.problem.devices[d[1]].allocated = true;
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .all = true, .candidates = d});
  SearchResult r = MustSearch(b.Finish());
  EXPECT_FALSE(r.solved);
}

TEST(SearchTest, SelectorErrorIsFatalOnlyWhenReached) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(2);
  uint32_t claim = b.AddClaim();
  uint32_t key = b.AddRequest(claim, {.name = "req-0", .count = 1, .candidates = d});
  b.problem.errors.push_back("claim claim-0: selector #0 on device driver/pool-0/device-1: boom");
  b.problem.keys[key].candidates[1].error = 0;
  Problem& p = b.Finish();
  SearchResult ok = MustSearch(p);
  EXPECT_TRUE(ok.solved) << "device-0 fits before device-1 is evaluated";
  p.devices[d[0]].allocated = true;
  SearchOptions o;
  o.features = AllFeatures();
  StatusOr<SearchResult> r = Search(p, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "claim claim-0: selector #0 on device driver/pool-0/device-1: boom");
}

TEST(SearchTest, CountersLimitPartitionsOfOneDevice) {
  // Counter set of 8Gi; partitions consume 4Gi, 6Gi, 4Gi: two requests get devices 0 and 2.
  Builder b;
  uint32_t memory = b.AddCounter(0, "8Gi");
  std::vector<DeviceIndex> d = b.AddDevices(3);
  b.Consume(d[0], memory, "4Gi");
  b.Consume(d[1], memory, "6Gi");
  b.Consume(d[2], memory, "4Gi");
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 1, .candidates = d});
  b.AddRequest(claim, {.name = "req-1", .count = 1, .candidates = d});
  Problem& p = b.Finish();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  EXPECT_EQ(Names(p, r), std::vector<std::string>({"req-0=device-0", "req-1=device-2"}));
  Features off = AllFeatures();
  off.partitionable_devices = false;
  EXPECT_FALSE(MustSearch(p, off).solved) << "devices consuming counters need the feature";
}

TEST(SearchTest, OvercommittedPoolRejectsEveryCounterConsumer) {
  Builder b;
  uint32_t good = b.AddCounter(0, "8Gi");
  b.AddCounter(0, "-1");
  DeviceIndex d = b.AddDevice();
  b.Consume(d, good, "1Gi");
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 1, .candidates = {d}});
  EXPECT_FALSE(MustSearch(b.Finish()).solved);
}

TEST(SearchTest, SharesOfMultiAllocatableDeviceNeverOversellCapacity) {
  Builder b;
  DeviceIndex d = b.AddDevice();
  b.problem.devices[d].multi_allocatable = true;
  b.problem.devices[d].capacities.push_back(DeviceCapacity{"bw", Q("4"), Q("0")});
  CapacityPlan plan;
  plan.consumed = {Q("2")};
  b.problem.plans.push_back(plan);
  uint32_t claim = b.AddClaim();
  std::vector<uint32_t> keys;
  for (int i = 0; i < 3; ++i) {
    keys.push_back(b.AddRequest(claim, {.name = "r" + std::to_string(i), .candidates = {d}}));
    b.problem.keys[keys.back()].candidates[0].plan = 0;
  }
  Problem& p = b.Finish();
  EXPECT_FALSE(MustSearch(p).solved) << "three shares of 2 exceed 4";
  p.claims[0].requests.pop_back();
  SearchResult r = MustSearch(p);
  ASSERT_TRUE(r.solved);
  ASSERT_EQ(r.choices[0].size(), 2u);
  EXPECT_TRUE(r.choices[0][0].shared);
  EXPECT_TRUE(r.choices[0][1].shared);
}

TEST(SearchTest, PolicyRejectionMovesToNextDevice) {
  class OnlyDeviceOne : public PolicyConstraint {
   public:
    std::string_view name() const override { return "only-device-1"; }
    std::optional<PolicyRejection> Add(const PolicyCandidate& c) override {
      if (c.device != "device-1") return PolicyRejection{"test", "not device-1"};
      ++held;
      ++max_held;
      return std::nullopt;
    }
    void Remove(const PolicyCandidate&) override { --held; }
    int held = 0;
    int max_held = 0;
  };
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(3);
  uint32_t claim = b.AddClaim();
  b.AddRequest(claim, {.name = "req-0", .count = 1, .candidates = d});
  Problem& p = b.Finish();
  OnlyDeviceOne policy;
  SearchOptions o;
  o.features = AllFeatures();
  o.policies = {&policy};
  StatusOr<SearchResult> r = Search(p, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->solved);
  EXPECT_EQ(Names(p, *r), std::vector<std::string>({"req-0=device-1"}));
  // The solution's devices are removed again after the search (policy.h).
  EXPECT_EQ(policy.held, 0);
  EXPECT_EQ(policy.max_held, 1);
}

// A policy that checks the seam's contract: every Remove matches the last accepted Add, and
// nothing is left accepted after a search.
class StackPolicy : public PolicyConstraint {
 public:
  explicit StackPolicy(std::string refused, std::string refused_request = "")
      : refused_(std::move(refused)), refused_request_(std::move(refused_request)) {}
  std::string_view name() const override { return "stack"; }
  std::optional<PolicyRejection> Add(const PolicyCandidate& c) override {
    if (c.device == refused_) return PolicyRejection{"test", "refused"};
    stack_.push_back(std::string(c.request) + "=" + std::string(c.device));
    return std::nullopt;
  }
  void Remove(const PolicyCandidate& c) override {
    ASSERT_FALSE(stack_.empty());
    EXPECT_EQ(stack_.back(), std::string(c.request) + "=" + std::string(c.device));
    stack_.pop_back();
  }
  std::optional<PolicyRejection> CheckRequest(const PolicyRequest& r) override {
    ++requests_checked;
    if (r.request == refused_request_) return PolicyRejection{"test", "request refused"};
    return std::nullopt;
  }
  size_t depth() const { return stack_.size(); }
  int requests_checked = 0;

 private:
  std::string refused_;
  std::string refused_request_;
  std::vector<std::string> stack_;
};

TEST(SearchTest, PolicyRefusingARequestSkipsToTheNextSubrequest) {
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(4);
  uint32_t claim = b.AddClaim();
  b.AddFirstAvailable(claim, "req-0",
                      {{.name = "big", .count = 1, .candidates = {d[0], d[1]}},
                       {.name = "pair", .count = 2, .candidates = {d[2], d[3]}}});
  Problem& p = b.Finish();
  StackPolicy policy("", "req-0/big");
  SearchOptions o;
  o.features = AllFeatures();
  o.policies = {&policy};
  StatusOr<SearchResult> r = Search(p, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->solved);
  EXPECT_EQ(Names(p, *r), std::vector<std::string>({"req-0/pair=device-2", "req-0/pair=device-3"}));
  EXPECT_EQ(r->selected_subrequest[0][0], 1);
  EXPECT_EQ(policy.depth(), 0u);
  EXPECT_EQ(policy.requests_checked, 2);
}

TEST(SearchTest, PolicyAddsAndRemovesStayBalancedWhileBacktracking) {
  // Two claims whose second one fails until the first one moves: lots of backtracking.
  Builder b;
  std::vector<DeviceIndex> d = b.AddDevices(4);
  uint32_t first = b.AddClaim();
  b.AddRequest(first, {.name = "req-0", .count = 2, .candidates = {d[0], d[1], d[2], d[3]}});
  uint32_t second = b.AddClaim();
  b.AddRequest(second, {.name = "req-0", .count = 2, .candidates = {d[0], d[1], d[3]}});
  Problem& p = b.Finish();
  StackPolicy policy("device-1");
  SearchOptions o;
  o.features = AllFeatures();
  o.policies = {&policy};
  StatusOr<SearchResult> r = Search(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->solved) << "device-1 refused leaves three devices for four";
  EXPECT_EQ(policy.depth(), 0u);
  StackPolicy none("");
  o.policies = {&none};
  r = Search(p, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->solved);
  EXPECT_EQ(none.depth(), 0u);
}

// Random small problems: the bounded search must return exactly what the plain walk returns.
TEST(SearchTest, PruningNeverChangesTheOutcome) {
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int solved = 0;
  SearchStats total;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    Builder b;
    int num_pools = pick(1, 2);
    for (int i = 1; i < num_pools; ++i) b.AddPool();
    bool counters = pick(0, 3) == 0;
    std::vector<uint32_t> pool_counter;
    if (counters) {
      for (int i = 0; i < num_pools; ++i) {
        pool_counter.push_back(b.AddCounter(static_cast<uint32_t>(i), pick(0, 1) ? "3" : "2"));
      }
    }
    int num_devices = pick(2, 8);
    std::vector<DeviceIndex> devices;
    for (int i = 0; i < num_devices; ++i) {
      uint32_t pool = static_cast<uint32_t>(pick(0, num_pools - 1));
      DeviceIndex d = b.AddDevice(pool);
      devices.push_back(d);
      if (pick(0, 5) == 0) b.problem.devices[d].allocated = true;
      if (counters && pick(0, 1)) b.Consume(d, pool_counter[pool], "1");
    }
    auto random_candidates = [&]() {
      std::vector<DeviceIndex> out;
      for (DeviceIndex d : devices) {
        if (pick(0, 2) != 0) out.push_back(d);
      }
      return out;
    };
    int num_claims = pick(1, 3);
    for (int c = 0; c < num_claims; ++c) {
      uint32_t claim = b.AddClaim();
      int num_requests = pick(1, 2);
      for (int r = 0; r < num_requests; ++r) {
        if (pick(0, 3) == 0) {
          b.AddFirstAvailable(
              claim, "req" + std::to_string(r),
              {{.name = "s0", .count = pick(1, 3), .candidates = random_candidates()},
               {.name = "s1", .count = pick(1, 2), .candidates = random_candidates()}});
        } else {
          Builder::KeySpec spec{.name = "req" + std::to_string(r),
                                .count = pick(1, 3),
                                .admin = pick(0, 7) == 0,
                                .candidates = random_candidates()};
          if (pick(0, 9) == 0) {
            spec.all = true;
            spec.admin = false;
          }
          uint32_t key = b.AddRequest(claim, spec);
          for (Candidate& cand : b.problem.keys[key].candidates)
            cand.taint_blocked = pick(0, 9) == 0;
        }
      }
      if (pick(0, 1)) {
        std::vector<int64_t> values;
        for (int i = 0; i < num_devices; ++i) values.push_back(pick(-1, 2));
        b.AddConstraint(claim, pick(0, 1) ? Constraint::Kind::kMatch : Constraint::Kind::kDistinct,
                        values);
      }
    }
    Problem& p = b.Finish();
    for (bool list_mode : {false, true}) {
      Features f = AllFeatures();
      f.list_type_attributes = list_mode;
      SearchOptions pruned_options;
      pruned_options.features = f;
      SearchOptions plain_options = pruned_options;
      plain_options.prune = false;
      StatusOr<SearchResult> pruned = Search(p, pruned_options);
      StatusOr<SearchResult> plain = Search(p, plain_options);
      ASSERT_EQ(pruned.ok(), plain.ok()) << "iteration " << iteration;
      if (!plain.ok()) {
        EXPECT_EQ(pruned.status(), plain.status()) << "iteration " << iteration;
        continue;
      }
      ASSERT_EQ(pruned->solved, plain->solved) << "iteration " << iteration;
      EXPECT_EQ(Names(p, *pruned), Names(p, *plain)) << "iteration " << iteration;
      EXPECT_EQ(pruned->selected_subrequest, plain->selected_subrequest)
          << "iteration " << iteration;
      EXPECT_LE(pruned->stats.allocate_one_calls, plain->stats.allocate_one_calls);
      if (plain->solved) ++solved;
      total.count_bound_prunes += pruned->stats.count_bound_prunes;
      total.symmetry_skips += pruned->stats.symmetry_skips;
      total.memo_hits += pruned->stats.memo_hits;
    }
  }
  // The generator must produce both outcomes to mean anything.
  EXPECT_GT(solved, 500);
  EXPECT_LT(solved, 5500);
  // ... and must exercise every bound.
  EXPECT_GT(total.count_bound_prunes, 100);
  EXPECT_GT(total.symmetry_skips, 100);
  EXPECT_GT(total.memo_hits, 100);
}

}  // namespace
}  // namespace draplane::allocator::internal
