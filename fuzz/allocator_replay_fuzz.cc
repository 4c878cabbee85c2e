// Allocator replay fuzz target: the input is read as a sequence of operations on a small
// cluster -- add a pool (devices with attributes, counters, shared capacity, taints, on one node
// or all nodes), allocate the claims of a Pod on a node, deallocate an earlier allocation -- and
// after every allocation the invariants are checked against a model kept here, independent of
// the allocator:
//   1. no device is held by two exclusive (non-admin) allocations;
//   2. no counter of a pool is oversold by the devices allocated from it;
//   3. no capacity of a multi-allocatable device is oversold by its shares;
//   4. the bounded search (pruning on) returns exactly what upstream's plain walk returns
//      (outcome, results, error text), with the same share-ID seed, whenever the plain walk
//      finishes within the step limit; under the same limit the bounded search never stops
//      where the plain walk finished;
//   5. explanations build and render for every outcome.
// The plain walk is exponential on some inputs (a distinctAttribute over few values took 22M
// steps, ~20 s under ASan), so an input's searches share a budget of steps.
// Selectors use the allocator's testing engine (internal/testing_engine.h) so CEL is not what
// is being fuzzed here (cel_eval_fuzz does that).
#include <fuzzer/FuzzedDataProvider.h>

#include <boost/json/serialize.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "allocator/allocator.h"
#include "allocator/internal/testing_engine.h"
#include "api/gen/resource_v1_codec.h"

namespace {

namespace rv1 = draplane::api::resourcev1;
namespace alloc = draplane::allocator;
using draplane::StatusOr;
using draplane::api::Quantity;

constexpr char kDriver[] = "drv";
constexpr int kNodes = 3;
// allocateOne steps per input over all its searches, pruned and plain: steps cost 1-3 us under
// ASan, well inside run_fuzzer.sh's 10 s timeout.
constexpr int64_t kStepBudget = 100'000;

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "invariant violated: %s\n", what.c_str());
  std::abort();
}

struct DeviceModel {
  std::map<std::string, Quantity> counters;  // counter name -> amount (one counter set "mem")
  std::map<std::string, Quantity> capacity;  // capacity name -> total
  bool multi = false;
};

struct PoolModel {
  std::map<std::string, Quantity> counters;  // available per counter
  std::map<std::string, DeviceModel> devices;
};

class Replay {
 public:
  explicit Replay(FuzzedDataProvider& in)
      : in_(in), snapshot_(draplane::allocator::internal::NewTestingSelectorEngine()) {
    features_.admin_access = in_.ConsumeBool();
    features_.prioritized_list = true;
    features_.partitionable_devices = in_.ConsumeBool();
    features_.device_taints = in_.ConsumeBool();
    features_.consumable_capacity = in_.ConsumeBool();
    features_.device_binding_and_status = in_.ConsumeBool();
    features_.list_type_attributes = in_.ConsumeBool();
    AddClass("any", "true");
    AddClass("even", "attr:parity=0");
    AddClass("fast", "attr:kind=fast");
    for (int n = 0; n < kNodes; ++n) {
      nodes_.emplace_back();
      nodes_.back().metadata.name = "node-" + std::to_string(n);
    }
  }

  void Run() {
    for (int step = 0; step < 40 && in_.remaining_bytes() > 0 && steps_left_ > 0; ++step) {
      switch (in_.ConsumeIntegralInRange(0, 5)) {
        case 0:
        case 1:
          AddPool();
          break;
        case 2:
        case 3:
        case 4:
          AllocateOnce();
          break;
        case 5:
          Deallocate();
          break;
      }
    }
  }

 private:
  void AddClass(const std::string& name, const std::string& selector) {
    rv1::DeviceClass c;
    c.metadata.name = name;
    rv1::DeviceSelector s;
    s.cel.emplace();
    s.cel->expression = selector;
    c.spec.selectors.push_back(s);
    snapshot_.SetClass(c);
  }

  Quantity Small(int lo, int hi) { return Quantity::FromInt64(in_.ConsumeIntegralInRange(lo, hi)); }

