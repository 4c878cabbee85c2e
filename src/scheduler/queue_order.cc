#include "scheduler/queue_order.h"

#include <algorithm>

namespace draplane::scheduler {

namespace {

int64_t BandOf(const api::corev1::Pod& pod) { return -pod.spec.priority.value_or(0); }

}  // namespace

void PrioritySortOrder::Add(const Entry& entry) {
  active_.insert({BandOf(entry.pod), entry.indebted, entry.sequence, entry.uid});
}

void PrioritySortOrder::Remove(const Entry& entry) {
  active_.erase({BandOf(entry.pod), entry.indebted, entry.sequence, entry.uid});
}

std::optional<std::string> PrioritySortOrder::Peek(Duration) {
  if (active_.empty()) return std::nullopt;
  return std::get<3>(*active_.begin());
}

FairShareOrder::FairShareOrder(FairShareModel& model, ClassesOf classes_of)
    : model_(model), classes_of_(std::move(classes_of)) {}

double FairShareOrder::Credit(Duration enqueued_at, Duration now) const {
  return AgingCredit(model_.config(), enqueued_at, now);
}

void FairShareOrder::Add(const Entry& entry) {
  Pod p;
  p.band = BandOf(entry.pod);
  p.fifo = {entry.enqueued_at, entry.pod.metadata.namespace_, entry.pod.metadata.name, entry.uid};
  p.indebted = entry.indebted;
  PodClasses classes = classes_of_(entry.pod);
  p.domains = model_.DomainsOf(classes.all);
  for (std::string& c : classes.preferred) {
    if (model_.DomainOf(c) >= 0) p.preferred.push_back(std::move(c));
  }
  Band& band = bands_[p.band];
  band.all.insert(p.fifo);
  if (p.domains.empty()) {
    band.without_domain.insert({p.indebted, p.fifo});
  } else {
    band.tenants[entry.pod.metadata.namespace_].insert({p.indebted, p.fifo});
    model_.AddPending(entry.pod.metadata.namespace_, p.domains);
    if (!p.preferred.empty()) {
      std::map<std::string, int64_t>& counts = band.preferred[entry.pod.metadata.namespace_];
      for (const std::string& c : p.preferred) ++counts[c];
    }
  }
  pods_.insert_or_assign(entry.uid, std::move(p));
}

void FairShareOrder::Remove(const Entry& entry) {
  auto it = pods_.find(entry.uid);
  if (it == pods_.end()) return;
  const Pod& p = it->second;
  auto b = bands_.find(p.band);
  Band& band = b->second;
  band.all.erase(p.fifo);
  if (p.domains.empty()) {
    band.without_domain.erase({p.indebted, p.fifo});
  } else {
    const std::string& ns = std::get<1>(p.fifo);
    auto t = band.tenants.find(ns);
    t->second.erase({p.indebted, p.fifo});
    if (t->second.empty()) band.tenants.erase(t);
    model_.RemovePending(ns, p.domains);
    if (!p.preferred.empty()) {
      auto counts = band.preferred.find(ns);
      for (const std::string& c : p.preferred) {
        auto n = counts->second.find(c);
        if (--n->second == 0) counts->second.erase(n);
      }
      if (counts->second.empty()) band.preferred.erase(counts);
    }
  }
  if (band.all.empty()) bands_.erase(b);
  pods_.erase(it);
}

allocator::ContestedClasses FairShareOrder::Contested(std::string_view namespace_,
                                                      int32_t priority) {
  allocator::ContestedClasses out;
  for (const auto& [band_key, band] : bands_) {
    if (band_key > -static_cast<int64_t>(priority)) break;  // lower priority from here on
    for (const auto& [ns, counts] : band.preferred) {
      if (ns == namespace_) continue;
      for (const auto& [device_class, n] : counts) {
        if (model_.EffectiveShare(ns, model_.DomainOf(device_class)) >= 1) continue;
        std::vector<std::string>& tenants = out[device_class];
        if (tenants.empty() || tenants.back() != ns) tenants.push_back(ns);
      }
    }
  }
  for (auto& [device_class, tenants] : out) {
    std::sort(tenants.begin(), tenants.end());
    tenants.erase(std::unique(tenants.begin(), tenants.end()), tenants.end());
  }
  return out;
}

std::optional<std::string> FairShareOrder::Peek(Duration now) {
  if (bands_.empty()) return std::nullopt;
  const Band& band = bands_.begin()->second;
  // 1. Starving: the band's oldest pod, when it waited long enough.
  const FifoKey& oldest = *band.all.begin();
  if (now - std::get<0>(oldest) >= model_.config().starvation_threshold) {
    return std::get<3>(oldest);
  }
  // 2. Pods in no domain, unless every one of them is indebted and a tenant's head is not.
  std::optional<std::pair<bool, FifoKey>> free_head;
  if (!band.without_domain.empty()) free_head = *band.without_domain.begin();
  if (free_head && !free_head->first) return std::get<3>(free_head->second);
  // 3. Tenants by (indebted, key, FIFO).
  const FifoKey* best = nullptr;
  bool best_indebted = false;
  double best_key = 0;
  for (const auto& [ns, fifo] : band.tenants) {
    const auto& [indebted, head] = *fifo.begin();
    double key =
        model_.PodShare(ns, pods_.at(std::get<3>(head)).domains) - Credit(std::get<0>(head), now);
    if (best == nullptr ||
        std::tie(indebted, key, head) < std::tie(best_indebted, best_key, *best)) {
      best = &head;
      best_indebted = indebted;
      best_key = key;
    }
  }
  if (free_head && (best == nullptr || best_indebted)) return std::get<3>(free_head->second);
  if (best == nullptr) return std::nullopt;
  return std::get<3>(*best);
}

}  // namespace draplane::scheduler
