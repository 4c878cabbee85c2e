// Shared rules of the resource.k8s.io/v1 validation: request references, CEL length, opaque
// configuration, taints, tolerations, binding conditions, skipNodeOperations, the claim spec;
// plus feature-gate parsing and defaulting. Upstream: pkg/apis/resource/validation/validation.go
// (validateDeviceClaim, validateDeviceRequest, validateRequestNameRef, validateCELExpression,
// validateOpaqueConfiguration, validateRawExtension, validateDeviceTaint,
// validateDeviceToleration, validateDeviceBindingParameters, validateSkipNodeOperations) and
// pkg/apis/resource/v1/defaults.go.
#include "api/validation/internal/common.h"

#include <boost/json.hpp>

#include "api/validation/internal/render.h"
#include "api/validation/names.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {
namespace internal {
namespace {

constexpr std::string_view kRequestRefDetail =
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'";

const std::vector<std::string> kTaintEffects = {"NoExecute", "NoSchedule", "None"};

bool IsTaintEffect(std::string_view effect) {
  return effect == "NoExecute" || effect == "NoSchedule" || effect == "None";
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

void ValidateAllocationMode(std::string_view mode, int64_t count, const FieldPath& mode_path,
                            const FieldPath& count_path, FieldErrorList& errs) {
  if (mode == resourcev1::kDeviceAllocationModeAll) {
    if (count != 0) {
      errs.push_back(Invalid(count_path, RenderValue(count),
                             "must not be specified when allocationMode is 'All'"));
    }
  } else if (mode == resourcev1::kDeviceAllocationModeExactCount) {
    if (count <= 0) {
      errs.push_back(Invalid(count_path, RenderValue(count), "must be greater than zero"));
    }
  } else {
    errs.push_back(NotSupported(mode_path, RenderValue(mode), {"All", "ExactCount"}));
  }
}

void ValidateTolerations(const std::vector<resourcev1::DeviceToleration>& tolerations,
                         const FieldPath& path, FieldErrorList& errs) {
  for (size_t i = 0; i < tolerations.size(); ++i) {
    Append(errs, ValidateDeviceToleration(tolerations[i], path.Index(static_cast<int64_t>(i))));
  }
}

// Whether a constraint of the claim on `attribute` applies to the request `request` (or to the
// subrequest `request`/`sub`).
bool ConstraintUses(const resourcev1::DeviceClaim& claim, std::string_view attribute,
                    std::string_view request, std::string_view sub) {
  const std::string full = sub.empty() ? "" : std::string(request) + "/" + std::string(sub);
  for (const resourcev1::DeviceConstraint& c : claim.constraints) {
    if (c.match_attribute.value_or("") != attribute &&
        c.distinct_attribute.value_or("") != attribute) {
      continue;
    }
    if (c.requests.empty()) return true;
    for (const std::string& r : c.requests) {
      if (r == request || (!full.empty() && r == full)) return true;
    }
  }
  return false;
}

// KEP-6080: at most 32 derived attributes with unique, fully qualified names, each with an
// expression (CEL compilation is the cel module's check) and each used by a matchAttribute or
// distinctAttribute constraint that applies to the request.
void ValidateDerivedAttributes(const std::vector<resourcev1::DeviceDerivedAttribute>& derived,
                               const FieldPath& path, bool stored,
                               const resourcev1::DeviceClaim& claim, std::string_view request,
                               std::string_view sub, FieldErrorList& errs) {
  ValidateSet(
      derived, kDerivedAttributesMaxSize, path,
      [&](const resourcev1::DeviceDerivedAttribute& d, const FieldPath& p) {
        if (d.name.empty()) {
          errs.push_back(Required(p.Child("name")));
        } else {
          Append(errs, ValidateFullyQualifiedName(d.name, p.Child("name")));
          if (!ConstraintUses(claim, d.name, request, sub)) {
            errs.push_back(Invalid(p.Child("name"), RenderValue(d.name),
                                   "must be used by a matchAttribute or distinctAttribute "
                                   "constraint that applies to this request"));
          }
        }
        if (d.expression.empty()) {
          errs.push_back(Required(p.Child("expression")));
        } else {
          Append(errs, ValidateCELExpression(d.expression, p.Child("expression"), stored));
        }
      },
      [](const resourcev1::DeviceDerivedAttribute& d) { return d.name; }, QuotedKey, errs);
}

void ValidateExactRequest(const resourcev1::ExactDeviceRequest& req, const FieldPath& path,
                          bool stored, const resourcev1::DeviceClaim& claim,
                          std::string_view request, FieldErrorList& errs) {
  Append(errs, ValidateDeviceClassName(req.device_class_name, path.Child("deviceClassName")));
  Append(errs, ValidateSelectors(req.selectors, path.Child("selectors"), stored));
  ValidateAllocationMode(req.allocation_mode, req.count, path.Child("allocationMode"),
                         path.Child("count"), errs);
  ValidateTolerations(req.tolerations, path.Child("tolerations"), errs);
  ValidateDerivedAttributes(req.derived_attributes, path.Child("derivedAttributes"), stored, claim,
                            request, "", errs);
}

void ValidateSubRequest(const resourcev1::DeviceSubRequest& sub, const FieldPath& path, bool stored,
                        const resourcev1::DeviceClaim& claim, std::string_view request,
                        FieldErrorList& errs) {
  Append(errs, ValidateDeviceName(sub.name, path.Child("name")));
  Append(errs, ValidateDeviceClassName(sub.device_class_name, path.Child("deviceClassName")));
  Append(errs, ValidateSelectors(sub.selectors, path.Child("selectors"), stored));
  ValidateAllocationMode(sub.allocation_mode, sub.count, path.Child("allocationMode"),
                         path.Child("count"), errs);
  ValidateTolerations(sub.tolerations, path.Child("tolerations"), errs);
  ValidateDerivedAttributes(sub.derived_attributes, path.Child("derivedAttributes"), stored, claim,
                            request, sub.name, errs);
}

void ValidateRequest(const resourcev1::DeviceRequest& req, const FieldPath& path, bool stored,
                     const resourcev1::DeviceClaim& claim, FieldErrorList& errs) {
  Append(errs, ValidateDeviceName(req.name, path.Child("name")));
  const bool has_first_available = !req.first_available.empty();
  const bool has_exactly = req.exactly.has_value();
  if (!has_first_available && !has_exactly) {
    errs.push_back(Required(path, "exactly one of `exactly` or `firstAvailable` is required"));
  } else if (has_first_available && has_exactly) {
    errs.push_back(Invalid(path, "null",
                           "exactly one of `exactly` or `firstAvailable` is required, but "
                           "multiple fields are set"));
  } else if (has_first_available) {
    ValidateSet(
        req.first_available, kFirstAvailableDeviceRequestMaxSize, path.Child("firstAvailable"),
        [&](const resourcev1::DeviceSubRequest& sub, const FieldPath& p) {
          ValidateSubRequest(sub, p, stored, claim, req.name, errs);
        },
        [](const resourcev1::DeviceSubRequest& sub) { return sub.name; }, QuotedKey, errs);
  } else {
    ValidateExactRequest(*req.exactly, path.Child("exactly"), stored, claim, req.name, errs);
  }
}

void ValidateReferenceSet(const std::vector<std::string>& refs, const FieldPath& path,
                          const RequestNames& names, FieldErrorList& errs) {
  ValidateSet(
      refs, kDeviceRequestsMaxSize, path,
      [&](const std::string& ref, const FieldPath& p) {
        Append(errs, ValidateRequestNameRef(ref, p, names));
      },
      [](const std::string& ref) { return ref; }, QuotedKey, errs);
}

}  // namespace

std::string RenderQuantity(const Quantity& q) { return RenderValue(q.ToString()); }

RequestNames::RequestNames(const resourcev1::DeviceClaim& claim) {
  for (const resourcev1::DeviceRequest& req : claim.requests) {
    if (req.first_available.empty()) {
      names_[req.name] = std::nullopt;
      continue;
    }
    std::set<std::string> subs;
    for (const resourcev1::DeviceSubRequest& sub : req.first_available) subs.insert(sub.name);
    names_[req.name] = std::move(subs);
  }
}

bool RequestNames::Has(std::string_view reference) const {
  std::vector<std::string_view> segments = Split(reference, '/');
  if (segments.size() > 2) return false;
  auto it = names_.find(segments[0]);
  if (it == names_.end()) return false;
  if (segments.size() == 1) return true;
  return it->second.has_value() && it->second->contains(std::string(segments[1]));
}

FieldErrorList ValidateRequestNameRef(std::string_view reference, const FieldPath& path,
                                      const RequestNames& names) {
  FieldErrorList errs;
  std::vector<std::string_view> segments = Split(reference, '/');
  if (segments.size() > 2) {
    errs.push_back(Invalid(path, RenderValue(reference), std::string(kRequestRefDetail)));
    return errs;
  }
  for (std::string_view segment : segments) Append(errs, ValidateDeviceName(segment, path));
  if (!names.Has(reference)) {
    errs.push_back(Invalid(path, RenderValue(reference), std::string(kRequestRefDetail)));
  }
  return errs;
}

FieldErrorList ValidateCELExpression(std::string_view expression, const FieldPath& path,
                                     bool stored) {
  if (stored) return {};
  if (expression.size() > kCELSelectorExpressionMaxLength) {
    return {TooLong(path, static_cast<int64_t>(kCELSelectorExpressionMaxLength))};
  }
  return {};
}

FieldErrorList ValidateSelectors(const std::vector<resourcev1::DeviceSelector>& selectors,
                                 const FieldPath& path, bool stored) {
  FieldErrorList errs;
  ValidateList(
      selectors, kDeviceSelectorsMaxSize, path,
      [&](const resourcev1::DeviceSelector& s, const FieldPath& p) {
        if (!s.cel.has_value()) {
          errs.push_back(Required(p.Child("cel")));
        } else {
          Append(errs, ValidateCELExpression(s.cel->expression, p.Child("cel").Child("expression"),
                                             stored));
        }
      },
      errs);
  return errs;
}

FieldErrorList ValidateRawExtension(const RawJson& raw, const FieldPath& path, bool stored,
                                    size_t max_length) {
  if (!raw.has_value() || raw.value().is_null()) return {Required(path)};
  const boost::json::value& v = raw.value();
  // Upstream measures the raw request bytes; we measure the compact JSON encoding.
  if (!stored && boost::json::serialize(v).size() > max_length) {
    return {TooLong(path, static_cast<int64_t>(max_length))};
  }
  if (!v.is_object()) return {Invalid(path, "\"<value omitted>\"", "must be a valid JSON object")};
  return {};
}

FieldErrorList ValidateDeviceConfiguration(
    const std::optional<resourcev1::OpaqueDeviceConfiguration>& opaque, const FieldPath& path,
    bool stored) {
  FieldErrorList errs;
  if (!opaque.has_value()) {
    errs.push_back(Required(path.Child("opaque")));
    return errs;
  }
  FieldPath p = path.Child("opaque");
  Append(errs, ValidateDriverName(opaque->driver, p.Child("driver")));
  Append(errs, ValidateRawExtension(opaque->parameters, p.Child("parameters"), stored,
                                    kOpaqueParametersMaxLength));
  return errs;
}

FieldErrorList ValidateDeviceTaint(const resourcev1::DeviceTaint& taint,
                                   const resourcev1::DeviceTaint* old, const FieldPath& path) {
  FieldErrorList errs = ValidateLabelName(taint.key, path.Child("key"));
  if (!taint.value.empty()) Append(errs, ValidateLabelValue(taint.value, path.Child("value")));
  if (old == nullptr || old->effect != taint.effect) {
    if (taint.effect.empty()) {
      errs.push_back(Required(path.Child("effect")));
    } else if (!IsTaintEffect(taint.effect)) {
      errs.push_back(NotSupported(path.Child("effect"), RenderValue(taint.effect), kTaintEffects));
    }
  }
  return errs;
}

FieldErrorList ValidateDeviceToleration(const resourcev1::DeviceToleration& t,
                                        const FieldPath& path) {
  FieldErrorList errs;
  if (!t.key.empty()) Append(errs, ValidateLabelName(t.key, path.Child("key")));
  if (t.operator_ == resourcev1::kDeviceTolerationOperatorExists) {
    if (!t.value.empty()) {
      errs.push_back(Invalid(path.Child("value"), RenderValue(t.value),
                             "must be empty for operator `Exists`"));
    }
  } else if (t.operator_ == resourcev1::kDeviceTolerationOperatorEqual) {
    Append(errs, ValidateLabelValue(t.value, path.Child("value")));
  } else if (t.operator_.empty()) {
    errs.push_back(Required(path.Child("operator")));
  } else {
    errs.push_back(
        NotSupported(path.Child("operator"), RenderValue(t.operator_), {"Equal", "Exists"}));
  }
  if (!t.effect.empty() && !IsTaintEffect(t.effect)) {
    errs.push_back(NotSupported(path.Child("effect"), RenderValue(t.effect), kTaintEffects));
  }
  return errs;
}

FieldErrorList ValidateBindingParameters(const std::vector<std::string>& conditions,
                                         bool conditions_present,
                                         const std::vector<std::string>& failure_conditions,
                                         bool failure_conditions_present, const FieldPath& path) {
  FieldErrorList errs;
  FieldPath cpath = path.Child("bindingConditions");
  FieldPath fpath = path.Child("bindingFailureConditions");
  ValidateList(
      conditions, kBindingConditionsMaxSize, cpath,
      [&](const std::string& c, const FieldPath& p) { Append(errs, ValidateLabelName(c, p)); },
      errs);
  ValidateList(
      failure_conditions, kBindingFailureConditionsMaxSize, fpath,
      [&](const std::string& c, const FieldPath& p) { Append(errs, ValidateLabelName(c, p)); },
      errs);
  std::set<std::string_view> seen;
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (!seen.insert(conditions[i]).second) {
      errs.push_back(Duplicate(cpath.Index(static_cast<int64_t>(i)), RenderValue(conditions[i])));
    }
  }
  std::set<std::string_view> all_conditions(conditions.begin(), conditions.end());
  std::set<std::string_view> seen_failures;
  for (size_t i = 0; i < failure_conditions.size(); ++i) {
    const std::string& c = failure_conditions[i];
    if (!seen_failures.insert(c).second) {
      errs.push_back(Duplicate(fpath.Index(static_cast<int64_t>(i)), RenderValue(c)));
    }
    if (all_conditions.contains(c)) {
      errs.push_back(Invalid(fpath.Index(static_cast<int64_t>(i)), RenderValue(c),
                             "bindingFailureConditions must not overlap with bindingConditions"));
    }
  }
  if (conditions.empty() && !failure_conditions.empty()) {
    errs.push_back(Invalid(cpath, RenderStringList(conditions, conditions_present),
                           "bindingConditions are required to use bindingFailureConditions"));
  }
  if (failure_conditions.empty() && !conditions.empty()) {
    errs.push_back(Invalid(fpath, RenderStringList(failure_conditions, failure_conditions_present),
                           "bindingFailureConditions are required to use bindingConditions"));
  }
  return errs;
}

FieldErrorList ValidateSkipNodeOperations(const std::vector<std::string>& operations,
                                          const FieldPath& path) {
  FieldErrorList errs;
  std::set<std::string_view> seen;
  bool prepare = false;
  bool unprepare = false;
  bool all = false;
  for (size_t i = 0; i < operations.size(); ++i) {
    const std::string& op = operations[i];
    FieldPath p = path.Index(static_cast<int64_t>(i));
    if (op != "*" && op != "NodePrepareResources" && op != "NodeUnprepareResources") {
      errs.push_back(NotSupported(p, RenderValue(op),
                                  {"*", "NodePrepareResources", "NodeUnprepareResources"}));
    }
    if (!seen.insert(op).second) errs.push_back(Duplicate(p, RenderValue(op)));
    prepare = prepare || op == "NodePrepareResources";
    unprepare = unprepare || op == "NodeUnprepareResources";
    all = all || op == "*";
  }
  if (prepare && !unprepare && !all) {
    errs.push_back(Invalid(path, RenderStringList(operations, true),
                           "NodePrepareResources cannot be skipped unless NodeUnprepareResources "
                           "is also skipped"));
  }
  return errs;
}

FieldErrorList ValidateDeviceClaim(const resourcev1::DeviceClaim& claim, const FieldPath& path,
                                   bool stored, const Features& features) {
  FieldErrorList errs;
  RequestNames names(claim);
  ValidateSet(
      claim.requests, kDeviceRequestsMaxSize, path.Child("requests"),
      [&](const resourcev1::DeviceRequest& req, const FieldPath& p) {
        ValidateRequest(req, p, stored, claim, errs);
      },
      [](const resourcev1::DeviceRequest& req) { return req.name; }, QuotedKey, errs);
  ValidateList(
      claim.constraints, kDeviceConstraintsMaxSize, path.Child("constraints"),
      [&](const resourcev1::DeviceConstraint& c, const FieldPath& p) {
        ValidateReferenceSet(c.requests, p.Child("requests"), names, errs);
        if (c.match_attribute.has_value()) {
          Append(errs, ValidateFullyQualifiedName(*c.match_attribute, p.Child("matchAttribute")));
        } else if (c.distinct_attribute.has_value()) {
          Append(errs,
                 ValidateFullyQualifiedName(*c.distinct_attribute, p.Child("distinctAttribute")));
        } else if (features.consumable_capacity) {
          // Upstream's wording, even though no field is set.
          errs.push_back(Required(p,
                                  "exactly one of \"matchAttribute\" or \"distinctAttribute\" is "
                                  "required, but multiple fields are set"));
        } else {
          errs.push_back(Required(p.Child("matchAttribute")));
        }
      },
      errs);
  ValidateList(
      claim.config, kDeviceConfigMaxSize, path.Child("config"),
      [&](const resourcev1::DeviceClaimConfiguration& c, const FieldPath& p) {
        ValidateReferenceSet(c.requests, p.Child("requests"), names, errs);
        Append(errs, ValidateDeviceConfiguration(c.opaque, p, stored));
      },
      errs);
  return errs;
}

}  // namespace internal

