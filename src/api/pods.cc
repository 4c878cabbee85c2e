#include "api/pods.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>

#include "api/gen/core_v1_codec.h"
#include "api/resource_health.h"
#include "common/saturating.h"

namespace draplane::api {

namespace {

std::string ContainerIdFor(const corev1::Pod& pod, const corev1::Container& c) {
  return "draplane://" + pod.metadata.uid + "/" + c.name;
}

// One entry of containerStatuses or initContainerStatuses, as the kubelet reports it.
boost::json::object ContainerStatusJson(const corev1::Container& c, std::string container_id,
                                        bool ready, bool started, boost::json::object state) {
  return boost::json::object{{"name", c.name},    {"image", c.image},
                             {"imageID", ""},     {"containerID", std::move(container_id)},
                             {"ready", ready},    {"started", started},
                             {"restartCount", 0}, {"state", std::move(state)}};
}

// An init container that keeps running beside the others (restartPolicy Always).
bool IsSidecar(const corev1::Container& c) { return c.restart_policy.value_or("") == "Always"; }

// The condition of `type` in a JSON conditions list.
boost::json::array::iterator FindConditionJson(boost::json::array& conditions,
                                               std::string_view type) {
  return std::find_if(conditions.begin(), conditions.end(), [&](const boost::json::value& c) {
    const boost::json::value* t = c.is_object() ? c.get_object().if_contains("type") : nullptr;
    return t != nullptr && t->is_string() && t->get_string() == type;
  });
}

}  // namespace

bool IsPodTerminal(const corev1::Pod& pod) {
  return pod.status.phase == corev1::kPodPhaseSucceeded ||
         pod.status.phase == corev1::kPodPhaseFailed;
}

bool HasPodCondition(const corev1::Pod& pod, std::string_view type, std::string_view value) {
  for (const corev1::PodCondition& c : pod.status.conditions) {
    if (c.type == type) return c.status == value;
  }
  return false;
}

bool SetPodCondition(corev1::PodStatus* status, std::string_view type, std::string_view value,
                     std::string_view reason, std::string_view message, const Time& now) {
  for (corev1::PodCondition& c : status->conditions) {
    if (c.type != type) continue;
    if (c.status == value && c.reason == reason && c.message == message) return false;
    if (c.status != value) c.last_transition_time = now;
    c.status = std::string(value);
    c.reason = std::string(reason);
    c.message = std::string(message);
    return true;
  }
  corev1::PodCondition c;
  c.type = std::string(type);
  c.status = std::string(value);
  c.reason = std::string(reason);
  c.message = std::string(message);
  c.last_transition_time = now;
  status->conditions.push_back(std::move(c));
  return true;
}

bool SetPodConditionJson(boost::json::object& status, std::string_view type, std::string_view value,
                         std::string_view reason, std::string_view message, std::string_view now) {
  boost::json::value& listed = status["conditions"];
  if (!listed.is_array()) listed = boost::json::array();
  boost::json::array& conditions = listed.get_array();
  auto it = FindConditionJson(conditions, type);
  if (it == conditions.end() || !it->is_object()) {
    boost::json::object added{{"type", type}, {"status", value}, {"lastTransitionTime", now}};
    if (!reason.empty()) added["reason"] = reason;
    if (!message.empty()) added["message"] = message;
    if (it == conditions.end()) {
      conditions.push_back(std::move(added));
    } else {
      *it = std::move(added);
    }
    return true;
  }
  boost::json::object& c = it->get_object();
  const boost::json::value* old_value = c.if_contains("status");
  const bool transition =
      old_value == nullptr || !old_value->is_string() || old_value->get_string() != value;
  const boost::json::object before = c;
  c["status"] = value;
  if (transition || !c.contains("lastTransitionTime")) c["lastTransitionTime"] = now;
  for (const auto& [key, text] : {std::pair{"reason", reason}, std::pair{"message", message}}) {
    if (text.empty()) {
      c.erase(key);
    } else {
      c[key] = text;
    }
  }
  return c != before;
}

void SetPodScheduledByBinding(boost::json::object& status, std::string_view now) {
  boost::json::value& listed = status["conditions"];
  if (!listed.is_array()) listed = boost::json::array();
  boost::json::array& conditions = listed.get_array();
  boost::json::object scheduled{{"type", "PodScheduled"},
                                {"status", "True"},
                                {"lastProbeTime", nullptr},
                                {"lastTransitionTime", now}};
  auto it = FindConditionJson(conditions, "PodScheduled");
  if (it == conditions.end()) {
    conditions.push_back(std::move(scheduled));
    return;
  }
  const boost::json::object& old = it->get_object();
  const boost::json::value* status_value = old.if_contains("status");
  const boost::json::value* since = old.if_contains("lastTransitionTime");
  if (status_value != nullptr && status_value->is_string() &&
      status_value->get_string() == "True" && since != nullptr) {
    scheduled["lastTransitionTime"] = *since;
  }
  *it = std::move(scheduled);
}

std::string PodIpFor(std::string_view uid) {
  // FNV-1a of the uid; the last octet stays in 1..254.
  uint32_t h = 2166136261u;
  for (unsigned char c : uid) h = (h ^ c) * 16777619u;
  return "10.244." + std::to_string((h >> 8) & 0xff) + "." + std::to_string(1 + (h & 0xfd));
}

boost::json::object RunningPodStatus(const corev1::Pod& pod, const Time& now,
                                     const RunningPodOptions& options) {
  corev1::PodStatus status = pod.status;
  status.phase = std::string(corev1::kPodPhaseRunning);
  status.reason.clear();
  status.message.clear();
  if (!status.start_time) status.start_time = now;
  for (std::string_view type :
       {corev1::kPodConditionTypePodScheduled, corev1::kPodConditionTypePodReadyToStartContainers,
        corev1::kPodConditionTypeInitialized, corev1::kPodConditionTypeContainersReady,
        corev1::kPodConditionTypeReady}) {
    SetPodCondition(&status, type, "True", "", "", now);
  }
  const std::string pod_ip = PodIpFor(pod.metadata.uid);
  status.pod_ip = pod_ip;
  if (!options.host_ip.empty()) status.host_ip = options.host_ip;
  boost::json::value encoded = corev1::Encode(status);
  boost::json::object& out = encoded.as_object();
  out["podIPs"] = boost::json::array{boost::json::object{{"ip", pod_ip}}};
  if (!options.host_ip.empty()) {
    out["hostIPs"] = boost::json::array{boost::json::object{{"ip", options.host_ip}}};
  }
  boost::json::array containers;
  for (const corev1::Container& c : pod.spec.containers) {
    containers.push_back(ContainerStatusJson(
        c, ContainerIdFor(pod, c), true, true,
        boost::json::object{{"running", boost::json::object{{"startedAt", now.text()}}}}));
  }
  SetAllocatedResourcesStatus(containers, options.allocated_resources_status);
  out["containerStatuses"] = std::move(containers);
  // Init containers ran to completion before the others started; sidecars (restartPolicy
  // Always) keep running beside them and count in kubectl's READY column.
  boost::json::array init_containers;
  for (const corev1::Container& c : pod.spec.init_containers) {
    const bool sidecar = IsSidecar(c);
    boost::json::object state =
        sidecar ? boost::json::object{{"running", boost::json::object{{"startedAt", now.text()}}}}
                : boost::json::object{
                      {"terminated", boost::json::object{{"exitCode", 0},
                                                         {"reason", "Completed"},
                                                         {"startedAt", now.text()},
                                                         {"finishedAt", now.text()},
                                                         {"containerID", ContainerIdFor(pod, c)}}}};
    init_containers.push_back(
        ContainerStatusJson(c, ContainerIdFor(pod, c), true, sidecar, std::move(state)));
  }
  if (!init_containers.empty()) {
    SetAllocatedResourcesStatus(init_containers, options.allocated_resources_status);
    out["initContainerStatuses"] = std::move(init_containers);
  }
  return std::move(out);
}

namespace {

// The merge patch that ends `pod` Failed with its containers stopped (see the file comment);
// `reason` and `message` are the Pod status's, empty for none.
boost::json::object StoppedStatusPatch(const corev1::Pod& pod, const Time& now,
                                       std::string_view reason, std::string_view message) {
  const bool ran = pod.status.phase == corev1::kPodPhaseRunning;
  corev1::PodStatus status = pod.status;
  status.phase = std::string(corev1::kPodPhaseFailed);
  if (!reason.empty()) status.reason = std::string(reason);
  if (!message.empty()) status.message = std::string(message);
  for (std::string_view type :
       {corev1::kPodConditionTypeContainersReady, corev1::kPodConditionTypeReady}) {
    SetPodCondition(&status, type, "False", "PodFailed", "", now);
  }
  const std::string started = status.start_time ? status.start_time->text() : now.text();
  // A container that ran was stopped by SIGTERM (exit code 143); one that never started is
  // unknown to the runtime, as the kubelet reports it (137, ContainerStatusUnknown); an init
  // container that completed before the others started stays completed.
  auto stopped = [&](const corev1::Container& c, bool completed) {
    const std::string id = ContainerIdFor(pod, c);
    boost::json::object terminated =
        !ran        ? boost::json::object{{"exitCode", 137},
                                   {"reason", "ContainerStatusUnknown"},
                                   {"message",
                                           "The container could not be located when the pod was "
                                                  "terminated"}}
        : completed ? boost::json::object{{"exitCode", 0}, {"reason", "Completed"}}
                    : boost::json::object{{"exitCode", 143}, {"reason", "Error"}};
    if (ran) {
      terminated["startedAt"] = started;
      terminated["finishedAt"] = now.text();
      terminated["containerID"] = id;
    }
    return ContainerStatusJson(c, ran ? id : "", false, false,
                               boost::json::object{{"terminated", std::move(terminated)}});
  };
  boost::json::value encoded = corev1::Encode(status);
  boost::json::array containers;
  for (const corev1::Container& c : pod.spec.containers) containers.push_back(stopped(c, false));
  encoded.as_object()["containerStatuses"] = std::move(containers);
  boost::json::array init_containers;
  for (const corev1::Container& c : pod.spec.init_containers) {
    init_containers.push_back(stopped(c, !IsSidecar(c)));
  }
  if (!init_containers.empty())
    encoded.as_object()["initContainerStatuses"] = std::move(init_containers);
  return boost::json::object{
      {"metadata", boost::json::object{{"resourceVersion", pod.metadata.resource_version}}},
      {"status", std::move(encoded)}};
}

}  // namespace

std::optional<boost::json::object> StoppedPodStatusPatch(const corev1::Pod& pod, const Time& now) {
  if (!pod.metadata.deletion_timestamp || pod.metadata.finalizers.empty() || IsPodTerminal(pod)) {
    return std::nullopt;
  }
  return StoppedStatusPatch(pod, now, "", "");
}

std::optional<Timestamp> ActiveDeadline(const corev1::Pod& pod) {
  if (!pod.spec.active_deadline_seconds || !pod.status.start_time || IsPodTerminal(pod)) {
    return std::nullopt;
  }
  return AddSeconds(pod.status.start_time->ToTimestamp(), *pod.spec.active_deadline_seconds);
}

std::optional<boost::json::object> DeadlineExceededStatusPatch(const corev1::Pod& pod,
                                                               const Time& now) {
  std::optional<Timestamp> deadline = ActiveDeadline(pod);
  if (!deadline || *deadline > now.ToTimestamp()) return std::nullopt;
  return StoppedStatusPatch(pod, now, "DeadlineExceeded",
                            "Pod was active on the node longer than the specified deadline");
}

}  // namespace draplane::api
