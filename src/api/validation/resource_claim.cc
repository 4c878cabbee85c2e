// ResourceClaim and ResourceClaimTemplate validation (upstream: ValidateResourceClaim,
// ValidateResourceClaimUpdate, ValidateResourceClaimStatusUpdate,
// validateResourceClaimStatusUpdate, validateAllocationResult, validateDeviceStatus,
// ValidateResourceClaimTemplate, ValidateResourceClaimTemplateUpdate in
// pkg/apis/resource/validation/validation.go).
#include <algorithm>
#include <set>
#include <tuple>

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
using internal::RequestNames;

std::string BareKey(const std::string& key) { return key; }

// structured.SharedDeviceID's String(): driver/pool/device, plus /shareID when shared.
std::string SharedDeviceID(std::string_view driver, std::string_view pool, std::string_view device,
                           const std::optional<std::string>& share_id) {
  std::string id = std::string(driver) + "/" + std::string(pool) + "/" + std::string(device);
  if (share_id.has_value()) id += "/" + *share_id;
  return id;
}

FieldErrorList ValidateDeviceRequestAllocationResult(
    const resourcev1::DeviceRequestAllocationResult& r, const FieldPath& path,
    const RequestNames& names) {
  FieldErrorList errs = internal::ValidateRequestNameRef(r.request, path.Child("request"), names);
  Append(errs, ValidateDriverName(r.driver, path.Child("driver")));
  Append(errs, ValidatePoolName(r.pool, path.Child("pool")));
  Append(errs, ValidateDeviceName(r.device, path.Child("device")));
  Append(errs,
         internal::ValidateBindingParameters(
             r.binding_conditions, PresentBit(r.present, internal::kResultBindingConditionsBit),
             r.binding_failure_conditions,
             PresentBit(r.present, internal::kResultBindingFailureConditionsBit), path));
  for (size_t i = 0; i < r.tolerations.size(); ++i) {
    Append(errs, internal::ValidateDeviceToleration(
                     r.tolerations[i], path.Child("tolerations").Index(static_cast<int64_t>(i))));
  }
  if (r.share_id.has_value()) Append(errs, ValidateUID(*r.share_id, path.Child("shareID")));
  Append(errs, internal::ValidateSkipNodeOperations(r.skip_node_operations,
                                                    path.Child("skipNodeOperations")));
  return errs;
}

FieldErrorList ValidateAllocationResult(const resourcev1::AllocationResult& alloc,
                                        const FieldPath& path, const RequestNames& names,
                                        bool stored) {
  FieldErrorList errs;
  FieldPath devices = path.Child("devices");
  internal::ValidateList(
      alloc.devices.results, kAllocationResultsMaxSize, devices.Child("results"),
      [&](const resourcev1::DeviceRequestAllocationResult& r, const FieldPath& p) {
        Append(errs, ValidateDeviceRequestAllocationResult(r, p, names));
      },
      errs);
  internal::ValidateList(
      alloc.devices.config, 2 * kDeviceConfigMaxSize, devices.Child("config"),
      [&](const resourcev1::DeviceAllocationConfiguration& c, const FieldPath& p) {
        if (c.source.empty()) {
          errs.push_back(Required(p.Child("source")));
        } else if (c.source != resourcev1::kAllocationConfigSourceFromClaim &&
                   c.source != resourcev1::kAllocationConfigSourceFromClass) {
          errs.push_back(
              NotSupported(p.Child("source"), RenderValue(c.source), {"FromClaim", "FromClass"}));
        }
        internal::ValidateSet(
            c.requests, kDeviceRequestsMaxSize, p.Child("requests"),
            [&](const std::string& ref, const FieldPath& rp) {
              Append(errs, internal::ValidateRequestNameRef(ref, rp, names));
            },
            [](const std::string& ref) { return ref; }, QuotedKey, errs);
        Append(errs, internal::ValidateDeviceConfiguration(c.opaque, p, stored));
      },
      errs);
  if (alloc.node_selector.has_value()) {
    Append(errs, ValidateNodeSelector(*alloc.node_selector, path.Child("nodeSelector")));
  }
  return errs;
}

