#include "agent/drivers/sysfs/sysfs_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace draplane::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

// Builds a sysfs fixture with the kernel's layout: the device directory under
// devices/<root>/<bridge>/<addr> and a symlink to it from bus/pci/devices/<addr>.
class SysfsDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sysfs-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "bus/pci/devices");
    AddDevice("pci0000:3a", "0000:3a:00.0", "0000:3b:00.0", "0x020000", "0x15b3", "0x1021", "1",
              "ens1f0", "400000", "b8:ce:f6:00:00:01");
    AddDevice("pci0000:d7", "0000:d7:00.0", "0000:d8:00.0", "0x120000", "0x8086", "0x0b30", "-1",
              "", "", "");
    AddDevice("pci0000:00", "0000:00:1f.0", "0000:00:1f.3", "0x040300", "0x8086", "0xa348", "0", "",
              "", "");  // audio: no rule
  }
  void TearDown() override { fs::remove_all(root_); }

  void AddDevice(const std::string& rc, const std::string& bridge, const std::string& addr,
                 const std::string& cls, const std::string& vendor, const std::string& device,
                 const std::string& numa, const std::string& iface, const std::string& speed,
                 const std::string& mac) {
    const fs::path dir = root_ / "devices" / rc / bridge / addr;
    fs::create_directories(dir);
    std::ofstream(dir / "class") << cls << "\n";
    std::ofstream(dir / "vendor") << vendor << "\n";
    std::ofstream(dir / "device") << device << "\n";
    std::ofstream(dir / "numa_node") << numa << "\n";
    if (!iface.empty()) {
      fs::create_directories(dir / "net" / iface);
      std::ofstream(dir / "net" / iface / "speed") << speed << "\n";
      std::ofstream(dir / "net" / iface / "address") << mac << "\n";
    }
    fs::create_directory_symlink("../../../devices/" + rc + "/" + bridge + "/" + addr,
                                 root_ / "bus/pci/devices" / addr);
  }

  fs::path root_;
};

TEST_F(SysfsDriverTest, PublishesNicsAndFpgasByClass) {
  std::unique_ptr<SysfsDriver> driver =
      SysfsDriver::New({.sysfs_root = root_.string(), .rules = {}});
  EXPECT_THAT(driver->DriverNames(), ElementsAre("fpga.draplane.dev", "nic.draplane.dev"));
  StatusOr<std::vector<Inventory>> invs = driver->Discover();
  ASSERT_TRUE(invs.ok());
  ASSERT_EQ(invs->size(), 2u);
  const Inventory& fpgas = (*invs)[0];
  const Inventory& nics = (*invs)[1];
  EXPECT_EQ(fpgas.driver, "fpga.draplane.dev");
  ASSERT_EQ(fpgas.devices.size(), 1u);
  const auto& fpga = fpgas.devices[0].device;
  EXPECT_EQ(fpga.name, "pci-0000-d8-00-0");
  EXPECT_EQ(*fpga.attributes.at("resource.kubernetes.io/pcieRoot").string_value, "pci0000:d7");
  EXPECT_EQ(fpga.attributes.count("numaNode"), 0u);  // -1: unknown
  const auto& nic = nics.devices[0].device;
  EXPECT_EQ(nic.name, "pci-0000-3b-00-0");
  EXPECT_EQ(*nic.attributes.at("type").string_value, "nic");
  EXPECT_EQ(*nic.attributes.at("vendorID").string_value, "0x15b3");
  EXPECT_EQ(*nic.attributes.at("pciAddress").string_value, "0000:3b:00.0");
  EXPECT_EQ(*nic.attributes.at("numaNode").int_value, 1);
  EXPECT_EQ(*nic.attributes.at("interfaceName").string_value, "ens1f0");
  EXPECT_EQ(*nic.attributes.at("resource.kubernetes.io/pcieRoot").string_value, "pci0000:3a");
  EXPECT_EQ(nic.capacity.at("bandwidth").value.ToString(), "400G");
}

TEST_F(SysfsDriverTest, PrepareReportsNetworkDataAndNoticesVanishedDevices) {
  std::unique_ptr<SysfsDriver> driver =
      SysfsDriver::New({.sysfs_root = root_.string(), .rules = {}});
  DevicePrepareRequest request{.claim_uid = "u",
                               .claim_namespace = "ns",
                               .claim_name = "c",
                               .request = "net",
                               .driver = "nic.draplane.dev",
                               .pool = "n",
                               .device = "pci-0000-3b-00-0",
                               .share_id = {},
                               .admin_access = false,
                               .config = {}};
  StatusOr<PreparedDevice> out = driver->PrepareDevice(request);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->cdi_class, "nic");
  ASSERT_TRUE(out->network.has_value());
  EXPECT_EQ(out->network->interface_name, "ens1f0");
  EXPECT_EQ(out->network->hardware_address, "b8:ce:f6:00:00:01");
  fs::remove(root_ / "bus/pci/devices/0000:3b:00.0");
  EXPECT_EQ(driver->PrepareDevice(request).status().code(), StatusCode::kNotFound);
}

TEST_F(SysfsDriverTest, CustomRulesAndMissingTree) {
  std::unique_ptr<SysfsDriver> audio = SysfsDriver::New({.sysfs_root = root_.string(),
                                                         .rules = {{.class_prefix = "0x0403",
                                                                    .driver = "audio.example.com",
                                                                    .cdi_class = "snd",
                                                                    .type = "audio"}}});
  StatusOr<std::vector<Inventory>> invs = audio->Discover();
  ASSERT_TRUE(invs.ok());
  ASSERT_EQ(invs->size(), 1u);
  EXPECT_EQ((*invs)[0].devices[0].device.name, "pci-0000-00-1f-3");
  std::unique_ptr<SysfsDriver> none = SysfsDriver::New({.sysfs_root = "/nonexistent", .rules = {}});
  EXPECT_TRUE(none->Discover()->empty());
  EXPECT_EQ(PciDeviceName("0000:AB:00.1"), "pci-0000-ab-00-1");
}

}  // namespace
}  // namespace draplane::agent
