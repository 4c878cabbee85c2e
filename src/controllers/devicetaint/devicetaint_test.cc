#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "api/device_taints.h"
#include "client/typed.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/random.h"
#include "controllers/devicetaint/controller.h"
#include "controllers/devicetaint/evaluator.h"
#include "testing/test_api.h"

namespace draplane::controllers::devicetaint {
namespace {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Timestamp kT0 = Timestamp(std::chrono::seconds(1'700'000'000));

rv1::ResourceSlice Slice(const std::string& node, int64_t generation,
                         std::vector<std::string> devices) {
  rv1::ResourceSlice s;
  s.metadata.name = node + "-gpu";
  s.spec.driver = "gpu.nvidia.com";
  s.spec.pool.name = node;
  s.spec.pool.generation = generation;
  s.spec.pool.resource_slice_count = 1;
  s.spec.node_name = node;
  for (std::string& d : devices) {
    rv1::Device device;
    device.name = std::move(d);
    s.spec.devices.push_back(std::move(device));
  }
  return s;
}

rv1::DeviceTaint Taint(std::string effect, Timestamp added) {
  rv1::DeviceTaint t;
  t.key = "gpu.nvidia.com/unhealthy";
  t.effect = std::move(effect);
  t.time_added = api::Time::FromTimestamp(added);
  return t;
}

rv1::ResourceClaim Claim(const std::string& ns, const std::string& name, const std::string& pool,
                         const std::string& device, const std::string& pod_uid,
                         std::vector<rv1::DeviceToleration> tolerations = {}) {
  rv1::ResourceClaim c;
  c.metadata.namespace_ = ns;
  c.metadata.name = name;
  c.metadata.uid = "claim-" + name;
  rv1::DeviceRequest request;
  request.name = "gpu";
  request.exactly.emplace();
  request.exactly->device_class_name = "gpu.nvidia.com";
  c.spec.devices.requests.push_back(request);
  rv1::AllocationResult a;
  rv1::DeviceRequestAllocationResult r;
  r.request = "gpu";
  r.driver = "gpu.nvidia.com";
  r.pool = pool;
  r.device = device;
  r.tolerations = std::move(tolerations);
  a.devices.results.push_back(r);
  c.status.allocation = a;
  rv1::ResourceClaimConsumerReference ref;
  ref.resource = "pods";
  ref.name = "pod";
  ref.uid = pod_uid;
  c.status.reserved_for.push_back(ref);
  return c;
}

cv1::Pod Pod(const std::string& ns, const std::string& name, const std::string& uid,
             int32_t priority = 0) {
  cv1::Pod p;
  p.metadata.namespace_ = ns;
  p.metadata.name = name;
  p.metadata.uid = uid;
  p.spec.node_name = "n1";
  p.spec.priority = priority;
  cv1::Container c;
  c.name = "main";
  c.image = "app:1";
  p.spec.containers.push_back(c);
  return p;
}

rv1::DeviceTaintRule Rule(const std::string& name, std::string effect,
                          std::optional<std::string> pool, std::optional<std::string> device) {
  rv1::DeviceTaintRule r;
  r.metadata.name = name;
  r.metadata.uid = "rule-" + name;
  r.metadata.generation = 1;
  r.spec.device_selector.emplace();
  r.spec.device_selector->driver = "gpu.nvidia.com";
  r.spec.device_selector->pool = std::move(pool);
  r.spec.device_selector->device = std::move(device);
  r.spec.taint.key = "platform.example.com/maintenance";
  r.spec.taint.effect = std::move(effect);
  r.spec.taint.time_added = api::Time::FromTimestamp(kT0);
  return r;
}

rv1::DeviceToleration Tolerate(std::optional<int64_t> seconds) {
  rv1::DeviceToleration t;
  t.key = "gpu.nvidia.com/unhealthy";
  t.operator_ = "Exists";
  t.effect = "NoExecute";
  t.toleration_seconds = seconds;
  return t;
}

// Borrowing snapshot over owned objects.
struct World {
  std::vector<rv1::ResourceSlice> slices;
  std::vector<rv1::DeviceTaintRule> rules;
  std::vector<rv1::ResourceClaim> claims;
  std::vector<cv1::Pod> pods;
  Snapshot View() const {
    Snapshot s;
    for (const auto& o : slices) s.slices.push_back(&o);
    for (const auto& o : rules) s.rules.push_back(&o);
    for (const auto& o : claims) s.claims.push_back(&o);
    for (const auto& o : pods) s.pods.push_back(&o);
    return s;
  }
};

World TwoPods() {
  World w;
  w.slices.push_back(Slice("n1", 2, {"gpu-0", "gpu-1"}));
  w.claims.push_back(Claim("team-a", "c0", "n1", "gpu-0", "uid-a"));
  w.claims.push_back(Claim("team-b", "c1", "n1", "gpu-1", "uid-b"));
  w.pods.push_back(Pod("team-a", "a", "uid-a", 100));
  w.pods.push_back(Pod("team-b", "b", "uid-b", 1000));
  return w;
}

TEST(EvaluatorTest, UntoleratedSliceTaintEvictsAtTimeAdded) {
  World w = TwoPods();
  w.slices[0].spec.devices[1].taints.push_back(Taint("NoExecute", kT0));
  std::vector<PodEviction> e = Evaluate(w.View());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].name, "b");
  EXPECT_EQ(e[0].when, kT0);
  ASSERT_EQ(e[0].reasons.size(), 1u);
  EXPECT_EQ(e[0].reasons[0].ToString(),
            "ResourceSlice n1-gpu gpu.nvidia.com/n1/gpu-1 taint gpu.nvidia.com/unhealthy");
}

TEST(EvaluatorTest, NoScheduleAndNoneDoNotEvictAndOldGenerationsDoNotCount) {
  World w = TwoPods();
  w.slices[0].spec.devices[0].taints.push_back(Taint("NoSchedule", kT0));
  w.slices[0].spec.devices[1].taints.push_back(Taint("None", kT0));
  EXPECT_TRUE(Evaluate(w.View()).empty());
  rv1::ResourceSlice stale = Slice("n1", 1, {"gpu-0"});
  stale.metadata.name = "stale";
  stale.spec.devices[0].taints.push_back(Taint("NoExecute", kT0));
  w.slices.push_back(stale);
  EXPECT_TRUE(Evaluate(w.View()).empty());
}

TEST(EvaluatorTest, TolerationSecondsDelayAndUnboundedTolerationNeverEvicts) {
  World w = TwoPods();
  w.slices[0].spec.devices[0].taints.push_back(Taint("NoExecute", kT0));
  w.claims[0] = Claim("team-a", "c0", "n1", "gpu-0", "uid-a", {Tolerate(300), Tolerate(60)});
  std::vector<PodEviction> e = Evaluate(w.View());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].when, kT0 + std::chrono::seconds(60));
  w.claims[0] = Claim("team-a", "c0", "n1", "gpu-0", "uid-a", {Tolerate(std::nullopt)});
  EXPECT_TRUE(Evaluate(w.View()).empty());
  // Seconds beyond any Timestamp: never (adding them overflowed).
  w.claims[0] = Claim("team-a", "c0", "n1", "gpu-0", "uid-a",
                      {Tolerate(std::numeric_limits<int64_t>::max())});
  EXPECT_TRUE(Evaluate(w.View()).empty());
}

