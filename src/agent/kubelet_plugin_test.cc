// The kubelet plugin (kubelet_plugin.h) against raw gRPC clients of the kubelet's APIs: the
// conformance cases of docs/design/kubelet-plugin.md that need no API server process.
#include "agent/kubelet_plugin.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/drivers/profile/profile_driver.h"
#include "agent/internal/files.h"
#include "client/memory_api.h"
#include "client/typed.h"
#include "common/random.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace draplane::agent {
namespace {

namespace rv1 = api::resourcev1;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

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

class KubeletPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Unix socket paths are short: a short directory.
    static int counter = 0;
    dir_ = "/tmp/kp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    std::filesystem::remove_all(dir_);
    agent_ = NewAgent();
  }
  void TearDown() override {
    plugins_.clear();
    agents_.clear();
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Agent> NewAgent() {
    StatusOr<ClusterProfile> profile = ParseProfile(kProfile);
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    std::vector<std::unique_ptr<Driver>> drivers;
    drivers.push_back(std::move(*ProfileDriver::Create({.node_name = "node-a",
                                                        .profile_path = "",
                                                        .node = profile->pools[0].node,
                                                        .clock = &clock_,
                                                        .state_dir = dir_ + "/state",
                                                        .crash_exits_process = false})));
    StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(
        api_, std::move(drivers),
        AgentOptions{.node_name = "node-a", .state_dir = dir_ + "/state", .kubelet_plugin = true},
        clock_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    EXPECT_TRUE((*agent)->Init().ok());
    return std::move(*agent);
  }

  KubeletPlugin& StartPlugin(Agent& agent, const std::string& instance = "") {
    StatusOr<std::unique_ptr<KubeletPlugin>> plugin = KubeletPlugin::Start(
        agent, api_, clock_,
        KubeletPluginOptions{.registry_dir = dir_ + "/registry",
                             .plugins_dir = dir_ + "/plugins",
                             .instance = instance,
                             .health_resend_interval = std::chrono::milliseconds(200)});
    EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
    plugins_.push_back(std::move(*plugin));
    return *plugins_.back();
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& socket) {
    return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  }

  // An allocated claim with one result per (request, device) on node-a.
  rv1::ResourceClaim CreateClaim(const std::string& name,
                                 std::vector<std::pair<std::string, std::string>> results,
                                 const std::string& driver = "gpu.nvidia.com") {
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
    for (const auto& [req, device] : results) {
      rv1::DeviceRequestAllocationResult r;
      r.request = req;
      r.driver = driver;
      r.pool = "node-a";
      r.device = device;
      allocation.devices.results.push_back(r);
    }
    created->status.allocation = allocation;
    StatusOr<rv1::ResourceClaim> updated = client::UpdateStatus(api_, *created);
    EXPECT_TRUE(updated.ok()) << updated.status().ToString();
    return *updated;
  }

  template <typename Request>
  static void AddClaim(Request* request, const rv1::ResourceClaim& claim) {
    auto* c = request->add_claims();
    c->set_namespace_(claim.metadata.namespace_);
    c->set_name(claim.metadata.name);
    c->set_uid(claim.metadata.uid);
  }

  std::string DraSocket(const std::string& driver = "gpu.nvidia.com") const {
    return dir_ + "/plugins/" + driver + "/dra.sock";
  }

  std::vector<std::string> CdiFiles() { return *internal::ListFiles(dir_ + "/state/cdi"); }

  ManualClock clock_;
  std::unique_ptr<Random> random_ = NewSeededRandom(7);
  client::MemoryApi api_{clock_, *random_};
  std::string dir_;
  std::unique_ptr<Agent> agent_;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<std::unique_ptr<KubeletPlugin>> plugins_;
};

TEST_F(KubeletPluginTest, SocketsFollowTheKubeletLayout) {
  EXPECT_EQ(RegistrationSocketPath("/var/lib/kubelet/plugins_registry", "gpu.example.com", ""),
            "/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock");
  EXPECT_EQ(RegistrationSocketPath("/r", "gpu.example.com", "7c9a"),
            "/r/gpu.example.com-7c9a-reg.sock");
  EXPECT_EQ(DraSocketPath("/var/lib/kubelet/plugins", "gpu.example.com", ""),
            "/var/lib/kubelet/plugins/gpu.example.com/dra.sock");
  EXPECT_EQ(DraSocketPath("/p", "gpu.example.com", "7c9a"), "/p/gpu.example.com/dra-7c9a.sock");

  KubeletPlugin& plugin = StartPlugin(*agent_);
  // One registration and one DRA socket per driver the agent manages (the profile driver's
  // three), mode 0600.
  auto sockets = plugin.sockets();
  ASSERT_EQ(sockets.size(), 3u);
  for (const auto& [driver, paths] : sockets) {
    EXPECT_EQ(paths.first, dir_ + "/registry/" + driver + "-reg.sock");
    EXPECT_EQ(paths.second, dir_ + "/plugins/" + driver + "/dra.sock");
    for (const std::string& path : {paths.first, paths.second}) {
      struct stat st;
      ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
      EXPECT_TRUE(S_ISSOCK(st.st_mode)) << path;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
    }
  }
}

TEST_F(KubeletPluginTest, GetInfoAnswersTypeNameEndpointAndServicesNewestFirst) {
  KubeletPlugin& plugin = StartPlugin(*agent_);
  auto stub = pluginregistration::Registration::NewStub(
      Channel(dir_ + "/registry/gpu.nvidia.com-reg.sock"));
  grpc::ClientContext context;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.nvidia.com");
  EXPECT_EQ(info.endpoint(), DraSocket());
  EXPECT_THAT(
      std::vector<std::string>(info.supported_versions().begin(), info.supported_versions().end()),
      ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                  "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"));

  EXPECT_FALSE(plugin.registration_status()["gpu.nvidia.com"].notified);
  grpc::ClientContext notify;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("version check failed");
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&notify, status, &response).ok());
  PluginRegistrationStatus seen = plugin.registration_status()["gpu.nvidia.com"];
  EXPECT_TRUE(seen.notified);
  EXPECT_FALSE(seen.registered);
  EXPECT_EQ(seen.error, "version check failed");
}

