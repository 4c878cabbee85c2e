#include "sim/internal/collector.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "controllers/resourceclaim/controller.h"

namespace draplane::sim::internal {
namespace {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

constexpr int64_t kUnit = 1'000'000;  // micro-units per device unit
constexpr size_t kMaxViolations = 20;

int64_t Millis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The fraction `used / total` in micro-units (rounded down; 0 for an empty total).
int64_t Fraction(const api::Quantity& used, const api::Quantity& total) {
  double t = total.AsApproximateDouble();
  if (!(t > 0)) return 0;
  double f = used.AsApproximateDouble() / t;
  return static_cast<int64_t>(std::min(f, 1e6) * static_cast<double>(kUnit));
}

// What an allocation consuming `used` of `capacity` (a counter set's counters, a shared device's
// capacities) weighs, in micro-units: the mean over every capacity of the fraction consumed.
// Additive, so the allocations of one set or device never weigh more than one unit together; the
// largest fraction, used before, weighed a 3g.20gb partition of an A100 whose memory slices are
// counters of one each as a whole GPU, and two of them as two.
template <typename Used>
int64_t MeanFraction(const Used& used, const std::map<std::string, api::Quantity>& capacity) {
  if (capacity.empty()) return 0;
  int64_t sum = 0;
  for (const auto& [name, value] : used) {
    auto cap = capacity.find(name);
    if (cap != capacity.end()) sum += Fraction(value, cap->second);
  }
  return sum / static_cast<int64_t>(capacity.size());
}

bool Terminal(const Pod& pod) {
  return pod.status.phase == api::corev1::kPodPhaseSucceeded ||
         pod.status.phase == api::corev1::kPodPhaseFailed;
}

bool Intersects(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if ((a[i] & b[i]) != 0) return true;
  }
  return false;
}

void SetBit(std::vector<uint64_t>& mask, int bit) {
  size_t word = static_cast<size_t>(bit) / 64;
  if (mask.size() <= word) mask.resize(word + 1, 0);
  mask[word] |= uint64_t{1} << (bit % 64);
}

bool HasBit(const std::vector<uint64_t>& mask, int bit) {
  size_t word = static_cast<size_t>(bit) / 64;
  return word < mask.size() && (mask[word] & (uint64_t{1} << (bit % 64))) != 0;
}

void OrInto(std::vector<uint64_t>& into, const std::vector<uint64_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] |= from[i];
}

double Seconds(api::Int128 micro_unit_ms) {
  return static_cast<double>(micro_unit_ms) / static_cast<double>(kUnit) / 1000.0;
}

}  // namespace

struct Collector::Device {
  std::string key;  // driver/pool/device
  std::string slice;
  bool removed = false;
  bool multi = false;
  int unit = -1;  // the physical unit: its own, or its first counter set's
  std::vector<std::pair<std::string, std::map<std::string, api::Quantity>>> consumes;
  std::map<std::string, api::Quantity> capacity;
  std::map<std::string, api::Quantity> consumed;  // multi-allocatable: in use now
  std::shared_ptr<const cel::DeviceInput> input;
  std::vector<uint64_t> mask;
};

struct Collector::Unit {
  std::string key;
  bool counter_set = false;
  bool removed = false;
  std::map<std::string, api::Quantity> counters;  // counter set capacity
  std::map<std::string, api::Quantity> consumed;
  int64_t allocated = 0;
  std::vector<uint64_t> mask;
};

struct Collector::PodState {
  std::string uid;
  std::string ns;
  std::string name;
  std::string scheduler_name;
  int tenant = -1;
  bool seen = false;
  bool submitted = false;
  Duration arrived{0};
  Duration duration{0};
  std::optional<Duration> bound;
  std::string node;
  bool pending = false;
  bool gone = false;
  std::optional<Duration> deleted_running;  // deleted while bound and not completed: when
  bool completed = false;
  bool gave_up = false;
  std::string reason;
  std::string message;
  std::string claim_failure;  // ClaimNotCreated
  int64_t units = 0;
  int64_t estimate = 0;  // first-tier size of its claims while it waits, micro-units
  std::vector<std::string> claim_names;
  std::vector<std::string> devices;
  std::vector<std::string> tiers;
};

struct Collector::ClaimState {
  struct Held {
    int device = -1;
    int cls = -1;
    int64_t units = 0;
    std::vector<std::pair<int, std::map<std::string, api::Quantity>>> counters;  // unit, used
    std::map<std::string, api::Quantity, std::less<>> capacity;
    bool exclusive = false;
  };
  std::string uid;
  std::string key;  // ns/name
  int tenant = -1;
  bool open = false;
  Duration since{0};
  std::vector<Held> held;
  int64_t units = 0;
  std::vector<std::string> devices;
  std::vector<std::string> tiers;
  std::vector<uint64_t> request_mask;  // classes its requests name (every subrequest)
  int64_t estimate = 0;                // first-tier size in micro-units (demand of a waiting Pod)
  // An allocation naming devices no slice has shown yet (the informers list the claims first):
  // opened once the slices are known.
  std::shared_ptr<const rv1::ResourceClaim> unresolved;
};

