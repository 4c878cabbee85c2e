// The fake kubelet against the agent's kubelet plugin, both in process over an in-memory API:
// registration, the prepare-before-Running and unprepare-before-deletion order, retries after a
// per-claim error, refused registrations, slice wiping and health.
#include "fakekubelet/fake_kubelet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "agent/drivers/profile/profile_driver.h"
#include "agent/kubelet_plugin.h"
#include "client/memory_api.h"
#include "client/typed.h"
#include "common/random.h"

namespace draplane::fakekubelet {
namespace {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kProfile = R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
devices:
  gpus:
  - {count: 2, productName: NVIDIA H100 80GB HBM3, architecture: Hopper,
     cudaComputeCapability: "9.0", driverVersion: 550.90.07, memory: 80Gi}
  nics: [{count: 1, model: CX7, bandwidth: 400G, shared: true}]
faults:
- {device: gpu-1, after: 60s, effect: NoExecute, message: XID 79}
)";

// Polls `done` every 10 ms; false after 60 s (a guard against hangs, not a timing assertion).
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 6000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class FakeKubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = "/tmp/fk-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    if (kubelet_) kubelet_->Stop();
    if (plugin_) plugin_->Stop();
    kubelet_.reset();
    plugin_.reset();
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartAgent(std::string_view profile_text) {
    StatusOr<agent::ClusterProfile> profile = agent::ParseProfile(profile_text);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    std::vector<std::unique_ptr<agent::Driver>> drivers;
    drivers.push_back(std::move(*agent::ProfileDriver::Create({.node_name = "node-a",
                                                               .profile_path = "",
                                                               .node = profile->pools[0].node,
                                                               .clock = &agent_clock_,
                                                               .state_dir = dir_ + "/state",
                                                               .crash_exits_process = false})));
    StatusOr<std::unique_ptr<agent::Agent>> agent = agent::Agent::Create(
        api_, std::move(drivers),
        agent::AgentOptions{
            .node_name = "node-a", .state_dir = dir_ + "/state", .kubelet_plugin = true},
        agent_clock_);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(*agent);
    ASSERT_TRUE(agent_->Init().ok());
    StatusOr<std::unique_ptr<agent::KubeletPlugin>> plugin = agent::KubeletPlugin::Start(
        *agent_, api_, agent_clock_,
        agent::KubeletPluginOptions{.registry_dir = dir_ + "/registry",
                                    .plugins_dir = dir_ + "/plugins",
                                    .instance = "",
                                    .health_resend_interval = std::chrono::seconds(30)});
    ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
    plugin_ = std::move(*plugin);
    ASSERT_TRUE(agent_->SyncSlices().ok());
  }

  void StartKubelet(std::set<std::string> refuse = {},
                    Duration call_timeout = std::chrono::seconds(45),
                    std::set<std::string> services = {}) {
    StatusOr<std::unique_ptr<FakeKubelet>> kubelet = FakeKubelet::Create(
        api_,
        FakeKubeletOptions{.node_name = "node-a",
                           .registry_dir = dir_ + "/registry",
                           .cdi_dirs = {dir_ + "/state/cdi"},
                           .call_timeout = call_timeout,
                           .registry_poll_interval = std::chrono::milliseconds(50),
                           .health_retry_interval = std::chrono::milliseconds(50),
                           .slice_wipe_delay = std::chrono::milliseconds(100),
                           .wipe_slices_on_start = false,
                           .refuse_drivers = std::move(refuse),
                           .services = std::move(services),
                           .retry = {.base_delay = std::chrono::milliseconds(10),
                                     .max_delay = std::chrono::milliseconds(200),
                                     .qps = 0,
                                     .burst = 0}},
        RealClock());
    ASSERT_TRUE(kubelet.ok()) << kubelet.status().ToString();
    kubelet_ = std::move(*kubelet);
    ASSERT_TRUE(kubelet_->Start().ok());
  }

  // A Pod bound to node-a with one claim allocated gpu-0 (request `gpu`) and reserved for it.
  std::string RunPodWithClaim(const std::string& name) {
    const std::string pod_uid = CreatePod(name, name + "-gpu");
    return CreateClaim(name + "-gpu", {pod_uid});
  }

  // A Pod bound to node-a using claim `claim`; returns its UID.
  std::string CreatePod(const std::string& name, const std::string& claim) {
    cv1::Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "team-a";
    pod.spec.node_name = "node-a";
    cv1::Container c;
    c.name = "main";
    c.image = "example.com/train:1";
    cv1::ResourceClaim use;
    use.name = "gpu";
    c.resources.claims.push_back(use);
    pod.spec.containers.push_back(c);
    cv1::PodResourceClaim ref;
    ref.name = "gpu";
    ref.resource_claim_name = claim;
    pod.spec.resource_claims.push_back(ref);
    StatusOr<cv1::Pod> created_pod = client::Create(api_, pod);
    EXPECT_TRUE(created_pod.ok()) << created_pod.status().ToString();
    return created_pod->metadata.uid;
  }