TEST_F(KubeletPluginTest, PrepareAnswersCdiIdsAndBaseRequestNamesOnV1AndV1beta1) {
  StartPlugin(*agent_);
  rv1::ResourceClaim claim = CreateClaim("train", {{"gpu/h100", "gpu-0"}});
  drav1::NodePrepareResourcesRequest request;
  AddClaim(&request, claim);
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(drav1::DRAPlugin::NewStub(Channel(DraSocket()))
                  ->NodePrepareResources(&context, request, &response)
                  .ok());
  ASSERT_EQ(response.claims().count(claim.metadata.uid), 1u);
  const drav1::NodePrepareResourceResponse& answer = response.claims().at(claim.metadata.uid);
  EXPECT_EQ(answer.error(), "");
  ASSERT_EQ(answer.devices_size(), 1);
  EXPECT_THAT(answer.devices(0).request_names(), ElementsAre("gpu"));
  EXPECT_EQ(answer.devices(0).pool_name(), "node-a");
  EXPECT_EQ(answer.devices(0).device_name(), "gpu-0");
  const std::string id = "gpu.nvidia.com/gpu=" + claim.metadata.uid + "-gpu-0";
  EXPECT_THAT(answer.devices(0).cdi_device_ids(), ElementsAre(id));
  // The spec the ID names exists before the answer.
  EXPECT_THAT(CdiFiles(), ElementsAre("gpu.nvidia.com_gpu_" + claim.metadata.uid + ".json"));

  // The same through v1beta1, which older kubelets speak: the same answer, nothing prepared
  // twice.
  drav1beta1::NodePrepareResourcesRequest beta_request;
  AddClaim(&beta_request, claim);
  drav1beta1::NodePrepareResourcesResponse beta;
  grpc::ClientContext beta_context;
  ASSERT_TRUE(drav1beta1::DRAPlugin::NewStub(Channel(DraSocket()))
                  ->NodePrepareResources(&beta_context, beta_request, &beta)
                  .ok());
  EXPECT_THAT(beta.claims().at(claim.metadata.uid).devices(0).cdi_device_ids(), ElementsAre(id));
  // The claim's device status says Ready with the CDI IDs.
  StatusOr<rv1::ResourceClaim> stored = client::Get<rv1::ResourceClaim>(api_, "team-a", "train");
  ASSERT_EQ(stored->status.devices.size(), 1u);
  EXPECT_EQ(stored->status.devices[0].conditions[0].type, "Ready");
}