TEST(EvaluatorTest, RulesSelectByDriverPoolDevice) {
  World w = TwoPods();
  w.rules.push_back(Rule("drain", "NoExecute", "n1", "gpu-0"));
  std::vector<PodEviction> e = Evaluate(w.View());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].name, "a");
  EXPECT_EQ(e[0].reasons[0].ToString(), "DeviceTaintRule drain");
  w.rules[0] = Rule("drain", "NoExecute", "n2", std::nullopt);
  EXPECT_TRUE(Evaluate(w.View()).empty());
}

TEST(EvaluatorTest, EmptyOrMissingSelectorSelectsNothingWithoutTheAnnotation) {
  World w = TwoPods();
  rv1::DeviceTaintRule all = Rule("all", "NoExecute", std::nullopt, std::nullopt);
  all.spec.device_selector.reset();
  w.rules.push_back(all);
  EXPECT_TRUE(api::SelectsEverything(all));
  EXPECT_TRUE(Evaluate(w.View()).empty());
  w.rules[0].spec.device_selector.emplace();  // {}: also everything
  EXPECT_TRUE(Evaluate(w.View()).empty());
  w.rules[0].metadata.annotations[std::string(api::kSelectAllAnnotation)] = "true";
  EXPECT_EQ(Evaluate(w.View()).size(), 2u);
}

