// The parts of upstream's Pod validation (pkg/apis/core/validation ValidatePodSpec) that the
// scheduler and the kubelet-facing flow depend on, on a Pod as JSON: containers present, with
// unique DNS-label names and an image; resource claim entries with unique names, each naming a
// claim or a template; each container's resources.claims naming an entry of
// spec.resourceClaims; the priority class name a DNS subdomain. Shared by the API server's pod
// strategy and the simulator, which creates trace Pods without going through the server.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>

#include "api/field_error.h"

namespace draplane::api::validation {

FieldErrorList ValidatePodSpec(const boost::json::object& pod);
// upstream ValidatePodUpdate's rules for spec.activeDeadlineSeconds, the one spec field with
// rules of its own on update: between 0 and 2^31-1, never raised, never removed once set.
FieldErrorList ValidatePodActiveDeadlineUpdate(const boost::json::object& pod,
                                               const boost::json::object& old);
// upstream validatePodResourceClaimStatuses (ValidatePodStatusUpdate): each
// status.resourceClaimStatuses entry names an entry of spec.resourceClaims, once, and a valid
// claim name; so a status write cannot attach a claim the Pod never asked for.
FieldErrorList ValidatePodResourceClaimStatuses(const boost::json::object& pod);

}  // namespace draplane::api::validation
