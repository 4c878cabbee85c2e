// Allocator replay fuzz target: the input is read as a sequence of operations on a small
// cluster -- add a pool (devices with attributes, counters with compatibility groups, shared
// capacity, taints, on one node or all nodes), allocate the claims of a Pod on a node, deallocate
// an earlier allocation, republish a device with allowMultipleAllocations flipped -- and after
// every allocation the invariants are checked against a model kept here, independent of the
// allocator:
//   1. no device is held by two exclusive (non-admin) allocations, nor exclusively and shared at
//      once (the flip makes that reachable: kubernetes#140797);
//   2. no counter of a pool is oversold by the devices allocated from it;
//   3. no capacity of a multi-allocatable device is oversold by its shares;
//   4. the bounded search (pruning on) returns exactly what upstream's plain walk returns
//      (outcome, results, error text), with the same share-ID seed, whenever the plain walk
//      finishes within the step limit; under the same limit the bounded search never stops
//      where the plain walk finished;
//   5. explanations build and render for every outcome;
//   6. persisting does not change the answer: when the claims [A, B] of a Pod are allocated
//      together, B alone still fits once A's results are recorded as allocated -- recorded the way
//      upstream's scheduler records them, a share by its ID alone when it consumed no capacity.
//      Recorded and in-flight allocations must count the same (kubernetes#140433: a recorded
//      share charged its device's counters again);
//   7. with DRADeviceCompatibilityGroups, the devices held on one counter set are compatible
//      (all without groups, or all with groups whose intersection is not empty); without it, no
//      device declaring groups is allocated.
// The plain walk is exponential on some inputs (a distinctAttribute over few values took 22M
// steps, ~20 s under ASan), so an input's searches share a budget of steps.
// An input whose first byte is 'V' also draws what later versions added (compatibility groups,
// devices shared without capacities, the way allocations are recorded, republishing a device);
// other inputs are read exactly as before, so the regression seeds keep their meaning.
// Selectors use the allocator's testing engine (internal/testing_engine.h) so CEL is not what
// is being fuzzed here (cel_eval_fuzz does that).
#include <fuzzer/FuzzedDataProvider.h>

#include <boost/json/serialize.hpp>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <set>
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
  bool consumes = false;            // has a consumesCounters entry for "mem"
  std::vector<std::string> groups;  // its compatibility groups on "mem"
};

struct PoolModel {
  std::map<std::string, Quantity> counters;  // available per counter
  std::map<std::string, DeviceModel> devices;
  rv1::ResourceSlice device_slice;  // as last published
  alloc::Snapshot::SliceHandle handle = 0;
};

class Replay {
 public:
  Replay(FuzzedDataProvider& in, bool extended)
      : in_(in),
        extended_(extended),
        snapshot_(draplane::allocator::internal::NewTestingSelectorEngine()) {
    features_.admin_access = in_.ConsumeBool();
    features_.prioritized_list = true;
    features_.partitionable_devices = in_.ConsumeBool();
    features_.device_taints = in_.ConsumeBool();
    features_.consumable_capacity = in_.ConsumeBool();
    features_.device_binding_and_status = in_.ConsumeBool();
    features_.list_type_attributes = in_.ConsumeBool();
    if (extended_) {
      features_.device_compatibility_groups = in_.ConsumeBool();
      upstream_recording_ = in_.ConsumeBool();
    }
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
      switch (in_.ConsumeIntegralInRange(0, extended_ ? 6 : 5)) {
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
        case 6:
          FlipMultipleAllocations();
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
        if (extended_) {
          // None, one or both of two group names (KEP-5963).
          int groups = in_.ConsumeIntegralInRange(0, 3);
          if (groups & 1) consumption.compatibility_groups.push_back("x");
          if (groups & 2) consumption.compatibility_groups.push_back("y");
          dm.groups = consumption.compatibility_groups;
        }
        dm.consumes = true;
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
        // A shared device without capacities: its shares carry a share ID and no consumed
        // capacity (kubernetes#140433, #140797).
        if (!extended_ || in_.ConsumeBool()) {
          dev.capacity.emplace("bw", bw);
          dm.capacity["bw"] = bw.value;
        }
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
    model.device_slice = s;
    model.handle = snapshot_.AddSlice(std::move(s));
  }

  // The driver republishes one device with allowMultipleAllocations flipped, shares or
  // exclusive allocations of it being live (ResourceSlice validation allows the change).
  void FlipMultipleAllocations() {
    if (pools_.empty()) return;
    auto it = pools_.begin();
    std::advance(it, in_.ConsumeIntegralInRange<size_t>(0, pools_.size() - 1));
    PoolModel& pool = it->second;
    rv1::ResourceSlice& slice = pool.device_slice;
    rv1::Device& dev =
        slice.spec.devices[in_.ConsumeIntegralInRange<size_t>(0, slice.spec.devices.size() - 1)];
    DeviceModel& dm = pool.devices.at(dev.name);
    dm.multi = !dm.multi;
    dev.allow_multiple_allocations = dm.multi;
    if (!dm.multi) {
      // Request policies are only valid on devices allowing multiple allocations.
      for (auto& [name, capacity] : dev.capacity) capacity.request_policy.reset();
    }
    // The pool's generation stays: bumping it on this slice alone would orphan its counter slice.
    pool.handle = snapshot_.UpdateSlice(pool.handle, slice);
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
      if (pruned->explanation == nullptr) Violation("explain=true without explanation");
      (void)pruned->explanation->ToText();
      (void)pruned->explanation->ToJson();
    }
    if (!pruned.ok() || pruned->kind != alloc::Outcome::Kind::kAllocated) return;
    if (pruned->results->size() != claims.size()) Violation("one result per claim");
    if (claims.size() == 2) CheckPersisted(claims[1], (*pruned->results)[0], node);
    for (const rv1::AllocationResult& result : *pruned->results) {
      Persist(state_, result, +1, upstream_recording_);
      held_.push_back(result);
      Record(result, +1);
    }
    CheckInvariants();
  }

