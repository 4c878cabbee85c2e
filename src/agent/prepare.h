// Preparing and unpreparing claims on the node: the part of a DRA kubelet plugin that does not
// talk to the API server (upstream kubelet gRPC NodePrepareResources / NodeUnprepareResources and
// the kubeletplugin helper, §4.4 of docs/upstream-dra.md).
//
// Prepare(claim), in steps:
//   1. A claim recorded as completed with the same devices is already prepared: return the
//      recorded result without calling a driver (idempotency; repeated calls are normal).
//   2. A claim recorded as started (a previous attempt died half-way) or completed with other
//      devices (deallocated and allocated again) is cleaned up first: unprepare its devices,
//      remove its CDI specs, drop the record.
//   3. Record the claim as started with the devices about to be prepared; save the checkpoint.
//   4. Ask each device's driver to prepare it (with the opaque config that applies). On a
//      failure, unprepare what this attempt prepared and drop the record; the error keeps the
//      driver's classification (failure.h). If that rollback fails too, the record stays
//      "started" and the error is classified needs-cleanup.
//   5. Write one CDI spec per CDI kind (cdi.h); record the CDI device IDs, the network data and
//      the spec paths; mark the claim completed; save the checkpoint.
// Unprepare(uid): unprepare every recorded device, remove the specs, drop the record. Unknown
// claims are fine (idempotent).
// Recover(): after a restart, clean up every claim still "started" (as in step 2) and remove
// this preparer's CDI spec files (`<driver>_*` of its drivers, cdi.h) that no record mentions —
// so a crash neither leaks nor double-prepares. Files of other drivers in a shared CDI directory
// (`/var/run/cdi`) are left alone.
//
// Shared state (`shared_state`, the kubelet plugin): two processes may use one state dir — the old
// and the new instance of a rolling update, which the kubelet may call in any order. Recover,
// Prepare and Unprepare then hold an exclusive lock on `<state_dir>/serialize.lock` and re-read
// the checkpoint first, so each call sees what the other instance did (the Go helper's
// serialisation with `serialize.lock` when rolling updates are on).
//
// Thread-safety: not thread-safe; owned by the agent's loop thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/checkpoint.h"
#include "agent/driver.h"
#include "common/status.h"

namespace draplane::agent {

namespace internal {
class FileLock;
}  // namespace internal

// One allocated device of a claim that this node's drivers serve.
struct AllocatedDevice {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  bool admin_access = false;
  // Opaque parameters that apply (class config first, then claim config); owned by the caller.
  std::vector<const api::RawJson*> config;
};

struct ClaimToPrepare {
  std::string uid;
  std::string namespace_;
  std::string name;
  std::vector<AllocatedDevice> devices;
};

struct PreparerOptions {
  // Holds checkpoint.json (and cdi/ unless `cdi_dir` is set). Created if missing.
  std::string state_dir;
  std::string node_name;
  // Where CDI specs go; empty: `<state_dir>/cdi`. On a real node the container runtime's spec
  // directory (`/var/run/cdi`), which other drivers share.
  std::string cdi_dir{};
  // Another process may use the same state dir (see above).
  bool shared_state = false;
};

class Preparer {
 public:
  // `drivers` maps DRA driver names to the Driver serving them; the drivers must outlive the
  // preparer.
  Preparer(PreparerOptions options, std::map<std::string, Driver*> drivers);

  // Loads the checkpoint and cleans up after a crash (see above). InvalidArgument for a corrupt
  // checkpoint; errors of the cleanup otherwise.
  Status Recover();

  // Prepares a claim (see above); returns its completed record.
  StatusOr<ClaimRecord> Prepare(const ClaimToPrepare& claim);
  // Unprepares a claim; OK when it is not prepared.
  // With `driver`, only a claim holding a device of that driver: the kubelet's call through that
  // driver's plugin socket, which must not release another driver's claim.
  Status Unprepare(const std::string& claim_uid, std::string_view driver = {});
  // The claim is recorded as prepared with exactly these devices (Prepare would not call a
  // driver).
  bool IsPrepared(const ClaimToPrepare& claim) const;
  // Why `claim` must not be prepared yet: one of its devices is still prepared for another claim
  // in a way that excludes this use (neither is admin access, and not both are shares of a
  // multi-allocatable device) — "device <driver>/<pool>/<device> is still prepared for claim
  // <ns>/<name> (<uid>)"; "" when nothing stands in the way. A force-deleted Pod's claim can be
  // deallocated and its device allocated anew before this node has unprepared it
  // (kubernetes/kubernetes#141471); preparing it then would hand one device to two containers.
  std::string StillPreparedForAnother(const ClaimToPrepare& claim) const;

  const Checkpoint& checkpoint() const { return checkpoint_; }
  std::string cdi_dir() const {
    return options_.cdi_dir.empty() ? options_.state_dir + "/cdi" : options_.cdi_dir;
  }
  std::string checkpoint_path() const { return options_.state_dir + "/checkpoint.json"; }

 private:
  // Whether every CDI spec file of `record` is in the CDI directory.
  bool SpecsPresent(const ClaimRecord& record) const;

  // With shared state: the lock on the state dir, and the checkpoint re-read under it; nullptr
  // without shared state.
  StatusOr<std::unique_ptr<internal::FileLock>> Share();
  DevicePrepareRequest RequestFor(const std::string& uid, const ClaimRecord& record,
                                  const AllocatedDevice& device) const;
  // Unprepares the devices of a record and removes its specs; the first error, after trying all.
  Status CleanUp(const std::string& uid, const ClaimRecord& record);
  Status Save();

  PreparerOptions options_;
  std::map<std::string, Driver*> drivers_;
  Checkpoint checkpoint_;
  bool recovered_ = false;
};

}  // namespace draplane::agent
