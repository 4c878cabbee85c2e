// ResourceSlice validation (upstream: ValidateResourceSlice, ValidateResourceSliceUpdate,
// validateResourceSliceSpec, validateDevice, validateRequestPolicy and friends in
// pkg/apis/resource/validation/validation.go).
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <limits>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/validation/disabled_fields.h"
#include "api/validation/internal/common.h"
#include "api/validation/internal/render.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {
namespace {

using internal::Append;
using internal::PresentBit;
using internal::QuotedKey;
using internal::RenderJson;
using internal::RenderQuantity;

// domain (63) + "/" + identifier (32): the length up to which map keys appear unshortened in
// field paths.
constexpr size_t kAttributeKeyMaxLength = kDeviceMaxDomainLength + 1 + kDeviceMaxIDLength;

template <typename T>
bool ListSet(const std::vector<T>& list, uint64_t present, int bit) {
  return !list.empty() || PresentBit(present, bit);
}

FieldErrorList ValidateDeviceAttribute(const resourcev1::DeviceAttribute& a,
                                       const FieldPath& path) {
  FieldErrorList errs;
  int fields = 0;
  auto check_string = [&](const std::string& value, const FieldPath& p) {
    if (value.size() > kDeviceAttributeMaxValueLength) {
      errs.push_back(TooLong(p, static_cast<int64_t>(kDeviceAttributeMaxValueLength)));
    }
  };
  auto check_version = [&](const std::string& value, const FieldPath& p) {
    if (!IsSemver(value)) {
      errs.push_back(
          Invalid(p, RenderValue(value), "must be a string compatible with semver.org spec 2.0.0"));
    }
    check_string(value, p);
  };
  auto empty_list = [&](const char* name) {
    errs.push_back(Invalid(path.Child(name), "[]", "must not be empty if specified"));
  };
  if (a.bool_value.has_value()) ++fields;
  if (a.int_value.has_value()) ++fields;
  if (a.string_value.has_value()) {
    ++fields;
    check_string(*a.string_value, path.Child("string"));
  }
  if (a.version_value.has_value()) {
    ++fields;
    check_version(*a.version_value, path.Child("version"));
  }
  if (ListSet(a.bools, a.present, internal::kAttributeBoolsBit)) {
    ++fields;
    if (a.bools.empty()) empty_list("bools");
  }
  if (ListSet(a.ints, a.present, internal::kAttributeIntsBit)) {
    ++fields;
    if (a.ints.empty()) empty_list("ints");
  }
  if (ListSet(a.strings, a.present, internal::kAttributeStringsBit)) {
    ++fields;
    if (a.strings.empty()) empty_list("strings");
    for (size_t i = 0; i < a.strings.size(); ++i) {
      check_string(a.strings[i], path.Child("strings").Index(static_cast<int64_t>(i)));
    }
  }
  if (ListSet(a.versions, a.present, internal::kAttributeVersionsBit)) {
    ++fields;
    if (a.versions.empty()) empty_list("versions");
    for (size_t i = 0; i < a.versions.size(); ++i) {
      check_version(a.versions[i], path.Child("versions").Index(static_cast<int64_t>(i)));
    }
  }
  if (fields == 0) {
    errs.push_back(Invalid(path, RenderValue(""), "exactly one value must be specified"));
  } else if (fields > 1) {
    errs.push_back(
        Invalid(path, RenderJson(resourcev1::Encode(a)), "exactly one value must be specified"));
  }
  return errs;
}

// Quantity helpers for the capacity request policy checks.
bool IsFractional(const Quantity& q) {
  std::optional<int64_t> whole = q.AsInt64();
  if (whole.has_value()) return false;
  // Out of the int64 range: integral for all practical purposes unless it compares unequal to
  // its rounded-up value inside the range.
  int64_t rounded = q.Value();
  if (rounded == std::numeric_limits<int64_t>::max() ||
      rounded == std::numeric_limits<int64_t>::min()) {
    return false;
  }
  return q.Compare(Quantity::FromInt64(rounded)) != 0;
}

bool CanBeMilli(const Quantity& q) { return q.Compare(Quantity::FromMilli(q.MilliValue())) == 0; }

FieldErrorList ValidateInt64Range(const Quantity& q, const FieldPath& path) {
  if (q.Sign() < 0) {
    return {Invalid(path, RenderQuantity(q), "must be greater than or equal to 0")};
  }
  if (q.Compare(Quantity::FromInt64(std::numeric_limits<int64_t>::max())) > 0) {
    return {Invalid(path, RenderQuantity(q), "must not be larger than 9223372036854775807")};
  }
  return {};
}

FieldErrorList ValidateRangeStep(const Quantity& value, const Quantity& min, const Quantity& step,
                                 bool use_milli, const FieldPath& path) {
  int64_t step_v = use_milli ? step.MilliValue() : step.Value();
  int64_t min_v = use_milli ? min.MilliValue() : min.Value();
  int64_t v = use_milli ? value.MilliValue() : value.Value();
  if (step_v == 0 || (v - min_v) % step_v != 0) {
    return {Invalid(path, RenderQuantity(value),
                    "value is not a multiple of a given step (" + step.ToString() + ") from (" +
                        min.ToString() + ")")};
  }
  return {};
}

FieldErrorList ValidateRequestPolicyRange(const Quantity& default_value, const Quantity& capacity,
                                          const resourcev1::CapacityRequestPolicyRange& range,
                                          const FieldPath& path, const Features& features) {
  FieldErrorList errs;
  if (!range.min.has_value()) {
    errs.push_back(Required(path.Child("min"), "required when validRange is defined"));
    return errs;
  }
  const Quantity& min = *range.min;
  if (min.Compare(capacity) > 0) {
    errs.push_back(Invalid(path.Child("min"), RenderQuantity(min),
                           "min is larger than capacity value: " + capacity.ToString()));
  }
  if (default_value.Compare(min) < 0) {
    // Upstream reports a default outside the range on the bound it violates (there is no
    // validRange.default).
    errs.push_back(Invalid(path.Child("min"), RenderQuantity(default_value),
                           "default is less than min: " + min.ToString()));
  }
  if (range.max.has_value()) {
    const Quantity& max = *range.max;
    if (min.Compare(max) > 0) {
      errs.push_back(Invalid(path.Child("max"), RenderQuantity(min),
                             "min is larger than max: " + max.ToString()));
    }
    if (max.Compare(capacity) > 0) {
      errs.push_back(Invalid(path.Child("max"), RenderQuantity(max),
                             "max is larger than capacity value: " + capacity.ToString()));
    }
    if (default_value.Compare(max) > 0) {
      errs.push_back(Invalid(path.Child("max"), RenderQuantity(default_value),
                             "default is more than max: " + max.ToString()));
    }
  }
  struct Named {
    const Quantity* q;
    const char* name;
  };
  const Named bounds[] = {{&default_value, "default"},
                          {range.min ? &*range.min : nullptr, "min"},
                          {range.max ? &*range.max : nullptr, "max"},
                          {range.step ? &*range.step : nullptr, "step"}};
  bool use_milli = false;
  if (features.fractional_capacity_range) {
    use_milli = IsFractional(default_value) || IsFractional(min) ||
                (range.max && IsFractional(*range.max)) ||
                (range.step && IsFractional(*range.step));
    if (use_milli) {
      bool unsafe = false;
      for (const Named& b : bounds) {
        if (b.q != nullptr && !CanBeMilli(*b.q)) {
          errs.push_back(Invalid(path.Child(b.name), RenderQuantity(*b.q),
                                 "value cannot be represented as a milli value"));
          unsafe = true;
        }
      }
      if (unsafe) return errs;
    }
  }
  if (range.step.has_value()) {
    const Quantity& step = *range.step;
    if (step.Sign() <= 0) {
      errs.push_back(
          Invalid(path.Child("step"), RenderQuantity(step), "must be greater than zero"));
    } else {
      Quantity added = min.Add(step);
      if (added.Compare(capacity) > 0) {
        errs.push_back(Invalid(path.Child("step"), RenderQuantity(step),
                               "one step " + added.ToString() +
                                   " is larger than capacity value: " + capacity.ToString()));
      }
      bool unsafe = false;
      if (!use_milli) {
        for (const Named& b : bounds) {
          if (b.q == nullptr) continue;
          FieldErrorList range_errs = ValidateInt64Range(*b.q, path.Child(b.name));
          if (!range_errs.empty()) {
            Append(errs, std::move(range_errs));
            unsafe = true;
          }
        }
      }
      if (!unsafe) {
        Append(errs, ValidateRangeStep(default_value, min, step, use_milli, path.Child("step")));
        if (range.max.has_value()) {
          Append(errs, ValidateRangeStep(*range.max, min, step, use_milli, path.Child("step")));
        }
      }
    }
  }
  return errs;
}

FieldErrorList ValidateRequestPolicyValidValues(const Quantity& default_value,
                                                const Quantity& capacity,
                                                const std::vector<Quantity>& values,
                                                const FieldPath& path, const Features& features) {
  FieldErrorList errs;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    if (values[i].Compare(values[i + 1]) > 0) {
      errs.push_back(Invalid(path.Index(static_cast<int64_t>(i + 1)), RenderQuantity(values[i + 1]),
                             "values must be sorted in ascending order"));
    }
  }
  bool found_default = false;
  internal::ValidateSet(
      values, kCapacityRequestPolicyDiscreteMaxOptions, path,
      [&](const Quantity& option, const FieldPath& p) {
        if (option.Compare(capacity) > 0) {
          errs.push_back(Invalid(p, RenderQuantity(option),
                                 "option is larger than capacity value: " + capacity.ToString()));
        }
        if (option.Compare(default_value) == 0) found_default = true;
      },
      [&](const Quantity& option) {
        // quantityKeyInt (the integer value) or, with fractional ranges, the exact decimal.
        return features.fractional_capacity_range ? option.ToString()
                                                  : std::to_string(option.Value());
      },
      QuotedKey, errs);
  if (!found_default) {
    errs.push_back(Invalid(path, RenderQuantity(default_value),
                           "default value is not valid according to the requestPolicy"));
  }
  return errs;
}

