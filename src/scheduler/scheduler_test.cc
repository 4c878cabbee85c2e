#include "scheduler/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "api/object.h"
#include "api/resource_claims.h"
#include "client/memory_api.h"
#include "client/shared_informers.h"
#include "client/typed.h"
#include "common/metrics.h"
#include "common/random.h"
#include "testing/cluster.h"

namespace draplane::scheduler {
namespace {

using draplane::testing::Cluster;
using draplane::testing::DeviceSpec;
using ::testing::ElementsAre;
namespace rv1 = api::resourcev1;

constexpr char kGpuClass[] = R"(device.driver == "gpu.example.com")";
// The binding conditions of a fabric-attached GPU (KEP-5007).
constexpr char kAttached[] = "gpu.example.com/attached";
constexpr char kAttachFailed[] = "gpu.example.com/attach-failed";

std::vector<DeviceSpec> Gpus(const std::string& prefix, int n, const std::string& model) {
  std::vector<DeviceSpec> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({prefix + std::to_string(i), {{"model", model}}, "", 0});
  }
  return out;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void StartScheduler(SchedulerOptions options = {}) {
    options.random_seed = 7;
    options.binder_threads = std::min(options.binder_threads, 4);
    scheduler_ = std::make_unique<Scheduler>(cluster_.api(), RealClock(), options);
    ASSERT_TRUE(scheduler_->Start().ok());
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
  }
  bool Bound(const std::string& pod) {
    StatusOr<api::corev1::Pod> p = cluster_.GetPod(pod);
    return p.ok() && !p->spec.node_name.empty();
  }
  std::string NodeOf(const std::string& pod) {
    StatusOr<api::corev1::Pod> p = cluster_.GetPod(pod);
    return p.ok() ? p->spec.node_name : "";
  }
  // node-a with one GPU, claim c1 for it, and pod p1 using c1.
  void OnePodForOneGpu() {
    cluster_.Class("gpu", kGpuClass);
    cluster_.Node("node-a");
    cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
    cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
    cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  }
  // The PodScheduled=False message of a pod, or "".
  std::string PendingMessage(const std::string& pod) {
    StatusOr<api::corev1::Pod> p = cluster_.GetPod(pod);
    if (!p.ok()) return "";
    for (const auto& c : p->status.conditions) {
      if (c.type == "PodScheduled" && c.status == "False") return c.message;
    }
    return "";
  }

  // Publishes the devices of `node`'s GPU slice with binding conditions, as a fabric manager
  // publishes devices that must be attached before use.
  void WithBindingConditions(const std::string& node) {
    StatusOr<rv1::ResourceSlice> slice =
        client::Get<rv1::ResourceSlice>(cluster_.api(), "", node + "-gpu.example.com");
    ASSERT_TRUE(slice.ok());
    for (rv1::Device& d : slice->spec.devices) {
      d.binding_conditions = {kAttached};
      d.binding_failure_conditions = {kAttachFailed};
      d.binds_to_node = true;
    }
    ASSERT_TRUE(client::Update(cluster_.api(), *slice).ok());
  }
  // node-a with `gpus` fabric-attached GPUs, optionally node-b with one plain GPU, claim c1 and
  // pod p1 using it.
  void FabricCluster(int gpus, bool plain_node) {
    cluster_.Class("gpu", kGpuClass);
    cluster_.Node("node-a");
    cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", gpus, "A100"));
    WithBindingConditions("node-a");
    if (plain_node) {
      cluster_.Node("node-b");
      cluster_.Slice("node-b", "gpu.example.com", Gpus("gpu-", 1, "A100"));
    }
    cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
    cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  }
  // Taints one device of `node`'s GPU slice (what a health monitor or attach controller does).
  void TaintDevice(const std::string& node, const std::string& device) {
    StatusOr<rv1::ResourceSlice> slice =
        client::Get<rv1::ResourceSlice>(cluster_.api(), "", node + "-gpu.example.com");
    ASSERT_TRUE(slice.ok());
    for (rv1::Device& d : slice->spec.devices) {
      if (d.name != device) continue;
      d.taints.emplace_back();
      d.taints.back().key = "gpu.example.com/unhealthy";
      d.taints.back().effect = "NoSchedule";
    }
    slice->spec.pool.generation++;
    ASSERT_TRUE(client::Update(cluster_.api(), *slice).ok());
  }
  // Sets a condition of every allocated device of `claim` in its status.devices, as the attach
  // controller of a fabric does.
  void SetDeviceCondition(const std::string& claim, const std::string& type,
                          const std::string& message = "") {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim(claim);
    ASSERT_TRUE(c.ok() && c->status.allocation.has_value());
    for (const auto& r : c->status.allocation->devices.results) {
      rv1::AllocatedDeviceStatus d;
      d.driver = r.driver;
      d.pool = r.pool;
      d.device = r.device;
      api::metav1::Condition condition;
      condition.type = type;
      condition.status = "True";
      condition.reason = type == kAttached ? "Attached" : "AttachFailed";
      condition.message = message;
      condition.last_transition_time = api::Time::FromTimestamp(cluster_.clock().Now());
      d.conditions.push_back(condition);
      c->status.devices.push_back(d);
    }
    ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *c).ok());
  }
  // The allocated devices of a claim ("pool/device"), or "".
  std::string DevicesOf(const std::string& claim) {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim(claim);
    if (!c.ok() || !c->status.allocation.has_value()) return "";
    std::string out;
    for (const auto& r : c->status.allocation->devices.results) {
      if (!out.empty()) out += ",";
      out += r.pool + "/" + r.device;
    }
    return out;
  }
  bool ReservedFor(const std::string& claim, const std::string& pod) {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim(claim);
    if (!c.ok()) return false;
    for (const auto& r : c->status.reserved_for) {
      if (r.name == pod) return true;
    }
    return false;
  }
  // The message of the first Event of `pod` with `reason` that contains `text`, or "".
  std::string EventWith(const std::string& pod, const std::string& reason,
                        const std::string& text = "") {
    for (const auto& e : cluster_.Events()) {
      if (e.involved_object.name == pod && e.reason == reason &&
          e.message.find(text) != std::string::npos) {
        return e.message;
      }
    }
    return "";
  }

  Cluster cluster_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, BindsAPodAndAllocatesItsClaim) {
  OnePodForOneGpu();
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(NodeOf("p1"), "node-a");
  StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim("c1");
  ASSERT_TRUE(claim.ok());
  ASSERT_TRUE(claim->status.allocation.has_value());
  ASSERT_EQ(claim->status.allocation->devices.results.size(), 1u);
  EXPECT_EQ(claim->status.allocation->devices.results[0].device, "gpu-0");
  ASSERT_EQ(claim->status.reserved_for.size(), 1u);
  EXPECT_EQ(claim->status.reserved_for[0].name, "p1");
  EXPECT_EQ(claim->metadata.finalizers,
            std::vector<std::string>{"resource.kubernetes.io/delete-protection"});
}

TEST_F(SchedulerTest, APodThatDoesNotFitStaysPendingWithAnExplanation) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Node("node-b", {{"pool", "cpu-only"}});
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
  cluster_.Claim(cluster_.ClaimSpec("c2", "gpu"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p2").empty(); }));
  std::string message = PendingMessage("p2");
  EXPECT_EQ(message.rfind("0/2 nodes are available: ", 0), 0u) << message;
  EXPECT_NE(message.find("1 node: request req: 0 of 1 needed device available (1 is already "
                         "allocated)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("1 node: no devices offered to the node"), std::string::npos) << message;
  // Events are recorded asynchronously, after the Pod's condition.
  EXPECT_TRUE(cluster_.WaitUntil([&] {
    for (const auto& e : cluster_.Events()) {
      if (e.reason == "FailedScheduling" && e.involved_object.name == "p2") return true;
    }
    return false;
  }));

  // Freeing the device (the claim controller would deallocate it after p1 ends) lets p2 run.
  ASSERT_TRUE(
      client::Delete<api::corev1::Pod>(cluster_.api(), "default", "p1", {.grace_period_seconds = 0})
          .ok());
  StatusOr<rv1::ResourceClaim> c1 = cluster_.GetClaim("c1");
  ASSERT_TRUE(c1.ok());
  c1->status.allocation.reset();
  c1->status.reserved_for.clear();
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *c1).ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
}

// A tenant may ask for int64-max devices in two requests of one claim (validation allows any
// count): the scheduler's per-class demand sum saturates and the Pod waits, explained; the sum
// overflowed before and took the scheduler (and the server it runs in) down.
TEST_F(SchedulerTest, RequestsForMoreDevicesThanInt64HoldsWaitInsteadOfOverflowing) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 2, "A100"));
  rv1::ResourceClaim claim = cluster_.ClaimSpec("huge", "gpu");
  claim.spec.devices.requests[0].exactly->count = std::numeric_limits<int64_t>::max();
  rv1::DeviceRequest second = claim.spec.devices.requests[0];
  second.name = "more";
  claim.spec.devices.requests.push_back(second);
  cluster_.Claim(claim);
  cluster_.Pod(cluster_.PodSpec("p1", {"huge"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p1").empty(); }));
  EXPECT_FALSE(Bound("p1"));
}

// DeviceTaintRules (KEP-5055) taint the devices they select in the scheduler's view, as a
// slice's own taints do: a NoSchedule rule keeps its device from new claims, a rule with effect
// None (a dry run) does not, a toleration admits it, and removing the rule gives it back.
TEST_F(SchedulerTest, ADeviceTaintRuleKeepsItsDevicesFromNewClaims) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 2, "A100"));
  auto rule = [](const std::string& name, const std::string& device, const std::string& effect) {
    rv1::DeviceTaintRule r;
    r.metadata.name = name;
    r.spec.device_selector.emplace();
    r.spec.device_selector->driver = "gpu.example.com";
    r.spec.device_selector->pool = "node-a";
    r.spec.device_selector->device = device;
    r.spec.taint.key = "example.com/" + name;
    r.spec.taint.effect = effect;
    return r;
  };
  ASSERT_TRUE(client::Create(cluster_.api(), rule("drain", "gpu-0", "NoSchedule")).ok());
  ASSERT_TRUE(client::Create(cluster_.api(), rule("dry-run", "gpu-1", "None")).ok());
  cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(DevicesOf("c1"), "node-a/gpu-1");

  cluster_.Claim(cluster_.ClaimSpec("c2", "gpu"));
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p2").empty(); }));
  EXPECT_NE(PendingMessage("p2").find("0 of 1 needed device available"), std::string::npos)
      << PendingMessage("p2");

  // A claim tolerating the taint may have the device.
  rv1::ResourceClaim tolerant = cluster_.ClaimSpec("c3", "gpu");
  rv1::DeviceToleration toleration;
  toleration.key = "example.com/drain";
  toleration.operator_ = "Exists";
  tolerant.spec.devices.requests[0].exactly->tolerations = {toleration};
  cluster_.Claim(tolerant);
  cluster_.Pod(cluster_.PodSpec("p3", {"c3"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p3"); }));
  EXPECT_EQ(DevicesOf("c3"), "node-a/gpu-0");
  // p3 ends and its claim is deallocated (the claim controller's part): the device is free but
  // still tainted for p2.
  ASSERT_TRUE(
      client::Delete<api::corev1::Pod>(cluster_.api(), "default", "p3", {.grace_period_seconds = 0})
          .ok());
  StatusOr<rv1::ResourceClaim> c3 = cluster_.GetClaim("c3");
  ASSERT_TRUE(c3.ok());
  c3->status.allocation.reset();
  c3->status.reserved_for.clear();
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *c3).ok());

  // Without the rule the device is free again: the pending Pod gets it.
  ASSERT_TRUE(client::Delete<rv1::DeviceTaintRule>(cluster_.api(), "", "drain").ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
  EXPECT_EQ(DevicesOf("c2"), "node-a/gpu-0");
}

TEST_F(SchedulerTest, NoDeviceIsGivenToTwoPods) {
  cluster_.Class("gpu", kGpuClass);
  for (int n = 0; n < 3; ++n) {
    std::string node = "node-" + std::to_string(n);
    cluster_.Node(node);
    cluster_.Slice(node, "gpu.example.com", Gpus("gpu-", 2, "A100"));
  }
  for (int i = 0; i < 8; ++i) {
    cluster_.Claim(cluster_.ClaimSpec("c" + std::to_string(i), "gpu"));
    cluster_.Pod(cluster_.PodSpec("p" + std::to_string(i), {"c" + std::to_string(i)}));
  }
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    int bound = 0;
    int pending = 0;
    for (const auto& p : cluster_.Pods()) {
      if (!p.spec.node_name.empty()) ++bound;
      for (const auto& c : p.status.conditions) {
        if (c.type == "PodScheduled" && c.status == "False") ++pending;
      }
    }
    return bound == 6 && pending == 2;
  }));
  std::set<std::string> devices;
  for (const auto& c : cluster_.Claims()) {
    if (!c.status.allocation) continue;
    for (const auto& r : c.status.allocation->devices.results) {
      EXPECT_TRUE(devices.insert(r.pool + "/" + r.device).second) << r.pool << "/" << r.device;
    }
  }
  EXPECT_EQ(devices.size(), 6u);
}

