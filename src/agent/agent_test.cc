#include "agent/agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "agent/cdi.h"
#include "agent/drivers/profile/profile_driver.h"
#include "agent/internal/files.h"
#include "api/labels/node_isolation.h"
#include "api/validation/validation.h"
#include "client/typed.h"
#include "common/random.h"
#include "testing/cluster.h"
#include "testing/test_api.h"

namespace draplane::agent {
namespace {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::string_view kProfile = R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
labels: {platform.example.com/accelerator: h100}
capacity: {cpu: "64"}
extendedResources: {example.com/gpu: "2"}
devices:
  gpus:
  - {count: 2, productName: NVIDIA H100 80GB HBM3, architecture: Hopper,
     cudaComputeCapability: "9.0", driverVersion: 550.90.07, memory: 80Gi}
  fpgas: [{count: 1, model: Agilex 7, bitstreamFamily: inference-v2}]
  nics: [{count: 1, model: CX7, bandwidth: 400G, shared: true}]
faults:
- {device: gpu-1, after: 60s, effect: NoExecute, message: XID 79}
- {device: fpga-0, prepare: terminal, message: bitstream load failed}
)";

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("agent-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    agent_ = NewAgent();
  }
  void TearDown() override {
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Agent> NewAgent(std::string_view profile_text = kProfile) {
    StatusOr<ClusterProfile> profile = ParseProfile(profile_text);
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    const NodeTemplate& node = profile->pools[0].node;
    std::vector<std::unique_ptr<Driver>> drivers;
    drivers.push_back(std::move(*ProfileDriver::Create({.node_name = "node-a",
                                                        .profile_path = "",
                                                        .node = node,
                                                        .clock = &clock_,
                                                        .state_dir = (dir_ / "state").string(),
                                                        .crash_exits_process = false})));
    std::map<std::string, api::Quantity> capacity = node.capacity;
    for (const auto& [k, v] : node.extended_resources) capacity[k] = v;
    StatusOr<std::unique_ptr<Agent>> agent =
        Agent::Create(api_, std::move(drivers),
                      AgentOptions{.node_name = "node-a",
                                   .state_dir = (dir_ / "state").string(),
                                   .labels = node.labels,
                                   .capacity = capacity},
                      clock_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    Status init = (*agent)->Init();
    EXPECT_TRUE(init.ok()) << init.ToString();
    return std::move(*agent);
  }

  // An allocated claim reserved for pod `pod_uid`, with results on node-a (with the devices'
  // binding conditions when `binding_conditions`).
  void CreateClaim(const std::string& name, const std::string& pod_uid,
                   std::vector<std::pair<std::string, std::string>> devices,
                   bool binding_conditions = false) {
    rv1::ResourceClaim claim;
    claim.metadata.name = name;
    claim.metadata.namespace_ = "team-a";
    rv1::DeviceRequest request;
    request.name = "gpu";
    request.exactly.emplace();
    request.exactly->device_class_name = "gpu.nvidia.com";
    claim.spec.devices.requests.push_back(request);
    StatusOr<rv1::ResourceClaim> created = client::Create(api_, claim);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    rv1::AllocationResult allocation;
    for (const auto& [driver, device] : devices) {
      rv1::DeviceRequestAllocationResult r;
      r.request = "gpu";
      r.driver = driver;
      r.pool = "node-a";
      r.device = device;
      if (binding_conditions) {
        r.binding_conditions = {FabricAttachedCondition(driver)};
        r.binding_failure_conditions = {FabricAttachFailedCondition(driver)};
      }
      allocation.devices.results.push_back(r);
    }
    created->status.allocation = allocation;
    rv1::ResourceClaimConsumerReference ref;
    ref.resource = "pods";
    ref.name = "pod-" + name;
    ref.uid = pod_uid;
    created->status.reserved_for.push_back(ref);
    ASSERT_TRUE(client::UpdateStatus(api_, *created).ok());
  }

  // A Pod bound to node-a (or only nominated to it) using claim `claim`; returns its UID.
  std::string CreatePod(const std::string& name, const std::string& claim,
                        bool nominated_only = false) {
    cv1::Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "team-a";
    if (!nominated_only) pod.spec.node_name = "node-a";
    cv1::Container c;
    c.name = "main";
    c.image = "example.com/llm:1";
    pod.spec.containers.push_back(c);
    cv1::PodResourceClaim ref;
    ref.name = "gpu";
    ref.resource_claim_name = claim;
    pod.spec.resource_claims.push_back(ref);
    StatusOr<cv1::Pod> created = client::Create(api_, pod);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (nominated_only) {
      created->status.nominated_node_name = "node-a";
      created = client::UpdateStatus(api_, *created);
      EXPECT_TRUE(created.ok()) << created.status().ToString();
    }
    return created->metadata.uid;
  }
  // Reserves claim `claim` for the pod `pod` (its real UID).
  void ReserveFor(const std::string& claim, const std::string& pod_uid) {
    StatusOr<rv1::ResourceClaim> c = client::Get<rv1::ResourceClaim>(api_, "team-a", claim);
    ASSERT_TRUE(c.ok());
    c->status.reserved_for[0].uid = pod_uid;
    ASSERT_TRUE(client::UpdateStatus(api_, *c).ok());
  }
  std::vector<std::string> EventReasons() {
    std::vector<std::string> out;
    StatusOr<client::ObjectList<cv1::Event>> events = client::List<cv1::Event>(api_, "team-a");
    for (const cv1::Event& e : events->items) {
      out.push_back(e.reason + ": " + e.message);
    }
    return out;
  }
  // The device's condition `type` in claim `claim`'s status ("" when absent), as "True: message".
  std::string DeviceCondition(const std::string& claim, const std::string& device,
                              const std::string& type) {
    StatusOr<rv1::ResourceClaim> c = client::Get<rv1::ResourceClaim>(api_, "team-a", claim);
    if (!c.ok()) return "";
    for (const rv1::AllocatedDeviceStatus& d : c->status.devices) {
      if (d.device != device) continue;
      for (const api::metav1::Condition& cond : d.conditions) {
        if (cond.type == type) return cond.status + ": " + cond.message;
      }
    }
    return "";
  }

  std::vector<std::string> CdiFiles() {
    return *internal::ListFiles((dir_ / "state/cdi").string());
  }

  ManualClock clock_;
  draplane::testing::TestApi api_{{.clock = &clock_, .namespaces = {"team-a"}}};
  std::filesystem::path dir_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, RegistersTheNodeAndItsLease) {
  ASSERT_TRUE(agent_->SyncNode().ok());
  StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", "node-a");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->metadata.labels.at("platform.example.com/accelerator"), "h100");
  EXPECT_EQ(node->metadata.labels.at("kubernetes.io/hostname"), "node-a");
  EXPECT_EQ(node->metadata.annotations.at("draplane.dev/agent"), "true");
  EXPECT_EQ(node->status.capacity.at("cpu").Value(), 64);
  EXPECT_EQ(node->status.capacity.at("pods").Value(), 110);
  EXPECT_EQ(node->status.allocatable.at("example.com/gpu").Value(), 2);
  // The kubelet's four conditions: what the node lifecycle controller turns Unknown when the
  // heartbeats stop, and the agent back again.
  std::vector<std::string> conditions;
  for (const cv1::NodeCondition& c : node->status.conditions) {
    conditions.push_back(c.type + "=" + c.status + " " + c.reason);
  }
  EXPECT_THAT(conditions, ::testing::ElementsAre("MemoryPressure=False KubeletHasSufficientMemory",
                                                 "DiskPressure=False KubeletHasNoDiskPressure",
                                                 "PIDPressure=False KubeletHasSufficientPID",
                                                 "Ready=True KubeletReady"));
  for (cv1::NodeCondition& c : node->status.conditions) {
    c.status = "Unknown";
    c.reason = "NodeStatusUnknown";
  }
  ASSERT_TRUE(client::UpdateStatus(api_, *node).ok());
  ASSERT_TRUE(agent_->SyncNode().ok());
  node = client::Get<cv1::Node>(api_, "", "node-a");
  ASSERT_TRUE(node.ok());
  for (const cv1::NodeCondition& c : node->status.conditions) {
    EXPECT_NE(c.status, "Unknown") << c.type;
  }
  StatusOr<api::coordinationv1::Lease> lease =
      client::Get<api::coordinationv1::Lease>(api_, "kube-node-lease", "node-a");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->spec.holder_identity.value_or(""), "node-a");
  const api::Time first = *lease->spec.renew_time;
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(agent_->SyncNode().ok());
  EXPECT_GT(
      *client::Get<api::coordinationv1::Lease>(api_, "kube-node-lease", "node-a")->spec.renew_time,
      first);
}

TEST_F(AgentTest, PublishesValidSlicesOnceAndTaintsUnhealthyDevices) {
  ASSERT_TRUE(agent_->SyncSlices().ok());
  auto slices = [&] { return client::List<rv1::ResourceSlice>(api_, "")->items; };
  std::vector<rv1::ResourceSlice> first = slices();
  ASSERT_EQ(first.size(), 3u);
  for (const rv1::ResourceSlice& s : first) {
    EXPECT_THAT(api::validation::ValidateResourceSlice(s), IsEmpty()) << s.metadata.name;
    EXPECT_EQ(s.spec.pool.generation, 1);
  }
  const int64_t writes =
      api_.RequestCount(client::Verb::kCreate) + api_.RequestCount(client::Verb::kUpdate);
  ASSERT_TRUE(agent_->SyncSlices().ok());
  EXPECT_EQ(api_.RequestCount(client::Verb::kCreate) + api_.RequestCount(client::Verb::kUpdate),
            writes);

  clock_.Advance(std::chrono::seconds(60));
  ASSERT_TRUE(agent_->SyncSlices().ok());
  StatusOr<rv1::ResourceSlice> gpus =
      client::Get<rv1::ResourceSlice>(api_, "", "node-a-gpu.nvidia.com-0");
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(gpus->spec.pool.generation, 2);
  ASSERT_EQ(gpus->spec.devices[1].taints.size(), 1u);
  EXPECT_EQ(gpus->spec.devices[1].taints[0].key, "gpu.nvidia.com/unhealthy");
  EXPECT_EQ(gpus->spec.devices[1].taints[0].effect, "NoExecute");
  EXPECT_TRUE(gpus->spec.devices[0].taints.empty());
}

// The Node owns the agent's slices: deleting the Node deletes them (they outlived it, its devices
// counted as available), and a Node registered again owns the slices published next.
TEST_F(AgentTest, TheNodeOwnsItsSlicesAndTakesThemWithIt) {
  ASSERT_TRUE(agent_->SyncNode().ok());
  ASSERT_TRUE(agent_->SyncSlices().ok());
  auto slices = [&] { return client::List<rv1::ResourceSlice>(api_, "")->items; };
  StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", "node-a");
  ASSERT_TRUE(node.ok());
  ASSERT_FALSE(slices().empty());
  for (const rv1::ResourceSlice& s : slices()) {
    ASSERT_EQ(s.metadata.owner_references.size(), 1u) << s.metadata.name;
    EXPECT_EQ(s.metadata.owner_references[0].kind, "Node");
    EXPECT_EQ(s.metadata.owner_references[0].uid, node->metadata.uid);
  }
  ASSERT_TRUE(client::Delete<cv1::Node>(api_, "", "node-a").ok());
  for (int i = 0; i < 60'000 && !slices().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(slices().empty()) << "the server's garbage collector deletes the Node's slices";
  ASSERT_TRUE(agent_->SyncNode().ok());
  ASSERT_TRUE(agent_->SyncSlices().ok());
  StatusOr<cv1::Node> again = client::Get<cv1::Node>(api_, "", "node-a");
  ASSERT_TRUE(again.ok());
  ASSERT_FALSE(slices().empty());
  for (const rv1::ResourceSlice& s : slices()) {
    ASSERT_EQ(s.metadata.owner_references.size(), 1u) << s.metadata.name;
    EXPECT_EQ(s.metadata.owner_references[0].uid, again->metadata.uid);
  }
}

TEST_F(AgentTest, PodRunsAfterItsCdiSpecExistsAndDeletionReleasesEverything) {
  const std::string uid = "11111111-1111-4111-8111-111111111111";
  CreateClaim("train", uid, {{"gpu.nvidia.com", "gpu-0"}, {"nic.example.com", "nic-0"}});
  // The Pod's real UID is what the claim must be reserved for.
  const std::string pod_uid = CreatePod("pod-train", "train");
  StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api_, "team-a", "train");
  claim->status.reserved_for[0].uid = pod_uid;
  ASSERT_TRUE(client::UpdateStatus(api_, *claim).ok());

  StatusOr<PodOutcome> outcome = agent_->SyncPod("team-a", "pod-train");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, PodOutcome::kDone);
  const std::string claim_uid = claim->metadata.uid;
  EXPECT_THAT(CdiFiles(), ElementsAre("gpu.nvidia.com_gpu_" + claim_uid + ".json",
                                      "nic.example.com_nic_" + claim_uid + ".json"));
  StatusOr<CdiSpec> spec = ParseCdiSpec(*internal::ReadFile(
      (dir_ / "state/cdi" / ("gpu.nvidia.com_gpu_" + claim_uid + ".json")).string()));
  ASSERT_TRUE(spec.ok());
  ASSERT_EQ(spec->devices.size(), 1u);
  EXPECT_EQ(spec->devices[0].name, claim_uid + "-gpu-0");
  StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "team-a", "pod-train");
  EXPECT_EQ(pod->status.phase, "Running");
  // Device status: Ready, CDI IDs, NIC network data.
  claim = client::Get<rv1::ResourceClaim>(api_, "team-a", "train");
  ASSERT_EQ(claim->status.devices.size(), 2u);
  EXPECT_EQ(claim->status.devices[0].conditions[0].type, "Ready");
  EXPECT_EQ(claim->status.devices[0].conditions[0].status, "True");
  EXPECT_TRUE(claim->status.devices[1].network_data.has_value());
  EXPECT_EQ(claim->status.devices[1].network_data->interface_name, "net0");
  EXPECT_THAT(api::validation::ValidateResourceClaimStatus(*claim), IsEmpty());

  // Again: nothing changes.
  const int64_t updates = api_.RequestCount(client::Verb::kUpdate);
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-train"), PodOutcome::kDone);
  EXPECT_EQ(api_.RequestCount(client::Verb::kUpdate), updates);

  // Deleting the Pod: unprepared, spec gone, deletion finished.
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "pod-train").ok());
  ASSERT_TRUE(client::Get<cv1::Pod>(api_, "team-a", "pod-train").ok());  // graceful
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-train"), PodOutcome::kDone);
  EXPECT_THAT(CdiFiles(), IsEmpty());
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_EQ(client::Get<cv1::Pod>(api_, "team-a", "pod-train").status().code(),
            StatusCode::kNotFound);
}

