#include "agent/drivers/nvml/nvml_driver.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "agent/slice_plan.h"
#include "api/validation/validation.h"

namespace draplane::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Attr(const api::resourcev1::Device& d, const std::string& name) {
  auto it = d.attributes.find(name);
  if (it == d.attributes.end()) return "<absent>";
  if (it->second.string_value) return *it->second.string_value;
  if (it->second.version_value) return "v" + *it->second.version_value;
  return "<other>";
}

class NvmlDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The test holds its own handle on the fake, so it can pick scenarios; dlopen of the same
    // path returns the same library the driver loads.
    fake_ = ::dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake_, nullptr) << ::dlerror();
    set_scenario_ = reinterpret_cast<void (*)(int)>(::dlsym(fake_, "fake_nvml_set_scenario"));
    inits_ = reinterpret_cast<int (*)()>(::dlsym(fake_, "fake_nvml_inits"));
    shutdowns_ = reinterpret_cast<int (*)()>(::dlsym(fake_, "fake_nvml_shutdowns"));
    set_scenario_(0);
    // A sysfs tree in which the H100 hangs off root complex pci0000:3a.
    sysfs_ = std::filesystem::temp_directory_path() / ("nvml-sysfs-" + std::to_string(::getpid()));
    std::filesystem::remove_all(sysfs_);
    const auto device = sysfs_ / "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
    std::filesystem::create_directories(device);
    std::filesystem::create_directories(sysfs_ / "bus/pci/devices");
    std::filesystem::create_directory_symlink(
        "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
        sysfs_ / "bus/pci/devices/0000:3b:00.0");
  }
  void TearDown() override {
    std::filesystem::remove_all(sysfs_);
    if (fake_ != nullptr) ::dlclose(fake_);
  }

  std::unique_ptr<NvmlDriver> Open(std::string library = FAKE_NVML_PATH) {
    return NvmlDriver::Open(
        {.library = std::move(library), .sysfs_root = sysfs_.string(), .clock = &clock_});
  }

  void* fake_ = nullptr;
  void (*set_scenario_)(int) = nullptr;
  int (*inits_)() = nullptr;
  int (*shutdowns_)() = nullptr;
  std::filesystem::path sysfs_;
  ManualClock clock_;
};

TEST_F(NvmlDriverTest, PublishesGpusAndMigDevicesWithNvidiaAttributes) {
  std::unique_ptr<NvmlDriver> driver = Open();
  ASSERT_TRUE(driver->available()) << driver->unavailable_reason();
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok()) << invs.status().ToString();
  EXPECT_EQ(inits_(), 1);
  EXPECT_EQ(shutdowns_(), 1);
  ASSERT_EQ(invs->size(), 1u);
  const Inventory& inv = (*invs)[0];
  EXPECT_EQ(inv.driver, "gpu.draplane.dev");
  std::vector<std::string> names;
  for (const DiscoveredDevice& d : inv.devices) names.push_back(d.device.name);
  EXPECT_THAT(names, ElementsAre("gpu-0", "gpu-1-mig-0", "gpu-1-mig-1"));

  const api::resourcev1::Device& h100 = inv.devices[0].device;
  EXPECT_EQ(Attr(h100, "type"), "gpu");
  EXPECT_EQ(Attr(h100, "uuid"), "GPU-aaaaaaaa-0000-4000-8000-000000000000");
  EXPECT_EQ(Attr(h100, "productName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Attr(h100, "brand"), "Nvidia");
  EXPECT_EQ(Attr(h100, "architecture"), "Hopper");
  EXPECT_EQ(Attr(h100, "cudaComputeCapability"), "v9.0.0");
  EXPECT_EQ(Attr(h100, "driverVersion"), "v550.90.7");
  EXPECT_EQ(Attr(h100, "cudaDriverVersion"), "v12.4.0");
  EXPECT_EQ(Attr(h100, "pcieBusID"), "00000000:3B:00.0");
  EXPECT_EQ(Attr(h100, "resource.kubernetes.io/pcieRoot"), "pci0000:3a");
  EXPECT_EQ(h100.capacity.at("memory").value.ToString(), "80Gi");
  EXPECT_TRUE(inv.devices[0].health.healthy);

  const api::resourcev1::Device& mig = inv.devices[2].device;
  EXPECT_EQ(Attr(mig, "type"), "mig");
  EXPECT_EQ(Attr(mig, "profile"), "3g.20gb");
  EXPECT_EQ(Attr(mig, "parentUUID"), "GPU-bbbbbbbb-1111-4111-8111-111111111111");
  EXPECT_EQ(Attr(mig, "uuid"), "MIG-dddddddd-3333-4333-8333-333333333333");
  EXPECT_EQ(Attr(mig, "architecture"), "Ampere");
  EXPECT_EQ(Attr(mig, "brand"), "Tesla");
  EXPECT_EQ(Attr(inv.devices[1].device, "profile"), "1g.5gb");
  EXPECT_EQ(mig.capacity.at("multiprocessors").value.Value(), 42);
  EXPECT_EQ(mig.capacity.at("memory").value.ToString(), "19968Mi");

  // What it publishes passes validation.
  for (const auto& slice : BuildPoolSlices("gpu-node", inv, 1)) {
    EXPECT_TRUE(api::validation::ValidateResourceSlice(slice).empty());
  }
}

TEST_F(NvmlDriverTest, PublishesUnderTheConfiguredDriverName) {
  std::unique_ptr<NvmlDriver> driver = NvmlDriver::Open({.driver_name = "gpu.nvidia.com",
                                                         .library = FAKE_NVML_PATH,
                                                         .sysfs_root = sysfs_.string(),
                                                         .clock = &clock_});
  EXPECT_THAT(driver->DriverNames(), ElementsAre("gpu.nvidia.com"));
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok()) << invs.status().ToString();
  EXPECT_EQ((*invs)[0].driver, "gpu.nvidia.com");
}