Collector::Collector(const Clock& clock, CollectorOptions options)
    : clock_(clock),
      options_(std::move(options)),
      cel_env_(cel::Environment::NewDra()),
      cel_cache_(std::make_unique<cel::CompileCache>(cel_env_, 256)) {
  series_.step = std::chrono::duration<double>(options_.sample_step).count();
}

Collector::~Collector() = default;

Duration Collector::Now() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.MonotonicNow());
}

void Collector::Violation(int64_t* counter, std::string what) {
  if (counter != nullptr) ++*counter;
  log::Warning("sim: conservation: {}", what);
  if (conservation_.violations.size() < kMaxViolations) {
    conservation_.violations.push_back(std::move(what));
  }
}

int Collector::TenantIndex(const std::string& ns) {
  auto [it, inserted] = tenant_ids_.emplace(ns, static_cast<int>(tenant_names_.size()));
  if (inserted) {
    tenant_names_.push_back(ns);
    allocated_by_tenant_.push_back(0);
    tenant_closed_.push_back(0);
  }
  return it->second;
}

int Collector::ClassIndex(const std::string& name) {
  auto [it, inserted] = class_ids_.emplace(name, static_cast<int>(class_names_.size()));
  if (inserted) {
    class_names_.push_back(name);
    allocated_by_class_.push_back(0);
    integral_by_class_.push_back(0);
  }
  return it->second;
}

void Collector::Attach(client::SharedInformers& informers) {
  informers.Get<rv1::ResourceSlice>().AddHandlers(
      {.on_add = [this](const auto& s) { OnSlice(*s); },
       .on_update = [this](const auto&, const auto& s) { OnSlice(*s); },
       .on_delete =
           [this](const auto& s) {
             for (Device& d : devices_) {
               if (d.slice == s->metadata.name) d.removed = true;
             }
             masks_stale_ = true;
           }});
  informers.Get<rv1::DeviceClass>().AddHandlers(
      {.on_add = [this](const auto& c) { OnClass(*c); },
       .on_update = [this](const auto&, const auto& c) { OnClass(*c); },
       .on_delete =
           [this](const auto& c) {
             classes_.erase(c->metadata.name);
             masks_stale_ = true;
           }});
  informers.Get<Pod>().AddHandlers(
      {.on_add = [this](const auto& p) { OnPod(nullptr, *p); },
       .on_update = [this](const auto& o, const auto& p) { OnPod(o.get(), *p); },
       .on_delete = [this](const auto& p) { OnPodDelete(*p); }});
  informers.Get<rv1::ResourceClaim>().AddHandlers(
      {.on_add = [this](const auto& c) { OnClaim(nullptr, *c); },
       .on_update = [this](const auto& o, const auto& c) { OnClaim(o.get(), *c); },
       .on_delete = [this](const auto& c) { OnClaimDelete(*c); }});
}

void Collector::OnClass(const rv1::DeviceClass& device_class) {
  classes_[device_class.metadata.name] = std::make_shared<const rv1::DeviceClass>(device_class);
  ClassIndex(device_class.metadata.name);
  masks_stale_ = true;
}

void Collector::OnSlice(const rv1::ResourceSlice& slice) {
  const std::string prefix = slice.spec.driver + "/" + slice.spec.pool.name + "/";
  for (const rv1::CounterSet& set : slice.spec.shared_counters) {
    std::string key = prefix + set.name;
    auto [it, inserted] = unit_index_.emplace(key, static_cast<int>(units_.size()));
    if (inserted) units_.emplace_back();
    Unit& unit = units_[static_cast<size_t>(it->second)];
    unit.key = key;
    unit.counter_set = true;
    unit.removed = false;
    unit.counters.clear();
    for (const auto& [name, counter] : set.counters) unit.counters[name] = counter.value;
  }
  for (const rv1::Device& device : slice.spec.devices) {
    std::string key = prefix + device.name;
    auto [it, inserted] = device_index_.emplace(key, static_cast<int>(devices_.size()));
    if (inserted) devices_.emplace_back();
    Device& d = devices_[static_cast<size_t>(it->second)];
    d.key = key;
    d.slice = slice.metadata.name;
    d.removed = false;
    d.multi = device.allow_multiple_allocations.value_or(false);
    d.consumes.clear();
    for (const rv1::DeviceCounterConsumption& c : device.consumes_counters) {
      std::map<std::string, api::Quantity> counters;
      for (const auto& [name, counter] : c.counters) counters[name] = counter.value;
      d.consumes.emplace_back(prefix + c.counter_set, std::move(counters));
    }
    d.capacity.clear();
    for (const auto& [name, capacity] : device.capacity) d.capacity[name] = capacity.value;
    d.input = cel::DeviceInputFromApi(device, slice.spec.driver);
    d.unit = -1;
    if (d.consumes.empty()) {
      // A device of its own: its unit shares its key.
      auto [u, added] = unit_index_.emplace(key, static_cast<int>(units_.size()));
      if (added) units_.emplace_back();
      Unit& unit = units_[static_cast<size_t>(u->second)];
      unit.key = key;
      unit.removed = false;
      d.unit = u->second;
    }
  }
  masks_stale_ = true;
  ResolvePending();
}