TEST_F(AgentTest, WaitsForTheClaimToBeReservedForThePod) {
  CreateClaim("train", "someone-else", {{"gpu.nvidia.com", "gpu-0"}});
  CreatePod("pod-train", "train");
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-train"), PodOutcome::kRetry);
  EXPECT_THAT(CdiFiles(), IsEmpty());
  EXPECT_EQ(client::Get<cv1::Pod>(api_, "team-a", "pod-train")->status.phase, "Pending");
  // A template claim that does not exist yet.
  cv1::Pod pod;
  pod.metadata.name = "templated";
  pod.metadata.namespace_ = "team-a";
  pod.spec.node_name = "node-a";
  cv1::PodResourceClaim ref;
  ref.name = "gpu";
  ref.resource_claim_template_name = "tmpl";
  pod.spec.resource_claims.push_back(ref);
  cv1::Container c;
  c.name = "main";
  c.image = "example.com/llm:1";
  pod.spec.containers.push_back(c);
  StatusOr<cv1::Pod> created = client::Create(api_, pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(*agent_->SyncPod("team-a", "templated"), PodOutcome::kRetry);
}

// A device of a driver no plugin on the node serves (a slice published by hand, a driver not
// deployed there): the kubelet cannot hand it to anyone, so the Pod waits, with an Event saying
// why, instead of running without it.
TEST_F(AgentTest, ADeviceOfADriverWithoutAPluginHereKeepsThePodWaiting) {
  CreateClaim("widget", "x", {{"test.example.com", "d0"}});
  ReserveFor("widget", CreatePod("pod-widget", "widget"));
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-widget"), PodOutcome::kRetry);
  EXPECT_EQ(client::Get<cv1::Pod>(api_, "team-a", "pod-widget")->status.phase, "Pending");
  EXPECT_THAT(EventReasons(),
              ElementsAre("FailedPrepareDynamicResources: claim widget: DRA driver "
                          "test.example.com is not registered on node node-a (device node-a/d0)"));
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

TEST_F(AgentTest, TerminalPrepareFailureFailsThePodWithAnEvent) {
  CreateClaim("fpga", "x", {{"fpga.example.com", "fpga-0"}});
  const std::string pod_uid = CreatePod("pod-fpga", "fpga");
  StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api_, "team-a", "fpga");
  claim->status.reserved_for[0].uid = pod_uid;
  ASSERT_TRUE(client::UpdateStatus(api_, *claim).ok());
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-fpga"), PodOutcome::kTerminal);
  StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "team-a", "pod-fpga");
  EXPECT_EQ(pod->status.phase, "Failed");
  EXPECT_EQ(pod->status.reason, "FailedPrepareDynamicResources");
  bool condition = false;
  for (const cv1::PodCondition& c : pod->status.conditions) {
    if (c.type == "DevicesPrepared") {
      condition = true;
      EXPECT_EQ(c.status, "False");
      EXPECT_THAT(c.message, HasSubstr("bitstream load failed"));
    }
  }
  EXPECT_TRUE(condition);
  StatusOr<client::ObjectList<cv1::Event>> events = client::List<cv1::Event>(api_, "team-a");
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0].reason, "FailedPrepareDynamicResources");
  EXPECT_EQ(events->items[0].type, "Warning");
  EXPECT_THAT(events->items[0].message, HasSubstr("(terminal)"));
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

