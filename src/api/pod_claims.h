// The ResourceClaims a Pod uses, by the rule of upstream resourceclaim.Name
// (k8s.io/dynamic-resource-allocation/resourceclaim): an entry of spec.resourceClaims names its
// claim (resourceClaimName) or gets one generated from a template, recorded by the claim
// controller in status.resourceClaimStatuses (an entry there without a name: no claim needed);
// the claim serving DRA-backed extended resources is in status.extendedResourceClaimStatus.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "common/status.h"

namespace draplane::api {

struct PodClaimRef {
  std::string entry;  // spec.resourceClaims[].name; empty for the extended-resource claim
  std::string claim;  // the ResourceClaim's name
};

// The claims of `pod`, in spec order, then the extended-resource claim. NotFound when a claim
// generated from a template is not recorded yet.
StatusOr<std::vector<PodClaimRef>> ResolvePodClaims(const corev1::Pod& pod);

}  // namespace draplane::api
