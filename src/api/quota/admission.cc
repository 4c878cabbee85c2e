#include "api/quota/admission.h"

#include <map>
#include <set>

namespace draplane::api::quota {

bool ServerOwned(const corev1::ResourceQuota& quota, std::string_view key) {
  return ModeOf(quota) == DeviceQuotaMode::kAdmission || !IsAllocationChargedKey(key);
}

std::vector<std::string> EnforcedKeys(const corev1::ResourceQuota& quota, std::string_view group,
                                      std::string_view resource) {
  std::vector<std::string> keys;
  for (const auto& [key, hard] : quota.spec.hard) {
    if (ServerOwned(quota, key) && EvaluatorMatches(group, resource, key)) keys.push_back(key);
  }
  return keys;
}

std::string PodConstraintViolation(const corev1::Pod& pod, const std::vector<std::string>& keys) {
  static constexpr std::string_view kValidated[] = {
      "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"};
  std::set<std::string> required;
  for (const std::string& key : keys) {
    for (std::string_view v : kValidated) {
      if (key == v) required.insert(key);
    }
  }
  if (required.empty()) return "";
  std::map<std::string, std::set<std::string>> missing;
  for (const auto* list : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (const corev1::Container& c : *list) {
      std::set<std::string> has;
      // podComputeUsageHelper over the container's (defaulted) requests and limits.
      for (const auto& [name, q] : c.resources.limits) {
        if (name == "cpu" || name == "memory") {
          has.insert(name);
          has.insert("requests." + name);
          has.insert("limits." + name);
        }
      }
      for (const auto& [name, q] : c.resources.requests) {
        if (name == "cpu" || name == "memory") {
          has.insert(name);
          has.insert("requests." + name);
        }
      }
      for (const std::string& r : required) {
        if (has.count(r) == 0) missing[r].insert(c.name);
      }
    }
  }
  if (missing.empty()) return "";
  std::string out = "must specify ";
  bool first = true;
  for (const auto& [resource, containers] : missing) {
    if (!first) out += "; ";
    first = false;
    out += resource + " for: ";
    bool first_container = true;
    for (const std::string& c : containers) {
      if (!first_container) out += ",";
      first_container = false;
      out += c;
    }
  }
  return out;
}

std::optional<std::string> ExceededQuota(const corev1::ResourceQuota& quota,
                                         const ResourceList& requested) {
  const corev1::ResourceQuotaStatus& status = quota.status;
  ResourceList new_used =
      Add(Mask(status.used, [&](std::string_view k) { return requested.count(k) > 0; }), requested);
  std::set<std::string, std::less<>> exceeded;
  for (const auto& [k, value] : new_used) {
    auto hard = status.hard.find(k);
    if (hard != status.hard.end() && value.Compare(hard->second) > 0) exceeded.insert(k);
  }
  if (exceeded.empty()) return std::nullopt;
  auto in_exceeded = [&](std::string_view k) { return exceeded.count(k) > 0; };
  return "exceeded quota: " + quota.metadata.name +
         ", requested: " + PrettyPrint(Mask(requested, in_exceeded)) +
         ", used: " + PrettyPrint(Mask(status.used, in_exceeded)) +
         ", limited: " + PrettyPrint(Mask(status.hard, in_exceeded));
}

corev1::ResourceQuotaStatus SyncedStatus(const corev1::ResourceQuota& quota,
                                         const ResourceList& owned_used) {
  corev1::ResourceQuotaStatus status = quota.status;
  status.hard = quota.spec.hard;
  ResourceList used;
  for (const auto& [key, hard] : quota.spec.hard) {
    const ResourceList& from = ServerOwned(quota, key) ? owned_used : quota.status.used;
    auto it = from.find(key);
    used.emplace(key, it != from.end() ? it->second : Quantity::FromInt64(0));
  }
  status.used = std::move(used);
  return status;
}

bool Synced(const corev1::ResourceQuota& quota, const std::vector<std::string>& keys) {
  if (!(quota.status.hard == quota.spec.hard)) return false;
  for (const std::string& key : keys) {
    if (quota.status.used.count(key) == 0) return false;
  }
  return true;
}

}  // namespace draplane::api::quota
