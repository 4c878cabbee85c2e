#include "scheduler/fair_share.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "api/field_error.h"
#include "api/meta/duration.h"
#include "api/validation/sharing_policy_validation.h"
#include "common/status_macros.h"

namespace draplane::scheduler {
namespace {

namespace d = api::draplanev1alpha1;

FairShareCost ResourceCost(FairShareCost::Kind kind, const d::SharingResourceCost& cost) {
  return {.kind = kind,
          .name = cost.name,
          .unit = cost.unit.AsApproximateDouble(),
          .weight = cost.weight.AsApproximateDouble()};
}

// A non-per-device cost of a device whose counters or capacities (as the cost's kind asks) are
// `amounts`: 0 when it has none of the cost's name.
double UnitsOf(const allocator::ResourceList& amounts, const FairShareCost& cost) {
  auto amount = amounts.find(cost.name);
  return amount == amounts.end() ? 0
                                 : amount->second.AsApproximateDouble() / cost.unit * cost.weight;
}

}  // namespace

StatusOr<FairShareConfig> CompileSharingPolicy(const d::DeviceSharingPolicy& object) {
  d::DeviceSharingPolicy policy = object;
  api::validation::SetDefaults(&policy);
  if (api::FieldErrorList errs = api::validation::ValidateDeviceSharingPolicy(policy);
      !errs.empty()) {
    return api::ToInvalidStatus("DeviceSharingPolicy.draplane.dev", policy.metadata.name, errs);
  }
  const d::DeviceSharingPolicySpec& spec = policy.spec;
  FairShareConfig config;
  for (const d::SharingDomain& domain : spec.domains) {
    FairShareDomain& out = config.domains.emplace_back();
    out.name = domain.name;
    out.device_classes = domain.device_classes;
    for (const auto& [device_class, cost] : domain.cost) {
      if (cost.per_device) {
        out.cost[device_class] = {.kind = FairShareCost::Kind::kPerDevice,
                                  .per_device = cost.per_device->AsApproximateDouble()};
      } else if (cost.per_counter) {
        out.cost[device_class] = ResourceCost(FairShareCost::Kind::kPerCounter, *cost.per_counter);
      } else if (cost.per_capacity) {
        out.cost[device_class] =
            ResourceCost(FairShareCost::Kind::kPerCapacity, *cost.per_capacity);
      }
    }
  }
  for (const d::SharingTenant& tenant : spec.tenants) {
    FairShareTenant& out = config.tenants.emplace_back();
    out.namespaces = tenant.namespaces;
    if (tenant.namespaces.empty() && tenant.namespace_selector) {
      DRAPLANE_ASSIGN_OR_RETURN(out.namespace_selector,
                                api::labels::LabelSelectorAsSelector(*tenant.namespace_selector));
    }
    out.weight = tenant.weight.value_or(api::validation::kSharingDefaultWeight);
  }
  config.default_weight = *spec.default_weight;
  DRAPLANE_ASSIGN_OR_RETURN(config.half_life, api::ParseDuration(*spec.usage->half_life));
  config.history_fraction = spec.usage->history_fraction->AsApproximateDouble();
  const d::SharingAging& aging = *spec.aging;
  DRAPLANE_ASSIGN_OR_RETURN(config.full_credit_after, api::ParseDuration(*aging.full_credit_after));
  DRAPLANE_ASSIGN_OR_RETURN(config.starvation_threshold,
                            api::ParseDuration(*aging.starvation_threshold));
  DRAPLANE_ASSIGN_OR_RETURN(config.max_hold, api::ParseDuration(*aging.max_hold));
  config.holds = *aging.holds;
  return config;
}

FairShareModel::FairShareModel(FairShareConfig config, DeviceLedger& ledger, const Clock& clock)
    : config_(std::move(config)), ledger_(&ledger), clock_(clock) {
  for (size_t d = 0; d < config_.domains.size(); ++d) {
    const FairShareDomain& domain = config_.domains[d];
    for (const std::string& c : domain.device_classes) {
      auto cost = domain.cost.find(c);
      class_domain_.emplace(
          c, std::make_pair(static_cast<int>(d),
                            cost != domain.cost.end() ? cost->second : FairShareCost{}));
    }
  }
  capacity_.assign(config_.domains.size(), 0);
  active_weight_.assign(config_.domains.size(), 0);
  ledger_->SetObserver(this);
  for (const auto& [uid, holding] : ledger_->holdings().all()) OnHoldingAdded(holding);
}

FairShareModel::~FairShareModel() {
  // A model replacing this one (a policy edit) may already observe the ledger.
  if (ledger_->observer() == this) ledger_->SetObserver(nullptr);
}

void FairShareModel::TakeHistory(FairShareModel& previous) {
  Duration now = clock_.MonotonicNow();
  for (auto& [ns, old] : previous.tenants_) {
    for (size_t od = 0; od < previous.config_.domains.size(); ++od) {
      double decayed = previous.Decayed(ns, static_cast<int>(od));
      if (decayed <= 0) continue;
      for (size_t d = 0; d < config_.domains.size(); ++d) {
        if (config_.domains[d].name != previous.config_.domains[od].name) continue;
        Use& use = TenantOf(ns).uses[d];
        Advance(use, static_cast<int>(d), now);
        use.decayed = decayed;
      }
    }
  }
}

void FairShareModel::RestoreHistory(const d::DeviceSharingPolicyStatus& status) {
  Duration now = clock_.MonotonicNow();
  for (const d::SharingDomainStatus& domain : status.domains) {
    for (size_t i = 0; i < config_.domains.size(); ++i) {
      if (config_.domains[i].name != domain.name) continue;
      for (const d::SharingTenantStatus& tenant : domain.tenants) {
        double decayed = tenant.decayed.AsApproximateDouble();
        if (decayed <= 0) continue;
        Use& use = TenantOf(tenant.namespace_).uses[i];
        Advance(use, static_cast<int>(i), now);
        use.decayed = decayed;
      }
    }
  }
}

std::vector<std::string> FairShareModel::Tenants() const {
  std::vector<std::string> out;
  out.reserve(tenants_.size());
  for (const auto& [ns, t] : tenants_) out.push_back(ns);
  return out;
}

bool FairShareModel::Active(std::string_view namespace_, int domain) const {
  auto it = tenants_.find(namespace_);
  return it != tenants_.end() && it->second.uses[static_cast<size_t>(domain)].active();
}

double FairShareModel::ComputeWeight(std::string_view namespace_) const {
  for (const FairShareTenant& t : config_.tenants) {
    if (std::find(t.namespaces.begin(), t.namespaces.end(), namespace_) != t.namespaces.end()) {
      return t.weight;
    }
  }
  auto labels = namespace_labels_.find(namespace_);
  for (const FairShareTenant& t : config_.tenants) {
    if (!t.namespaces.empty() || !t.namespace_selector.has_value()) continue;
    if (labels != namespace_labels_.end()
            ? t.namespace_selector->Matches(labels->second)
            : t.namespace_selector->Matches(api::labels::LabelMap{})) {
      return t.weight;
    }
  }
  return config_.default_weight;
}

double FairShareModel::Weight(std::string_view namespace_) const {
  auto it = tenants_.find(namespace_);
  return it != tenants_.end() ? it->second.weight : ComputeWeight(namespace_);
}

void FairShareModel::SetNamespaceLabels(const std::string& namespace_,
                                        api::labels::LabelMap labels) {
  namespace_labels_[namespace_] = std::move(labels);
  if (auto it = tenants_.find(namespace_); it != tenants_.end()) {
    it->second.weight = ComputeWeight(namespace_);
    active_stale_ = true;
  }
}

void FairShareModel::RemoveNamespace(std::string_view namespace_) {
  auto it = namespace_labels_.find(namespace_);
  if (it == namespace_labels_.end()) return;
  namespace_labels_.erase(it);
  if (auto t = tenants_.find(namespace_); t != tenants_.end()) {
    t->second.weight = ComputeWeight(namespace_);
    active_stale_ = true;
  }
}

int FairShareModel::DomainOf(std::string_view device_class) const {
  auto it = class_domain_.find(device_class);
  return it == class_domain_.end() ? -1 : it->second.first;
}

std::vector<int> FairShareModel::DomainsOf(const std::vector<std::string>& device_classes) const {
  std::vector<int> out;
  for (const std::string& c : device_classes) {
    int d = DomainOf(c);
    if (d >= 0) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

FairShareModel::Tenant& FairShareModel::TenantOf(std::string_view namespace_) {
  auto it = tenants_.find(namespace_);
  if (it != tenants_.end()) return it->second;
  Tenant t;
  t.weight = ComputeWeight(namespace_);
  t.uses.resize(config_.domains.size());
  Duration now = clock_.MonotonicNow();
  for (Use& u : t.uses) u.updated = now;
  return tenants_.emplace(std::string(namespace_), std::move(t)).first->second;
}

void FairShareModel::RefreshCapacity() {
  if (!capacity_stale_) return;
  capacity_stale_ = false;
  capacity_.assign(config_.domains.size(), 0);
  // A device published by several slices (pool generations) counts once.
  std::set<std::string> seen;
  std::vector<double> best(config_.domains.size());
  ledger_->ForEachSlice([&](const api::resourcev1::ResourceSlice& slice,
                            const std::vector<std::vector<std::string_view>>& classes) {
    const auto& spec = slice.spec;
    for (size_t i = 0; i < spec.devices.size() && i < classes.size(); ++i) {
      std::fill(best.begin(), best.end(), 0.0);
      bool any = false;
      std::optional<allocator::DeviceFacts> facts;
      for (std::string_view c : classes[i]) {
        auto it = class_domain_.find(c);
        if (it == class_domain_.end()) continue;
        const auto& [domain, cost] = it->second;
        double units = cost.per_device;
        if (cost.kind != FairShareCost::Kind::kPerDevice) {
          if (!facts) facts = allocator::MakeDeviceFacts(spec.driver, spec.devices[i]);
          units = UnitsOf(
              cost.kind == FairShareCost::Kind::kPerCounter ? facts->counters : facts->capacity,
              cost);
        }
        best[static_cast<size_t>(domain)] = std::max(best[static_cast<size_t>(domain)], units);
        any = true;
      }
      if (!any) continue;
      if (!seen.insert(allocator::DeviceKey(spec.driver, spec.pool.name, spec.devices[i].name))
               .second) {
        continue;
      }
      for (size_t d = 0; d < best.size(); ++d) capacity_[d] += best[d];
    }
  });
}

double FairShareModel::CurrentOf(const Use& use, int domain) const {
  double cap = capacity_[static_cast<size_t>(domain)];
  return use.cost > 0 && cap > 0 ? use.cost / cap : 0;
}

void FairShareModel::Advance(Use& use, int domain, Duration now) {
  if (now <= use.updated) return;
  double cur = CurrentOf(use, domain);
  double keep = std::exp2(-std::chrono::duration<double>(now - use.updated).count() /
                          std::chrono::duration<double>(config_.half_life).count());
  use.decayed = use.decayed * keep + cur * (1 - keep);
  use.updated = now;
}

void FairShareModel::AdvanceAll(Duration now) {
  for (auto& [ns, t] : tenants_) {
    for (size_t d = 0; d < t.uses.size(); ++d) Advance(t.uses[d], static_cast<int>(d), now);
  }
}

double FairShareModel::CostOf(const allocator::Holdings::HeldDevice& device,
                              const FairShareCost& cost) const {
  if (cost.kind == FairShareCost::Kind::kPerDevice) return cost.per_device;
  const allocator::ResourceList* amounts = nullptr;
  if (cost.kind == FairShareCost::Kind::kPerCapacity && device.share) {
    amounts = &device.consumed_capacity;
  } else if (const allocator::DeviceFacts* facts =
                 ledger_->catalog().Find(device.driver, device.pool, device.device)) {
    amounts = cost.kind == FairShareCost::Kind::kPerCounter ? &facts->counters : &facts->capacity;
  }
  return amounts == nullptr ? 0 : UnitsOf(*amounts, cost);
}

void FairShareModel::Apply(const allocator::Holdings::Holding& holding, int sign) {
  Tenant* tenant = nullptr;
  Duration now = clock_.MonotonicNow();
  for (const allocator::Holdings::HeldDevice& device : holding.devices) {
    auto it = class_domain_.find(device.device_class);
    if (it == class_domain_.end()) continue;
    if (tenant == nullptr) {
      tenant = &TenantOf(holding.namespace_);
      // Capacity is kept fresh while anything is held (OnDevicesChanged), so a share is never
      // computed against devices published after it was.
      RefreshCapacity();
    }
    const auto& [domain, cost] = it->second;
    Use& use = tenant->uses[static_cast<size_t>(domain)];
    Advance(use, domain, now);
    bool held = use.devices > 0;
    use.cost += sign * CostOf(device, cost);
    use.devices += sign;
    if (use.devices <= 0) {
      use.devices = 0;
      use.cost = 0;  // no residue of rounding
    }
    if (held != (use.devices > 0)) active_stale_ = true;
  }
}

void FairShareModel::OnHoldingAdded(const allocator::Holdings::Holding& holding) {
  Apply(holding, +1);
}

void FairShareModel::OnHoldingRemoved(const allocator::Holdings::Holding& holding) {
  Apply(holding, -1);
}

void FairShareModel::OnDevicesChanged() {
  // Every current share changes with the capacity: close the decayed values at the old one,
  // then count the new one at once while anything is held (no one holding: lazily).
  AdvanceAll(clock_.MonotonicNow());
  capacity_stale_ = true;
  for (const auto& [ns, t] : tenants_) {
    for (const Use& u : t.uses) {
      if (u.cost > 0) {
        RefreshCapacity();
        return;
      }
    }
  }
}

void FairShareModel::AddPending(const std::string& namespace_, const std::vector<int>& domains) {
  if (domains.empty()) return;
  Tenant& t = TenantOf(namespace_);
  for (int d : domains) {
    if (t.uses[static_cast<size_t>(d)].pending++ == 0) active_stale_ = true;
  }
}

void FairShareModel::RemovePending(const std::string& namespace_, const std::vector<int>& domains) {
  if (domains.empty()) return;
  Tenant& t = TenantOf(namespace_);
  for (int d : domains) {
    if (--t.uses[static_cast<size_t>(d)].pending == 0) active_stale_ = true;
  }
}

double FairShareModel::ActiveWeight(int domain) {
  if (active_stale_) {
    active_stale_ = false;
    std::fill(active_weight_.begin(), active_weight_.end(), 0.0);
    for (const auto& [ns, t] : tenants_) {
      for (size_t d = 0; d < t.uses.size(); ++d) {
        if (t.uses[d].active()) active_weight_[d] += t.weight;
      }
    }
  }
  return active_weight_[static_cast<size_t>(domain)];
}

double FairShareModel::CapacityUnits(int domain) {
  RefreshCapacity();
  return capacity_[static_cast<size_t>(domain)];
}

double FairShareModel::Current(std::string_view namespace_, int domain) {
  RefreshCapacity();
  auto it = tenants_.find(namespace_);
  return it == tenants_.end() ? 0 : CurrentOf(it->second.uses[static_cast<size_t>(domain)], domain);
}

double FairShareModel::Decayed(std::string_view namespace_, int domain) {
  RefreshCapacity();
  auto it = tenants_.find(namespace_);
  if (it == tenants_.end()) return 0;
  Use& use = it->second.uses[static_cast<size_t>(domain)];
  Advance(use, domain, clock_.MonotonicNow());
  return use.decayed;
}

double FairShareModel::FairShare(std::string_view namespace_, int domain) {
  double w = Weight(namespace_);
  double total = ActiveWeight(domain);
  auto it = tenants_.find(namespace_);
  bool active = it != tenants_.end() && it->second.uses[static_cast<size_t>(domain)].active();
  if (!active) total += w;  // as if it joined
  return total > 0 ? w / total : 1;
}

double FairShareModel::Used(std::string_view namespace_, int domain) {
  double phi = config_.history_fraction;
  return (1 - phi) * Current(namespace_, domain) + phi * Decayed(namespace_, domain);
}

double FairShareModel::EffectiveShare(std::string_view namespace_, int domain) {
  double fair = FairShare(namespace_, domain);
  return fair > 0 ? Used(namespace_, domain) / fair : 0;
}

double FairShareModel::PodShare(std::string_view namespace_, const std::vector<int>& domains) {
  double share = 0;
  for (int d : domains) share = std::max(share, EffectiveShare(namespace_, d));
  return share;
}

double AgingCredit(const FairShareConfig& config, Duration enqueued_at, Duration now) {
  Duration full = config.full_credit_after;
  if (full <= Duration::zero()) return 1;
  double wait =
      std::chrono::duration<double>(std::max(now - enqueued_at, Duration::zero())).count();
  return std::min(wait / std::chrono::duration<double>(full).count(), 1.0);
}

std::vector<DomainShares> ComputeShares(FairShareModel& model,
                                        const std::vector<PendingShare>& pending) {
  const FairShareConfig& config = model.config();
  // (domain, namespace) -> (pending, starving)
  std::map<std::pair<int, std::string>, std::pair<int64_t, int64_t>> waiting;
  for (const PendingShare& p : pending) {
    for (int d : p.domains) {
      auto& [count, starving] = waiting[{d, p.namespace_}];
      ++count;
      if (p.starving) ++starving;
    }
  }
  std::vector<std::string> known = model.Tenants();
  std::vector<DomainShares> out;
  out.reserve(config.domains.size());
  for (size_t d = 0; d < config.domains.size(); ++d) {
    int domain = static_cast<int>(d);
    DomainShares& shares = out.emplace_back();
    shares.name = config.domains[d].name;
    shares.capacity_units = model.CapacityUnits(domain);
    std::set<std::string> tenants;
    for (const std::string& ns : known) {
      if (model.Active(ns, domain) || model.Decayed(ns, domain) > 0) tenants.insert(ns);
    }
    for (const auto& [key, counts] : waiting) {
      if (key.first == domain) tenants.insert(key.second);
    }
    // Active: holding there (or in the model's active queue) or waiting with a pending Pod.
    auto active = [&](const std::string& ns) {
      return model.Active(ns, domain) || waiting.contains({domain, ns});
    };
    double active_weight = 0;
    for (const std::string& ns : tenants) {
      if (active(ns)) active_weight += model.Weight(ns);
    }
    for (const std::string& ns : tenants) {
      TenantShare& t = shares.tenants.emplace_back();
      t.namespace_ = ns;
      t.weight = model.Weight(ns);
      // A tenant with decayed usage only: its share as if it joined.
      const double total = active_weight + (active(ns) ? 0 : t.weight);
      t.fair = total > 0 ? t.weight / total : 1;
      t.current = model.Current(ns, domain);
      t.decayed = model.Decayed(ns, domain);
      t.effective = t.fair > 0 ? model.Used(ns, domain) / t.fair : 0;
      if (auto w = waiting.find({domain, ns}); w != waiting.end()) {
        std::tie(t.pending, t.starving) = w->second;
      }
    }
  }
  return out;
}

d::DeviceSharingPolicyStatus SharingStatus(const std::vector<DomainShares>& shares,
                                           int64_t generation, api::metav1::Condition ready) {
  auto fraction = [](double value) {
    return api::Quantity::FromMilli(static_cast<int64_t>(std::llround(value * 1000)));
  };
  d::DeviceSharingPolicyStatus status;
  status.observed_generation = generation;
  for (const DomainShares& domain : shares) {
    d::SharingDomainStatus& out = status.domains.emplace_back();
    out.name = domain.name;
    out.capacity_units = fraction(domain.capacity_units);
    for (const TenantShare& t : domain.tenants) {
      d::SharingTenantStatus& tenant = out.tenants.emplace_back();
      tenant.namespace_ = t.namespace_;
      tenant.weight = static_cast<int32_t>(std::llround(t.weight));
      tenant.fair_share = fraction(t.fair);
      tenant.current = fraction(t.current);
      tenant.decayed = fraction(t.decayed);
      tenant.effective = fraction(t.effective);
      tenant.pending = static_cast<int32_t>(t.pending);
      tenant.starving = static_cast<int32_t>(t.starving);
    }
  }
  ready.observed_generation = generation;
  status.conditions.push_back(std::move(ready));
  return status;
}

}  // namespace draplane::scheduler
