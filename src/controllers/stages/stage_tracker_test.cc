// The claim stage tracker as the controller manager runs it (ControllerManager with only the
// claim stage metrics on, its own informers over the in-process API server): a manual clock steps
// between the writes, so each stage's duration is exact and the histogram's buckets and counts are
// compared exactly (issue 23: allocation ~100 ms, prepare ~2 s).
#include "controllers/stages/stage_tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "client/typed.h"
#include "controllers/controller_manager.h"
#include "testing/cluster.h"

namespace draplane::controllers {
namespace {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using ::testing::HasSubstr;
using ::testing::Not;

class StageTrackerTest : public ::testing::Test {
 protected:
  StageTrackerTest() {
    cluster_.Namespace("team-a");
    cluster_.Namespace("team-b");
  }
  void TearDown() override {
    if (manager_) manager_->Stop();
  }

  void StartTracker(std::vector<std::string> tenants) {
    ControllerManagerOptions options;
    options.resource_claims = false;
    options.garbage_collector = false;
    options.namespaces = false;
    options.device_taint_eviction = false;
    options.claim_stage_metrics = true;
    options.claim_stages.tenants = std::move(tenants);
    manager_ = std::make_unique<ControllerManager>(api_, clock_, options);
    ASSERT_TRUE(manager_->Start().ok());
    tracker_ = manager_->claim_stages();
    ASSERT_NE(tracker_, nullptr);
  }

  // Runs `write`, which causes exactly one watch event, and waits until the tracker handled it
  // (the 60 s limit only guards against hangs).
  template <typename F>
  void Step(F write) {
    int64_t before = tracker_->events();
    write();
    for (int i = 0; i < 60000 && tracker_->events() == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GT(tracker_->events(), before);
  }

  // A Pod and a claim of `cluster_`'s builders, created in namespace `ns`.
  cv1::Pod NewPod(const std::string& ns, const std::string& name) {
    cv1::Pod pod = cluster_.PodSpec(name);
    pod.metadata.namespace_ = ns;
    StatusOr<cv1::Pod> created = client::Create(api_, pod);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : pod;
  }
  rv1::ResourceClaim NewClaim(const std::string& ns, const std::string& name,
                              const std::string& device_class) {
    rv1::ResourceClaim claim = cluster_.ClaimSpec(name, device_class);
    claim.metadata.namespace_ = ns;
    StatusOr<rv1::ResourceClaim> created = client::Create(api_, claim);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : claim;
  }

  // Writes the claim's status: allocation and reservation for `pod` (as the scheduler's PreBind
  // does in one write), or the agent's Ready device condition.
  void Allocate(rv1::ResourceClaim& claim, const cv1::Pod& pod) {
    rv1::AllocationResult allocation;
    rv1::DeviceRequestAllocationResult result;
    result.request = "req";  // Cluster::ClaimSpec's request
    result.driver = "gpu.example.com";
    result.pool = "node-1";
    result.device = "gpu-0";
    allocation.devices.results.push_back(result);
    claim.status.allocation = allocation;
    rv1::ResourceClaimConsumerReference ref;
    ref.resource = "pods";
    ref.name = pod.metadata.name;
    ref.uid = pod.metadata.uid;
    claim.status.reserved_for.push_back(ref);
    Update(claim);
  }
  void MarkPrepared(rv1::ResourceClaim& claim) {
    rv1::AllocatedDeviceStatus device;
    device.driver = "gpu.example.com";
    device.pool = "node-1";
    device.device = "gpu-0";
    api::metav1::Condition ready;
    ready.type = "Ready";
    ready.status = "True";
    ready.reason = "Prepared";
    ready.last_transition_time = api::Time::FromTimestamp(clock_.Now());
    device.conditions.push_back(ready);
    claim.status.devices.push_back(device);
    Update(claim);
  }
  void Update(rv1::ResourceClaim& claim) {
    StatusOr<rv1::ResourceClaim> updated = client::UpdateStatus(api_, claim);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    claim = *updated;
  }
  void Bind(const cv1::Pod& pod) {
    ASSERT_TRUE(client::BindPod(api_, pod.metadata.namespace_, pod.metadata.name, pod.metadata.uid,
                                "node-1")
                    .ok());
  }
  void MarkReady(const cv1::Pod& pod) {
    StatusOr<cv1::Pod> current =
        client::Get<cv1::Pod>(api_, pod.metadata.namespace_, pod.metadata.name);
    ASSERT_TRUE(current.ok());
    cv1::PodCondition ready;
    ready.type = "Ready";
    ready.status = "True";
    current->status.conditions.push_back(ready);
    current->status.phase = "Running";
    ASSERT_TRUE(client::UpdateStatus(api_, *current).ok());
  }

  draplane::testing::Cluster cluster_;
  ManualClock& clock_ = cluster_.clock();
  draplane::testing::TestApi& api_ = cluster_.api();
  std::unique_ptr<ControllerManager> manager_;
  ClaimStageTracker* tracker_ = nullptr;
};

std::string Series(std::string_view suffix, std::string_view cls, std::string_view stage,
                   std::string_view tenant, std::string_view le = "") {
  std::string out = "draplane_claim_stage_duration_seconds_" + std::string(suffix) +
                    "{device_class=\"" + std::string(cls) + "\",stage=\"" + std::string(stage) +
                    "\",tenant=\"" + std::string(tenant) + "\"";
  if (!le.empty()) out += ",le=\"" + std::string(le) + "\"";
  return out + "}";
}

TEST_F(StageTrackerTest, InjectedDelaysLandInTheirBucketsExactly) {
  StartTracker({"team-a"});
  // Three claims in team-a (allowlisted) and two in team-b (reported as "other"): allocation
  // takes 100 ms, binding 50 ms, prepare 2 s, the Pod is ready 250 ms after.
  const std::string cls = "stage-test.example.com";
  struct Run {
    std::string ns;
    cv1::Pod pod;
    rv1::ResourceClaim claim;
  };
  std::vector<Run> runs;
  for (int i = 0; i < 5; ++i) {
    Run run;
    run.ns = i < 3 ? "team-a" : "team-b";
    Step([&] { run.pod = NewPod(run.ns, "pod-" + std::to_string(i)); });
    Step([&] { run.claim = NewClaim(run.ns, "claim-" + std::to_string(i), cls); });
    runs.push_back(std::move(run));
  }
  clock_.Advance(std::chrono::milliseconds(100));
  for (Run& run : runs) Step([&] { Allocate(run.claim, run.pod); });
  clock_.Advance(std::chrono::milliseconds(50));
  for (Run& run : runs) Step([&] { Bind(run.pod); });
  clock_.Advance(std::chrono::seconds(2));
  for (Run& run : runs) Step([&] { MarkPrepared(run.claim); });
  clock_.Advance(std::chrono::milliseconds(250));
  for (Run& run : runs) Step([&] { MarkReady(run.pod); });

  const std::string text = metrics::RenderText();
  for (auto [tenant, n] : {std::pair<std::string_view, int>{"team-a", 3}, {"other", 2}}) {
    const std::string count = " " + std::to_string(n);
    // created → allocated: 0.1 s, in le=0.1 and not in le=0.05.
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "created_to_allocated", tenant, "0.05") + " 0"));
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "created_to_allocated", tenant, "0.1") + count));
    EXPECT_THAT(text, HasSubstr(Series("sum", cls, "created_to_allocated", tenant) + " " +
                                (n == 3 ? "0.3" : "0.2")));
    // allocated → reserved: the same write.
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "allocated_to_reserved", tenant, "0.01") + count));
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "reserved_to_bound", tenant, "0.025") + " 0"));
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "reserved_to_bound", tenant, "0.05") + count));
    // bound → prepared: 2 s, in le=2.5 and not in le=1.
    EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "bound_to_prepared", tenant, "1") + " 0"));
    EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "bound_to_prepared", tenant, "2.5") + count));
    EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "prepared_to_ready", tenant, "0.1") + " 0"));
    EXPECT_THAT(text,
                HasSubstr(Series("bucket", cls, "prepared_to_ready", tenant, "0.25") + count));
    // created → ready: 2.4 s.
    EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "created_to_ready", tenant, "1") + " 0"));
    EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "created_to_ready", tenant, "2.5") + count));
    EXPECT_THAT(text, HasSubstr(Series("count", cls, "created_to_ready", tenant) + count));
  }
  EXPECT_THAT(text, Not(HasSubstr("tenant=\"team-b\"")));
  // Deleted claims are forgotten.
  for (Run& run : runs) {
    Step([&] {
      ASSERT_TRUE(client::Delete<rv1::ResourceClaim>(api_, run.ns, run.claim.metadata.name).ok());
    });
  }
  EXPECT_EQ(tracker_->tracked(), 0u);
}

