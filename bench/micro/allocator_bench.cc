// Allocator benchmarks (make bench; issue 4's (a)-(e)):
//   (a) BM_FillCluster/plain: 500 nodes x 10 devices, one-device claims allocated one after
//       another, each trying the nodes in order until one fits, until the cluster is full;
//   (b) BM_FillCluster/cel_selector: the same with a CEL selector in every claim;
//   (c) BM_FillCluster/match_pair: two-device claims with a matchAttribute constraint;
//       BM_FillCluster/quota: (a) with an Allocation-mode quota in the search (never refusing);
//   (d) BM_Pathological/<shape>: upstream's exponential backtracking shapes, one Allocate each
//       (bounded search), and the same shapes with the bounds off where upstream's walk ends;
//   (e) BM_LoadDump: a 10,000-node x 10-device cluster as JSON text -> decoded objects ->
//       snapshot (bench/scripts/allocator_dump.sh measures the CLI's load time and peak RSS).
// Counters: allocs_per_s, node_tries, s_per_node_try (shown with SI prefixes, e.g. 40n = 40 ns).
#include <benchmark/benchmark.h>

#include <boost/json/monotonic_resource.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "allocator/allocator.h"
#include "allocator/quota.h"
#include "api/codec/manifest.h"
#include "api/object.h"

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;
namespace corev1 = api::corev1;

constexpr char kDriver[] = "gpu.example.com";

rv1::DeviceClass GpuClass() {
  rv1::DeviceClass c;
  c.metadata.name = "gpu";
  rv1::DeviceSelector s;
  s.cel.emplace();
  s.cel->expression = R"(device.driver == "gpu.example.com")";
  c.spec.selectors.push_back(s);
  return c;
}

rv1::DeviceAttribute StringAttr(const std::string& v) {
  rv1::DeviceAttribute a;
  a.string_value = v;
  return a;
}
rv1::DeviceAttribute IntAttr(int64_t v) {
  rv1::DeviceAttribute a;
  a.int_value = v;
  return a;
}

// One node's slice: `devices` GPUs with a model, a NUMA node (half 0, half 1) and a uuid.
rv1::ResourceSlice NodeSlice(int node, int devices) {
  rv1::ResourceSlice s;
  std::string name = "node-" + std::to_string(node);
  s.metadata.name = name + "-gpu";
  s.spec.driver = kDriver;
  s.spec.pool.name = name;
  s.spec.pool.generation = 1;
  s.spec.pool.resource_slice_count = 1;
  s.spec.node_name = name;
  for (int d = 0; d < devices; ++d) {
    rv1::Device dev;
    dev.name = "gpu-" + std::to_string(d);
    dev.attributes.emplace("model", StringAttr("a100"));
    dev.attributes.emplace("numa", IntAttr(d < devices / 2 ? 0 : 1));
    dev.attributes.emplace("uuid", StringAttr(name + "-" + std::to_string(d)));
    rv1::DeviceCapacity memory;
    memory.value = api::Quantity::Parse("80Gi").value();
    dev.capacity.emplace("memory", memory);
    s.spec.devices.push_back(std::move(dev));
  }
  return s;
}

// kQuota: kPlain with an Allocation-mode quota constraint in the search whose limit is never
// reached (the cost of a policy that applies but never refuses).
enum class Shape { kPlain, kCelSelector, kMatchPair, kQuota };

rv1::ResourceClaim Claim(int i, Shape shape) {
  rv1::ResourceClaim c;
  c.metadata.name = "claim-" + std::to_string(i);
  c.metadata.namespace_ = "bench";
  rv1::DeviceRequest r;
  r.name = "gpu";
  r.exactly.emplace();
  r.exactly->device_class_name = "gpu";
  r.exactly->allocation_mode = "ExactCount";
  r.exactly->count = shape == Shape::kMatchPair ? 2 : 1;
  if (shape == Shape::kCelSelector) {
    rv1::DeviceSelector s;
    s.cel.emplace();
    s.cel->expression = R"(device.attributes["gpu.example.com"].model == "a100")";
    r.exactly->selectors.push_back(s);
  }
  c.spec.devices.requests.push_back(r);
  if (shape == Shape::kMatchPair) {
    rv1::DeviceConstraint constraint;
    constraint.match_attribute = std::string(kDriver) + "/numa";
    c.spec.devices.constraints.push_back(constraint);
  }
  return c;
}