void Collector::EnsureClassMasks() {
  if (!masks_stale_) return;
  masks_stale_ = false;
  for (Unit& unit : units_) unit.mask.clear();
  std::vector<std::pair<int, std::vector<std::shared_ptr<const cel::Program>>>> programs;
  for (const auto& [name, device_class] : classes_) {
    std::vector<std::shared_ptr<const cel::Program>> selectors;
    bool valid = true;
    for (const rv1::DeviceSelector& s : device_class->spec.selectors) {
      if (!s.cel) continue;
      StatusOr<std::shared_ptr<const cel::Program>> p = cel_cache_->GetOrCompile(s.cel->expression);
      if (!p.ok()) {
        valid = false;  // the allocator finds no device in a class that does not compile
        break;
      }
      selectors.push_back(*p);
    }
    if (valid) programs.emplace_back(ClassIndex(name), std::move(selectors));
  }
  for (Device& d : devices_) {
    d.mask.clear();
    if (d.unit < 0 && !d.consumes.empty()) {
      auto it = unit_index_.find(d.consumes.front().first);
      if (it != unit_index_.end()) d.unit = it->second;
    }
    if (d.removed) continue;
    for (const auto& [cls, selectors] : programs) {
      bool match = true;
      for (const auto& program : selectors) {
        cel::SelectorResult r = program->Match(*d.input);
        if (r.is_error() || !r.matches()) {
          match = false;
          break;
        }
      }
      if (match) SetBit(d.mask, cls);
    }
    if (d.unit >= 0) OrInto(units_[static_cast<size_t>(d.unit)].mask, d.mask);
  }
  for (Unit& unit : units_) {
    if (!unit.counter_set) {
      auto it = device_index_.find(unit.key);
      unit.removed = it == device_index_.end() || devices_[static_cast<size_t>(it->second)].removed;
    }
  }
}

void Collector::SetPending(PodState& pod, bool pending) {
  if (pod.pending == pending) return;
  pod.pending = pending;
  pending_ += pending ? 1 : -1;
}

void Collector::Submitted(const std::string& uid, Duration at, Duration duration) {
  auto [it, inserted] = pods_.emplace(uid, nullptr);
  if (inserted) {
    it->second = std::make_unique<PodState>();
    it->second->uid = uid;
  }
  PodState& pod = *it->second;
  pod.submitted = true;
  pod.arrived = at;
  pod.duration = duration;
  pod_order_.push_back(&pod);
  if (!pod.bound && !pod.gone && !pod.completed) SetPending(pod, true);
}

void Collector::Rejected(const std::string& pod, Duration at, const std::string& message) {
  auto state = std::make_unique<PodState>();
  state->uid = "rejected:" + pod + ":" + std::to_string(pod_order_.size());
  size_t slash = pod.find('/');
  state->ns = pod.substr(0, slash);
  state->name = slash == std::string::npos ? "" : pod.substr(slash + 1);
  state->tenant = TenantIndex(state->ns);
  state->seen = true;
  state->submitted = true;
  state->arrived = at;
  state->reason = "RejectedByApi";
  state->message = message;
  pod_order_.push_back(state.get());
  pods_.emplace(state->uid, std::move(state));
}

void Collector::ClaimNotCreated(const std::string& uid, std::string message) {
  auto it = pods_.find(uid);
  if (it != pods_.end()) it->second->claim_failure = std::move(message);
}

void Collector::GaveUp(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it != pods_.end() && !it->second->bound) it->second->gave_up = true;
}