  void AddPool() {
    if (pools_.size() >= 6) return;
    std::string pool = "pool-" + std::to_string(pools_.size());
    PoolModel& model = pools_[pool];
    bool counters = in_.ConsumeBool();
    bool all_nodes = in_.ConsumeIntegralInRange(0, 4) == 0;
    std::string node = "node-" + std::to_string(in_.ConsumeIntegralInRange(0, kNodes - 1));
    int slices = counters ? 2 : 1;
    if (counters) {
      rv1::ResourceSlice s = Slice(pool, "counters", slices, all_nodes, node);
      rv1::CounterSet set;
      set.name = "mem";
      for (const char* name : {"a", "b"}) {
        rv1::Counter c;
        c.value = Small(1, 6);
        set.counters.emplace(name, c);
        model.counters[name] = c.value;
      }
      s.spec.shared_counters.push_back(set);
      snapshot_.AddSlice(std::move(s));
    }
    rv1::ResourceSlice s = Slice(pool, "devices", slices, all_nodes, node);
    int devices = in_.ConsumeIntegralInRange(1, 5);
    for (int d = 0; d < devices; ++d) {
      rv1::Device dev;
      dev.name = "dev-" + std::to_string(d);
      DeviceModel& dm = model.devices[dev.name];
      dev.attributes.emplace("parity", IntAttr(in_.ConsumeIntegralInRange(0, 1)));
      rv1::DeviceAttribute kind;
      kind.string_value = in_.ConsumeBool() ? "fast" : "slow";
      dev.attributes.emplace("kind", kind);
      dev.attributes.emplace("numa", IntAttr(in_.ConsumeIntegralInRange(0, 2)));
      if (in_.ConsumeIntegralInRange(0, 3) == 0) {
        rv1::DeviceAttribute list;
        list.ints = {in_.ConsumeIntegralInRange(0, 2), in_.ConsumeIntegralInRange(0, 2)};
        dev.attributes.insert_or_assign("numa", list);
      }
      if (counters && in_.ConsumeBool()) {
        rv1::DeviceCounterConsumption consumption;
        consumption.counter_set = "mem";
        for (const char* name : {"a", "b"}) {
          if (!in_.ConsumeBool()) continue;
          rv1::Counter c;
          c.value = Small(1, 4);
          consumption.counters.emplace(name, c);
          dm.counters[name] = c.value;
        }
        dev.consumes_counters.push_back(consumption);
      }
      if (in_.ConsumeIntegralInRange(0, 2) == 0) {
        dev.allow_multiple_allocations = true;
        dm.multi = true;
        rv1::DeviceCapacity bw;
        bw.value = Small(2, 8);
        if (in_.ConsumeBool()) {
          bw.request_policy.emplace();
          bw.request_policy->default_value = Quantity::FromInt64(1);
          bw.request_policy->valid_range.emplace();
          bw.request_policy->valid_range->min = Quantity::FromInt64(1);
          bw.request_policy->valid_range->step = Small(1, 2);
        }
        dev.capacity.emplace("bw", bw);
        dm.capacity["bw"] = bw.value;
      }
      if (in_.ConsumeIntegralInRange(0, 4) == 0) {
        rv1::DeviceTaint taint;
        taint.key = "health";
        taint.value = "bad";
        taint.effect = in_.ConsumeBool() ? "NoSchedule" : "None";
        dev.taints.push_back(taint);
      }
      s.spec.devices.push_back(std::move(dev));
    }
    snapshot_.AddSlice(std::move(s));
  }

  static rv1::DeviceAttribute IntAttr(int64_t v) {
    rv1::DeviceAttribute a;
    a.int_value = v;
    return a;
  }

  rv1::ResourceSlice Slice(const std::string& pool, const std::string& suffix, int count,
                           bool all_nodes, const std::string& node) {
    rv1::ResourceSlice s;
    s.metadata.name = pool + "-" + suffix;
    s.spec.driver = kDriver;
    s.spec.pool.name = pool;
    s.spec.pool.generation = 1;
    s.spec.pool.resource_slice_count = count;
    if (all_nodes) {
      s.spec.all_nodes = true;
    } else {
      s.spec.node_name = node;
    }
    return s;
  }

