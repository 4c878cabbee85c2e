#include "allocator/quota.h"

#include <fmt/core.h>

#include <algorithm>

namespace draplane::allocator {

namespace {

api::Quantity Get(const ResourceList& list, std::string_view key) {
  auto it = list.find(key);
  return it == list.end() ? api::Quantity() : it->second;
}

}  // namespace

std::optional<QuotaBudget> BudgetOf(const api::corev1::ResourceQuota& quota) {
  if (api::quota::ModeOf(quota) != api::quota::DeviceQuotaMode::kAllocation) return std::nullopt;
  // A scoped quota matches no claim (validation refuses one in Allocation mode; a quota stored
  // before that rule limits nothing rather than every claim of its namespace).
  if (!api::quota::ScopeSelectors(quota).empty()) return std::nullopt;
  QuotaBudget budget;
  budget.namespace_ = quota.metadata.namespace_;
  budget.name = quota.metadata.name;
  budget.resource_version = quota.metadata.resource_version;
  for (const auto& [key, hard] : quota.spec.hard) {
    if (!api::quota::IsAllocationChargedKey(key)) continue;
    budget.hard.emplace(key, hard);
    auto used = quota.status.used.find(key);
    if (used != quota.status.used.end() && !used->second.IsZero()) {
      budget.used.emplace(key, used->second);
    }
  }
  if (budget.hard.empty()) return std::nullopt;
  return budget;
}

std::string QuotaExceededMessage(const QuotaBudget& quota, std::string_view resource,
                                 const api::Quantity& used, const api::Quantity& hard,
                                 const api::Quantity& needs) {
  std::string out = fmt::format("quota {}/{} {} {}/{}", quota.namespace_, quota.name, resource,
                                used.ToString(), hard.ToString());
  std::optional<DeviceResource> parsed = ParseDeviceResource(resource);
  bool one_device = parsed.has_value() && parsed->kind == DeviceResource::Kind::kDevices &&
                    needs.Compare(api::Quantity::FromInt64(1)) == 0;
  if (!one_device) {
    out += ", needs " + needs.ToString();
  }
  return out;
}

std::optional<std::string> ExceedsQuota(const QuotaBudget& quota, const ResourceList& used,
                                        const ResourceList& increment) {
  for (const auto& [key, hard] : quota.hard) {
    auto charge = increment.find(key);
    if (charge == increment.end() || charge->second.Sign() <= 0) continue;
    api::Quantity now = Get(used, key);
    if (now.Add(charge->second).Compare(hard) > 0) {
      return QuotaExceededMessage(quota, key, now, hard, charge->second);
    }
  }
  return std::nullopt;
}

ResourceList ChargedUsage(const QuotaBudget& quota, const ResourceList& used,
                          const ResourceList& increment) {
  ResourceList out = used;
  for (const auto& [key, hard] : quota.hard) {
    auto charge = increment.find(key);
    if (charge != increment.end()) AddResource(out, key, charge->second);
  }
  return out;
}

QuotaConstraint::QuotaConstraint(std::string ns, std::vector<QuotaBudget> quotas,
                                 const Holdings& holdings)
    : namespace_(std::move(ns)), quotas_(std::move(quotas)), holdings_(&holdings) {
  ResourceList committed = holdings.Usage(namespace_, Holdings::Scope::kCommitted);
  ResourceList in_flight = holdings.Usage(namespace_, Holdings::Scope::kInFlight);
  for (size_t i = 0; i < quotas_.size(); ++i) {
    ResourceList base;
    for (const auto& [key, hard] : quotas_[i].hard) {
      api::Quantity used = Get(quotas_[i].used, key);
      api::Quantity seen = Get(committed, key);
      api::Quantity start = used.Compare(seen) >= 0 ? used : seen;
      start = start.Add(Get(in_flight, key));
      if (!start.IsZero()) base.emplace(key, start);
      limits_by_key_[key].push_back(limits_.size());
      // BudgetOf keeps only names ParseDeviceResource accepts.
      DeviceResource parsed = ParseDeviceResource(key).value_or(DeviceResource{});
      limits_.push_back(
          Limit{.quota = i, .key = &key, .resource = parsed, .hard = hard, .used = start});
    }
    base_.push_back(std::move(base));
  }
}

QuotaConstraint::Slots QuotaConstraint::ToSlots(const ResourceList& charge) const {
  Slots out;
  for (const auto& [key, amount] : charge) {
    auto it = limits_by_key_.find(key);
    if (it == limits_by_key_.end() || amount.Sign() <= 0) continue;
    for (size_t l : it->second) out.emplace_back(l, amount);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::optional<PolicyRejection> QuotaConstraint::Check(const Slots& charge) const {
  for (const auto& [l, amount] : charge) {
    const Limit& limit = limits_[l];
    if (limit.used.Add(amount).Compare(limit.hard) > 0) {
      return PolicyRejection{
          std::string(kQuotaPolicyCode),
          QuotaExceededMessage(quotas_[limit.quota], *limit.key, limit.used, limit.hard, amount)};
    }
  }
  return std::nullopt;
}

QuotaConstraint::Slots QuotaConstraint::ChargeSlots(const PolicyCandidate& candidate,
                                                    const DeviceFacts& facts,
                                                    std::string* shared_device) {
  struct Context {
    const std::vector<Limit>& limits;
    Slots additive;
    Slots share;
    bool has_share_counters = false;
  } ctx{limits_, {}, {}, false};
  auto add = [](Slots& into, size_t l, const api::Quantity& amount) {
    for (auto& [limit, sum] : into) {
      if (limit == l) {
        sum = sum.Add(amount);
        return;
      }
    }
    into.emplace_back(l, amount);
  };
  ForEachDeviceCharge(
      candidate.device_class, facts, candidate.admin_access,
      candidate.shared ? candidate.consumed : nullptr, [&ctx, &add](const ChargeItem& item) {
        if (item.share_counter && !item.amount.IsZero()) {
          ctx.has_share_counters = true;
        }
        for (size_t l = 0; l < ctx.limits.size(); ++l) {
          const DeviceResource& r = ctx.limits[l].resource;
          if (r.kind == item.kind && r.subject == item.subject && r.name == item.name) {
            add(item.share_counter ? ctx.share : ctx.additive, l, item.amount);
          }
        }
      });
  if (ctx.has_share_counters) {
    *shared_device = DeviceKey(candidate.driver, candidate.pool, candidate.device);
    auto it = shares_.find(*shared_device);
    bool paid = (it != shares_.end() && it->second > 0) ||
                holdings_->HoldsSharedCounters(namespace_, *shared_device);
    if (!paid) {
      for (const auto& [l, amount] : ctx.share) add(ctx.additive, l, amount);
    }
  }
  std::erase_if(ctx.additive, [](const auto& slot) { return slot.second.Sign() <= 0; });
  std::sort(ctx.additive.begin(), ctx.additive.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return std::move(ctx.additive);
}

std::optional<PolicyRejection> QuotaConstraint::Add(const PolicyCandidate& candidate) {
  Accepted accepted;
  const bool plain = candidate.facts != nullptr && candidate.facts->counters.empty() &&
                     candidate.facts->capacity.empty() &&
                     (candidate.consumed == nullptr || !candidate.shared);
  if (plain) {
    // The charge of a device without counters or capacities depends only on these: computed
    // once per attempt.
    PlainKey key{std::string(candidate.device_class), candidate.admin_access};
    auto it = plain_charges_.find(key);
    if (it == plain_charges_.end()) {
      std::string unused;
      it = plain_charges_.emplace(std::move(key), ChargeSlots(candidate, *candidate.facts, &unused))
               .first;
    }
    accepted.slots = &it->second;
  } else {
    DeviceFacts unknown;
    if (candidate.facts == nullptr) unknown.driver = std::string(candidate.driver);
    const DeviceFacts& facts = candidate.facts != nullptr ? *candidate.facts : unknown;
    accepted.own = ChargeSlots(candidate, facts, &accepted.shared_device);
  }
  const Slots& slots = accepted.slots != nullptr ? *accepted.slots : accepted.own;
  if (std::optional<PolicyRejection> why = Check(slots)) return why;
  for (const auto& [l, amount] : slots) limits_[l].used = limits_[l].used.Add(amount);
  if (!accepted.shared_device.empty()) ++shares_[accepted.shared_device];
  stack_.push_back(std::move(accepted));
  return std::nullopt;
}

void QuotaConstraint::Remove(const PolicyCandidate& candidate) {
  (void)candidate;  // the seam removes in last-in-first-out order (policy.h)
  if (stack_.empty()) return;
  Accepted& top = stack_.back();
  const Slots& slots = top.slots != nullptr ? *top.slots : top.own;
  for (const auto& [l, amount] : slots) limits_[l].used = limits_[l].used.Sub(amount);
  if (!top.shared_device.empty()) {
    auto it = shares_.find(top.shared_device);
    if (it != shares_.end() && --it->second <= 0) shares_.erase(it);
  }
  stack_.pop_back();
}

std::optional<PolicyRejection> QuotaConstraint::CheckRequest(const PolicyRequest& request) {
  if (request.admin_access || request.device_class.empty() || request.count <= 0) {
    return std::nullopt;
  }
  ResourceList charge;
  AddResource(charge, api::quota::DeviceClassResourceName(request.device_class),
              api::Quantity::FromInt64(request.count));
  return Check(ToSlots(charge));
}

}  // namespace draplane::allocator
