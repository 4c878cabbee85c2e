// The strategies of resource.k8s.io (strategy.h): v1 DeviceClass, ResourceSlice, ResourceClaim,
// ResourceClaimTemplate, DeviceTaintRule and v1alpha3 ResourcePoolStatusRequest.
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/gen/meta_v1_types.h"
#include "api/gen/resource_v1_codec.h"
#include "api/gen/resource_v1alpha3_codec.h"
#include "api/validation/disabled_fields.h"
#include "api/validation/pool_status_request_validation.h"
#include "api/validation/validation.h"
#include "cel/selector_lint.h"
#include "common/mutex.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

using api::FieldErrorList;
namespace validation = api::validation;
namespace rv1 = api::resourcev1;
namespace ra3 = api::resourcev1alpha3;

// A resource.k8s.io kind whose admission depends on the server's release and gates.
template <typename T>
class DraTypedStrategy : public TypedStrategy<T> {
 public:
  explicit DraTypedStrategy(DraAdmission admission) : admission_(std::move(admission)) {}

  // Name and Age, unless the kind prints more (upstream's resource.k8s.io printers).
  std::vector<TableColumn> TableColumns() const override { return {NameColumn(), AgeColumn()}; }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), AgeCell(obj, now)};
  }

 protected:
  // CEL selectors compiled as the API server compiles them (validateCELSelector): new or changed
  // expressions with the NewExpressions environment, unchanged ones (on update) with the
  // StoredExpressions one, so that an expression stored by an older version stays accepted.
  // The environment follows the server's release and gates (DraAdmission).
  void CheckCel(const T& obj, const T* old, FieldErrorList* errors) const {
    cel::SelectorLintOptions options;
    options.consumable_capacity = admission_.features.consumable_capacity;
    options.list_type_attributes = admission_.features.list_type_attributes;
    options.list_attributes = admission_.list_attributes;
    if (old != nullptr && obj.spec == old->spec) {
      options.env_type = cel::EnvType::kStoredExpressions;
    }
    Append(*errors, cel::LintCelSelectors(obj, options));
  }

  DraAdmission admission_;
};

// Upstream SetDefaults_DeviceTaint: a taint without timeAdded gets the time of the write, in
// whole seconds (what metav1.Time keeps).
void DefaultTaintTime(boost::json::value* taint, Timestamp now) {
  if (taint == nullptr || !taint->is_object()) return;
  JsonObject& t = taint->get_object();
  auto it = t.find("timeAdded");
  if (it == t.end() || it->value().is_null()) t["timeAdded"] = FormatTime(now);
}

class DeviceClassStrategyImpl final : public DraTypedStrategy<rv1::DeviceClass> {
 public:
  using DraTypedStrategy::DraTypedStrategy;

 protected:
  FieldErrorList Admit(rv1::DeviceClass& c) const override {
    FieldErrorList errors = validation::ValidateDeviceClass(c, admission_.features);
    CheckCel(c, nullptr, &errors);
    return errors;
  }
  FieldErrorList AdmitUpdate(rv1::DeviceClass& c, const rv1::DeviceClass& old) const override {
    FieldErrorList errors = validation::ValidateDeviceClassUpdate(c, old, admission_.features);
    CheckCel(c, &old, &errors);
    return errors;
  }
};

class ResourceSliceStrategyImpl final : public DraTypedStrategy<rv1::ResourceSlice> {
 public:
  using DraTypedStrategy::DraTypedStrategy;
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Node", "string", "", "NodeName identifies the node which provides the resources.", 0},
            {"Driver", "string", "", "Driver identifies the DRA driver providing the capacity.", 0},
            {"Pool", "string", "", "Name is used to identify the pool.", 0},
            AgeColumn()};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), GetPathString(obj, {"spec", "nodeName"}),
            GetPathString(obj, {"spec", "driver"}), GetPathString(obj, {"spec", "pool", "name"}),
            AgeCell(obj, now)};
  }
  void DefaultWithTime(JsonObject& obj, Timestamp now) const override {
    JsonObject* spec = FindObject(obj, "spec");
    boost::json::array* devices = spec != nullptr ? FindArray(*spec, "devices") : nullptr;
    if (devices == nullptr) return;
    for (boost::json::value& device : *devices) {
      if (!device.is_object()) continue;
      boost::json::array* taints = FindArray(device.get_object(), "taints");
      if (taints == nullptr) continue;
      for (boost::json::value& taint : *taints) DefaultTaintTime(&taint, now);
    }
  }

 protected:
  FieldErrorList Admit(rv1::ResourceSlice& s) const override {
    validation::DropDisabledFields(s, nullptr, admission_.features);
    return validation::ValidateResourceSlice(s, admission_.features);
  }
  FieldErrorList AdmitUpdate(rv1::ResourceSlice& s, const rv1::ResourceSlice& old) const override {
    validation::DropDisabledFields(s, &old, admission_.features);
    return validation::ValidateResourceSliceUpdate(s, old, admission_.features);
  }
};