// (a)-(c): fill a 500-node cluster, each allocation trying the nodes in order.
void BM_FillCluster(benchmark::State& state, Shape shape) {
  constexpr int kNodes = 500;
  constexpr int kDevices = 10;
  Snapshot snapshot;
  snapshot.SetClass(GpuClass());
  std::vector<corev1::Node> nodes(kNodes);
  for (int n = 0; n < kNodes; ++n) {
    snapshot.AddSlice(NodeSlice(n, kDevices));
    nodes[n].metadata.name = "node-" + std::to_string(n);
  }
  // A pair needs two devices on one NUMA node: 2 pairs per NUMA node of 5.
  const int per_node = shape == Shape::kMatchPair ? 4 : kDevices;
  const int total = kNodes * per_node;
  std::vector<rv1::ResourceClaim> claims;
  for (int i = 0; i < total; ++i) claims.push_back(Claim(i, shape));
  std::unique_ptr<Random> random = NewSeededRandom(1);
  const Features features = DefaultFeatures("1.36").value();
  Holdings holdings;
  QuotaBudget budget;
  budget.namespace_ = "bench";
  budget.name = "devices";
  budget.hard.emplace(api::quota::DeviceClassResourceName("gpu"),
                      api::Quantity::FromInt64(1'000'000));
  budget.hard.emplace(DriverCounterResource(kDriver, "memory"), *api::Quantity::Parse("1Ei"));
  QuotaConstraint quota("bench", {budget}, holdings);
  Options options{.random = random.get()};
  if (shape == Shape::kQuota) options.policies = {&quota};
  int64_t allocations = 0;
  int64_t tries = 0;
  for (auto _ : state) {
    AllocatedState allocated;
    size_t first_free = 0;
    for (int i = 0; i < total; ++i) {
      std::unique_ptr<Allocator> alloc = NewAllocator(snapshot, {&claims[i]}, features);
      bool done = false;
      // Trying nodes in order from the first; full nodes are rejected by the per-node cache.
      for (size_t n = 0; n < nodes.size() && !done; ++n) {
        ++tries;
        StatusOr<Outcome> o = alloc->Allocate(nodes[n], allocated, options);
        if (!o.ok()) state.SkipWithError(std::string(o.status().message()).c_str());
        if (o.ok() && o->kind == Outcome::Kind::kAllocated) {
          allocated.AddAllocation((*o->results)[0]);
          done = true;
          if (n > first_free) first_free = n;
        }
      }
      if (!done) {
        state.SkipWithError("the cluster filled up early");
        break;
      }
      ++allocations;
    }
  }
  state.counters["allocs_per_s"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kIsRate);
  state.counters["node_tries"] =
      benchmark::Counter(static_cast<double>(tries), benchmark::Counter::kAvgIterations);
  state.counters["s_per_node_try"] = benchmark::Counter(
      static_cast<double>(tries), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_FillCluster, plain, Shape::kPlain)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillCluster, cel_selector, Shape::kCelSelector)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillCluster, match_pair, Shape::kMatchPair)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillCluster, quota, Shape::kQuota)->Unit(benchmark::kMillisecond);

// --- (d) pathological shapes ------------------------------------------------------------------

// Devices in `pools` pools of `per_pool` devices each, on one node; device attributes: `numa`
// = index / group (so `group` devices share a value), `gpu` = the pool index.
struct Pathological {
  Snapshot snapshot;
  std::vector<rv1::ResourceClaim> claims;
  AllocatedState allocated;
  corev1::Node node;

