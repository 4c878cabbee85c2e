// The `sysfs` driver: PCI devices by class from `<sysfs_root>/bus/pci/devices`.
//
// Each rule maps a PCI class prefix to a DRA driver name and CDI class; the defaults publish
// network controllers (class 0x02....) as `nic.draplane.dev` NICs and processing accelerators
// (class 0x12....) as `fpga.draplane.dev` FPGAs — draplane's own driver names, so the agent never
// takes over another driver's slices or kubelet registration (`draplane agent --driver-name`
// changes them). A device `0000:3b:00.0` becomes
// `pci-0000-3b-00-0` with attributes type, vendorID, deviceID, pciAddress, numaNode (when the
// kernel knows it) and `resource.kubernetes.io/pcieRoot` — the PCIe root complex the device
// hangs off (`pci0000:3a`), derived like upstream's deviceattribute.GetPCIeRootAttributeByPCIBusID
// from the device's resolved sysfs path. A NIC also gets interfaceName and, when the link is up,
// capacity `bandwidth` from `net/<if>/speed` (Mb/s); prepare reports its interface and MAC
// address as the claim's network data.
//
// `sysfs_root` can point at a fixture tree (tests build one with the same symlink layout the
// kernel uses: bus/pci/devices/<addr> -> ../../../devices/pci0000:3a/0000:3a:00.0/<addr>).
// Health is not monitored (a device that disappears is no longer published).
//
// Thread-safety: called from one agent loop thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/driver.h"

namespace draplane::agent {

inline constexpr std::string_view kSysfsNicDriver = "nic.draplane.dev";
inline constexpr std::string_view kSysfsFpgaDriver = "fpga.draplane.dev";

struct SysfsRule {
  std::string class_prefix;  // "0x02" matches class "0x020000"
  std::string driver;        // "nic.draplane.dev"
  std::string cdi_class;     // "nic"
  std::string type;          // the `type` attribute, "nic"
};

struct SysfsDriverOptions {
  std::string sysfs_root = "/sys";
  // Empty: DefaultSysfsRules().
  std::vector<SysfsRule> rules;
};

std::vector<SysfsRule> DefaultSysfsRules();

// The PCIe root of a PCI device ("pci0000:3a"), from the resolved path of
// `<sysfs_root>/bus/pci/devices/<pci_address>`; nullopt when it cannot be determined.
std::optional<std::string> PcieRootOf(const std::string& sysfs_root,
                                      const std::string& pci_address);

// "0000:3b:00.0" -> "pci-0000-3b-00-0".
std::string PciDeviceName(const std::string& pci_address);

class SysfsDriver final : public Driver {
 public:
  static std::unique_ptr<SysfsDriver> New(SysfsDriverOptions options);

  std::string kind() const override { return "sysfs"; }
  std::vector<std::string> DriverNames() const override;
  StatusOr<std::vector<Inventory>> Discover() override;
  StatusOr<PreparedDevice> PrepareDevice(const DevicePrepareRequest& request) override;
  Status UnprepareDevice(const DevicePrepareRequest& request) override;

 private:
  explicit SysfsDriver(SysfsDriverOptions options);
  SysfsDriverOptions options_;
};

}  // namespace draplane::agent
