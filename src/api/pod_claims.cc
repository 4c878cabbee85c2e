#include "api/pod_claims.h"

namespace draplane::api {

StatusOr<std::vector<PodClaimRef>> ResolvePodClaims(const corev1::Pod& pod) {
  std::vector<PodClaimRef> out;
  for (const corev1::PodResourceClaim& ref : pod.spec.resource_claims) {
    PodClaimName claim = ClaimNameForPod(pod, ref);
    if (!claim.error.empty()) {
      return NotFoundError("the claim for " + ref.name + " has not been created yet");
    }
    if (!claim.skip) out.push_back({ref.name, claim.name});
  }
  if (pod.status.extended_resource_claim_status &&
      !pod.status.extended_resource_claim_status->resource_claim_name.empty()) {
    out.push_back({"", pod.status.extended_resource_claim_status->resource_claim_name});
  }
  return out;
}

PodClaimName ClaimNameForPod(const corev1::Pod& pod, const corev1::PodResourceClaim& entry) {
  PodClaimName out;
  if (entry.resource_claim_name.has_value()) {
    out.name = *entry.resource_claim_name;
    return out;
  }
  const std::string pod_key = pod.metadata.namespace_ + "/" + pod.metadata.name;
  if (entry.resource_claim_template_name.has_value()) {
    for (const corev1::PodResourceClaimStatus& s : pod.status.resource_claim_statuses) {
      if (s.name != entry.name) continue;
      if (!s.resource_claim_name.has_value()) {
        out.skip = true;
        return out;
      }
      out.name = *s.resource_claim_name;
      out.must_check_owner = true;
      return out;
    }
    out.error = "pod \"" + pod_key + "\": ResourceClaim not created yet";
    return out;
  }
  out.error = "pod \"" + pod_key + "\", spec.resourceClaim \"" + entry.name +
              "\": unsupported ResourceClaim source";
  return out;
}

bool IsForPod(const corev1::Pod& pod, const resourcev1::ResourceClaim& claim) {
  if (claim.metadata.namespace_ != pod.metadata.namespace_) return false;
  for (const metav1::OwnerReference& owner : claim.metadata.owner_references) {
    if (owner.controller.value_or(false)) return owner.uid == pod.metadata.uid;
  }
  return false;
}

}  // namespace draplane::api
