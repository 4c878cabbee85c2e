// The client's view of scheduling.k8s.io/v1 (PriorityClass): its ResourceType (defined with the
// others in resource.cc, listed in KnownResources()) and its codec, so that client::Get / List
// and informers work on it. Kept apart from resource.h because only the simulator reads classes.
#pragma once

#include "api/gen/scheduling_v1_codec.h"
#include "api/gen/scheduling_v1_types.h"
#include "client/resource.h"

namespace draplane::client {

template <>
const ResourceType& ResourceOf<api::schedulingv1::PriorityClass>();

}  // namespace draplane::client