TEST_F(SchedulerTest, PrioritizedListPrefersTheFirstAlternativeAcrossNodes) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a100");
  cluster_.Node("node-h100");
  cluster_.Slice("node-a100", "gpu.example.com", Gpus("a100-", 2, "A100"));
  cluster_.Slice("node-h100", "gpu.example.com", Gpus("h100-", 1, "H100"));
  auto fallback = [&](const std::string& name) {
    rv1::ResourceClaim c;
    c.metadata.name = name;
    c.metadata.namespace_ = "default";
    rv1::DeviceRequest r;
    r.name = "gpus";
    rv1::DeviceSubRequest h100;
    h100.name = "h100";
    h100.device_class_name = "gpu";
    h100.allocation_mode = "ExactCount";
    h100.count = 1;
    h100.selectors.emplace_back();
    h100.selectors.back().cel.emplace();
    h100.selectors.back().cel->expression =
        R"(device.attributes["gpu.example.com"].model == "H100")";
    rv1::DeviceSubRequest pair = h100;
    pair.name = "a100-pair";
    pair.count = 2;
    pair.selectors.back().cel->expression =
        R"(device.attributes["gpu.example.com"].model == "A100")";
    r.first_available = {h100, pair};
    c.spec.devices.requests.push_back(r);
    return c;
  };
  cluster_.Claim(fallback("c1"));
  cluster_.Claim(fallback("c2"));
  cluster_.Claim(fallback("c3"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(NodeOf("p1"), "node-h100") << "the H100 scores higher than the A100 pair";
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
  EXPECT_EQ(NodeOf("p2"), "node-a100");
  StatusOr<rv1::ResourceClaim> c2 = cluster_.GetClaim("c2");
  ASSERT_TRUE(c2.ok() && c2->status.allocation.has_value());
  ASSERT_EQ(c2->status.allocation->devices.results.size(), 2u);
  EXPECT_EQ(c2->status.allocation->devices.results[0].request, "gpus/a100-pair");
  cluster_.Pod(cluster_.PodSpec("p3", {"c3"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p3").empty(); }));
  std::string message = PendingMessage("p3");
  EXPECT_NE(message.find("subrequest h100: 0 of 1 needed device available"), std::string::npos)
      << message;
  EXPECT_NE(message.find("subrequest a100-pair: 0 of 2 needed devices available"),
            std::string::npos)
      << message;
}

// --- Allocation-mode quotas (docs/design/holdings.md) -------------------------------------------

constexpr char kH100[] = R"(device.attributes["gpu.example.com"].model == "H100")";
constexpr char kA100[] = R"(device.attributes["gpu.example.com"].model == "A100")";

// A claim asking for one H100, else two A100s.
rv1::ResourceClaim H100ElseA100Pair(const std::string& name) {
  rv1::ResourceClaim c;
  c.metadata.name = name;
  c.metadata.namespace_ = "default";
  rv1::DeviceRequest r;
  r.name = "gpu";
  rv1::DeviceSubRequest h100;
  h100.name = "h100";
  h100.device_class_name = "h100";
  h100.allocation_mode = "ExactCount";
  h100.count = 1;
  rv1::DeviceSubRequest pair = h100;
  pair.name = "a100-pair";
  pair.device_class_name = "a100";
  pair.count = 2;
  r.first_available = {h100, pair};
  c.spec.devices.requests.push_back(r);
  return c;
}

api::corev1::ResourceQuota AllocationQuota(const std::string& name,
                                           std::map<std::string, std::string> hard) {
  api::corev1::ResourceQuota q;
  q.metadata.name = name;
  q.metadata.namespace_ = "default";
  q.metadata.annotations["draplane.dev/device-quota-mode"] = "Allocation";
  for (const auto& [key, value] : hard) q.spec.hard.emplace(key, *api::Quantity::Parse(value));
  return q;
}

constexpr char kH100Devices[] = "h100.deviceclass.resource.k8s.io/devices";

// Holds the first Pod charge's write (a quota status update with used > 0 on a thread that read
// the quota first: the charger's; a recount lists quotas, and the start's recounts write used 0)
// until Release, and counts the lists of the namespace's claims (a recount's reads).
class ChargeWriteGate {
 public:
  explicit ChargeWriteGate(Cluster& cluster) : cluster_(cluster) {
    cluster_.api().SetInterceptor([this](const client::ApiRequest& r) { return Intercept(r); });
  }
  ~ChargeWriteGate() {
    Release();
    cluster_.api().SetInterceptor(nullptr);
  }
  bool WaitReached() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return reached_; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_ = true;
    }
    cv_.notify_all();
  }
  int recount_reads() {
    std::lock_guard<std::mutex> lock(mu_);
    return recount_reads_;
  }

 private:
  std::optional<Status> Intercept(const client::ApiRequest& r) {
    if (r.verb == client::Verb::kList && r.resource->resource == "resourceclaims" &&
        r.namespace_ == "default") {
      std::lock_guard<std::mutex> lock(mu_);
      ++recount_reads_;
      return std::nullopt;
    }
    if (r.resource->resource != "resourcequotas") return std::nullopt;
    if (r.verb == client::Verb::kGet && std::this_thread::get_id() != test_thread_) {
      std::lock_guard<std::mutex> lock(mu_);
      charger_threads_.insert(std::this_thread::get_id());
      return std::nullopt;
    }
    if (r.verb != client::Verb::kUpdate || r.subresource != "status") return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!charger_threads_.contains(std::this_thread::get_id())) return std::nullopt;
    }
    const boost::json::value* used = r.body.as_object().if_contains("status");
    if (used != nullptr) used = used->as_object().if_contains("used");
    if (used != nullptr) used = used->as_object().if_contains(kH100Devices);
    if (used == nullptr || (used->is_string() && used->as_string() == "0")) return std::nullopt;
    std::unique_lock<std::mutex> lock(mu_);
    if (!reached_) {
      reached_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return release_; });
    }
    return std::nullopt;
  }

  Cluster& cluster_;
  const std::thread::id test_thread_ = std::this_thread::get_id();
  std::mutex mu_;
  std::condition_variable cv_;
  bool reached_ = false;
  bool release_ = false;
  std::set<std::thread::id> charger_threads_;
  int recount_reads_ = 0;
};

class QuotaSchedulerTest : public SchedulerTest {
 protected:
  // node-a: two H100s and four A100s; classes h100 and a100.
  void GpuNode() {
    cluster_.Class("h100", kH100);
    cluster_.Class("a100", kA100);
    cluster_.Node("node-a");
    std::vector<DeviceSpec> devices = Gpus("h100-", 2, "H100");
    for (const DeviceSpec& d : Gpus("a100-", 4, "A100")) devices.push_back(d);
    cluster_.Slice("node-a", "gpu.example.com", devices);
  }
  void CreateQuota(const api::corev1::ResourceQuota& q) {
    ASSERT_TRUE(client::Create(cluster_.api(), q).ok());
  }
  // status.used[key] of a quota ("" when unset).
  std::string Used(const std::string& quota, const std::string& key) {
    StatusOr<api::corev1::ResourceQuota> q =
        client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", quota);
    if (!q.ok()) return "";
    auto it = q->status.used.find(key);
    return it == q->status.used.end() ? "" : it->second.ToString();
  }
  std::vector<std::string> Requests(const std::string& claim) {
    std::vector<std::string> out;
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim(claim);
    if (!c.ok() || !c->status.allocation.has_value()) return out;
    for (const auto& r : c->status.allocation->devices.results) out.push_back(r.request);
    return out;
  }
  // Starts the scheduler (two binder threads) once the server's quota controller has synced
  // status.hard of quota "devices" (so no start recount's write conflicts with it and is redone),
  // and returns once its two start recounts (the quota's Add and the first holdings check) have
  // read the claims and written used 0: a charge write the gate holds afterwards is a Pod's.
  void StartAfterTheStartRecounts(ChargeWriteGate& gate) {
    ASSERT_TRUE(cluster_.WaitUntil([&] {
      StatusOr<api::corev1::ResourceQuota> q =
          client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", "devices");
      return q.ok() && q->status.hard.contains(kH100Devices);
    }));
    SchedulerOptions options;
    options.binder_threads = 2;
    StartScheduler(options);
    ASSERT_TRUE(cluster_.WaitUntil([&] { return gate.recount_reads() >= 2; }));
    ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "0"; }));
  }
  // node-a, quota "devices" of one H100 (Allocation mode), Pod p1 bound with claim c1 (an H100,
  // else an A100 pair), and the quota charged 1, in the store and in the scheduler's informer.
  // (A version of the quota that informer delivers after a later deallocation brings the charge
  // back into the scheduler's copy until the give-back's version arrives, holdings.md: a test
  // that deallocates must not race the charge's delivery.)
  void QuotaOfOneH100TakenByP1() {
    GpuNode();
    CreateQuota(AllocationQuota("devices", {{kH100Devices, "1"}}));
    cluster_.Claim(H100ElseA100Pair("c1"));
    cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
    informers_ = std::make_unique<client::SharedInformers>(cluster_.api());
    SchedulerOptions options;
    options.informers = informers_.get();
    StartScheduler(options);
    ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
    ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "1"; }));
    ASSERT_TRUE(cluster_.WaitUntil([&] {
      auto quota = informers_->Get<api::corev1::ResourceQuota>().Get("default", "devices");
      if (quota == nullptr) return false;
      auto used = quota->status.used.find(kH100Devices);
      return used != quota->status.used.end() && used->second.ToString() == "1";
    }));
  }
  std::unique_ptr<client::SharedInformers> informers_;
  bool HasEvent(const std::string& pod, const std::string& reason, std::string* message) {
    for (const auto& e : cluster_.Events()) {
      if (e.reason == reason && e.involved_object.name == pod) {
        *message = e.message;
        return true;
      }
    }
    return false;
  }
};

