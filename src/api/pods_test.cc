#include "api/pods.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <limits>

#include "api/gen/core_v1_codec.h"

namespace draplane::api {
namespace {

corev1::Pod BoundPod() {
  corev1::Pod pod;
  pod.metadata.name = "p";
  pod.metadata.uid = "0b5f6c1e-uid";
  pod.spec.node_name = "n1";
  corev1::Container c;
  c.name = "main";
  c.image = "busybox";
  pod.spec.containers.push_back(c);
  pod.status.phase = std::string(corev1::kPodPhasePending);
  return pod;
}

TEST(PodsTest, RunningStatusCarriesTheDevicesHealth) {
  corev1::Pod pod = BoundPod();
  const Time now = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'100)));
  boost::json::array entries = boost::json::parse(R"([{"name":"claim:gpu","resources":[
      {"resourceID":"gpu.example.com/node-a/gpu-0","health":"Unhealthy"}]}])")
                                   .as_array();
  RunningPodOptions options;
  options.allocated_resources_status["main"] = entries;
  options.allocated_resources_status["not-a-container"] = entries;
  boost::json::object status = RunningPodStatus(pod, now, options);
  const boost::json::array& containers = status["containerStatuses"].as_array();
  ASSERT_EQ(containers.size(), 1u);
  EXPECT_EQ(containers[0].as_object().at("allocatedResourcesStatus"), entries);
  EXPECT_FALSE(RunningPodStatus(pod, now)["containerStatuses"].as_array()[0].as_object().contains(
      "allocatedResourcesStatus"));
}

TEST(PodsTest, RunningStatusIsWhatAKubeletReports) {
  corev1::Pod pod = BoundPod();
  const Time then = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'000)));
  SetPodCondition(&pod.status, "PodScheduled", "True", "", "", then);
  const Time now = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'100)));
  boost::json::object status = RunningPodStatus(pod, now, {.host_ip = "192.0.2.7"});
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(std::string_view(status["startTime"].as_string()), now.text());
  EXPECT_EQ(status["hostIP"], "192.0.2.7");
  EXPECT_EQ(status["hostIPs"], boost::json::parse(R"([{"ip":"192.0.2.7"}])"));
  const std::string ip = PodIpFor(pod.metadata.uid);
  EXPECT_EQ(std::string_view(status["podIP"].as_string()), ip);
  EXPECT_EQ(ip, PodIpFor("0b5f6c1e-uid")) << "stable per uid";
  EXPECT_EQ(ip.rfind("10.244.", 0), 0u);
  ASSERT_EQ(status["containerStatuses"].as_array().size(), 1u);
  const boost::json::object& container = status["containerStatuses"].as_array()[0].as_object();
  EXPECT_EQ(container.at("containerID"), "draplane://0b5f6c1e-uid/main");
  EXPECT_EQ(container.at("ready"), true);

  corev1::Pod running = pod;
  FieldErrorList errors;
  running.status = {};
  corev1::Decode(boost::json::value(status), &running.status, &errors);
  ASSERT_TRUE(errors.empty());
  for (std::string_view type :
       {"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}) {
    EXPECT_TRUE(HasPodCondition(running, type, "True")) << type;
  }
  // A condition that was already True keeps its transition time.
  for (const corev1::PodCondition& c : running.status.conditions) {
    EXPECT_EQ(c.last_transition_time.text(), c.type == "PodScheduled" ? then.text() : now.text())
        << c.type;
  }
}

TEST(PodsTest, InitContainersHaveCompletedAndSidecarsRun) {
  corev1::Pod pod = BoundPod();
  corev1::Container init;
  init.name = "fetch-weights";
  init.image = "busybox";
  corev1::Container sidecar;
  sidecar.name = "log-shipper";
  sidecar.image = "fluent-bit";
  sidecar.restart_policy = "Always";
  pod.spec.init_containers = {init, sidecar};
  const Time now = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'100)));
  boost::json::object status = RunningPodStatus(pod, now);
  const boost::json::array& inits = status["initContainerStatuses"].as_array();
  ASSERT_EQ(inits.size(), 2u);
  const boost::json::object& done = inits[0].as_object();
  EXPECT_EQ(done.at("name"), "fetch-weights");
  EXPECT_EQ(done.at("state").as_object().at("terminated").as_object().at("reason"), "Completed");
  EXPECT_EQ(done.at("ready"), true);
  EXPECT_EQ(done.at("started"), false);
  const boost::json::object& running = inits[1].as_object();
  EXPECT_TRUE(running.at("state").as_object().contains("running"));
  EXPECT_EQ(running.at("ready"), true);  // kubectl's READY counts it: 2/2
  EXPECT_EQ(running.at("started"), true);
  EXPECT_FALSE(RunningPodStatus(BoundPod(), now).contains("initContainerStatuses"));
}

TEST(PodsTest, AStoppedPodAFinalizerKeepsEndsFailed) {
  corev1::Pod pod = BoundPod();
  pod.metadata.resource_version = "42";
  corev1::Container sidecar;
  sidecar.name = "log-shipper";
  sidecar.image = "fluent-bit";
  sidecar.restart_policy = "Always";
  corev1::Container init;
  init.name = "fetch-weights";
  init.image = "busybox";
  pod.spec.init_containers = {init, sidecar};
  const Time started = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'000)));
  const Time now = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'100)));
  pod.status.phase = "Running";
  pod.status.start_time = started;
  SetPodCondition(&pod.status, "Ready", "True", "", "", started);
  // Nothing to write while the Pod is not being deleted, has no finalizer, or has ended.
  EXPECT_FALSE(StoppedPodStatusPatch(pod, now).has_value());
  pod.metadata.deletion_timestamp = now;
  EXPECT_FALSE(StoppedPodStatusPatch(pod, now).has_value());
  pod.metadata.finalizers = {"foregroundDeletion"};
  std::optional<boost::json::object> patch = StoppedPodStatusPatch(pod, now);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->at("metadata").as_object().at("resourceVersion"), "42");
  const boost::json::object& status = patch->at("status").as_object();
  // Failed, not Succeeded: a stopped Pod is no completion (a Job would count it as one).
  EXPECT_EQ(status.at("phase"), "Failed");
  corev1::Pod stopped = pod;
  FieldErrorList errors;
  corev1::Decode(boost::json::value(status), &stopped.status, &errors);
  ASSERT_TRUE(errors.empty());
  EXPECT_TRUE(HasPodCondition(stopped, "Ready", "False"));
  EXPECT_TRUE(HasPodCondition(stopped, "ContainersReady", "False"));
  auto terminated = [&](std::string_view list, size_t i) {
    return status.at(list)
        .as_array()[i]
        .as_object()
        .at("state")
        .as_object()
        .at("terminated")
        .as_object();
  };
  EXPECT_EQ(terminated("containerStatuses", 0).at("exitCode"), 143);
  EXPECT_EQ(terminated("containerStatuses", 0).at("reason"), "Error");
  EXPECT_EQ(std::string_view(terminated("containerStatuses", 0).at("startedAt").as_string()),
            started.text());
  EXPECT_EQ(std::string_view(terminated("containerStatuses", 0).at("finishedAt").as_string()),
            now.text());
  EXPECT_EQ(terminated("initContainerStatuses", 0).at("reason"), "Completed");
  EXPECT_EQ(terminated("initContainerStatuses", 1).at("exitCode"), 143) << "the sidecar stops";
  stopped.status.phase = "Failed";
  EXPECT_FALSE(StoppedPodStatusPatch(stopped, now).has_value());
  // A Pod whose containers never ran: the runtime does not know them.
  pod.status.phase = "Pending";
  patch = StoppedPodStatusPatch(pod, now);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->at("status")
                .as_object()
                .at("containerStatuses")
                .as_array()[0]
                .as_object()
                .at("state")
                .as_object()
                .at("terminated")
                .as_object()
                .at("reason"),
            "ContainerStatusUnknown");
}