TEST_F(KubeletPluginTest, PrepareIsIdempotentAndUnprepareReleasesEverything) {
  StartPlugin(*agent_);
  rv1::ResourceClaim claim = CreateClaim("train", {{"gpu", "gpu-0"}, {"gpu", "gpu-1"}});
  auto stub = drav1::DRAPlugin::NewStub(Channel(DraSocket()));
  std::vector<std::string> first;
  for (int call = 0; call < 3; ++call) {
    drav1::NodePrepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
    std::vector<std::string> ids;
    for (const auto& d : response.claims().at(claim.metadata.uid).devices()) {
      ids.insert(ids.end(), d.cdi_device_ids().begin(), d.cdi_device_ids().end());
    }
    if (call == 0) first = ids;
    EXPECT_EQ(ids, first);
  }
  EXPECT_EQ(first.size(), 2u);
  EXPECT_EQ(agent_->preparer().checkpoint().claims.size(), 1u);

  for (int call = 0; call < 2; ++call) {  // the second finds nothing to do
    drav1::NodeUnprepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodeUnprepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodeUnprepareResources(&context, request, &response).ok());
    ASSERT_EQ(response.claims().count(claim.metadata.uid), 1u);
    EXPECT_EQ(response.claims().at(claim.metadata.uid).error(), "");
  }
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

TEST_F(KubeletPluginTest, UnprepareOfAnUnknownClaimSucceeds) {
  StartPlugin(*agent_);
  drav1::NodeUnprepareResourcesRequest request;
  auto* c = request.add_claims();
  c->set_namespace_("team-a");
  c->set_name("never-seen");
  c->set_uid("00000000-0000-4000-8000-000000000000");
  drav1::NodeUnprepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(drav1::DRAPlugin::NewStub(Channel(DraSocket()))
                  ->NodeUnprepareResources(&context, request, &response)
                  .ok());
  EXPECT_EQ(response.claims().at("00000000-0000-4000-8000-000000000000").error(), "");
}

TEST_F(KubeletPluginTest, ClaimProblemsArePerClaimErrorsNotAFailedCall) {
  StartPlugin(*agent_);
  rv1::ResourceClaim good = CreateClaim("good", {{"gpu", "gpu-0"}});
  rv1::ResourceClaim replaced = CreateClaim("replaced", {{"gpu", "gpu-1"}});
  drav1::NodePrepareResourcesRequest request;
  AddClaim(&request, good);
  AddClaim(&request, replaced);
  request.mutable_claims(1)->set_uid("11111111-1111-4111-8111-111111111111");  // a stale uid
  auto* missing = request.add_claims();
  missing->set_namespace_("team-a");
  missing->set_name("missing");
  missing->set_uid("22222222-2222-4222-8222-222222222222");
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(drav1::DRAPlugin::NewStub(Channel(DraSocket()))
                  ->NodePrepareResources(&context, request, &response)
                  .ok());
  ASSERT_EQ(response.claims_size(), 3);
  EXPECT_EQ(response.claims().at(good.metadata.uid).error(), "");
  EXPECT_EQ(response.claims().at(good.metadata.uid).devices_size(), 1);
  EXPECT_THAT(response.claims().at("11111111-1111-4111-8111-111111111111").error(),
              HasSubstr("got replaced"));
  EXPECT_THAT(response.claims().at("22222222-2222-4222-8222-222222222222").error(),
              HasSubstr("retryable: claim team-a/missing"));
  // Only the good claim was prepared.
  EXPECT_THAT(CdiFiles(), ElementsAre("gpu.nvidia.com_gpu_" + good.metadata.uid + ".json"));
}

// A claim allocated on another node's pool is a terminal error, not "prepared, no devices" (the
// kubelet would start the container without its GPU); a claim listed twice is answered once.
TEST_F(KubeletPluginTest, ForeignAllocationFailsAndADuplicateClaimIsAnsweredOnce) {
  StartPlugin(*agent_);
  rv1::ResourceClaim foreign = CreateClaim("foreign", {{"gpu", "gpu-1"}});
  foreign.status.allocation->devices.results[0].pool = "node-b";
  foreign = *client::UpdateStatus(api_, foreign);
  rv1::ResourceClaim twice = CreateClaim("twice", {{"gpu", "gpu-0"}});
  drav1::NodePrepareResourcesRequest request;
  AddClaim(&request, foreign);
  AddClaim(&request, twice);
  AddClaim(&request, twice);
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(drav1::DRAPlugin::NewStub(Channel(DraSocket()))
                  ->NodePrepareResources(&context, request, &response)
                  .ok());
  const auto& refused = response.claims().at(foreign.metadata.uid);
  EXPECT_EQ(refused.devices_size(), 0);
  EXPECT_EQ(refused.error(),
            "terminal: claim team-a/foreign has no device of driver gpu.nvidia.com on node node-a "
            "(allocated: node-b/gpu-1)");
  EXPECT_EQ(response.claims().at(twice.metadata.uid).error(), "");
  EXPECT_EQ(response.claims().at(twice.metadata.uid).devices_size(), 1);
}