Status ParseFeatureGates(std::string_view text, Features* features) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument,
                    "feature gate \"" + std::string(item) + "\" has no \"=true\" or \"=false\"");
    }
    std::string_view name = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    if (value != "true" && value != "false") {
      return Status(StatusCode::kInvalidArgument, "feature gate " + std::string(name) +
                                                      ": value must be true or false, not \"" +
                                                      std::string(value) + "\"");
    }
    bool on = value == "true";
    if (name == "DRAConsumableCapacity") {
      features->consumable_capacity = on;
    } else if (name == "DRAFractionalCapacityRange") {
      features->fractional_capacity_range = on;
    } else if (name == "DRAListTypeAttributes") {
      features->list_type_attributes = on;
    } else if (name == "DRADeviceCompatibilityGroups") {
      features->device_compatibility_groups = on;
    } else if (name == "DRADerivedAttributes") {
      features->derived_attributes = on;
    } else if (name == "DRAAdminAccess") {
      features->admin_access = on;
    } else if (name == "DRAPrioritizedList") {
      features->prioritized_list = on;
    } else if (name == "DRADeviceTaints") {
      features->device_taints = on;
    } else if (name == "DRAPartitionableDevices") {
      features->partitionable_devices = on;
    } else if (name == "DRADeviceBindingConditions") {
      features->binding_conditions = on;
    } else {
      return Status(StatusCode::kInvalidArgument,
                    "unknown feature gate " + std::string(name) +
                        " (known: DRAConsumableCapacity, DRAFractionalCapacityRange, "
                        "DRAListTypeAttributes, DRADeviceCompatibilityGroups, "
                        "DRADerivedAttributes, DRAAdminAccess, DRAPrioritizedList, "
                        "DRADeviceTaints, DRAPartitionableDevices, DRADeviceBindingConditions)");
    }
  }
  return Status::Ok();
}

