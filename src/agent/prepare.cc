#include "agent/prepare.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "agent/cdi.h"
#include "agent/internal/files.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace {

// Writing local state failed: worth retrying, not the claim's fault.
Status LocalStateError(const Status& status) {
  return UnavailableError("node state: " + std::string(status.message()));
}

// What CdiSpecFileName names for one of `drivers`: "<driver>_<class>_<claim-uid>.json".
bool IsSpecFileOf(const std::map<std::string, Driver*>& drivers, const std::string& name) {
  for (const auto& [driver, _] : drivers) {
    if (name.size() > driver.size() + 1 && name.starts_with(driver) && name[driver.size()] == '_' &&
        name.ends_with(".json")) {
      return true;
    }
  }
  return false;
}

bool SameDevices(const ClaimRecord& record, const std::vector<AllocatedDevice>& devices) {
  if (record.devices.size() != devices.size()) return false;
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceRecord& r = record.devices[i];
    const AllocatedDevice& d = devices[i];
    if (r.request != d.request || r.driver != d.driver || r.pool != d.pool ||
        r.device != d.device || r.share_id != d.share_id) {
      return false;
    }
  }
  return true;
}

}  // namespace

Preparer::Preparer(PreparerOptions options, std::map<std::string, Driver*> drivers)
    : options_(std::move(options)), drivers_(std::move(drivers)) {}

StatusOr<std::unique_ptr<internal::FileLock>> Preparer::Share() {
  if (!options_.shared_state) return std::unique_ptr<internal::FileLock>();
  Status made = internal::MakeDirs(options_.state_dir);
  if (!made.ok()) return LocalStateError(made);
  StatusOr<std::unique_ptr<internal::FileLock>> lock =
      internal::LockFile(options_.state_dir + "/serialize.lock");
  if (!lock.ok()) return LocalStateError(lock.status());
  if (recovered_) {
    StatusOr<Checkpoint> loaded = LoadCheckpoint(checkpoint_path());
    if (!loaded.ok()) return loaded.status();
    checkpoint_ = std::move(*loaded);
    checkpoint_.node = options_.node_name;
  }
  return lock;
}

Status Preparer::Save() {
  Status s = SaveCheckpoint(checkpoint_path(), checkpoint_);
  return s.ok() ? s : LocalStateError(s);
}

DevicePrepareRequest Preparer::RequestFor(const std::string& uid, const ClaimRecord& record,
                                          const AllocatedDevice& device) const {
  return DevicePrepareRequest{.claim_uid = uid,
                              .claim_namespace = record.namespace_,
                              .claim_name = record.name,
                              .request = device.request,
                              .driver = device.driver,
                              .pool = device.pool,
                              .device = device.device,
                              .share_id = device.share_id,
                              .admin_access = device.admin_access,
                              .config = device.config};
}

Status Preparer::CleanUp(const std::string& uid, const ClaimRecord& record) {
  Status first;
  for (const DeviceRecord& d : record.devices) {
    auto driver = drivers_.find(d.driver);
    if (driver == drivers_.end()) continue;  // a driver no longer configured holds nothing
    AllocatedDevice device{.request = d.request,
                           .driver = d.driver,
                           .pool = d.pool,
                           .device = d.device,
                           .share_id = d.share_id,
                           .admin_access = false,
                           .config = {}};
    Status s = driver->second->UnprepareDevice(RequestFor(uid, record, device));
    if (!s.ok() && first.ok()) first = s;
  }
  for (const std::string& spec : record.cdi_specs) {
    Status s = internal::RemoveFile(spec);
    if (!s.ok() && first.ok()) first = s;
  }
  // A started record lists no specs yet; a crash may have left some behind.
  StatusOr<std::vector<std::string>> files = internal::ListFiles(cdi_dir());
  if (files.ok()) {
    const std::string suffix = "_" + uid + ".json";
    for (const std::string& name : *files) {
      if (name.size() > suffix.size() && name.ends_with(suffix)) {
        Status s = internal::RemoveFile(cdi_dir() + "/" + name);
        if (!s.ok() && first.ok()) first = s;
      }
    }
  }
  return first;
}

