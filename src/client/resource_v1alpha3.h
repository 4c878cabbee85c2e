// The client's view of resource.k8s.io/v1alpha3 (ResourcePoolStatusRequest, KEP-5677): its
// ResourceType (defined with the others in resource.cc, listed in KnownResources()) and its codec,
// so that client::Get / List / UpdateStatus and informers work on it. Kept apart from
// resource.h because only the pool status controller and `draplane pools` use the alpha group.
#pragma once

#include "api/gen/resource_v1alpha3_codec.h"
#include "api/gen/resource_v1alpha3_types.h"
#include "client/resource.h"

namespace draplane::client {

template <>
const ResourceType& ResourceOf<api::resourcev1alpha3::ResourcePoolStatusRequest>();

}  // namespace draplane::client
