#include "api/validation/object_validation.h"

#include <utility>
#include <variant>

#include "api/validation/priority_class_validation.h"
#include "api/validation/quota_validation.h"
#include "api/validation/sharing_policy_validation.h"

namespace draplane::api::validation {
namespace {

bool HasClaimStatus(const resourcev1::ResourceClaim& c) {
  return c.status.allocation.has_value() || !c.status.reserved_for.empty() ||
         !c.status.devices.empty();
}

}  // namespace

bool ValidateObject(Object& object, Object* old, const Features& features, FieldErrorList* errors) {
  auto add = [errors](FieldErrorList more) {
    for (FieldError& e : more) errors->push_back(std::move(e));
  };
  if (auto* c = std::get_if<resourcev1::DeviceClass>(&object)) {
    auto* o = old ? std::get_if<resourcev1::DeviceClass>(old) : nullptr;
    add(o ? ValidateDeviceClassUpdate(*c, *o, features) : ValidateDeviceClass(*c, features));
    return true;
  }
  if (auto* s = std::get_if<resourcev1::ResourceSlice>(&object)) {
    auto* o = old ? std::get_if<resourcev1::ResourceSlice>(old) : nullptr;
    add(o ? ValidateResourceSliceUpdate(*s, *o, features) : ValidateResourceSlice(*s, features));
    return true;
  }
  if (auto* c = std::get_if<resourcev1::ResourceClaim>(&object)) {
    SetDefaults(c);
    if (auto* o = old ? std::get_if<resourcev1::ResourceClaim>(old) : nullptr) {
      SetDefaults(o);
      add(ValidateResourceClaimUpdate(*c, *o, features));
      add(ValidateResourceClaimStatusUpdate(*c, *o, features));
    } else {
      add(ValidateResourceClaim(*c, features));
      if (HasClaimStatus(*c)) add(ValidateResourceClaimStatus(*c, features));
    }
    return true;
  }
  if (auto* t = std::get_if<resourcev1::ResourceClaimTemplate>(&object)) {
    SetDefaults(t);
    if (auto* o = old ? std::get_if<resourcev1::ResourceClaimTemplate>(old) : nullptr) {
      SetDefaults(o);
      add(ValidateResourceClaimTemplateUpdate(*t, *o, features));
    } else {
      add(ValidateResourceClaimTemplate(*t, features));
    }
    return true;
  }
  if (auto* r = std::get_if<resourcev1::DeviceTaintRule>(&object)) {
    if (auto* o = old ? std::get_if<resourcev1::DeviceTaintRule>(old) : nullptr) {
      add(ValidateDeviceTaintRuleUpdate(*r, *o, features));
      add(ValidateDeviceTaintRuleStatusUpdate(*r, *o, features));
    } else {
      add(ValidateDeviceTaintRule(*r, features));
      if (!r->status.conditions.empty()) {
        add(ValidateDeviceTaintRuleStatus(*r, features));
      }
    }
    return true;
  }
  if (auto* q = std::get_if<corev1::ResourceQuota>(&object)) {
    if (auto* o = old ? std::get_if<corev1::ResourceQuota>(old) : nullptr) {
      add(ValidateResourceQuotaUpdate(*q, *o));
    } else {
      add(ValidateResourceQuota(*q));
    }
    return true;
  }
  if (auto* pc = std::get_if<schedulingv1::PriorityClass>(&object)) {
    SetDefaults(pc);
    if (auto* o = old ? std::get_if<schedulingv1::PriorityClass>(old) : nullptr) {
      SetDefaults(o);
      add(ValidatePriorityClassUpdate(*pc, *o));
    } else {
      add(ValidatePriorityClass(*pc));
    }
    return true;
  }
  if (auto* p = std::get_if<draplanev1alpha1::DeviceSharingPolicy>(&object)) {
    SetDefaults(p);
    if (auto* o = old ? std::get_if<draplanev1alpha1::DeviceSharingPolicy>(old) : nullptr) {
      SetDefaults(o);
      add(ValidateDeviceSharingPolicyUpdate(*p, *o));
      add(ValidateDeviceSharingPolicyStatusUpdate(*p, *o));
    } else {
      add(ValidateDeviceSharingPolicy(*p));
    }
    return true;
  }
  return false;
}

}  // namespace draplane::api::validation