TEST_F(QuotaSchedulerTest, AnExhaustedQuotaMakesTheSameNodeFallBackAndDeallocationGivesItBack) {
  ASSERT_NO_FATAL_FAILURE(QuotaOfOneH100TakenByP1());
  EXPECT_EQ(Requests("c1"), std::vector<std::string>({"gpu/h100"}));

  // An H100 is still free, but the quota is used up: the same node's A100 pair.
  cluster_.Claim(H100ElseA100Pair("c2"));
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
  EXPECT_EQ(NodeOf("p2"), "node-a");
  EXPECT_EQ(Requests("c2"), std::vector<std::string>({"gpu/a100-pair", "gpu/a100-pair"}));
  EXPECT_EQ(Used("devices", kH100Devices), "1");
  std::string message;
  ASSERT_TRUE(cluster_.WaitUntil([&] { return HasEvent("p2", "QuotaFallback", &message); }));
  EXPECT_EQ(message,
            "request gpu: subrequest h100 refused by quota default/devices "
            "h100.deviceclass.resource.k8s.io/devices 1/1, allocated subrequest a100-pair");

  // The decision record says which tier was not taken and why, and which quota version decided.
  std::vector<api::draplanev1alpha1::AllocationDecision> decisions;
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    auto list = client::List<api::draplanev1alpha1::AllocationDecision>(cluster_.api(), "default");
    if (list.ok()) decisions = list->items;
    return decisions.size() == 2;
  }));
  const api::draplanev1alpha1::AllocationDecision* p2 = nullptr;
  for (const auto& d : decisions) {
    if (d.spec.pod.name == "p2") p2 = &d;
  }
  ASSERT_NE(p2, nullptr);
  EXPECT_EQ(p2->spec.outcome, "Allocated");
  EXPECT_EQ(p2->spec.node_name, "node-a");
  ASSERT_EQ(p2->spec.claims.size(), 1u);
  EXPECT_EQ(p2->spec.claims[0].name, "c2");
  EXPECT_EQ(p2->spec.claims[0].charges.at("a100.deviceclass.resource.k8s.io/devices").ToString(),
            "2");
  ASSERT_EQ(p2->spec.claims[0].requests.size(), 1u);
  const auto& request = p2->spec.claims[0].requests[0];
  EXPECT_EQ(request.subrequest, "a100-pair");
  EXPECT_EQ(request.devices.size(), 2u);
  ASSERT_EQ(request.tiers_not_taken.size(), 1u);
  EXPECT_EQ(request.tiers_not_taken[0].subrequest, "h100");
  bool quota_reason = false;
  for (const auto& r : request.tiers_not_taken[0].reasons) {
    quota_reason = quota_reason || (r.reason == "quota" &&
                                    r.message.find("quota default/devices") != std::string::npos);
  }
  EXPECT_TRUE(quota_reason);
  ASSERT_EQ(p2->spec.policy_version.inputs.size(), 1u);
  EXPECT_EQ(p2->spec.policy_version.inputs[0].name, "devices");
  EXPECT_EQ(p2->spec.policy_version.inputs[0].mode, "Allocation");
  EXPECT_FALSE(p2->spec.policy_version.inputs[0].resource_version.empty());

  // A Pod that takes only an H100 waits for the quota. The claim controller deallocates c1 when
  // p1 goes away: the quota gets its H100 back and the waiting Pod takes it. (It waits first so
  // that the outcome does not depend on when the scheduler's quota informer delivers the
  // give-back: it retries on that event.)
  cluster_.Claim(cluster_.ClaimSpec("c3", "h100"));
  cluster_.Pod(cluster_.PodSpec("p3", {"c3"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    return PendingMessage("p3").find("refused by quota default/devices") != std::string::npos;
  }));
  StatusOr<rv1::ResourceClaim> c1 = cluster_.GetClaim("c1");
  ASSERT_TRUE(c1.ok());
  c1->status.allocation.reset();
  c1->status.reserved_for.clear();
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *c1).ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p3"); }));
  EXPECT_EQ(NodeOf("p3"), "node-a");
  EXPECT_EQ(Requests("c3"), std::vector<std::string>({"req"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "1"; }));
}

// A deallocation's give-back counts at once (ClusterState::UpsertClaim): the next Pod takes the
// H100 the quota has room for again while the quota's status still shows it used, because the
// recount that writes the give-back is held meanwhile. (Before, the scheduler's copy of the
// quota said 1/1 until the recount's write reached its informer, and a Pod attempted in between
// fell back to the A100 pair.)
// H100s and A100s on different nodes: the quota keeps the second Pod from the H100 node, and it
// takes the A100 node's pair. The Event and the record name the quota and the node it refused on,
// not the chosen node's reason (it has no H100 at all).
TEST_F(QuotaSchedulerTest, AFallbackOntoAnotherNodeIsExplainedByTheQuota) {
  cluster_.Class("h100", kH100);
  cluster_.Class("a100", kA100);
  cluster_.Node("node-a");
  cluster_.Node("node-h");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("a100-", 4, "A100"));
  cluster_.Slice("node-h", "gpu.example.com", Gpus("h100-", 2, "H100"));
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "1"}}));
  cluster_.Claim(H100ElseA100Pair("c1"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  ASSERT_EQ(NodeOf("p1"), "node-h");
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "1"; }));

  cluster_.Claim(H100ElseA100Pair("c2"));
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
  EXPECT_EQ(NodeOf("p2"), "node-a");
  std::string message;
  ASSERT_TRUE(cluster_.WaitUntil([&] { return HasEvent("p2", "QuotaFallback", &message); }));
  EXPECT_EQ(message,
            "request gpu: subrequest h100 refused by quota default/devices "
            "h100.deviceclass.resource.k8s.io/devices 1/1 on node node-h, allocated subrequest "
            "a100-pair");

  const api::draplanev1alpha1::AllocationDecision* p2 = nullptr;
  std::vector<api::draplanev1alpha1::AllocationDecision> decisions;
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    auto list = client::List<api::draplanev1alpha1::AllocationDecision>(cluster_.api(), "default");
    if (list.ok()) decisions = list->items;
    for (const auto& d : decisions) {
      if (d.spec.pod.name == "p2") p2 = &d;
    }
    return p2 != nullptr;
  }));
  ASSERT_EQ(p2->spec.claims.size(), 1u);
  ASSERT_EQ(p2->spec.claims[0].requests.size(), 1u);
  const auto& tiers = p2->spec.claims[0].requests[0].tiers_not_taken;
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].subrequest, "h100");
  std::map<std::string, std::vector<std::string>> nodes_by_reason;
  std::map<std::string, int32_t> node_count_by_reason;
  for (const auto& r : tiers[0].reasons) {
    nodes_by_reason[r.reason] = r.nodes;
    node_count_by_reason[r.reason] = r.node_count;
  }
  EXPECT_EQ(nodes_by_reason["quota"], std::vector<std::string>{"node-h"});
  EXPECT_EQ(node_count_by_reason["quota"], 1) << "node-a has no H100 for the quota to refuse";
  // The chosen node's own reason stays, with its node.
  EXPECT_EQ(nodes_by_reason["class-selector-false"], std::vector<std::string>{"node-a"});
}

TEST_F(QuotaSchedulerTest, ADeallocationGivesTheQuotaBackBeforeItsStatusShowsIt) {
  ASSERT_NO_FATAL_FAILURE(QuotaOfOneH100TakenByP1());

  // Holds the give-back's write (status.used of the H100 key back to 0) until released.
  std::mutex mu;
  std::condition_variable cv;
  bool held = false;
  bool released = false;
  cluster_.api().SetInterceptor([&](const client::ApiRequest& r) -> std::optional<Status> {
    if (r.resource->resource != "resourcequotas" || r.verb != client::Verb::kUpdate ||
        r.subresource != "status" || !r.body.is_object()) {
      return std::nullopt;
    }
    const boost::json::value* used = r.body.as_object().if_contains("status");
    if (used != nullptr && used->is_object()) used = used->as_object().if_contains("used");
    if (used != nullptr && used->is_object()) used = used->as_object().if_contains(kH100Devices);
    if (used == nullptr || !used->is_string() || used->as_string() != "0") return std::nullopt;
    std::unique_lock<std::mutex> lock(mu);
    held = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
    return std::nullopt;
  });
  auto release = [&] {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  };
  // Whatever happens below, the held write goes on and the interceptor goes away.
  struct Cleanup {
    std::function<void()> release;
    Cluster& cluster;
    ~Cleanup() {
      release();
      cluster.api().SetInterceptor(nullptr);
    }
  } cleanup{release, cluster_};
  StatusOr<rv1::ResourceClaim> c1 = cluster_.GetClaim("c1");
  ASSERT_TRUE(c1.ok());
  c1->status.allocation.reset();
  c1->status.reserved_for.clear();
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *c1).ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return held; }));
  }
  EXPECT_EQ(Used("devices", kH100Devices), "1") << "the status still shows the H100 used";
  cluster_.Claim(H100ElseA100Pair("c3"));
  cluster_.Pod(cluster_.PodSpec("p3", {"c3"}));
  // Time for the scheduler to attempt p3 while the write is held (its charge then waits for the
  // recount). Shorter, the test would only lose its power to catch the old behaviour: p3 takes
  // an H100 either way once the write has landed.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  release();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p3"); }));
  EXPECT_EQ(Requests("c3"), std::vector<std::string>({"gpu/h100"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "1"; }));
}

TEST_F(QuotaSchedulerTest, APodTheQuotaRefusesEverywhereNamesTheQuota) {
  GpuNode();
  CreateQuota(AllocationQuota(
      "devices", {{kH100Devices, "0"}, {"a100.deviceclass.resource.k8s.io/devices", "1"}}));
  cluster_.Claim(H100ElseA100Pair("c1"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p1").empty(); }));
  std::string message = PendingMessage("p1");
  EXPECT_NE(message.find("subrequest h100: 0 of 1 needed device available (2 refused by quota "
                         "default/devices h100.deviceclass.resource.k8s.io/devices 0/0)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("subrequest a100-pair: 0 of 2 needed devices available (4 refused by "
                         "quota default/devices a100.deviceclass.resource.k8s.io/devices 0/1, "
                         "needs 2)"),
            std::string::npos)
      << message;
  // Raising the limit lets the Pod in.
  StatusOr<api::corev1::ResourceQuota> q =
      client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", "devices");
  ASSERT_TRUE(q.ok());
  q->spec.hard[kH100Devices] = api::Quantity::FromInt64(1);
  ASSERT_TRUE(client::Update(cluster_.api(), *q).ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(Requests("c1"), std::vector<std::string>({"gpu/h100"}));
}

TEST_F(QuotaSchedulerTest, TwoSchedulersNeverSpendTheLastUnitTwice) {
  cluster_.Class("h100", kH100);
  cluster_.Class("a100", kA100);
  for (int n = 0; n < 4; ++n) {
    std::string node = "node-" + std::to_string(n);
    cluster_.Node(node);
    cluster_.Slice(node, "gpu.example.com", Gpus("h100-", 4, "H100"));
  }
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "5"}}));
  for (int i = 0; i < 16; ++i) {
    std::string n = std::to_string(i);
    cluster_.Claim(cluster_.ClaimSpec("c" + n, "h100"));
    cluster_.Pod(cluster_.PodSpec("p" + n, {"c" + n}));
  }
  SchedulerOptions options;
  options.random_seed = 11;
  options.binder_threads = 4;
  options.identity = "second";
  Scheduler second(cluster_.api(), RealClock(), options);
  ASSERT_TRUE(second.Start().ok());
  StartScheduler();
  auto bound = [&] {
    int n = 0;
    for (const auto& p : cluster_.Pods()) n += p.spec.node_name.empty() ? 0 : 1;
    return n;
  };
  auto allocated = [&] {
    int n = 0;
    for (const auto& c : cluster_.Claims()) n += c.status.allocation.has_value() ? 1 : 0;
    return n;
  };
  // Settled: five Pods bound, the others told why, their refused allocations undone (that runs
  // asynchronously, and may end after the Pod was told) and `used` recounted (a replica's
  // recount may count an allocation that is about to be undone: one high, until the undo's
  // recount).
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    int pending = 0;
    for (const auto& p : cluster_.Pods()) {
      for (const auto& c : p.status.conditions) {
        if (c.type == "PodScheduled" && c.status == "False" &&
            c.message.find("refused by quota") != std::string::npos) {
          ++pending;
        }
      }
    }
    return bound() == 5 && pending == 11 && allocated() == 5 &&
           Used("devices", kH100Devices) == "5";
  })) <<
      [&] {
        std::string out =
            "bound " + std::to_string(bound()) + "; used " + Used("devices", kH100Devices);
        for (const auto& p : cluster_.Pods()) {
          for (const auto& c : p.status.conditions) {
            if (c.type == "PodScheduled") out += "\n" + p.metadata.name + ": " + c.message;
          }
        }
        for (const auto& c : cluster_.Claims()) {
          out += "\n" + c.metadata.name + (c.status.allocation ? " allocated" : " free");
        }
        return out;
      }();
  second.Stop();
  EXPECT_EQ(bound(), 5);
}

