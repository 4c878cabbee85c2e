// Device and cluster profiles: simulated nodes and their devices, described in YAML.
//
// A profile is what the `profile` driver (drivers/profile/) publishes instead of real hardware,
// and what `draplane serve --simulate-nodes` turns into a cluster of in-process node agents.
// Two kinds share one schema (docs/design/agent.md has a full example):
//
//   apiVersion: draplane.dev/v1alpha1
//   kind: NodeProfile                  # one node; its name comes from --node or metadata.name
//   metadata: {name: gpu-node-1}
//   labels: {platform.example.com/accelerator: h100}
//   capacity: {cpu: "64", memory: 512Gi, pods: "110"}
//   extendedResources: {example.com/gpu: "2"}   # a legacy device plugin's resources
//   devices:
//     gpus:  [{count, productName, brand, architecture, cudaComputeCapability, driverVersion,
//              cudaDriverVersion, memory, multiprocessors, uuids, mig: {memorySlices,
//              wholeGpu, profiles: [{name, memory, memorySlices, multiprocessors, placements}]},
//              attach: {after, outcome, message}}]
//     fpgas: [{count, vendor, model, bitstreamFamily, memory, attach}]
//     nics:  [{count, model, bandwidth, rdma, shared, requestPolicy: {default, min, max, step}}]
//   faults:
//     - {device: gpu-1, after: 30s, for: 60s, effect: NoExecute, message: "XID 79"}
//     - {node: h100-2, device: gpu-0, message: "XID 48"}   # one node of a pool only
//     - {device: fpga-0, prepare: terminal, message: "bitstream load failed"}
//     - {device: gpu-0, unprepare: retryable, times: 3}
//
//   kind: ClusterProfile               # many nodes
//   nodePools:
//     - {name: h100, count: 4, labels, capacity, extendedResources, devices, faults}
//
// A pool named `h100` with count 4 yields nodes `h100-0` .. `h100-3` (`namePrefix` overrides
// the `h100-` prefix). Durations are Go-style (`90s`, `1m30s`, `2h`); quantities are Kubernetes
// quantities; versions are normalised to semver (`550.90.07` -> `550.90.7`, `9.0` -> `9.0.0`),
// as NVIDIA's driver does with semver.MustParse(...).String().
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::agent {

inline constexpr std::string_view kProfileApiVersion = "draplane.dev/v1alpha1";

// DRA driver names the profile driver publishes under.
inline constexpr std::string_view kGpuDriverName = "gpu.nvidia.com";
inline constexpr std::string_view kFpgaDriverName = "fpga.example.com";
inline constexpr std::string_view kNicDriverName = "nic.example.com";

struct MigProfileSpec {
  std::string name;  // "1g.5gb"
  api::Quantity memory;
  int64_t memory_slices = 1;
  int64_t multiprocessors = 0;
  // First memory slice of each placement advertised; default every aligned start
  // (0, size, 2*size, ... while start + size <= the GPU's memory slices).
  std::vector<int64_t> placements;
};

struct MigSpec {
  int64_t memory_slices = 8;
  // Also advertise the whole GPU (consuming every counter), as NVIDIA's dynamic MIG does.
  bool whole_gpu = true;
  std::vector<MigProfileSpec> profiles;
};

// A fabric-attached device (KEP-5007, "device attach before pod scheduled"): it is published with
// bindingConditions [<driver>/fabric-attached], bindingFailureConditions
// [<driver>/fabric-attach-failed] and bindsToNode, and once the scheduler has allocated it to a
// Pod nominated to the node, the agent attaches it as a fabric manager would: `after` that long
// the attach succeeds (outcome attached: the binding condition becomes True), fails (failed: the
// failure condition becomes True with `message`, and the device is tainted so that it is not
// picked again), or never answers (never).
struct AttachSpec {
  enum class Outcome { kAttached, kFailed, kNever };
  Duration after{0};
  Outcome outcome = Outcome::kAttached;
  std::string message;
};

struct GpuSpec {
  int64_t count = 1;
  std::string product_name;
  std::string brand = "Nvidia";
  std::string architecture;
  std::string cuda_compute_capability;  // semver
  std::string driver_version;           // semver
  std::string cuda_driver_version;      // semver; empty: not published
  api::Quantity memory;
  int64_t multiprocessors = 0;
  // Explicit UUIDs for the first GPUs of the group; the rest are derived from the node name.
  std::vector<std::string> uuids;
  std::optional<MigSpec> mig;
  std::optional<AttachSpec> attach;  // not with `mig`
};

struct FpgaSpec {
  int64_t count = 1;
  std::string vendor;
  std::string model;
  std::string bitstream_family;
  std::optional<api::Quantity> memory;
  std::optional<AttachSpec> attach;
};

struct NicRequestPolicy {
  std::optional<api::Quantity> default_value;
  std::optional<api::Quantity> min;
  std::optional<api::Quantity> max;
  std::optional<api::Quantity> step;
};

struct NicSpec {
  int64_t count = 1;
  std::string model;
  api::Quantity bandwidth;
  bool rdma = false;
  // allowMultipleAllocations: several claims share the NIC, each consuming bandwidth.
  bool shared = false;
  std::optional<NicRequestPolicy> request_policy;
};

enum class FaultKind {
  kUnhealthy,           // the device turns unhealthy (a taint in its slice)
  kPrepareTerminal,     // prepare fails and must not be retried
  kPrepareRetryable,    // prepare fails `times` times, then succeeds
  kPrepareCrash,        // the agent process dies in the middle of preparing (once)
  kUnprepareRetryable,  // unprepare fails `times` times, then succeeds
};

struct FaultSpec {
  FaultKind kind = FaultKind::kUnhealthy;
  // Only on this node; empty: every node of the pool.
  std::string node;
  std::string driver;  // empty: any driver with a device of that name
  std::string device;
  // Unhealthy faults: starts `after` the fault was first loaded, lasts `duration` (forever when
  // absent), taints with `effect` (empty: NoSchedule).
  Duration after{0};
  std::optional<Duration> duration;
  std::string effect;
  std::string message;
  // kPrepareRetryable / kUnprepareRetryable: how many (un)prepares fail before one succeeds.
  int64_t times = 1;

  // A stable identity of the fault within its node, for remembering when it was first seen.
  std::string Key() const;
};

struct DeviceProfile {
  std::vector<GpuSpec> gpus;
  std::vector<FpgaSpec> fpgas;
  std::vector<NicSpec> nics;
};

// One node's description.
struct NodeTemplate {
  std::map<std::string, std::string> labels;
  std::map<std::string, api::Quantity> capacity;
  // Device-plugin extended resources (added to capacity and allocatable).
  std::map<std::string, api::Quantity> extended_resources;
  DeviceProfile devices;
  std::vector<FaultSpec> faults;
};

struct NodePoolSpec {
  std::string name;
  std::string name_prefix;  // default "<name>-"
  int64_t count = 1;
  NodeTemplate node;
};

struct ClusterProfile {
  std::string name;
  bool is_node_profile = false;  // kind NodeProfile: one pool, count 1
  std::vector<NodePoolSpec> pools;
};

// A node of an expanded profile.
struct ProfileNode {
  std::string name;
  std::string pool;
  int64_t index_in_pool = 0;
  const NodeTemplate* node = nullptr;  // points into the ClusterProfile
};

// Parses a NodeProfile or ClusterProfile from YAML (or JSON) text. InvalidArgument naming the
// field path (`nodePools[1].devices.gpus[0].memory: ...`) for anything malformed.
StatusOr<ClusterProfile> ParseProfile(std::string_view text);
// The same for one document already parsed (YAML or JSON) into a JSON value.
StatusOr<ClusterProfile> ParseProfileJson(const boost::json::value& document);
// One node template (the fields of a NodeProfile or node pool: labels, capacity,
// extendedResources, devices, faults) at field path `path`, e.g. a cluster change's replacement
// equipment. InvalidArgument naming `path.field` otherwise.
StatusOr<NodeTemplate> ParseNodeTemplate(const boost::json::value& value, const std::string& path);
// Reads and parses a profile file; NotFound when it does not exist.
StatusOr<ClusterProfile> LoadProfile(const std::string& path);

// The nodes of a profile in pool order. For a NodeProfile, the one node is named
// `node_name_override` when non-empty, else metadata.name. InvalidArgument for duplicate or
// invalid node names.
StatusOr<std::vector<ProfileNode>> ExpandNodes(const ClusterProfile& profile,
                                               std::string_view node_name_override = "");

// Finds `node_name` among ExpandNodes(profile, node_name); NotFound when absent.
StatusOr<ProfileNode> FindNode(const ClusterProfile& profile, std::string_view node_name);

// Normalises a dotted version to semver: 1 to 3 numeric components, leading zeros dropped,
// missing components zero ("550.90.07" -> "550.90.7", "9.0" -> "9.0.0"). InvalidArgument for
// anything else.
StatusOr<std::string> NormalizeVersion(std::string_view text);

}  // namespace draplane::agent
