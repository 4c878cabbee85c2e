// Quota usage of objects: what creating an object costs against a ResourceQuota, the rules of
// upstream's quota evaluators (k8s.io/apiserver/pkg/quota/v1/generic and
// pkg/quota/v1/evaluator/core), shared by the API server's quota admission and its quota status
// controller (docs/design/quota.md), and by any tool that wants the same numbers.
//
//   ResourceClaims  pkg/quota/v1/evaluator/core/resource_claims.go: 1 for
//                   `count/resourceclaims.resource.k8s.io`; per request its count on
//                   `<class>.deviceclass.resource.k8s.io/devices` (`All`: 32, the most a result
//                   can hold; an unknown allocation mode: 0); a firstAvailable request charges,
//                   for every class named by its subrequests, the largest count among that
//                   class's subrequests; admin access is charged like any request.
//   Pods            pkg/quota/v1/evaluator/core/pods.go: `count/pods` always; while the Pod is
//                   not terminal, `pods` and its compute requests and limits (`cpu`,
//                   `requests.cpu`, `limits.cpu`, memory, ephemeral storage, hugepages,
//                   `requests.<extended resource>`), from its containers, init containers
//                   (sidecars add, others take the maximum) and overhead.
//   everything else `count/<resource>.<group>` (`count/<resource>` in the core group), and the
//                   legacy alias `resourcequotas` for ResourceQuota objects.
//
// Device quota modes (draplane): a quota annotated `draplane.dev/device-quota-mode: Allocation`
// has its device keys (`IsAllocationChargedKey`) charged from the actual allocation by the
// scheduler; admission and the quota controller then leave those keys alone.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "api/quantity.h"
#include "common/clock.h"

namespace draplane::api::quota {

// corev1.ResourceList: resource name -> quantity, sorted by name.
using ResourceList = std::map<std::string, Quantity, std::less<>>;

inline constexpr std::string_view kDeviceQuotaModeAnnotation = "draplane.dev/device-quota-mode";
inline constexpr std::string_view kDeviceQuotaModeAdmission = "Admission";
inline constexpr std::string_view kDeviceQuotaModeAllocation = "Allocation";

enum class DeviceQuotaMode { kAdmission, kAllocation };

// kAllocation when the quota carries the annotation with value "Allocation", else kAdmission
// (absent, or "Admission"; validation refuses other values).
DeviceQuotaMode ModeOf(const corev1::ResourceQuota& quota);

// corev1.ResourceClaimsPerClass.
inline constexpr std::string_view kDevicesPerClassSuffix = ".deviceclass.resource.k8s.io/devices";
// `<class>.deviceclass.resource.k8s.io/devices` (V1ResourceByDeviceClass).
std::string DeviceClassResourceName(std::string_view device_class);
// `count/<resource>.<group>`, `count/<resource>` for the core group
// (generic.ObjectCountQuotaResourceNameFor).
std::string ObjectCountResourceName(std::string_view group, std::string_view resource);

// Whether `key` is a device key that Allocation mode charges from the allocation: the upstream
// per-class key and draplane's keys in the `draplane.dev` domain
// (`<class>.deviceclass.draplane.dev/counter.<c>`, `<driver>.driver.draplane.dev/counter.<c>`,
// `<class>.deviceclass.draplane.dev/capacity.<c>`).
bool IsAllocationChargedKey(std::string_view key);

// The ResourceClaim evaluator's Usage and MatchingResources.
ResourceList ResourceClaimUsage(const resourcev1::ResourceClaim& claim);
bool ResourceClaimEvaluatorMatches(std::string_view key);

// The Pod evaluator's Usage (`now` decides whether a Pod stuck terminating past its grace period
// still counts, as upstream's QuotaV1Pod) and MatchingResources.
ResourceList PodUsage(const corev1::Pod& pod, Timestamp now);
bool PodEvaluatorMatches(std::string_view key);

// The object-count evaluator's usage of one object of (group, resource): 1 of
// `count/<resource>.<group>`, and of the legacy `resourcequotas` for a ResourceQuota.
ResourceList ObjectCountUsage(std::string_view group, std::string_view resource);

// Which evaluator applies to objects of a resource.
enum class Evaluator { kResourceClaims, kPods, kObjectCount };
Evaluator EvaluatorFor(std::string_view group, std::string_view resource);

// Whether `key` is a quota key the evaluator of (group, resource) charges
// (evaluator.MatchingResources for one name).
bool EvaluatorMatches(std::string_view group, std::string_view resource, std::string_view key);

// The operations quota admission sees.
enum class Operation { kCreate, kUpdate, kDelete, kConnect };
// Whether the evaluator of (group, resource) charges a request (evaluator.Handles): claims on
// create and update of the claim itself (no subresource), everything else on create only (Pod
// updates change no usage here: draplane has no in-place resize).
bool Handles(std::string_view group, std::string_view resource, Operation op,
             std::string_view subresource);

// Resources upstream's quota ignores (quota/v1/install DefaultIgnoredResources): events and the
// create-only review kinds never count.
bool IsIgnoredResource(std::string_view group, std::string_view resource);

// The scope selectors of a quota: `spec.scopes` as `Exists` requirements, then
// `spec.scopeSelector.matchExpressions` (getScopeSelectorsFromQuota).
std::vector<corev1::ScopedResourceSelectorRequirement> ScopeSelectors(
    const corev1::ResourceQuota& quota);

// Whether a Pod matches one scope requirement (podMatchesScopeFunc). Unknown scopes never match.
bool PodMatchesScope(const corev1::Pod& pod,
                     const corev1::ScopedResourceSelectorRequirement& selector);

// Whether a quota tracks an object (generic.Matches): the quota's hard keys include one the
// evaluator charges and every scope matches (only Pods match scopes; other objects never match
// a scoped quota). `pod` is the object when it is a Pod, else nullptr.
bool QuotaMatches(const corev1::ResourceQuota& quota, std::string_view group,
                  std::string_view resource, const corev1::Pod* pod);

// ResourceList arithmetic (quota.Add, quota.Subtract, quota.Mask).
ResourceList Add(const ResourceList& a, const ResourceList& b);
ResourceList Subtract(const ResourceList& a, const ResourceList& b);
// The entries of `list` whose names satisfy `keep`.
ResourceList Mask(const ResourceList& list, const std::function<bool(std::string_view)>& keep);
// "name=quantity,name=quantity" in name order (quota admission's prettyPrint).
std::string PrettyPrint(const ResourceList& list);

}  // namespace draplane::api::quota