TEST_F(QuotaSchedulerTest, ChargesAreAllOrNothingAcrossQuotasAndNeverOverspend) {
  CreateQuota(AllocationQuota("a-wide", {{kH100Devices, "5"}}));
  CreateQuota(AllocationQuota("b-tight", {{kH100Devices, "1"}}));
  QuotaCharger charger(cluster_.api(), "test");
  allocator::ResourceList one{{kH100Devices, api::Quantity::FromInt64(1)}};
  ASSERT_TRUE(charger.Charge("default", {"a-wide", "b-tight"}, one).ok());
  EXPECT_EQ(Used("a-wide", kH100Devices), "1");
  EXPECT_EQ(Used("b-tight", kH100Devices), "1");
  // b-tight refuses the next one: a-wide, charged first (name order), gets it back.
  Status refused = charger.Charge("default", {"a-wide", "b-tight"}, one);
  EXPECT_EQ(refused.code(), StatusCode::kConflict);
  EXPECT_EQ(refused.message(),
            "quota default/b-tight h100.deviceclass.resource.k8s.io/devices 1/1");
  EXPECT_EQ(Used("a-wide", kH100Devices), "1");

  // Eight binder threads race for the four units a-wide has left.
  std::vector<std::thread> threads;
  std::atomic<int> charged{0};
  std::atomic<int> conflicts{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      Status s = charger.Charge("default", {"a-wide"}, one);
      if (s.ok()) ++charged;
      if (s.code() == StatusCode::kConflict) ++conflicts;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(charged.load(), 4);
  EXPECT_EQ(conflicts.load(), 4);
  EXPECT_EQ(Used("a-wide", kH100Devices), "5");
}

// The binding waits for its quota charge parked, like one waiting for binding conditions: while a
// charge batch is in flight (one binder thread writing it), later charges queue behind it without
// holding a binder thread each, and other Pods keep binding.
TEST_F(QuotaSchedulerTest, AChargeInFlightHoldsNoBinderThreadPerPod) {
  GpuNode();
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "5"}}));
  cluster_.Claim(H100ElseA100Pair("c1"));
  cluster_.Claim(H100ElseA100Pair("c2"));
  ChargeWriteGate gate(cluster_);
  StartAfterTheStartRecounts(gate);
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  ASSERT_TRUE(gate.WaitReached());
  // One binder writes p1's charge; p2's charge queues behind it, and a Pod without claims still
  // finds a binder (with a binder per waiting charge, both would be taken).
  cluster_.Pod(cluster_.PodSpec("p2", {"c2"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return ReservedFor("c2", "p2"); }));
  cluster_.Pod(cluster_.PodSpec("p3"));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p3"); }));
  EXPECT_FALSE(Bound("p1"));
  EXPECT_FALSE(Bound("p2"));
  gate.Release();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1") && Bound("p2"); }));
  EXPECT_EQ(Used("devices", kH100Devices), "2");
  std::string message;
  EXPECT_FALSE(HasEvent("p1", "BindingConditionsPending", &message)) << message;
  EXPECT_EQ(scheduler_->stats().errors, 0);
  scheduler_->Stop();
}

// The charger writes on the copy it last wrote (no read per batch), but never refuses on it: a
// give-back by another writer is seen, and a charge by another writer makes the write conflict.
TEST_F(QuotaSchedulerTest, TheChargerRefusesOnlyOnAFreshRead) {
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "2"}}));
  QuotaCharger charger(cluster_.api(), "test");
  allocator::ResourceList one{{kH100Devices, api::Quantity::FromInt64(1)}};
  ASSERT_TRUE(charger.Charge("default", {"devices"}, one).ok());
  ASSERT_TRUE(charger.Charge("default", {"devices"}, one).ok());
  EXPECT_EQ(Used("devices", kH100Devices), "2");
  // Read, modify, write; again on a Conflict (the server's quota controller writes
  // status.hard concurrently after the create).
  auto set_used = [&](int64_t used) {
    Status written;
    for (int attempt = 0; attempt < 10; ++attempt) {
      StatusOr<api::corev1::ResourceQuota> q =
          client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", "devices");
      ASSERT_TRUE(q.ok());
      q->status.used[kH100Devices] = api::Quantity::FromInt64(used);
      written = client::UpdateStatus(cluster_.api(), *q, "recount").status();
      if (written.code() != StatusCode::kConflict) break;
    }
    ASSERT_TRUE(written.ok()) << written.ToString();
  };
  set_used(0);  // another writer gave both back: the stale copy says 2/2
  ASSERT_TRUE(charger.Charge("default", {"devices"}, one).ok());
  EXPECT_EQ(Used("devices", kH100Devices), "1");
  set_used(2);  // another writer spent the rest: the stale copy says 1/2, the write conflicts
  Status refused = charger.Charge("default", {"devices"}, one);
  EXPECT_EQ(refused.code(), StatusCode::kConflict);
  EXPECT_EQ(refused.message(),
            "quota default/devices h100.deviceclass.resource.k8s.io/devices 2/2");
  EXPECT_EQ(Used("devices", kH100Devices), "2");
}

// A recount holds the namespace's charges (QuotaCharger::Hold) and leaves out the claims whose
// charge is expected: it never counts an allocation whose charge lands after its write.
TEST_F(QuotaSchedulerTest, ARecountNeverCountsAChargeThatHasNotLanded) {
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "5"}}));
  QuotaCharger charger(cluster_.api(), "test");
  allocator::ResourceList one{{kH100Devices, api::Quantity::FromInt64(1)}};
  std::unique_ptr<QuotaCharger::Expected> first = charger.Expect("default");
  first->AddClaim("uid-1", "pod-1 100 w1");
  using Expected = std::map<std::string, std::string>;
  EXPECT_EQ(charger.ExpectedClaims("default"), (Expected{{"uid-1", "pod-1 100 w1"}}));
  EXPECT_TRUE(charger.ExpectedClaims("other").empty());
  // No executor: the hold's work runs at once, and the charge queues behind it.
  bool held = false;
  charger.Hold("default", [&] { held = true; });
  EXPECT_TRUE(held);
  std::optional<Status> decided;
  charger.ChargeAsync(*first, {"devices"}, one, [&](Status s) { decided = std::move(s); });
  EXPECT_FALSE(decided.has_value());
  EXPECT_NE(Used("devices", kH100Devices), "1");
  EXPECT_EQ(charger.ExpectedClaims("default"), (Expected{{"uid-1", "pod-1 100 w1"}}));
  charger.Release("default");
  ASSERT_TRUE(decided.has_value());
  EXPECT_TRUE(decided->ok()) << decided->ToString();
  EXPECT_EQ(Used("devices", kH100Devices), "1");
  EXPECT_TRUE(charger.ExpectedClaims("default").empty());  // landed: a recount counts it

  // A charge abandoned while queued (its binding ended) is never written.
  std::unique_ptr<QuotaCharger::Expected> second = charger.Expect("default");
  second->AddClaim("uid-2", "pod-2 100 w1");
  charger.Hold("default", [] {});
  bool called = false;
  charger.ChargeAsync(*second, {"devices"}, one, [&](Status) { called = true; });
  second.reset();
  EXPECT_TRUE(charger.ExpectedClaims("default").empty());
  charger.Release("default");
  EXPECT_FALSE(called);
  EXPECT_EQ(Used("devices", kH100Devices), "1");
}

// The scheduler's recount started while a Pod's charge is being written (here by a quota edit)
// runs after that write: without the hold it counted the allocation, wrote used 1, and the
// charge then conflicted, read 1 and wrote 2.
TEST_F(QuotaSchedulerTest, ARecountDuringAChargeInFlightCountsTheAllocationOnce) {
  GpuNode();
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "5"}}));
  cluster_.Claim(H100ElseA100Pair("c1"));
  ChargeWriteGate gate(cluster_);
  StartAfterTheStartRecounts(gate);
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  ASSERT_TRUE(gate.WaitReached());
  const int reads_before = gate.recount_reads();
  // A quota edit starts a recount while c1 is allocated and its charge is in flight.
  for (int attempt = 0; attempt < 10; ++attempt) {
    StatusOr<api::corev1::ResourceQuota> q =
        client::Get<api::corev1::ResourceQuota>(cluster_.api(), "default", "devices");
    ASSERT_TRUE(q.ok());
    q->spec.hard[kH100Devices] = api::Quantity::FromInt64(6);
    Status updated = client::Update(cluster_.api(), *q, "test").status();
    if (updated.code() != StatusCode::kConflict) {
      ASSERT_TRUE(updated.ok()) << updated.ToString();
      break;
    }
  }
  // Long enough for a recount that does not wait for the charge to write used 1 (it did, before
  // the hold); the held one reads the claims only after the charge lands.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
       std::chrono::steady_clock::now() < until && Used("devices", kH100Devices) != "1";) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  gate.Release();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(Used("devices", kH100Devices), "1");
  ASSERT_TRUE(cluster_.WaitUntil([&] { return gate.recount_reads() > reads_before; }));
  scheduler_->Stop();
  EXPECT_EQ(Used("devices", kH100Devices), "1");
}

// An attempt that fails after its charge landed (here: the Pod's binding fails once) undoes its
// marked allocation whole: left allocated, its marker (naming the unbound Pod) kept every
// attempt, the Pod's own next one included, off the claim until the marker went stale.
TEST_F(QuotaSchedulerTest, AnAttemptFailingAfterItsChargeLandedReleasesItsAllocation) {
  GpuNode();
  CreateQuota(AllocationQuota("devices", {{kH100Devices, "5"}}));
  cluster_.Claim(cluster_.ClaimSpec("c1", "h100"));
  std::mutex mu;
  bool bind_failed = false;
  bool released_after = false;
  cluster_.api().SetInterceptor([&](const client::ApiRequest& r) -> std::optional<Status> {
    std::lock_guard<std::mutex> lock(mu);
    if (r.resource->resource == "pods" && r.subresource == "binding" && !bind_failed) {
      bind_failed = true;
      return UnavailableError("injected: binding failed once");
    }
    if (bind_failed && r.verb == client::Verb::kUpdate &&
        r.resource->resource == "resourceclaims" && r.subresource == "status") {
      const boost::json::value* status = r.body.as_object().if_contains("status");
      if (status == nullptr || !status->as_object().contains("allocation")) released_after = true;
    }
    return std::nullopt;
  });
  StartScheduler();
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  cluster_.api().SetInterceptor(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(bind_failed);
    EXPECT_TRUE(released_after);
  }
  // The landed charge was given back by the recount and charged again: one device, once.
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Used("devices", kH100Devices) == "1"; }));
  scheduler_->Stop();
  EXPECT_EQ(Used("devices", kH100Devices), "1");
}

TEST_F(SchedulerTest, ASharedClaimIsReservedForEveryPodOnOneNode) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Node("node-b");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster_.Slice("node-b", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  for (const char* name : {"p1", "p2", "p3"}) cluster_.Pod(cluster_.PodSpec(name, {"shared"}));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1") && Bound("p2") && Bound("p3"); }));
  EXPECT_EQ(NodeOf("p1"), NodeOf("p2"));
  EXPECT_EQ(NodeOf("p2"), NodeOf("p3"));
  StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim("shared");
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->status.reserved_for.size(), 3u);
}

// Two entries of a Pod naming one claim (validation allows it): the claim is allocated once and
// reserved once, on a node with a single device. Counted twice, the Pod needed two devices and
// waited without a word.
TEST_F(SchedulerTest, AClaimNamedTwiceByOnePodIsAllocatedOnce) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  api::corev1::Pod pod = cluster_.PodSpec("p1", {"shared"});
  api::corev1::PodResourceClaim again = pod.spec.resource_claims[0];
  again.name = "again";
  pod.spec.resource_claims.push_back(again);
  cluster_.Pod(pod);
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim("shared");
  ASSERT_TRUE(claim.ok());
  ASSERT_TRUE(claim->status.allocation.has_value());
  EXPECT_EQ(claim->status.allocation->devices.results.size(), 1u);
  EXPECT_EQ(claim->status.reserved_for.size(), 1u);
}