void Collector::OnPod(const Pod*, const Pod& pod) {
  auto [it, inserted] = pods_.emplace(pod.metadata.uid, nullptr);
  if (inserted) {
    it->second = std::make_unique<PodState>();
    it->second->uid = pod.metadata.uid;
  }
  PodState& state = *it->second;
  if (!state.seen) {
    state.seen = true;
    state.ns = pod.metadata.namespace_;
    state.name = pod.metadata.name;
    state.scheduler_name = pod.spec.scheduler_name;
    state.tenant = TenantIndex(state.ns);
  }
  for (const api::corev1::PodCondition& c : pod.status.conditions) {
    if (c.type == api::corev1::kPodConditionTypePodScheduled && c.status == "False") {
      state.reason = c.reason;
      state.message = c.message;
    }
  }
  if (!state.bound && state.estimate == 0) {
    for (const std::string& name : controllers::PodClaimNames(pod)) {
      auto uid = claim_uid_by_key_.find(pod.metadata.namespace_ + "/" + name);
      if (uid == claim_uid_by_key_.end()) continue;
      auto c = claims_.find(uid->second);
      if (c != claims_.end()) state.estimate += c->second->estimate;
    }
  }
  if (!state.bound && !pod.spec.node_name.empty()) {
    state.bound = Now();
    state.node = pod.spec.node_name;
    SetPending(state, false);
    // Its devices: every claim must be allocated and reserved for it by now.
    for (const std::string& name : controllers::PodClaimNames(pod)) {
      state.claim_names.push_back(name);
      auto uid = claim_uid_by_key_.find(pod.metadata.namespace_ + "/" + name);
      const ClaimState* claim = nullptr;
      if (uid != claim_uid_by_key_.end()) {
        auto c = claims_.find(uid->second);
        if (c != claims_.end()) claim = c->second.get();
      }
      if (claim == nullptr || !claim->open) {
        if (state.submitted) {
          Violation(&conservation_.pods_without_outcome,
                    "pod " + state.ns + "/" + state.name + " bound to " + state.node +
                        " while its claim " + name + " is not allocated");
        }
        continue;
      }
      state.units += claim->units;
      if (options_.placements) {
        state.devices.insert(state.devices.end(), claim->devices.begin(), claim->devices.end());
        state.tiers.insert(state.tiers.end(), claim->tiers.begin(), claim->tiers.end());
      }
    }
  }
  if (Terminal(pod)) {
    state.completed = true;
    SetPending(state, false);
  }
}

void Collector::OnPodDelete(const Pod& pod) {
  auto it = pods_.find(pod.metadata.uid);
  if (it == pods_.end()) return;
  it->second->gone = true;
  if (it->second->bound && !it->second->completed) it->second->deleted_running = Now();
  SetPending(*it->second, false);
}

void Collector::OnClaim(const rv1::ResourceClaim* old_claim, const rv1::ResourceClaim& claim) {
  auto [it, inserted] = claims_.emplace(claim.metadata.uid, nullptr);
  if (inserted) {
    it->second = std::make_unique<ClaimState>();
    ClaimState& state = *it->second;
    state.uid = claim.metadata.uid;
    state.key = claim.metadata.namespace_ + "/" + claim.metadata.name;
    state.tenant = TenantIndex(claim.metadata.namespace_);
    claim_uid_by_key_[state.key] = state.uid;
    for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
      if (r.exactly) {
        SetBit(state.request_mask, ClassIndex(r.exactly->device_class_name));
        state.estimate += r.exactly->allocation_mode == "All"
                              ? kUnit
                              : std::max<int64_t>(1, r.exactly->count) * kUnit;
      }
      for (size_t i = 0; i < r.first_available.size(); ++i) {
        SetBit(state.request_mask, ClassIndex(r.first_available[i].device_class_name));
        if (i == 0) {
          state.estimate += r.first_available[i].allocation_mode == "All"
                                ? kUnit
                                : std::max<int64_t>(1, r.first_available[i].count) * kUnit;
        }
      }
    }
  }
  ClaimState& state = *it->second;
  const bool was = old_claim != nullptr && old_claim->status.allocation.has_value();
  const bool is = claim.status.allocation.has_value();
  if (was && is && old_claim->status.allocation == claim.status.allocation) return;
  if (state.open) Close(state);
  state.unresolved = nullptr;
  if (is) Open(state, claim);
}

void Collector::OnClaimDelete(const rv1::ResourceClaim& claim) {
  auto it = claims_.find(claim.metadata.uid);
  if (it == claims_.end()) return;
  if (it->second->open) Close(*it->second);
  auto key = claim_uid_by_key_.find(it->second->key);
  if (key != claim_uid_by_key_.end() && key->second == claim.metadata.uid) {
    claim_uid_by_key_.erase(key);
  }
  claims_.erase(it);
}

bool Collector::Resolvable(const rv1::ResourceClaim& claim) const {
  for (const rv1::DeviceRequestAllocationResult& r : claim.status.allocation->devices.results) {
    auto found = device_index_.find(r.driver + "/" + r.pool + "/" + r.device);
    if (found == device_index_.end() || devices_[static_cast<size_t>(found->second)].removed) {
      return false;
    }
    for (const auto& [set_key, counters] : devices_[static_cast<size_t>(found->second)].consumes) {
      if (!unit_index_.contains(set_key)) return false;
    }
  }
  return true;
}

