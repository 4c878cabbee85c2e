#include "allocator/features.h"

#include <array>
#include <utility>

#include "common/status_macros.h"

namespace draplane::allocator {
namespace {

struct FlagEntry {
  std::string_view name;
  bool Features::*member;
};

constexpr std::array<FlagEntry, 9> kFlags = {{
    {"AdminAccess", &Features::admin_access},
    {"PrioritizedList", &Features::prioritized_list},
    {"PartitionableDevices", &Features::partitionable_devices},
    {"DeviceTaints", &Features::device_taints},
    {"DeviceBindingAndStatus", &Features::device_binding_and_status},
    {"ConsumableCapacity", &Features::consumable_capacity},
    {"ListTypeAttributes", &Features::list_type_attributes},
    {"DeviceCompatibilityGroups", &Features::device_compatibility_groups},
    {"DerivedAttributes", &Features::derived_attributes},
}};

std::string_view StripVersion(std::string_view version) {
  if (!version.empty() && (version.front() == 'v' || version.front() == 'V')) {
    version.remove_prefix(1);
  }
  // Keep "major.minor"; drop a patch suffix.
  size_t first_dot = version.find('.');
  if (first_dot == std::string_view::npos) return version;
  size_t second_dot = version.find('.', first_dot + 1);
  if (second_dot != std::string_view::npos) version = version.substr(0, second_dot);
  return version;
}

// The Kubernetes gates that feed the allocator flags. DeviceBindingAndStatus needs two gates.
struct GateState {
  bool admin_access = false;
  bool prioritized_list = false;
  bool partitionable_devices = false;
  bool device_taints = false;
  bool binding_conditions = false;
  bool device_status = false;
  bool consumable_capacity = false;
  bool list_type_attributes = false;
  bool compatibility_groups = false;
  bool derived_attributes = false;
};

Features FromGates(const GateState& g, cel::ListAttributeMode list_attributes) {
  return Features{
      .admin_access = g.admin_access,
      .prioritized_list = g.prioritized_list,
      .partitionable_devices = g.partitionable_devices,
      .device_taints = g.device_taints,
      .device_binding_and_status = g.binding_conditions && g.device_status,
      .consumable_capacity = g.consumable_capacity,
      .list_type_attributes = g.list_type_attributes,
      .device_compatibility_groups = g.compatibility_groups,
      .derived_attributes = g.derived_attributes,
      .list_attributes = list_attributes,
  };
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

uint64_t PackedFeatures(const Features& f) {
  // Nine flags and a one-byte mode: a member added to Features must be packed here too.
  static_assert(sizeof(Features) == kFlags.size() + sizeof(cel::ListAttributeMode));
  uint64_t packed = static_cast<uint64_t>(f.list_attributes) << kFlags.size();
  for (size_t i = 0; i < kFlags.size(); ++i) {
    if (f.*(kFlags[i].member)) packed |= uint64_t{1} << i;
  }
  return packed;
}

Features AllFeatures() {
  Features f;
  for (const FlagEntry& e : kFlags) f.*(e.member) = true;
  return f;
}

std::vector<std::string_view> FeatureNames() {
  std::vector<std::string_view> names;
  for (const FlagEntry& e : kFlags) names.push_back(e.name);
  return names;
}

Status SetFeature(std::string_view name, bool value, Features* features) {
  for (const FlagEntry& e : kFlags) {
    if (e.name == name) {
      features->*(e.member) = value;
      return Status::Ok();
    }
  }
  return InvalidArgumentError("unknown allocator feature \"" + std::string(name) + "\"");
}

std::vector<std::string_view> EnabledFeatureNames(const Features& features) {
  std::vector<std::string_view> names;
  for (const FlagEntry& e : kFlags) {
    if (features.*(e.member)) names.push_back(e.name);
  }
  return names;
}

std::vector<std::string_view> KnownKubernetesVersions() { return {"1.34", "1.35", "1.36", "1.37"}; }

StatusOr<cel::ListAttributeMode> ListAttributeModeOf(std::string_view version) {
  std::string_view v = StripVersion(version);
  if (v == "1.34" || v == "1.35") return cel::ListAttributeMode::kUnsupported;
  if (v == "1.36") return cel::ListAttributeMode::kLists;
  if (v == "1.37") return cel::ListAttributeMode::kFirstElement;
  return InvalidArgumentError("unsupported Kubernetes version \"" + std::string(version) +
                              "\" (known: 1.34, 1.35, 1.36, 1.37)");
}

api::validation::Features ValidationFeatures(const Features& features) {
  api::validation::Features v;
  v.consumable_capacity = features.consumable_capacity;
  v.list_type_attributes = features.list_type_attributes;
  v.device_compatibility_groups = features.device_compatibility_groups;
  v.derived_attributes = features.derived_attributes;
  v.admin_access = features.admin_access;
  v.prioritized_list = features.prioritized_list;
  v.device_taints = features.device_taints;
  v.partitionable_devices = features.partitionable_devices;
  v.binding_conditions = features.device_binding_and_status;
  return v;
}

StatusOr<Features> DefaultFeatures(std::string_view version) {
  std::string_view v = StripVersion(version);
  GateState g;
  if (v == "1.34" || v == "1.35") {
    // Admin access and prioritized list are beta (on) since 1.34; device status is beta (on)
    // since 1.33 but binding conditions are alpha, so DeviceBindingAndStatus is off.
    g.admin_access = true;
    g.prioritized_list = true;
    g.device_status = true;
  } else if (v == "1.36" || v == "1.37") {
    // 1.36 makes admin access and prioritized list GA and turns on the betas of device taints,
    // partitionable devices, consumable capacity and binding conditions; list-type attributes
    // stay alpha. 1.37 only graduates features that were already on; its new allocator features
    // (compatibility groups, derived attributes) are alpha.
    g.admin_access = true;
    g.prioritized_list = true;
    g.device_taints = true;
    g.partitionable_devices = true;
    g.consumable_capacity = true;
    g.binding_conditions = true;
    g.device_status = true;
  }
  DRAPLANE_ASSIGN_OR_RETURN(cel::ListAttributeMode mode, ListAttributeModeOf(version));
  return FromGates(g, mode);
}

StatusOr<Features> ApplyFeatureGates(std::string_view gates, const Features& base) {
  GateState g{
      .admin_access = base.admin_access,
      .prioritized_list = base.prioritized_list,
      .partitionable_devices = base.partitionable_devices,
      .device_taints = base.device_taints,
      .binding_conditions = base.device_binding_and_status,
      .device_status = base.device_binding_and_status,
      .consumable_capacity = base.consumable_capacity,
      .list_type_attributes = base.list_type_attributes,
      .compatibility_groups = base.device_compatibility_groups,
      .derived_attributes = base.derived_attributes,
  };
  const std::array<std::pair<std::string_view, bool GateState::*>, 10> kGates = {{
      {"DRAAdminAccess", &GateState::admin_access},
      {"DRAPrioritizedList", &GateState::prioritized_list},
      {"DRAPartitionableDevices", &GateState::partitionable_devices},
      {"DRADeviceTaints", &GateState::device_taints},
      {"DRADeviceBindingConditions", &GateState::binding_conditions},
      {"DRAResourceClaimDeviceStatus", &GateState::device_status},
      {"DRAConsumableCapacity", &GateState::consumable_capacity},
      {"DRAListTypeAttributes", &GateState::list_type_attributes},
      {"DRADeviceCompatibilityGroups", &GateState::compatibility_groups},
      {"DRADerivedAttributes", &GateState::derived_attributes},
  }};
  // With only one of the two binding gates named, the other keeps the base state; a base with
  // DeviceBindingAndStatus off has both off, which errs on the side of "feature absent".
  while (!gates.empty()) {
    size_t comma = gates.find(',');
    std::string_view entry = Trim(gates.substr(0, comma));
    gates = comma == std::string_view::npos ? std::string_view() : gates.substr(comma + 1);
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("feature gate \"" + std::string(entry) +
                                  "\" must have the form Name=true|false");
    }
    std::string_view name = Trim(entry.substr(0, eq));
    std::string_view value = Trim(entry.substr(eq + 1));
    bool on;
    if (value == "true" || value == "True" || value == "TRUE") {
      on = true;
    } else if (value == "false" || value == "False" || value == "FALSE") {
      on = false;
    } else {
      return InvalidArgumentError("feature gate " + std::string(name) + ": invalid value \"" +
                                  std::string(value) + "\" (want true or false)");
    }
    bool found = false;
    for (const auto& [gate, member] : kGates) {
      if (gate == name) {
        g.*member = on;
        found = true;
        break;
      }
    }
    if (!found) {
      return InvalidArgumentError("unknown feature gate \"" + std::string(name) +
                                  "\" (the allocator knows DRAAdminAccess, DRAPrioritizedList, "
                                  "DRAPartitionableDevices, DRADeviceTaints, "
                                  "DRADeviceBindingConditions, DRAResourceClaimDeviceStatus, "
                                  "DRAConsumableCapacity, DRAListTypeAttributes, "
                                  "DRADeviceCompatibilityGroups, DRADerivedAttributes)");
    }
  }
  return FromGates(g, base.list_attributes);
}

}  // namespace draplane::allocator
