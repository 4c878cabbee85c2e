#include "agent/drivers/sysfs/sysfs_driver.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "agent/internal/attributes.h"
#include "agent/internal/files.h"
#include "agent/internal/opaque_config.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;

namespace {

using internal::kPcieRootAttribute;
using internal::StringAttr;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::optional<std::string> ReadAttr(const std::string& path) {
  StatusOr<std::string> text = internal::ReadFile(path);
  if (!text.ok()) return std::nullopt;
  return Trim(*text);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

const SysfsRule* MatchRule(const std::vector<SysfsRule>& rules, const std::string& pci_class) {
  for (const SysfsRule& rule : rules) {
    if (pci_class.starts_with(rule.class_prefix)) return &rule;
  }
  return nullptr;
}

std::string DevicePath(const std::string& root, const std::string& address) {
  return root + "/bus/pci/devices/" + address;
}

// The device's first network interface, if any.
std::optional<std::string> InterfaceOf(const std::string& device_path) {
  std::vector<std::string> ifaces = ListDir(device_path + "/net");
  if (ifaces.empty()) return std::nullopt;
  return ifaces.front();
}

}  // namespace

std::vector<SysfsRule> DefaultSysfsRules() {
  return {
      {.class_prefix = "0x02",
       .driver = std::string(kSysfsNicDriver),
       .cdi_class = "nic",
       .type = "nic"},
      {.class_prefix = "0x12",
       .driver = std::string(kSysfsFpgaDriver),
       .cdi_class = "fpga",
       .type = "fpga"},
  };
}

std::optional<std::string> PcieRootOf(const std::string& sysfs_root,
                                      const std::string& pci_address) {
  char resolved[PATH_MAX];
  if (::realpath(DevicePath(sysfs_root, pci_address).c_str(), resolved) == nullptr) {
    return std::nullopt;
  }
  // .../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0: the component after "devices" names the
  // root complex.
  std::string path(resolved);
  size_t pos = path.find("/devices/pci");
  if (pos == std::string::npos) return std::nullopt;
  size_t start = pos + std::string_view("/devices/").size();
  size_t end = path.find('/', start);
  return path.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string PciDeviceName(const std::string& pci_address) {
  std::string out = "pci-";
  for (char c : pci_address)
    out += (c == ':' || c == '.') ? '-' : static_cast<char>(std::tolower(c));
  return out;
}

std::unique_ptr<SysfsDriver> SysfsDriver::New(SysfsDriverOptions options) {
  if (options.rules.empty()) options.rules = DefaultSysfsRules();
  return std::unique_ptr<SysfsDriver>(new SysfsDriver(std::move(options)));
}

SysfsDriver::SysfsDriver(SysfsDriverOptions options) : options_(std::move(options)) {}

std::vector<std::string> SysfsDriver::DriverNames() const {
  std::set<std::string> names;
  for (const SysfsRule& rule : options_.rules) names.insert(rule.driver);
  return {names.begin(), names.end()};
}

StatusOr<std::vector<Inventory>> SysfsDriver::Discover() {
  const std::string devices_dir = options_.sysfs_root + "/bus/pci/devices";
  std::map<std::string, Inventory> by_driver;
  for (const std::string& address : ListDir(devices_dir)) {
    const std::string path = DevicePath(options_.sysfs_root, address);
    std::optional<std::string> pci_class = ReadAttr(path + "/class");
    if (!pci_class) continue;
    const SysfsRule* rule = MatchRule(options_.rules, *pci_class);
    if (rule == nullptr) continue;
    DiscoveredDevice d;
    d.cdi_class = rule->cdi_class;
    d.device.name = PciDeviceName(address);
    d.device.attributes["type"] = StringAttr(rule->type);
    d.device.attributes["pciAddress"] = StringAttr(address);
    if (auto vendor = ReadAttr(path + "/vendor"))
      d.device.attributes["vendorID"] = StringAttr(*vendor);
    if (auto device = ReadAttr(path + "/device"))
      d.device.attributes["deviceID"] = StringAttr(*device);
    if (auto numa = ReadAttr(path + "/numa_node")) {
      char* end = nullptr;
      long long node = std::strtoll(numa->c_str(), &end, 10);
      if (end != numa->c_str() && node >= 0) d.device.attributes["numaNode"].int_value = node;
    }
    if (auto root = PcieRootOf(options_.sysfs_root, address)) {
      d.device.attributes[std::string(kPcieRootAttribute)] = StringAttr(*root);
    }
    if (auto iface = InterfaceOf(path)) {
      d.device.attributes["interfaceName"] = StringAttr(*iface);
      if (auto speed = ReadAttr(path + "/net/" + *iface + "/speed")) {
        char* end = nullptr;
        long long mbps = std::strtoll(speed->c_str(), &end, 10);
        if (end != speed->c_str() && mbps > 0) {
          StatusOr<api::Quantity> q = api::Quantity::Parse(std::to_string(mbps) + "M");
          if (q.ok()) d.device.capacity["bandwidth"].value = *q;
        }
      }
    }
    Inventory& inv = by_driver[rule->driver];
    inv.driver = rule->driver;
    inv.devices.push_back(std::move(d));
  }
  std::vector<Inventory> out;
  for (auto& [driver, inv] : by_driver) out.push_back(std::move(inv));
  return out;
}

StatusOr<PreparedDevice> SysfsDriver::PrepareDevice(const DevicePrepareRequest& request) {
  // Find the device again: it may have disappeared since it was published.
  const std::string devices_dir = options_.sysfs_root + "/bus/pci/devices";
  for (const std::string& address : ListDir(devices_dir)) {
    if (PciDeviceName(address) != request.device) continue;
    const std::string path = DevicePath(options_.sysfs_root, address);
    std::optional<std::string> pci_class = ReadAttr(path + "/class");
    const SysfsRule* rule = pci_class ? MatchRule(options_.rules, *pci_class) : nullptr;
    if (rule == nullptr || rule->driver != request.driver) break;
    PreparedDevice out;
    out.cdi_class = rule->cdi_class;
    out.edits.list_env.emplace_back("PCI_DEVICE_ADDRESSES", address);
    DRAPLANE_RETURN_IF_ERROR(internal::ApplyOpaqueConfig(request, "PCI", &out));
    if (auto iface = InterfaceOf(path)) {
      rv1::NetworkDeviceData net;
      net.interface_name = *iface;
      if (auto mac = ReadAttr(path + "/net/" + *iface + "/address")) net.hardware_address = *mac;
      out.network = std::move(net);
    }
    return out;
  }
  return NotFoundError("PCI device " + request.device + " is gone from " + devices_dir);
}

Status SysfsDriver::UnprepareDevice(const DevicePrepareRequest&) { return Status::Ok(); }

}  // namespace draplane::agent