  Pathological() {
    snapshot.SetClass(GpuClass());
    node.metadata.name = "node-0";
  }
  void AddPools(int pools, int per_pool, int group) {
    int index = 0;
    for (int p = 0; p < pools; ++p) {
      rv1::ResourceSlice s;
      s.metadata.name = "slice-" + std::to_string(p);
      s.spec.driver = kDriver;
      s.spec.pool.name = "pool-" + std::to_string(p);
      s.spec.pool.generation = 1;
      s.spec.pool.resource_slice_count = 1;
      s.spec.node_name = "node-0";
      for (int d = 0; d < per_pool; ++d, ++index) {
        rv1::Device dev;
        dev.name = "dev-" + std::to_string(index);
        dev.attributes.emplace("numa", IntAttr(index / group));
        dev.attributes.emplace("gpu", IntAttr(p));
        dev.attributes.emplace("uuid", StringAttr("uuid-" + std::to_string(index)));
        s.spec.devices.push_back(std::move(dev));
      }
      snapshot.AddSlice(std::move(s));
    }
  }
  static rv1::DeviceRequest Exactly(const std::string& name, int64_t count,
                                    const std::string& selector = "") {
    rv1::DeviceRequest r;
    r.name = name;
    r.exactly.emplace();
    r.exactly->device_class_name = "gpu";
    r.exactly->allocation_mode = "ExactCount";
    r.exactly->count = count;
    if (!selector.empty()) {
      rv1::DeviceSelector s;
      s.cel.emplace();
      s.cel->expression = selector;
      r.exactly->selectors.push_back(s);
    }
    return r;
  }
  static rv1::DeviceSubRequest Sub(const std::string& name, int64_t count) {
    rv1::DeviceSubRequest s;
    s.name = name;
    s.device_class_name = "gpu";
    s.allocation_mode = "ExactCount";
    s.count = count;
    return s;
  }
  rv1::ResourceClaim& NewClaim() {
    claims.emplace_back();
    claims.back().metadata.name = "claim-" + std::to_string(claims.size() - 1);
    return claims.back();
  }
};

enum class Case {
  kMaxMinusOne,           // count 32, 31 devices over 31 pools: 2^31 combinations upstream
  kLateFailureManyPools,  // 16 of 48 devices, then a request nothing satisfies: C(48,16)
  kPrioritizedMaxSize,    // kubernetes#130593: three requests firstAvailable [32, 16, 10]
  kMatchNoSolution,       // count 3 with matchAttribute; only pairs share a value
  kClaimsBacktrack,       // 8 one-device claims, then a claim nothing satisfies
  kDistinctTight,         // distinctAttribute over 12 devices with 11 values
};

void BuildCase(Case c, Pathological& p) {
  switch (c) {
    case Case::kMaxMinusOne: {
      p.AddPools(31, 1, 1);
      p.NewClaim().spec.devices.requests.push_back(Pathological::Exactly("all-but", 32));
      break;
    }
    case Case::kLateFailureManyPools: {
      p.AddPools(48, 1, 1);
      rv1::ResourceClaim& claim = p.NewClaim();
      claim.spec.devices.requests.push_back(Pathological::Exactly("many", 16));
      // Only dev-0 fits the second request, and the first request may take it.
      claim.spec.devices.requests.push_back(Pathological::Exactly(
          "special", 1, R"(device.attributes["gpu.example.com"].uuid == "uuid-0")"));
      p.allocated.AddDevice(kDriver, "pool-0", "dev-0");
      break;
    }
    case Case::kPrioritizedMaxSize: {
      p.AddPools(4, 10, 1);
      rv1::ResourceClaim& claim = p.NewClaim();
      for (const char* name : {"a", "b", "c"}) {
        rv1::DeviceRequest r;
        r.name = name;
        r.first_available = {Pathological::Sub("big", 32), Pathological::Sub("half", 16),
                             Pathological::Sub("small", 10)};
        claim.spec.devices.requests.push_back(r);
      }
      break;
    }
    case Case::kMatchNoSolution: {
      p.AddPools(8, 8, 2);  // 64 devices, each numa value on exactly two devices
      rv1::ResourceClaim& claim = p.NewClaim();
      claim.spec.devices.requests.push_back(Pathological::Exactly("three", 3));
      rv1::DeviceConstraint match;
      match.match_attribute = std::string(kDriver) + "/numa";
      claim.spec.devices.constraints.push_back(match);
      break;
    }
    case Case::kClaimsBacktrack: {
      p.AddPools(16, 1, 1);
      for (int i = 0; i < 8; ++i) {
        p.NewClaim().spec.devices.requests.push_back(Pathological::Exactly("one", 1));
      }
      p.NewClaim().spec.devices.requests.push_back(Pathological::Exactly(
          "none", 1, R"(device.attributes["gpu.example.com"].uuid == "uuid-99")"));
      break;
    }
    case Case::kDistinctTight: {
      p.AddPools(1, 24, 2);  // 24 devices, 12 numa values
      rv1::ResourceClaim& claim = p.NewClaim();
      claim.spec.devices.requests.push_back(Pathological::Exactly("spread", 13));
      rv1::DeviceConstraint distinct;
      distinct.distinct_attribute = std::string(kDriver) + "/numa";
      claim.spec.devices.constraints.push_back(distinct);
      break;
    }
  }
}