FieldErrorList ValidateDeviceStatus(const resourcev1::AllocatedDeviceStatus& d,
                                    const FieldPath& path, const std::set<std::string>& allocated) {
  FieldErrorList errs = ValidateDriverName(d.driver, path.Child("driver"));
  Append(errs, ValidatePoolName(d.pool, path.Child("pool")));
  Append(errs, ValidateDeviceName(d.device, path.Child("device")));
  if (d.share_id.has_value()) Append(errs, ValidateUID(*d.share_id, path.Child("shareID")));
  std::string id = SharedDeviceID(d.driver, d.pool, d.device, d.share_id);
  if (!allocated.contains(id)) {
    errs.push_back(Invalid(path, id, "must be an allocated device in the claim"));
  }
  if (d.conditions.size() > kAllocatedDeviceStatusMaxConditions) {
    errs.push_back(TooMany(path.Child("conditions"), static_cast<int64_t>(d.conditions.size()),
                           static_cast<int64_t>(kAllocatedDeviceStatusMaxConditions)));
  }
  Append(errs, ValidateConditions(d.conditions, path.Child("conditions")));
  if (d.data.has_value()) {
    Append(errs, internal::ValidateRawExtension(d.data, path.Child("data"), /*stored=*/false,
                                                kAllocatedDeviceStatusDataMaxLength));
  }
  if (d.network_data.has_value()) {
    const resourcev1::NetworkDeviceData& n = *d.network_data;
    FieldPath np = path.Child("networkData");
    if (n.interface_name.size() > kNetworkDeviceDataInterfaceNameMaxLength) {
      errs.push_back(TooLong(np.Child("interfaceName"),
                             static_cast<int64_t>(kNetworkDeviceDataInterfaceNameMaxLength)));
    }
    if (n.hardware_address.size() > kNetworkDeviceDataHardwareAddressMaxLength) {
      errs.push_back(TooLong(np.Child("hardwareAddress"),
                             static_cast<int64_t>(kNetworkDeviceDataHardwareAddressMaxLength)));
    }
    internal::ValidateSet(
        n.ips, kNetworkDeviceDataMaxIPs, np.Child("ips"),
        [&](const std::string& ip, const FieldPath& p) {
          Append(errs, ValidateInterfaceAddress(ip, p));
        },
        [](const std::string& ip) { return ip; }, QuotedKey, errs);
  }
  return errs;
}

auto ConsumerKey(const resourcev1::ResourceClaimConsumerReference& r) {
  return std::tie(r.api_group, r.resource, r.name, r.uid);
}