  rv1::ResourceClaim MakeClaim() {
    rv1::ResourceClaim c;
    c.metadata.name = "claim-" + std::to_string(next_claim_++);
    c.metadata.namespace_ = "fuzz";
    const char* classes[] = {"any", "even", "fast"};
    int requests = in_.ConsumeIntegralInRange(1, 3);
    for (int r = 0; r < requests; ++r) {
      rv1::DeviceRequest req;
      req.name = "r" + std::to_string(r);
      auto fill = [&](std::string* cls, std::string* mode, int64_t* count,
                      std::vector<rv1::DeviceToleration>* tolerations,
                      std::optional<rv1::CapacityRequirements>* capacity) {
        *cls = classes[in_.ConsumeIntegralInRange(0, 2)];
        *mode = in_.ConsumeIntegralInRange(0, 5) == 0 ? "All" : "ExactCount";
        *count = *mode == "All" ? 0 : in_.ConsumeIntegralInRange(1, 3);
        if (in_.ConsumeIntegralInRange(0, 3) == 0) {
          rv1::DeviceToleration t;
          t.key = "health";
          t.operator_ = "Exists";
          tolerations->push_back(t);
        }
        if (features_.consumable_capacity && in_.ConsumeIntegralInRange(0, 2) == 0) {
          capacity->emplace();
          (*capacity)->requests.emplace("bw", Small(1, 3));
        }
      };
      if (in_.ConsumeIntegralInRange(0, 3) == 0) {
        for (int s = 0; s < 2; ++s) {
          rv1::DeviceSubRequest sub;
          sub.name = "s" + std::to_string(s);
          fill(&sub.device_class_name, &sub.allocation_mode, &sub.count, &sub.tolerations,
               &sub.capacity);
          req.first_available.push_back(sub);
        }
      } else {
        req.exactly.emplace();
        fill(&req.exactly->device_class_name, &req.exactly->allocation_mode, &req.exactly->count,
             &req.exactly->tolerations, &req.exactly->capacity);
        if (features_.admin_access && in_.ConsumeIntegralInRange(0, 5) == 0) {
          req.exactly->admin_access = true;
        }
      }
      c.spec.devices.requests.push_back(req);
    }
    if (in_.ConsumeIntegralInRange(0, 2) == 0) {
      rv1::DeviceConstraint constraint;
      if (in_.ConsumeBool()) {
        constraint.match_attribute = std::string(kDriver) + "/numa";
      } else {
        constraint.distinct_attribute = std::string(kDriver) + "/numa";
      }
      c.spec.devices.constraints.push_back(constraint);
    }
    return c;
  }

  void AllocateOnce() {
    std::vector<rv1::ResourceClaim> claims;
    int count = in_.ConsumeIntegralInRange(1, 2);
    for (int i = 0; i < count; ++i) claims.push_back(MakeClaim());
    std::vector<const rv1::ResourceClaim*> pointers;
    for (const rv1::ResourceClaim& c : claims) pointers.push_back(&c);
    const auto& node = nodes_[static_cast<size_t>(in_.ConsumeIntegralInRange(0, kNodes - 1))];
    bool explain = in_.ConsumeBool();

    std::unique_ptr<draplane::Random> r1 = draplane::NewSeededRandom(9);
    std::unique_ptr<draplane::Random> r2 = draplane::NewSeededRandom(9);
    auto a = alloc::NewAllocator(snapshot_, pointers, features_);
    const int64_t limit = steps_left_;
    StatusOr<alloc::Outcome> pruned = a->Allocate(
        node, state_, {.explain = explain, .random = r1.get(), .max_search_steps = limit});
    StatusOr<alloc::Outcome> plain = a->Allocate(
        node, state_,
        {.random = r2.get(), .use_node_cache = false, .prune = false, .max_search_steps = limit});
    Charge(pruned, limit);
    Charge(plain, limit);
    if (!alloc::IsStepLimitExceeded(plain.status())) CheckSame(pruned, plain);
    if (pruned.ok() && explain) {
      if (!pruned->explanation.has_value()) Violation("explain=true without explanation");
      (void)pruned->explanation->ToText();
      (void)pruned->explanation->ToJson();
    }
    if (!pruned.ok() || pruned->kind != alloc::Outcome::Kind::kAllocated) return;
    if (pruned->results.size() != claims.size()) Violation("one result per claim");
    for (const rv1::AllocationResult& result : pruned->results) {
      state_.AddAllocation(result);
      held_.push_back(result);
      Record(result, +1);
    }
    CheckInvariants();
  }