// Migrating from a device plugin, Pods often wait before the platform team rolls out the class
// that serves their extended resource through DRA: its creation retries them at once (they
// waited for the unschedulable pool's five-minute flush).
TEST_F(SchedulerTest, APodShortOfAnExtendedResourceIsRetriedWhenItsClassArrives) {
  cluster_.Node("node-dra");
  cluster_.Slice("node-dra", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  api::corev1::Pod early = cluster_.PodSpec("early");
  early.spec.containers[0].resources.requests["example.com/gpu"] = api::Quantity::FromInt64(1);
  early.spec.containers[0].resources.limits["example.com/gpu"] = api::Quantity::FromInt64(1);
  cluster_.Pod(early);
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("early").empty(); }));
  EXPECT_NE(PendingMessage("early").find("Insufficient example.com/gpu"), std::string::npos)
      << PendingMessage("early");
  cluster_.Class("legacy-gpu", kGpuClass, "example.com/gpu");
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("early"); }));
}

TEST_F(SchedulerTest, ExtendedResourcesAreServedByDraOrByADevicePlugin) {
  cluster_.Class("legacy-gpu", kGpuClass, "example.com/gpu");
  cluster_.Node("node-dra", {{"kind", "dra"}});
  cluster_.Node("node-legacy", {{"kind", "legacy"}}, {{"example.com/gpu", "2"}});
  cluster_.Slice("node-dra", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  auto pod = [&](const std::string& name, const std::string& kind) {
    api::corev1::Pod p = cluster_.PodSpec(name);
    p.spec.node_selector["kind"] = kind;
    p.spec.containers[0].resources.requests["example.com/gpu"] = api::Quantity::FromInt64(1);
    p.spec.containers[0].resources.limits["example.com/gpu"] = api::Quantity::FromInt64(1);
    return p;
  };
  cluster_.Pod(pod("dra", "dra"));
  cluster_.Pod(pod("legacy", "legacy"));
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("dra") && Bound("legacy"); }));
  StatusOr<api::corev1::Pod> dra = cluster_.GetPod("dra");
  ASSERT_TRUE(dra.ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<api::corev1::Pod> p = cluster_.GetPod("dra");
    return p.ok() && p->status.extended_resource_claim_status.has_value();
  }));
  dra = cluster_.GetPod("dra");
  const auto& status = *dra->status.extended_resource_claim_status;
  ASSERT_EQ(status.request_mappings.size(), 1u);
  EXPECT_EQ(status.request_mappings[0].request_name, "container-0-request-0");
  EXPECT_EQ(status.request_mappings[0].resource_name, "example.com/gpu");
  StatusOr<rv1::ResourceClaim> special = cluster_.GetClaim(status.resource_claim_name);
  ASSERT_TRUE(special.ok());
  EXPECT_EQ(special->metadata.name.rfind("dra-extended-resources-", 0), 0u);
  EXPECT_EQ(special->metadata.annotations.at("resource.kubernetes.io/extended-resource-claim"),
            "true");
  ASSERT_TRUE(special->status.allocation.has_value());
  EXPECT_EQ(special->status.allocation->devices.results[0].device, "gpu-0");
  // The legacy pod got no claim: it counts against node.status.allocatable.
  StatusOr<api::corev1::Pod> legacy = cluster_.GetPod("legacy");
  EXPECT_FALSE(legacy->status.extended_resource_claim_status.has_value());
  EXPECT_EQ(cluster_.Claims().size(), 1u);
}

// Init containers that run alone (not restartable) reuse the devices of the containers that
// start after them (upstream kubernetes#134882): init gpu: 1 and gpu: 2 before a container with
// gpu: 1 need two devices, not four; a restartable (sidecar) init container runs beside the
// others and keeps its own.
TEST_F(SchedulerTest, InitContainersReuseTheExtendedResourceDevicesOfLaterContainers) {
  cluster_.Class("legacy-gpu", kGpuClass, "example.com/gpu");
  cluster_.Node("node-dra");
  cluster_.Slice("node-dra", "gpu.example.com", Gpus("gpu-", 4, "A100"));
  auto with_gpus = [](const std::string& name, int64_t count) {
    api::corev1::Container c;
    c.name = name;
    c.image = "busybox";
    c.resources.requests["example.com/gpu"] = api::Quantity::FromInt64(count);
    c.resources.limits["example.com/gpu"] = api::Quantity::FromInt64(count);
    return c;
  };
  api::corev1::Pod p = cluster_.PodSpec("init");
  p.spec.init_containers = {with_gpus("ic1", 1), with_gpus("ic2", 2)};
  p.spec.containers = {with_gpus("c", 1)};
  cluster_.Pod(p);
  // Created once the first is bound, so it cannot take the first Pod's devices.
  api::corev1::Pod sidecar = cluster_.PodSpec("sidecar");
  sidecar.spec.init_containers = {with_gpus("log", 1), with_gpus("ic", 1)};
  sidecar.spec.init_containers[0].restart_policy = "Always";
  sidecar.spec.containers = {with_gpus("c", 1)};
  StartScheduler();
  auto mappings_of = [&](const std::string& pod) {
    std::vector<std::string> out;
    StatusOr<api::corev1::Pod> got = cluster_.GetPod(pod);
    if (!got.ok() || !got->status.extended_resource_claim_status.has_value()) return out;
    for (const auto& m : got->status.extended_resource_claim_status->request_mappings) {
      out.push_back(m.container_name + "->" + m.request_name);
    }
    return out;
  };
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("init") && !mappings_of("init").empty(); }));
  EXPECT_THAT(mappings_of("init"),
              ElementsAre("c->container-2-request-0", "ic1->container-2-request-0",
                          "ic2->container-2-request-0", "ic2->container-1-request-0"));
  StatusOr<api::corev1::Pod> init = cluster_.GetPod("init");
  StatusOr<rv1::ResourceClaim> special =
      cluster_.GetClaim(init->status.extended_resource_claim_status->resource_claim_name);
  ASSERT_TRUE(special.ok());
  std::vector<std::string> requests;
  for (const rv1::DeviceRequest& r : special->spec.devices.requests) {
    requests.push_back(r.name + "=" + std::to_string(r.exactly->count));
  }
  EXPECT_THAT(requests, ElementsAre("container-1-request-0=1", "container-2-request-0=1"));
  // The two devices left fit the sidecar Pod: its sidecar's and its container's, which the init
  // container between them reuses (one request per container would need three).
  cluster_.Pod(sidecar);
  ASSERT_TRUE(
      cluster_.WaitUntil([&] { return Bound("sidecar") && !mappings_of("sidecar").empty(); }));
  EXPECT_THAT(mappings_of("sidecar"),
              ElementsAre("log->container-0-request-0", "c->container-2-request-0",
                          "ic->container-2-request-0"));
}

TEST_F(SchedulerTest, AStatusUpdateFromBeforeTheBindingDoesNotScheduleAPodTwice) {
  // The extended-resource claim's Pod status is written before the Binding; its event can reach
  // the scheduler after the binding finished. Scheduling the pod again would fail ("cannot
  // schedule extended resource claim") and clean up the claim the first attempt bound it with.
  constexpr int kPods = 12;
  cluster_.Class("legacy-gpu", kGpuClass, "example.com/gpu");
  cluster_.Node("node-dra");
  cluster_.Slice("node-dra", "gpu.example.com", Gpus("gpu-", kPods, "A100"));
  for (int i = 0; i < kPods; ++i) {
    api::corev1::Pod p = cluster_.PodSpec("p" + std::to_string(i));
    p.spec.containers[0].resources.requests["example.com/gpu"] = api::Quantity::FromInt64(1);
    p.spec.containers[0].resources.limits["example.com/gpu"] = api::Quantity::FromInt64(1);
    cluster_.Pod(p);
  }
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    for (int i = 0; i < kPods; ++i) {
      if (!Bound("p" + std::to_string(i))) return false;
    }
    Scheduler::Stats s = scheduler_->stats();
    return s.scheduled == kPods && s.active == 0 && s.backoff == 0 && s.binding == 0;
  }));
  Scheduler::Stats stats = scheduler_->stats();
  EXPECT_EQ(stats.unschedulable, 0);
  EXPECT_EQ(stats.errors, 0);
  EXPECT_EQ(cluster_.Claims().size(), static_cast<size_t>(kPods));
}

TEST_F(SchedulerTest, NodeFiltersAreExplained) {
  cluster_.Node("tainted");
  {
    StatusOr<api::corev1::Node> n = client::Get<api::corev1::Node>(cluster_.api(), "", "tainted");
    ASSERT_TRUE(n.ok());
    n->spec.taints.emplace_back();
    n->spec.taints.back().key = "dedicated";
    n->spec.taints.back().value = "infra";
    n->spec.taints.back().effect = "NoSchedule";
    ASSERT_TRUE(client::Update(cluster_.api(), *n).ok());
  }
  cluster_.Node("small", {{"zone", "a"}}, {{"cpu", "1"}});
  cluster_.Node("other-zone", {{"zone", "b"}});
  api::corev1::Pod pod = cluster_.PodSpec("big");
  pod.spec.containers[0].resources.requests["cpu"] = api::Quantity::Parse("2").value();
  pod.spec.node_selector["zone"] = "a";
  cluster_.Pod(pod);
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("big").empty(); }));
  std::string message = PendingMessage("big");
  EXPECT_NE(message.find("1 node: untolerated taint {dedicated: infra}"), std::string::npos)
      << message;
  EXPECT_NE(message.find("1 node: Insufficient cpu"), std::string::npos) << message;
  EXPECT_NE(message.find("1 node: node affinity/selector mismatch"), std::string::npos) << message;
}

TEST_F(SchedulerTest, ASearchOverTheStepLimitFailsTheAttemptWhichIsRetried) {
  // One device takes four allocateOne steps (request, device, end of claim, end of claims).
  OnePodForOneGpu();
  SchedulerOptions options;
  options.allocation_step_limit = 3;
  StartScheduler(options);
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !PendingMessage("p1").empty(); }));
  std::string message = PendingMessage("p1");
  EXPECT_NE(message.find("allocation search stopped after 3 steps (the allocation step limit)"),
            std::string::npos)
      << message;
  // An error, not "unschedulable": the attempt is retried after a backoff.
  ASSERT_TRUE(cluster_.WaitUntil([&] { return scheduler_->stats().errors >= 2; }));
  EXPECT_EQ(scheduler_->stats().unschedulable, 0);
  EXPECT_FALSE(Bound("p1"));
  StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim("c1");
  ASSERT_TRUE(claim.ok());
  EXPECT_FALSE(claim->status.allocation.has_value());
}

// Issue 17: selectors that cost more than an attempt's evaluation budget fail the attempt (an
// error, retried after a backoff); each retry continues from the verdicts already cached, so the
// Pod is scheduled after a few attempts instead of holding the loop for all of them at once.
TEST_F(SchedulerTest, AnAttemptStopsWhenItsEvaluationBudgetIsSpentAndTheNextContinues) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 40, "A100"));
  cluster_.Claim(
      cluster_.ClaimSpec("c1", "gpu", 1,
                         R"(device.attributes["gpu.example.com"].model.startsWith("A1") && )"
                         R"(device.attributes["gpu.example.com"].model.endsWith("00") && )"
                         R"(device.attributes["gpu.example.com"].model.size() == 4)"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  SchedulerOptions options;
  options.evaluation_budget = 40;  // a few devices' worth per attempt
  options.queue.initial_backoff = std::chrono::milliseconds(10);
  options.queue.max_backoff = std::chrono::milliseconds(20);
  StartScheduler(options);
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    return PendingMessage("p1").find(
               "CEL evaluation budget of this scheduling attempt (40 cost "
               "units) is spent") != std::string::npos ||
           Bound("p1");
  }));
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_GE(scheduler_->stats().errors, 2);
}