void BM_Pathological(benchmark::State& state, Case c, bool prune) {
  Pathological p;
  BuildCase(c, p);
  std::vector<const rv1::ResourceClaim*> claims;
  for (const rv1::ResourceClaim& claim : p.claims) claims.push_back(&claim);
  Features features = AllFeatures();
  int64_t calls = 0;
  std::string outcome;
  for (auto _ : state) {
    std::unique_ptr<Allocator> alloc = NewAllocator(p.snapshot, claims, features);
    StatusOr<Outcome> o =
        alloc->Allocate(p.node, p.allocated, {.use_node_cache = false, .prune = prune});
    if (!o.ok()) {
      outcome = std::string(o.status().message());
    } else {
      calls = o->stats.allocate_one_calls;
      outcome = o->kind == Outcome::Kind::kAllocated ? "allocated" : "unsatisfiable";
    }
  }
  state.counters["allocate_one_calls"] = static_cast<double>(calls);
  state.SetLabel(outcome);
}
BENCHMARK_CAPTURE(BM_Pathological, max_minus_one, Case::kMaxMinusOne, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, late_failure_many_pools, Case::kLateFailureManyPools, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, prioritized_max_size, Case::kPrioritizedMaxSize, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, match_no_solution, Case::kMatchNoSolution, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, claims_backtrack, Case::kClaimsBacktrack, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, distinct_tight, Case::kDistinctTight, true)
    ->Unit(benchmark::kMicrosecond);
// Upstream's plain walk on the shapes where it ends in reasonable time (the others take hours).
BENCHMARK_CAPTURE(BM_Pathological, upstream_walk_prioritized_max_size, Case::kPrioritizedMaxSize,
                  false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pathological, upstream_walk_match_no_solution, Case::kMatchNoSolution, false)
    ->Unit(benchmark::kMicrosecond);

// --- (e) loading a 10,000-node dump ------------------------------------------------------------

// The dump as `kubectl get resourceslices -o json` writes it (a List), built once.
const std::string& DumpJson() {
  static const std::string text = [] {
    std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
    for (int n = 0; n < 10000; ++n) {
      if (n > 0) out += ",";
      std::string name = "node-" + std::to_string(n);
      out += R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" +
             name + R"(-gpu","uid":"00000000-0000-4000-8000-)" + std::to_string(100000000000 + n) +
             R"(","resourceVersion":"1"},"spec":{"driver":"gpu.example.com","pool":{"name":")" +
             name + R"(","generation":1,"resourceSliceCount":1},"nodeName":")" + name +
             R"(","devices":[)";
      for (int d = 0; d < 10; ++d) {
        if (d > 0) out += ",";
        out +=
            R"({"name":"gpu-)" + std::to_string(d) +
            R"(","attributes":{"model":{"string":"NVIDIA A100-SXM4-80GB"},"numa":{"int":)" +
            std::to_string(d / 5) + R"(},"uuid":{"string":"GPU-)" + name + "-" + std::to_string(d) +
            R"("},"driverVersion":{"version":"550.54.15"}},"capacity":{"memory":{"value":"80Gi"}}})";
      }
      out += "]}}";
    }
    out += "]}";
    return out;
  }();
  return text;
}

void BM_LoadDump(benchmark::State& state) {
  const std::string& text = DumpJson();
  size_t slices = 0;
  for (auto _ : state) {
    Snapshot snapshot;
    boost::json::monotonic_resource arena;
    StatusOr<std::vector<api::codec::ManifestObject>> objects =
        api::codec::ParseManifest(text, {}, &arena);
    if (!objects.ok()) {
      state.SkipWithError(std::string(objects.status().message()).c_str());
      break;
    }
    for (const api::codec::ManifestObject& o : *objects) {
      api::FieldErrorList errors;
      api::Object object = api::DecodeObject(o.value, &errors);
      if (auto* s = std::get_if<rv1::ResourceSlice>(&object)) snapshot.AddSlice(std::move(*s));
    }
    slices = snapshot.slice_count();
  }
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_LoadDump)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace draplane::allocator
BENCHMARK_MAIN();