Status Preparer::Recover() {
  Status made = internal::MakeDirs(cdi_dir());
  if (!made.ok()) return made;
  DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<internal::FileLock> lock, Share());
  DRAPLANE_ASSIGN_OR_RETURN(checkpoint_, LoadCheckpoint(checkpoint_path()));
  if (!checkpoint_.node.empty() && checkpoint_.node != options_.node_name) {
    return FailedPreconditionError("state dir " + options_.state_dir + " belongs to node " +
                                   checkpoint_.node + ", not " + options_.node_name);
  }
  checkpoint_.node = options_.node_name;
  recovered_ = true;
  // 1. Half-done prepares.
  std::vector<std::string> started;
  for (const auto& [uid, record] : checkpoint_.claims) {
    if (record.state == PrepareState::kStarted) started.push_back(uid);
  }
  for (const std::string& uid : started) {
    log::Info("node {}: cleaning up claim {} ({}/{}) whose prepare was interrupted",
              options_.node_name, uid, checkpoint_.claims[uid].namespace_,
              checkpoint_.claims[uid].name);
    DRAPLANE_RETURN_IF_ERROR(CleanUp(uid, checkpoint_.claims[uid]));
    checkpoint_.claims.erase(uid);
  }
  // 2. Our spec files nobody records. Known by file name: the directory may be spelled otherwise
  // than when they were recorded (a trailing slash, relative then absolute, /var/run for /run),
  // and deleting a live claim's spec leaves its containers unable to start.
  std::set<std::string> known;
  for (const auto& [uid, record] : checkpoint_.claims) {
    for (const std::string& spec : record.cdi_specs) {
      known.insert(std::filesystem::path(spec).filename().string());
    }
  }
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<std::string> files, internal::ListFiles(cdi_dir()));
  for (const std::string& name : files) {
    const std::string path = cdi_dir() + "/" + name;
    if (known.count(name) > 0 || !IsSpecFileOf(drivers_, name)) continue;
    log::Info("node {}: removing orphaned CDI spec {}", options_.node_name, path);
    DRAPLANE_RETURN_IF_ERROR(internal::RemoveFile(path));
  }
  return Save();
}

bool Preparer::SpecsPresent(const ClaimRecord& record) const {
  for (const std::string& spec : record.cdi_specs) {
    std::error_code error;
    if (!std::filesystem::exists(
            std::filesystem::path(cdi_dir()) / std::filesystem::path(spec).filename(), error)) {
      return false;
    }
  }
  return true;
}

bool Preparer::IsPrepared(const ClaimToPrepare& claim) const {
  auto it = checkpoint_.claims.find(claim.uid);
  return it != checkpoint_.claims.end() && it->second.state == PrepareState::kCompleted &&
         SameDevices(it->second, claim.devices);
}

std::string Preparer::StillPreparedForAnother(const ClaimToPrepare& claim) const {
  for (const AllocatedDevice& d : claim.devices) {
    if (d.admin_access) continue;
    for (const auto& [uid, record] : checkpoint_.claims) {
      if (uid == claim.uid) continue;
      for (const DeviceRecord& r : record.devices) {
        if (r.admin_access || r.driver != d.driver || r.pool != d.pool || r.device != d.device) {
          continue;
        }
        // Shares of a multi-allocatable device coexist; an exclusive use excludes any other.
        if (r.share_id.has_value() && d.share_id.has_value()) continue;
        return "device " + d.driver + "/" + d.pool + "/" + d.device +
               " is still prepared for claim " + record.namespace_ + "/" + record.name + " (" +
               uid + ")";
      }
    }
  }
  return "";
}

