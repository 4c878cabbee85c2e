#include "agent/drivers/profile/profile_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "agent/internal/files.h"

namespace draplane::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kNode = R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
metadata: {name: node-a}
devices:
  gpus:
  - count: 1
    productName: NVIDIA H100 80GB HBM3
    architecture: Hopper
    cudaComputeCapability: "9.0"
    driverVersion: 550.90.07
    cudaDriverVersion: "12.4"
    memory: 80Gi
    uuids: [GPU-11111111-2222-3333-4444-555555555555]
  - count: 1
    productName: NVIDIA A100-SXM4-40GB
    architecture: Ampere
    cudaComputeCapability: "8.0"
    driverVersion: 550.90.07
    memory: 40Gi
    multiprocessors: 98
    mig:
      memorySlices: 8
      profiles:
      - {name: 1g.5gb, memory: 5Gi, memorySlices: 1, multiprocessors: 14, placements: [0, 1]}
      - {name: 4g.20gb, memory: 20Gi, memorySlices: 4, multiprocessors: 56}
  fpgas: [{count: 1, vendor: Intel, model: Agilex 7, bitstreamFamily: inference-v2, memory: 32Gi}]
  nics:
  - {count: 1, model: ConnectX-7, bandwidth: 400G, rdma: true, shared: true,
     requestPolicy: {default: 10G, min: 1G, max: 200G, step: 1G}}
faults:
- {device: gpu-0, after: 60s, for: 30s, effect: NoExecute, message: XID 79}
- {device: fpga-0, prepare: terminal, message: bitstream load failed}
- {driver: gpu.nvidia.com, device: gpu-1-mig-1g-5gb-0, prepare: retryable, times: 2}
)";

NodeTemplate Template() {
  StatusOr<ClusterProfile> profile = ParseProfile(kNode);
  EXPECT_TRUE(profile.ok()) << profile.status().ToString();
  return profile->pools[0].node;
}

std::string Str(const api::resourcev1::Device& d, const std::string& name) {
  auto it = d.attributes.find(name);
  if (it == d.attributes.end()) return "<absent>";
  if (it->second.string_value) return *it->second.string_value;
  if (it->second.version_value) return "v" + *it->second.version_value;
  if (it->second.bool_value) return *it->second.bool_value ? "true" : "false";
  return "<other>";
}

const Inventory& Find(const std::vector<Inventory>& invs, std::string_view driver) {
  for (const Inventory& inv : invs) {
    if (inv.driver == driver) return inv;
  }
  ADD_FAILURE() << "no inventory for " << driver;
  return invs.front();
}

class ProfileDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("profile-driver-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<ProfileDriver> NewDriver(std::string state_dir = "") {
    StatusOr<std::unique_ptr<ProfileDriver>> d =
        ProfileDriver::Create({.node_name = "node-a",
                               .profile_path = "",
                               .node = Template(),
                               .clock = &clock_,
                               .state_dir = std::move(state_dir),
                               .crash_exits_process = false});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return std::move(*d);
  }

  DevicePrepareRequest Request(std::string driver, std::string device, std::string uid = "uid-1") {
    return DevicePrepareRequest{.claim_uid = std::move(uid),
                                .claim_namespace = "ns",
                                .claim_name = "claim",
                                .request = "req",
                                .driver = std::move(driver),
                                .pool = "node-a",
                                .device = std::move(device),
                                .share_id = {},
                                .admin_access = false,
                                .config = {}};
  }

  ManualClock clock_;
  std::filesystem::path dir_;
};

