// The quantities of the kinds the API server stores as sent (Pods and Nodes, not re-encoded
// through the typed model) in the form kube-apiserver stores them: Go's resource.Quantity keeps
// only the value, so a container's `cpu: 0.5` is read back as "500m", `memory: 1024Mi` as "1Gi"
// and `nvidia.com/gpu: 1` as the string "1" (Quantity::ForgetWrittenForm). The typed kinds get
// the same through DecodeOptions::canonical_quantities.
//
// A value that is not a valid quantity is left as it is (validation reports it).
//
// Thread-safety: pure functions on values the caller owns.
#pragma once

#include <boost/json/object.hpp>

namespace draplane::api {

// spec.{containers,initContainers,ephemeralContainers}[].resources.{limits,requests} and their
// env[].valueFrom.resourceFieldRef.divisor, spec.overhead, spec.resources, spec.volumes[]'s
// emptyDir.sizeLimit, downward API (also projected) items' divisors and the resources of an
// ephemeral volume's claim template; status.*ContainerStatuses[].allocatedResources and
// .resources.
void CanonicalizePodQuantities(boost::json::object& pod);
// The same for a Pod's spec alone.
void CanonicalizePodSpecQuantities(boost::json::object& spec);
// status.capacity and status.allocatable.
void CanonicalizeNodeQuantities(boost::json::object& node);

}  // namespace draplane::api