TEST_F(AgentTest, GarbageCollectsClaimsAfterARestartWhenThePodIsGone) {
  CreateClaim("train", "x", {{"gpu.nvidia.com", "gpu-0"}});
  const std::string pod_uid = CreatePod("pod-train", "train");
  StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api_, "team-a", "train");
  claim->status.reserved_for[0].uid = pod_uid;
  ASSERT_TRUE(client::UpdateStatus(api_, *claim).ok());
  ASSERT_EQ(*agent_->SyncPod("team-a", "pod-train"), PodOutcome::kDone);
  agent_.reset();
  // While the agent is down the Pod goes away for good.
  client::DeleteOptions force;
  force.grace_period_seconds = 0;
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "pod-train", force).ok());
  agent_ = NewAgent();
  EXPECT_EQ(agent_->preparer().checkpoint().claims.size(), 1u);  // not forgotten
  ASSERT_TRUE(agent_->SyncPods().ok());
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

// The node authorizer lets a node read only the Pods bound to it, so the agent's Get of a Pod
// deleted since it was queued is refused (403), not answered 404. Once the node's own list no
// longer has the Pod it is gone: cleaned up and done, not retried for good; while the list still
// has it (the authorizer has yet to learn of the binding) it is tried again.
TEST_F(AgentTest, ARefusedPodIsGoneOnceTheNodesListNoLongerHasIt) {
  CreateClaim("train", "x", {{"gpu.nvidia.com", "gpu-0"}});
  ReserveFor("train", CreatePod("pod-train", "train"));
  ASSERT_EQ(*agent_->SyncPod("team-a", "pod-train"), PodOutcome::kDone);
  ASSERT_EQ(agent_->preparer().checkpoint().claims.size(), 1u);
  api_.SetInterceptor([](const client::ApiRequest& r) -> std::optional<Status> {
    if (r.verb == client::Verb::kGet && r.resource == &client::ResourceOf<cv1::Pod>() &&
        r.name == "pod-train") {
      return FailedPreconditionError(
          R"(pods "pod-train" is forbidden: User "system:node:node-a" cannot get resource )"
          R"("pods" in API group "" in the namespace "team-a": no relationship found between )"
          R"(node 'node-a' and this object)");
    }
    return std::nullopt;
  });
  StatusOr<PodOutcome> outcome = agent_->SyncPod("team-a", "pod-train");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, PodOutcome::kRetry);
  EXPECT_EQ(agent_->preparer().checkpoint().claims.size(), 1u);

  client::DeleteOptions force;
  force.grace_period_seconds = 0;
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "pod-train", force).ok());
  outcome = agent_->SyncPod("team-a", "pod-train");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, PodOutcome::kDone);
  EXPECT_TRUE(agent_->preparer().checkpoint().claims.empty());
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