TEST_F(KubeletPluginTest, ClaimWithDevicesOfTwoDriversIsPreparedOnceAndAnsweredPerDriver) {
  StartPlugin(*agent_);
  rv1::ResourceClaim claim = CreateClaim("pair", {{"gpu", "gpu-0"}});
  rv1::DeviceRequestAllocationResult nic;
  nic.request = "nic";
  nic.driver = "nic.example.com";
  nic.pool = "node-a";
  nic.device = "nic-0";
  nic.share_id = "6b2a8c3e-7d1f-4e5a-9b0c-1d2e3f4a5b6c";
  claim.status.allocation->devices.results.push_back(nic);
  claim = *client::UpdateStatus(api_, claim);
  for (const std::string driver : {"gpu.nvidia.com", "nic.example.com"}) {
    drav1::NodePrepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(drav1::DRAPlugin::NewStub(Channel(DraSocket(driver)))
                    ->NodePrepareResources(&context, request, &response)
                    .ok());
    const auto& answer = response.claims().at(claim.metadata.uid);
    EXPECT_EQ(answer.error(), "");
    ASSERT_EQ(answer.devices_size(), 1) << driver;
    EXPECT_EQ(answer.devices(0).device_name(), driver == "gpu.nvidia.com" ? "gpu-0" : "nic-0");
  }
  EXPECT_EQ(CdiFiles().size(), 2u);
}

TEST_F(KubeletPluginTest, HealthStreamsTheFullListOnChange) {
  StartPlugin(*agent_);
  ASSERT_TRUE(agent_->SyncSlices().ok());
  grpc::ClientContext context;
  auto reader = v1::DRAResourceHealth::NewStub(Channel(DraSocket()))
                    ->NodeWatchResources(&context, v1::NodeWatchResourcesRequest());
  v1::NodeWatchResourcesResponse message;
  ASSERT_TRUE(reader->Read(&message));
  ASSERT_EQ(message.devices_size(), 2);
  for (const auto& d : message.devices()) {
    EXPECT_EQ(d.device().pool_name(), "node-a");
    EXPECT_EQ(d.health(), v1::HEALTHY);
    EXPECT_EQ(d.health_check_timeout_seconds(), 90);
  }
  // The fault of gpu-1 starts after 60 s: the next message lists both devices, gpu-1 unhealthy.
  clock_.Advance(std::chrono::seconds(60));
  ASSERT_TRUE(agent_->SyncSlices().ok());
  do {
    ASSERT_TRUE(reader->Read(&message));
  } while (message.devices(1).health() != v1::UNHEALTHY);
  ASSERT_EQ(message.devices_size(), 2);
  EXPECT_EQ(message.devices(0).device().device_name(), "gpu-0");
  EXPECT_EQ(message.devices(0).health(), v1::HEALTHY);
  EXPECT_EQ(message.devices(1).device().device_name(), "gpu-1");
  EXPECT_EQ(message.devices(1).message(), "XID 79");
  EXPECT_EQ(
      message.devices(1).last_updated_time(),
      std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count());
  // The same devices over v1alpha1 (1.34/1.35 kubelets).
  grpc::ClientContext alpha_context;
  auto alpha = v1alpha1::DRAResourceHealth::NewStub(Channel(DraSocket()))
                   ->NodeWatchResources(&alpha_context, v1alpha1::NodeWatchResourcesRequest());
  v1alpha1::NodeWatchResourcesResponse alpha_message;
  ASSERT_TRUE(alpha->Read(&alpha_message));
  ASSERT_EQ(alpha_message.devices_size(), 2);
  EXPECT_EQ(alpha_message.devices(1).health(), v1alpha1::UNHEALTHY);
  context.TryCancel();
  alpha_context.TryCancel();
}

TEST_F(KubeletPluginTest, HealthMessagesAreCutAt1024Characters) {
  EXPECT_EQ(TruncateHealthMessage("short"), "short");
  const std::string cut = TruncateHealthMessage(std::string(2000, 'x'));
  EXPECT_EQ(cut.size(), 1024u);
  EXPECT_TRUE(cut.ends_with("xxx..."));
}

