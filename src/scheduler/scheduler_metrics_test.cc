// The scheduler's tenant, allocation and device-state metrics through a running scheduler
// (informers over the in-memory API, the loop and binder threads): what /metrics shows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>

#include "common/metrics.h"
#include "scheduler/scheduler.h"
#include "testing/cluster.h"

namespace draplane::scheduler {
namespace {

using draplane::testing::Cluster;
using draplane::testing::DeviceSpec;
using ::testing::HasSubstr;
using ::testing::Not;

// Polls /metrics until it contains every one of `wanted` (60 s guards against hangs).
std::string WaitForMetrics(const std::vector<std::string>& wanted) {
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    text = metrics::RenderText();
    bool all = true;
    for (const std::string& w : wanted) all = all && text.find(w) != std::string::npos;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return text;
}

// The distinct values of `label` in the series of `family` (a metric name prefix).
std::set<std::string> LabelValues(const std::string& text, const std::string& family,
                                  const std::string& label) {
  std::set<std::string> out;
  std::regex series("^" + family + "\\{([^}]*)\\}", std::regex::multiline);
  std::regex value(label + "=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), series);
       it != std::sregex_iterator(); ++it) {
    std::string labels = (*it)[1];
    std::smatch m;
    if (std::regex_search(labels, m, value)) out.insert(m[1]);
  }
  return out;
}

class SchedulerMetricsTest : public ::testing::Test {
 protected:
  void Start() {
    SchedulerOptions options;
    options.random_seed = 7;
    options.binder_threads = 2;
    options.metrics_tenants = {"team-a"};
    options.device_states_interval = std::chrono::milliseconds(10);
    scheduler_ = std::make_unique<Scheduler>(cluster_.api(), RealClock(), options);
    ASSERT_TRUE(scheduler_->Start().ok());
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
  }
  api::corev1::Pod PodIn(const std::string& ns, const std::string& name,
                         const std::vector<std::string>& claims = {}) {
    api::corev1::Pod pod = cluster_.PodSpec(name, claims);
    pod.metadata.namespace_ = ns;
    return pod;
  }

  Cluster cluster_;
  std::unique_ptr<Scheduler> scheduler_;
};

// 10,000 namespaces each with a gated Pod, and 50 namespaces with a Pod that is bound: the
// tenant-labelled families keep two tenant values (team-a and other).
TEST_F(SchedulerMetricsTest, TenThousandNamespacesKeepTheTenantSeriesBounded) {
  cluster_.Node("node-a", {}, {{"pods", "1000"}});
  cluster_.Namespace("team-a");
  for (int i = 1; i < 10000; ++i) cluster_.Namespace("ns-" + std::to_string(i));
  Start();
  for (int i = 0; i < 10000; ++i) {
    api::corev1::Pod pod = PodIn(i == 0 ? "team-a" : "ns-" + std::to_string(i), "gated");
    pod.spec.scheduling_gates.emplace_back().name = "example.com/hold";
    cluster_.Pod(pod);
  }
  for (int i = 0; i < 50; ++i) {
    cluster_.Pod(PodIn(i == 0 ? "team-a" : "ns-" + std::to_string(i), "runs"));
  }
  std::string text = WaitForMetrics({
      "draplane_pending_pods{reason=\"Gated\",tenant=\"other\"} 9999",
      "draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 1",
      "draplane_pod_wait_duration_seconds_count{device_class=\"none\",tenant=\"other\"} 49",
      "draplane_pod_wait_duration_seconds_count{device_class=\"none\",tenant=\"team-a\"} 1",
  });
  EXPECT_THAT(text, HasSubstr("draplane_pending_pods{reason=\"Gated\",tenant=\"other\"} 9999"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "draplane_pod_wait_duration_seconds_count{device_class=\"none\",tenant=\"other\"} 49"));
  EXPECT_EQ(LabelValues(text, "draplane_pending_pods", "tenant"),
            (std::set<std::string>{"other", "team-a"}));
  EXPECT_EQ(LabelValues(text, "draplane_pod_wait_duration_seconds_count", "tenant"),
            (std::set<std::string>{"other", "team-a"}));
}

// A claim allocated from one of two GPUs and one that fits nowhere: the allocation by class and
// tier, the failed request, the Pending reason, and the device states the loop computes.
TEST_F(SchedulerMetricsTest, AllocationsPendingReasonsAndDeviceStates) {
  cluster_.Class("metrics-gpu", R"(device.driver == "metrics.example.com")");
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "metrics.example.com",
                 {DeviceSpec{"gpu-0", {}, "", 0}, DeviceSpec{"gpu-1", {}, "", 0}});
  Start();
  cluster_.Claim(cluster_.ClaimSpec("one", "metrics-gpu"));
  cluster_.Pod(cluster_.PodSpec("one", {"one"}));
  std::string text = WaitForMetrics({
      "draplane_allocations_total{device_class=\"metrics-gpu\",result=\"allocated\","
      "subrequest_index=\"0\"} 1",
      "draplane_devices{device_class=\"metrics-gpu\",driver=\"metrics.example.com\","
      "state=\"allocated\"} 1",
  });
  EXPECT_THAT(text, HasSubstr("draplane_devices{device_class=\"metrics-gpu\",driver=\"metrics."
                              "example.com\",state=\"idle\"} 1"));
  // Three GPUs on one node: nothing has that many, so the Pod stays Pending, the DRA plugin
  // rejected it, and the free GPU is stranded for that shape.
  cluster_.Claim(cluster_.ClaimSpec("three", "metrics-gpu", 3));
  cluster_.Pod(cluster_.PodSpec("three", {"three"}));
  text = WaitForMetrics({
      "draplane_allocations_total{device_class=\"metrics-gpu\",result=\"unschedulable\","
      "subrequest_index=\"none\"}",
      "draplane_pending_pods{reason=\"DynamicResources\",tenant=\"other\"} 1",
      "draplane_devices{device_class=\"metrics-gpu\",driver=\"metrics.example.com\","
      "state=\"fragmented\"} 1",
  });
  EXPECT_THAT(text,
              HasSubstr("draplane_pending_pods{reason=\"DynamicResources\",tenant=\"other\"} 1"));
  EXPECT_THAT(text, HasSubstr("draplane_devices{device_class=\"metrics-gpu\",driver=\"metrics."
                              "example.com\",state=\"fragmented\"} 1"));
  EXPECT_THAT(text, HasSubstr("draplane_device_states_shapes{outcome=\"evaluated\"} 1"));

