// KEP-4680, resource health in Pod status (GA in 1.37; beta and on in 1.36 behind
// ResourceHealthStatus): status.containerStatuses[].allocatedResourcesStatus, the health of each
// device a container got through its resource claims, as the kubelet reports it:
//
//   allocatedResourcesStatus:
//   - name: claim:<pod claim>/<request>           # or claim:<pod claim> (a container's
//     resources:                                  # resources.claims entry without a request)
//     - {resourceID: <driver>/<pool>/<device>, health: Healthy | Unhealthy | Unknown}
//
// The node agent and the kubelet simulator write it (AllocatedResourcesStatus +
// SetAllocatedResourcesStatus); the API server validates it (ValidateAllocatedResourcesStatus,
// upstream validateContainerStatusAllocatedResourcesStatus). Container statuses are not part of
// the generated Pod model, so this works on their JSON.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::api {

inline constexpr std::string_view kResourceHealthy = "Healthy";
inline constexpr std::string_view kResourceUnhealthy = "Unhealthy";
inline constexpr std::string_view kResourceHealthUnknown = "Unknown";

// The health of a device: kResourceHealthy, kResourceUnhealthy or kResourceHealthUnknown.
using DeviceHealthFn = std::function<std::string_view(
    std::string_view driver, std::string_view pool, std::string_view device)>;

// The allocatedResourcesStatus of every container (and init container) of `pod`, by container
// name: one entry per resources.claims entry whose pod claim (`claims`, by
// spec.resourceClaims[].name) is allocated, listing that request's devices in allocation order
// (all of the claim's devices when the entry names no request; a request's subrequests count as
// the request). Containers without such entries are absent.
std::map<std::string, boost::json::array> AllocatedResourcesStatus(
    const corev1::Pod& pod, const std::map<std::string, const resourcev1::ResourceClaim*>& claims,
    const DeviceHealthFn& health);

// Sets allocatedResourcesStatus of each entry of `container_statuses` (status.containerStatuses
// or initContainerStatuses as JSON) to its container's entry of `desired`, removing it where
// `desired` has none. True when something changed.
bool SetAllocatedResourcesStatus(boost::json::array& container_statuses,
                                 const std::map<std::string, boost::json::array>& desired);

// The field errors of the allocatedResourcesStatus of `pod` (its JSON), as the API server
// validates a status update (upstream validateContainerStatusAllocatedResourcesStatus): each
// entry of a container in the spec names one of the container's resources.claims entries
// ("claim:<name>" or "claim:<name>/<request>") or, for device plugins, one of its resource
// requests; health is Healthy, Unhealthy or Unknown; resourceIDs are unique per entry.
FieldErrorList ValidateAllocatedResourcesStatus(const boost::json::object& pod);

}  // namespace draplane::api
