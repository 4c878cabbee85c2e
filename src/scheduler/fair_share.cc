#include "scheduler/fair_share.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace draplane::scheduler {
namespace {

// A non-per-device cost of a device whose counters or capacities (as the cost's kind asks) are
// `amounts`: 0 when it has none of the cost's name.
double UnitsOf(const allocator::ResourceList& amounts, const FairShareCost& cost) {
  auto amount = amounts.find(cost.name);
  return amount == amounts.end() ? 0
                                 : amount->second.AsApproximateDouble() / cost.unit * cost.weight;
}

}  // namespace

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

FairShareModel::~FairShareModel() { ledger_->SetObserver(nullptr); }

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

double FairShareModel::EffectiveShare(std::string_view namespace_, int domain) {
  double phi = config_.history_fraction;
  double used = (1 - phi) * Current(namespace_, domain) + phi * Decayed(namespace_, domain);
  double fair = FairShare(namespace_, domain);
  return fair > 0 ? used / fair : 0;
}

double FairShareModel::PodShare(std::string_view namespace_, const std::vector<int>& domains) {
  double share = 0;
  for (int d : domains) share = std::max(share, EffectiveShare(namespace_, d));
  return share;
}

}  // namespace draplane::scheduler