TEST_F(ProfileDriverTest, PublishesGpusWithNvidiaAttributes) {
  std::vector<Inventory> invs = BuildProfileInventories("node-a", Template());
  ASSERT_EQ(invs.size(), 3u);
  const Inventory& gpus = Find(invs, "gpu.nvidia.com");
  const api::resourcev1::Device& h100 = gpus.devices[0].device;
  EXPECT_EQ(h100.name, "gpu-0");
  EXPECT_EQ(Str(h100, "type"), "gpu");
  EXPECT_EQ(Str(h100, "uuid"), "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(Str(h100, "productName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Str(h100, "brand"), "Nvidia");
  EXPECT_EQ(Str(h100, "architecture"), "Hopper");
  EXPECT_EQ(Str(h100, "cudaComputeCapability"), "v9.0.0");
  EXPECT_EQ(Str(h100, "driverVersion"), "v550.90.7");
  EXPECT_EQ(Str(h100, "cudaDriverVersion"), "v12.4.0");
  EXPECT_EQ(Str(h100, "resource.kubernetes.io/pcieRoot"), "pci0000:10");
  EXPECT_EQ(h100.capacity.at("memory").value.ToString(), "80Gi");
  EXPECT_TRUE(h100.consumes_counters.empty());
  EXPECT_EQ(gpus.devices[0].cdi_class, "gpu");
}

TEST_F(ProfileDriverTest, MigGpuBecomesACounterSetAndConsumingPartitions) {
  std::vector<Inventory> invs = BuildProfileInventories("node-a", Template());
  const Inventory& gpus = Find(invs, "gpu.nvidia.com");
  ASSERT_EQ(gpus.counter_sets.size(), 1u);
  const api::resourcev1::CounterSet& set = gpus.counter_sets[0];
  EXPECT_EQ(set.name, "gpu-1-counter-set");
  EXPECT_EQ(set.counters.size(), 10u);  // memory, multiprocessors, memory-slice-0..7
  EXPECT_EQ(set.counters.at("memory").value.ToString(), "40Gi");
  std::vector<std::string> names;
  for (const DiscoveredDevice& d : gpus.devices) names.push_back(d.device.name);
  EXPECT_THAT(names, ElementsAre("gpu-0", "gpu-1", "gpu-1-mig-1g-5gb-0", "gpu-1-mig-1g-5gb-1",
                                 "gpu-1-mig-4g-20gb-0", "gpu-1-mig-4g-20gb-4"));
  const DiscoveredDevice& whole = gpus.devices[1];
  ASSERT_EQ(whole.device.consumes_counters.size(), 1u);
  EXPECT_EQ(whole.device.consumes_counters[0].counters.size(), 10u);
  const DiscoveredDevice& mig = gpus.devices[5];
  EXPECT_EQ(mig.cdi_class, "mig");
  EXPECT_EQ(Str(mig.device, "type"), "mig");
  EXPECT_EQ(Str(mig.device, "profile"), "4g.20gb");
  EXPECT_EQ(Str(mig.device, "parentUUID"), Str(whole.device, "uuid"));
  EXPECT_THAT(Str(mig.device, "uuid"), HasSubstr("MIG-"));
  const auto& use = mig.device.consumes_counters[0];
  EXPECT_EQ(use.counter_set, "gpu-1-counter-set");
  std::vector<std::string> counters;
  for (const auto& [name, c] : use.counters) counters.push_back(name);
  EXPECT_THAT(counters, ElementsAre("memory", "memory-slice-4", "memory-slice-5", "memory-slice-6",
                                    "memory-slice-7", "multiprocessors"));
}

TEST_F(ProfileDriverTest, FpgasAndSharedNics) {
  std::vector<Inventory> invs = BuildProfileInventories("node-a", Template());
  const api::resourcev1::Device& fpga = Find(invs, "fpga.example.com").devices[0].device;
  EXPECT_EQ(fpga.name, "fpga-0");
  EXPECT_EQ(Str(fpga, "bitstreamFamily"), "inference-v2");
  const api::resourcev1::Device& nic = Find(invs, "nic.example.com").devices[0].device;
  EXPECT_EQ(nic.name, "nic-0");
  EXPECT_TRUE(nic.allow_multiple_allocations.value_or(false));
  EXPECT_EQ(Str(nic, "rdma"), "true");
  const auto& bw = nic.capacity.at("bandwidth");
  EXPECT_EQ(bw.value.ToString(), "400G");
  ASSERT_TRUE(bw.request_policy.has_value());
  EXPECT_EQ(bw.request_policy->default_value->ToString(), "10G");
  EXPECT_EQ(bw.request_policy->valid_range->step->ToString(), "1G");
  // GPU 0 and NIC 0 share a PCIe root.
  EXPECT_EQ(Str(nic, "resource.kubernetes.io/pcieRoot"),
            Str(Find(invs, "gpu.nvidia.com").devices[0].device, "resource.kubernetes.io/pcieRoot"));
}