  // Claim `name` allocated gpu-0 (request `gpu`) and reserved for the Pods `pod_uids`.
  std::string CreateClaim(const std::string& name, const std::vector<std::string>& pod_uids) {
    rv1::ResourceClaim claim;
    claim.metadata.name = name;
    claim.metadata.namespace_ = "team-a";
    rv1::DeviceRequest request;
    request.name = "gpu";
    request.exactly.emplace();
    request.exactly->device_class_name = "gpu.nvidia.com";
    claim.spec.devices.requests.push_back(request);
    StatusOr<rv1::ResourceClaim> created = client::Create(api_, claim);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    rv1::AllocationResult allocation;
    rv1::DeviceRequestAllocationResult r;
    r.request = "gpu";
    r.driver = "gpu.nvidia.com";
    r.pool = "node-a";
    r.device = "gpu-0";
    allocation.devices.results.push_back(r);
    created->status.allocation = allocation;
    for (const std::string& uid : pod_uids) {
      rv1::ResourceClaimConsumerReference consumer;
      consumer.resource = "pods";
      consumer.name = "pod-" + uid;
      consumer.uid = uid;
      created->status.reserved_for.push_back(consumer);
    }
    EXPECT_TRUE(client::UpdateStatus(api_, *created).ok());
    return created->metadata.uid;
  }

  std::string PodPhase(const std::string& name) {
    StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "team-a", name);
    return pod.ok() ? pod->status.phase : "";
  }

  // The report lines with `event`, parsed.
  std::vector<boost::json::object> Events(const std::string& event) {
    std::vector<boost::json::object> out;
    for (const std::string& line : kubelet_->Report()) {
      boost::json::object o = boost::json::parse(line).as_object();
      if (o["event"].as_string() == event) out.push_back(o);
    }
    return out;
  }

  int64_t Seq(const boost::json::object& line) { return line.at("seq").as_int64(); }

  ManualClock agent_clock_;
  std::unique_ptr<Random> random_ = NewSeededRandom(7);
  client::MemoryApi api_{RealClock(), *random_};
  std::string dir_;
  std::unique_ptr<agent::Agent> agent_;
  std::unique_ptr<agent::KubeletPlugin> plugin_;
  std::unique_ptr<FakeKubelet> kubelet_;
};

TEST_F(FakeKubeletTest, RegistersThePluginsAndTheNode) {
  StartAgent(kProfile);
  StartKubelet();
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  EXPECT_THAT(kubelet_->RegisteredDrivers(),
              ElementsAre("fpga.example.com", "gpu.nvidia.com", "nic.example.com"));
  std::vector<boost::json::object> registered = Events("registered");
  ASSERT_EQ(registered.size(), 3u);
  for (boost::json::object& r : registered) {
    EXPECT_EQ(r["service"].as_string(), "v1.DRAPlugin");
    EXPECT_EQ(r["healthService"].as_string(), "v1.DRAResourceHealth");
  }
  ASSERT_TRUE(WaitFor([&] { return plugin_->registration_status()["gpu.nvidia.com"].registered; }));
  ASSERT_TRUE(WaitFor([&] { return client::Get<cv1::Node>(api_, "", "node-a").ok(); }));
  EXPECT_EQ(
      client::Get<cv1::Node>(api_, "", "node-a")->metadata.annotations.at("draplane.dev/agent"),
      "true");
}

TEST_F(FakeKubeletTest, RefusedRegistrationIsNotifiedToThePlugin) {
  StartAgent(kProfile);
  StartKubelet({"nic.example.com"});
  ASSERT_TRUE(WaitFor([&] { return plugin_->registration_status()["nic.example.com"].notified; }));
  agent::PluginRegistrationStatus nic = plugin_->registration_status()["nic.example.com"];
  EXPECT_FALSE(nic.registered);
  EXPECT_THAT(nic.error, HasSubstr("refused"));
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 2; }));
  EXPECT_THAT(kubelet_->RegisteredDrivers(), ElementsAre("fpga.example.com", "gpu.nvidia.com"));
  EXPECT_TRUE(plugin_->registration_status()["gpu.nvidia.com"].registered);
}

