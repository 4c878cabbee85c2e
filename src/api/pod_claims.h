// The ResourceClaims a Pod uses, by the rule of upstream resourceclaim.Name
// (k8s.io/dynamic-resource-allocation/resourceclaim): an entry of spec.resourceClaims names its
// claim (resourceClaimName) or gets one generated from a template, recorded by the claim
// controller in status.resourceClaimStatuses (an entry there without a name: no claim needed);
// the claim serving DRA-backed extended resources is in status.extendedResourceClaimStatus. A
// template's claim must be controlled by the Pod (upstream resourceclaim.IsForPod), so a status
// entry never makes a Pod the user of a claim that was not generated for it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::api {

struct PodClaimRef {
  std::string entry;  // spec.resourceClaims[].name; empty for the extended-resource claim
  std::string claim;  // the ResourceClaim's name
};

// The claims of `pod`, in spec order, then the extended-resource claim. NotFound when a claim
// generated from a template is not recorded yet.
StatusOr<std::vector<PodClaimRef>> ResolvePodClaims(const corev1::Pod& pod);

// upstream resourceclaim.Name for one spec.resourceClaims entry: its claim's name, or why there
// is none.
struct PodClaimName {
  std::string name;               // empty when `error` is set or no claim was generated (skip)
  bool must_check_owner = false;  // a template's claim: it must pass IsForPod
  std::string error;              // "ResourceClaim not created yet" etc.
  bool skip = false;              // the template produced no claim (status entry without a name)
};
PodClaimName ClaimNameForPod(const corev1::Pod& pod, const corev1::PodResourceClaim& entry);
// upstream resourceclaim.IsForPod: whether `claim`'s controller is `pod` (by uid, same namespace).
bool IsForPod(const corev1::Pod& pod, const resourcev1::ResourceClaim& claim);

}  // namespace draplane::api
