#include "agent/drivers/profile/profile_driver.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "agent/internal/attributes.h"
#include "agent/internal/files.h"
#include "agent/internal/opaque_config.h"
#include "api/codec/field_reader.h"
#include "api/codec/json.h"
#include "api/validation/names.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;

namespace {

using internal::BoolAttr;
using internal::kPcieRootAttribute;
using internal::StringAttr;
using internal::VersionAttr;

constexpr std::string_view kStateFile = "profile-devices.json";

uint64_t Fnv1a(std::string_view text, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

rv1::DeviceCapacity Capacity(const api::Quantity& q) {
  rv1::DeviceCapacity c;
  c.value = q;
  return c;
}

rv1::Counter CounterOf(const api::Quantity& q) {
  rv1::Counter c;
  c.value = q;
  return c;
}

std::string Hex(uint64_t value, int digits) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

// PCIe topology of the simulated node: device `index` of a kind sits on root `index` (GPU `i`
// and NIC `i` share a root); FPGAs use roots after 0x80.
std::string PcieRoot(int64_t root_index) {
  return "pci" + Hex(static_cast<uint64_t>(root_index / 8), 4) + ":" +
         Hex(static_cast<uint64_t>(0x10 + (root_index % 8) * 0x10), 2);
}
std::string PcieBusId(int64_t root_index, int function_slot) {
  return Hex(static_cast<uint64_t>(root_index / 8), 4) + ":" +
         Hex(static_cast<uint64_t>(0x10 + (root_index % 8) * 0x10 + function_slot), 2) + ":00.0";
}

std::string MigProfileSlug(std::string_view profile) {
  std::string out;
  for (char c : profile) {
    out += (std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-');
  }
  return out;
}

// Fabric-attached devices carry binding conditions and bind to the node they are attached to.
void MarkFabricAttached(std::string_view driver, const std::optional<AttachSpec>& attach,
                        rv1::Device* device) {
  if (!attach) return;
  device->binding_conditions = {FabricAttachedCondition(driver)};
  device->binding_failure_conditions = {FabricAttachFailedCondition(driver)};
  device->binds_to_node = true;
}

void AddGpus(std::string_view node_name, const NodeTemplate& node, Inventory* inv) {
  int64_t index = 0;
  for (const GpuSpec& spec : node.devices.gpus) {
    for (int64_t k = 0; k < spec.count; ++k, ++index) {
      const std::string name = "gpu-" + std::to_string(index);
      const std::string uuid = k < static_cast<int64_t>(spec.uuids.size())
                                   ? spec.uuids[static_cast<size_t>(k)]
                                   : DerivedUuid("GPU-", std::string(node_name) + "/" + name);
      const std::string bus_id = PcieBusId(index, 1);
      std::map<std::string, rv1::DeviceAttribute, std::less<>> common;
      common["productName"] = StringAttr(spec.product_name);
      common["brand"] = StringAttr(spec.brand);
      common["architecture"] = StringAttr(spec.architecture);
      common["cudaComputeCapability"] = VersionAttr(spec.cuda_compute_capability);
      common["driverVersion"] = VersionAttr(spec.driver_version);
      if (!spec.cuda_driver_version.empty()) {
        common["cudaDriverVersion"] = VersionAttr(spec.cuda_driver_version);
      }
      common["pcieBusID"] = StringAttr(bus_id);
      common[std::string(kPcieRootAttribute)] = StringAttr(PcieRoot(index));

      DiscoveredDevice gpu;
      gpu.cdi_class = "gpu";
      gpu.device.name = name;
      gpu.device.attributes = common;
      gpu.device.attributes["type"] = StringAttr("gpu");
      gpu.device.attributes["uuid"] = StringAttr(uuid);
      gpu.device.capacity["memory"] = Capacity(spec.memory);
      MarkFabricAttached(kGpuDriverName, spec.attach, &gpu.device);
      if (!spec.mig) {
        inv->devices.push_back(std::move(gpu));
        continue;
      }
      // Partitionable: a counter set for the physical GPU and devices consuming it.
      const MigSpec& mig = *spec.mig;
      rv1::CounterSet set;
      set.name = name + "-counter-set";
      set.counters["memory"] = CounterOf(spec.memory);
      if (spec.multiprocessors > 0) {
        set.counters["multiprocessors"] = CounterOf(api::Quantity::FromInt64(spec.multiprocessors));
      }
      for (int64_t s = 0; s < mig.memory_slices; ++s) {
        set.counters["memory-slice-" + std::to_string(s)] = CounterOf(api::Quantity::FromInt64(1));
      }
      if (mig.whole_gpu) {
        rv1::DeviceCounterConsumption all;
        all.counter_set = set.name;
        all.counters = set.counters;
        gpu.device.consumes_counters.push_back(std::move(all));
        inv->devices.push_back(std::move(gpu));
      }
      for (const MigProfileSpec& profile : mig.profiles) {
        for (int64_t start : profile.placements) {
          DiscoveredDevice part;
          part.cdi_class = "mig";
          part.device.name =
              name + "-mig-" + MigProfileSlug(profile.name) + "-" + std::to_string(start);
          part.device.attributes = common;
          part.device.attributes["type"] = StringAttr("mig");
          part.device.attributes["uuid"] =
              StringAttr(DerivedUuid("MIG-", std::string(node_name) + "/" + part.device.name));
          part.device.attributes["parentUUID"] = StringAttr(uuid);
          part.device.attributes["profile"] = StringAttr(profile.name);
          part.device.capacity["memory"] = Capacity(profile.memory);
          rv1::DeviceCounterConsumption use;
          use.counter_set = set.name;
          use.counters["memory"] = CounterOf(profile.memory);
          if (spec.multiprocessors > 0) {
            part.device.capacity["multiprocessors"] =
                Capacity(api::Quantity::FromInt64(profile.multiprocessors));
            use.counters["multiprocessors"] =
                CounterOf(api::Quantity::FromInt64(profile.multiprocessors));
          }
          for (int64_t s = start; s < start + profile.memory_slices; ++s) {
            use.counters["memory-slice-" + std::to_string(s)] =
                CounterOf(api::Quantity::FromInt64(1));
          }
          part.device.consumes_counters.push_back(std::move(use));
          inv->devices.push_back(std::move(part));
        }
      }
      inv->counter_sets.push_back(std::move(set));
    }
  }
}

void AddFpgas(const NodeTemplate& node, Inventory* inv) {
  int64_t index = 0;
  for (const FpgaSpec& spec : node.devices.fpgas) {
    for (int64_t k = 0; k < spec.count; ++k, ++index) {
      DiscoveredDevice d;
      d.cdi_class = "fpga";
      d.device.name = "fpga-" + std::to_string(index);
      d.device.attributes["type"] = StringAttr("fpga");
      if (!spec.vendor.empty()) d.device.attributes["vendor"] = StringAttr(spec.vendor);
      d.device.attributes["model"] = StringAttr(spec.model);
      d.device.attributes["bitstreamFamily"] = StringAttr(spec.bitstream_family);
      d.device.attributes[std::string(kPcieRootAttribute)] = StringAttr(PcieRoot(16 + index));
      if (spec.memory) d.device.capacity["memory"] = Capacity(*spec.memory);
      MarkFabricAttached(kFpgaDriverName, spec.attach, &d.device);
      inv->devices.push_back(std::move(d));
    }
  }
}

void AddNics(const NodeTemplate& node, Inventory* inv) {
  int64_t index = 0;
  for (const NicSpec& spec : node.devices.nics) {
    for (int64_t k = 0; k < spec.count; ++k, ++index) {
      DiscoveredDevice d;
      d.cdi_class = "nic";
      d.device.name = "nic-" + std::to_string(index);
      d.device.attributes["type"] = StringAttr("nic");
      d.device.attributes["model"] = StringAttr(spec.model);
      d.device.attributes["rdma"] = BoolAttr(spec.rdma);
      d.device.attributes["interfaceName"] = StringAttr("net" + std::to_string(index));
      d.device.attributes[std::string(kPcieRootAttribute)] = StringAttr(PcieRoot(index));
      rv1::DeviceCapacity bandwidth = Capacity(spec.bandwidth);
      if (spec.shared) {
        d.device.allow_multiple_allocations = true;
        if (spec.request_policy) {
          rv1::CapacityRequestPolicy policy;
          policy.default_value = spec.request_policy->default_value;
          if (spec.request_policy->min) {
            rv1::CapacityRequestPolicyRange range;
            range.min = spec.request_policy->min;
            range.max = spec.request_policy->max;
            range.step = spec.request_policy->step;
            policy.valid_range = std::move(range);
          }
          bandwidth.request_policy = std::move(policy);
        }
      }
      d.device.capacity["bandwidth"] = std::move(bandwidth);
      inv->devices.push_back(std::move(d));
    }
  }
}

const DiscoveredDevice* FindDevice(const std::vector<Inventory>& inventories,
                                   std::string_view driver, std::string_view device) {
  for (const Inventory& inv : inventories) {
    if (inv.driver != driver) continue;
    for (const DiscoveredDevice& d : inv.devices) {
      if (d.device.name == device) return &d;
    }
  }
  return nullptr;
}

std::string AttrString(const DiscoveredDevice& d, std::string_view name) {
  auto it = d.device.attributes.find(name);
  if (it == d.device.attributes.end() || !it->second.string_value) return "";
  return *it->second.string_value;
}

}  // namespace

std::string FabricAttachedCondition(std::string_view driver) {
  return std::string(driver) + "/fabric-attached";
}

std::string FabricAttachFailedCondition(std::string_view driver) {
  return std::string(driver) + "/fabric-attach-failed";
}

std::string DerivedUuid(std::string_view prefix, std::string_view seed) {
  const uint64_t a = Fnv1a(seed, 14695981039346656037ULL);
  const uint64_t b = Fnv1a(seed, 0x9e3779b97f4a7c15ULL);
  const std::string hex = Hex(a, 16) + Hex(b, 16);
  return std::string(prefix) + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) +
         "-" + hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

std::vector<Inventory> BuildProfileInventories(std::string_view node_name,
                                               const NodeTemplate& node) {
  std::vector<Inventory> out;
  Inventory gpus{.driver = std::string(kGpuDriverName), .counter_sets = {}, .devices = {}};
  AddGpus(node_name, node, &gpus);
  Inventory fpgas{.driver = std::string(kFpgaDriverName), .counter_sets = {}, .devices = {}};
  AddFpgas(node, &fpgas);
  Inventory nics{.driver = std::string(kNicDriverName), .counter_sets = {}, .devices = {}};
  AddNics(node, &nics);
  for (Inventory* inv : {&gpus, &fpgas, &nics}) {
    if (!inv->devices.empty()) out.push_back(std::move(*inv));
  }
  return out;
}

StatusOr<std::unique_ptr<ProfileDriver>> ProfileDriver::Create(ProfileDriverOptions options) {
  if (options.clock == nullptr) return InvalidArgumentError("profile driver: no clock");
  if (options.node_name.empty()) return InvalidArgumentError("profile driver: no node name");
  std::unique_ptr<ProfileDriver> driver(new ProfileDriver(std::move(options)));
  if (!driver->options_.profile_path.empty()) {
    DRAPLANE_ASSIGN_OR_RETURN(ClusterProfile profile, LoadProfile(driver->options_.profile_path));
    DRAPLANE_ASSIGN_OR_RETURN(ProfileNode node, FindNode(profile, driver->options_.node_name));
    driver->file_signature_ = internal::FileSignature(driver->options_.profile_path);
    driver->SetTemplate(*node.node);
  } else if (driver->options_.node) {
    driver->SetTemplate(*driver->options_.node);
  } else {
    return InvalidArgumentError("profile driver: neither a profile file nor a node template");
  }
  DRAPLANE_RETURN_IF_ERROR(driver->LoadState());
  return driver;
}

ProfileDriver::ProfileDriver(ProfileDriverOptions options) : options_(std::move(options)) {}

void ProfileDriver::SetTemplate(NodeTemplate node) {
  node_ = std::move(node);
  std::erase_if(node_.faults, [&](const FaultSpec& fault) {
    return !fault.node.empty() && fault.node != options_.node_name;
  });
  catalog_ = BuildProfileInventories(options_.node_name, node_);
  const Timestamp now = options_.clock->Now();
  std::map<std::string, Timestamp> seen;
  for (const FaultSpec& fault : node_.faults) {
    auto it = fault_first_seen_.find(fault.Key());
    seen[fault.Key()] = it != fault_first_seen_.end() ? it->second : now;
  }
  fault_first_seen_ = std::move(seen);
}

void ProfileDriver::MaybeReload() {
  if (options_.profile_path.empty()) return;
  std::string signature = internal::FileSignature(options_.profile_path);
  if (signature.empty() || signature == file_signature_) return;
  file_signature_ = signature;
  StatusOr<ClusterProfile> profile = LoadProfile(options_.profile_path);
  if (!profile.ok()) {
    log::Warning("node {}: keeping the previous profile: {}", options_.node_name,
                 profile.status().ToString());
    return;
  }
  StatusOr<ProfileNode> node = FindNode(*profile, options_.node_name);
  if (!node.ok()) {
    log::Warning("node {}: keeping the previous profile: {}", options_.node_name,
                 node.status().ToString());
    return;
  }
  log::Info("node {}: profile {} reloaded", options_.node_name, options_.profile_path);
  SetTemplate(*node->node);
}

const FaultSpec* ProfileDriver::FindFault(FaultKind kind, std::string_view driver,
                                          std::string_view device) const {
  for (const FaultSpec& fault : node_.faults) {
    if (fault.kind != kind || fault.device != device) continue;
    if (!fault.driver.empty() && fault.driver != driver) continue;
    return &fault;
  }
  return nullptr;
}

Status ProfileDriver::RetryableFault(FaultKind kind, const DevicePrepareRequest& request) {
  const FaultSpec* fault = FindFault(kind, request.driver, request.device);
  if (fault == nullptr) return Status::Ok();
  int64_t& failures = fault_failures_[fault->Key()];
  if (failures >= fault->times) return Status::Ok();
  ++failures;
  const std::string what = kind == FaultKind::kPrepareRetryable ? "prepare" : "unprepare";
  return UnavailableError(
      (fault->message.empty() ? "simulated transient " + what + " failure" : fault->message) +
      " (" + std::to_string(failures) + " of " + std::to_string(fault->times) + ")");
}

std::vector<std::string> ProfileDriver::DriverNames() const {
  return {std::string(kGpuDriverName), std::string(kFpgaDriverName), std::string(kNicDriverName)};
}

StatusOr<std::vector<Inventory>> ProfileDriver::Discover() {
  MaybeReload();
  std::vector<Inventory> out = catalog_;
  const Timestamp now = options_.clock->Now();
  for (Inventory& inv : out) {
    for (DiscoveredDevice& d : inv.devices) {
      if (auto failed = attach_failed_.find(inv.driver + "/" + d.device.name);
          failed != attach_failed_.end()) {
        d.health.healthy = false;
        d.health.message = "fabric attach failed: " + failed->second;
        d.health.since = now;
        continue;
      }
      for (const FaultSpec& fault : node_.faults) {
        if (fault.kind != FaultKind::kUnhealthy || fault.device != d.device.name) continue;
        if (!fault.driver.empty() && fault.driver != inv.driver) continue;
        const Timestamp start = fault_first_seen_[fault.Key()] + fault.after;
        if (now < start) continue;
        if (fault.duration && now >= start + *fault.duration) continue;
        d.health.healthy = false;
        d.health.message = fault.message.empty() ? "simulated fault" : fault.message;
        d.health.taint_effect = fault.effect;
        d.health.since = start;
        break;
      }
    }
  }
  return out;
}

StatusOr<PreparedDevice> ProfileDriver::PrepareDevice(const DevicePrepareRequest& request) {
  MaybeReload();
  DRAPLANE_RETURN_IF_ERROR(ReloadStateIfChanged());
  const DiscoveredDevice* device = FindDevice(catalog_, request.driver, request.device);
  if (device == nullptr) {
    return NotFoundError("device " + request.driver + "/" + request.device +
                         " does not exist on node " + options_.node_name);
  }
  if (const FaultSpec* fault =
          FindFault(FaultKind::kPrepareTerminal, request.driver, request.device)) {
    return FailedPreconditionError(fault->message.empty() ? "simulated terminal prepare failure"
                                                          : fault->message);
  }
  DRAPLANE_RETURN_IF_ERROR(RetryableFault(FaultKind::kPrepareRetryable, request));
  const std::string key = request.driver + "/" + request.device;
  const bool shared = device->device.allow_multiple_allocations.value_or(false);
  if (auto holders = prepared_.find(key); holders != prepared_.end() && !shared &&
                                          !request.admin_access &&
                                          holders->second.count(request.claim_uid) == 0) {
    // The last line of defence the kubelet-plugin helper asks drivers for: never hand one
    // exclusive device to two claims.
    return UnavailableError("device " + key + " is prepared for another claim (" +
                            *holders->second.begin() + ")");
  }
  PreparedDevice out;
  out.cdi_class = device->cdi_class;
  const std::string uuid = AttrString(*device, "uuid");
  if (device->cdi_class == "gpu" || device->cdi_class == "mig") {
    // gpu-<i> and its partitions use /dev/nvidia<i>.
    std::string index = request.device.substr(4);
    index = index.substr(0, index.find('-'));
    out.edits.device_nodes.push_back(DeviceNode{
        .path = "/dev/nvidia" + index, .type = "c", .major = 195, .minor = std::stoll(index)});
    out.edits.list_env.emplace_back("NVIDIA_VISIBLE_DEVICES", uuid);
    DRAPLANE_RETURN_IF_ERROR(internal::ApplyOpaqueConfig(request, "NVIDIA", &out));
  } else if (device->cdi_class == "fpga") {
    const std::string index = request.device.substr(5);
    out.edits.device_nodes.push_back(
        DeviceNode{.path = "/dev/dfl-port." + index, .type = "c", .major = {}, .minor = {}});
    out.edits.list_env.emplace_back("FPGA_VISIBLE_DEVICES", request.device);
    DRAPLANE_RETURN_IF_ERROR(internal::ApplyOpaqueConfig(request, "FPGA", &out));
  } else {
    const std::string index = request.device.substr(4);
    const std::string iface = AttrString(*device, "interfaceName");
    auto rdma = device->device.attributes.find("rdma");
    if (rdma != device->device.attributes.end() && rdma->second.bool_value.value_or(false)) {
      out.edits.device_nodes.push_back(DeviceNode{
          .path = "/dev/infiniband/uverbs" + index, .type = "c", .major = {}, .minor = {}});
    }
    out.edits.list_env.emplace_back("NIC_INTERFACES", iface);
    DRAPLANE_RETURN_IF_ERROR(internal::ApplyOpaqueConfig(request, "NIC", &out));
    // One address per allocation (per share of a shared NIC), derived from the node, the NIC
    // and the claim so repeated prepares agree.
    const uint64_t h =
        Fnv1a(options_.node_name + "/" + key + "/" + request.share_id.value_or(request.claim_uid),
              14695981039346656037ULL);
    rv1::NetworkDeviceData net;
    net.interface_name = iface;
    net.ips.push_back("10." + std::to_string((h >> 8) & 0xff) + "." +
                      std::to_string((h >> 16) & 0xff) + "." + std::to_string(1 + (h >> 24) % 254) +
                      "/16");
    std::string mac = "02";
    for (int i = 0; i < 5; ++i) mac += ":" + Hex((h >> (32 + 6 * i)) & 0xff, 2);
    net.hardware_address = mac;
    out.network = std::move(net);
  }
  if (const FaultSpec* fault = FindFault(FaultKind::kPrepareCrash, request.driver, request.device);
      fault != nullptr && fired_crashes_.count(fault->Key()) == 0) {
    fired_crashes_.insert(fault->Key());
    RecordPrepared(key, request);
    DRAPLANE_RETURN_IF_ERROR(SaveState());
    if (options_.crash_exits_process) {
      log::Error("node {}: simulated crash while preparing {} for claim {}", options_.node_name,
                 key, request.claim_uid);
      std::_Exit(137);
    }
    return UnavailableError("simulated agent crash while preparing " + key);
  }
  RecordPrepared(key, request);
  DRAPLANE_RETURN_IF_ERROR(SaveState());
  return out;
}

void ProfileDriver::RecordPrepared(const std::string& key, const DevicePrepareRequest& request) {
  // An admin-access use (monitoring a device that is in use) excludes no one: the scheduler
  // allocates the device to other claims beside it, so it must not block their prepares.
  if (request.admin_access) return;
  prepared_[key].insert(request.claim_uid);
}

Status ProfileDriver::UnprepareDevice(const DevicePrepareRequest& request) {
  MaybeReload();
  DRAPLANE_RETURN_IF_ERROR(ReloadStateIfChanged());
  const std::string key = request.driver + "/" + request.device;
  auto it = prepared_.find(key);
  if (it == prepared_.end()) return Status::Ok();
  DRAPLANE_RETURN_IF_ERROR(RetryableFault(FaultKind::kUnprepareRetryable, request));
  it->second.erase(request.claim_uid);
  if (it->second.empty()) prepared_.erase(it);
  return SaveState();
}

AttachResult ProfileDriver::AttachDevice(const DevicePrepareRequest& request) {
  MaybeReload();
  const std::optional<AttachSpec>* spec = nullptr;
  // Find the group of the device: gpu-<i> / fpga-<i> count through the groups in order.
  auto find = [&](const auto& groups, std::string_view prefix) {
    if (!request.device.starts_with(prefix)) return;
    int64_t index = std::atoll(request.device.c_str() + prefix.size());
    for (const auto& group : groups) {
      if (index < group.count) {
        spec = &group.attach;
        return;
      }
      index -= group.count;
    }
  };
  if (request.driver == kGpuDriverName) find(node_.devices.gpus, "gpu-");
  if (request.driver == kFpgaDriverName) find(node_.devices.fpgas, "fpga-");
  if (spec == nullptr || !spec->has_value()) return AttachResult{};  // nothing to attach
  const AttachSpec& attach = **spec;
  const Timestamp now = options_.clock->Now();
  const std::string key = request.claim_uid + "/" + request.driver + "/" + request.device;
  Timestamp started = attach_started_.emplace(key, now).first->second;
  if (now < started + attach.after) {
    return AttachResult{.kind = AttachResult::Kind::kPending,
                        .message = "attaching",
                        .retry_after = started + attach.after - now};
  }
  switch (attach.outcome) {
    case AttachSpec::Outcome::kAttached:
      return AttachResult{};
    case AttachSpec::Outcome::kFailed: {
      std::string message = attach.message.empty() ? "simulated attach failure" : attach.message;
      attach_failed_[request.driver + "/" + request.device] = message;
      log::Info("node {}: fabric attach of {}/{} for claim {} failed: {}", options_.node_name,
                request.driver, request.device, request.claim_uid, message);
      return AttachResult{
          .kind = AttachResult::Kind::kFailed, .message = message, .retry_after = {}};
    }
    case AttachSpec::Outcome::kNever:
      break;
  }
  return AttachResult{.kind = AttachResult::Kind::kPending,
                      .message = "the fabric does not answer",
                      .retry_after = std::chrono::minutes(1)};
}

Status ProfileDriver::LoadState() {
  if (options_.state_dir.empty()) return Status::Ok();
  const std::string path = options_.state_dir + "/" + std::string(kStateFile);
  state_signature_ = internal::FileSignature(path);
  StatusOr<std::string> text = internal::ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Status::Ok();
    return text.status();
  }
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value json, api::codec::ParseJson(*text));
  api::codec::FieldReader r(json, std::string(kStateFile));
  if (const boost::json::value* prepared = r.Raw("prepared")) {
    if (!prepared->is_object()) return InvalidArgumentError("profile state: prepared: not a map");
    for (const auto& [key, uids] : prepared->as_object()) {
      if (!uids.is_array()) return InvalidArgumentError("profile state: prepared: not a list");
      for (const boost::json::value& uid : uids.as_array()) {
        if (uid.is_string()) prepared_[std::string(key)].insert(std::string(uid.as_string()));
      }
    }
  }
  for (std::string& key : r.StringList("firedCrashes")) fired_crashes_.insert(std::move(key));
  return r.Finish();
}