FieldErrorList ValidateRequestPolicy(const Quantity& capacity,
                                     const resourcev1::CapacityRequestPolicy& policy,
                                     const FieldPath& path, const Features& features) {
  if (!policy.valid_values.empty() && policy.valid_range.has_value()) {
    return {Forbidden(path,
                      "exactly one policy can be specified, cannot specify \"validValues\" and "
                      "\"validRange\" at the same time")};
  }
  if (!policy.valid_values.empty()) {
    if (!policy.default_value.has_value()) {
      return {Required(path.Child("default"), "required when validValues is defined")};
    }
    return ValidateRequestPolicyValidValues(*policy.default_value, capacity, policy.valid_values,
                                            path.Child("validValues"), features);
  }
  if (policy.valid_range.has_value()) {
    if (!policy.default_value.has_value()) {
      return {Required(path.Child("default"), "required when validRange is defined")};
    }
    return ValidateRequestPolicyRange(*policy.default_value, capacity, *policy.valid_range,
                                      path.Child("validRange"), features);
  }
  return {};
}

// validateMap's key checks: reported at the map's path, with the key as the value.
template <typename T, typename KeyFn, typename ItemFn>
void ValidateMap(const std::map<std::string, T, std::less<>>& m, int64_t max, size_t key_length,
                 const FieldPath& path, KeyFn key_fn, ItemFn item_fn, FieldErrorList& errs) {
  if (max >= 0 && m.size() > static_cast<size_t>(max)) {
    errs.push_back(TooMany(path, static_cast<int64_t>(m.size()), max));
    return;
  }
  for (const auto& [key, value] : m) {
    Append(errs, key_fn(key, path));
    item_fn(value, path.Key(TruncateIfTooLong(key, key_length)));
  }
}