TEST_F(KubeletPluginTest, StaleOwnSocketsAreReplacedAndOnlyOwnSocketsRemoved) {
  std::filesystem::create_directories(dir_ + "/registry");
  std::ofstream(dir_ + "/registry/gpu.nvidia.com-reg.sock") << "stale";
  std::ofstream(dir_ + "/registry/other.example.com-reg.sock") << "someone else's";
  KubeletPlugin& plugin = StartPlugin(*agent_);
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/registry/gpu.nvidia.com-reg.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  plugin.Stop();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/registry/gpu.nvidia.com-reg.sock"));
  EXPECT_FALSE(std::filesystem::exists(DraSocket()));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/registry/other.example.com-reg.sock"));
}

// A second agent for the same driver without its own --plugin-instance does not take over the
// first one's live sockets (which left the first running unreachable).
TEST_F(KubeletPluginTest, ASecondAgentRefusesTheSocketsAnotherServes) {
  StartPlugin(*agent_);
  agents_.push_back(NewAgent());
  StatusOr<std::unique_ptr<KubeletPlugin>> second = KubeletPlugin::Start(
      *agents_.back(), api_, clock_,
      KubeletPluginOptions{.registry_dir = dir_ + "/registry",
                           .plugins_dir = dir_ + "/plugins",
                           .instance = "",
                           .health_resend_interval = std::chrono::seconds(30)});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("another process serves"));
  EXPECT_TRUE(std::filesystem::exists(DraSocket()));
}

TEST_F(KubeletPluginTest, RollingUpdateInstancesServeSideBySideOnOneCheckpoint) {
  StartPlugin(*agent_, "old-uid");
  agents_.push_back(NewAgent());  // the new instance, same state dir
  StartPlugin(*agents_.back(), "new-uid");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/registry/gpu.nvidia.com-old-uid-reg.sock"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/registry/gpu.nvidia.com-new-uid-reg.sock"));
  rv1::ResourceClaim claim = CreateClaim("train", {{"gpu", "gpu-0"}});
  // Prepared by the old instance ...
  {
    drav1::NodePrepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(
        drav1::DRAPlugin::NewStub(Channel(dir_ + "/plugins/gpu.nvidia.com/dra-old-uid.sock"))
            ->NodePrepareResources(&context, request, &response)
            .ok());
    EXPECT_EQ(response.claims().at(claim.metadata.uid).error(), "");
  }
  plugins_.front()->Stop();
  // ... prepared again (idempotently) and unprepared by the new one.
  auto stub = drav1::DRAPlugin::NewStub(Channel(dir_ + "/plugins/gpu.nvidia.com/dra-new-uid.sock"));
  {
    drav1::NodePrepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
    EXPECT_EQ(response.claims().at(claim.metadata.uid).error(), "");
    EXPECT_EQ(response.claims().at(claim.metadata.uid).devices_size(), 1);
  }
  {
    drav1::NodeUnprepareResourcesRequest request;
    AddClaim(&request, claim);
    drav1::NodeUnprepareResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodeUnprepareResources(&context, request, &response).ok());
    EXPECT_EQ(response.claims().at(claim.metadata.uid).error(), "");
  }
  EXPECT_THAT(CdiFiles(), IsEmpty());
  StatusOr<std::string> held = internal::ReadFile(dir_ + "/state/profile-devices.json");
  ASSERT_TRUE(held.ok());
  EXPECT_THAT(*held, Not(HasSubstr(claim.metadata.uid)));
}

TEST_F(KubeletPluginTest, RefusesAnAgentThatPreparesOnItsOwn) {
  StatusOr<ClusterProfile> profile = ParseProfile(kProfile);
  std::vector<std::unique_ptr<Driver>> drivers;
  drivers.push_back(std::move(*ProfileDriver::Create({.node_name = "node-b",
                                                      .profile_path = "",
                                                      .node = profile->pools[0].node,
                                                      .clock = &clock_,
                                                      .state_dir = "",
                                                      .crash_exits_process = false})));
  StatusOr<std::unique_ptr<Agent>> agent =
      Agent::Create(api_, std::move(drivers),
                    AgentOptions{.node_name = "node-b", .state_dir = dir_ + "/b"}, clock_);
  ASSERT_TRUE(agent.ok());
  StatusOr<std::unique_ptr<KubeletPlugin>> plugin = KubeletPlugin::Start(
      **agent, api_, clock_, KubeletPluginOptions{.registry_dir = dir_ + "/r"});
  EXPECT_EQ(plugin.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace draplane::agent