FieldErrorList ValidateClaimStatus(const resourcev1::ResourceClaimStatus& status,
                                   const resourcev1::ResourceClaimStatus& old, bool deleting,
                                   const RequestNames& names, const FieldPath& path) {
  FieldErrorList errs;
  internal::ValidateSet(
      status.reserved_for, kResourceClaimReservedForMaxSize, path.Child("reservedFor"),
      [&](const resourcev1::ResourceClaimConsumerReference& r, const FieldPath& p) {
        if (r.resource.empty()) errs.push_back(Required(p.Child("resource")));
        if (r.name.empty()) errs.push_back(Required(p.Child("name")));
        if (r.uid.empty()) errs.push_back(Required(p.Child("uid")));
      },
      [](const resourcev1::ResourceClaimConsumerReference& r) { return r.uid; }, QuotedKey, errs);

  std::set<std::string> allocated;
  if (status.allocation.has_value()) {
    for (const resourcev1::DeviceRequestAllocationResult& r : status.allocation->devices.results) {
      allocated.insert(SharedDeviceID(r.driver, r.pool, r.device, r.share_id));
    }
  }
  internal::ValidateSet(
      status.devices, -1, path.Child("devices"),
      [&](const resourcev1::AllocatedDeviceStatus& d, const FieldPath& p) {
        Append(errs, ValidateDeviceStatus(d, p, allocated));
      },
      [](const resourcev1::AllocatedDeviceStatus& d) {
        return SharedDeviceID(d.driver, d.pool, d.device, d.share_id);
      },
      BareKey, errs);

  if (!status.reserved_for.empty()) {
    if (!status.allocation.has_value()) {
      errs.push_back(
          Forbidden(path.Child("reservedFor"), "may not be specified when `allocated` is not set"));
    } else if (deleting) {
      // Consumers may be removed while the claim is being deleted, but not added.
      std::set<decltype(ConsumerKey(status.reserved_for[0]))> before;
      for (const auto& r : old.reserved_for) before.insert(ConsumerKey(r));
      for (const auto& r : status.reserved_for) {
        if (!before.contains(ConsumerKey(r))) {
          errs.push_back(Forbidden(path.Child("reservedFor"),
                                   "new entries may not be added while `deallocationRequested` "
                                   "or `deletionTimestamp` are set"));
          break;
        }
      }
    }
  }

  if (old.allocation.has_value() && status.allocation.has_value()) {
    // Set once, then only cleared; unchanged results are not validated again.
    if (!(*old.allocation == *status.allocation)) {
      errs.push_back(Invalid(path.Child("allocation"), "null", "field is immutable"));
    }
  } else if (status.allocation.has_value()) {
    Append(errs, ValidateAllocationResult(*status.allocation, path.Child("allocation"), names,
                                          /*stored=*/false));
  }
  return errs;
}

}  // namespace

void DropDisabledFields(resourcev1::ResourceClaimSpec& spec,
                        const resourcev1::ResourceClaimSpec* old, const Features& f) {
  using resourcev1::DeviceRequest;
  using resourcev1::DeviceSubRequest;
  using resourcev1::ExactDeviceRequest;
  // Whether `old` uses a gate's fields in a request: `exact` of its exactly, `sub` of one of
  // its subrequests.
  auto in_use = [old](auto exact, auto sub) {
    if (old == nullptr) return false;
    return std::any_of(
        old->devices.requests.begin(), old->devices.requests.end(), [&](const DeviceRequest& r) {
          return (r.exactly.has_value() && exact(*r.exactly)) ||
                 std::any_of(r.first_available.begin(), r.first_available.end(), sub);
        });
  };
  // Applies `exact` to every exactly and `sub` to every subrequest of the new spec.
  auto clear = [&spec](auto exact, auto sub) {
    for (DeviceRequest& r : spec.devices.requests) {
      if (r.exactly.has_value()) exact(*r.exactly);
      for (DeviceSubRequest& s : r.first_available) sub(s);
    }
  };
  auto none = [](const auto&) { return false; };
  auto nothing = [](auto&) {};
  if (!f.device_taints &&
      !in_use([](const ExactDeviceRequest& e) { return !e.tolerations.empty(); },
              [](const DeviceSubRequest& s) { return !s.tolerations.empty(); })) {
    clear(
        [](ExactDeviceRequest& e) {
          e.tolerations.clear();
          internal::ClearPresentBit(e.present, internal::kExactRequestTolerationsBit);
        },
        [](DeviceSubRequest& s) {
          s.tolerations.clear();
          internal::ClearPresentBit(s.present, internal::kSubRequestTolerationsBit);
        });
  }
  if (!f.prioritized_list &&
      !(old != nullptr &&
        std::any_of(old->devices.requests.begin(), old->devices.requests.end(),
                    [](const DeviceRequest& r) { return !r.first_available.empty(); }))) {
    for (DeviceRequest& r : spec.devices.requests) {
      r.first_available.clear();
      internal::ClearPresentBit(r.present, internal::kRequestFirstAvailableBit);
    }
  }
  if (!f.admin_access &&
      !in_use([](const ExactDeviceRequest& e) { return e.admin_access.has_value(); }, none)) {
    clear([](ExactDeviceRequest& e) { e.admin_access.reset(); }, nothing);
  }
  const bool distinct_in_use =
      old != nullptr &&
      std::any_of(old->devices.constraints.begin(), old->devices.constraints.end(),
                  [](const auto& c) { return c.distinct_attribute.has_value(); });
  if (!f.consumable_capacity && !distinct_in_use &&
      !in_use([](const ExactDeviceRequest& e) { return e.capacity.has_value(); },
              [](const DeviceSubRequest& s) { return s.capacity.has_value(); })) {
    for (auto& c : spec.devices.constraints) c.distinct_attribute.reset();
    clear([](ExactDeviceRequest& e) { e.capacity.reset(); },
          [](DeviceSubRequest& s) { s.capacity.reset(); });
  }
  if (!f.derived_attributes &&
      !in_use([](const ExactDeviceRequest& e) { return !e.derived_attributes.empty(); },
              [](const DeviceSubRequest& s) { return !s.derived_attributes.empty(); })) {
    clear(
        [](ExactDeviceRequest& e) {
          e.derived_attributes.clear();
          internal::ClearPresentBit(e.present, internal::kExactRequestDerivedAttributesBit);
        },
        [](DeviceSubRequest& s) {
          s.derived_attributes.clear();
          internal::ClearPresentBit(s.present, internal::kSubRequestDerivedAttributesBit);
        });
  }
}