void ValidateCounters(const std::map<std::string, resourcev1::Counter, std::less<>>& counters,
                      int64_t max, const FieldPath& path, FieldErrorList& errs) {
  ValidateMap(
      counters, max, kDNS1123LabelMaxLength, path,
      [](std::string_view key, const FieldPath& p) { return ValidateDeviceName(key, p); },
      [](const resourcev1::Counter&, const FieldPath&) {}, errs);
}

void ValidateNodeAllocatableResources(const resourcev1::Device& device, const FieldPath& path,
                                      FieldErrorList& errs) {
  for (const auto& [name, resource] : device.node_allocatable_resources) {
    FieldPath key_path = path.Key(name);
    if (!IsNodeAllocatableResourceName(name)) {
      errs.push_back(
          Invalid(key_path, RenderValue(name), "must be a node allocatable resource name"));
    }
    if (!resource.mapping.has_value() && !resource.overhead.has_value()) {
      errs.push_back(Required(key_path, "at least one of mapping or overhead must be set"));
    }
    if (resource.mapping.has_value()) {
      const resourcev1::NodeAllocatableMapping& m = *resource.mapping;
      FieldPath mp = key_path.Child("mapping");
      if (m.capacity_key.has_value()) {
        if (m.capacity_key->empty()) {
          errs.push_back(Invalid(mp.Child("capacityKey"), RenderValue(""),
                                 "capacityKey must not be an empty string"));
        } else if (!device.capacity.contains(*m.capacity_key)) {
          errs.push_back(NotFound(mp.Child("capacityKey"), RenderValue(*m.capacity_key)));
        }
        if (!m.capacity_multiplier.has_value()) {
          errs.push_back(Required(mp.Child("capacityMultiplier"),
                                  "capacityMultiplier is required when capacityKey is set"));
        } else if (m.capacity_multiplier->Sign() <= 0) {
          errs.push_back(Invalid(mp.Child("capacityMultiplier"),
                                 RenderQuantity(*m.capacity_multiplier), "must be positive"));
        }
      }
      if (m.device_multiplier.has_value() && m.device_multiplier->Sign() <= 0) {
        errs.push_back(Invalid(mp.Child("deviceMultiplier"), RenderQuantity(*m.device_multiplier),
                               "must be positive"));
      }
      if (m.capacity_multiplier.has_value() && !m.capacity_key.has_value()) {
        errs.push_back(Required(mp.Child("capacityKey"),
                                "capacityKey is required when capacityMultiplier is set"));
      }
    }
    if (resource.overhead.has_value()) {
      const resourcev1::NodeAllocatableOverhead& o = *resource.overhead;
      FieldPath op = key_path.Child("overhead");
      if (!o.per_pod.has_value() && !o.per_container.has_value()) {
        errs.push_back(
            Invalid(op, RenderValue(""), "at least one of perPod or perContainer must be set"));
        continue;
      }
      if (o.per_pod.has_value() && o.per_pod->Sign() < 0) {
        errs.push_back(
            Invalid(op.Child("perPod"), RenderQuantity(*o.per_pod), "must be non-negative"));
      }
      if (o.per_container.has_value() && o.per_container->Sign() < 0) {
        errs.push_back(Invalid(op.Child("perContainer"), RenderQuantity(*o.per_container),
                               "must be non-negative"));
      }
    }
  }
}