void Collector::ResolvePending() {
  if (unresolved_.empty()) return;
  std::vector<std::string> still;
  for (const std::string& uid : unresolved_) {
    auto it = claims_.find(uid);
    if (it == claims_.end() || it->second->unresolved == nullptr) continue;
    if (!Resolvable(*it->second->unresolved)) {
      still.push_back(uid);
      continue;
    }
    std::shared_ptr<const rv1::ResourceClaim> claim = std::move(it->second->unresolved);
    Open(*it->second, *claim);
  }
  unresolved_ = std::move(still);
}

void Collector::Open(ClaimState& state, const rv1::ResourceClaim& claim) {
  if (!Resolvable(claim)) {
    if (state.unresolved == nullptr) unresolved_.push_back(state.uid);
    state.unresolved = std::make_shared<const rv1::ResourceClaim>(claim);
    return;
  }
  EnsureClassMasks();
  state.open = true;
  state.since = Now();
  state.held.clear();
  state.units = 0;
  state.devices.clear();
  state.tiers.clear();
  const auto& requests = claim.spec.devices.requests;
  std::set<std::string> tiered;  // requests whose tier was counted
  for (const rv1::DeviceRequestAllocationResult& r : claim.status.allocation->devices.results) {
    std::string key = r.driver + "/" + r.pool + "/" + r.device;
    auto found = device_index_.find(key);  // Resolvable checked that it exists
    Device& device = devices_[static_cast<size_t>(found->second)];
    // The request's class and, for a firstAvailable request, the tier taken.
    std::string request = r.request.substr(0, r.request.find('/'));
    std::string sub =
        r.request.find('/') == std::string::npos ? "" : r.request.substr(r.request.find('/') + 1);
    std::string class_name;
    for (const rv1::DeviceRequest& spec : requests) {
      if (spec.name != request) continue;
      if (spec.exactly) class_name = spec.exactly->device_class_name;
      for (size_t i = 0; i < spec.first_available.size(); ++i) {
        if (spec.first_available[i].name != sub) continue;
        class_name = spec.first_available[i].device_class_name;
        if (tiered.insert(request).second) {
          ++tiers_[static_cast<int64_t>(i)];
          state.tiers.push_back(request + " -> " + sub);
        }
      }
    }
    ClaimState::Held held;
    held.device = found->second;
    held.cls = ClassIndex(class_name.empty() ? std::string("(unknown)") : class_name);
    if (r.admin_access.value_or(false)) {
      held.units = 0;  // admin access observes a device without using it
    } else if (!device.consumes.empty()) {
      for (const auto& [set_key, counters] : device.consumes) {
        auto u = unit_index_.find(set_key);  // Resolvable checked that it exists
        Unit& unit = units_[static_cast<size_t>(u->second)];
        for (const auto& [name, value] : counters) {
          api::Quantity& used = unit.consumed[name];
          used = used.Add(value);
          auto cap = unit.counters.find(name);
          if (cap == unit.counters.end() || used.Compare(cap->second) > 0) {
            Violation(&conservation_.counter_overcommits,
                      "counter " + set_key + "/" + name + " overcommitted by claim " + state.key);
          }
        }
        const int64_t weight = MeanFraction(counters, unit.counters);
        unit.allocated += weight;
        held.units += weight;
        held.counters.emplace_back(u->second, counters);
      }
    } else if (device.multi) {
      for (const auto& [name, value] : r.consumed_capacity) {
        api::Quantity& used = device.consumed[name];
        used = used.Add(value);
        auto cap = device.capacity.find(name);
        if (cap == device.capacity.end() || used.Compare(cap->second) > 0) {
          Violation(&conservation_.counter_overcommits,
                    "capacity " + key + "/" + name + " overcommitted by claim " + state.key);
        }
      }
      const int64_t weight = MeanFraction(r.consumed_capacity, device.capacity);
      held.capacity = r.consumed_capacity;
      held.units = weight;
      if (device.unit >= 0) units_[static_cast<size_t>(device.unit)].allocated += weight;
    } else {
      auto [holder, fresh] = exclusive_holder_.emplace(key, state.uid);
      if (!fresh && holder->second != state.uid) {
        Violation(&conservation_.double_allocations, "device " + key + " allocated to claim " +
                                                         state.key + " while claim uid " +
                                                         holder->second + " holds it");
      }
      held.exclusive = fresh;
      held.units = kUnit;
      if (device.unit >= 0) units_[static_cast<size_t>(device.unit)].allocated += kUnit;
    }
    allocated_ += held.units;
    allocated_by_class_[static_cast<size_t>(held.cls)] += held.units;
    allocated_by_tenant_[static_cast<size_t>(state.tenant)] += held.units;
    state.units += held.units;
    if (options_.placements) state.devices.push_back(key);
    state.held.push_back(std::move(held));
  }
}

