// ResourceQuota validation (upstream: pkg/apis/core/validation/validation.go ValidateResourceQuota
// and its helpers; pkg/apis/core/helper/helpers.go for the name sets).
#include "api/validation/quota_validation.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "api/gen/core_v1_codec.h"
#include "api/quota/usage.h"
#include "api/validation/internal/common.h"
#include "api/validation/internal/render.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using internal::Append;

constexpr std::string_view kInvalidQuotaResource = "must be a standard resource for quota";
constexpr std::string_view kNegative = "must be greater than or equal to 0";
constexpr std::string_view kNotInteger = "must be an integer";
constexpr std::string_view kExistsOnlyScopes =
    "must be 'Exist' only operator when scope is any of ResourceQuotaScopeTerminating, "
    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and "
    "ResourceQuotaScopeNotBestEffort";

bool In(std::string_view value, std::initializer_list<std::string_view> set) {
  for (std::string_view s : set) {
    if (s == value) return true;
  }
  return false;
}

// helper.IsStandardResourceName: names of resources known without a domain.
bool IsStandardResourceName(std::string_view name) {
  return In(name, {"cpu",
                   "memory",
                   "ephemeral-storage",
                   "requests.cpu",
                   "requests.memory",
                   "requests.ephemeral-storage",
                   "limits.cpu",
                   "limits.memory",
                   "limits.ephemeral-storage",
                   "pods",
                   "resourcequotas",
                   "services",
                   "replicationcontrollers",
                   "secrets",
                   "configmaps",
                   "persistentvolumeclaims",
                   "storage",
                   "requests.storage",
                   "services.nodeports",
                   "services.loadbalancers"}) ||
         IsQuotaHugePageResourceName(name);
}

// helper.IsResourceQuotaScopeValidForResource.
bool IsScopeValidForResource(std::string_view scope, std::string_view resource) {
  bool pod_count = resource == "pods";
  bool pod_compute = In(resource, {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                   "requests.memory"});
  if (In(scope, {"Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"})) {
    return pod_count || pod_compute;
  }
  if (scope == "BestEffort") return pod_count;
  if (scope == "VolumeAttributesClass") {
    return resource == "persistentvolumeclaims" || resource == "requests.storage";
  }
  return true;
}

// validateResourceName: a qualified name; without a domain, a standard resource.
FieldErrorList ValidateResourceName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs;
  for (std::string& msg : IsQualifiedName(name)) {
    errs.push_back(Invalid(path, RenderValue(name), std::move(msg)));
  }
  if (!errs.empty()) return errs;
  if (name.find('/') == std::string_view::npos && !IsStandardResourceName(name)) {
    errs.push_back(
        Invalid(path, RenderValue(name), "must be a standard resource type or fully qualified"));
  }
  return errs;
}

FieldErrorList ValidateResourceList(const std::map<std::string, Quantity, std::less<>>& list,
                                    const FieldPath& path) {
  FieldErrorList errs;
  for (const auto& [name, value] : list) {
    FieldPath key = path.Key(name);
    Append(errs, ValidateResourceQuotaResourceName(name, key));
    Append(errs, ValidateResourceQuantityValue(name, value, key));
  }
  return errs;
}

// The pairs of scopes that contradict each other.
bool Conflicting(const std::set<std::string, std::less<>>& scopes) {
  return (scopes.count("BestEffort") > 0 && scopes.count("NotBestEffort") > 0) ||
         (scopes.count("Terminating") > 0 && scopes.count("NotTerminating") > 0);
}

std::string RenderScopes(const std::vector<std::string>& scopes) {
  return internal::RenderStringList(scopes, true);
}

