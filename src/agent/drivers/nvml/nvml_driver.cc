#include "agent/drivers/nvml/nvml_driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <optional>

#include "agent/drivers/nvml/nvml_api.h"
#include "agent/drivers/sysfs/sysfs_driver.h"
#include "agent/internal/attributes.h"
#include "agent/internal/opaque_config.h"
#include "agent/profile.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;

struct NvmlDriver::Api {
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlSystemGetCudaDriverVersion_fn cuda_driver_version = nullptr;
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle_by_index = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetMinorNumber_fn minor = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetCudaComputeCapability_fn compute_capability = nullptr;
  nvmlDeviceGetArchitecture_fn architecture = nullptr;
  nvmlDeviceGetBrand_fn brand = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci_info = nullptr;
  // Optional (MIG): absent in old drivers.
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig_count = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle = nullptr;
  nvmlDeviceGetAttributes_v2_fn attributes = nullptr;

  std::string Error(nvmlReturn_t r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return text != nullptr ? std::string(text) : "NVML error " + std::to_string(r);
  }
};

namespace {

using internal::kPcieRootAttribute;
using internal::StringAttr;
using internal::VersionAttr;

// nvmlDeviceArchitecture_t values (NVML_DEVICE_ARCH_*), named as go-nvlib's
// GetArchitectureAsString names them.
std::string ArchitectureName(unsigned int arch) {
  switch (arch) {
    case 2:
      return "Kepler";
    case 3:
      return "Maxwell";
    case 4:
      return "Pascal";
    case 5:
      return "Volta";
    case 6:
      return "Turing";
    case 7:
      return "Ampere";
    case 8:
      return "Ada Lovelace";
    case 9:
      return "Hopper";
    case 10:
      return "Blackwell";
    default:
      return "Unknown";
  }
}

// nvmlBrandType_t values (NVML_BRAND_*), named as go-nvlib's GetBrandAsString names them.
std::string BrandName(int brand) {
  static const char* const kNames[] = {
      "Unknown",   "Quadro",      "Tesla",     "NVS",        "Grid",      "GeForce",
      "Titan",     "NvidiaVApps", "NvidiaVPC", "NvidiaVCS",  "NvidiaVWS", "NvidiaCloudGaming",
      "QuadroRTX", "NvidiaRTX",   "Nvidia",    "GeForceRTX", "TitanRTX"};
  if (brand < 0 || brand >= static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return "Unknown";
  return kNames[brand];
}

bool IsLost(nvmlReturn_t r) { return r == kNvmlErrorGpuIsLost || r == kNvmlErrorResetRequired; }

// "00000000:3B:00.0" (NVML) -> "0000:3b:00.0" (sysfs).
std::string SysfsAddress(const std::string& bus_id) {
  std::string out = bus_id.size() > 12 ? bus_id.substr(bus_id.size() - 12) : bus_id;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::unique_ptr<NvmlDriver> NvmlDriver::Open(NvmlDriverOptions options) {
  std::unique_ptr<NvmlDriver> driver(new NvmlDriver(std::move(options)));
  Status loaded = driver->Load();
  if (!loaded.ok()) {
    driver->unavailable_reason_ =
        std::string(loaded.message()) + ": no NVIDIA GPUs will be published on this node";
    log::Warning("nvml: {}", driver->unavailable_reason_);
    if (driver->handle_ != nullptr) ::dlclose(driver->handle_);
    driver->handle_ = nullptr;
  }
  return driver;
}

NvmlDriver::NvmlDriver(NvmlDriverOptions options)
    : options_(std::move(options)), api_(std::make_unique<Api>()) {}

NvmlDriver::~NvmlDriver() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Status NvmlDriver::Load() {
  ::dlerror();
  handle_ = ::dlopen(options_.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    return UnavailableError(options_.library + " not found (" +
                            (why != nullptr ? std::string(why) : "dlopen failed") + ")");
  }
  Status missing;
  auto required = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle_, symbol));
    if (fn == nullptr && missing.ok()) {
      missing = UnavailableError(options_.library + " lacks " + symbol);
    }
  };
  auto optional = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle_, symbol));
  };
  Api& a = *api_;
  required(a.init, "nvmlInit_v2");
  required(a.shutdown, "nvmlShutdown");
  required(a.error_string, "nvmlErrorString");
  required(a.driver_version, "nvmlSystemGetDriverVersion");
  required(a.cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
  required(a.count, "nvmlDeviceGetCount_v2");
  required(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  required(a.name, "nvmlDeviceGetName");
  required(a.uuid, "nvmlDeviceGetUUID");
  required(a.minor, "nvmlDeviceGetMinorNumber");
  required(a.memory, "nvmlDeviceGetMemoryInfo");
  required(a.compute_capability, "nvmlDeviceGetCudaComputeCapability");
  required(a.architecture, "nvmlDeviceGetArchitecture");
  required(a.brand, "nvmlDeviceGetBrand");
  required(a.pci_info, "nvmlDeviceGetPciInfo_v3");
  optional(a.mig_mode, "nvmlDeviceGetMigMode");
  optional(a.max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
  optional(a.mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  optional(a.attributes, "nvmlDeviceGetAttributes_v2");
  return missing;
}

StatusOr<std::vector<Inventory>> NvmlDriver::Discover() {
  if (!available()) return std::vector<Inventory>{};
  const Api& a = *api_;
  nvmlReturn_t r = a.init();
  if (r != kNvmlSuccess) {
    return UnavailableError("nvmlInit_v2: " + a.Error(r));
  }
  struct Shutdown {
    const Api& a;
    ~Shutdown() { a.shutdown(); }
  } shutdown{a};

  char buffer[kNvmlDeviceNameBufferSize];
  r = a.driver_version(buffer, kNvmlDriverVersionBufferSize);
  if (r != kNvmlSuccess) return UnavailableError("nvmlSystemGetDriverVersion: " + a.Error(r));
  StatusOr<std::string> driver_version = NormalizeVersion(buffer);
  int cuda = 0;
  r = a.cuda_driver_version(&cuda);
  if (r != kNvmlSuccess) return UnavailableError("nvmlSystemGetCudaDriverVersion: " + a.Error(r));
  const std::string cuda_version =
      std::to_string(cuda / 1000) + "." + std::to_string((cuda % 1000) / 10) + ".0";
  unsigned int count = 0;
  r = a.count(&count);
  if (r != kNvmlSuccess) return UnavailableError("nvmlDeviceGetCount_v2: " + a.Error(r));

  Inventory inv;
  inv.driver = options_.driver_name;
  std::map<std::string, Known> known;
  const Timestamp now = options_.clock->Now();
  std::map<std::string, Timestamp> unhealthy_since;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    r = a.handle_by_index(i, &dev);
    if (r != kNvmlSuccess) {
      log::Warning("nvml: GPU index {}: {}", i, a.Error(r));
      continue;
    }
    unsigned int minor = 0;
    char uuid[kNvmlDeviceUuidBufferSize] = {};
    char name[kNvmlDeviceNameBufferSize] = {};
    r = a.minor(dev, &minor);
    if (r == kNvmlSuccess) r = a.uuid(dev, uuid, kNvmlDeviceUuidBufferSize);
    if (r != kNvmlSuccess) {
      log::Warning("nvml: GPU index {}: {}", i, a.Error(r));
      continue;
    }
    // Health: every query below must work on a healthy GPU.
    nvmlReturn_t health = kNvmlSuccess;
    auto check = [&](nvmlReturn_t q) {
      if (q != kNvmlSuccess && health == kNvmlSuccess) health = q;
      return q == kNvmlSuccess;
    };
    nvmlMemory_t memory{};
    int cc_major = 0, cc_minor = 0;
    unsigned int arch = 0;
    int brand = 0;
    nvmlPciInfo_t pci{};
    check(a.name(dev, name, kNvmlDeviceNameBufferSize));
    check(a.memory(dev, &memory));
    check(a.compute_capability(dev, &cc_major, &cc_minor));
    check(a.architecture(dev, &arch));
    check(a.brand(dev, &brand));
    check(a.pci_info(dev, &pci));
    if (health != kNvmlSuccess && !IsLost(health)) {
      log::Warning("nvml: GPU {} ({}): {}; not published", minor, uuid, a.Error(health));
      continue;
    }
    std::map<std::string, rv1::DeviceAttribute, std::less<>> common;
    common["productName"] = StringAttr(name);
    common["brand"] = StringAttr(BrandName(brand));
    common["architecture"] = StringAttr(ArchitectureName(arch));
    common["cudaComputeCapability"] =
        VersionAttr(std::to_string(cc_major) + "." + std::to_string(cc_minor) + ".0");
    if (driver_version.ok()) common["driverVersion"] = VersionAttr(*driver_version);
    common["cudaDriverVersion"] = VersionAttr(cuda_version);
    if (pci.busId[0] != '\0') {
      common["pcieBusID"] = StringAttr(pci.busId);
      if (auto root = PcieRootOf(options_.sysfs_root, SysfsAddress(pci.busId))) {
        common[std::string(kPcieRootAttribute)] = StringAttr(*root);
      }
    }
    DeviceHealth device_health;
    if (IsLost(health)) {
      auto [it, inserted] = unhealthy_since_.emplace(uuid, now);
      unhealthy_since[uuid] = it->second;
      device_health = DeviceHealth{.healthy = false,
                                   .message = a.Error(health),
                                   .taint_effect = "NoExecute",
                                   .since = it->second};
    }
    unsigned int mig_current = 0, mig_pending = 0;
    const bool mig = a.mig_mode != nullptr &&
                     a.mig_mode(dev, &mig_current, &mig_pending) == kNvmlSuccess &&
                     mig_current == 1;
    const std::string gpu_name = "gpu-" + std::to_string(minor);
    if (!mig) {
      DiscoveredDevice d;
      d.cdi_class = "gpu";
      d.device.name = gpu_name;
      d.device.attributes = common;
      d.device.attributes["type"] = StringAttr("gpu");
      d.device.attributes["uuid"] = StringAttr(uuid);
      d.device.capacity["memory"].value = api::Quantity::FromInt64(
          static_cast<int64_t>(memory.total), api::Quantity::Format::kBinarySI);
      d.health = device_health;
      known[gpu_name] = Known{.minor = minor, .uuid = uuid, .cdi_class = "gpu"};
      inv.devices.push_back(std::move(d));
      continue;
    }
    unsigned int max_mig = 0;
    if (a.max_mig_count == nullptr || a.mig_handle == nullptr || a.attributes == nullptr ||
        a.max_mig_count(dev, &max_mig) != kNvmlSuccess) {
      log::Warning("nvml: GPU {} is in MIG mode but this NVML cannot list MIG devices", minor);
      continue;
    }
    size_t published = 0;
    for (unsigned int m = 0; m < max_mig; ++m) {
      nvmlDevice_t mig_dev = nullptr;
      if (a.mig_handle(dev, m, &mig_dev) != kNvmlSuccess) continue;
      char mig_uuid[kNvmlDeviceUuidBufferSize] = {};
      nvmlDeviceAttributes_t attrs{};
      if (a.uuid(mig_dev, mig_uuid, kNvmlDeviceUuidBufferSize) != kNvmlSuccess ||
          a.attributes(mig_dev, &attrs) != kNvmlSuccess) {
        continue;
      }
      const unsigned long long gib = (attrs.memorySizeMB + 1023) / 1024;
      DiscoveredDevice d;
      d.cdi_class = "mig";
      d.device.name = gpu_name + "-mig-" + std::to_string(m);
      d.device.attributes = common;
      d.device.attributes["type"] = StringAttr("mig");
      d.device.attributes["uuid"] = StringAttr(mig_uuid);
      d.device.attributes["parentUUID"] = StringAttr(uuid);
      d.device.attributes["profile"] = StringAttr(std::to_string(attrs.gpuInstanceSliceCount) +
                                                  "g." + std::to_string(gib) + "gb");
      d.device.capacity["memory"].value = api::Quantity::FromInt64(
          static_cast<int64_t>(attrs.memorySizeMB) * 1024 * 1024, api::Quantity::Format::kBinarySI);
      d.device.capacity["multiprocessors"].value =
          api::Quantity::FromInt64(attrs.multiprocessorCount);
      d.health = device_health;
      known[d.device.name] = Known{.minor = minor, .uuid = mig_uuid, .cdi_class = "mig"};
      inv.devices.push_back(std::move(d));
      ++published;
    }
    if (published == 0) {
      log::Warning(
          "nvml: GPU {} ({}) has MIG mode on but no MIG devices: nothing is published for it "
          "(create MIG devices, or turn MIG mode off, before the agent starts)",
          minor, uuid);
    }
  }
  known_ = std::move(known);
  unhealthy_since_ = std::move(unhealthy_since);
  std::vector<Inventory> out;
  if (!inv.devices.empty()) out.push_back(std::move(inv));
  return out;
}

StatusOr<PreparedDevice> NvmlDriver::PrepareDevice(const DevicePrepareRequest& request) {
  auto it = known_.find(request.device);
  if (it == known_.end()) {
    return NotFoundError("GPU " + request.device + " was not discovered on this node");
  }
  PreparedDevice out;
  out.cdi_class = it->second.cdi_class;
  out.edits.device_nodes.push_back(
      DeviceNode{.path = "/dev/nvidia" + std::to_string(it->second.minor),
                 .type = "c",
                 .major = 195,
                 .minor = it->second.minor});
  out.edits.list_env.emplace_back("NVIDIA_VISIBLE_DEVICES", it->second.uuid);
  DRAPLANE_RETURN_IF_ERROR(internal::ApplyOpaqueConfig(request, "NVIDIA", &out));
  return out;
}

Status NvmlDriver::UnprepareDevice(const DevicePrepareRequest&) { return Status::Ok(); }

}  // namespace draplane::agent
