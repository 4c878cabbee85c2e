#include "api/validation/pool_status_request_validation.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "api/validation/internal/common.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

namespace ra3 = resourcev1alpha3;
using internal::Append;

void AtLeast(const std::optional<int32_t>& value, int32_t minimum, const FieldPath& path,
             FieldErrorList& errs) {
  if (value && *value < minimum) {
    errs.push_back(Invalid(path, RenderValue(int64_t{*value}),
                           "must be greater than or equal to " + std::to_string(minimum)));
  }
}

FieldErrorList ValidateSpec(const ra3::ResourcePoolStatusRequestSpec& spec, const FieldPath& path) {
  FieldErrorList errs;
  if (spec.driver.empty()) {
    errs.push_back(Required(path.Child("driver")));
  } else {
    Append(errs, ValidateDriverName(spec.driver, path.Child("driver")));
  }
  if (spec.pool_name) Append(errs, ValidatePoolName(*spec.pool_name, path.Child("poolName")));
  AtLeast(spec.limit, 1, path.Child("limit"), errs);
  if (spec.limit && *spec.limit > kPoolStatusMaxLimit) {
    errs.push_back(Invalid(path.Child("limit"), RenderValue(int64_t{*spec.limit}),
                           "must be less than or equal to " + std::to_string(kPoolStatusMaxLimit)));
  }
  if (spec.default_partition_type_attribute) {
    Append(errs, ValidateFullyQualifiedName(*spec.default_partition_type_attribute,
                                            path.Child("defaultPartitionTypeAttribute")));
  }
  return errs;
}

void ValidatePool(const ra3::PoolStatus& pool, const FieldPath& path, FieldErrorList& errs) {
  if (pool.driver.empty()) {
    errs.push_back(Required(path.Child("driver")));
  } else {
    Append(errs, ValidateDriverName(pool.driver, path.Child("driver")));
  }
  if (pool.pool_name.empty()) {
    errs.push_back(Required(path.Child("poolName")));
  } else {
    Append(errs, ValidatePoolName(pool.pool_name, path.Child("poolName")));
  }
  if (pool.node_name) Append(errs, ValidateNodeName(*pool.node_name, path.Child("nodeName")));
  if (pool.generation < 0) {
    errs.push_back(Invalid(path.Child("generation"), RenderValue(pool.generation),
                           "must be greater than or equal to 0"));
  }
  AtLeast(pool.resource_slice_count, 1, path.Child("resourceSliceCount"), errs);
  AtLeast(pool.total_devices, 0, path.Child("totalDevices"), errs);
  AtLeast(pool.allocated_devices, 0, path.Child("allocatedDevices"), errs);
  AtLeast(pool.available_devices, 0, path.Child("availableDevices"), errs);
  AtLeast(pool.unavailable_devices, 0, path.Child("unavailableDevices"), errs);
  if (pool.validation_error && pool.validation_error->size() > kPoolStatusMaxValidationError) {
    errs.push_back(TooLong(path.Child("validationError"), kPoolStatusMaxValidationError));
  }
  const FieldPath partitions = path.Child("partitionSummary");
  if (pool.partition_summary.size() > kPoolStatusMaxSummaryItems) {
    errs.push_back(TooMany(partitions, static_cast<int64_t>(pool.partition_summary.size()),
                           kPoolStatusMaxSummaryItems));
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < pool.partition_summary.size(); ++i) {
    const ra3::PartitionTypeStatus& p = pool.partition_summary[i];
    const FieldPath at = partitions.Index(static_cast<int64_t>(i));
    if (p.attribute.empty()) {
      errs.push_back(Required(at.Child("attribute")));
    } else {
      Append(errs, ValidateFullyQualifiedName(p.attribute, at.Child("attribute")));
    }
    if (p.type.empty()) errs.push_back(Required(at.Child("type")));
    if (!p.total) errs.push_back(Required(at.Child("total")));
    if (!p.allocatable) errs.push_back(Required(at.Child("allocatable")));
    AtLeast(p.total, 0, at.Child("total"), errs);
    AtLeast(p.allocatable, 0, at.Child("allocatable"), errs);
    if (!seen.emplace(p.attribute, p.type).second) {
      errs.push_back(Duplicate(at, RenderValue(p.attribute + "=" + p.type)));
    }
  }
  if (pool.shareable_summary) {
    const ra3::ShareableSummaryStatus& s = *pool.shareable_summary;
    const FieldPath at = path.Child("shareableSummary");
    if (!s.fully_available_devices) errs.push_back(Required(at.Child("fullyAvailableDevices")));
    if (!s.partially_available_devices) {
      errs.push_back(Required(at.Child("partiallyAvailableDevices")));
    }
    AtLeast(s.fully_available_devices, 0, at.Child("fullyAvailableDevices"), errs);
    AtLeast(s.partially_available_devices, 0, at.Child("partiallyAvailableDevices"), errs);
    if (s.capacity.size() > kPoolStatusMaxSummaryItems) {
      errs.push_back(TooMany(at.Child("capacity"), static_cast<int64_t>(s.capacity.size()),
                             kPoolStatusMaxSummaryItems));
    }
    for (size_t i = 0; i < s.capacity.size(); ++i) {
      const ra3::ShareableCapacityStatus& c = s.capacity[i];
      const FieldPath cp = at.Child("capacity").Index(static_cast<int64_t>(i));
      if (c.name.empty()) errs.push_back(Required(cp.Child("name")));
      if (!c.total) errs.push_back(Required(cp.Child("total")));
      if (!c.consumed) errs.push_back(Required(cp.Child("consumed")));
      if (!c.available) errs.push_back(Required(cp.Child("available")));
    }
  }
}