constexpr std::string_view kFabricProfile = R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
devices:
  gpus:
  - {productName: NVIDIA H100 80GB HBM3, architecture: Hopper, cudaComputeCapability: "9.0",
     driverVersion: 550.90.07, memory: 80Gi, attach: {after: 2s}}
  - {productName: NVIDIA H100 80GB HBM3, architecture: Hopper, cudaComputeCapability: "9.0",
     driverVersion: 550.90.07, memory: 80Gi, attach: {after: 1s, outcome: failed,
     message: fabric port busy}}
  - {count: 2, productName: NVIDIA H100 80GB HBM3, architecture: Hopper,
     cudaComputeCapability: "9.0", driverVersion: 550.90.07, memory: 80Gi}
faults:
- {device: gpu-2, prepare: retryable, times: 6, message: NVML busy}
- {device: gpu-3, unprepare: retryable, times: 2, message: device busy}
)";

TEST_F(AgentTest, AttachesFabricDevicesForAPodNominatedToTheNode) {
  agent_ = NewAgent(kFabricProfile);
  ASSERT_TRUE(agent_->SyncSlices().ok());
  StatusOr<rv1::ResourceSlice> gpus =
      client::Get<rv1::ResourceSlice>(api_, "", "node-a-gpu.nvidia.com-0");
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(gpus->spec.devices[0].binding_conditions,
            std::vector<std::string>{"gpu.nvidia.com/fabric-attached"});
  EXPECT_EQ(gpus->spec.devices[0].binding_failure_conditions,
            std::vector<std::string>{"gpu.nvidia.com/fabric-attach-failed"});
  EXPECT_TRUE(gpus->spec.devices[0].binds_to_node.value_or(false));
  EXPECT_TRUE(gpus->spec.devices[2].binding_conditions.empty());
  EXPECT_THAT(api::validation::ValidateResourceSlice(*gpus), IsEmpty());

  CreateClaim("ready", "x", {{"gpu.nvidia.com", "gpu-0"}}, true);
  ReserveFor("ready", CreatePod("pod-ready", "ready", /*nominated_only=*/true));
  StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "team-a", "pod-ready");
  StatusOr<std::optional<Duration>> again = agent_->SyncAttach(*pod);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ(**again, std::chrono::seconds(2));
  EXPECT_EQ(DeviceCondition("ready", "gpu-0", "gpu.nvidia.com/fabric-attached"), "");
  clock_.Advance(std::chrono::seconds(2));
  again = agent_->SyncAttach(*pod);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(DeviceCondition("ready", "gpu-0", "gpu.nvidia.com/fabric-attached"),
            "True: attached to node node-a");
  StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api_, "team-a", "ready");
  EXPECT_THAT(api::validation::ValidateResourceClaimStatus(*claim), IsEmpty());

  CreateClaim("failing", "x", {{"gpu.nvidia.com", "gpu-1"}}, true);
  ReserveFor("failing", CreatePod("pod-failing", "failing", /*nominated_only=*/true));
  pod = client::Get<cv1::Pod>(api_, "team-a", "pod-failing");
  ASSERT_TRUE(agent_->SyncAttach(*pod).ok());
  clock_.Advance(std::chrono::seconds(1));
  again = agent_->SyncAttach(*pod);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(DeviceCondition("failing", "gpu-1", "gpu.nvidia.com/fabric-attach-failed"),
            "True: fabric port busy");
  // A fabric manager keeps a device whose attach failed from being picked again: its taint.
  ASSERT_TRUE(agent_->SyncSlices().ok());
  gpus = client::Get<rv1::ResourceSlice>(api_, "", "node-a-gpu.nvidia.com-0");
  ASSERT_EQ(gpus->spec.devices[1].taints.size(), 1u);
  EXPECT_EQ(gpus->spec.devices[1].taints[0].key, "gpu.nvidia.com/unhealthy");
  EXPECT_EQ(gpus->spec.devices[1].taints[0].effect, "NoSchedule");
}