TEST_F(ProfileDriverTest, DerivedUuidsAreStableAndDistinct) {
  EXPECT_EQ(DerivedUuid("GPU-", "n/gpu-0"), DerivedUuid("GPU-", "n/gpu-0"));
  EXPECT_NE(DerivedUuid("GPU-", "n/gpu-0"), DerivedUuid("GPU-", "n/gpu-1"));
  EXPECT_THAT(
      DerivedUuid("GPU-", "x"),
      ::testing::MatchesRegex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
}

TEST_F(ProfileDriverTest, HealthFaultFollowsTheClock) {
  std::unique_ptr<ProfileDriver> driver = NewDriver();
  auto health = [&] { return Find(*driver->Discover(), "gpu.nvidia.com").devices[0].health; };
  EXPECT_TRUE(health().healthy);
  clock_.Advance(std::chrono::seconds(59));
  EXPECT_TRUE(health().healthy);
  clock_.Advance(std::chrono::seconds(1));
  DeviceHealth h = health();
  EXPECT_FALSE(h.healthy);
  EXPECT_EQ(h.message, "XID 79");
  EXPECT_EQ(h.taint_effect, "NoExecute");
  EXPECT_EQ(*h.since, ManualClock().Now() + std::chrono::seconds(60));
  clock_.Advance(std::chrono::seconds(30));
  EXPECT_TRUE(health().healthy);
}

TEST_F(ProfileDriverTest, PrepareReturnsEditsAndNetworkData) {
  std::unique_ptr<ProfileDriver> driver = NewDriver();
  StatusOr<PreparedDevice> gpu = driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0"));
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  ASSERT_EQ(gpu->edits.device_nodes.size(), 1u);
  EXPECT_EQ(gpu->edits.device_nodes[0].path, "/dev/nvidia0");
  EXPECT_THAT(gpu->edits.list_env,
              ElementsAre(std::pair<std::string, std::string>(
                  "NVIDIA_VISIBLE_DEVICES", "GPU-11111111-2222-3333-4444-555555555555")));
  DevicePrepareRequest nic_request = Request("nic.example.com", "nic-0");
  nic_request.share_id = "6f1c1d7e-0000-4000-8000-000000000001";
  StatusOr<PreparedDevice> nic = driver->PrepareDevice(nic_request);
  ASSERT_TRUE(nic.ok());
  ASSERT_TRUE(nic->network.has_value());
  EXPECT_EQ(nic->network->interface_name, "net0");
  EXPECT_THAT(nic->network->ips[0], ::testing::MatchesRegex("10\\.[0-9]+\\.[0-9]+\\.[0-9]+/16"));
  // Idempotent: the same request gives the same result.
  EXPECT_EQ(*driver->PrepareDevice(nic_request), *nic);
  // A second share of the shared NIC is fine; an exclusive GPU is not.
  nic_request.claim_uid = "uid-2";
  EXPECT_TRUE(driver->PrepareDevice(nic_request).ok());
  StatusOr<PreparedDevice> busy =
      driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0", "uid-2"));
  EXPECT_EQ(busy.status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(driver->UnprepareDevice(Request("gpu.nvidia.com", "gpu-0")).ok());
  EXPECT_TRUE(driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0", "uid-2")).ok());
  EXPECT_TRUE(driver->UnprepareDevice(Request("gpu.nvidia.com", "gpu-7")).ok());
}

TEST_F(ProfileDriverTest, PrepareFaultsAreTerminalOrRetryable) {
  std::unique_ptr<ProfileDriver> driver = NewDriver();
  StatusOr<PreparedDevice> fpga = driver->PrepareDevice(Request("fpga.example.com", "fpga-0"));
  EXPECT_EQ(fpga.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fpga.status().message(), "bitstream load failed");
  DevicePrepareRequest mig = Request("gpu.nvidia.com", "gpu-1-mig-1g-5gb-0");
  EXPECT_EQ(driver->PrepareDevice(mig).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(driver->PrepareDevice(mig).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(driver->PrepareDevice(mig).ok());
  EXPECT_EQ(driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-9")).status().code(),
            StatusCode::kNotFound);
}

TEST_F(ProfileDriverTest, HonoursOpaqueConfig) {
  std::unique_ptr<ProfileDriver> driver = NewDriver();
  api::RawJson sharing(boost::json::parse(
      R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}})"));
  api::RawJson env(boost::json::parse(
      R"({"apiVersion":"draplane.dev/v1alpha1","kind":"DeviceConfig","env":{"MODEL":"llama"}})"));
  DevicePrepareRequest request = Request("gpu.nvidia.com", "gpu-0");
  request.config = {&sharing, &env};
  StatusOr<PreparedDevice> out = driver->PrepareDevice(request);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_THAT(out->edits.env, ElementsAre("NVIDIA_SHARING_STRATEGY=MPS", "MODEL=llama"));
  api::RawJson unknown(boost::json::parse(R"({"apiVersion":"example.com/v1","kind":"Magic"})"));
  request.config = {&unknown};
  StatusOr<PreparedDevice> bad = driver->PrepareDevice(request);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("unsupported opaque configuration"));
  api::RawJson kind_only(boost::json::parse(R"({"kind":"Small"})"));
  request.config = {&kind_only};
  bad = driver->PrepareDevice(request);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("opaque configuration for driver gpu.nvidia.com without apiVersion (kind "
                        "Small): the driver cannot tell what it configures"));
}

TEST_F(ProfileDriverTest, PreparedDevicesSurviveARestart) {
  {
    std::unique_ptr<ProfileDriver> driver = NewDriver(dir_.string());
    ASSERT_TRUE(driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0")).ok());
  }
  std::unique_ptr<ProfileDriver> restarted = NewDriver(dir_.string());
  EXPECT_EQ(restarted->prepared().at("gpu.nvidia.com/gpu-0"), std::set<std::string>{"uid-1"});
  EXPECT_EQ(restarted->PrepareDevice(Request("gpu.nvidia.com", "gpu-0", "uid-2")).status().code(),
            StatusCode::kUnavailable);
}

// Admin access (upstream: monitoring a device that is in use) neither blocks nor is blocked by
// an exclusive use of the same device, in either order.
TEST_F(ProfileDriverTest, AdminAccessSharesAnExclusiveDevice) {
  std::unique_ptr<ProfileDriver> driver = NewDriver(dir_.string());
  DevicePrepareRequest admin = Request("gpu.nvidia.com", "gpu-0", "uid-admin");
  admin.admin_access = true;
  ASSERT_TRUE(driver->PrepareDevice(admin).ok());
  ASSERT_TRUE(driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0", "uid-1")).ok());
  DevicePrepareRequest second_admin = Request("gpu.nvidia.com", "gpu-0", "uid-admin-2");
  second_admin.admin_access = true;
  EXPECT_TRUE(driver->PrepareDevice(second_admin).ok());
  EXPECT_EQ(driver->PrepareDevice(Request("gpu.nvidia.com", "gpu-0", "uid-2")).status().code(),
            StatusCode::kUnavailable);
  EXPECT_TRUE(driver->UnprepareDevice(admin).ok());
  EXPECT_EQ(driver->prepared().at("gpu.nvidia.com/gpu-0"), std::set<std::string>{"uid-1"});
}

TEST_F(ProfileDriverTest, CrashFaultFiresOnceWithoutEndingTheProcess) {
  const std::string path = (dir_ / "node.yaml").string();
  std::string text(kNode);
  text += "- {device: gpu-0, prepare: crash}\n";
  std::ofstream(path) << text;
  auto make = [&] {
    return std::move(*ProfileDriver::Create({.node_name = "node-a",
                                             .profile_path = path,
                                             .node = {},
                                             .clock = &clock_,
                                             .state_dir = (dir_ / "state").string(),
                                             .crash_exits_process = false}));
  };
  EXPECT_EQ(make()->PrepareDevice(Request("gpu.nvidia.com", "gpu-0")).status().code(),
            StatusCode::kUnavailable);
  // The device counts as prepared (the crash came after the driver did its work); a restarted
  // driver does not crash again.
  std::unique_ptr<ProfileDriver> restarted = make();
  EXPECT_EQ(restarted->prepared().count("gpu.nvidia.com/gpu-0"), 1u);
  EXPECT_TRUE(restarted->PrepareDevice(Request("gpu.nvidia.com", "gpu-0")).ok());
}

TEST_F(ProfileDriverTest, ReloadsAnEditedProfile) {
  const std::string path = (dir_ / "node.yaml").string();
  std::string text(kNode);
  std::ofstream(path) << text;
  StatusOr<std::unique_ptr<ProfileDriver>> driver =
      ProfileDriver::Create({.node_name = "node-a",
                             .profile_path = path,
                             .node = {},
                             .clock = &clock_,
                             .state_dir = "",
                             .crash_exits_process = false});
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  clock_.Advance(std::chrono::hours(1));
  EXPECT_TRUE(Find(*(*driver)->Discover(), "fpga.example.com").devices[0].health.healthy);
  text += "- {device: fpga-0, message: fan failure}\n";
  std::ofstream(path + ".new") << text;
  std::filesystem::rename(path + ".new", path);
  DeviceHealth h = Find(*(*driver)->Discover(), "fpga.example.com").devices[0].health;
  EXPECT_FALSE(h.healthy);
  EXPECT_EQ(h.message, "fan failure");
  EXPECT_EQ(*h.since, clock_.Now());
  // A broken edit keeps the previous profile.
  std::ofstream(path + ".new") << "kind: nonsense\n";
  std::filesystem::rename(path + ".new", path);
  EXPECT_FALSE(Find(*(*driver)->Discover(), "fpga.example.com").devices[0].health.healthy);
}

}  // namespace
}  // namespace draplane::agent

namespace draplane::agent {
namespace {

TEST(ProfileDriverFaultTest, NodeScopedFaultsHitOnlyTheirNode) {
  StatusOr<ClusterProfile> profile = ParseProfile(R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
nodePools:
- name: l4
  count: 2
  devices:
    gpus: [{count: 1, productName: NVIDIA L4, architecture: Ada Lovelace,
            cudaComputeCapability: "8.9", driverVersion: "550.90.07", memory: 24Gi}]
  faults:
  - {node: l4-1, device: gpu-0, message: XID 48}
)");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ManualClock clock;
  auto health = [&](const std::string& node) {
    std::unique_ptr<ProfileDriver> d =
        std::move(*ProfileDriver::Create({.node_name = node,
                                          .profile_path = "",
                                          .node = profile->pools[0].node,
                                          .clock = &clock,
                                          .state_dir = "",
                                          .crash_exits_process = false}));
    return (*d->Discover())[0].devices[0].health.healthy;
  };
  EXPECT_TRUE(health("l4-0"));
  EXPECT_FALSE(health("l4-1"));
}

}  // namespace
}  // namespace draplane::agent
