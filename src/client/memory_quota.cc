#include "client/memory_quota.h"

#include <algorithm>
#include <boost/json.hpp>

#include "api/codec/json.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/quota/admission.h"

namespace draplane::client {
namespace {

namespace json = boost::json;
namespace corev1 = api::corev1;
using api::quota::ResourceList;

const json::object* MemberObject(const json::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  const json::value* child = v.as_object().if_contains(key);
  return child != nullptr && child->is_object() ? &child->as_object() : nullptr;
}

bool PodIsTerminal(const json::value& pod) {
  const json::object* status = MemberObject(pod, "status");
  const json::value* phase = status != nullptr ? status->if_contains("phase") : nullptr;
  return phase != nullptr && phase->is_string() &&
         (phase->as_string() == "Succeeded" || phase->as_string() == "Failed");
}

bool BeingDeleted(const json::value& object) {
  const json::object* meta = MemberObject(object, "metadata");
  return meta != nullptr && meta->if_contains("deletionTimestamp") != nullptr;
}

// Pods and claims have a usage of their own (their evaluators read them), recorded when counted.
bool HasOwnUsage(const ResourceType& type) {
  return api::quota::EvaluatorFor(type.group, type.resource) != api::quota::Evaluator::kObjectCount;
}

bool IsScoped(const corev1::ResourceQuota& quota) {
  return !quota.spec.scopes.empty() || quota.spec.scope_selector.has_value();
}

}  // namespace

MemoryQuotas::MemoryQuotas(const Clock& clock, ForEachObject objects)
    : clock_(clock), objects_(std::move(objects)) {}

ResourceList MemoryQuotas::UsageOf(const ResourceType& type, const json::value& object,
                                   std::optional<corev1::Pod>* pod) const {
  pod->reset();
  api::FieldErrorList errors;
  switch (api::quota::EvaluatorFor(type.group, type.resource)) {
    case api::quota::Evaluator::kResourceClaims: {
      api::resourcev1::ResourceClaim claim;
      api::resourcev1::Decode(object, &claim, &errors);
      return errors.empty() ? api::quota::ResourceClaimUsage(claim) : ResourceList{};
    }
    case api::quota::Evaluator::kPods: {
      corev1::Pod decoded;
      corev1::Decode(object, &decoded, &errors);
      if (!errors.empty()) return {};
      ResourceList usage = api::quota::PodUsage(decoded, clock_.Now());
      *pod = std::move(decoded);
      return usage;
    }
    case api::quota::Evaluator::kObjectCount:
      break;
  }
  return api::quota::ObjectCountUsage(type.group, type.resource);
}

bool MemoryQuotas::Counts(const Namespace& ns, const ResourceType& type) {
  if (!type.namespaced || api::quota::IsIgnoredResource(type.group, type.resource)) return false;
  for (const auto& [name, quota] : ns.quotas) {
    for (const auto& [key, hard] : quota.spec.hard) {
      if (api::quota::ServerOwned(quota, key) &&
          api::quota::EvaluatorMatches(type.group, type.resource, key)) {
        return true;
      }
    }
  }
  return false;
}

std::vector<MemoryQuotas::StatusWrite> MemoryQuotas::Charge(Namespace& ns, const ResourceType& type,
                                                            const ResourceList& usage,
                                                            const corev1::Pod* pod, int sign) {
  std::vector<StatusWrite> writes;
  for (auto& [name, quota] : ns.quotas) {
    if (!api::quota::QuotaMatches(quota, type.group, type.resource, pod)) continue;
    corev1::ResourceQuotaStatus status = quota.status;
    bool changed = false;
    for (const std::string& key : api::quota::EnforcedKeys(quota, type.group, type.resource)) {
      auto amount = usage.find(key);
      if (amount == usage.end() || amount->second.IsZero()) continue;
      api::Quantity& used = status.used[key];
      used = sign > 0 ? used.Add(amount->second) : used.Sub(amount->second);
      if (used.Sign() < 0) used = api::Quantity::FromInt64(0);
      changed = true;
    }
    if (changed) writes.push_back({quota.metadata.namespace_, name, std::move(status)});
  }
  return writes;
}

StatusOr<std::vector<MemoryQuotas::StatusWrite>> MemoryQuotas::Admit(const ResourceType& type,
                                                                     const std::string& ns,
                                                                     const std::string& name,
                                                                     const json::value& object) {
  auto found = namespaces_.find(ns);
  if (found == namespaces_.end() || !Counts(found->second, type) ||
      !api::quota::Handles(type.group, type.resource, api::quota::Operation::kCreate, "")) {
    return std::vector<StatusWrite>{};
  }
  Namespace& n = found->second;
  std::optional<corev1::Pod> pod;
  ResourceList usage = UsageOf(type, object, &pod);
  for (const auto& [quota_name, quota] : n.quotas) {
    if (!api::quota::QuotaMatches(quota, type.group, type.resource, pod ? &*pod : nullptr)) {
      continue;
    }
    std::vector<std::string> keys = api::quota::EnforcedKeys(quota, type.group, type.resource);
    if (keys.empty()) continue;
    if (pod.has_value()) {
      std::string violation = api::quota::PodConstraintViolation(*pod, keys);
      if (!violation.empty()) {
        return FailedPreconditionError("failed quota: " + quota_name + ": " + violation);
      }
    }
    ResourceList requested;
    for (const std::string& key : keys) {
      if (auto it = usage.find(key); it != usage.end()) requested.emplace(key, it->second);
    }
    if (std::optional<std::string> refusal = api::quota::ExceededQuota(quota, requested)) {
      return FailedPreconditionError(*refusal);
    }
  }
  if (HasOwnUsage(type)) n.counted[&type][ObjectKey(ns, name)] = usage;
  return Charge(n, type, usage, pod ? &*pod : nullptr, +1);
}

std::vector<MemoryQuotas::StatusWrite> MemoryQuotas::Replaced(const ResourceType& type,
                                                              const std::string& ns,
                                                              const std::string& key,
                                                              const json::value& before,
                                                              const json::value& after) {
  // Only a Pod's usage changes, when it turns terminal or starts terminating.
  if (&type != &ResourceOf<corev1::Pod>()) return {};
  if (PodIsTerminal(before) == PodIsTerminal(after) && BeingDeleted(before) == BeingDeleted(after))
    return {};
  auto found = namespaces_.find(ns);
  if (found == namespaces_.end() || !Counts(found->second, type)) return {};
  Namespace& n = found->second;
  std::optional<corev1::Pod> pod;
  ResourceList usage = UsageOf(type, after, &pod);
  ResourceList& counted = n.counted[&type][key];
  ResourceList change = api::quota::Subtract(usage, counted);
  counted = std::move(usage);
  // Usage only shrinks here (terminal, terminating): give back the difference.
  ResourceList given_back;
  for (const auto& [name, q] : change) {
    if (q.Sign() < 0) given_back.emplace(name, q.Neg());
  }
  return Charge(n, type, given_back, pod ? &*pod : nullptr, -1);
}

std::vector<MemoryQuotas::StatusWrite> MemoryQuotas::Removed(const ResourceType& type,
                                                             const std::string& ns,
                                                             const std::string& key,
                                                             const json::value& last) {
  auto found = namespaces_.find(ns);
  if (found == namespaces_.end() || !Counts(found->second, type)) return {};
  Namespace& n = found->second;
  std::optional<corev1::Pod> pod;
  ResourceList usage;
  if (HasOwnUsage(type)) {
    auto& records = n.counted[&type];
    auto record = records.find(key);
    if (record != records.end()) {
      usage = std::move(record->second);
      records.erase(record);
    }
    // Scoped quotas match on the Pod itself.
    bool scoped = std::any_of(n.quotas.begin(), n.quotas.end(),
                              [](const auto& q) { return IsScoped(q.second); });
    if (scoped && &type == &ResourceOf<corev1::Pod>()) {
      corev1::Pod decoded;
      api::FieldErrorList errors;
      corev1::Decode(last, &decoded, &errors);
      if (errors.empty()) pod = std::move(decoded);
    }
  } else {
    usage = UsageOf(type, last, &pod);
  }
  return Charge(n, type, usage, pod ? &*pod : nullptr, -1);
}

std::vector<MemoryQuotas::StatusWrite> MemoryQuotas::QuotaStored(const json::value& object,
                                                                 const json::value* before) {
  corev1::ResourceQuota quota;
  api::FieldErrorList errors;
  corev1::Decode(object, &quota, &errors);
  if (!errors.empty()) return {};
  bool changed = before == nullptr;
  // A status write leaves the spec and the annotations (the mode) as they were.
  auto same = [&](std::string_view part, std::string_view field) {
    auto at = [&](const json::value& v) -> const json::value* {
      const json::object* o = part.empty() ? v.if_object() : MemberObject(v, part);
      return o != nullptr ? o->if_contains(field) : nullptr;
    };
    const json::value* x = at(object);
    const json::value* y = at(*before);
    return (x == nullptr) == (y == nullptr) && (x == nullptr || api::codec::JsonEqual(*x, *y));
  };
  if (before != nullptr && !(same("", "spec") && same("metadata", "annotations"))) {
    corev1::ResourceQuota previous;
    corev1::Decode(*before, &previous, &errors);
    changed = !errors.empty() || !(previous.spec == quota.spec) ||
              api::quota::ModeOf(previous) != api::quota::ModeOf(quota);
  }
  std::vector<std::string> owned;
  for (const auto& [key, hard] : quota.spec.hard) {
    if (api::quota::ServerOwned(quota, key)) owned.push_back(key);
  }
  const std::string ns_name = quota.metadata.namespace_;
  Namespace& ns = namespaces_[ns_name];
  bool synced = api::quota::Synced(quota, owned);
  ns.quotas[quota.metadata.name] = std::move(quota);
  if (!changed && synced) return {};
  return Sync(ns_name, ns);
}

void MemoryQuotas::QuotaRemoved(std::string_view key) {
  std::string ns;
  std::string name;
  SplitObjectKey(key, &ns, &name);
  auto found = namespaces_.find(ns);
  if (found == namespaces_.end()) return;
  found->second.quotas.erase(name);
  if (found->second.quotas.empty()) namespaces_.erase(found);
}

std::vector<MemoryQuotas::StatusWrite> MemoryQuotas::Sync(const std::string& ns_name,
                                                          Namespace& ns) {
  ns.counted.clear();
  std::map<std::string, ResourceList, std::less<>> used;  // by quota, the keys it owns
  for (const auto& [name, quota] : ns.quotas) used[name];
  objects_(
      ns_name, [&](const ResourceType& type, const std::string& key, const json::value& object) {
        if (!Counts(ns, type)) return;
        std::optional<corev1::Pod> pod;
        ResourceList usage = UsageOf(type, object, &pod);
        for (const auto& [name, quota] : ns.quotas) {
          if (!api::quota::QuotaMatches(quota, type.group, type.resource, pod ? &*pod : nullptr)) {
            continue;
          }
          ResourceList& sum = used[name];
          for (const std::string& k : api::quota::EnforcedKeys(quota, type.group, type.resource)) {
            auto amount = usage.find(k);
            if (amount == usage.end()) continue;
            auto [it, added] = sum.try_emplace(k, amount->second);
            if (!added) it->second = it->second.Add(amount->second);
          }
        }
        if (HasOwnUsage(type)) ns.counted[&type][key] = std::move(usage);
      });
  std::vector<StatusWrite> writes;
  for (const auto& [name, quota] : ns.quotas) {
    corev1::ResourceQuotaStatus status = api::quota::SyncedStatus(quota, used[name]);
    if (status == quota.status) continue;
    writes.push_back({ns_name, name, std::move(status)});
  }
  return writes;
}

}  // namespace draplane::client