TEST_F(AgentTest, IsolatesAFailingNodeAndLiftsTheIsolationAfterASuccessfulPrepare) {
  agent_ = NewAgent(kFabricProfile);
  ASSERT_TRUE(agent_->SyncNode().ok());
  CreateClaim("busy", "x", {{"gpu.nvidia.com", "gpu-2"}});
  ReserveFor("busy", CreatePod("pod-busy", "busy"));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*agent_->SyncPod("team-a", "pod-busy"), PodOutcome::kRetry);
  EXPECT_FALSE(agent_->isolated_until().has_value());
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-busy"), PodOutcome::kRetry);
  ASSERT_TRUE(agent_->isolated_until().has_value());
  StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", "node-a");
  ASSERT_TRUE(node.ok());
  ASSERT_EQ(node->spec.taints.size(), 1u);
  EXPECT_EQ(node->spec.taints[0].key, "draplane.dev/device-prepare-failures");
  EXPECT_EQ(node->spec.taints[0].effect, "NoSchedule");
  const std::string until =
      api::Time::FromTimestamp(clock_.Now() + std::chrono::seconds(30)).text();
  EXPECT_EQ(node->metadata.annotations.at("draplane.dev/device-prepare-failures-until"), until);
  EXPECT_TRUE(api::labels::IsIsolated(*node, clock_.Now()));
  EXPECT_FALSE(api::labels::IsIsolated(*node, clock_.Now() + std::chrono::seconds(30)));
  const cv1::NodeCondition* condition = nullptr;
  for (const cv1::NodeCondition& c : node->status.conditions) {
    if (c.type == "DevicePrepareFailures") condition = &c;
  }
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->status, "True");
  EXPECT_EQ(condition->reason, "RepeatedPrepareFailures");
  EXPECT_THAT(condition->message, HasSubstr("3 device prepares in a row failed"));
  EXPECT_THAT(condition->message, HasSubstr("NVML busy"));

  // The backoff ends the isolation; failing again isolates for twice as long.
  clock_.Advance(std::chrono::seconds(30));
  StatusOr<std::optional<Duration>> again = agent_->SyncIsolation();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(agent_->isolated_until().has_value());
  node = client::Get<cv1::Node>(api_, "", "node-a");
  EXPECT_TRUE(node->spec.taints.empty());
  EXPECT_EQ(node->metadata.annotations.count("draplane.dev/device-prepare-failures-until"), 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*agent_->SyncPod("team-a", "pod-busy"), PodOutcome::kRetry);
  ASSERT_TRUE(agent_->isolated_until().has_value());
  EXPECT_EQ(*agent_->isolated_until(), clock_.Now() + std::chrono::seconds(60));

  // The seventh prepare succeeds: the probe lifts the isolation at once.
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-busy"), PodOutcome::kDone);
  EXPECT_FALSE(agent_->isolated_until().has_value());
  node = client::Get<cv1::Node>(api_, "", "node-a");
  EXPECT_TRUE(node->spec.taints.empty());
  for (const cv1::NodeCondition& c : node->status.conditions) {
    if (c.type != "DevicePrepareFailures") continue;
    EXPECT_EQ(c.status, "False");
    EXPECT_EQ(c.reason, "PrepareSucceeded");
  }
}