TEST_F(StageTrackerTest, ClaimsListedAtStartSkipStagesWithAnUnknownStart) {
  const std::string cls = "listed.example.com";
  cv1::Pod pod = NewPod("team-a", "listed");
  rv1::ResourceClaim claim = NewClaim("team-a", "listed", cls);
  StartTracker({"team-a"});
  clock_.Advance(std::chrono::milliseconds(100));
  Step([&] { Allocate(claim, pod); });
  clock_.Advance(std::chrono::milliseconds(50));
  Step([&] { Bind(pod); });
  const std::string text = metrics::RenderText();
  // Its creation time is unknown: no created_to_allocated, but the later stages count.
  EXPECT_THAT(text, Not(HasSubstr(Series("count", cls, "created_to_allocated", "team-a"))));
  EXPECT_THAT(text, HasSubstr(Series("count", cls, "allocated_to_reserved", "team-a") + " 1"));
  EXPECT_THAT(text, HasSubstr(Series("bucket", cls, "reserved_to_bound", "team-a", "0.05") + " 1"));
}

// 10,000 namespaces, one claim each, allocated: the family keeps one series per stage for the
// allowlisted tenant and one for "other".
TEST_F(StageTrackerTest, TenThousandNamespacesKeepTheSeriesCountBounded) {
  StartTracker({"team-a"});
  const std::string cls = "cardinality.example.com";
  cv1::Pod pod = NewPod("team-a", "p");
  for (int i = 0; i < 10000; ++i) {
    std::string ns = i == 0 ? "team-a" : "tenant-" + std::to_string(i);
    if (i > 0) cluster_.Namespace(ns);
    rv1::ResourceClaim claim = NewClaim(ns, "c", cls);
    cv1::Pod owner = pod;
    owner.metadata.namespace_ = ns;
    Allocate(claim, owner);
  }
  // Every claim was seen allocated (the created_to_allocated count reaches 10,000).
  const std::string other = Series("count", cls, "created_to_allocated", "other") + " 9999";
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    text = metrics::RenderText();
    if (text.find(other) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_THAT(text, HasSubstr(other));
  EXPECT_THAT(text, HasSubstr(Series("count", cls, "created_to_allocated", "team-a") + " 1"));
  size_t series = 0;
  const std::string prefix = "draplane_claim_stage_duration_seconds_count{device_class=\"" + cls;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    ++series;
  }
  // created_to_allocated and allocated_to_reserved, for team-a and other.
  EXPECT_EQ(series, 4u);
}

}  // namespace
}  // namespace draplane::controllers