FieldErrorList ValidateStatus(const ra3::ResourcePoolStatusRequestStatus& status,
                              const FieldPath& path) {
  FieldErrorList errs;
  if (!status.pool_count) errs.push_back(Required(path.Child("poolCount")));
  AtLeast(status.pool_count, 0, path.Child("poolCount"), errs);
  if (status.pools.size() > static_cast<size_t>(kPoolStatusMaxLimit)) {
    errs.push_back(TooMany(path.Child("pools"), static_cast<int64_t>(status.pools.size()),
                           kPoolStatusMaxLimit));
  } else {
    for (size_t i = 0; i < status.pools.size(); ++i) {
      ValidatePool(status.pools[i], path.Child("pools").Index(static_cast<int64_t>(i)), errs);
    }
  }
  if (status.conditions.size() > kPoolStatusMaxConditions) {
    errs.push_back(TooMany(path.Child("conditions"), static_cast<int64_t>(status.conditions.size()),
                           kPoolStatusMaxConditions));
  } else {
    Append(errs, ValidateConditions(status.conditions, path.Child("conditions")));
  }
  return errs;
}

}  // namespace

void SetDefaults(ra3::ResourcePoolStatusRequest* request) {
  if (!request->spec.limit) request->spec.limit = kPoolStatusDefaultLimit;
}

FieldErrorList ValidateResourcePoolStatusRequest(const ra3::ResourcePoolStatusRequest& request) {
  FieldErrorList errs = ValidateObjectMeta(request.metadata, /*namespaced=*/false,
                                           NameIsDNSSubdomain, FieldPath("metadata"));
  Append(errs, ValidateSpec(request.spec, FieldPath("spec")));
  if (request.status) Append(errs, ValidateStatus(*request.status, FieldPath("status")));
  return errs;
}

FieldErrorList ValidateResourcePoolStatusRequestUpdate(
    const ra3::ResourcePoolStatusRequest& request, const ra3::ResourcePoolStatusRequest& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(request.metadata, old.metadata, FieldPath("metadata"));
  if (!(request.spec == old.spec)) {
    errs.push_back(Invalid(FieldPath("spec"), "null", "field is immutable"));
  }
  return errs;
}

FieldErrorList ValidateResourcePoolStatusRequestStatusUpdate(
    const ra3::ResourcePoolStatusRequest& request, const ra3::ResourcePoolStatusRequest& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(request.metadata, old.metadata, FieldPath("metadata"));
  if (old.status && !(request.status == old.status)) {
    errs.push_back(Invalid(FieldPath("status"), "null", "field is immutable"));
    return errs;
  }
  if (request.status) Append(errs, ValidateStatus(*request.status, FieldPath("status")));
  return errs;
}

}  // namespace draplane::api::validation
