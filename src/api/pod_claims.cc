#include "api/pod_claims.h"

namespace draplane::api {

StatusOr<std::vector<PodClaimRef>> ResolvePodClaims(const corev1::Pod& pod) {
  std::vector<PodClaimRef> out;
  for (const corev1::PodResourceClaim& ref : pod.spec.resource_claims) {
    if (ref.resource_claim_name) {
      out.push_back({ref.name, *ref.resource_claim_name});
      continue;
    }
    bool found = false;
    for (const corev1::PodResourceClaimStatus& status : pod.status.resource_claim_statuses) {
      if (status.name != ref.name) continue;
      found = true;
      if (status.resource_claim_name) out.push_back({ref.name, *status.resource_claim_name});
    }
    if (!found) return NotFoundError("the claim for " + ref.name + " has not been created yet");
  }
  if (pod.status.extended_resource_claim_status &&
      !pod.status.extended_resource_claim_status->resource_claim_name.empty()) {
    out.push_back({"", pod.status.extended_resource_claim_status->resource_claim_name});
  }
  return out;
}

}  // namespace draplane::api