  // Records an allocation in `state`: with AddAllocation, or as upstream's scheduler does
  // (GatherAllocatedState): admin access not at all, a share by its ID plus its consumed
  // capacity only when it has some, anything else as an exclusive device.
  static void Persist(alloc::AllocatedState& state, const rv1::AllocationResult& result, int sign,
                      bool upstream) {
    if (!upstream) {
      if (sign > 0) {
        state.AddAllocation(result);
      } else {
        state.RemoveAllocation(result);
      }
      return;
    }
    for (const rv1::DeviceRequestAllocationResult& r : result.devices.results) {
      if (r.admin_access.value_or(false)) continue;
      if (!r.share_id.has_value()) {
        if (sign > 0) {
          state.AddDevice(r.driver, r.pool, r.device);
        } else {
          state.RemoveDevice(r.driver, r.pool, r.device);
        }
        continue;
      }
      alloc::AllocatedState::Capacity consumed(r.consumed_capacity.begin(),
                                               r.consumed_capacity.end());
      if (sign > 0) {
        state.AddShare(r.driver, r.pool, r.device, *r.share_id);
        if (!consumed.empty()) state.AddConsumedCapacity(r.driver, r.pool, r.device, consumed);
      } else {
        state.RemoveShare(r.driver, r.pool, r.device, *r.share_id);
        if (!consumed.empty()) state.RemoveConsumedCapacity(r.driver, r.pool, r.device, consumed);
      }
    }
  }

  // Invariant 6: B fitted next to A in flight, so it fits next to A recorded.
  void CheckPersisted(const rv1::ResourceClaim& b, const rv1::AllocationResult& a,
                      const draplane::api::corev1::Node& node) {
    alloc::AllocatedState recorded = state_;
    Persist(recorded, a, +1, /*upstream=*/true);
    std::unique_ptr<draplane::Random> random = draplane::NewSeededRandom(9);
    const int64_t limit = steps_left_;
    StatusOr<alloc::Outcome> alone =
        alloc::NewAllocator(snapshot_, {&b}, features_)
            ->Allocate(node, recorded, {.random = random.get(), .max_search_steps = limit});
    Charge(alone, limit);
    if (alloc::IsStepLimitExceeded(alone.status())) return;
    if (!alone.ok() || alone->kind != alloc::Outcome::Kind::kAllocated) {
      Violation("claim " + b.metadata.name + " fitted next to " +
                boost::json::serialize(rv1::Encode(a)) +
                " in flight but not once it was recorded: " + Render(alone));
    }
  }

  // Errors other than the step limit are charged the whole limit: their step count is unknown.
  void Charge(const StatusOr<alloc::Outcome>& o, int64_t limit) {
    steps_left_ -= o.ok() ? o->stats.allocate_one_calls : limit;
  }

  void Deallocate() {
    if (held_.empty()) return;
    size_t i = in_.ConsumeIntegralInRange<size_t>(0, held_.size() - 1);
    Persist(state_, held_[i], -1, upstream_recording_);
    Record(held_[i], -1);
    held_.erase(held_.begin() + static_cast<ptrdiff_t>(i));
  }

  static std::string Render(const StatusOr<alloc::Outcome>& o) {
    if (!o.ok()) return "error: " + std::string(o.status().message());
    std::string out = std::to_string(static_cast<int>(o->kind)) + " " + o->message;
    if (o->results == nullptr) return out;  // not allocated
    for (const rv1::AllocationResult& r : *o->results) {
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
      // Invariant 7 on the pool's counter set "mem".
      bool ungrouped = false;
      bool grouped = false;
      std::set<std::string> common;
      for (const auto& [device, dev] : pool.devices) {
        auto key = std::make_tuple(pool_name, device);
        bool held = exclusive_[key] > 0 || shares_[key] > 0;
        if (!held) continue;
        for (const auto& [name, q] : dev.counters) used[name] = used[name].Add(q);
        if (!dev.consumes) continue;
        if (!features_.device_compatibility_groups) {
          if (!dev.groups.empty()) Violation("device " + device + " with groups allocated");
          continue;
        }
        if (dev.groups.empty()) {
          ungrouped = true;
          continue;
        }
        std::set<std::string> mine(dev.groups.begin(), dev.groups.end());
        if (!grouped) {
          common = mine;
        } else {
          std::set<std::string> both;
          for (const std::string& g : common) {
            if (mine.count(g) != 0) both.insert(g);
          }
          common = both;
        }
        grouped = true;
      }
      if (grouped && (ungrouped || common.empty())) {
        Violation("incompatible devices share counter set mem of " + pool_name);
      }
      for (const auto& [name, q] : used) {
        if (q.Compare(pool.counters.at(name)) > 0) {
          Violation("counter " + name + " of " + pool_name + " oversold: " + q.ToString());
        }
      }
    }
  }

  FuzzedDataProvider& in_;
  const bool extended_;
  bool upstream_recording_ = false;
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
  const bool extended = size > 0 && data[0] == 'V';
  FuzzedDataProvider in(data + (extended ? 1 : 0), size - (extended ? 1 : 0));
  Replay replay(in, extended);
  replay.Run();
  return 0;
}
