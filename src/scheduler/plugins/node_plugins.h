// The node filters a Pod needs besides devices, each mirroring the upstream plugin of the same
// name (pkg/scheduler/framework/plugins/...):
//
//   SchedulingGates    PreEnqueue: pods with spec.schedulingGates wait (schedulinggates)
//   NodeName           spec.nodeName must name the node (nodename)
//   NodeUnschedulable  spec.unschedulable nodes only for pods tolerating
//                      node.kubernetes.io/unschedulable:NoSchedule (nodeunschedulable)
//   NodeAffinity       spec.nodeSelector and required node affinity (nodeaffinity)
//   TaintToleration    NoSchedule / NoExecute node taints must be tolerated (tainttoleration);
//                      draplane's isolation taint for repeated device prepare failures
//                      (api/labels/node_isolation.h) counts only until its annotation's time
//   NodeResourcesFit   cpu, memory, ephemeral storage, extended resources from
//                      node.status.allocatable (legacy device plugins) and the pod count;
//                      an extended resource the node does not advertise but a DeviceClass maps
//                      is left to DynamicResources (KEP-5004) (noderesources/fit.go)
//
// Reasons are short phrases without "node(s)": the FailedScheduling message groups nodes by
// reason ("4 nodes: node affinity/selector mismatch").
//
// Thread-safety: loop thread only.
#pragma once

#include <memory>

#include "common/clock.h"
#include "scheduler/cluster_state.h"
#include "scheduler/framework/plugin.h"

namespace draplane::scheduler {

std::shared_ptr<Plugin> NewSchedulingGatesPlugin();
std::shared_ptr<Plugin> NewNodeNamePlugin();
std::shared_ptr<Plugin> NewNodeUnschedulablePlugin();
std::shared_ptr<Plugin> NewNodeAffinityPlugin();
// `clock` (which must outlive the plugin) ends node isolations.
std::shared_ptr<Plugin> NewTaintTolerationPlugin(const Clock& clock);
// Reads the extended resource -> DeviceClass mapping from `cluster`, which must outlive it.
std::shared_ptr<Plugin> NewNodeResourcesFitPlugin(const ClusterState& cluster);

// Reason texts (also used by tests).
inline constexpr std::string_view kReasonNodeName = "requested node name does not match";
inline constexpr std::string_view kReasonUnschedulable = "node is unschedulable";
inline constexpr std::string_view kReasonNodeAffinity = "node affinity/selector mismatch";
inline constexpr std::string_view kReasonTooManyPods = "Too many pods";

}  // namespace draplane::scheduler
