// DeviceClass and DeviceTaintRule validation (upstream: ValidateDeviceClass,
// ValidateDeviceClassUpdate, validateDeviceClassSpec, ValidateDeviceTaintRule,
// ValidateDeviceTaintRuleUpdate, ValidateDeviceTaintRuleStatusUpdate in
// pkg/apis/resource/validation/validation.go).
#include "api/validation/internal/common.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {
namespace {

using internal::Append;

// DeviceClass names use the declarative long-name format (validate.LongName), worded by
// validate/content.
std::vector<std::string> DeviceClassNameMessages(std::string_view name, bool prefix) {
  std::string masked(name);
  if (prefix && masked.size() > 1 && masked.back() == '-') {
    masked = masked.substr(0, masked.size() - 2) + "a";
  }
  return IsDNS1123SubdomainContent(masked);
}

FieldErrorList ValidateDeviceClassSpec(const resourcev1::DeviceClassSpec& spec,
                                       const resourcev1::DeviceClassSpec* old,
                                       const FieldPath& path) {
  FieldErrorList errs;
  // Selectors and configs that are exactly as before count as stored: they are not checked
  // again against limits that may have been introduced since. Any change (even reordering)
  // validates them as new.
  const bool selectors_stored = old != nullptr && old->selectors == spec.selectors;
  Append(errs,
         internal::ValidateSelectors(spec.selectors, path.Child("selectors"), selectors_stored));
  const bool config_stored = old != nullptr && old->config == spec.config;
  internal::ValidateList(
      spec.config, kDeviceConfigMaxSize, path.Child("config"),
      [&](const resourcev1::DeviceClassConfiguration& c, const FieldPath& p) {
        Append(errs, internal::ValidateDeviceConfiguration(c.opaque, p, config_stored));
      },
      errs);
  if (spec.extended_resource_name.has_value() &&
      !IsExtendedResourceName(*spec.extended_resource_name)) {
    errs.push_back(Invalid(path.Child("extendedResourceName"),
                           RenderValue(*spec.extended_resource_name),
                           "must be a valid extended resource name"));
  }
  return errs;
}

FieldErrorList ValidateDeviceTaintRuleSpec(const resourcev1::DeviceTaintRuleSpec& spec,
                                           const resourcev1::DeviceTaintRuleSpec* old,
                                           const FieldPath& path) {
  FieldErrorList errs;
  if (spec.device_selector.has_value()) {
    const resourcev1::DeviceTaintSelector& s = *spec.device_selector;
    FieldPath sp = path.Child("deviceSelector");
    if (s.driver.has_value()) Append(errs, ValidateDriverName(*s.driver, sp.Child("driver")));
    if (s.pool.has_value()) Append(errs, ValidatePoolName(*s.pool, sp.Child("pool")));
    if (s.device.has_value()) Append(errs, ValidateDeviceName(*s.device, sp.Child("device")));
  }
  Append(errs, internal::ValidateDeviceTaint(spec.taint, old != nullptr ? &old->taint : nullptr,
                                             path.Child("taint")));
  return errs;
}

FieldErrorList ValidateTaintRuleConditions(const resourcev1::DeviceTaintRule& obj) {
  FieldPath path = FieldPath("status").Child("conditions");
  FieldErrorList errs = ValidateConditions(obj.status.conditions, path);
  if (obj.status.conditions.size() > kDeviceTaintRuleStatusMaxConditions) {
    errs.push_back(TooMany(path, static_cast<int64_t>(obj.status.conditions.size()),
                           static_cast<int64_t>(kDeviceTaintRuleStatusMaxConditions)));
  }
  return errs;
}

}  // namespace

FieldErrorList ValidateDeviceClass(const resourcev1::DeviceClass& obj, const Features&) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/false,
                                           DeviceClassNameMessages, FieldPath("metadata"));
  Append(errs, ValidateDeviceClassSpec(obj.spec, nullptr, FieldPath("spec")));
  return errs;
}

FieldErrorList ValidateDeviceClassUpdate(const resourcev1::DeviceClass& obj,
                                         const resourcev1::DeviceClass& old, const Features&) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/false,
                                           DeviceClassNameMessages, FieldPath("metadata"));
  Append(errs, ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata")));
  Append(errs, ValidateDeviceClassSpec(obj.spec, &old.spec, FieldPath("spec")));
  return errs;
}

FieldErrorList ValidateDeviceTaintRule(const resourcev1::DeviceTaintRule& obj, const Features&) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/false, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  Append(errs, ValidateDeviceTaintRuleSpec(obj.spec, nullptr, FieldPath("spec")));
  return errs;
}

FieldErrorList ValidateDeviceTaintRuleUpdate(const resourcev1::DeviceTaintRule& obj,
                                             const resourcev1::DeviceTaintRule& old,
                                             const Features&) {
  FieldErrorList errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateDeviceTaintRuleSpec(obj.spec, &old.spec, FieldPath("spec")));
  return errs;
}

FieldErrorList ValidateDeviceTaintRuleStatusUpdate(const resourcev1::DeviceTaintRule& obj,
                                                   const resourcev1::DeviceTaintRule& old,
                                                   const Features&) {
  FieldErrorList errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateTaintRuleConditions(obj));
  return errs;
}

FieldErrorList ValidateDeviceTaintRuleStatus(const resourcev1::DeviceTaintRule& obj,
                                             const Features&) {
  return ValidateTaintRuleConditions(obj);
}

}  // namespace draplane::api::validation