FieldErrorList ValidateResourceClaim(const resourcev1::ResourceClaim& obj,
                                     const Features& features) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/true, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  Append(errs, internal::ValidateDeviceClaim(obj.spec.devices, FieldPath("spec").Child("devices"),
                                             /*stored=*/false, features));
  return errs;
}

FieldErrorList ValidateResourceClaimUpdate(const resourcev1::ResourceClaim& obj,
                                           const resourcev1::ResourceClaim& old, const Features&) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/true, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  Append(errs, ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata")));
  // The spec is immutable; an unchanged spec is not validated again.
  if (!(obj.spec == old.spec)) {
    errs.push_back(Invalid(FieldPath("spec"), "null", "field is immutable"));
  }
  return errs;
}

FieldErrorList ValidateResourceClaimStatusUpdate(const resourcev1::ResourceClaim& obj,
                                                 const resourcev1::ResourceClaim& old,
                                                 const Features&) {
  FieldErrorList errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata"));
  RequestNames names(obj.spec.devices);
  Append(errs,
         ValidateClaimStatus(obj.status, old.status, obj.metadata.deletion_timestamp.has_value(),
                             names, FieldPath("status")));
  return errs;
}

FieldErrorList ValidateResourceClaimStatus(const resourcev1::ResourceClaim& obj, const Features&) {
  RequestNames names(obj.spec.devices);
  return ValidateClaimStatus(obj.status, resourcev1::ResourceClaimStatus{},
                             obj.metadata.deletion_timestamp.has_value(), names,
                             FieldPath("status"));
}

FieldErrorList ValidateResourceClaimTemplate(const resourcev1::ResourceClaimTemplate& obj,
                                             const Features& features) {
  FieldErrorList errs = ValidateObjectMeta(obj.metadata, /*namespaced=*/true, NameIsDNSSubdomain,
                                           FieldPath("metadata"));
  FieldPath spec("spec");
  Append(errs, ValidateTemplateObjectMeta(obj.spec.metadata, spec.Child("metadata")));
  Append(errs,
         internal::ValidateDeviceClaim(obj.spec.spec.devices, spec.Child("spec").Child("devices"),
                                       /*stored=*/false, features));
  return errs;
}

FieldErrorList ValidateResourceClaimTemplateUpdate(const resourcev1::ResourceClaimTemplate& obj,
                                                   const resourcev1::ResourceClaimTemplate& old,
                                                   const Features&) {
  FieldErrorList errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, FieldPath("metadata"));
  if (!(obj.spec == old.spec)) {
    errs.push_back(Invalid(FieldPath("spec"), "null", "field is immutable"));
  }
  return errs;
}

}  // namespace draplane::api::validation