Status ProfileDriver::ReloadStateIfChanged() {
  if (options_.state_dir.empty()) return Status::Ok();
  const std::string path = options_.state_dir + "/" + std::string(kStateFile);
  if (internal::FileSignature(path) == state_signature_) return Status::Ok();
  prepared_.clear();
  fired_crashes_.clear();
  return LoadState();
}

Status ProfileDriver::SaveState() {
  if (options_.state_dir.empty()) return Status::Ok();
  boost::json::object root;
  boost::json::object prepared;
  for (const auto& [key, uids] : prepared_) {
    boost::json::array list;
    for (const std::string& uid : uids) list.emplace_back(uid);
    prepared[key] = std::move(list);
  }
  root["prepared"] = std::move(prepared);
  boost::json::array fired;
  for (const std::string& key : fired_crashes_) fired.emplace_back(key);
  root["firedCrashes"] = std::move(fired);
  DRAPLANE_RETURN_IF_ERROR(internal::MakeDirs(options_.state_dir));
  const std::string path = options_.state_dir + "/" + std::string(kStateFile);
  DRAPLANE_RETURN_IF_ERROR(internal::WriteFileAtomically(
      path, api::codec::WriteJson(boost::json::value(std::move(root)))));
  state_signature_ = internal::FileSignature(path);
  return Status::Ok();
}

}  // namespace draplane::agent
