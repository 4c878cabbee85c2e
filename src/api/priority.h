// Pod priority: the PriorityClasses every cluster has and the rule that turns a Pod's
// `spec.priorityClassName` into `spec.priority` and `spec.preemptionPolicy` (upstream's Priority
// admission plugin, plugin/pkg/admission/priority, and pkg/apis/scheduling for the constants).
// Shared by the API server's admission chain and the simulator, which creates Pods without it.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/scheduling_v1_types.h"

namespace draplane::api {

// The largest value a user-defined PriorityClass may have (HighestUserDefinablePriority).
inline constexpr int32_t kHighestUserDefinablePriority = 1'000'000'000;
// The value of system-cluster-critical; system-node-critical is 1000 above it.
inline constexpr int32_t kSystemCriticalPriority = 2'000'000'000;
// The priority of a Pod without a class when no class is the global default.
inline constexpr int32_t kDefaultPriorityWhenNoDefaultClassExists = 0;
// Names with this prefix are reserved for the system classes.
inline constexpr std::string_view kSystemPriorityClassPrefix = "system-";
inline constexpr std::string_view kSystemClusterCritical = "system-cluster-critical";
inline constexpr std::string_view kSystemNodeCritical = "system-node-critical";

// system-cluster-critical and system-node-critical, as the API server creates them at start
// (upstream's scheduling bootstrap post-start hook); neither may be deleted or changed.
std::vector<schedulingv1::PriorityClass> SystemPriorityClasses();
// The system class of that name, or nullptr.
const schedulingv1::PriorityClass* FindSystemPriorityClass(std::string_view name);

// The global default among `classes`: of several (a race the admission check cannot exclude),
// the one with the lowest value, then the first name, as upstream's getDefaultPriority; nullptr
// when none is.
const schedulingv1::PriorityClass* DefaultPriorityClass(
    const std::vector<schedulingv1::PriorityClass>& classes);

// Admission of a new Pod (JSON, as stored): resolves `spec.priorityClassName` (or the global
// default, whose name is then written into the Pod) among `classes` and sets `spec.priority` and
// `spec.preemptionPolicy`. Returns the reason the Pod is forbidden: an unknown class, or a
// priority or preemption policy the Pod set itself that differs from its class's.
std::optional<std::string> AdmitPodPriority(
    boost::json::object& pod, const std::vector<schedulingv1::PriorityClass>& classes);
// An update of a Pod: the priority and preemption policy admission set are kept when the new
// object leaves them out (the rest of the spec is immutable and validated as such).
void KeepPodPriority(boost::json::object& pod, const boost::json::object& old);

}  // namespace draplane::api