namespace {

template <typename Request>
void DefaultRequest(Request& req) {
  if (req.allocation_mode.empty()) {
    req.allocation_mode = std::string(resourcev1::kDeviceAllocationModeExactCount);
  }
  if (req.allocation_mode == resourcev1::kDeviceAllocationModeExactCount && req.count == 0) {
    req.count = 1;
  }
  for (resourcev1::DeviceToleration& t : req.tolerations) {
    if (t.operator_.empty()) t.operator_ = std::string(resourcev1::kDeviceTolerationOperatorEqual);
  }
}

void DefaultClaimSpec(resourcev1::ResourceClaimSpec& spec) {
  for (resourcev1::DeviceRequest& req : spec.devices.requests) {
    if (req.exactly.has_value()) DefaultRequest(*req.exactly);
    for (resourcev1::DeviceSubRequest& sub : req.first_available) DefaultRequest(sub);
  }
}

}  // namespace

void SetDefaults(resourcev1::ResourceClaim* claim) {
  DefaultClaimSpec(claim->spec);
  if (claim->status.allocation.has_value()) {
    for (resourcev1::DeviceRequestAllocationResult& r : claim->status.allocation->devices.results) {
      for (resourcev1::DeviceToleration& t : r.tolerations) {
        if (t.operator_.empty()) {
          t.operator_ = std::string(resourcev1::kDeviceTolerationOperatorEqual);
        }
      }
    }
  }
}

void SetDefaults(resourcev1::ResourceClaimTemplate* tmpl) { DefaultClaimSpec(tmpl->spec.spec); }

}  // namespace draplane::api::validation
