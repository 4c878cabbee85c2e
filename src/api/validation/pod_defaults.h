// What the API server sets on a Pod it creates: the defaults users see in `kubectl get -o yaml`
// and the QoS class. Shared by the API server's pod strategy and the simulator, which creates
// Pods without going through the server.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <string>

namespace draplane::api::validation {

// Fills the defaults of pkg/apis/core/v1/defaults.go for the fields every pod has (restart
// policy, grace period, DNS policy, scheduler name, security context, service links; per container
// the image pull policy, termination message path and policy, resources, and requests copied
// from the limits of resources that have none) where `pod` leaves them unset. Priority and preemption policy are admission's (api/priority.h AdmitPodPriority).
void SetPodDefaults(boost::json::object& pod);

// The quality of service class of a pod (pkg/apis/core/helper/qos.GetPodQOS) from the requests
// and limits of its containers: "Guaranteed", "Burstable" or "BestEffort".
std::string PodQosClass(const boost::json::object& pod);

}  // namespace draplane::api::validation