// pkg/registry/resource/resourceclaim/strategy.go dropDeallocatedStatusDevices: status.devices
// entries for devices the new allocation no longer holds are removed.
void DropDeallocatedStatusDevices(JsonObject& obj, const JsonObject& old) {
  auto results = [](const JsonObject& o) {
    std::set<std::tuple<std::string, std::string, std::string>> ids;
    const JsonObject* status = FindObject(o, "status");
    const JsonObject* allocation = status ? FindObject(*status, "allocation") : nullptr;
    const JsonObject* devices = allocation ? FindObject(*allocation, "devices") : nullptr;
    const boost::json::array* list = devices ? FindArray(*devices, "results") : nullptr;
    if (list == nullptr) return ids;
    for (const boost::json::value& v : *list) {
      if (!v.is_object()) continue;
      const JsonObject& r = v.get_object();
      ids.emplace(GetString(r, "driver"), GetString(r, "pool"), GetString(r, "device"));
    }
    return ids;
  };
  auto old_ids = results(old);
  auto new_ids = results(obj);
  JsonObject* status = FindObject(obj, "status");
  if (status == nullptr) return;
  auto it = status->find("devices");
  if (it == status->end() || !it->value().is_array()) return;
  boost::json::array kept;
  for (const boost::json::value& v : it->value().get_array()) {
    if (v.is_object()) {
      const JsonObject& d = v.get_object();
      std::tuple<std::string, std::string, std::string> id(
          GetString(d, "driver"), GetString(d, "pool"), GetString(d, "device"));
      if (old_ids.count(id) > 0 && new_ids.count(id) == 0) continue;
    }
    kept.push_back(v);
  }
  if (kept.empty()) {
    status->erase("devices");
  } else {
    it->value() = std::move(kept);
  }
}

class ResourceClaimStrategyImpl final : public DraTypedStrategy<rv1::ResourceClaim> {
 public:
  using DraTypedStrategy::DraTypedStrategy;
  void PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    KeepAllButStatus(obj, old);
    DropDeallocatedStatusDevices(obj, old);
  }
  std::vector<TableColumn> TableColumns() const override {
    return {
        NameColumn(),
        {"State", "string", "",
         "A summary of the current state (allocated, pending, reserved, etc.).", 0},
        AgeColumn(),
        // draplane's wide columns: what upstream does not show.
        {"Devices", "string", "",
         "The allocated devices, as request=driver/pool/device (draplane).", 1},
        {"Reserved For", "string", "", "The consumers the claim is reserved for (draplane).", 1}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    // printers.go resourceClaimState
    std::vector<std::string> states;
    bool deleting = !MetaString(obj, "deletionTimestamp").empty();
    const JsonObject* status = FindObject(obj, "status");
    const JsonObject* allocation = status ? FindObject(*status, "allocation") : nullptr;
    const boost::json::array* reserved = status ? FindArray(*status, "reservedFor") : nullptr;
    if (deleting) states.push_back("deleted");
    if (allocation == nullptr) {
      if (!deleting) states.push_back("pending");
    } else {
      states.push_back("allocated");
      if (reserved != nullptr && !reserved->empty()) states.push_back("reserved");
    }
    std::string state;
    for (const std::string& s : states) state += (state.empty() ? "" : ",") + s;

    std::string devices;
    const JsonObject* alloc_devices = allocation ? FindObject(*allocation, "devices") : nullptr;
    if (const boost::json::array* results =
            alloc_devices ? FindArray(*alloc_devices, "results") : nullptr) {
      for (const boost::json::value& v : *results) {
        if (!v.is_object()) continue;
        const JsonObject& d = v.get_object();
        if (!devices.empty()) devices += ",";
        devices += std::string(GetString(d, "request")) + "=" +
                   std::string(GetString(d, "driver")) + "/" + std::string(GetString(d, "pool")) +
                   "/" + std::string(GetString(d, "device"));
      }
    }
    std::string consumers;
    if (reserved != nullptr) {
      for (const boost::json::value& v : *reserved) {
        if (!v.is_object()) continue;
        const JsonObject& c = v.get_object();
        if (!consumers.empty()) consumers += ",";
        std::string resource(GetString(c, "resource"));
        consumers +=
            (resource.empty() ? std::string() : resource + "/") + std::string(GetString(c, "name"));
      }
    }
    return {MetaString(obj, "name"), state, AgeCell(obj, now), devices.empty() ? "<none>" : devices,
            consumers.empty() ? "<none>" : consumers};
  }

 protected:
  FieldErrorList Admit(rv1::ResourceClaim& c) const override {
    validation::DropDisabledFields(c.spec, nullptr, admission_.features);
    validation::SetDefaults(&c);
    FieldErrorList errors = validation::ValidateResourceClaim(c, admission_.features);
    CheckCel(c, nullptr, &errors);
    return errors;
  }
  FieldErrorList AdmitUpdate(rv1::ResourceClaim& c, const rv1::ResourceClaim& old) const override {
    validation::DropDisabledFields(c.spec, &old.spec, admission_.features);
    validation::SetDefaults(&c);
    FieldErrorList errors = validation::ValidateResourceClaim(c, admission_.features);
    Append(errors, validation::ValidateResourceClaimUpdate(c, old, admission_.features));
    return errors;
  }
  FieldErrorList AdmitStatusUpdate(rv1::ResourceClaim& c,
                                   const rv1::ResourceClaim& old) const override {
    validation::SetDefaults(&c);
    return validation::ValidateResourceClaimStatusUpdate(c, old, admission_.features);
  }

 protected:
  bool has_status() const override { return true; }
};

