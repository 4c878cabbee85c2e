// ResourceClaim rules that several components apply (the scheduler's DynamicResources plugin,
// the resourceclaim controller, the node agent), written once:
//
//   the finalizer    `resource.kubernetes.io/delete-protection` (resourceapi.Finalizer): whoever
//                    allocates a claim adds it, and whoever deallocates removes it again, and
//                    only it (other controllers' finalizers are theirs to remove);
//   deallocation     the allocation goes together with `status.devices`, the drivers' status of
//                    the allocated devices (upstream's status strategy drops the entries of
//                    deallocated devices, dropDeallocatedStatusDevices; clearing them here keeps
//                    a client's view right before the server answers); a claim that nobody may
//                    use any more also loses its reservations;
//   reservations     status.reservedFor entries of Pods (upstream resourceclaim.IsReservedForPod);
//                    at most kResourceClaimReservedForMaxSize (api/validation/validation.h).
//
// Thread-safety: pure functions on values the caller owns.
#pragma once

#include <string_view>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::api {

// resourceapi.Finalizer.
inline constexpr std::string_view kClaimFinalizer = "resource.kubernetes.io/delete-protection";

bool HasClaimFinalizer(const resourcev1::ResourceClaim& claim);
// Adds kClaimFinalizer unless present. True when it was added.
bool AddClaimFinalizer(resourcev1::ResourceClaim* claim);
// Removes kClaimFinalizer, leaving every other finalizer in place. True when it was there.
bool RemoveClaimFinalizer(resourcev1::ResourceClaim* claim);

// Clears status.allocation and status.devices; reservations stay.
void ClearAllocation(resourcev1::ResourceClaimStatus* status);
// ClearAllocation, and status.reservedFor emptied too.
void ClearAllocationAndReservations(resourcev1::ResourceClaimStatus* status);

// The status.reservedFor entry of a Pod.
resourcev1::ResourceClaimConsumerReference PodConsumerReference(const corev1::Pod& pod);
// Whether `claim` is reserved for `pod` (an entry of the core group's pods with the pod's uid).
bool IsReservedForPod(const corev1::Pod& pod, const resourcev1::ResourceClaim& claim);
// Removes the reservations of the consumer with `uid`. True when one was removed.
bool RemoveReservation(resourcev1::ResourceClaimStatus* status, std::string_view uid);

}  // namespace draplane::api