TEST_F(AgentTest, ADeviceStillPreparedForAForceDeletedPodsClaimWaitsUntilItIsUnprepared) {
  agent_ = NewAgent(kFabricProfile);
  CreateClaim("old", "x", {{"gpu.nvidia.com", "gpu-3"}});
  ReserveFor("old", CreatePod("pod-old", "old"));
  ASSERT_EQ(*agent_->SyncPod("team-a", "pod-old"), PodOutcome::kDone);
  const std::string old_uid = client::Get<rv1::ResourceClaim>(api_, "team-a", "old")->metadata.uid;
  // Force-deleted: the Pod is gone at once, its claim is released and deleted, and the device is
  // allocated to a new claim before this node has unprepared it (kubernetes#141471).
  client::DeleteOptions force;
  force.grace_period_seconds = 0;
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "team-a", "pod-old", force).ok());
  ASSERT_TRUE(client::Delete<rv1::ResourceClaim>(api_, "team-a", "old").ok());
  CreateClaim("new", "x", {{"gpu.nvidia.com", "gpu-3"}});
  ReserveFor("new", CreatePod("pod-new", "new"));
  const std::string new_uid = client::Get<rv1::ResourceClaim>(api_, "team-a", "new")->metadata.uid;
  // Unpreparing the old claim fails twice: the new one waits, and says why.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(*agent_->SyncPod("team-a", "pod-new"), PodOutcome::kRetry);
    ASSERT_EQ(agent_->preparer().checkpoint().claims.count(old_uid), 1u);
    EXPECT_EQ(agent_->preparer().checkpoint().claims.count(new_uid), 0u);
  }
  EXPECT_THAT(EventReasons(),
              ::testing::Contains(HasSubstr("DeviceStillPrepared: claim new: device "
                                            "gpu.nvidia.com/node-a/gpu-3 is still prepared for "
                                            "claim team-a/old (" +
                                            old_uid + ")")));
  EXPECT_EQ(client::Get<cv1::Pod>(api_, "team-a", "pod-new")->status.phase, "Pending");
  EXPECT_EQ(*agent_->SyncPod("team-a", "pod-new"), PodOutcome::kDone);
  EXPECT_EQ(agent_->preparer().checkpoint().claims.count(old_uid), 0u);
  EXPECT_EQ(agent_->preparer().checkpoint().claims.count(new_uid), 1u);
  EXPECT_EQ(client::Get<cv1::Pod>(api_, "team-a", "pod-new")->status.phase, "Running");
  // Waiting is not a prepare failure: the node was never isolated.
  EXPECT_FALSE(agent_->isolated_until().has_value());
}

}  // namespace
}  // namespace draplane::agent