TEST_F(SchedulerTest, FourStepsAllocateOneDevice) {
  OnePodForOneGpu();
  SchedulerOptions options;
  options.allocation_step_limit = 4;
  StartScheduler(options);
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
}

TEST_F(SchedulerTest, PodsWaitForTheirGeneratedClaims) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  rv1::ResourceClaimSpec spec = cluster_.ClaimSpec("x", "gpu").spec;
  cluster_.Template("t", spec);
  cluster_.Pod(cluster_.PodSpec("p", {"tmpl:t"}));
  StartScheduler();
  // What the claim controller does: create the claim, owned by the pod, and record it.
  StatusOr<api::corev1::Pod> pod = cluster_.GetPod("p");
  ASSERT_TRUE(pod.ok());
  rv1::ResourceClaim claim = cluster_.ClaimSpec("p-t-abcde", "gpu");
  api::metav1::OwnerReference owner;
  owner.api_version = "v1";
  owner.kind = "Pod";
  owner.name = "p";
  owner.uid = pod->metadata.uid;
  owner.controller = true;
  claim.metadata.owner_references.push_back(owner);
  cluster_.Claim(claim);
  boost::json::value patch = boost::json::parse(
      R"({"status":{"resourceClaimStatuses":[{"name":"t","resourceClaimName":"p-t-abcde"}]}})");
  ASSERT_TRUE(client::Patch<api::corev1::Pod>(cluster_.api(), "default", "p",
                                              client::PatchType::kMerge, patch, "status")
                  .ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p"); }));
}

// A stale extended-resource claim (from an earlier attempt) is deleted and deallocated by
// PostFilter. Deallocation takes status.devices along and removes only the scheduler's own
// finalizer: another controller's finalizer keeps the claim until that controller is done.
TEST_F(SchedulerTest, AStaleExtendedResourceClaimKeepsForeignFinalizersAndLosesDeviceStatus) {
  cluster_.Class("legacy-gpu", kGpuClass, "example.com/gpu");
  cluster_.Node("node-dra");
  cluster_.Slice("node-dra", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  api::corev1::Pod spec = cluster_.PodSpec("dra");
  spec.spec.containers[0].resources.requests["example.com/gpu"] = api::Quantity::FromInt64(1);
  spec.spec.containers[0].resources.limits["example.com/gpu"] = api::Quantity::FromInt64(1);
  cluster_.Pod(spec);
  StatusOr<api::corev1::Pod> pod = cluster_.GetPod("dra");
  ASSERT_TRUE(pod.ok());

  // The pod's special claim, allocated with device status, as an earlier attempt left it.
  rv1::ResourceClaim claim = cluster_.ClaimSpec("dra-extended-resources-old", "legacy-gpu");
  claim.metadata.annotations["resource.kubernetes.io/extended-resource-claim"] = "true";
  claim.metadata.owner_references.push_back(api::NewControllerRef(*pod));
  claim.metadata.finalizers = {"example.com/audit", std::string(api::kClaimFinalizer)};
  cluster_.Claim(claim);
  StatusOr<rv1::ResourceClaim> created = cluster_.GetClaim("dra-extended-resources-old");
  ASSERT_TRUE(created.ok());
  created->status.allocation.emplace();
  rv1::DeviceRequestAllocationResult result;
  result.request = "req";
  result.driver = "gpu.example.com";
  result.pool = "node-dra";
  result.device = "gpu-0";
  created->status.allocation->devices.results.push_back(result);
  rv1::AllocatedDeviceStatus device;
  device.driver = "gpu.example.com";
  device.pool = "node-dra";
  device.device = "gpu-0";
  created->status.devices.push_back(device);
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *created).ok());

  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("dra-extended-resources-old");
    return !c.ok() || (c->metadata.deletion_timestamp.has_value() &&
                       !c->status.allocation.has_value() && c->metadata.finalizers.size() < 2);
  }));
  StatusOr<rv1::ResourceClaim> released = cluster_.GetClaim("dra-extended-resources-old");
  ASSERT_TRUE(released.ok()) << "the foreign finalizer must keep the claim: "
                             << released.status().ToString();
  EXPECT_EQ(released->metadata.finalizers, std::vector<std::string>{"example.com/audit"});
  EXPECT_FALSE(released->status.allocation.has_value());
  EXPECT_TRUE(released->status.devices.empty());
  EXPECT_TRUE(released->status.reserved_for.empty());
}

TEST_F(SchedulerTest, ABindingWaitsForBindingConditionsWithoutHoldingABinderThread) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a", {{"kind", "fabric"}});
  cluster_.Node("node-b", {{"kind", "local"}});
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster_.Slice("node-b", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  WithBindingConditions("node-a");
  cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
  cluster_.Claim(cluster_.ClaimSpec("c2", "gpu"));
  api::corev1::Pod p1 = cluster_.PodSpec("p1", {"c1"});
  p1.spec.node_selector["kind"] = "fabric";
  cluster_.Pod(p1);
  SchedulerOptions options;
  options.binder_threads = 1;
  StartScheduler(options);
  // Allocated, reserved, nominated to the node (KEP-5278), and waiting: not bound.
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<api::corev1::Pod> p = cluster_.GetPod("p1");
    return ReservedFor("c1", "p1") && p.ok() && p->status.nominated_node_name == "node-a";
  }));
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return !EventWith("p1", "BindingConditionsPending", "claim default/c1").empty(); }));
  EXPECT_EQ(DevicesOf("c1"), "node-a/gpu-0");
  StatusOr<rv1::ResourceClaim> c1 = cluster_.GetClaim("c1");
  ASSERT_TRUE(c1.ok());
  EXPECT_TRUE(c1->status.allocation->allocation_timestamp.has_value());
  EXPECT_EQ(c1->status.allocation->devices.results[0].binding_conditions,
            std::vector<std::string>{kAttached});
  EXPECT_FALSE(Bound("p1"));
  // The waiting binding holds no binder thread: with a single binder another pod binds.
  api::corev1::Pod p2 = cluster_.PodSpec("p2", {"c2"});
  p2.spec.node_selector["kind"] = "local";
  cluster_.Pod(p2);
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p2"); }));
  EXPECT_FALSE(Bound("p1"));
  EXPECT_EQ(scheduler_->stats().waiting, 1u);
  // The attach controller reports the device attached: the binding goes on.
  SetDeviceCondition("c1", kAttached);
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(NodeOf("p1"), "node-a");
  EXPECT_EQ(scheduler_->stats().errors, 0);
}

TEST_F(SchedulerTest, ABindingFailureConditionReleasesTheDeviceAndThePodGoesElsewhere) {
  FabricCluster(/*gpus=*/1, /*plain_node=*/true);
  StartScheduler();
  // Without scores the first feasible node in name order wins: node-a.
  ASSERT_TRUE(cluster_.WaitUntil([&] { return ReservedFor("c1", "p1"); }));
  ASSERT_EQ(DevicesOf("c1"), "node-a/gpu-0");
  SetDeviceCondition("c1", kAttachFailed, "fabric port busy");
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    return !EventWith("p1", "FailedScheduling", "gpu.example.com/node-a/gpu-0").empty();
  }));
  std::string message = EventWith("p1", "FailedScheduling", "gpu.example.com/node-a/gpu-0");
  EXPECT_NE(message.find("binding failure condition gpu.example.com/attach-failed is True "
                         "(AttachFailed: fabric port busy)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(Bound("p1"));
  // The attach controller keeps the failed device from being picked again (KEP-5007): the
  // retry lands on node-b.
  TaintDevice("node-a", "gpu-0");
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(NodeOf("p1"), "node-b");
  EXPECT_EQ(DevicesOf("c1"), "node-b/gpu-0");
}

TEST_F(SchedulerTest, ABindingThatOutlivesTheBindingTimeoutFails) {
  FabricCluster(/*gpus=*/1, /*plain_node=*/false);
  SchedulerOptions options;
  options.binding_timeout = std::chrono::seconds(1);
  StartScheduler(options);
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return !EventWith("p1", "FailedScheduling", "binding timed out").empty(); }));
  std::string message = EventWith("p1", "FailedScheduling", "binding timed out");
  EXPECT_NE(message.find("binding timed out after 1s: claim default/c1: device "
                         "gpu.example.com/node-a/gpu-0: binding condition "
                         "gpu.example.com/attached is not reported"),
            std::string::npos)
      << message;
  EXPECT_FALSE(Bound("p1"));
}

TEST_F(SchedulerTest, ADeviceTaintedWhileItsBindingWaitsIsNotBound) {
  FabricCluster(/*gpus=*/2, /*plain_node=*/false);
  StartScheduler();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return ReservedFor("c1", "p1"); }));
  ASSERT_EQ(DevicesOf("c1"), "node-a/gpu-0");
  TaintDevice("node-a", "gpu-0");
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    return !EventWith("p1", "FailedScheduling",
                      "device gpu.example.com/node-a/gpu-0 has the taint "
                      "gpu.example.com/unhealthy:NoSchedule")
                .empty();
  }));
  // The retry takes the healthy device and waits for it.
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return ReservedFor("c1", "p1") && DevicesOf("c1") == "node-a/gpu-1"; }));
  SetDeviceCondition("c1", kAttached);
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(DevicesOf("c1"), "node-a/gpu-1");
}

TEST_F(SchedulerTest, ADeviceTaintedBetweenFilterAndPreBindIsNotBound) {
  cluster_.Class("gpu", kGpuClass);
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com", Gpus("gpu-", 2, "A100"));
  cluster_.Claim(cluster_.ClaimSpec("c1", "gpu"));
  cluster_.Pod(cluster_.PodSpec("p1", {"c1"}));
  // PreBind's first claim write waits until the device chosen by Filter is tainted and the
  // scheduler's cache has seen it.
  client::SharedInformers informers(cluster_.api());
  std::mutex mu;
  std::condition_variable cv;
  bool reached = false;
  bool release = false;
  cluster_.api().SetInterceptor([&](const client::ApiRequest& r) -> std::optional<Status> {
    if (r.verb != client::Verb::kUpdate || r.resource->resource != "resourceclaims") {
      return std::nullopt;
    }
    std::unique_lock<std::mutex> lock(mu);
    if (!reached) {
      reached = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return std::nullopt;
  });
  SchedulerOptions options;
  options.informers = &informers;
  StartScheduler(options);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return reached; }));
  }
  TaintDevice("node-a", "gpu-0");
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    auto slice = informers.Get<rv1::ResourceSlice>().Get("", "node-a-gpu.example.com");
    return slice != nullptr && !slice->spec.devices[0].taints.empty();
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(cluster_.WaitUntil([&] { return Bound("p1"); }));
  EXPECT_EQ(DevicesOf("c1"), "node-a/gpu-1");
  EXPECT_NE(EventWith("p1", "FailedScheduling", "gpu.example.com/node-a/gpu-0 has the taint"), "");
  scheduler_->Stop();
  cluster_.api().SetInterceptor(nullptr);
  informers.Stop();
}

// Copies every object of kind T from `from` into `to` (the server's identity fields dropped).
template <typename T>
void CopyAll(client::ApiClient& from, client::ApiClient& to) {
  StatusOr<client::ObjectList<T>> list = client::List<T>(from, "");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (T object : list->items) {
    object.metadata.resource_version.clear();
    object.metadata.uid.clear();
    ASSERT_TRUE(client::Create(to, object).ok());
  }
}

// CopyAll of the objects `to` does not have yet (by namespace and name).
template <typename T>
void CopyMissing(client::ApiClient& from, client::ApiClient& to) {
  StatusOr<client::ObjectList<T>> list = client::List<T>(from, "");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (T object : list->items) {
    if (client::Get<T>(to, object.metadata.namespace_, object.metadata.name).ok()) continue;
    object.metadata.resource_version.clear();
    object.metadata.uid.clear();
    ASSERT_TRUE(client::Create(to, object).ok());
  }
}