  // Errors other than the step limit are charged the whole limit: their step count is unknown.
  void Charge(const StatusOr<alloc::Outcome>& o, int64_t limit) {
    steps_left_ -= o.ok() ? o->stats.allocate_one_calls : limit;
  }

  void Deallocate() {
    if (held_.empty()) return;
    size_t i = in_.ConsumeIntegralInRange<size_t>(0, held_.size() - 1);
    state_.RemoveAllocation(held_[i]);
    Record(held_[i], -1);
    held_.erase(held_.begin() + static_cast<ptrdiff_t>(i));
  }

  static std::string Render(const StatusOr<alloc::Outcome>& o) {
    if (!o.ok()) return "error: " + std::string(o.status().message());
    std::string out = std::to_string(static_cast<int>(o->kind)) + " " + o->message;
    for (const rv1::AllocationResult& r : o->results) {
      out += "\n" + boost::json::serialize(rv1::Encode(r));
    }
    return out;
  }

  static void CheckSame(const StatusOr<alloc::Outcome>& a, const StatusOr<alloc::Outcome>& b) {
    std::string ra = Render(a);
    std::string rb = Render(b);
    if (ra != rb) Violation("bounded search differs from upstream's walk:\n" + ra + "\nvs\n" + rb);
  }

  // The model: exclusive holders, shares and capacity per device.
  void Record(const rv1::AllocationResult& result, int sign) {
    for (const auto& r : result.devices.results) {
      if (r.admin_access.value_or(false)) continue;
      auto key = std::make_tuple(r.pool, r.device);
      if (r.share_id.has_value()) {
        shares_[key] += sign;
        for (const auto& [name, q] : r.consumed_capacity) {
          Quantity& used = consumed_[key][name];
          used = sign > 0 ? used.Add(q) : used.Sub(q);
        }
      } else {
        exclusive_[key] += sign;
      }
    }
  }

  void CheckInvariants() {
    for (const auto& [key, n] : exclusive_) {
      if (n > 0 && shares_[key] > 0) {
        Violation("device " + std::get<1>(key) + " both exclusively allocated and shared");
      }
      if (n > 1) {
        Violation("device " + std::get<0>(key) + "/" + std::get<1>(key) +
                  " exclusively allocated " + std::to_string(n) + " times");
      }
    }
    for (const auto& [key, used] : consumed_) {
      const PoolModel& pool = pools_.at(std::get<0>(key));
      const DeviceModel& dev = pool.devices.at(std::get<1>(key));
      for (const auto& [name, q] : used) {
        auto it = dev.capacity.find(name);
        if (it == dev.capacity.end() || q.Compare(it->second) > 0) {
          Violation("capacity " + name + " of " + std::get<1>(key) + " oversold: " + q.ToString());
        }
      }
    }
    if (!features_.partitionable_devices) return;
    for (const auto& [pool_name, pool] : pools_) {
      std::map<std::string, Quantity> used;
      for (const auto& [device, dev] : pool.devices) {
        auto key = std::make_tuple(pool_name, device);
        bool held = exclusive_[key] > 0 || shares_[key] > 0;
        if (!held) continue;
        for (const auto& [name, q] : dev.counters) used[name] = used[name].Add(q);
      }
      for (const auto& [name, q] : used) {
        if (q.Compare(pool.counters.at(name)) > 0) {
          Violation("counter " + name + " of " + pool_name + " oversold: " + q.ToString());
        }
      }
    }
  }

  FuzzedDataProvider& in_;
  alloc::Snapshot snapshot_;
  alloc::AllocatedState state_;
  alloc::Features features_;
  std::vector<draplane::api::corev1::Node> nodes_;
  std::map<std::string, PoolModel> pools_;
  std::vector<rv1::AllocationResult> held_;
  std::map<std::tuple<std::string, std::string>, int> exclusive_;
  std::map<std::tuple<std::string, std::string>, int> shares_;
  std::map<std::tuple<std::string, std::string>, std::map<std::string, Quantity>> consumed_;
  int next_claim_ = 0;
  int64_t steps_left_ = kStepBudget;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Replay replay(in);
  replay.Run();
  return 0;
}