TEST(EvaluatorTest, DeletingAndUnscheduledPodsAreNotEvicted) {
  World w = TwoPods();
  w.rules.push_back(Rule("drain", "NoExecute", "n1", std::nullopt));
  w.pods[0].metadata.deletion_timestamp = api::Time::FromTimestamp(kT0);
  w.pods[1].spec.node_name.clear();
  EXPECT_TRUE(Evaluate(w.View()).empty());
}

TEST(EvaluatorTest, NoneRuleReportsWhatNoExecuteWouldDo) {
  World w = TwoPods();
  w.rules.push_back(Rule("dry-run", "None", "n1", std::nullopt));
  EXPECT_TRUE(Evaluate(w.View()).empty());  // nothing is evicted
  RuleReport report = ReportRule(w.View(), w.rules[0]);
  EXPECT_EQ(report.published_devices, 2);
  EXPECT_EQ(report.allocated_devices, 2);
  ASSERT_EQ(report.pods.size(), 2u);
  EXPECT_THAT(report.namespaces, ElementsAre("team-a", "team-b"));
  api::metav1::Condition c = RuleCondition(w.rules[0], report, 0);
  EXPECT_EQ(c.type, "EvictionInProgress");
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "NoEffect");
  EXPECT_EQ(c.message,
            "2 published devices selected. 2 allocated devices selected. 2 pods would be evicted "
            "in 2 different namespaces if the effect was NoExecute. Pods: team-a/a (priority "
            "100), team-b/b (priority 1000). Tenants affected: team-a, team-b. This information "
            "will not be updated again. Recreate the DeviceTaintRule to trigger an update.");
  EXPECT_THAT(RuleCondition(w.rules[0], report, 0, 1).message,
              HasSubstr("team-a/a (priority 100) and 1 more."));
}

TEST(EvaluatorTest, NoExecuteRuleConditions) {
  World w = TwoPods();
  w.rules.push_back(Rule("drain", "NoExecute", "n1", "gpu-1"));
  RuleReport report = ReportRule(w.View(), w.rules[0]);
  api::metav1::Condition c = RuleCondition(w.rules[0], report, 0);
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "PodsPendingEviction");
  EXPECT_EQ(c.message, "1 pod needs to be evicted in 1 namespace.");
  w.pods.pop_back();
  report = ReportRule(w.View(), w.rules[0]);
  c = RuleCondition(w.rules[0], report, 1);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "Completed");
  EXPECT_EQ(c.message, "1 pod evicted since starting the controller.");
  EXPECT_EQ(RuleCondition(w.rules[0], report, 0).reason, "NotStarted");
  EXPECT_EQ(RuleCondition(Rule("x", "NoSchedule", "n1", {}), report, 0).reason, "OtherEffect");
}