TEST_F(FakeKubeletTest, OlderKubeletSpeaksV1beta1AndOpensNoHealthStream) {
  StartAgent(kProfile);
  StartKubelet({}, std::chrono::seconds(45), {"v1beta1.DRAPlugin"});
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  for (boost::json::object& r : Events("registered")) {
    EXPECT_EQ(r["service"].as_string(), "v1beta1.DRAPlugin");
    EXPECT_EQ(r["healthService"].as_string(), "");
  }
  const std::string claim_uid = RunPodWithClaim("train");
  ASSERT_TRUE(
      WaitFor([&] { return PodPhase("train") == "Running" && !Events("running").empty(); }));
  std::vector<boost::json::object> prepares = Events("NodePrepareResources");
  ASSERT_EQ(prepares.size(), 1u);
  EXPECT_EQ(prepares[0]["service"].as_string(), "v1beta1.DRAPlugin");
  EXPECT_EQ(Events("running")[0]["containers"].as_object()["main"].as_array()[0].as_string(),
            "gpu.nvidia.com/gpu=" + claim_uid + "-gpu-0");
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "train").ok());
  ASSERT_TRUE(WaitFor([&] { return Events("terminated").size() == 1; }));
  std::vector<boost::json::object> unprepares = Events("NodeUnprepareResources");
  ASSERT_EQ(unprepares.size(), 1u);
  EXPECT_EQ(unprepares[0]["service"].as_string(), "v1beta1.DRAPlugin");
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_TRUE(Events("health").empty());
}

TEST_F(FakeKubeletTest, RejectsServicesItCannotSpeak) {
  for (const std::set<std::string>& services : {std::set<std::string>{"v1alpha4.DRAPlugin"},
                                                std::set<std::string>{"v1.DRAResourceHealth"}}) {
    StatusOr<std::unique_ptr<FakeKubelet>> kubelet = FakeKubelet::Create(
        api_, FakeKubeletOptions{.node_name = "node-a", .registry_dir = dir_, .services = services},
        RealClock());
    ASSERT_EQ(kubelet.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(kubelet.status().message(), HasSubstr("services"));
  }
}

TEST_F(FakeKubeletTest, PodRunsOnlyAfterPrepareAndGoesOnlyAfterUnprepare) {
  StartAgent(kProfile);
  StartKubelet();
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  const std::string claim_uid = RunPodWithClaim("train");
  // The report says "running" right after the status write the phase shows.
  ASSERT_TRUE(
      WaitFor([&] { return PodPhase("train") == "Running" && !Events("running").empty(); }));
  std::vector<boost::json::object> prepares = Events("NodePrepareResources");
  std::vector<boost::json::object> running = Events("running");
  ASSERT_EQ(prepares.size(), 1u);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_LT(Seq(prepares[0]), Seq(running[0]));
  const std::string id = "gpu.nvidia.com/gpu=" + claim_uid + "-gpu-0";
  EXPECT_EQ(prepares[0]["result"]
                .as_object()[claim_uid]
                .as_object()["devices"]
                .as_array()[0]
                .as_object()["cdiDeviceIDs"]
                .as_array()[0]
                .as_string(),
            id);
  EXPECT_EQ(running[0]["containers"].as_object()["main"].as_array()[0].as_string(), id);

  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "train").ok());
  ASSERT_TRUE(WaitFor([&] {
    return client::Get<cv1::Pod>(api_, "team-a", "train").status().code() == StatusCode::kNotFound;
  }));
  std::vector<boost::json::object> unprepares = Events("NodeUnprepareResources");
  std::vector<boost::json::object> terminated = Events("terminated");
  ASSERT_EQ(unprepares.size(), 1u);
  ASSERT_EQ(terminated.size(), 1u);
  EXPECT_LT(Seq(unprepares[0]), Seq(terminated[0]));
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ + "/state/cdi"),
                          std::filesystem::directory_iterator()),
            0);
}

TEST_F(FakeKubeletTest, SharedClaimIsUnpreparedAfterItsLastPod) {
  StartAgent(kProfile);
  StartKubelet();
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  const std::string first = CreatePod("first", "shared");
  const std::string second = CreatePod("second", "shared");
  CreateClaim("shared", {first, second});
  ASSERT_TRUE(
      WaitFor([&] { return PodPhase("first") == "Running" && PodPhase("second") == "Running"; }));
  EXPECT_EQ(Events("NodePrepareResources").size(), 1u);  // prepared once for both
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "first").ok());
  ASSERT_TRUE(WaitFor([&] { return Events("terminated").size() == 1; }));
  EXPECT_TRUE(Events("NodeUnprepareResources").empty());
  EXPECT_EQ(agent_->preparer().checkpoint().claims.size(), 1u);
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "second").ok());
  ASSERT_TRUE(WaitFor([&] { return Events("terminated").size() == 2; }));
  EXPECT_EQ(Events("NodeUnprepareResources").size(), 1u);
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
}

