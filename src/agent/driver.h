// The node agent's driver seam: how devices are discovered, how their health is read, and what a
// prepared device hands to a container.
//
// A `Driver` is one source of devices on a node: `profile` (simulated devices from a YAML
// profile, drivers/profile/), `nvml` (NVIDIA GPUs through libnvidia-ml, drivers/nvml/) or `sysfs`
// (PCI devices by class, drivers/sysfs/). One driver may publish devices for several DRA driver
// names (the profile driver simulates `gpu.nvidia.com`, `fpga.example.com` and
// `nic.example.com` at once), so discovery returns one `Inventory` per DRA driver name.
//
// What a driver does NOT do: build ResourceSlices (slice_plan.h splits inventories into slices
// with upstream's limits), write CDI specs (cdi.h), keep the prepare checkpoint (checkpoint.h) or
// talk to the API server (agent.h). The driver only answers "which devices exist, are they
// healthy, and what does a container need to use this one".
//
// Thread-safety: a Driver is called from the owning agent's loop thread only.
// Ownership: the agent owns its drivers (`std::unique_ptr<Driver>`).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/gen/resource_v1_types.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::agent {

// A device node a container gets (CDI `containerEdits.deviceNodes[]`).
struct DeviceNode {
  std::string path;  // "/dev/nvidia0"
  std::string type;  // "c" (character) or "b" (block); empty: let the runtime stat it
  std::optional<int64_t> major;
  std::optional<int64_t> minor;

  friend bool operator==(const DeviceNode&, const DeviceNode&) = default;
};

// Edits the container runtime applies for one device (CDI `containerEdits`).
struct ContainerEdits {
  std::vector<std::string> env;  // "KEY=VALUE", in order; names unique per device
  std::vector<DeviceNode> device_nodes;
  // List-valued variables (`NVIDIA_VISIBLE_DEVICES`): the CDI writer joins the values of all
  // devices of a claim with commas into the spec-level edits, so a container that gets several
  // devices sees all of them.
  std::vector<std::pair<std::string, std::string>> list_env;

  friend bool operator==(const ContainerEdits&, const ContainerEdits&) = default;
};

// The health a driver reports for one device. An unhealthy device gets the taint
// `<driver>/unhealthy` with `taint_effect` in its slice (health.h); a recovered one loses it.
struct DeviceHealth {
  bool healthy = true;
  // Why the device is unhealthy (an XID, "fell off the bus", a profile fault's message).
  std::string message;
  // NoSchedule, NoExecute or None; empty means the agent's default (NoSchedule).
  std::string taint_effect;
  // When the device turned unhealthy (the taint's timeAdded).
  std::optional<Timestamp> since;

  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// One device as discovered.
struct DiscoveredDevice {
  // Name, attributes, capacity, consumesCounters, allowMultipleAllocations. No taints: those are
  // derived from `health` when slices are built.
  api::resourcev1::Device device;
  // The CDI class of the device (`<driver>/<class>` is the CDI kind): "gpu", "mig", "fpga",
  // "nic".
  std::string cdi_class;
  DeviceHealth health;
};

// Everything one DRA driver name offers on this node: one pool, named after the node.
struct Inventory {
  std::string driver;  // "gpu.nvidia.com"
  // Counter sets of partitionable devices (MIG); published in their own slices.
  std::vector<api::resourcev1::CounterSet> counter_sets;
  std::vector<DiscoveredDevice> devices;
};

// What the agent asks a driver to prepare: one allocated device of one claim.
struct DevicePrepareRequest {
  std::string claim_uid;
  std::string claim_namespace;
  std::string claim_name;
  std::string request;  // "gpu" or "gpu/h100" for a subrequest
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  bool admin_access = false;
  // Opaque configuration for this driver that applies to the request (class config first, then
  // claim config, as the API orders them): each the `parameters` object.
  std::vector<const api::RawJson*> config;
};

// What a prepared device gives the agent.
struct PreparedDevice {
  // The CDI class (`<driver>/<class>` is the CDI kind of the device's spec): "gpu", "mig", ...
  std::string cdi_class;
  ContainerEdits edits;
  // NICs: the network data the agent writes into the claim's `status.devices[].networkData`.
  std::optional<api::resourcev1::NetworkDeviceData> network;

  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

// What an attach of a device with binding conditions (KEP-5007) came to.
struct AttachResult {
  enum class Kind {
    kPending,   // not yet: ask again after `retry_after`
    kAttached,  // the device's bindingConditions are met
    kFailed,    // the attach failed for good (`message`); the device is not to be picked again
  };
  Kind kind = Kind::kAttached;
  std::string message;
  Duration retry_after{0};
};

class Driver {
 public:
  virtual ~Driver() = default;

  // "profile", "nvml" or "sysfs".
  virtual std::string kind() const = 0;

  // The DRA driver names this driver may publish under. The agent manages (creates, updates,
  // deletes) the node's slices of exactly these drivers and leaves other drivers' slices alone.
  virtual std::vector<std::string> DriverNames() const = 0;

  // Discovers the devices and their current health. Called on start and then periodically;
  // the result must be deterministic for an unchanged node (same order, same names).
  // Unavailable when the device source cannot be read right now (the agent keeps what it last
  // published); an empty vector means "no devices".
  virtual StatusOr<std::vector<Inventory>> Discover() = 0;

  // Prepares one device for a claim and returns the driver's container edits (and network data)
  // for it, after applying the opaque `config`. Must be idempotent: preparing a device again for
  // the same claim returns the same result. Errors are classified by failure.h:
  // InvalidArgument / FailedPrecondition / NotFound are terminal (bad config, device gone),
  // Unavailable / ResourceExhausted / DeadlineExceeded are retried with backoff.
  virtual StatusOr<PreparedDevice> PrepareDevice(const DevicePrepareRequest& request) = 0;

  // Undoes PrepareDevice. Idempotent: unpreparing a device that is not prepared is OK.
  virtual Status UnprepareDevice(const DevicePrepareRequest& request) = 0;

  // Devices published with bindingConditions must be attached before their Pod is bound
  // (KEP-5007): the agent calls this for every such device allocated to a Pod nominated to the
  // node until it answers kAttached or kFailed, and reports the answer as the device's
  // conditions in the claim's status. Drivers without such devices never see the call.
  virtual AttachResult AttachDevice(const DevicePrepareRequest& request) {
    (void)request;
    return AttachResult{};
  }
};

}  // namespace draplane::agent