// The controller against the API server (testing/test_api.h): evictions and rule status.
class ControllerTest : public ::testing::Test {
 protected:
  template <typename T>
  T Create(const T& object) {
    StatusOr<T> created = client::Create(api_, object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return *created;
  }
  // Creates a pod and its claim (reserved for it) on device `device` of n1.
  void PodWithClaim(const std::string& ns, const std::string& name, const std::string& device,
                    std::vector<rv1::DeviceToleration> tolerations = {}) {
    cv1::Namespace n;
    n.metadata.name = ns;
    client::Create(api_, n).status().IgnoreError();  // may exist already
    cv1::Pod pod = Create(Pod(ns, name, ""));
    rv1::ResourceClaim claim =
        Claim(ns, name + "-claim", "n1", device, pod.metadata.uid, std::move(tolerations));
    rv1::ResourceClaim created = Create(claim);
    created.status = claim.status;
    StatusOr<rv1::ResourceClaim> allocated = client::UpdateStatus(api_, created);
    ASSERT_TRUE(allocated.ok()) << allocated.status().ToString();
  }
  // The fixture owns the controller so that TearDown stops the informers, whose threads call its
  // handlers, before the controller goes away.
  DeviceTaintController* Start() {
    controller_ = std::make_unique<DeviceTaintController>(
        api_, informers_, clock_,
        DeviceTaintControllerOptions{.rule_status_period = std::chrono::seconds(10)});
    auto changed = [this] {
      MutexLock lock(mu_);
      ++changes_;
      cv_.NotifyAll();
    };
    informers_.Get<cv1::Pod>().AddHandlers(
        {.on_add = [changed](const auto&) { changed(); },
         .on_update = [changed](const auto&, const auto&) { changed(); },
         .on_delete = [changed](const auto&) { changed(); }});
    informers_.Get<rv1::DeviceTaintRule>().AddHandlers(
        {.on_add = [changed](const auto&) { changed(); },
         .on_update = [changed](const auto&, const auto&) { changed(); },
         .on_delete = [changed](const auto&) { changed(); }});
    informers_.Start();
    EXPECT_TRUE(informers_.WaitForSync());
    return controller_.get();
  }
  void TearDown() override {
    informers_.Stop();
    controller_.reset();
  }
  // Blocks until the caches satisfy `done` (re-checked on every cache change; the 60 s
  // limit only guards against hangs).
  bool WaitForCache(const std::function<bool()>& done) {
    MutexLock lock(mu_);
    return cv_.WaitFor(lock, std::chrono::seconds(60), done);
  }
  std::optional<api::metav1::Condition> RuleStatus(const std::string& name) {
    StatusOr<rv1::DeviceTaintRule> rule = client::Get<rv1::DeviceTaintRule>(api_, "", name);
    if (!rule.ok()) return std::nullopt;
    for (const auto& c : rule->status.conditions) {
      if (c.type == "EvictionInProgress") return c;
    }
    return std::nullopt;
  }

  ManualClock clock_{kT0};
  draplane::testing::TestApi api_{{.clock = &clock_}};
  client::SharedInformers informers_{api_};
  std::unique_ptr<DeviceTaintController> controller_;
  Mutex mu_;
  CondVar cv_;
  int64_t changes_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

// The value of an unlabelled series in the process's metrics, 0 when it is not there yet.
double MetricValue(const std::string& name) {
  std::string text = metrics::RenderText();
  size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + name.size() + 2));
}

TEST_F(ControllerTest, DryRunReportsThenNoExecuteEvictsExactlyThosePods) {
  rv1::ResourceSlice slice = Slice("n1", 1, {"gpu-0", "gpu-1", "gpu-2"});
  Create(slice);
  PodWithClaim("team-a", "train", "gpu-0");
  PodWithClaim("team-b", "serve", "gpu-1");
  PodWithClaim("team-b", "other", "gpu-2");
  rv1::DeviceTaintRule rule = Rule("drain", "None", "n1", std::nullopt);
  rule.spec.taint.time_added.reset();
  Create(rule);
  DeviceTaintController* controller = Start();
  ASSERT_TRUE(controller->Sync("rule:drain").ok());
  ASSERT_TRUE(controller->Sync("evict").ok());
  std::optional<api::metav1::Condition> c = RuleStatus("drain");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->reason, "NoEffect");
  EXPECT_THAT(c->message, HasSubstr("3 published devices selected. 3 allocated devices selected. "
                                    "3 pods would be evicted in 2 different namespaces"));
  EXPECT_THAT(c->message, HasSubstr("team-a/train (priority 0), team-b/other (priority 0), "
                                    "team-b/serve (priority 0)"));
  EXPECT_EQ(controller->evicted(), 0);
  EXPECT_EQ(client::List<cv1::Pod>(api_, "")->items.size(), 3u);
}

