// Pod status rules for everything in draplane that plays the kubelet: the node agent
// (agent/agent.h, a simulated or real node's Pods) and the kubelet simulator
// (controllers/kubelet, `--simulate-kubelet`, nodes without an agent). Both report the same
// running status through `RunningPodStatus`, so a Pod looks the same whichever one ran it.
//
// What a kubelet reports once every container of a Pod runs (upstream kubelet
// generateAPIPodStatus, reduced to what has no real containers behind it):
//   - phase Running, reason and message cleared, startTime set once;
//   - conditions PodScheduled, PodReadyToStartContainers, Initialized, ContainersReady and Ready
//     True (podutil.UpdatePodCondition: lastTransitionTime moves only when the status changes);
//   - hostIP / hostIPs when the caller knows the node's address;
//   - podIP / podIPs: a stable address in 10.244.0.0/16 derived from the Pod's uid;
//   - one running, ready containerStatus per container, containerID `draplane://<uid>/<name>`,
//     with the allocatedResourcesStatus the caller computed for it (api/resource_health.h);
//   - one initContainerStatus per init container: terminated (Completed, exit code 0) and ready,
//     or running and ready for a sidecar (restartPolicy Always), which kubectl's READY counts.
//
// And once a deleted Pod's containers stopped, for a Pod that a finalizer keeps (a foreground
// deletion, a controller's own finalizer) so that it outlives the players' grace-period-0 delete:
// phase Failed (a stopped Pod is no completion: a Job counts none), ContainersReady and Ready
// False (PodFailed), each container terminated: exit code 143 (Error) for one that ran and was
// stopped by SIGTERM, 0 (Completed) for an init container that had finished, and 137
// (ContainerStatusUnknown) for every container of a Pod that never ran. Upstream's kubelet writes
// the terminal phase of every Pod it stops; the players write it only for a Pod that stays, the
// one case where anyone waits on it (the resourceclaim controller releases a terminal Pod's
// claims, and a foreground deletion waits for those claims).
//
// Thread-safety: pure functions on values the caller owns.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/gen/core_v1_types.h"
#include "api/meta/time.h"

namespace draplane::api {

// Succeeded or Failed: none of the Pod's containers runs or will run again.
bool IsPodTerminal(const corev1::Pod& pod);

// Whether the Pod has condition `type` with status `value`.
bool HasPodCondition(const corev1::Pod& pod, std::string_view type, std::string_view value);

// Sets condition `type` to (`value`, `reason`, `message`), adding it when missing; its
// lastTransitionTime becomes `now` only when the status changes. True when anything changed.
bool SetPodCondition(corev1::PodStatus* status, std::string_view type, std::string_view value,
                     std::string_view reason, std::string_view message, const Time& now);

// SetPodCondition on a Pod status kept as JSON (the API server's): the condition `type` gets
// `value`, `reason` and `message` (removed when empty), lastTransitionTime `now` only when the
// status changes. True when anything changed.
bool SetPodConditionJson(boost::json::object& status, std::string_view type, std::string_view value,
                         std::string_view reason, std::string_view message, std::string_view now);

// What pods/binding does to the Pod's status (a JSON object), as upstream's BindingREST with
// podutil.UpdatePodCondition: PodScheduled becomes True (reason and message cleared,
// lastProbeTime null) where the condition stands, the other conditions keeping their order, or
// is appended; its lastTransitionTime becomes `now` unless it was True already. For the API
// server and the in-memory API, which keep Pods as JSON.
void SetPodScheduledByBinding(boost::json::object& status, std::string_view now);

// The Pod's address: the same for the same uid, in 10.244.0.0/16.
std::string PodIpFor(std::string_view uid);

struct RunningPodOptions {
  // The node's address, reported as hostIP / hostIPs; empty: not reported.
  std::string host_ip{};
  // Each container's allocatedResourcesStatus (KEP-4680), by container name, as
  // AllocatedResourcesStatus (api/resource_health.h) computes it; containers absent have none.
  std::map<std::string, boost::json::array> allocated_resources_status{};
};

// The status of `pod` once all its containers run (see the file comment), as the JSON object a
// status update or merge patch carries: the typed status (conditions the caller set first are
// kept) plus the fields api/gen does not model (podIPs, hostIPs, containerStatuses).
boost::json::object RunningPodStatus(const corev1::Pod& pod, const Time& now,
                                     const RunningPodOptions& options = {});

// The merge patch of the status subresource (conditional on the Pod's resourceVersion) that ends
// a deleted Pod a finalizer keeps (see the file comment); nullopt when there is nothing to write:
// the Pod is not being deleted, has no finalizers, or is terminal already.
std::optional<boost::json::object> StoppedPodStatusPatch(const corev1::Pod& pod, const Time& now);

// Upstream kubelet's active deadline (pkg/kubelet/active_deadline.go): when a started Pod with
// spec.activeDeadlineSeconds has been active that long since status.startTime; nullopt for a
// Pod without one, not started, or terminal.
std::optional<Timestamp> ActiveDeadline(const corev1::Pod& pod);

// The merge patch (conditional on the Pod's resourceVersion) that fails a Pod whose active
// deadline passed at `now`, as the kubelet does: phase Failed, reason DeadlineExceeded, message
// "Pod was active on the node longer than the specified deadline", its containers stopped as
// StoppedPodStatusPatch stops them. The resourceclaim controller then releases its claims.
// nullopt when the deadline has not passed.
std::optional<boost::json::object> DeadlineExceededStatusPatch(const corev1::Pod& pod,
                                                               const Time& now);

}  // namespace draplane::api