TEST_F(NvmlDriverTest, PrepareGivesTheDeviceNodeAndVisibleDevices) {
  std::unique_ptr<NvmlDriver> driver = Open();
  ASSERT_TRUE(driver->Discover().ok());
  DevicePrepareRequest request{.claim_uid = "u",
                               .claim_namespace = "ns",
                               .claim_name = "c",
                               .request = "gpu",
                               .driver = "gpu.draplane.dev",
                               .pool = "n",
                               .device = "gpu-1-mig-0",
                               .share_id = {},
                               .admin_access = false,
                               .config = {}};
  StatusOr<PreparedDevice> out = driver->PrepareDevice(request);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->cdi_class, "mig");
  EXPECT_EQ(out->edits.device_nodes[0].path, "/dev/nvidia1");
  EXPECT_THAT(out->edits.list_env,
              ElementsAre(std::pair<std::string, std::string>(
                  "NVIDIA_VISIBLE_DEVICES", "MIG-cccccccc-2222-4222-8222-222222222222")));
  request.device = "gpu-7";
  EXPECT_EQ(driver->PrepareDevice(request).status().code(), StatusCode::kNotFound);
}

TEST_F(NvmlDriverTest, LostGpuIsPublishedUnhealthy) {
  set_scenario_(2);
  std::unique_ptr<NvmlDriver> driver = Open();
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok());
  const DiscoveredDevice& lost = (*invs)[0].devices[0];
  EXPECT_EQ(lost.device.name, "gpu-0");
  EXPECT_FALSE(lost.health.healthy);
  EXPECT_EQ(lost.health.message, "GPU is lost");
  EXPECT_EQ(lost.health.taint_effect, "NoExecute");
  const Timestamp first = *lost.health.since;
  clock_.Advance(std::chrono::seconds(30));
  // Still unhealthy: the taint keeps the time it first went bad.
  EXPECT_EQ(*(*driver->Discover())[0].devices[0].health.since, first);
  EXPECT_TRUE((*invs)[0].devices[1].health.healthy);
}

TEST_F(NvmlDriverTest, MigModeWithoutMigDevicesPublishesNothingForThatGpu) {
  set_scenario_(3);
  std::unique_ptr<NvmlDriver> driver = Open();
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok());
  ASSERT_EQ((*invs)[0].devices.size(), 1u);
  EXPECT_EQ((*invs)[0].devices[0].device.name, "gpu-0");
}

TEST_F(NvmlDriverTest, InitFailureIsUnavailable) {
  set_scenario_(1);
  std::unique_ptr<NvmlDriver> driver = Open();
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  EXPECT_EQ(invs.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(invs.status().message(), HasSubstr("Driver Not Loaded"));
  EXPECT_EQ(shutdowns_(), 0);
}

TEST_F(NvmlDriverTest, AbsentLibraryMeansNoDevicesAndAClearMessage) {
  std::unique_ptr<NvmlDriver> driver = Open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(driver->available());
  EXPECT_THAT(driver->unavailable_reason(), HasSubstr("/nonexistent/libnvidia-ml.so.1 not found"));
  EXPECT_THAT(driver->unavailable_reason(), HasSubstr("no NVIDIA GPUs will be published"));
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok());
  EXPECT_TRUE(invs->empty());
}

TEST_F(NvmlDriverTest, LibraryWithoutARequiredEntryPointIsRefused) {
  std::unique_ptr<NvmlDriver> driver = Open(FAKE_NVML_WITHOUT_PCI_PATH);
  EXPECT_FALSE(driver->available());
  EXPECT_THAT(driver->unavailable_reason(), HasSubstr("lacks nvmlDeviceGetPciInfo_v3"));
}

}  // namespace
}  // namespace draplane::agent