TEST_F(ControllerTest, NoExecuteRuleEvictsAndReportsCompletion) {
  Create(Slice("n1", 1, {"gpu-0", "gpu-1"}));
  PodWithClaim("team-a", "train", "gpu-0");
  PodWithClaim("team-b", "serve", "gpu-1");
  Create(Rule("drain", "NoExecute", "n1", "gpu-0"));
  DeviceTaintController* controller = Start();
  ASSERT_TRUE(controller->Sync("rule:drain").ok());
  std::optional<api::metav1::Condition> c = RuleStatus("drain");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "PodsPendingEviction");

  const double deletions_before =
      MetricValue("device_taint_eviction_controller_pod_deletions_total");
  const double latencies_before =
      MetricValue("device_taint_eviction_controller_pod_deletion_duration_seconds_count");
  ASSERT_TRUE(controller->Sync("evict").ok());
  EXPECT_EQ(controller->evicted(), 1);
  // Upstream's eviction metrics count it.
  EXPECT_EQ(MetricValue("device_taint_eviction_controller_pod_deletions_total"),
            deletions_before + 1);
  EXPECT_EQ(MetricValue("device_taint_eviction_controller_pod_deletion_duration_seconds_count"),
            latencies_before + 1);
  // Bound pods end gracefully: it carries the condition and a deletionTimestamp.
  StatusOr<cv1::Pod> train = client::Get<cv1::Pod>(api_, "team-a", "train");
  ASSERT_TRUE(train.ok());
  EXPECT_TRUE(train->metadata.deletion_timestamp.has_value());
  bool disruption = false;
  for (const cv1::PodCondition& pc : train->status.conditions) {
    if (pc.type == "DisruptionTarget") {
      disruption = pc.status == "True" && pc.reason == "DeletionByDeviceTaintManager";
    }
  }
  EXPECT_TRUE(disruption);
  EXPECT_FALSE(client::Get<cv1::Pod>(api_, "team-b", "serve")->metadata.deletion_timestamp);

  // Once the eviction is visible and the status period has passed: Completed.
  ASSERT_TRUE(WaitForCache([&] {
    auto pod = informers_.Get<cv1::Pod>().Get("team-a", "train");
    auto rule = informers_.Get<rv1::DeviceTaintRule>().Get("", "drain");
    return pod != nullptr && pod->metadata.deletion_timestamp.has_value() && rule != nullptr &&
           !rule->status.conditions.empty();
  }));
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(controller->Sync("rule:drain").ok());
  c = RuleStatus("drain");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "Completed");
  EXPECT_EQ(c->message, "1 pod evicted since starting the controller.");

  bool event = false;
  controller->Stop();  // flushes events
  StatusOr<client::ObjectList<cv1::Event>> events = client::List<cv1::Event>(api_, "team-a");
  ASSERT_TRUE(events.ok());
  for (const cv1::Event& e : events->items) {
    event =
        event || (e.reason == "DeviceTaintManagerEviction" && e.message == "Marking for deletion");
  }
  EXPECT_TRUE(event);
}

TEST_F(ControllerTest, APodCountsOnceForARuleThatTaintsSeveralOfItsDevices) {
  Create(Slice("n1", 1, {"gpu-0", "gpu-1"}));
  cv1::Namespace n;
  n.metadata.name = "team-a";
  ASSERT_TRUE(client::Create(api_, n).ok());
  cv1::Pod pod = Create(Pod("team-a", "train", ""));
  rv1::ResourceClaim claim = Claim("team-a", "train-claim", "n1", "gpu-0", pod.metadata.uid);
  rv1::DeviceRequestAllocationResult second = claim.status.allocation->devices.results[0];
  second.device = "gpu-1";
  claim.status.allocation->devices.results.push_back(second);
  rv1::ResourceClaim created = Create(claim);
  created.status = claim.status;
  ASSERT_TRUE(client::UpdateStatus(api_, created).ok());
  Create(Rule("drain", "NoExecute", "n1", std::nullopt));
  DeviceTaintController* controller = Start();
  ASSERT_TRUE(controller->Sync("evict").ok());
  EXPECT_EQ(controller->evicted(), 1);
  ASSERT_TRUE(WaitForCache([&] {
    auto p = informers_.Get<cv1::Pod>().Get("team-a", "train");
    auto rule = informers_.Get<rv1::DeviceTaintRule>().Get("", "drain");
    return p != nullptr && p->metadata.deletion_timestamp.has_value() && rule != nullptr;
  }));
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(controller->Sync("rule:drain").ok());
  std::optional<api::metav1::Condition> c = RuleStatus("drain");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->reason, "Completed");
  EXPECT_EQ(c->message, "1 pod evicted since starting the controller.");
}

TEST_F(ControllerTest, SliceTaintWithTolerationSecondsEvictsOnlyAfterThem) {
  rv1::ResourceSlice slice = Slice("n1", 1, {"gpu-0"});
  slice.spec.devices[0].taints.push_back(Taint("NoExecute", kT0));
  Create(slice);
  PodWithClaim("team-a", "train", "gpu-0", {Tolerate(30)});
  DeviceTaintController* controller = Start();
  ASSERT_TRUE(controller->Sync("evict").ok());
  EXPECT_EQ(controller->evicted(), 0);
  clock_.Advance(std::chrono::seconds(29));
  ASSERT_TRUE(controller->Sync("evict").ok());
  EXPECT_EQ(controller->evicted(), 0);
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(controller->Sync("evict").ok());
  EXPECT_EQ(controller->evicted(), 1);
}

}  // namespace
}  // namespace draplane::controllers::devicetaint