namespace draplane::agent {
namespace {

// The agent's own threads (informer, work queue, loop) against an in-memory API: a Pod bound to
// the node runs once its devices are prepared, and its deletion is finished after unpreparing.
TEST(AgentLoopTest, RunsAndFinishesPodsOnItsOwn) {
  draplane::testing::Cluster cluster;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("agent-loop-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  StatusOr<ClusterProfile> profile = ParseProfile(kProfile);
  ASSERT_TRUE(profile.ok());
  std::vector<std::unique_ptr<Driver>> drivers;
  drivers.push_back(std::move(*ProfileDriver::Create({.node_name = "node-a",
                                                      .profile_path = "",
                                                      .node = profile->pools[0].node,
                                                      .clock = &cluster.clock(),
                                                      .state_dir = (dir / "state").string(),
                                                      .crash_exits_process = false})));
  AgentOptions options;
  options.node_name = "node-a";
  options.state_dir = (dir / "state").string();
  StatusOr<std::unique_ptr<Agent>> agent =
      Agent::Create(cluster.api(), std::move(drivers), options, cluster.clock());
  ASSERT_TRUE(agent.ok());
  ASSERT_TRUE((*agent)->Init().ok());
  ASSERT_TRUE((*agent)->Start().ok());

  // As the scheduler does it: the claim is allocated and reserved before the Pod is bound.
  cv1::Pod pod = cluster.PodSpec("p", {"c"});
  cluster.Pod(pod);
  StatusOr<cv1::Pod> created = cluster.GetPod("p");
  ASSERT_TRUE(created.ok());
  cluster.Claim(cluster.ClaimSpec("c", "gpu.nvidia.com"));
  StatusOr<rv1::ResourceClaim> stored = cluster.GetClaim("c");
  ASSERT_TRUE(stored.ok());
  rv1::AllocationResult allocation;
  rv1::DeviceRequestAllocationResult r;
  r.request = stored->spec.devices.requests[0].name;
  r.driver = "gpu.nvidia.com";
  r.pool = "node-a";
  r.device = "gpu-0";
  allocation.devices.results.push_back(r);
  stored->status.allocation = allocation;
  rv1::ResourceClaimConsumerReference ref;
  ref.resource = "pods";
  ref.name = "p";
  ref.uid = created->metadata.uid;
  stored->status.reserved_for.push_back(ref);
  ASSERT_TRUE(client::UpdateStatus(cluster.api(), *stored).ok());
  ASSERT_TRUE(
      client::BindPod(cluster.api(), cluster.ns, "p", created->metadata.uid, "node-a").ok());

  ASSERT_TRUE(cluster.WaitUntil([&] {
    StatusOr<cv1::Pod> p = cluster.GetPod("p");
    return p.ok() && p->status.phase == "Running";
  }));
  EXPECT_EQ(internal::ListFiles((dir / "state/cdi").string())->size(), 1u);
  ASSERT_TRUE(client::Delete<cv1::Pod>(cluster.api(), cluster.ns, "p").ok());
  ASSERT_TRUE(cluster.WaitUntil(
      [&] { return cluster.GetPod("p").status().code() == StatusCode::kNotFound; }));
  (*agent)->Stop();
  EXPECT_TRUE(internal::ListFiles((dir / "state/cdi").string())->empty());
  EXPECT_TRUE((*agent)->preparer().checkpoint().claims.empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace draplane::agent
