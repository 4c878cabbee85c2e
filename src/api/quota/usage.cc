#include "api/quota/usage.h"

#include <algorithm>
#include <boost/json.hpp>

#include "api/validation/names.h"
#include "api/validation/quota_validation.h"
#include "common/saturating.h"

namespace draplane::api::quota {
namespace {

// resourceapi.AllocationResultsMaxSize: what an `All` request is charged ("Worst case...").
constexpr int64_t kAllocationResultsMaxSize = 32;

Quantity Count(int64_t n) { return Quantity::FromInt64(n); }

// The devices one request (or subrequest) may get, by allocation mode.
int64_t DevicesOf(std::string_view mode, int64_t count) {
  if (mode == resourcev1::kDeviceAllocationModeExactCount) return count;
  if (mode == resourcev1::kDeviceAllocationModeAll) return kAllocationResultsMaxSize;
  return 0;  // an unknown mode (after a downgrade) is not charged
}

void AddTo(ResourceList& list, const std::string& key, const Quantity& q) {
  auto it = list.find(key);
  if (it == list.end()) {
    list.emplace(key, q);
  } else {
    it->second = it->second.Add(q);
  }
}

bool IsTerminal(const corev1::Pod& pod) {
  return pod.status.phase == corev1::kPodPhaseFailed ||
         pod.status.phase == corev1::kPodPhaseSucceeded;
}

// QuotaV1Pod: terminal Pods and Pods stuck terminating past their grace period are not charged
// compute resources.
bool ChargesCompute(const corev1::Pod& pod, Timestamp now) {
  if (IsTerminal(pod)) return false;
  const metav1::ObjectMeta& meta = pod.metadata;
  if (meta.deletion_timestamp.has_value() && meta.deletion_grace_period_seconds.has_value()) {
    Timestamp end =
        AddSeconds(meta.deletion_timestamp->ToTimestamp(), *meta.deletion_grace_period_seconds);
    if (now > end) return false;
  }
  return true;
}

// resourcehelper.PodRequests / PodLimits: containers add up; an init container runs alone, so
// the Pod needs at least its amount (plus the sidecars started before it); sidecars (init
// containers with restartPolicy Always) keep running and add to everything after them; the
// Pod's overhead adds to the requests and to the limits that are set. Requests not given default to
// the limits, as the API server defaults a container's requests.
ResourceList PodResources(const corev1::Pod& pod, bool limits) {
  auto of = [limits](const corev1::Container& c) {
    ResourceList out = limits ? c.resources.limits : c.resources.requests;
    if (!limits) {
      for (const auto& [name, q] : c.resources.limits) out.emplace(name, q);
    }
    return out;
  };
  ResourceList sum;
  for (const corev1::Container& c : pod.spec.containers) sum = Add(sum, of(c));
  ResourceList init_max;
  ResourceList sidecars;
  for (const corev1::Container& c : pod.spec.init_containers) {
    ResourceList own = of(c);
    if (c.restart_policy.has_value() && *c.restart_policy == "Always") {
      sidecars = Add(sidecars, own);
      sum = Add(sum, own);
      continue;
    }
    ResourceList needed = Add(own, sidecars);
    for (const auto& [name, q] : needed) {
      auto it = init_max.find(name);
      if (it == init_max.end() || q.Compare(it->second) > 0) init_max[name] = q;
    }
  }
  for (const auto& [name, q] : init_max) {
    auto it = sum.find(name);
    if (it == sum.end() || q.Compare(it->second) > 0) sum[name] = q;
  }
  // Overhead adds to every request, and to the limits that are set.
  for (const auto& [name, q] : pod.spec.overhead) {
    auto it = sum.find(name);
    if (it != sum.end()) {
      it->second = it->second.Add(q);
    } else if (!limits) {
      sum.emplace(name, q);
    }
  }
  return sum;
}

bool IsBestEffort(const corev1::Pod& pod) {
  for (const auto* list : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (const corev1::Container& c : *list) {
      for (const auto* m : {&c.resources.requests, &c.resources.limits}) {
        if (m->count("cpu") > 0 || m->count("memory") > 0) return false;
      }
    }
  }
  return true;
}

// usesCrossNamespacePodAffinity: a pod (anti-)affinity term with namespaces or a
// namespaceSelector. Pod affinity is kept unmodelled in the affinity's unknown fields.
bool UsesCrossNamespacePodAffinity(const corev1::Pod& pod) {
  if (!pod.spec.affinity.has_value()) return false;
  const boost::json::object* fields = pod.spec.affinity->unknown.fields();
  if (fields == nullptr) return false;
  for (std::string_view kind : {"podAffinity", "podAntiAffinity"}) {
    const boost::json::value* affinity = fields->if_contains(kind);
    if (affinity == nullptr || !affinity->is_object()) continue;
    for (const auto& list : affinity->get_object()) {
      if (!list.value().is_array()) continue;
      for (const boost::json::value& term : list.value().get_array()) {
        if (!term.is_object()) continue;
        // preferred terms nest the term under podAffinityTerm.
        const boost::json::object* t = &term.get_object();
        if (const boost::json::value* inner = t->if_contains("podAffinityTerm");
            inner != nullptr && inner->is_object()) {
          t = &inner->get_object();
        }
        const boost::json::value* namespaces = t->if_contains("namespaces");
        if (namespaces != nullptr && namespaces->is_array() && !namespaces->get_array().empty()) {
          return true;
        }
        const boost::json::value* selector = t->if_contains("namespaceSelector");
        if (selector != nullptr && !selector->is_null()) return true;
      }
    }
  }
  return false;
}

}  // namespace

DeviceQuotaMode ModeOf(const corev1::ResourceQuota& quota) {
  auto it = quota.metadata.annotations.find(kDeviceQuotaModeAnnotation);
  if (it != quota.metadata.annotations.end() && it->second == kDeviceQuotaModeAllocation) {
    return DeviceQuotaMode::kAllocation;
  }
  return DeviceQuotaMode::kAdmission;
}

std::string DeviceClassResourceName(std::string_view device_class) {
  return std::string(device_class) + std::string(kDevicesPerClassSuffix);
}

std::string ObjectCountResourceName(std::string_view group, std::string_view resource) {
  std::string out = "count/" + std::string(resource);
  if (!group.empty()) out += "." + std::string(group);
  return out;
}

bool IsAllocationChargedKey(std::string_view key) {
  if (key.ends_with(kDevicesPerClassSuffix)) return true;
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view domain = key.substr(0, slash);
  return domain.ends_with(".deviceclass.draplane.dev") || domain.ends_with(".driver.draplane.dev");
}

ResourceList ResourceClaimUsage(const resourcev1::ResourceClaim& claim) {
  ResourceList result;
  result.emplace(ObjectCountResourceName("resource.k8s.io", "resourceclaims"), Count(1));
  for (const resourcev1::DeviceRequest& request : claim.spec.devices.requests) {
    if (!request.first_available.empty()) {
      // The worst case per class: the largest count any subrequest of that class may get.
      std::map<std::string, int64_t, std::less<>> max_by_class;
      for (const resourcev1::DeviceSubRequest& sub : request.first_available) {
        int64_t n = DevicesOf(sub.allocation_mode, sub.count);
        std::string key = DeviceClassResourceName(sub.device_class_name);
        auto [it, inserted] = max_by_class.emplace(key, n);
        if (!inserted) it->second = std::max(it->second, n);
      }
      for (const auto& [key, n] : max_by_class) AddTo(result, key, Count(n));
      continue;
    }
    if (!request.exactly.has_value()) continue;
    const resourcev1::ExactDeviceRequest& exactly = *request.exactly;
    AddTo(result, DeviceClassResourceName(exactly.device_class_name),
          Count(DevicesOf(exactly.allocation_mode, exactly.count)));
  }
  return result;
}

bool ResourceClaimEvaluatorMatches(std::string_view key) {
  return key == ObjectCountResourceName("resource.k8s.io", "resourceclaims") ||
         key.ends_with(kDevicesPerClassSuffix);
}

ResourceList PodUsage(const corev1::Pod& pod, Timestamp now) {
  ResourceList result;
  result.emplace("count/pods", Count(1));
  if (!ChargesCompute(pod, now)) return result;
  result.emplace("pods", Count(1));
  ResourceList requests = PodResources(pod, false);
  ResourceList limits = PodResources(pod, true);
  // podComputeUsageHelper
  for (std::string_view name : {"cpu", "memory", "ephemeral-storage"}) {
    if (auto it = requests.find(name); it != requests.end()) {
      result[std::string(name)] = it->second;
      result["requests." + std::string(name)] = it->second;
    }
    if (auto it = limits.find(name); it != limits.end()) {
      result["limits." + std::string(name)] = it->second;
    }
  }
  for (const auto& [name, q] : requests) {
    if (name.starts_with("hugepages-")) {
      result[name] = q;
      result["requests." + name] = q;
    }
    if (validation::IsExtendedResourceName(name)) result["requests." + name] = q;
  }
  return result;
}

bool PodEvaluatorMatches(std::string_view key) {
  static constexpr std::string_view kNames[] = {"count/pods",
                                                "pods",
                                                "cpu",
                                                "memory",
                                                "ephemeral-storage",
                                                "requests.cpu",
                                                "requests.memory",
                                                "requests.ephemeral-storage",
                                                "limits.cpu",
                                                "limits.memory",
                                                "limits.ephemeral-storage"};
  for (std::string_view n : kNames) {
    if (key == n) return true;
  }
  if (validation::IsQuotaHugePageResourceName(key)) return true;
  // requests.<extended resource>
  return key.starts_with("requests.") &&
         validation::IsExtendedResourceName(key.substr(std::string_view("requests.").size()));
}

ResourceList ObjectCountUsage(std::string_view group, std::string_view resource) {
  ResourceList usage;
  usage.emplace(ObjectCountResourceName(group, resource), Count(1));
  if (group.empty() && resource == "resourcequotas") usage.emplace("resourcequotas", Count(1));
  return usage;
}

Evaluator EvaluatorFor(std::string_view group, std::string_view resource) {
  if (group == "resource.k8s.io" && resource == "resourceclaims") return Evaluator::kResourceClaims;
  if (group.empty() && resource == "pods") return Evaluator::kPods;
  return Evaluator::kObjectCount;
}

bool EvaluatorMatches(std::string_view group, std::string_view resource, std::string_view key) {
  switch (EvaluatorFor(group, resource)) {
    case Evaluator::kResourceClaims:
      return ResourceClaimEvaluatorMatches(key);
    case Evaluator::kPods:
      return PodEvaluatorMatches(key);
    case Evaluator::kObjectCount:
      break;
  }
  if (key == ObjectCountResourceName(group, resource)) return true;
  // The legacy object count alias of ResourceQuota (install/registry.go).
  return group.empty() && resource == "resourcequotas" && key == "resourcequotas";
}

bool Handles(std::string_view group, std::string_view resource, Operation op,
             std::string_view subresource) {
  if (!subresource.empty()) return false;
  if (EvaluatorFor(group, resource) == Evaluator::kResourceClaims) {
    return op == Operation::kCreate || op == Operation::kUpdate;
  }
  return op == Operation::kCreate;
}

bool IsIgnoredResource(std::string_view group, std::string_view resource) {
  if (resource == "events" && (group.empty() || group == "events.k8s.io")) return true;
  return group == "authentication.k8s.io" || group == "authorization.k8s.io" ||
         resource == "bindings";
}

std::vector<corev1::ScopedResourceSelectorRequirement> ScopeSelectors(
    const corev1::ResourceQuota& quota) {
  std::vector<corev1::ScopedResourceSelectorRequirement> out;
  for (const std::string& scope : quota.spec.scopes) {
    corev1::ScopedResourceSelectorRequirement req;
    req.scope_name = scope;
    req.operator_ = std::string(corev1::kScopeSelectorOperatorExists);
    out.push_back(std::move(req));
  }
  if (quota.spec.scope_selector.has_value()) {
    for (const auto& req : quota.spec.scope_selector->match_expressions) out.push_back(req);
  }
  return out;
}

bool PodMatchesScope(const corev1::Pod& pod,
                     const corev1::ScopedResourceSelectorRequirement& selector) {
  const std::string& scope = selector.scope_name;
  bool terminating =
      pod.spec.active_deadline_seconds.has_value() && *pod.spec.active_deadline_seconds >= 0;
  if (scope == corev1::kResourceQuotaScopeTerminating) return terminating;
  if (scope == corev1::kResourceQuotaScopeNotTerminating) return !terminating;
  if (scope == corev1::kResourceQuotaScopeBestEffort) return IsBestEffort(pod);
  if (scope == corev1::kResourceQuotaScopeNotBestEffort) return !IsBestEffort(pod);
  if (scope == corev1::kResourceQuotaScopeCrossNamespacePodAffinity) {
    return UsesCrossNamespacePodAffinity(pod);
  }
  if (scope == corev1::kResourceQuotaScopePriorityClass) {
    const std::string& value = pod.spec.priority_class_name;
    const std::string& op = selector.operator_;
    // Exists only asks for a priority class; the other operators match a label set in which the
    // `PriorityClass` key is always present (podMatchesSelector).
    if (op == corev1::kScopeSelectorOperatorExists) return !value.empty();
    bool listed =
        std::find(selector.values.begin(), selector.values.end(), value) != selector.values.end();
    if (op == corev1::kScopeSelectorOperatorIn) return listed;
    if (op == corev1::kScopeSelectorOperatorNotIn) return !listed;
    return false;  // DoesNotExist: the key is always there
  }
  return false;
}

bool QuotaMatches(const corev1::ResourceQuota& quota, std::string_view group,
                  std::string_view resource, const corev1::Pod* pod) {
  for (const corev1::ScopedResourceSelectorRequirement& selector : ScopeSelectors(quota)) {
    if (pod == nullptr || !PodMatchesScope(*pod, selector)) return false;
  }
  for (const auto& [key, hard] : quota.spec.hard) {
    if (EvaluatorMatches(group, resource, key)) return true;
  }
  return false;
}

ResourceList Add(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (const auto& [name, q] : b) AddTo(out, name, q);
  return out;
}

ResourceList Subtract(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (const auto& [name, q] : b) {
    auto it = out.find(name);
    if (it == out.end()) {
      out.emplace(name, q.Neg());
    } else {
      it->second = it->second.Sub(q);
    }
  }
  return out;
}

ResourceList Mask(const ResourceList& list, const std::function<bool(std::string_view)>& keep) {
  ResourceList out;
  for (const auto& [name, q] : list) {
    if (keep(name)) out.emplace(name, q);
  }
  return out;
}

std::string PrettyPrint(const ResourceList& list) {
  std::string out;
  for (const auto& [name, q] : list) {
    if (!out.empty()) out += ",";
    out += name + "=" + q.ToString();
  }
  return out;
}

}  // namespace draplane::api::quota