std::string SetFieldsValue(const std::vector<std::string>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ", ";
    out += fields[i];
  }
  return RenderValue(out + "}");
}

void ValidateDevice(const resourcev1::Device& device, const resourcev1::Device* old,
                    const FieldPath& path, bool per_device_node_selection, const Features& features,
                    FieldErrorList& errs) {
  const bool multiple_allocations = device.allow_multiple_allocations.value_or(false);
  Append(errs, ValidateDeviceName(device.name, path.Child("name")));

  const size_t attributes_and_capacities = device.attributes.size() + device.capacity.size();
  if (attributes_and_capacities > kResourceSliceMaxAttributesAndCapacitiesPerDevice) {
    errs.push_back(Invalid(path, RenderValue(static_cast<int64_t>(attributes_and_capacities)),
                           "the total number of attributes and capacities must not exceed " +
                               std::to_string(kResourceSliceMaxAttributesAndCapacitiesPerDevice)));
  }
  size_t values = 0;
  for (const auto& [name, a] : device.attributes) {
    size_t lists = a.bools.size() + a.ints.size() + a.strings.size() + a.versions.size();
    values += lists == 0 ? 1 : lists;
  }
  if (values > kResourceSliceMaxAttributeValuesPerDevice) {
    errs.push_back(Invalid(path, RenderValue(static_cast<int64_t>(values)),
                           "the total number of attribute values must not exceed " +
                               std::to_string(kResourceSliceMaxAttributeValuesPerDevice)));
  }

  ValidateMap(
      device.attributes, -1, kAttributeKeyMaxLength, path.Child("attributes"),
      [](std::string_view key, const FieldPath& p) { return ValidateQualifiedName(key, p); },
      [&](const resourcev1::DeviceAttribute& a, const FieldPath& p) {
        Append(errs, ValidateDeviceAttribute(a, p));
      },
      errs);
  // Capacities and taints that did not change are not validated again (ratcheting).
  if (old == nullptr || !(old->capacity == device.capacity)) {
    ValidateMap(
        device.capacity, -1, kAttributeKeyMaxLength, path.Child("capacity"),
        [](std::string_view key, const FieldPath& p) { return ValidateQualifiedName(key, p); },
        [&](const resourcev1::DeviceCapacity& c, const FieldPath& p) {
          if (!c.request_policy.has_value()) return;
          if (!multiple_allocations) {
            errs.push_back(
                Forbidden(p.Child("requestPolicy"), "allowMultipleAllocations must be true"));
          } else {
            Append(errs, ValidateRequestPolicy(c.value, *c.request_policy, p.Child("requestPolicy"),
                                               features));
          }
        },
        errs);
  }
  if (old == nullptr || !(old->taints == device.taints)) {
    internal::ValidateList(
        device.taints, kDeviceTaintsMaxLength, path.Child("taints"),
        [&](const resourcev1::DeviceTaint& t, const FieldPath& p) {
          Append(errs, internal::ValidateDeviceTaint(t, nullptr, p));
        },
        errs);
  }
  internal::ValidateSet(
      device.consumes_counters, kResourceSliceMaxDeviceCounterConsumptionsPerDevice,
      path.Child("consumesCounters"),
      [&](const resourcev1::DeviceCounterConsumption& c, const FieldPath& p) {
        if (c.counter_set.empty()) {
          errs.push_back(Required(p.Child("counterSet")));
        } else {
          Append(errs, ValidateDeviceName(c.counter_set, p.Child("counterSet")));
        }
        if (c.counters.empty()) {
          errs.push_back(Required(p.Child("counters")));
        } else {
          ValidateCounters(c.counters, kResourceSliceMaxCountersPerDeviceCounterConsumption,
                           p.Child("counters"), errs);
        }
        // KEP-5963: at most two opaque group names, no duplicates.
        internal::ValidateSet(
            c.compatibility_groups, kDeviceCounterConsumptionMaxCompatibilityGroups,
            p.Child("compatibilityGroups"),
            [&](const std::string& group, const FieldPath& gp) {
              if (group.empty()) {
                errs.push_back(Required(gp));
              } else if (group.size() > kCompatibilityGroupMaxLength) {
                errs.push_back(TooLong(gp, static_cast<int64_t>(kCompatibilityGroupMaxLength)));
              }
            },
            [](const std::string& group) { return group; }, QuotedKey, errs);
      },
      [](const resourcev1::DeviceCounterConsumption& c) { return c.counter_set; }, QuotedKey, errs);

  if (per_device_node_selection) {
    std::vector<std::string> set_fields;
    if (device.node_name.has_value()) {
      if (!device.node_name->empty()) {
        set_fields.push_back("`nodeName`");
        Append(errs, ValidateNodeName(*device.node_name, path.Child("nodeName")));
      } else {
        errs.push_back(Invalid(path.Child("nodeName"), RenderValue(""), "must not be empty"));
      }
    }
    if (device.node_selector.has_value()) {
      set_fields.push_back("`nodeSelector`");
      Append(errs, ValidateNodeSelector(*device.node_selector, path.Child("nodeSelector")));
    }
    if (device.all_nodes.has_value()) {
      if (*device.all_nodes) {
        set_fields.push_back("`allNodes`");
      } else {
        errs.push_back(Invalid(path.Child("allNodes"), RenderBool(false),
                               "must be either unset or set to true"));
      }
    }
    static constexpr std::string_view kOneOf =
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec";
    if (set_fields.empty()) {
      errs.push_back(Required(path, std::string(kOneOf)));
    } else if (set_fields.size() > 1) {
      errs.push_back(Invalid(path, SetFieldsValue(set_fields), std::string(kOneOf)));
    }
  } else if (device.node_name.has_value() || device.node_selector.has_value() ||
             device.all_nodes.has_value()) {
    errs.push_back(Invalid(path, "null",
                           "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                           "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
  }

  Append(errs, internal::ValidateBindingParameters(
                   device.binding_conditions,
                   PresentBit(device.present, internal::kDeviceBindingConditionsBit),
                   device.binding_failure_conditions,
                   PresentBit(device.present, internal::kDeviceBindingFailureConditionsBit), path));
  ValidateNodeAllocatableResources(device, path.Child("nodeAllocatableResources"), errs);
}

bool HaveConsumesCounters(const resourcev1::ResourceSliceSpec& spec) {
  for (const resourcev1::Device& d : spec.devices) {
    if (!d.consumes_counters.empty()) return true;
  }
  return false;
}

bool HaveAdvancedFeatures(const resourcev1::ResourceSliceSpec& spec) {
  for (const resourcev1::Device& d : spec.devices) {
    if (!d.taints.empty() || !d.consumes_counters.empty()) return true;
    for (const auto& [name, a] : d.attributes) {
      if (ListSet(a.bools, a.present, internal::kAttributeBoolsBit) ||
          ListSet(a.ints, a.present, internal::kAttributeIntsBit) ||
          ListSet(a.strings, a.present, internal::kAttributeStringsBit) ||
          ListSet(a.versions, a.present, internal::kAttributeVersionsBit)) {
        return true;
      }
    }
  }
  return false;
}

void ValidatePartitionTypeAttribute(const resourcev1::ResourceSliceSpec& spec,
                                    const FieldPath& path, FieldErrorList& errs) {
  const std::string& name = *spec.partition_type_attribute;
  FieldPath attr_path = path.Child("partitionTypeAttribute");
  if (!HaveConsumesCounters(spec)) {
    errs.push_back(Invalid(attr_path, RenderValue(name),
                           "may only be set on a slice which declares devices that consume "
                           "counters"));
    return;
  }
  // The name format is a declarative rule upstream; a malformed name is reported once.
  FieldErrorList format = ValidateFullyQualifiedName(name, attr_path);
  if (!format.empty()) {
    Append(errs, std::move(format));
    return;
  }
  std::string prefix = spec.driver + "/";
  std::string_view bare = name;
  if (bare.substr(0, prefix.size()) == prefix) bare.remove_prefix(prefix.size());
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const resourcev1::Device& d = spec.devices[i];
    if (d.consumes_counters.empty()) continue;
    FieldPath p =
        path.Child("devices").Index(static_cast<int64_t>(i)).Child("attributes").Key(name);
    auto it = d.attributes.find(name);
    if (it == d.attributes.end()) it = d.attributes.find(bare);
    if (it == d.attributes.end()) {
      errs.push_back(Required(p,
                              "device consumes counters and `partitionTypeAttribute` names this "
                              "attribute, so it must be set"));
    } else if (!it->second.string_value.has_value()) {
      errs.push_back(Invalid(p, RenderJson(resourcev1::Encode(it->second)),
                             "must be a string value because `partitionTypeAttribute` names this "
                             "attribute"));
    }
  }
}

std::string RenderOptionalString(const std::optional<std::string>& s) {
  return s.has_value() ? RenderValue(*s) : "null";
}

FieldErrorList ValidateResourceSliceSpec(const resourcev1::ResourceSliceSpec& spec,
                                         const resourcev1::ResourceSliceSpec* old,
                                         const FieldPath& path, const Features& features) {
  FieldErrorList errs = ValidateDriverName(spec.driver, path.Child("driver"));
  FieldPath pool = path.Child("pool");
  Append(errs, ValidatePoolName(spec.pool.name, pool.Child("name")));
  if (spec.pool.resource_slice_count <= 0) {
    errs.push_back(Invalid(pool.Child("resourceSliceCount"),
                           RenderValue(spec.pool.resource_slice_count),
                           "must be greater than zero"));
  }
  if (spec.pool.generation < 0) {
    errs.push_back(Invalid(pool.Child("generation"), RenderValue(spec.pool.generation),
                           "must be greater than or equal to zero"));
  }
  if (old != nullptr) {
    if (spec.pool.name != old->pool.name) {
      errs.push_back(
          Invalid(pool.Child("name"), RenderValue(spec.pool.name), "field is immutable"));
    }
    if (spec.driver != old->driver) {
      errs.push_back(Invalid(path.Child("driver"), RenderValue(spec.driver), "field is immutable"));
    }
    if (spec.node_name != old->node_name) {
      errs.push_back(Invalid(path.Child("nodeName"), RenderOptionalString(spec.node_name),
                             "field is immutable"));
    }
  }

  std::vector<std::string> set_fields;
  if (spec.node_name.has_value()) {
    if (!spec.node_name->empty()) {
      set_fields.push_back("`nodeName`");
      Append(errs, ValidateNodeName(*spec.node_name, path.Child("nodeName")));
    } else {
      errs.push_back(Invalid(path.Child("nodeName"), RenderValue(""),
                             "must be either unset or set to a non-empty string"));
    }
  }
  if (spec.node_selector.has_value()) {
    set_fields.push_back("`nodeSelector`");
    Append(errs, ValidateNodeSelector(*spec.node_selector, path.Child("nodeSelector")));
    const std::vector<corev1::NodeSelectorTerm>& terms = spec.node_selector->node_selector_terms;
    if (terms.size() != 1) {
      std::string rendered = "null";
      if (!terms.empty() ||
          PresentBit(spec.node_selector->present, internal::kNodeSelectorTermsBit)) {
        boost::json::array all;
        for (const corev1::NodeSelectorTerm& t : terms) all.push_back(corev1::Encode(t));
        rendered = RenderJson(all);
      }
      errs.push_back(Invalid(path.Child("nodeSelector").Child("nodeSelectorTerms"), rendered,
                             "must have exactly one node selector term"));
    }
  }
  if (spec.all_nodes.has_value()) {
    if (*spec.all_nodes) {
      set_fields.push_back("`allNodes`");
    } else {
      errs.push_back(Invalid(path.Child("allNodes"), RenderBool(false),
                             "must be either unset or set to true"));
    }
  }
  if (spec.per_device_node_selection.has_value()) {
    if (*spec.per_device_node_selection) {
      set_fields.push_back("`perDeviceNodeSelection`");
    } else {
      errs.push_back(Invalid(path.Child("perDeviceNodeSelection"), RenderBool(false),
                             "must be either unset or set to true"));
    }
  }
  static constexpr std::string_view kOneOf =
      "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required";
  if (set_fields.empty()) {
    errs.push_back(Required(path, std::string(kOneOf)));
  } else if (set_fields.size() > 1) {
    errs.push_back(Invalid(path, SetFieldsValue(set_fields),
                           std::string(kOneOf) + ", but multiple fields are set"));
  }

  if (ListSet(spec.shared_counters, spec.present, internal::kSliceSpecSharedCountersBit) &&
      ListSet(spec.devices, spec.present, internal::kSliceSpecDevicesBit)) {
    errs.push_back(
        Invalid(path, RenderValue(""), "only one of `sharedCounters` or `devices` is allowed"));
  }

  const size_t max_devices = HaveAdvancedFeatures(spec)
                                 ? kResourceSliceMaxDevicesWithAdvancedFeatures
                                 : kResourceSliceMaxDevices;
  const bool per_device = spec.per_device_node_selection.value_or(false);
  internal::ValidateSet(
      spec.devices, static_cast<int64_t>(max_devices), path.Child("devices"),
      [&](const resourcev1::Device& d, const FieldPath& p) {
        const resourcev1::Device* old_device = nullptr;
        if (old != nullptr) {
          for (const resourcev1::Device& od : old->devices) {
            if (od.name == d.name) {
              old_device = &od;
              break;
            }
          }
        }
        ValidateDevice(d, old_device, p, per_device, features, errs);
      },
      [](const resourcev1::Device& d) { return d.name; }, QuotedKey, errs);

  internal::ValidateSet(
      spec.shared_counters, kResourceSliceMaxCounterSets, path.Child("sharedCounters"),
      [&](const resourcev1::CounterSet& set, const FieldPath& p) {
        if (set.name.empty()) {
          errs.push_back(Required(p.Child("name")));
        } else {
          Append(errs, ValidateDeviceName(set.name, p.Child("name")));
        }
        if (set.counters.empty()) {
          errs.push_back(Required(p.Child("counters")));
        } else {
          ValidateCounters(set.counters, kResourceSliceMaxCountersPerCounterSet,
                           p.Child("counters"), errs);
        }
      },
      [](const resourcev1::CounterSet& set) { return set.name; }, QuotedKey, errs);

  if (spec.partition_type_attribute.has_value()) ValidatePartitionTypeAttribute(spec, path, errs);
  Append(errs, internal::ValidateSkipNodeOperations(spec.skip_node_operations,
                                                    path.Child("skipNodeOperations")));
  return errs;
}

}  // namespace