StatusOr<ClaimRecord> Preparer::Prepare(const ClaimToPrepare& claim) {
  if (!recovered_) return FailedPreconditionError("Preparer::Recover was not called");
  DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<internal::FileLock> lock, Share());
  // 1. Already prepared?
  if (auto it = checkpoint_.claims.find(claim.uid); it != checkpoint_.claims.end()) {
    // A spec file gone since (removed by hand, a cleared CDI directory) is written again: the
    // kubelet would hand the container runtime CDI IDs that resolve to nothing.
    if (it->second.state == PrepareState::kCompleted && SameDevices(it->second, claim.devices) &&
        SpecsPresent(it->second)) {
      return it->second;
    }
    // 2. Stale record: clean up first.
    Status cleaned = CleanUp(claim.uid, it->second);
    if (!cleaned.ok()) {
      return InternalError("cleaning up the previous preparation of claim " + claim.namespace_ +
                           "/" + claim.name + ": " + std::string(cleaned.message()));
    }
    checkpoint_.claims.erase(it);
    DRAPLANE_RETURN_IF_ERROR(Save());
  }
  for (const AllocatedDevice& d : claim.devices) {
    if (drivers_.count(d.driver) == 0) {
      return FailedPreconditionError("no driver for " + d.driver + " on node " +
                                     options_.node_name);
    }
  }
  // 3. Started.
  ClaimRecord record;
  record.namespace_ = claim.namespace_;
  record.name = claim.name;
  record.state = PrepareState::kStarted;
  for (const AllocatedDevice& d : claim.devices) {
    record.devices.push_back(DeviceRecord{.request = d.request,
                                          .driver = d.driver,
                                          .pool = d.pool,
                                          .device = d.device,
                                          .share_id = d.share_id,
                                          .admin_access = d.admin_access,
                                          .cdi_device_ids = {},
                                          .network = {}});
  }
  checkpoint_.claims[claim.uid] = record;
  DRAPLANE_RETURN_IF_ERROR(Save());

  // 4. Drivers. Roll back on failure.
  std::vector<PreparedDevice> prepared;
  auto roll_back = [&](const Status& cause) -> Status {
    Status undo;
    for (size_t i = 0; i < prepared.size(); ++i) {
      const AllocatedDevice& d = claim.devices[i];
      Status s = drivers_[d.driver]->UnprepareDevice(RequestFor(claim.uid, record, d));
      if (!s.ok() && undo.ok()) undo = s;
    }
    for (const std::string& spec : record.cdi_specs) {
      Status s = internal::RemoveFile(spec);
      if (!s.ok() && undo.ok()) undo = s;
    }
    if (!undo.ok()) {
      return InternalError(std::string(cause.message()) +
                           "; rolling back failed, needs cleanup: " + std::string(undo.message()));
    }
    checkpoint_.claims.erase(claim.uid);
    Status saved = Save();
    if (!saved.ok())
      return InternalError(std::string(cause.message()) + "; " + std::string(saved.message()));
    return cause;
  };
  for (const AllocatedDevice& d : claim.devices) {
    StatusOr<PreparedDevice> p =
        drivers_[d.driver]->PrepareDevice(RequestFor(claim.uid, record, d));
    if (!p.ok()) {
      return roll_back(p.status().WithPrefix("prepare " + d.driver + "/" + d.device));
    }
    prepared.push_back(std::move(*p));
  }

  // 5. CDI specs, one per kind, in first-seen order.
  std::vector<CdiSpec> specs;
  std::map<std::string, size_t> spec_index;
  std::map<std::string, std::vector<std::string>> list_env_order;  // kind -> names in order
  std::vector<std::map<std::string, std::string>> list_env;        // per spec: name -> joined
  for (size_t i = 0; i < claim.devices.size(); ++i) {
    const AllocatedDevice& d = claim.devices[i];
    const std::string kind = d.driver + "/" + prepared[i].cdi_class;
    auto [it, inserted] = spec_index.emplace(kind, specs.size());
    if (inserted) {
      CdiSpec spec;
      spec.kind = kind;
      spec.annotations["draplane.dev/claim"] = claim.namespace_ + "/" + claim.name;
      spec.annotations["draplane.dev/claim-uid"] = claim.uid;
      specs.push_back(std::move(spec));
      list_env.emplace_back();
    }
    CdiSpec& spec = specs[it->second];
    CdiDevice device;
    device.name = claim.uid + "-" + d.device;
    if (d.share_id) device.name += "-" + d.share_id->substr(0, 8);
    device.edits.env = prepared[i].edits.env;
    device.edits.device_nodes = prepared[i].edits.device_nodes;
    spec.devices.push_back(std::move(device));
    std::vector<std::pair<std::string, std::string>> vars = prepared[i].edits.list_env;
    vars.emplace_back(RequestEnvName(d.request), d.device);
    for (const auto& [name, value] : vars) {
      std::string& joined = list_env[it->second][name];
      if (joined.empty()) {
        list_env_order[kind].push_back(name);
        joined = value;
      } else {
        joined += "," + value;
      }
    }
    record.devices[i].cdi_device_ids = {spec.kind + "=" + spec.devices.back().name};
    record.devices[i].network = prepared[i].network;
  }
  for (size_t s = 0; s < specs.size(); ++s) {
    for (const std::string& name : list_env_order[specs[s].kind]) {
      specs[s].edits.env.push_back(name + "=" + list_env[s][name]);
    }
    StatusOr<std::string> path = WriteCdiSpec(cdi_dir(), specs[s], claim.uid);
    if (!path.ok()) return roll_back(LocalStateError(path.status()));
    record.cdi_specs.push_back(*path);
  }
  record.state = PrepareState::kCompleted;
  checkpoint_.claims[claim.uid] = record;
  Status saved = Save();
  if (!saved.ok()) return roll_back(saved);
  return record;
}

Status Preparer::Unprepare(const std::string& claim_uid, std::string_view driver) {
  if (!recovered_) return FailedPreconditionError("Preparer::Recover was not called");
  DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<internal::FileLock> lock, Share());
  auto it = checkpoint_.claims.find(claim_uid);
  if (it == checkpoint_.claims.end()) return Status::Ok();
  if (!driver.empty() && std::none_of(it->second.devices.begin(), it->second.devices.end(),
                                      [&](const DeviceRecord& d) { return d.driver == driver; })) {
    return Status::Ok();
  }
  Status cleaned = CleanUp(claim_uid, it->second);
  if (!cleaned.ok()) return cleaned;
  checkpoint_.claims.erase(it);
  return Save();
}

}  // namespace draplane::agent