// Synchronous mode on a manual clock and manual informers, over the simulator's in-memory API
// (manual informers poll watches without blocking, which only it offers): the simulator's setup.
// Nothing runs unless driven, and the queue's timers follow the clock.
TEST(SynchronousSchedulerTest, RunsOnlyWhenDrivenAndFlushesOnTheClock) {
  Cluster cluster;  // builds the objects, which are copied into the in-memory API
  cluster.Class("gpu", kGpuClass);
  cluster.Node("node-a");
  cluster.Slice("node-a", "gpu.example.com", Gpus("gpu-", 1, "A100"));
  cluster.Claim(cluster.ClaimSpec("c1", "gpu"));
  cluster.Claim(cluster.ClaimSpec("c2", "gpu"));
  cluster.Pod(cluster.PodSpec("p1", {"c1"}));
  cluster.Pod(cluster.PodSpec("p2", {"c2"}));
  std::unique_ptr<Random> random = NewSeededRandom(7);
  client::MemoryApi memory(cluster.clock(), *random);
  CopyAll<rv1::DeviceClass>(cluster.api(), memory);
  CopyAll<api::corev1::Node>(cluster.api(), memory);
  CopyAll<rv1::ResourceSlice>(cluster.api(), memory);
  CopyAll<rv1::ResourceClaim>(cluster.api(), memory);
  CopyAll<api::corev1::Pod>(cluster.api(), memory);
  client::SharedInformers informers(memory, {.manual = true});
  Scheduler scheduler(memory, cluster.clock(),
                      {.random_seed = 7, .synchronous = true, .informers = &informers});
  ASSERT_TRUE(scheduler.Start().ok());
  // p1 gets the GPU; p2 is unschedulable.
  EXPECT_EQ(scheduler.RunUntilIdle(), 2);
  ASSERT_TRUE(informers.DeliverPending().ok());
  EXPECT_EQ(scheduler.RunUntilIdle(), 0);
  StatusOr<api::corev1::Pod> p1 = client::Get<api::corev1::Pod>(memory, "default", "p1");
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->spec.node_name, "node-a");
  EXPECT_EQ(scheduler.stats().unschedulable, 1);
  // The next timed work is the unschedulable pool's flush, every 30 s of the clock; p2 is
  // retried once it waited 5 minutes.
  EXPECT_EQ(scheduler.NextWakeup(), std::chrono::seconds(30));
  cluster.clock().Advance(std::chrono::seconds(30));
  EXPECT_EQ(scheduler.RunUntilIdle(), 0);
  EXPECT_EQ(scheduler.NextWakeup(), std::chrono::seconds(60));
  cluster.clock().Advance(std::chrono::seconds(270));
  EXPECT_EQ(scheduler.RunUntilIdle(), 1);
  EXPECT_EQ(scheduler.stats().unschedulable, 2);
  scheduler.Stop();
  informers.Stop();
}

// A DeviceSharingPolicy named `default` with one domain "gpus" of class gpu, and `tenants`.
api::draplanev1alpha1::DeviceSharingPolicy GpuSharingPolicy(
    std::vector<api::draplanev1alpha1::SharingTenant> tenants) {
  api::draplanev1alpha1::DeviceSharingPolicy policy;
  policy.metadata.name = "default";
  api::draplanev1alpha1::SharingDomain& domain = policy.spec.domains.emplace_back();
  domain.name = "gpus";
  domain.device_classes = {"gpu"};
  policy.spec.tenants = std::move(tenants);
  return policy;
}

api::draplanev1alpha1::SharingTenant NamespaceTenant(std::string ns, int32_t weight) {
  api::draplanev1alpha1::SharingTenant tenant;
  tenant.namespaces = {std::move(ns)};
  tenant.weight = weight;
  return tenant;
}

// How many of the Pods of each namespace are bound.
std::map<std::string, int> BoundByNamespace(client::ApiClient& api) {
  std::map<std::string, int> bound;
  StatusOr<client::ObjectList<api::corev1::Pod>> pods = client::List<api::corev1::Pod>(api, "");
  EXPECT_TRUE(pods.ok());
  if (!pods.ok()) return bound;
  for (const api::corev1::Pod& p : pods->items) {
    if (!p.spec.node_name.empty()) ++bound[p.metadata.namespace_];
  }
  return bound;
}

// Issue 22: with the DeviceSharingPolicy `default` the active queue orders tenants by weighted
// share within a band; a tenant entry with a namespace selector takes its weight from the
// Namespace's labels, which the scheduler watches. Four GPUs, four pods each from team-x and
// team-y: with team-x labelled into weight 3 it gets three GPUs (x, y, x, x), unlabelled two
// (x, y, x, y).
TEST(SynchronousSchedulerTest, FairShareWeighsTenantsByTheirNamespaceLabels) {
  for (bool labelled : {true, false}) {
    SCOPED_TRACE(labelled ? "team-x labelled tier=gold" : "no labels");
    Cluster cluster;
    cluster.Class("gpu", kGpuClass);
    cluster.Node("node-a");
    cluster.Slice("node-a", "gpu.example.com", Gpus("gpu-", 4, "A100"));
    std::unique_ptr<Random> random = NewSeededRandom(7);
    client::MemoryApi memory(cluster.clock(), *random);
    for (const char* ns : {"team-x", "team-y"}) {
      cluster.Namespace(ns);
      api::corev1::Namespace object;
      object.metadata.name = ns;
      if (labelled && ns == std::string("team-x")) object.metadata.labels["tier"] = "gold";
      ASSERT_TRUE(client::Create(memory, object).ok());
      cluster.ns = ns;
      for (int i = 0; i < 4; ++i) {
        std::string name = std::string(ns) + "-" + std::to_string(i);
        cluster.Claim(cluster.ClaimSpec(name, "gpu"));
        cluster.Pod(cluster.PodSpec(name, {name}));
      }
    }
    CopyAll<rv1::DeviceClass>(cluster.api(), memory);
    CopyAll<api::corev1::Node>(cluster.api(), memory);
    CopyAll<rv1::ResourceSlice>(cluster.api(), memory);
    CopyAll<rv1::ResourceClaim>(cluster.api(), memory);
    CopyAll<api::corev1::Pod>(cluster.api(), memory);
    api::draplanev1alpha1::SharingTenant gold;
    gold.namespace_selector.emplace().match_labels["tier"] = "gold";
    gold.weight = 3;
    ASSERT_TRUE(client::Create(memory, GpuSharingPolicy({gold})).ok());
    client::SharedInformers informers(memory, {.manual = true});
    Scheduler scheduler(memory, cluster.clock(),
                        {.random_seed = 7, .synchronous = true, .informers = &informers});
    ASSERT_TRUE(scheduler.Start().ok());
    EXPECT_EQ(scheduler.RunUntilIdle(), 8);
    std::map<std::string, int> bound = BoundByNamespace(memory);
    EXPECT_EQ(bound["team-x"], labelled ? 3 : 2);
    EXPECT_EQ(bound["team-y"], labelled ? 1 : 2);
    scheduler.Stop();
    informers.Stop();
  }
}

// Issue 22: the scheduler follows the policy as an admin creates, edits and deletes it. Created
// after the scheduler started, weights x:3 give team-x three of node-a's four GPUs. Edited to
// y:3, the two GPUs of node-b go to team-y (under x:3 the shares tie and team-x would take one
// of them); without the edit it is 4:2. Deleted, the queue orders by arrival again and the next
// GPU is still given.
TEST(SynchronousSchedulerTest, FairShareFollowsThePolicyAsItIsCreatedEditedAndDeleted) {
  for (bool edited : {true, false}) {
    SCOPED_TRACE(edited ? "edited to y:3" : "left at x:3");
    Cluster cluster;
    cluster.Class("gpu", kGpuClass);
    cluster.Node("node-a");
    cluster.Slice("node-a", "gpu.example.com", Gpus("a-", 4, "A100"));
    std::unique_ptr<Random> random = NewSeededRandom(7);
    client::MemoryApi memory(cluster.clock(), *random);
    CopyAll<rv1::DeviceClass>(cluster.api(), memory);
    CopyAll<api::corev1::Node>(cluster.api(), memory);
    CopyAll<rv1::ResourceSlice>(cluster.api(), memory);
    client::SharedInformers informers(memory, {.manual = true});
    Scheduler scheduler(memory, cluster.clock(),
                        {.random_seed = 7, .synchronous = true, .informers = &informers});
    ASSERT_TRUE(scheduler.Start().ok());
    // Applies what the API has, then lets any backoff expire (new devices move waiting pods to
    // the backoff queue first).
    auto deliver = [&] {
      ASSERT_TRUE(informers.DeliverPending().ok());
      scheduler.RunUntilIdle();
      cluster.clock().Advance(std::chrono::seconds(10));
      ASSERT_TRUE(informers.DeliverPending().ok());
      scheduler.RunUntilIdle();
    };
    StatusOr<api::draplanev1alpha1::DeviceSharingPolicy> policy = client::Create(
        memory, GpuSharingPolicy({NamespaceTenant("team-x", 3), NamespaceTenant("team-y", 1)}));
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    deliver();
    for (const char* ns : {"team-x", "team-y"}) {
      cluster.Namespace(ns);
      cluster.ns = ns;
      for (int i = 0; i < 4; ++i) {
        std::string name = std::string(ns) + "-" + std::to_string(i);
        cluster.Claim(cluster.ClaimSpec(name, "gpu"));
        cluster.Pod(cluster.PodSpec(name, {name}));
      }
    }
    CopyMissing<rv1::ResourceClaim>(cluster.api(), memory);
    CopyMissing<api::corev1::Pod>(cluster.api(), memory);
    deliver();
    std::map<std::string, int> bound = BoundByNamespace(memory);
    EXPECT_EQ(bound["team-x"], 3);
    EXPECT_EQ(bound["team-y"], 1);

    if (edited) {
      policy->spec.tenants = {NamespaceTenant("team-x", 1), NamespaceTenant("team-y", 3)};
      policy = client::Update(memory, *policy);
      ASSERT_TRUE(policy.ok()) << policy.status().ToString();
      deliver();
    }
    cluster.Node("node-b");
    cluster.Slice("node-b", "gpu.example.com", Gpus("b-", 2, "A100"));
    CopyMissing<api::corev1::Node>(cluster.api(), memory);
    CopyMissing<rv1::ResourceSlice>(cluster.api(), memory);
    deliver();
    bound = BoundByNamespace(memory);
    EXPECT_EQ(bound["team-x"], edited ? 3 : 4);
    EXPECT_EQ(bound["team-y"], edited ? 3 : 2);

    ASSERT_TRUE(
        client::Delete<api::draplanev1alpha1::DeviceSharingPolicy>(memory, "", "default").ok());
    deliver();
    cluster.Node("node-c");
    cluster.Slice("node-c", "gpu.example.com", Gpus("c-", 1, "A100"));
    CopyMissing<api::corev1::Node>(cluster.api(), memory);
    CopyMissing<rv1::ResourceSlice>(cluster.api(), memory);
    deliver();
    bound = BoundByNamespace(memory);
    EXPECT_EQ(bound["team-x"] + bound["team-y"], 7);
    scheduler.Stop();
    informers.Stop();
  }
}

