// The prepare checkpoint: what the agent has prepared, so that a restarted agent neither
// prepares a claim twice nor forgets one it must unprepare.
//
// One JSON file, `<state_dir>/checkpoint.json`, rewritten atomically on every change:
//
//   {"version": 1, "node": "gpu-node-1", "claims": {"<claim-uid>": {
//      "namespace": "team-a", "name": "train-gpu", "state": "PrepareStarted" | "PrepareCompleted",
//      "devices": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "gpu-node-1",
//                   "device": "gpu-0", "shareID": "...", "cdiDeviceIDs":
//                   ["gpu.nvidia.com/gpu=..."], "networkData": {...}}],
//      "cdiSpecs": ["/state/cdi/gpu.nvidia.com_gpu_<uid>.json"]}}}
//
// The two states follow NVIDIA's DRA driver (cmd/gpu-kubelet-plugin/checkpoint.go,
// PrepareStarted / PrepareCompleted): a claim is recorded as started, with the devices it is
// about to prepare, before any driver call; only after every device is prepared and every CDI spec
// written does it become completed. A record still "started" after a restart means the agent
// died half-way: recovery unprepares those devices and removes those specs (prepare.h).
//
// Thread-safety: a value; the owner serialises access.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::agent {

enum class PrepareState { kStarted, kCompleted };

struct DeviceRecord {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  // Prepared for admin access (monitoring), which does not keep the device from others.
  bool admin_access = false;
  std::vector<std::string> cdi_device_ids;
  std::optional<api::resourcev1::NetworkDeviceData> network;

  friend bool operator==(const DeviceRecord&, const DeviceRecord&) = default;
};

struct ClaimRecord {
  std::string namespace_;
  std::string name;
  PrepareState state = PrepareState::kStarted;
  std::vector<DeviceRecord> devices;
  std::vector<std::string> cdi_specs;  // paths

  friend bool operator==(const ClaimRecord&, const ClaimRecord&) = default;
};

struct Checkpoint {
  std::string node;
  std::map<std::string, ClaimRecord> claims;  // by claim UID

  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

// Reads a checkpoint file; an absent file is an empty checkpoint. InvalidArgument when the file
// is corrupt (the agent refuses to start rather than forget prepared claims).
StatusOr<Checkpoint> LoadCheckpoint(const std::string& path);
// Writes the checkpoint atomically.
Status SaveCheckpoint(const std::string& path, const Checkpoint& checkpoint);

std::string CheckpointJson(const Checkpoint& checkpoint);
StatusOr<Checkpoint> ParseCheckpoint(std::string_view text);

}  // namespace draplane::agent