void DropDisabledFields(resourcev1::ResourceSlice& slice, const resourcev1::ResourceSlice* old,
                        const Features& f) {
  using resourcev1::Device;
  // Whether `old` uses a gate's fields: any device of it for which `uses` is true (or, with
  // `spec_uses`, its spec).
  auto in_use = [old](auto uses, auto spec_uses) {
    if (old == nullptr) return false;
    if (spec_uses(old->spec)) return true;
    return std::any_of(old->spec.devices.begin(), old->spec.devices.end(), uses);
  };
  auto no_spec_field = [](const resourcev1::ResourceSliceSpec&) { return false; };
  std::vector<Device>& devices = slice.spec.devices;
  if (!f.device_taints &&
      !in_use([](const Device& d) { return !d.taints.empty(); }, no_spec_field)) {
    for (Device& d : devices) {
      d.taints.clear();
      internal::ClearPresentBit(d.present, internal::kDeviceTaintsBit);
    }
  }
  if (!f.partitionable_devices &&
      !in_use(
          [](const Device& d) {
            return !d.consumes_counters.empty() || d.node_name || d.node_selector || d.all_nodes;
          },
          [](const resourcev1::ResourceSliceSpec& spec) {
            return !spec.shared_counters.empty() || spec.per_device_node_selection.has_value();
          })) {
    slice.spec.shared_counters.clear();
    internal::ClearPresentBit(slice.spec.present, internal::kSliceSpecSharedCountersBit);
    slice.spec.per_device_node_selection.reset();
    for (Device& d : devices) {
      d.consumes_counters.clear();
      internal::ClearPresentBit(d.present, internal::kDeviceConsumesCountersBit);
      d.node_name.reset();
      d.node_selector.reset();
      d.all_nodes.reset();
    }
  }
  if (!f.binding_conditions && !in_use(
                                   [](const Device& d) {
                                     return d.binds_to_node || !d.binding_conditions.empty() ||
                                            !d.binding_failure_conditions.empty();
                                   },
                                   no_spec_field)) {
    for (Device& d : devices) {
      d.binds_to_node.reset();
      d.binding_conditions.clear();
      internal::ClearPresentBit(d.present, internal::kDeviceBindingConditionsBit);
      d.binding_failure_conditions.clear();
      internal::ClearPresentBit(d.present, internal::kDeviceBindingFailureConditionsBit);
    }
  }
  if (!f.consumable_capacity &&
      !in_use(
          [](const Device& d) {
            return d.allow_multiple_allocations.has_value() ||
                   std::any_of(d.capacity.begin(), d.capacity.end(),
                               [](const auto& c) { return c.second.request_policy.has_value(); });
          },
          no_spec_field)) {
    for (Device& d : devices) {
      d.allow_multiple_allocations.reset();
      for (auto& [name, capacity] : d.capacity) capacity.request_policy.reset();
    }
  }
  if (!f.device_compatibility_groups &&
      !in_use(
          [](const Device& d) {
            return std::any_of(d.consumes_counters.begin(), d.consumes_counters.end(),
                               [](const auto& c) { return !c.compatibility_groups.empty(); });
          },
          no_spec_field)) {
    for (Device& d : devices) {
      for (resourcev1::DeviceCounterConsumption& c : d.consumes_counters) {
        c.compatibility_groups.clear();
        internal::ClearPresentBit(c.present, internal::kCounterConsumptionCompatibilityGroupsBit);
      }
    }
  }
}

FieldErrorList ValidateResourceSlice(const resourcev1::ResourceSlice& obj,
                                     const Features& features) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/false, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  Append(errs, ValidateResourceSliceSpec(obj.spec, nullptr, FieldPath("spec"), features));
  return errs;
}

FieldErrorList ValidateResourceSliceUpdate(const resourcev1::ResourceSlice& obj,
                                           const resourcev1::ResourceSlice& old,
                                           const Features& features) {
  FieldErrorList errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateResourceSliceSpec(obj.spec, &old.spec, FieldPath("spec"), features));
  return errs;
}

}  // namespace draplane::api::validation