class ResourceClaimTemplateStrategyImpl final
    : public DraTypedStrategy<rv1::ResourceClaimTemplate> {
 public:
  using DraTypedStrategy::DraTypedStrategy;

 protected:
  FieldErrorList Admit(rv1::ResourceClaimTemplate& t) const override {
    validation::DropDisabledFields(t.spec.spec, nullptr, admission_.features);
    validation::SetDefaults(&t);
    FieldErrorList errors = validation::ValidateResourceClaimTemplate(t, admission_.features);
    CheckCel(t, nullptr, &errors);
    return errors;
  }
  FieldErrorList AdmitUpdate(rv1::ResourceClaimTemplate& t,
                             const rv1::ResourceClaimTemplate& old) const override {
    validation::DropDisabledFields(t.spec.spec, &old.spec.spec, admission_.features);
    validation::SetDefaults(&t);
    FieldErrorList errors =
        validation::ValidateResourceClaimTemplateUpdate(t, old, admission_.features);
    CheckCel(t, &old, &errors);
    return errors;
  }
};

class DeviceTaintRuleStrategyImpl final : public TypedStrategy<rv1::DeviceTaintRule> {
 public:
  void DefaultWithTime(JsonObject& obj, Timestamp now) const override {
    JsonObject* spec = FindObject(obj, "spec");
    if (spec == nullptr) return;
    auto taint = spec->find("taint");
    if (taint != spec->end()) DefaultTaintTime(&taint->value(), now);
  }
  // Upstream PrepareForUpdate: a taint whose effect changes while its timeAdded stays as it was
  // is dated now, so tolerationSeconds count from when this effect began: a rule switched from a
  // None dry run to NoExecute evicted tolerating Pods at once once the dry run had lasted longer
  // than their toleration.
  void PrepareForUpdateWithTime(JsonObject& obj, const JsonObject& old,
                                Timestamp now) const override {
    auto taint_of = [](const JsonObject& rule) -> const JsonObject* {
      const JsonObject* spec = FindObject(rule, "spec");
      return spec != nullptr ? FindObject(*spec, "taint") : nullptr;
    };
    const JsonObject* old_taint = taint_of(old);
    JsonObject* spec = FindObject(obj, "spec");
    JsonObject* taint = spec != nullptr ? FindObject(*spec, "taint") : nullptr;
    if (taint == nullptr || old_taint == nullptr) return;
    if (GetString(*taint, "effect") == GetString(*old_taint, "effect")) return;
    if (ParseTime(GetString(*taint, "timeAdded")) !=
        ParseTime(GetString(*old_taint, "timeAdded"))) {
      return;  // the client dated the new effect itself
    }
    (*taint)["timeAdded"] = FormatTime(now);
  }
  void PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    KeepAllButStatus(obj, old);
  }

 protected:
  FieldErrorList Admit(rv1::DeviceTaintRule& rule) const override {
    return validation::ValidateDeviceTaintRule(rule);
  }
  FieldErrorList AdmitUpdate(rv1::DeviceTaintRule& rule,
                             const rv1::DeviceTaintRule& old) const override {
    return validation::ValidateDeviceTaintRuleUpdate(rule, old);
  }
  FieldErrorList AdmitStatusUpdate(rv1::DeviceTaintRule& rule,
                                   const rv1::DeviceTaintRule& old) const override {
    return validation::ValidateDeviceTaintRuleStatusUpdate(rule, old);
  }

  bool has_status() const override { return true; }
};

// resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677; upstream
// pkg/registry/resource/resourcepoolstatusrequest): `spec.limit` defaults to 100, the spec is
// immutable, the status is written once through the status subresource, and `kubectl get` prints
// the sums over the pools (upstream's printer columns).
class ResourcePoolStatusRequestStrategyImpl final
    : public TypedStrategy<ra3::ResourcePoolStatusRequest> {
 public:
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Driver", "string", "", "The driver whose pools were asked for.", 0},
            {"Total", "integer", "", "Devices in the reported pools.", 0},
            {"Available", "integer", "", "Devices neither allocated nor tainted.", 0},
            {"Allocated", "integer", "", "Devices allocated to claims.", 0},
            {"Unavailable", "integer", "", "Devices with a NoSchedule or NoExecute taint.", 0},
            {"Errors", "integer", "", "Pools with a validationError.", 0},
            {"Pools", "integer", "", "Pools matching the request.", 0},
            {"Status", "string", "", "Pending, Complete, Complete (m/n pools) or Failed.", 0},
            {"Completed", "string", "", "Time since the status was written.", 0},
            AgeColumn()};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    FieldErrorList ignored;
    auto request = DecodeAs<ra3::ResourcePoolStatusRequest>(obj, &ignored);
    int64_t total = 0, available = 0, allocated = 0, unavailable = 0, errors = 0;
    std::string state = "Pending", completed = "<none>";
    boost::json::value pools = nullptr;
    if (request.status) {
      for (const ra3::PoolStatus& p : request.status->pools) {
        total += p.total_devices.value_or(0);
        available += p.available_devices.value_or(0);
        allocated += p.allocated_devices.value_or(0);
        unavailable += p.unavailable_devices.value_or(0);
        if (p.validation_error) ++errors;
      }
      int32_t count = request.status->pool_count.value_or(0);
      pools = count;
      for (const api::metav1::Condition& c : request.status->conditions) {
        if (c.status != "True") continue;
        if (c.type == ra3::kResourcePoolStatusRequestConditionTypeFailed) {
          state = "Failed";
        } else if (c.type == ra3::kResourcePoolStatusRequestConditionTypeComplete) {
          state = static_cast<int32_t>(request.status->pools.size()) < count
                      ? "Complete (" + std::to_string(request.status->pools.size()) + "/" +
                            std::to_string(count) + " pools)"
                      : "Complete";
        } else {
          continue;
        }
        completed = HumanDuration(now - c.last_transition_time.ToTimestamp());
      }
    }
    return {MetaString(obj, "name"),
            request.spec.driver,
            total,
            available,
            allocated,
            unavailable,
            errors,
            pools,
            state,
            completed,
            AgeCell(obj, now)};
  }

 protected:
  FieldErrorList Admit(ra3::ResourcePoolStatusRequest& request) const override {
    validation::SetDefaults(&request);
    return validation::ValidateResourcePoolStatusRequest(request);
  }
  FieldErrorList AdmitUpdate(ra3::ResourcePoolStatusRequest& request,
                             const ra3::ResourcePoolStatusRequest& old) const override {
    validation::SetDefaults(&request);
    return validation::ValidateResourcePoolStatusRequestUpdate(request, old);
  }
  FieldErrorList AdmitStatusUpdate(ra3::ResourcePoolStatusRequest& request,
                                   const ra3::ResourcePoolStatusRequest& old) const override {
    return validation::ValidateResourcePoolStatusRequestStatusUpdate(request, old);
  }

  bool has_status() const override { return true; }
};

}  // namespace

const Strategy& ResourcePoolStatusRequestStrategy() {
  return StrategyInstance<ResourcePoolStatusRequestStrategyImpl>();
}
const Strategy& DeviceTaintRuleStrategy() {
  return StrategyInstance<DeviceTaintRuleStrategyImpl>();
}

// One instance per admission configuration a server of the process uses (a handful at most);
// never destroyed, like the other strategies.
template <typename Impl>
const Strategy& DraStrategy(const DraAdmission& admission) {
  static Mutex mu;
  static auto* instances = new std::vector<std::pair<DraAdmission, const Strategy*>>();
  MutexLock lock(mu);
  for (const auto& [a, s] : *instances) {
    if (a == admission) return *s;
  }
  instances->emplace_back(admission, new Impl(admission));
  return *instances->back().second;
}

const Strategy& DeviceClassStrategy(const DraAdmission& a) {
  return DraStrategy<DeviceClassStrategyImpl>(a);
}
const Strategy& ResourceClaimStrategy(const DraAdmission& a) {
  return DraStrategy<ResourceClaimStrategyImpl>(a);
}
const Strategy& ResourceClaimTemplateStrategy(const DraAdmission& a) {
  return DraStrategy<ResourceClaimTemplateStrategyImpl>(a);
}
const Strategy& ResourceSliceStrategy(const DraAdmission& a) {
  return DraStrategy<ResourceSliceStrategyImpl>(a);
}

}  // namespace draplane::server::handlers