TEST(PodsTest, APodPastItsActiveDeadlineFailsWithDeadlineExceeded) {
  corev1::Pod pod = BoundPod();
  const Time started = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'000)));
  const Time before = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'029)));
  const Time after = Time::FromTimestamp(Timestamp(std::chrono::seconds(1'700'000'030)));
  pod.status.phase = "Running";
  pod.status.start_time = started;
  EXPECT_FALSE(ActiveDeadline(pod).has_value()) << "no deadline set";
  pod.spec.active_deadline_seconds = 30;
  ASSERT_TRUE(ActiveDeadline(pod).has_value());
  EXPECT_EQ(*ActiveDeadline(pod), after.ToTimestamp());
  EXPECT_FALSE(DeadlineExceededStatusPatch(pod, before).has_value());
  std::optional<boost::json::object> patch = DeadlineExceededStatusPatch(pod, after);
  ASSERT_TRUE(patch.has_value());
  const boost::json::object& status = patch->at("status").as_object();
  EXPECT_EQ(status.at("phase"), "Failed");
  EXPECT_EQ(status.at("reason"), "DeadlineExceeded");
  EXPECT_EQ(status.at("message"), "Pod was active on the node longer than the specified deadline");
  EXPECT_EQ(status.at("containerStatuses")
                .as_array()[0]
                .as_object()
                .at("state")
                .as_object()
                .at("terminated")
                .as_object()
                .at("exitCode"),
            143);
  // A deadline at the end of int64 never passes (saturated, not wrapped into the past).
  pod.spec.active_deadline_seconds = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(DeadlineExceededStatusPatch(pod, after).has_value());
  pod.status.phase = "Failed";
  EXPECT_FALSE(ActiveDeadline(pod).has_value()) << "a terminal Pod has none left";
}

TEST(PodsTest, SetPodConditionMovesTheTransitionTimeOnlyWithTheStatus) {
  corev1::PodStatus status;
  const Time t1 = Time::FromTimestamp(Timestamp(std::chrono::seconds(100)));
  const Time t2 = Time::FromTimestamp(Timestamp(std::chrono::seconds(200)));
  EXPECT_TRUE(SetPodCondition(&status, "Ready", "False", "Why", "msg", t1));
  EXPECT_FALSE(SetPodCondition(&status, "Ready", "False", "Why", "msg", t2));
  EXPECT_TRUE(SetPodCondition(&status, "Ready", "False", "Other", "msg", t2));
  EXPECT_EQ(status.conditions[0].last_transition_time.text(), t1.text());
  EXPECT_TRUE(SetPodCondition(&status, "Ready", "True", "", "", t2));
  EXPECT_EQ(status.conditions[0].last_transition_time.text(), t2.text());
  corev1::Pod pod;
  pod.status.phase = "Failed";
  EXPECT_TRUE(IsPodTerminal(pod));
}

}  // namespace
}  // namespace draplane::api
