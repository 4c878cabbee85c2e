// CDI (Container Device Interface) specs: how a prepared claim reaches the container runtime.
//
// The agent writes one spec file per claim and CDI kind under `<state_dir>/cdi/` — CDI 0.6.0
// JSON (github.com/cncf-tags/container-device-interface, SPEC.md), the version that added
// annotations:
//
//   {"cdiVersion": "0.6.0", "kind": "gpu.nvidia.com/gpu",
//    "annotations": {"draplane.dev/claim": "team-a/train-gpu", "draplane.dev/claim-uid": "..."},
//    "devices": [{"name": "<claim-uid>-gpu-0",
//                 "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", ...}]}}],
//    "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=GPU-...", "DRA_DEVICE_GPU=gpu-0"]}}
//
// The kind is `<driver>/<class>` (vendor = the DRA driver name, class = the device's CDI class),
// device names are `<claim-uid>-<device>` so specs of different claims never collide, and a
// container gets a device through the CDI device ID `<kind>=<name>`. Per-device edits hold the
// device nodes and the device's own variables; list-valued variables (driver.h
// ContainerEdits::list_env, plus `DRA_DEVICE_<REQUEST>` naming the devices of each request) are
// joined per claim into the spec-level edits, which the runtime applies to a container that gets
// any device of the spec.
//
// Files are written atomically (write, fsync, rename), named
// `<driver>_<class>_<claim-uid>.json`, and removed on unprepare.
//
// Thread-safety: pure functions plus file writes; callers serialise writes to one state dir.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/driver.h"
#include "common/status.h"

namespace draplane::agent {

inline constexpr std::string_view kCdiVersion = "0.6.0";

// One device of a spec.
struct CdiDevice {
  std::string name;  // "<claim-uid>-<device>"
  ContainerEdits edits;
};

struct CdiSpec {
  std::string kind;  // "<driver>/<class>"
  std::map<std::string, std::string> annotations;
  std::vector<CdiDevice> devices;
  ContainerEdits edits;  // spec-level

  // "<kind>=<name>" for each device, in order.
  std::vector<std::string> DeviceIds() const;
};

// `DRA_DEVICE_` + the request name upper-cased with every non-alphanumeric character as `_`
// ("gpu/h100" -> "DRA_DEVICE_GPU_H100").
std::string RequestEnvName(std::string_view request);

// The spec's JSON text (indented, newline-terminated).
std::string CdiSpecJson(const CdiSpec& spec);
// Parses what CdiSpecJson wrote (tests, recovery checks). InvalidArgument when malformed.
StatusOr<CdiSpec> ParseCdiSpec(std::string_view text);

// "<driver>_<class>_<claim-uid>.json" for kind "<driver>/<class>".
std::string CdiSpecFileName(std::string_view kind, std::string_view claim_uid);

// Writes `spec` to `<dir>/<CdiSpecFileName>` atomically, creating `dir`; returns the path.
StatusOr<std::string> WriteCdiSpec(const std::string& dir, const CdiSpec& spec,
                                   std::string_view claim_uid);

}  // namespace draplane::agent