  // Claims naming classes the cluster does not have: one "unknown" series, not one per name.
  for (int i = 0; i < 3; ++i) {
    const std::string name = "junk-" + std::to_string(i);
    cluster_.Claim(cluster_.ClaimSpec(name, "junk-class-" + std::to_string(i)));
    cluster_.Pod(cluster_.PodSpec(name, {name}));
  }
  text =
      WaitForMetrics({"draplane_allocations_total{device_class=\"unknown\","
                      "result=\"unschedulable\",subrequest_index=\"none\"}"});
  EXPECT_THAT(text, Not(HasSubstr("junk-class")));
}

// Every change of why a Pod waits moves it between series: gated Pods whose gates are lifted
// are bound and leave the Gated series, an unschedulable Pod that is deleted leaves the
// DynamicResources one (the counts are kept per change, not recounted at each wake-up).
TEST_F(SchedulerMetricsTest, PendingSeriesFollowEveryChange) {
  cluster_.Class("pending-gpu", R"(device.driver == "pending.example.com")");
  cluster_.Node("node-a", {}, {{"pods", "100"}});
  cluster_.Namespace("team-a");
  cluster_.Slice("node-a", "pending.example.com", {DeviceSpec{"gpu-0", {}, "", 0}});
  Start();
  for (const std::string name : {"gated-0", "gated-1", "gated-2"}) {
    api::corev1::Pod pod = PodIn("team-a", name);
    pod.spec.scheduling_gates.emplace_back().name = "example.com/hold";
    cluster_.Pod(pod);
  }
  api::resourcev1::ResourceClaim two = cluster_.ClaimSpec("two", "pending-gpu", 2);
  two.metadata.namespace_ = "team-a";
  cluster_.Claim(two);
  cluster_.Pod(PodIn("team-a", "two", {"two"}));
  std::string text = WaitForMetrics({
      "draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 3",
      "draplane_pending_pods{reason=\"DynamicResources\",tenant=\"team-a\"} 1",
  });
  ASSERT_THAT(text, HasSubstr("draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 3"));
  // Upstream's gauge by rejecting (or gating) plugin.
  text = WaitForMetrics({
      "scheduler_unschedulable_pods{plugin=\"SchedulingGates\",profile=\"default-scheduler\"} 3",
      "scheduler_unschedulable_pods{plugin=\"DynamicResources\",profile=\"default-scheduler\"} 1",
  });
  EXPECT_THAT(text, HasSubstr("scheduler_unschedulable_pods{plugin=\"SchedulingGates\","
                              "profile=\"default-scheduler\"} 3"));

  for (const std::string name : {"gated-0", "gated-1"}) {
    StatusOr<api::corev1::Pod> pod = client::Get<api::corev1::Pod>(cluster_.api(), "team-a", name);
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    pod->spec.scheduling_gates.clear();
    ASSERT_TRUE(client::Update(cluster_.api(), *pod).ok());
  }
  ASSERT_TRUE(
      client::Delete<api::corev1::Pod>(cluster_.api(), "team-a", "two", {.grace_period_seconds = 0})
          .ok());
  EXPECT_TRUE(cluster_.WaitUntil([&] {
    int bound = 0;
    for (const api::corev1::Pod& pod : cluster_.Pods()) {
      if (pod.metadata.name.starts_with("gated-") && !pod.spec.node_name.empty()) ++bound;
    }
    return bound == 2;
  }));
  text = WaitForMetrics({
      "draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 1\n",
      "draplane_pending_pods{reason=\"DynamicResources\",tenant=\"team-a\"} 0\n",
  });
  EXPECT_THAT(text, HasSubstr("draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("draplane_pending_pods{reason=\"DynamicResources\",tenant=\"team-a\"} 0\n"));
  const std::string gated =
      "scheduler_unschedulable_pods{plugin=\"SchedulingGates\",profile=\"default-scheduler\"} 1\n";
  const std::string dra =
      "scheduler_unschedulable_pods{plugin=\"DynamicResources\",profile=\"default-scheduler\"} 0\n";
  text = WaitForMetrics({gated, dra});
  EXPECT_THAT(text, HasSubstr(gated));
  EXPECT_THAT(text, HasSubstr(dra));

  // A Pod whose claim does not exist yet is held back by DynamicResources' PreEnqueue: Gated too
  // (it was "Queued", never tried), and it leaves that series when the claim comes.
  cluster_.Pod(PodIn("team-a", "late", {"late"}));
  const std::string two_gated = "draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 2\n";
  text = WaitForMetrics({two_gated});
  EXPECT_THAT(text, HasSubstr(two_gated));
  EXPECT_THAT(text, Not(HasSubstr("draplane_pending_pods{reason=\"Queued\",tenant=\"team-a\"} 1")));
  api::resourcev1::ResourceClaim late = cluster_.ClaimSpec("late", "pending-gpu");
  late.metadata.namespace_ = "team-a";
  cluster_.Claim(late);
  const std::string one_gated = "draplane_pending_pods{reason=\"Gated\",tenant=\"team-a\"} 1\n";
  text = WaitForMetrics({one_gated});
  EXPECT_THAT(text, HasSubstr(one_gated));
}

// The count of one series of a family ("name{labels}" as rendered), 0 when absent.
double SeriesValue(const std::string& text, const std::string& series) {
  size_t at = text.find(series + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size() + 1));
}

// Plugin calls are timed on one attempt in ten, the first included: ten Pods bound in one
// attempt each add one Bind observation, and the sampled attempt's DRA calls are all there.
TEST_F(SchedulerMetricsTest, PluginCallsOfOneAttemptInTenAreTimed) {
  cluster_.Class("timed-gpu", R"(device.driver == "timed.example.com")");
  cluster_.Node("node-a", {}, {{"pods", "100"}});
  cluster_.Slice("node-a", "timed.example.com", {DeviceSpec{"gpu-0", {}, "", 0}});
  const std::string bind =
      "scheduler_plugin_execution_duration_seconds_count{extension_point=\"Bind\","
      "plugin=\"DefaultBinder\",status=\"Success\"}";
  const double binds_before = SeriesValue(metrics::RenderText(), bind);
  Start();
  cluster_.Claim(cluster_.ClaimSpec("first", "timed-gpu"));
  cluster_.Pod(cluster_.PodSpec("first", {"first"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    for (const api::corev1::Pod& pod : cluster_.Pods()) {
      if (pod.metadata.name == "first") return !pod.spec.node_name.empty();
    }
    return false;
  }));
  for (int i = 0; i < 9; ++i) cluster_.Pod(cluster_.PodSpec("plain-" + std::to_string(i), {}));
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    int bound = 0;
    for (const api::corev1::Pod& pod : cluster_.Pods()) bound += !pod.spec.node_name.empty();
    return bound == 10;
  }));
  // The Bind call is timed once it returned, a moment after the Pod was seen bound.
  std::string text = metrics::RenderText();
  for (int i = 0; i < 60000 && SeriesValue(text, bind) < binds_before + 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    text = metrics::RenderText();
  }
  EXPECT_EQ(SeriesValue(text, bind), binds_before + 1) << text;
  for (const char* point : {"PreFilter", "Filter", "Reserve", "PreBind"}) {
    EXPECT_GE(
        SeriesValue(text, "scheduler_plugin_execution_duration_seconds_count{extension_point=\"" +
                              std::string(point) +
                              "\",plugin=\"DynamicResources\",status=\"Success\"}"),
        1)
        << point << "\n"
        << text;
  }
}

}  // namespace
}  // namespace draplane::scheduler
