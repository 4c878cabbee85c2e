// The `profile` driver: simulated devices from a NodeProfile / ClusterProfile (agent/profile.h).
//
// Devices (deterministic for a node name and profile; docs/design/agent.md lists every
// attribute):
//   - GPUs (`gpu.nvidia.com`): `gpu-<i>` with NVIDIA's attribute names (type "gpu", uuid,
//     productName, brand, architecture, cudaComputeCapability, driverVersion, cudaDriverVersion
//     as versions, pcieBusID, resource.kubernetes.io/pcieRoot) and capacity `memory`.
//     A GPU with `mig` becomes partitionable: a counter set `gpu-<i>-counter-set` (memory,
//     multiprocessors, one `memory-slice-<k>` per memory slice) and devices consuming it — the
//     whole GPU (every counter) and one `gpu-<i>-mig-<profile>-<start>` per profile placement
//     (type "mig", profile, parentUUID, the parent's attributes), so only placements that do not
//     overlap can be allocated together.
//   - FPGAs (`fpga.example.com`): `fpga-<i>`, type "fpga", vendor, model, bitstreamFamily.
//   - NICs (`nic.example.com`): `nic-<i>`, type "nic", model, rdma, capacity `bandwidth`; a
//     `shared` NIC sets allowMultipleAllocations and the bandwidth request policy.
// GPU `i` and NIC `i` share a PCIe root, so `matchAttribute: resource.kubernetes.io/pcieRoot`
// pairs them.
//
// Fabric-attached GPUs and FPGAs (`attach:`, profile.h) are published with binding conditions
// (<driver>/fabric-attached, failure <driver>/fabric-attach-failed) and bindsToNode;
// AttachDevice plays the fabric manager: pending for `after` from the first call for a claim,
// then attached, failed (and the device reported unhealthy, so that its taint keeps it from being
// picked again) or for ever pending.
//
// Faults: an `unhealthy` fault makes its device unhealthy from `after` (counted from when the
// fault was first loaded, on the injected Clock) for `for` (or for ever); prepare faults fail
// PrepareDevice (terminal: FailedPrecondition; retryable: Unavailable `times` times; crash:
// the process exits with code 137 after recording the device as prepared, once per state
// dir — or, without `crash_exits_process`, an Unavailable error); an `unprepare: retryable`
// fault fails UnprepareDevice with Unavailable `times` times.
//
// The profile file is re-read when it changes, so editing it injects faults into a running
// agent. Prepared devices are recorded in `<state_dir>/profile-devices.json` (when a state dir is
// given), which is how tests see that a restart neither leaks nor double-prepares a device.
//
// Thread-safety: called from one agent loop thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/driver.h"
#include "agent/profile.h"
#include "common/clock.h"

namespace draplane::agent {

struct ProfileDriverOptions {
  std::string node_name;
  // Re-read on change when set; otherwise `node` is used as is.
  std::string profile_path;
  std::optional<NodeTemplate> node;
  const Clock* clock = nullptr;  // required; must outlive the driver
  // Where prepared-device state and fired crash faults are remembered; empty: in memory only.
  std::string state_dir;
  // A `prepare: crash` fault ends the process (standalone `draplane agent`); otherwise it is a
  // retryable error (in-process agents must not take the server down).
  bool crash_exits_process = false;
};

// The binding conditions of fabric-attached devices of `driver` (KEP-5007).
std::string FabricAttachedCondition(std::string_view driver);
std::string FabricAttachFailedCondition(std::string_view driver);

// The inventories a node template yields, without faults applied (all devices healthy).
std::vector<Inventory> BuildProfileInventories(std::string_view node_name,
                                               const NodeTemplate& node);

// A deterministic UUID-shaped identifier ("GPU-1b4e28ba-2fa1-41d2-883f-0016d3cca427" with
// `prefix` "GPU-") derived from `seed`.
std::string DerivedUuid(std::string_view prefix, std::string_view seed);

class ProfileDriver final : public Driver {
 public:
  // InvalidArgument when neither a readable profile (containing the node) nor a template is
  // given, or no clock.
  static StatusOr<std::unique_ptr<ProfileDriver>> Create(ProfileDriverOptions options);

  std::string kind() const override { return "profile"; }
  // gpu.nvidia.com, fpga.example.com and nic.example.com.
  std::vector<std::string> DriverNames() const override;
  StatusOr<std::vector<Inventory>> Discover() override;
  StatusOr<PreparedDevice> PrepareDevice(const DevicePrepareRequest& request) override;
  Status UnprepareDevice(const DevicePrepareRequest& request) override;
  AttachResult AttachDevice(const DevicePrepareRequest& request) override;

  // Device key "<driver>/<device>" -> claim UIDs it is prepared for exclusively: admin-access
  // uses are not recorded (tests, metrics).
  const std::map<std::string, std::set<std::string>>& prepared() const { return prepared_; }

 private:
  explicit ProfileDriver(ProfileDriverOptions options);
  // Re-reads the profile file when its size or modification time changed.
  void MaybeReload();
  void SetTemplate(NodeTemplate node);
  const FaultSpec* FindFault(FaultKind kind, std::string_view driver,
                             std::string_view device) const;
  // A retryable (un)prepare fault of the device that has failures left: Unavailable, counting one.
  Status RetryableFault(FaultKind kind, const DevicePrepareRequest& request);
  // Adds the request's claim to the device's exclusive holders unless it has admin access.
  void RecordPrepared(const std::string& key, const DevicePrepareRequest& request);
  Status LoadState();
  Status SaveState();
  // Re-reads the state file when another process (the other instance of a kubelet plugin's
  // rolling update, prepare.h "shared state") wrote it since this driver last did.
  Status ReloadStateIfChanged();

  ProfileDriverOptions options_;
  NodeTemplate node_;
  std::vector<Inventory> catalog_;  // BuildProfileInventories(node_)
  std::string file_signature_;
  // FaultSpec::Key() -> when the fault was first loaded.
  std::map<std::string, Timestamp> fault_first_seen_;
  // FaultSpec::Key() -> prepares failed so far (retryable faults).
  std::map<std::string, int64_t> fault_failures_;
  std::map<std::string, std::set<std::string>> prepared_;
  std::string state_signature_;  // internal::FileSignature of the state file we last read or wrote
  std::set<std::string> fired_crashes_;
  // "<claim uid>/<driver>/<device>" -> when the attach for that claim began.
  std::map<std::string, Timestamp> attach_started_;
  // "<driver>/<device>" -> why its fabric attach failed (reported unhealthy from then on).
  std::map<std::string, std::string> attach_failed_;
};

}  // namespace draplane::agent