void Collector::Close(ClaimState& state) {
  for (const ClaimState::Held& held : state.held) {
    Device& device = devices_[static_cast<size_t>(held.device)];
    for (const auto& [unit_index, counters] : held.counters) {
      Unit& unit = units_[static_cast<size_t>(unit_index)];
      for (const auto& [name, value] : counters)
        unit.consumed[name] = unit.consumed[name].Sub(value);
    }
    for (const auto& [name, value] : held.capacity) {
      device.consumed[name] = device.consumed[name].Sub(value);
    }
    if (held.exclusive) exclusive_holder_.erase(device.key);
    if (held.counters.empty() && device.unit >= 0) {
      units_[static_cast<size_t>(device.unit)].allocated -= held.units;
    } else {
      // Counter-consuming devices charged each of their sets with that set's own fraction.
      for (const auto& [unit_index, counters] : held.counters) {
        Unit& unit = units_[static_cast<size_t>(unit_index)];
        unit.allocated -= MeanFraction(counters, unit.counters);
      }
    }
    allocated_ -= held.units;
    allocated_by_class_[static_cast<size_t>(held.cls)] -= held.units;
    allocated_by_tenant_[static_cast<size_t>(state.tenant)] -= held.units;
  }
  int64_t window = Millis(options_.window);
  int64_t from = std::min(Millis(state.since), window);
  int64_t to = std::min(Millis(Now()), window);
  if (to > from) {
    tenant_closed_[static_cast<size_t>(state.tenant)] +=
        static_cast<api::Int128>(state.units) * (to - from);
    for (const ClaimState::Held& held : state.held) {
      tenant_class_closed_[{state.tenant, held.cls}] +=
          static_cast<api::Int128>(held.units) * (to - from);
    }
  }
  state.open = false;
  state.held.clear();
}

void Collector::Advance(Duration from, Duration to) {
  int64_t window = Millis(options_.window);
  int64_t a = std::min(Millis(from), window);
  int64_t b = std::min(Millis(to), window);
  if (b > a) {
    integral_ += static_cast<api::Int128>(allocated_) * (b - a);
    for (size_t c = 0; c < allocated_by_class_.size(); ++c) {
      integral_by_class_[c] += static_cast<api::Int128>(allocated_by_class_[c]) * (b - a);
    }
  }
  while (next_sample_ < to && next_sample_ < options_.window) {
    if (next_sample_ >= from) Sample(next_sample_);
    next_sample_ += options_.sample_step;
  }
}

void Collector::Sample(Duration at) {
  EnsureClassMasks();
  int64_t offered = 0;
  int64_t stranded_devices = 0;
  int64_t stranded_counters = 0;
  // What pending Pods ask for: the classes named by claims that are not allocated (generated
  // claims live only as long as their Pod, so these are the waiting Pods' requests, plus shared
  // claims nobody got yet).
  std::vector<uint64_t> pending_mask;
  if (pending_ > 0) {
    for (const auto& [uid, claim] : claims_) {
      if (!claim->open) OrInto(pending_mask, claim->request_mask);
    }
  }
  for (const Unit& unit : units_) {
    if (unit.removed) continue;
    offered += kUnit;
    int64_t free = std::max<int64_t>(0, kUnit - unit.allocated);
    if (pending_ > 0 && free > 0 && Intersects(unit.mask, pending_mask)) stranded_devices += free;
    if (unit.counter_set && unit.allocated > 0 && free > 0) stranded_counters += free;
  }
  ++samples_;
  if (offered > 0) {
    fragmentation_devices_sum_ +=
        static_cast<double>(stranded_devices) / static_cast<double>(offered);
    fragmentation_counters_sum_ +=
        static_cast<double>(stranded_counters) / static_cast<double>(offered);
  }
  series_.time.push_back(std::chrono::duration<double>(at).count());
  series_.queue_length.push_back(static_cast<double>(pending_));
  series_.utilization.push_back(
      offered > 0 ? static_cast<double>(allocated_) / static_cast<double>(offered) : 0);
  for (size_t t = 0; t < tenant_names_.size(); ++t) {
    std::vector<double>& line = series_.tenant_share[tenant_names_[t]];
    line.resize(series_.time.size() - 1, 0);
    line.push_back(offered > 0
                       ? static_cast<double>(allocated_by_tenant_[t]) / static_cast<double>(offered)
                       : 0);
  }
}