TEST_F(FakeKubeletTest, CallsCarryTheKubeletsDeadline) {
  StartAgent(kProfile);
  StartKubelet({}, std::chrono::nanoseconds(1));
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  RunPodWithClaim("train");
  ASSERT_TRUE(WaitFor([&] { return !Events("NodePrepareResources").empty(); }));
  std::vector<boost::json::object> prepares = Events("NodePrepareResources");
  EXPECT_THAT(std::string(prepares[0]["error"].as_string()), HasSubstr("code = 4"));
  EXPECT_NE(PodPhase("train"), "Running");
}

TEST_F(FakeKubeletTest, RetriesThePodAfterAPerClaimError) {
  std::string profile(kProfile);
  profile += "- {device: gpu-0, prepare: retryable, times: 1, message: device busy}\n";
  StartAgent(profile);
  StartKubelet();
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  const std::string claim_uid = RunPodWithClaim("train");
  ASSERT_TRUE(WaitFor([&] { return PodPhase("train") == "Running"; }));
  std::vector<boost::json::object> prepares = Events("NodePrepareResources");
  ASSERT_EQ(prepares.size(), 2u);
  EXPECT_THAT(
      std::string(prepares[0]["result"].as_object()[claim_uid].as_object()["error"].as_string()),
      HasSubstr("retryable: claim team-a/train-gpu"));
  EXPECT_EQ(prepares[1]["result"].as_object()[claim_uid].as_object()["error"].as_string(), "");
  // (A sync may also fail before the claim exists: the helper creates the Pod first.)
  std::vector<boost::json::object> failed;
  for (boost::json::object& f : Events("prepareFailed")) {
    if (std::string(f["error"].as_string()).find("device busy") != std::string::npos) {
      failed.push_back(f);
    }
  }
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_LT(Seq(failed[0]), Seq(prepares[1]));
  StatusOr<client::ObjectList<cv1::Event>> events = client::List<cv1::Event>(api_, "team-a");
  ASSERT_TRUE(events.ok());
  bool busy = false;
  for (const cv1::Event& e : events->items) {
    EXPECT_EQ(e.reason, "FailedPrepareDynamicResources");
    busy = busy || e.message.find("device busy") != std::string::npos;
  }
  EXPECT_TRUE(busy);
}

TEST_F(FakeKubeletTest, HealthChangesReachTheKubeletAndTheSlices) {
  StartAgent(kProfile);
  StartKubelet();
  auto health_of = [&](const std::string& device) {
    std::string last;
    for (const boost::json::object& h : Events("health")) {
      if (h.at("device").as_string() == device && h.at("driver").as_string() == "gpu.nvidia.com") {
        last = std::string(h.at("health").as_string());
      }
    }
    return last;
  };
  ASSERT_TRUE(WaitFor([&] { return health_of("gpu-1") == "Healthy"; }));
  agent_clock_.Advance(std::chrono::seconds(60));
  ASSERT_TRUE(agent_->SyncSlices().ok());
  ASSERT_TRUE(WaitFor([&] { return health_of("gpu-1") == "Unhealthy"; }));
  EXPECT_EQ(health_of("gpu-0"), "Healthy");
  // The same health, as the device taint the agent publishes.
  StatusOr<rv1::ResourceSlice> slice =
      client::Get<rv1::ResourceSlice>(api_, "", "node-a-gpu.nvidia.com-0");
  ASSERT_TRUE(slice.ok());
  ASSERT_EQ(slice->spec.devices[1].taints.size(), 1u);
  EXPECT_EQ(slice->spec.devices[1].taints[0].key, "gpu.nvidia.com/unhealthy");
}

TEST_F(FakeKubeletTest, DeregistrationWipesTheDriversSlicesAfterTheDelay) {
  StartAgent(kProfile);
  StartKubelet();
  ASSERT_TRUE(WaitFor([&] { return kubelet_->RegisteredDrivers().size() == 3; }));
  plugin_->Stop();
  // The kubelet reports each step after taking it (a driver forgotten, then its slices deleted):
  // wait for the reports, which come last, not for the state.
  ASSERT_TRUE(WaitFor([&] { return Events("slicesWiped").size() == 3; }));
  EXPECT_TRUE(kubelet_->RegisteredDrivers().empty());
  EXPECT_TRUE(client::List<rv1::ResourceSlice>(api_, "")->items.empty());
  EXPECT_EQ(Events("deregistered").size(), 3u);
}

}  // namespace
}  // namespace draplane::fakekubelet