// validateResourceQuotaScopes
FieldErrorList ValidateScopes(const corev1::ResourceQuotaSpec& spec, const FieldPath& path) {
  FieldErrorList errs;
  if (spec.scopes.empty()) return errs;
  FieldPath scopes_path = path.Child("scopes");
  std::set<std::string, std::less<>> seen;
  for (const std::string& scope : spec.scopes) {
    if (!IsStandardResourceQuotaScope(scope)) {
      errs.push_back(Invalid(scopes_path, RenderScopes(spec.scopes), "unsupported scope"));
    }
    for (const auto& [name, value] : spec.hard) {
      if (IsStandardQuotaResourceName(name) && !IsScopeValidForResource(scope, name)) {
        errs.push_back(Invalid(scopes_path, RenderScopes(spec.scopes),
                               "unsupported scope applied to resource"));
      }
    }
    seen.insert(scope);
  }
  if (Conflicting(seen)) {
    errs.push_back(Invalid(scopes_path, RenderScopes(spec.scopes), "conflicting scopes"));
  }
  return errs;
}

// validateScopeSelector / validateScopedResourceSelectorRequirement
FieldErrorList ValidateScopeSelector(const corev1::ResourceQuotaSpec& spec, const FieldPath& path) {
  FieldErrorList errs;
  if (!spec.scope_selector.has_value()) return errs;
  FieldPath exprs_path = path.Child("scopeSelector").Child("matchExpressions");
  std::set<std::string, std::less<>> seen;
  for (const corev1::ScopedResourceSelectorRequirement& req :
       spec.scope_selector->match_expressions) {
    if (!IsStandardResourceQuotaScope(req.scope_name)) {
      errs.push_back(
          Invalid(exprs_path.Child("scopeName"), RenderValue(req.scope_name), "unsupported scope"));
    }
    for (const auto& [name, value] : spec.hard) {
      if (IsStandardQuotaResourceName(name) && !IsScopeValidForResource(req.scope_name, name)) {
        errs.push_back(Invalid(exprs_path, internal::RenderJson(Encode(*spec.scope_selector)),
                               "unsupported scope applied to resource"));
      }
    }
    if (In(req.scope_name, {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating"}) &&
        req.operator_ != "Exists") {
      errs.push_back(Invalid(exprs_path.Child("operator"), RenderValue(req.operator_),
                             std::string(kExistsOnlyScopes)));
    }
    if (req.operator_ == "In" || req.operator_ == "NotIn") {
      if (req.values.empty()) {
        errs.push_back(Required(
            exprs_path.Child("values"),
            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"));
      }
    } else if (req.operator_ == "Exists" || req.operator_ == "DoesNotExist") {
      if (!req.values.empty()) {
        errs.push_back(Invalid(
            exprs_path.Child("values"), internal::RenderStringList(req.values, true),
            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"));
      }
    } else {
      errs.push_back(Invalid(exprs_path.Child("operator"), RenderValue(req.operator_),
                             "not a valid selector operator"));
    }
    seen.insert(req.scope_name);
  }
  if (Conflicting(seen)) {
    errs.push_back(Invalid(exprs_path, RenderScopes(spec.scopes), "conflicting scopes"));
  }
  return errs;
}

FieldErrorList ValidateSpec(const corev1::ResourceQuotaSpec& spec, const FieldPath& path) {
  FieldErrorList errs = ValidateResourceList(spec.hard, path.Child("hard"));
  Append(errs, ValidateScopes(spec, path));
  Append(errs, ValidateScopeSelector(spec, path));
  return errs;
}

// draplane's device quota mode annotation (api/quota/usage.h): Admission or Allocation. A quota
// with scopes cannot charge devices by allocation: scopes select Pods, and devices are charged
// to ResourceClaims, which a scoped quota never matches (as upstream's claim evaluator). Without
// this rule the scheduler would charge every claim of the namespace to it.
FieldErrorList ValidateMode(const corev1::ResourceQuota& quota) {
  auto it = quota.metadata.annotations.find(quota::kDeviceQuotaModeAnnotation);
  if (it == quota.metadata.annotations.end() || it->second == quota::kDeviceQuotaModeAdmission) {
    return {};
  }
  FieldPath path = FieldPath("metadata").Child("annotations").Key(it->first);
  if (it->second != quota::kDeviceQuotaModeAllocation) {
    return {NotSupported(path, RenderValue(it->second),
                         {std::string(quota::kDeviceQuotaModeAdmission),
                          std::string(quota::kDeviceQuotaModeAllocation)})};
  }
  const bool charges_devices =
      std::any_of(quota.spec.hard.begin(), quota.spec.hard.end(),
                  [](const auto& entry) { return quota::IsAllocationChargedKey(entry.first); });
  if (charges_devices && !quota::ScopeSelectors(quota).empty()) {
    return {Invalid(path, RenderValue(it->second),
                    "a quota with scopes cannot charge devices by allocation: scopes select Pods "
                    "and devices are charged to ResourceClaims")};
  }
  return {};
}

FieldErrorList ValidateStatus(const corev1::ResourceQuotaStatus& status, const FieldPath& path) {
  FieldErrorList errs = ValidateResourceList(status.hard, path.Child("hard"));
  Append(errs, ValidateResourceList(status.used, path.Child("used")));
  return errs;
}

}  // namespace

bool IsStandardQuotaResourceName(std::string_view name) {
  return In(name, {"cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                   "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
                   "limits.ephemeral-storage", "pods", "resourcequotas", "services",
                   "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
                   "services.nodeports", "services.loadbalancers"}) ||
         IsQuotaHugePageResourceName(name);
}

bool IsIntegerResourceName(std::string_view name) {
  return In(name, {"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                   "configmaps", "persistentvolumeclaims", "services.nodeports",
                   "services.loadbalancers"}) ||
         IsExtendedResourceName(name);
}

bool IsQuotaHugePageResourceName(std::string_view name) {
  return name.starts_with("hugepages-") || name.starts_with("requests.hugepages-");
}

bool IsStandardResourceQuotaScope(std::string_view scope) {
  return In(scope, {"Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                    "CrossNamespacePodAffinity", "VolumeAttributesClass"});
}

FieldErrorList ValidateResourceQuotaResourceName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs = ValidateResourceName(name, path);
  if (name.find('/') == std::string_view::npos && !IsStandardQuotaResourceName(name)) {
    errs.push_back(Invalid(path, RenderValue(name), std::string(kInvalidQuotaResource)));
  }
  return errs;
}

FieldErrorList ValidateResourceQuantityValue(std::string_view name, const Quantity& value,
                                             const FieldPath& path) {
  FieldErrorList errs;
  if (value.Sign() < 0) {
    errs.push_back(Invalid(path, RenderValue(value.ToString()), std::string(kNegative)));
  }
  if (IsIntegerResourceName(name) && !value.IsInteger()) {
    errs.push_back(Invalid(path, internal::RenderQuantity(value), std::string(kNotInteger)));
  }
  return errs;
}

FieldErrorList ValidateResourceQuota(const corev1::ResourceQuota& quota) {
  FieldErrorList errs = ValidateObjectMeta(quota.metadata, /*namespaced=*/true, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  Append(errs, ValidateMode(quota));
  Append(errs, ValidateSpec(quota.spec, FieldPath("spec")));
  Append(errs, ValidateStatus(quota.status, FieldPath("status")));
  return errs;
}

FieldErrorList ValidateResourceQuotaUpdate(const corev1::ResourceQuota& quota,
                                           const corev1::ResourceQuota& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(quota.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateMode(quota));
  Append(errs, ValidateSpec(quota.spec, FieldPath("spec")));
  std::set<std::string> scopes(quota.spec.scopes.begin(), quota.spec.scopes.end());
  std::set<std::string> old_scopes(old.spec.scopes.begin(), old.spec.scopes.end());
  if (scopes != old_scopes) {
    errs.push_back(Invalid(FieldPath("spec").Child("scopes"), RenderScopes(quota.spec.scopes),
                           "field is immutable"));
  }
  return errs;
}

FieldErrorList ValidateResourceQuotaStatusUpdate(const corev1::ResourceQuota& quota,
                                                 const corev1::ResourceQuota& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(quota.metadata, old.metadata, FieldPath("metadata"));
  if (quota.metadata.resource_version.empty()) {
    errs.push_back(Required(FieldPath("resourceVersion")));
  }
  Append(errs, ValidateStatus(quota.status, FieldPath("status")));
  return errs;
}

}  // namespace draplane::api::validation