// Issue 22, starvation holds: a node of two GPUs held by team-a's 1-GPU Pods, team-b's 2-GPU Pod
// waiting behind them and, two minutes later, another team-a Pod. Once team-b's Pod waited past
// the threshold (1m; no attempt needed), the GPU freed next is held for it: team-a's Pod is refused
// it ("held for team-b/big"), and the hold, persisted on the Pod, survives a scheduler restart; the
// next GPU completes it and team-b's Pod binds (the hold released). With holds off the freed GPU
// goes to team-a's Pod and counts as an overtake. With holds on but team-b's Allocation-mode quota
// of one GPU, its 2-GPU Pod could not take what is held: nothing is held (the GPU would only idle)
// and team-a's Pod gets it.
TEST(SynchronousSchedulerTest, AStarvingPodGetsTheDevicesFreedOnItsTargetNodeHeld) {
  for (const auto& [holds_on, quota_of_one] :
       {std::pair{true, false}, std::pair{false, false}, std::pair{true, true}}) {
    const bool holds = holds_on;
    const bool quota = quota_of_one;
    const bool held = holds && !quota;
    SCOPED_TRACE(!holds ? "holds off" : quota ? "holds on, quota of one" : "holds on");
    Cluster cluster;
    cluster.Class("gpu", kGpuClass);
    cluster.Node("node-a");
    cluster.Slice("node-a", "gpu.example.com", Gpus("gpu-", 2, "A100"));
    std::unique_ptr<Random> random = NewSeededRandom(7);
    client::MemoryApi memory(cluster.clock(), *random);
    CopyAll<rv1::DeviceClass>(cluster.api(), memory);
    CopyAll<api::corev1::Node>(cluster.api(), memory);
    CopyAll<rv1::ResourceSlice>(cluster.api(), memory);
    api::draplanev1alpha1::DeviceSharingPolicy policy =
        GpuSharingPolicy({NamespaceTenant("team-a", 1), NamespaceTenant("team-b", 1)});
    policy.spec.aging.emplace().starvation_threshold = "1m";
    policy.spec.aging->holds = holds;
    ASSERT_TRUE(client::Create(memory, policy).ok());
    if (quota) {
      api::corev1::ResourceQuota one;
      one.metadata.name = "gpus";
      one.metadata.namespace_ = "team-b";
      one.metadata.annotations["draplane.dev/device-quota-mode"] = "Allocation";
      one.spec.hard["gpu.deviceclass.resource.k8s.io/devices"] = api::Quantity::FromInt64(1);
      ASSERT_TRUE(client::Create(memory, one).ok());
    }
    auto informers =
        std::make_unique<client::SharedInformers>(memory, client::InformerOptions{.manual = true});
    auto scheduler = std::make_unique<Scheduler>(
        memory, cluster.clock(),
        SchedulerOptions{.random_seed = 7, .synchronous = true, .informers = informers.get()});
    ASSERT_TRUE(scheduler->Start().ok());
    auto deliver = [&] {
      for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(informers->DeliverPending().ok());
        scheduler->RunUntilIdle();
      }
    };
    cluster.Namespace("team-a");
    cluster.Namespace("team-b");
    auto pod = [&](const std::string& ns, const std::string& name, int64_t gpus) {
      cluster.ns = ns;
      cluster.Claim(cluster.ClaimSpec(name, "gpu", gpus));
      cluster.Pod(cluster.PodSpec(name, {name}));
      CopyMissing<rv1::ResourceClaim>(cluster.api(), memory);
      CopyMissing<api::corev1::Pod>(cluster.api(), memory);
      deliver();
    };
    auto bound = [&](const std::string& ns, const std::string& name) {
      StatusOr<api::corev1::Pod> p = client::Get<api::corev1::Pod>(memory, ns, name);
      return p.ok() && !p->spec.node_name.empty();
    };
    // Gives a Pod's GPU back, as the claim controller does once the Pod is gone.
    auto free = [&](const std::string& ns, const std::string& name) {
      ASSERT_TRUE(client::Delete<api::corev1::Pod>(memory, ns, name).ok());
      StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(memory, ns, name);
      ASSERT_TRUE(claim.ok());
      claim->status.allocation.reset();
      claim->status.reserved_for.clear();
      ASSERT_TRUE(client::UpdateStatus(memory, *claim).ok());
      cluster.clock().Advance(std::chrono::seconds(11));  // past every backoff
      deliver();
    };
    pod("team-a", "a-0", 1);
    pod("team-a", "a-1", 1);
    ASSERT_TRUE(bound("team-a", "a-0") && bound("team-a", "a-1"));
    pod("team-b", "big", 2);
    cluster.clock().Advance(std::chrono::minutes(2));
    pod("team-a", "a-2", 1);  // not starving itself
    free("team-a", "a-0");
    EXPECT_FALSE(bound("team-b", "big"));
    EXPECT_NE(bound("team-a", "a-2"), held);
    EXPECT_EQ(scheduler->stats().overtakes, !holds ? 1 : 0);
    StatusOr<api::corev1::Pod> big = client::Get<api::corev1::Pod>(memory, "team-b", "big");
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(big->metadata.annotations.contains(std::string(kHeldDevicesAnnotation)), held);
    if (!held) {
      scheduler->Stop();
      informers->Stop();
      continue;
    }
    EXPECT_NE(big->metadata.annotations[std::string(kHeldDevicesAnnotation)].find(
                  R"("devices":[{"driver":"gpu.example.com","pool":"node-a","device":"gpu-0"}])"),
              std::string::npos)
        << big->metadata.annotations[std::string(kHeldDevicesAnnotation)];
    StatusOr<api::corev1::Pod> a2 = client::Get<api::corev1::Pod>(memory, "team-a", "a-2");
    ASSERT_TRUE(a2.ok());
    std::string message;
    for (const auto& c : a2->status.conditions) {
      if (c.type == "PodScheduled") message = c.message;
    }
    EXPECT_NE(message.find("held for team-b/big"), std::string::npos) << message;
    StatusOr<client::ObjectList<api::corev1::Event>> events =
        client::List<api::corev1::Event>(memory, "");
    ASSERT_TRUE(events.ok());
    std::set<std::string> reasons;
    for (const api::corev1::Event& e : events->items) reasons.insert(e.reason);
    EXPECT_TRUE(reasons.contains("StarvationDetected"));
    EXPECT_TRUE(reasons.contains("DevicesHeld"));

    // A restarted scheduler reads the hold back from the Pod: team-a's Pod is still refused.
    scheduler->Stop();
    informers->Stop();
    informers =
        std::make_unique<client::SharedInformers>(memory, client::InformerOptions{.manual = true});
    scheduler = std::make_unique<Scheduler>(
        memory, cluster.clock(),
        SchedulerOptions{.random_seed = 7, .synchronous = true, .informers = informers.get()});
    ASSERT_TRUE(scheduler->Start().ok());
    deliver();
    EXPECT_FALSE(bound("team-a", "a-2"));
    EXPECT_FALSE(bound("team-b", "big"));

    // The second GPU completes the hold: team-b's Pod binds and the hold is released.
    free("team-a", "a-1");
    EXPECT_TRUE(bound("team-b", "big"));
    EXPECT_FALSE(bound("team-a", "a-2"));
    big = client::Get<api::corev1::Pod>(memory, "team-b", "big");
    ASSERT_TRUE(big.ok());
    EXPECT_FALSE(big->metadata.annotations.contains(std::string(kHeldDevicesAnnotation)));
    events = client::List<api::corev1::Event>(memory, "team-b");
    ASSERT_TRUE(events.ok());
    reasons.clear();
    for (const api::corev1::Event& e : events->items) reasons.insert(e.reason);
    EXPECT_TRUE(reasons.contains("HoldReleased"));
    EXPECT_EQ(scheduler->stats().overtakes, 0);
    scheduler->Stop();
    informers->Stop();
  }
}

// Fair-share placement (allocator/contested.h, docs/design/fair-share.md §4b): team-a's Pod goes
// first (equal shares, earlier) and prefers the H100 but can take two A100s; team-b's Pod can use
// the H100 only and team-b is under its fair share. Under the policy team-a's Pod leaves the H100
// to team-b and its decision record says why; in upstream's order it takes the H100 and team-b's
// Pod waits.
TEST(SynchronousSchedulerTest, APodThatCanFallBackLeavesAnUnderServedTenantTheClassItWaitsFor) {
  for (bool policy : {true, false}) {
    SCOPED_TRACE(policy ? "under the policy" : "upstream's order");
    Cluster cluster;
    cluster.Class("h100", R"(device.attributes["gpu.example.com"].model == "H100")");
    cluster.Class("a100", R"(device.attributes["gpu.example.com"].model == "A100")");
    cluster.Node("node-a100");
    cluster.Slice("node-a100", "gpu.example.com", Gpus("a100-", 2, "A100"));
    cluster.Node("node-h100");
    cluster.Slice("node-h100", "gpu.example.com", Gpus("h100-", 1, "H100"));
    std::unique_ptr<Random> random = NewSeededRandom(7);
    client::MemoryApi memory(cluster.clock(), *random);
    CopyAll<rv1::DeviceClass>(cluster.api(), memory);
    CopyAll<api::corev1::Node>(cluster.api(), memory);
    CopyAll<rv1::ResourceSlice>(cluster.api(), memory);
    if (policy) {
      api::draplanev1alpha1::DeviceSharingPolicy sharing = GpuSharingPolicy({});
      sharing.spec.domains[0].device_classes = {"h100", "a100"};
      ASSERT_TRUE(client::Create(memory, sharing).ok());
    }
    auto informers =
        std::make_unique<client::SharedInformers>(memory, client::InformerOptions{.manual = true});
    Scheduler scheduler(
        memory, cluster.clock(),
        SchedulerOptions{.random_seed = 7, .synchronous = true, .informers = informers.get()});
    ASSERT_TRUE(scheduler.Start().ok());
    cluster.Namespace("team-a");
    cluster.Namespace("team-b");
    cluster.ns = "team-a";
    rv1::ResourceClaim fallback = H100ElseA100Pair("job");
    fallback.metadata.namespace_ = "team-a";
    cluster.Claim(fallback);
    cluster.Pod(cluster.PodSpec("job", {"job"}));
    cluster.ns = "team-b";
    cluster.Claim(cluster.ClaimSpec("job", "h100", 1));
    cluster.Pod(cluster.PodSpec("job", {"job"}));
    CopyMissing<rv1::ResourceClaim>(cluster.api(), memory);
    CopyMissing<api::corev1::Pod>(cluster.api(), memory);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(informers->DeliverPending().ok());
      scheduler.RunUntilIdle();
    }
    auto node_of = [&](const std::string& ns) {
      StatusOr<api::corev1::Pod> p = client::Get<api::corev1::Pod>(memory, ns, "job");
      return p.ok() ? p->spec.node_name : "";
    };
    EXPECT_EQ(node_of("team-a"), policy ? "node-a100" : "node-h100");
    EXPECT_EQ(node_of("team-b"), policy ? "node-h100" : "");
    if (policy) {
      StatusOr<client::ObjectList<api::draplanev1alpha1::AllocationDecision>> decisions =
          client::List<api::draplanev1alpha1::AllocationDecision>(memory, "team-a");
      ASSERT_TRUE(decisions.ok());
      ASSERT_EQ(decisions->items.size(), 1u);
      const auto& claims = decisions->items[0].spec.claims;
      ASSERT_EQ(claims.size(), 1u);
      ASSERT_EQ(claims[0].requests.size(), 1u);
      EXPECT_EQ(claims[0].requests[0].subrequest, "a100-pair");
      const std::string fallback =
          "request gpu: subrequest h100 left to team-b: under its fair share and waiting for "
          "class h100, allocated subrequest a100-pair";
      EXPECT_EQ(decisions->items[0].spec.message, "FairShareFallback: " + fallback);
      StatusOr<client::ObjectList<api::corev1::Event>> events =
          client::List<api::corev1::Event>(memory, "team-a");
      ASSERT_TRUE(events.ok());
      bool event = false;
      for (const api::corev1::Event& e : events->items) {
        event = event || (e.reason == "FairShareFallback" && e.message == fallback);
      }
      EXPECT_TRUE(event) << "the Pod's FairShareFallback Event";
      EXPECT_NE(metrics::RenderText().find("draplane_fair_share_fallbacks_total{"),
                std::string::npos);
    }
    scheduler.Stop();
    informers->Stop();
  }
}

}  // namespace
}  // namespace draplane::scheduler