void Collector::Finish(Duration end, Report* report) {
  EnsureClassMasks();
  ResolvePending();
  for (const std::string& uid : unresolved_) {
    auto it = claims_.find(uid);
    if (it == claims_.end() || it->second->unresolved == nullptr) continue;
    Violation(nullptr, "claim " + it->second->key + " is allocated devices no slice offers");
  }
  // Allocations still held at the end count up to the end of the window.
  for (const auto& [uid, claim] : claims_) {
    (void)uid;
    if (!claim->open) continue;
    int64_t window = Millis(options_.window);
    int64_t from = std::min(Millis(claim->since), window);
    int64_t to = std::min(Millis(end), window);
    if (to > from) {
      tenant_closed_[static_cast<size_t>(claim->tenant)] +=
          static_cast<api::Int128>(claim->units) * (to - from);
      for (const ClaimState::Held& held : claim->held) {
        tenant_class_closed_[{claim->tenant, held.cls}] +=
            static_cast<api::Int128>(held.units) * (to - from);
      }
    }
  }
  const double window_ms = static_cast<double>(Millis(options_.window));
  int64_t offered = 0;
  std::vector<int64_t> offered_by_class(class_names_.size(), 0);
  for (const Unit& unit : units_) {
    if (unit.removed) continue;
    offered += kUnit;
    for (size_t c = 0; c < class_names_.size(); ++c) {
      if (HasBit(unit.mask, static_cast<int>(c))) offered_by_class[c] += kUnit;
    }
  }
  report->offered_units = static_cast<double>(offered) / kUnit;
  report->utilization =
      offered > 0 && window_ms > 0
          ? static_cast<double>(integral_) / (static_cast<double>(offered) * window_ms)
          : 0;
  api::Int128 by_class_total = 0;
  for (size_t c = 0; c < class_names_.size(); ++c) {
    by_class_total += integral_by_class_[c];
    if (offered_by_class[c] == 0 && integral_by_class_[c] == 0) continue;
    report->utilization_by_class[class_names_[c]] =
        offered_by_class[c] > 0 && window_ms > 0
            ? static_cast<double>(integral_by_class_[c]) /
                  (static_cast<double>(offered_by_class[c]) * window_ms)
            : 0;
  }
  api::Int128 tenant_total = 0;
  for (api::Int128 t : tenant_closed_) tenant_total += t;
  if (tenant_total != integral_ || by_class_total != integral_) {
    conservation_.device_seconds_balanced = false;
    Violation(nullptr, "device-seconds do not add up: tenants " +
                           std::to_string(Seconds(tenant_total)) + ", classes " +
                           std::to_string(Seconds(by_class_total)) + ", time integral " +
                           std::to_string(Seconds(integral_)));
  }
  if (samples_ > 0) {
    report->fragmentation_devices = fragmentation_devices_sum_ / static_cast<double>(samples_);
    report->fragmentation_counters = fragmentation_counters_sum_ / static_cast<double>(samples_);
  }

  // Pods.
  std::vector<double> waits;
  std::map<int, std::vector<double>> tenant_waits;
  std::map<int, api::Int128> demand;
  std::map<std::pair<std::string, std::string>, size_t> reason_index;
  for (PodState* pod : pod_order_) {
    ++report->submitted;
    if (!pod->seen) {
      Violation(&conservation_.pods_without_outcome,
                "submitted pod uid " + pod->uid + " never reached the API's watch");
      continue;
    }
    TenantReport& tenant = report->tenants[pod->ns];
    ++tenant.submitted;
    int64_t window = Millis(options_.window);
    int64_t span =
        std::max<int64_t>(0, std::min(Millis(pod->duration), window - Millis(pod->arrived)));
    Placement placement;
    placement.pod = pod->ns + "/" + pod->name;
    placement.arrived = std::chrono::duration<double>(pod->arrived).count();
    if (pod->bound) {
      ++report->scheduled;
      ++tenant.scheduled;
      double wait = std::chrono::duration<double>(*pod->bound - pod->arrived).count();
      waits.push_back(wait);
      tenant_waits[pod->tenant].push_back(wait);
      if (pod->completed) ++report->completed;
      if (!pod->completed && !pod->gone) ++report->running_at_end;
      if (pod->deleted_running) {
        ++report->deleted_while_running;
        placement.deleted = std::chrono::duration<double>(*pod->deleted_running).count();
      }
      demand[pod->tenant] += static_cast<api::Int128>(pod->units) * span;
      placement.node = pod->node;
      placement.bound = std::chrono::duration<double>(*pod->bound).count();
      placement.devices = pod->devices;
      placement.tiers = pod->tiers;
    } else {
      ++report->unscheduled;
      ++tenant.unscheduled;
      std::string reason = pod->reason;
      std::string message = pod->message;
      if (pod->gave_up) {
        reason = "DeletedWhilePending";
      } else if (reason.empty() && !pod->claim_failure.empty()) {
        reason = "ClaimNotCreated";
        message = pod->claim_failure;
      } else if (reason.empty()) {
        bool ours = pod->scheduler_name.empty() || pod->scheduler_name == "default-scheduler" ||
                    pod->scheduler_name == "draplane";
        reason = ours ? "NeverAttempted" : "OtherScheduler";
        message = ours ? "the scheduler never attempted it: its claims were never all created "
                         "(a claim or template is missing)"
                       : "schedulerName " + pod->scheduler_name + " is not simulated";
      }
      auto [slot, added] = reason_index.emplace(std::make_pair(reason, message.substr(0, 80)),
                                                report->unscheduled_reasons.size());
      if (added) report->unscheduled_reasons.push_back({reason, message, 0});
      ++report->unscheduled_reasons[slot->second].count;
      ++tenant.unscheduled_by_reason[reason];
      placement.reason = reason + ": " + message;
      // A waiting Pod's demand: its claims' first-tier sizes.
      demand[pod->tenant] += static_cast<api::Int128>(pod->estimate) * span;
    }
    if (options_.placements) report->placements.push_back(std::move(placement));
  }
  std::sort(report->unscheduled_reasons.begin(), report->unscheduled_reasons.end(),
            [](const UnscheduledReason& a, const UnscheduledReason& b) {
              return a.count != b.count ? a.count > b.count : a.reason < b.reason;
            });
  report->wait = ComputePercentiles(waits);

  // Tenants: device-seconds, share, fair share (weighted max-min over demand), Jain's index.
  double total = Seconds(tenant_total);
  std::vector<std::pair<int, double>> active;  // tenant, demand
  for (size_t t = 0; t < tenant_names_.size(); ++t) {
    double seconds = Seconds(tenant_closed_[t]);
    if (seconds == 0 && !report->tenants.contains(tenant_names_[t])) continue;
    TenantReport& tenant = report->tenants[tenant_names_[t]];
    tenant.device_seconds = seconds;
    for (auto it = tenant_class_closed_.lower_bound({static_cast<int>(t), -1});
         it != tenant_class_closed_.end() && it->first.first == static_cast<int>(t); ++it) {
      if (it->first.second >= 0 && it->second > 0) {
        tenant.device_seconds_by_class[class_names_[static_cast<size_t>(it->first.second)]] =
            Seconds(it->second);
      }
    }
    tenant.share = total > 0 ? seconds / total : 0;
    auto w = options_.tenant_weights.find(tenant_names_[t]);
    tenant.weight = w != options_.tenant_weights.end() ? w->second : 1.0;
    std::vector<double>& tw = tenant_waits[static_cast<int>(t)];
    tenant.wait = ComputePercentiles(tw);
    double d = std::max(Seconds(demand[static_cast<int>(t)]), seconds);
    if (d > 0) active.emplace_back(static_cast<int>(t), d);
  }
  // Water-filling: raise a common level; a tenant's fair share is min(demand, level * weight).
  double to_share = total;
  std::sort(active.begin(), active.end(), [&](const auto& a, const auto& b) {
    double wa = report->tenants[tenant_names_[static_cast<size_t>(a.first)]].weight;
    double wb = report->tenants[tenant_names_[static_cast<size_t>(b.first)]].weight;
    return a.second / wa < b.second / wb;
  });
  double weight_left = 0;
  for (const auto& [t, d] : active) {
    weight_left += report->tenants[tenant_names_[static_cast<size_t>(t)]].weight;
  }
  double sum_x = 0;
  double sum_x2 = 0;
  int n = 0;
  for (const auto& [t, d] : active) {
    TenantReport& tenant = report->tenants[tenant_names_[static_cast<size_t>(t)]];
    double level = weight_left > 0 ? to_share / weight_left : 0;
    double fair = std::min(d, level * tenant.weight);
    to_share -= fair;
    weight_left -= tenant.weight;
    tenant.fair_share = total > 0 ? fair / total : 0;
    if (fair > 0) {
      double x = tenant.device_seconds / fair;
      sum_x += x;
      sum_x2 += x * x;
      ++n;
    }
  }
  report->jain_index = n > 0 && sum_x2 > 0 ? sum_x * sum_x / (n * sum_x2) : 1.0;

  int64_t tiered = 0;
  int64_t fell_back = 0;
  for (const auto& [tier, count] : tiers_) {
    tiered += count;
    if (tier > 0) fell_back += count;
  }
  report->fallback_by_tier = tiers_;
  report->fallback_requests = tiered;
  report->fallback_rate = tiered > 0 ? static_cast<double>(fell_back) / tiered : 0;
  report->series = std::move(series_);
  for (auto& [tenant, line] : report->series.tenant_share)
    line.resize(report->series.time.size(), 0);
  report->conservation = conservation_;
}

}  // namespace draplane::sim::internal
