#include "api/resource_claims.h"

#include <algorithm>

namespace draplane::api {

bool HasClaimFinalizer(const resourcev1::ResourceClaim& claim) {
  const std::vector<std::string>& f = claim.metadata.finalizers;
  return std::find(f.begin(), f.end(), kClaimFinalizer) != f.end();
}

bool AddClaimFinalizer(resourcev1::ResourceClaim* claim) {
  if (HasClaimFinalizer(*claim)) return false;
  claim->metadata.finalizers.emplace_back(kClaimFinalizer);
  return true;
}

bool RemoveClaimFinalizer(resourcev1::ResourceClaim* claim) {
  return std::erase(claim->metadata.finalizers, kClaimFinalizer) > 0;
}

void ClearAllocation(resourcev1::ResourceClaimStatus* status) {
  status->allocation.reset();
  status->devices.clear();
}

void ClearAllocationAndReservations(resourcev1::ResourceClaimStatus* status) {
  ClearAllocation(status);
  status->reserved_for.clear();
}

resourcev1::ResourceClaimConsumerReference PodConsumerReference(const corev1::Pod& pod) {
  resourcev1::ResourceClaimConsumerReference ref;
  ref.resource = "pods";
  ref.name = pod.metadata.name;
  ref.uid = pod.metadata.uid;
  return ref;
}

bool IsReservedForPod(const corev1::Pod& pod, const resourcev1::ResourceClaim& claim) {
  return std::any_of(claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
                     [&](const resourcev1::ResourceClaimConsumerReference& r) {
                       return r.resource == "pods" && r.api_group.empty() &&
                              r.uid == pod.metadata.uid;
                     });
}

bool RemoveReservation(resourcev1::ResourceClaimStatus* status, std::string_view uid) {
  return std::erase_if(
             status->reserved_for,
             [&](const resourcev1::ResourceClaimConsumerReference& r) { return r.uid == uid; }) > 0;
}

}  // namespace draplane::api
