// The `nvml` driver: real NVIDIA GPUs through NVML, loaded with dlopen("libnvidia-ml.so.1").
//
// Discovery (each Discover() is nvmlInit_v2 ... nvmlShutdown, as NVIDIA's DRA driver does):
//   - a GPU with MIG mode off becomes `gpu-<minor>` with the attributes NVIDIA's DRA driver
//     (github.com/NVIDIA/k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin/deviceinfo.go) publishes
//     under `gpu.nvidia.com` — here under `driver_name` (default `gpu.draplane.dev`): type "gpu",
//     uuid, productName (nvmlDeviceGetName), brand (nvmlDeviceGetBrand, go-nvlib's names),
//     architecture (nvmlDeviceGetArchitecture: Kepler ... Blackwell), cudaComputeCapability
//     (major.minor as a version), driverVersion (nvmlSystemGetDriverVersion, as a version),
//     cudaDriverVersion (nvmlSystemGetCudaDriverVersion 1000*major + 10*minor, as a version),
//     pcieBusID (nvmlDeviceGetPciInfo_v3) and `resource.kubernetes.io/pcieRoot` (from sysfs);
//     capacity `memory` (nvmlDeviceGetMemoryInfo).
//   - a GPU with MIG mode on publishes its existing MIG devices instead (static MIG, as upstream
//     does when MIG is configured ahead of time): `gpu-<minor>-mig-<index>` with type "mig",
//     uuid, parentUUID, profile "<slices>g.<GiB>gb" (nvmlDeviceGetAttributes_v2, memory rounded
//     up to whole GiB), the parent's attributes, and capacity memory and multiprocessors. A GPU
//     in MIG mode without MIG devices publishes nothing and logs why — the "MIG mode must be on
//     before the driver starts" trap the mission mentions, made visible.
// Health: a device whose queries fail with NVML_ERROR_GPU_IS_LOST or NVML_ERROR_RESET_REQUIRED
// is published unhealthy (taint effect NoExecute) with NVML's error string; XID event
// monitoring is not implemented (docs/design/agent.md).
// Prepare: device node /dev/nvidia<minor> and NVIDIA_VISIBLE_DEVICES=<uuid> (a list variable),
// plus the opaque GpuConfig / MigDeviceConfig / DeviceConfig (internal/opaque_config.h).
//
// When the library cannot be loaded (no NVIDIA driver on this node) the driver says so once,
// clearly, and discovers no devices.
//
// Thread-safety: called from one agent loop thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/driver.h"
#include "common/clock.h"

namespace draplane::agent {

inline constexpr std::string_view kNvmlDriver = "gpu.draplane.dev";

struct NvmlDriverOptions {
  // The DRA driver name. draplane's own by default: NVIDIA's DRA driver owns `gpu.nvidia.com`
  // on nodes where it runs (its kubelet registration, its slices); `gpu.nvidia.com` suits a
  // node where draplane replaces it, so DeviceClasses written for NVIDIA's driver keep working.
  std::string driver_name = std::string(kNvmlDriver);
  std::string library = "libnvidia-ml.so.1";
  std::string sysfs_root = "/sys";  // for resource.kubernetes.io/pcieRoot
  const Clock* clock = nullptr;     // required; stamps when a device turned unhealthy
};

class NvmlDriver final : public Driver {
 public:
  // Never fails: without a loadable library the driver is unavailable (see available()).
  static std::unique_ptr<NvmlDriver> Open(NvmlDriverOptions options);
  ~NvmlDriver() override;

  // False when the library or one of its required entry points could not be loaded.
  bool available() const { return handle_ != nullptr; }
  // Why the driver is unavailable, e.g. "libnvidia-ml.so.1 not found (...): no NVIDIA GPUs
  // will be published on this node".
  const std::string& unavailable_reason() const { return unavailable_reason_; }

  std::string kind() const override { return "nvml"; }
  std::vector<std::string> DriverNames() const override { return {options_.driver_name}; }
  StatusOr<std::vector<Inventory>> Discover() override;
  StatusOr<PreparedDevice> PrepareDevice(const DevicePrepareRequest& request) override;
  Status UnprepareDevice(const DevicePrepareRequest& request) override;

 private:
  struct Api;
  explicit NvmlDriver(NvmlDriverOptions options);
  Status Load();

  NvmlDriverOptions options_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string unavailable_reason_;
  // Device name -> what Prepare needs (minor number, uuid, class), from the last discovery.
  struct Known {
    int64_t minor = 0;
    std::string uuid;
    std::string cdi_class;
  };
  std::map<std::string, Known> known_;
  // UUID -> when it was first seen unhealthy.
  std::map<std::string, Timestamp> unhealthy_since_;
};

}  // namespace draplane::agent
