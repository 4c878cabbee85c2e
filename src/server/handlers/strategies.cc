// The strategies of the served kinds (strategy.h). Upstream counterparts are named per kind.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "api/gen/coordination_v1_codec.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/events_v1_codec.h"
#include "api/gen/meta_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/gen/resource_v1alpha3_codec.h"
#include "api/resource_health.h"
#include "api/validation/disabled_fields.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"
#include "api/validation/pod_defaults.h"
#include "api/validation/pool_status_request_validation.h"
#include "api/validation/quota_validation.h"
#include "api/validation/validation.h"
#include "cel/selector_lint.h"
#include "common/mutex.h"
#include "server/handlers/strategy.h"
#include "server/handlers/typed_json.h"

namespace draplane::server::handlers {
namespace {

using api::FieldErrorList;
using api::FieldPath;
namespace validation = api::validation;
namespace ra3 = api::resourcev1alpha3;

void Append(FieldErrorList& to, FieldErrorList from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

api::metav1::ObjectMeta DecodeMeta(const JsonObject& obj, FieldErrorList* decode_errors) {
  api::metav1::ObjectMeta meta;
  if (auto m = obj.find("metadata"); m != obj.end() && m->value().is_object()) {
    FieldErrorList errors;
    Decode(m->value(), &meta, &errors);
    for (api::FieldError& e : errors) {
      e.field = e.field.empty() ? "metadata" : "metadata." + e.field;
      decode_errors->push_back(std::move(e));
    }
  }
  return meta;
}

// RBAC names: path segment names (rbac validation.ValidateRBACName).
std::vector<std::string> PathSegmentName(std::string_view name, bool prefix) {
  std::vector<std::string> out;
  if (!prefix && (name == "." || name == "..")) {
    out.push_back("may not be '" + std::string(name) + "'");
  }
  for (std::string_view bad : {"/", "%"}) {
    if (name.find(bad) != std::string_view::npos) {
      out.push_back("may not contain '" + std::string(bad) + "'");
    }
  }
  return out;
}

bool JsonEqual(const JsonObject& a, const JsonObject& b, std::string_view key) {
  auto ia = a.find(key);
  auto ib = b.find(key);
  if (ia == a.end() || ib == b.end()) return (ia == a.end()) == (ib == b.end());
  return ia->value() == ib->value();
}

// A strategy over plain JSON with generic metadata validation; kinds add to it.
class GenericStrategy : public Strategy {
 public:
  GenericStrategy(bool namespaced, validation::NameValidator names, bool status)
      : namespaced_(namespaced), names_(names), status_(status) {}

  CheckResult Check(JsonObject& obj) const override {
    CheckResult result;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &result.decode_errors);
    if (!result.decode_errors.empty()) return result;
    result.errors =
        validation::ValidateObjectMeta(meta, namespaced_, names_, FieldPath("metadata"));
    return result;
  }

  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult result;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &result.decode_errors);
    FieldErrorList ignored;
    api::metav1::ObjectMeta old_meta = DecodeMeta(old, &ignored);
    if (!result.decode_errors.empty()) return result;
    result.errors = validation::ValidateObjectMetaUpdate(meta, old_meta, FieldPath("metadata"));
    Append(result.errors,
           validation::ValidateObjectMeta(meta, namespaced_, names_, FieldPath("metadata")));
    return result;
  }

  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    return GenericStrategy::CheckUpdate(obj, old);
  }

 protected:
  bool has_status() const override { return status_; }

  bool namespaced_;
  validation::NameValidator names_;
  bool status_;
};

// Reset of metadata a status update may not change (metav1.ResetObjectMetaForStatus), applied
// by taking `old` and carrying over only the new status and resourceVersion.
void KeepAllButStatus(JsonObject& obj, const JsonObject& old) {
  JsonObject result;
  if (auto status = obj.find("status"); status != obj.end()) {
    // `old` with its status replaced in place (appended when it has none), the new status moved
    // rather than copied and the old one not copied at all.
    result.reserve(old.size() + 1);
    bool replaced = false;
    for (const auto& member : old) {
      if (member.key() == "status") {
        result.emplace(member.key(), std::move(status->value()));
        replaced = true;
      } else {
        result.emplace(member.key(), member.value());
      }
    }
    if (!replaced) result.emplace("status", std::move(status->value()));
  } else {
    result = old;
    result.erase("status");
  }
  std::string_view rv = MetaString(obj, "resourceVersion");
  JsonObject& meta = EnsureObject(result, "metadata");
  if (rv.empty()) {
    meta.erase("resourceVersion");
  } else {
    meta["resourceVersion"] = rv;
  }
  obj = std::move(result);
}

// --- Typed resource.k8s.io strategies --------------------------------------------------------

// CEL selectors compiled as the API server compiles them (validateCELSelector): new or changed
// expressions with the NewExpressions environment, unchanged ones (on update) with the
// StoredExpressions one, so that an expression stored by an older version stays accepted.
// The environment follows the server's release and gates (DraAdmission).
template <typename T>
void CheckCel(const T& obj, const T* old, const DraAdmission& admission, FieldErrorList* errors) {
  cel::SelectorLintOptions options;
  options.consumable_capacity = admission.features.consumable_capacity;
  options.list_type_attributes = admission.features.list_type_attributes;
  options.list_attributes = admission.list_attributes;
  if (old != nullptr && obj.spec == old->spec) options.env_type = cel::EnvType::kStoredExpressions;
  Append(*errors, cel::LintCelSelectors(obj, options));
}

class DeviceClassStrategyImpl final : public Strategy {
 public:
  explicit DeviceClassStrategyImpl(DraAdmission admission) : admission_(std::move(admission)) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::DeviceClass>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateDeviceClass(typed, admission_.features);
    CheckCel(typed, static_cast<const api::resourcev1::DeviceClass*>(nullptr), admission_,
             &r.errors);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::DeviceClass>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::DeviceClass>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateDeviceClassUpdate(typed, old_typed, admission_.features);
    CheckCel(typed, &old_typed, admission_, &r.errors);
    EncodeInto(typed, obj);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override { return {NameColumn(), AgeColumn()}; }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), AgeCell(obj, now)};
  }

 private:
  DraAdmission admission_;
};

class ResourceSliceStrategyImpl final : public Strategy {
 public:
  explicit ResourceSliceStrategyImpl(DraAdmission admission) : admission_(std::move(admission)) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceSlice>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed, nullptr, admission_.features);
    r.errors = validation::ValidateResourceSlice(typed, admission_.features);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceSlice>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::ResourceSlice>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed, &old_typed, admission_.features);
    r.errors = validation::ValidateResourceSliceUpdate(typed, old_typed, admission_.features);
    EncodeInto(typed, obj);
    return r;
  }
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

 private:
  DraAdmission admission_;
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

class ResourceClaimStrategyImpl final : public Strategy {
 public:
  explicit ResourceClaimStrategyImpl(DraAdmission admission) : admission_(std::move(admission)) {}
  void PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    KeepAllButStatus(obj, old);
    DropDeallocatedStatusDevices(obj, old);
  }
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceClaim>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed.spec, nullptr, admission_.features);
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourceClaim(typed, admission_.features);
    CheckCel(typed, static_cast<const api::resourcev1::ResourceClaim*>(nullptr), admission_,
             &r.errors);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceClaim>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::ResourceClaim>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed.spec, &old_typed.spec, admission_.features);
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourceClaim(typed, admission_.features);
    Append(r.errors,
           validation::ValidateResourceClaimUpdate(typed, old_typed, admission_.features));
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceClaim>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::ResourceClaim>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourceClaimStatusUpdate(typed, old_typed, admission_.features);
    EncodeInto(typed, obj);
    return r;
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
  bool has_status() const override { return true; }

 private:
  DraAdmission admission_;
};

class ResourceClaimTemplateStrategyImpl final : public Strategy {
 public:
  explicit ResourceClaimTemplateStrategyImpl(DraAdmission admission)
      : admission_(std::move(admission)) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceClaimTemplate>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed.spec.spec, nullptr, admission_.features);
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourceClaimTemplate(typed, admission_.features);
    CheckCel(typed, static_cast<const api::resourcev1::ResourceClaimTemplate*>(nullptr), admission_,
             &r.errors);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::ResourceClaimTemplate>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::ResourceClaimTemplate>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    validation::DropDisabledFields(typed.spec.spec, &old_typed.spec.spec, admission_.features);
    validation::SetDefaults(&typed);
    r.errors =
        validation::ValidateResourceClaimTemplateUpdate(typed, old_typed, admission_.features);
    CheckCel(typed, &old_typed, admission_, &r.errors);
    EncodeInto(typed, obj);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override { return {NameColumn(), AgeColumn()}; }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), AgeCell(obj, now)};
  }

 private:
  DraAdmission admission_;
};

class DeviceTaintRuleStrategyImpl final : public Strategy {
 public:
  void PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    KeepAllButStatus(obj, old);
  }
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::DeviceTaintRule>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateDeviceTaintRule(typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::DeviceTaintRule>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::DeviceTaintRule>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateDeviceTaintRuleUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::resourcev1::DeviceTaintRule>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::resourcev1::DeviceTaintRule>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateDeviceTaintRuleStatusUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }

 protected:
  bool has_status() const override { return true; }
};

// --- Core group ------------------------------------------------------------------------------

class PodStrategyImpl final : public GenericStrategy {
 public:
  PodStrategyImpl() : GenericStrategy(true, validation::NameIsDNSSubdomain, true) {}

  // pod strategy PrepareForCreate: status = {phase: Pending, qosClass}.
  void PrepareForCreate(JsonObject& obj) const override {
    validation::SetPodDefaults(obj);
    JsonObject status;
    status["phase"] = "Pending";
    status["qosClass"] = validation::PodQosClass(obj);
    obj["status"] = std::move(status);
  }

  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    DecodeAs<api::corev1::Pod>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    ValidateSpec(obj, &r.errors);
    return r;
  }

  // ValidatePodUpdate: only a few spec fields may change after creation.
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = GenericStrategy::CheckUpdate(obj, old);
    DecodeAs<api::corev1::Pod>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    JsonObject new_spec = Mutable(obj);
    JsonObject old_spec = Mutable(old);
    if (!(new_spec == old_spec)) {
      r.errors.push_back(api::Forbidden(
          FieldPath("spec"),
          "pod updates may not change fields other than `spec.containers[*].image`,"
          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
          "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
          "(allow it to be set to 1 if it was previously negative)"));
    }
    return r;
  }

  // ValidatePodStatusUpdate, for the part of pod status this server checks: KEP-4680's
  // containerStatuses[].allocatedResourcesStatus.
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = CheckUpdate(obj, old);
    if (!r.decode_errors.empty()) return r;
    Append(r.errors, api::ValidateAllocatedResourcesStatus(obj));
    return r;
  }

  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Ready", "string", "",
             "The aggregate readiness state of this pod for accepting traffic.", 0},
            {"Status", "string", "", "The aggregate status of the containers in this pod.", 0},
            {"Restarts", "string", "",
             "The number of times the containers in this pod have been restarted and when the "
             "last container in this pod has restarted.",
             0},
            AgeColumn(),
            {"IP", "string", "", "podIP address allocated to the pod.", 1},
            {"Node", "string", "", "NodeName indicates in which node this pod is scheduled.", 1},
            {"Nominated Node", "string", "",
             "nominatedNodeName is set only when this pod preempts other pods on the node.", 1},
            {"Readiness Gates", "string", "",
             "If specified, all readiness gates will be evaluated "
             "for pod readiness.",
             1}};
  }

  // printers.go printPod, for the status this server's pods carry.
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    const JsonObject empty;
    const JsonObject* spec = FindObject(obj, "spec");
    const JsonObject* status = FindObject(obj, "status");
    if (spec == nullptr) spec = &empty;
    if (status == nullptr) status = &empty;
    const boost::json::array* containers = FindArray(*spec, "containers");
    size_t total = containers ? containers->size() : 0;
    std::string reason(GetString(*status, "phase"));
    if (!GetString(*status, "reason").empty()) reason = GetString(*status, "reason");
    if (const boost::json::array* conditions = FindArray(*status, "conditions")) {
      for (const boost::json::value& c : *conditions) {
        if (c.is_object() && GetString(c.get_object(), "type") == "PodScheduled" &&
            GetString(c.get_object(), "reason") == "SchedulingGated") {
          reason = "SchedulingGated";
        }
      }
    }
    int ready = 0;
    int64_t restarts = 0;
    if (const boost::json::array* statuses = FindArray(*status, "containerStatuses")) {
      for (auto it = statuses->rbegin(); it != statuses->rend(); ++it) {
        if (!it->is_object()) continue;
        const JsonObject& cs = it->get_object();
        if (auto rc = cs.find("restartCount"); rc != cs.end() && rc->value().is_int64()) {
          restarts += rc->value().get_int64();
        }
        const JsonObject* state = FindObject(cs, "state");
        const JsonObject* waiting = state ? FindObject(*state, "waiting") : nullptr;
        const JsonObject* terminated = state ? FindObject(*state, "terminated") : nullptr;
        const JsonObject* running = state ? FindObject(*state, "running") : nullptr;
        auto ready_it = cs.find("ready");
        bool is_ready =
            ready_it != cs.end() && ready_it->value().is_bool() && ready_it->value().get_bool();
        if (waiting && !GetString(*waiting, "reason").empty()) {
          reason = GetString(*waiting, "reason");
        } else if (terminated && !GetString(*terminated, "reason").empty()) {
          reason = GetString(*terminated, "reason");
        } else if (is_ready && running) {
          ++ready;
        }
      }
    }
    std::string phase(GetString(*status, "phase"));
    if (!MetaString(obj, "deletionTimestamp").empty() && phase != "Succeeded" &&
        phase != "Failed") {
      reason = "Terminating";
    }
    std::string ip(GetString(*status, "podIP"));
    std::string node(GetString(*spec, "nodeName"));
    std::string nominated(GetString(*status, "nominatedNodeName"));
    return {MetaString(obj, "name"),
            std::to_string(ready) + "/" + std::to_string(total),
            reason,
            std::to_string(restarts),
            AgeCell(obj, now),
            ip.empty() ? "<none>" : ip,
            node.empty() ? "<none>" : node,
            nominated.empty() ? "<none>" : nominated,
            "<none>"};
  }

 private:
  // The spec with the fields a pod update may change removed (images, activeDeadlineSeconds,
  // tolerations, terminationGracePeriodSeconds, schedulingGates).
  static JsonObject Mutable(const JsonObject& pod) {
    const JsonObject* spec = FindObject(pod, "spec");
    JsonObject out = spec ? *spec : JsonObject();
    out.erase("activeDeadlineSeconds");
    out.erase("tolerations");
    out.erase("terminationGracePeriodSeconds");
    out.erase("schedulingGates");
    for (std::string_view list_name : {"initContainers", "containers"}) {
      auto it = out.find(list_name);
      if (it == out.end() || !it->value().is_array()) continue;
      for (boost::json::value& c : it->value().get_array()) {
        if (c.is_object()) c.get_object().erase("image");
      }
    }
    return out;
  }

  // The parts of ValidatePodSpec that matter here: containers present with unique DNS-label
  // names, resource claim names.
  static void ValidateSpec(const JsonObject& obj, FieldErrorList* errors) {
    const JsonObject* spec = FindObject(obj, "spec");
    FieldPath spec_path("spec");
    const boost::json::array* containers = spec ? FindArray(*spec, "containers") : nullptr;
    if (containers == nullptr || containers->empty()) {
      errors->push_back(api::Required(spec_path.Child("containers"), ""));
      return;
    }
    std::set<std::string> names;
    for (std::string_view list_name : {"initContainers", "containers"}) {
      const boost::json::array* list = FindArray(*spec, list_name);
      if (list == nullptr) continue;
      for (size_t i = 0; i < list->size(); ++i) {
        if (!(*list)[i].is_object()) continue;
        FieldPath path = spec_path.Child(list_name).Index(static_cast<int64_t>(i));
        std::string name(GetString((*list)[i].get_object(), "name"));
        if (name.empty()) {
          errors->push_back(api::Required(path.Child("name"), ""));
        } else {
          Append(*errors, validation::ValidateDNS1123Label(name, path.Child("name")));
          if (!names.insert(name).second) {
            errors->push_back(api::Duplicate(path.Child("name"), api::RenderValue(name)));
          }
        }
        if (GetString((*list)[i].get_object(), "image").empty()) {
          errors->push_back(api::Required(path.Child("image"), ""));
        }
      }
    }
    if (const boost::json::array* claims = FindArray(*spec, "resourceClaims")) {
      std::set<std::string> claim_names;
      for (size_t i = 0; i < claims->size(); ++i) {
        if (!(*claims)[i].is_object()) continue;
        const JsonObject& c = (*claims)[i].get_object();
        FieldPath path = spec_path.Child("resourceClaims").Index(static_cast<int64_t>(i));
        std::string name(GetString(c, "name"));
        if (name.empty()) {
          errors->push_back(api::Required(path.Child("name"), ""));
        } else {
          Append(*errors, validation::ValidateDNS1123Label(name, path.Child("name")));
          if (!claim_names.insert(name).second) {
            errors->push_back(api::Duplicate(path.Child("name"), api::RenderValue(name)));
          }
        }
        bool by_name = !GetString(c, "resourceClaimName").empty();
        bool by_template = !GetString(c, "resourceClaimTemplateName").empty();
        if (by_name == by_template) {
          errors->push_back(api::Invalid(
              path, "", "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"));
        }
      }
    }
  }
};

class NodeStrategyImpl final : public GenericStrategy {
 public:
  NodeStrategyImpl() : GenericStrategy(false, validation::NameIsDNSSubdomain, true) {}

  // Nodes keep the status they are created with (the kubelet registers with one).
  void PrepareForCreate(JsonObject&) const override {}

  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    DecodeAs<api::corev1::Node>(obj, &r.decode_errors);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override {
    return {
        NameColumn(),
        {"Status", "string", "", "The status of the node", 0},
        {"Roles", "string", "", "The roles of the node", 0},
        AgeColumn(),
        {"Version", "string", "", "Kubelet Version reported by the node.", 0},
        {"Internal-IP", "string", "", "List of addresses reachable to the node.", 1},
        {"External-IP", "string", "", "List of addresses reachable to the node.", 1},
        {"OS-Image", "string", "", "OS Image reported by the node from /etc/os-release.", 1},
        {"Kernel-Version", "string", "", "Kernel Version reported by the node.", 1},
        {"Container-Runtime", "string", "", "ContainerRuntime Version reported by the node.", 1}};
  }
  // printers.go printNode
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    const JsonObject empty;
    const JsonObject* status = FindObject(obj, "status");
    if (status == nullptr) status = &empty;
    std::string state = "Unknown";
    if (const boost::json::array* conditions = FindArray(*status, "conditions")) {
      for (const boost::json::value& c : *conditions) {
        if (!c.is_object() || GetString(c.get_object(), "type") != "Ready") continue;
        state = GetString(c.get_object(), "status") == "True" ? "Ready" : "NotReady";
      }
    }
    if (const JsonObject* spec = FindObject(obj, "spec")) {
      auto it = spec->find("unschedulable");
      if (it != spec->end() && it->value().is_bool() && it->value().get_bool()) {
        state += ",SchedulingDisabled";
      }
    }
    std::set<std::string> roles;
    for (const auto& [key, value] : MetaStringMap(obj, "labels")) {
      if (key.rfind("node-role.kubernetes.io/", 0) == 0 && key.size() > 24) {
        roles.insert(key.substr(24));
      } else if (key == "kubernetes.io/role" && !value.empty()) {
        roles.insert(value);
      }
    }
    std::string role_text;
    for (const std::string& r : roles) role_text += (role_text.empty() ? "" : ",") + r;
    std::string internal_ip, external_ip;
    if (const boost::json::array* addresses = FindArray(*status, "addresses")) {
      for (const boost::json::value& a : *addresses) {
        if (!a.is_object()) continue;
        std::string_view type = GetString(a.get_object(), "type");
        if (type == "InternalIP" && internal_ip.empty())
          internal_ip = GetString(a.get_object(), "address");
        if (type == "ExternalIP" && external_ip.empty())
          external_ip = GetString(a.get_object(), "address");
      }
    }
    auto info = [&](std::string_view key) {
      std::string v(GetPathString(*status, {"nodeInfo", key}));
      return v.empty() ? std::string("<unknown>") : v;
    };
    std::string version(GetPathString(*status, {"nodeInfo", "kubeletVersion"}));
    return {MetaString(obj, "name"),
            state,
            role_text.empty() ? "<none>" : role_text,
            AgeCell(obj, now),
            version,
            internal_ip.empty() ? "<none>" : internal_ip,
            external_ip.empty() ? "<none>" : external_ip,
            info("osImage"),
            info("kernelVersion"),
            info("containerRuntimeVersion")};
  }
};

class NamespaceStrategyImpl final : public GenericStrategy {
 public:
  NamespaceStrategyImpl() : GenericStrategy(false, validation::NameIsDNSLabel, true) {}

  // namespace strategy PrepareForCreate: phase Active, the "kubernetes" finalizer, and the
  // immutable kubernetes.io/metadata.name label.
  void PrepareForCreate(JsonObject& obj) const override {
    JsonObject status;
    status["phase"] = "Active";
    obj["status"] = std::move(status);
    JsonObject& spec = EnsureObject(obj, "spec");
    spec["finalizers"] = boost::json::array{"kubernetes"};
    AddNameLabel(obj);
  }
  // The main resource may not change status or spec.finalizers (only /finalize may).
  void PrepareForUpdate(JsonObject& obj, const JsonObject& old) const override {
    if (auto it = old.find("status"); it != old.end()) {
      obj["status"] = it->value();
    } else {
      obj.erase("status");
    }
    JsonObject& spec = EnsureObject(obj, "spec");
    const JsonObject* old_spec = FindObject(old, "spec");
    if (old_spec != nullptr && old_spec->contains("finalizers")) {
      spec["finalizers"] = old_spec->at("finalizers");
    } else {
      spec.erase("finalizers");
    }
    AddNameLabel(obj);
  }
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(), {"Status", "string", "", "The status of the namespace", 0}, AgeColumn()};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), GetPathString(obj, {"status", "phase"}), AgeCell(obj, now)};
  }

 private:
  static void AddNameLabel(JsonObject& obj) {
    JsonObject& meta = EnsureObject(obj, "metadata");
    JsonObject& labels = EnsureObject(meta, "labels");
    labels["kubernetes.io/metadata.name"] = GetString(meta, "name");
  }
};

std::vector<TableColumn> EventColumns() {
  return {{"Last Seen", "string", "",
           "The time at which the most recent occurrence of this event "
           "was recorded.",
           0},
          {"Type", "string", "",
           "Type of this event (Normal, Warning), new types could be added "
           "in the future",
           0},
          {"Reason", "string", "",
           "This should be a short, machine understandable string that "
           "gives the reason for the transition into the object's current status.",
           0},
          {"Object", "string", "", "The object that this event is about.", 0},
          {"Subobject", "string", "", "The field of the object this event is about.", 1},
          {"Source", "string", "", "The component reporting this event.", 1},
          {"Message", "string", "",
           "A human-readable description of the status of this "
           "operation.",
           0},
          {"First Seen", "string", "", "The time at which the event was first recorded.", 1},
          {"Count", "string", "", "The number of times this event has occurred.", 1},
          {"Name", "string", "name", "Name must be unique within a namespace.", 1}};
}

std::string SinceCell(std::string_view time, Timestamp now) {
  std::optional<Timestamp> t = ParseTime(time);
  if (!t) return "<unknown>";
  return HumanDuration(now - *t);
}

class CoreEventStrategyImpl final : public GenericStrategy {
 public:
  CoreEventStrategyImpl() : GenericStrategy(true, validation::NameIsDNSSubdomain, false) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    DecodeAs<api::corev1::Event>(obj, &r.decode_errors);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override { return EventColumns(); }
  // printers.go printEvent
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string_view last = GetString(obj, "lastTimestamp");
    if (last.empty()) last = GetString(obj, "eventTime");
    std::string_view first = GetString(obj, "firstTimestamp");
    if (first.empty()) first = GetString(obj, "eventTime");
    const JsonObject empty;
    const JsonObject* involved = FindObject(obj, "involvedObject");
    if (involved == nullptr) involved = &empty;
    std::string kind(GetString(*involved, "kind"));
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    std::string source(GetPathString(obj, {"source", "component"}));
    std::string host(GetPathString(obj, {"source", "host"}));
    if (!host.empty()) source += ", " + host;
    if (source.empty()) source = std::string(GetString(obj, "reportingComponent"));
    int64_t count = 1;
    if (auto it = obj.find("count"); it != obj.end() && it->value().is_int64()) {
      count = it->value().get_int64();
    }
    return {SinceCell(last, now),
            GetString(obj, "type"),
            GetString(obj, "reason"),
            kind + "/" + std::string(GetString(*involved, "name")),
            GetString(*involved, "fieldPath"),
            source,
            GetString(obj, "message"),
            SinceCell(first, now),
            std::to_string(count),
            MetaString(obj, "name")};
  }
};

class EventsV1EventStrategyImpl final : public GenericStrategy {
 public:
  EventsV1EventStrategyImpl() : GenericStrategy(true, validation::NameIsDNSSubdomain, false) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    DecodeAs<api::eventsv1::Event>(obj, &r.decode_errors);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override { return EventColumns(); }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string_view last = GetString(obj, "deprecatedLastTimestamp");
    if (last.empty()) last = GetString(obj, "eventTime");
    std::string_view first = GetString(obj, "deprecatedFirstTimestamp");
    if (first.empty()) first = GetString(obj, "eventTime");
    const JsonObject empty;
    const JsonObject* regarding = FindObject(obj, "regarding");
    if (regarding == nullptr) regarding = &empty;
    std::string kind(GetString(*regarding, "kind"));
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    int64_t count = 1;
    if (auto it = obj.find("deprecatedCount"); it != obj.end() && it->value().is_int64()) {
      count = it->value().get_int64();
    }
    return {SinceCell(last, now),
            GetString(obj, "type"),
            GetString(obj, "reason"),
            kind + "/" + std::string(GetString(*regarding, "name")),
            GetString(*regarding, "fieldPath"),
            GetString(obj, "reportingController"),
            GetString(obj, "note"),
            SinceCell(first, now),
            std::to_string(count),
            MetaString(obj, "name")};
  }
};

class LeaseStrategyImpl final : public GenericStrategy {
 public:
  LeaseStrategyImpl() : GenericStrategy(true, validation::NameIsDNSSubdomain, false) {}
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    DecodeAs<api::coordinationv1::Lease>(obj, &r.decode_errors);
    return r;
  }
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Holder", "string", "",
             "holderIdentity contains the identity of the holder of a "
             "current lease.",
             0},
            AgeColumn()};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), GetPathString(obj, {"spec", "holderIdentity"}),
            AgeCell(obj, now)};
  }
};

// rbac.authorization.k8s.io: the four kinds share one strategy; the kind is read from the
// object (validation.ValidateRole & co., for the parts the authorizer relies on).
class RbacStrategyImpl final : public Strategy {
 public:
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    std::string kind(GetString(obj, "kind"));
    bool namespaced = kind == "Role" || kind == "RoleBinding";
    r.errors =
        validation::ValidateObjectMeta(meta, namespaced, PathSegmentName, FieldPath("metadata"));
    if (kind == "Role" || kind == "ClusterRole") {
      ValidateRules(obj, &r);
    } else {
      ValidateBinding(obj, namespaced, &r);
    }
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = Check(obj);
    FieldErrorList ignored;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &ignored);
    api::metav1::ObjectMeta old_meta = DecodeMeta(old, &ignored);
    Append(r.errors, validation::ValidateObjectMetaUpdate(meta, old_meta, FieldPath("metadata")));
    std::string kind(GetString(obj, "kind"));
    if ((kind == "RoleBinding" || kind == "ClusterRoleBinding") &&
        !JsonEqual(obj, old, "roleRef")) {
      r.errors.push_back(api::Invalid(FieldPath("roleRef"), "", "cannot change roleRef"));
    }
    return r;
  }
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Role", "string", "",
             "RoleRef can reference a Role in the current namespace or a "
             "ClusterRole in the global namespace.",
             0},
            AgeColumn(),
            {"Users", "string", "", "Users in the roleBinding", 1},
            {"Groups", "string", "", "Groups in the roleBinding", 1},
            {"ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", 1}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string users, groups, accounts;
    if (const boost::json::array* subjects = FindArray(obj, "subjects")) {
      for (const boost::json::value& s : *subjects) {
        if (!s.is_object()) continue;
        std::string_view kind = GetString(s.get_object(), "kind");
        std::string name(GetString(s.get_object(), "name"));
        std::string* target = kind == "User" ? &users : kind == "Group" ? &groups : &accounts;
        if (kind == "ServiceAccount") {
          name = std::string(GetString(s.get_object(), "namespace")) + "/" + name;
        }
        *target += (target->empty() ? "" : ", ") + name;
      }
    }
    return {MetaString(obj, "name"),
            std::string(GetPathString(obj, {"roleRef", "kind"})) + "/" +
                std::string(GetPathString(obj, {"roleRef", "name"})),
            AgeCell(obj, now),
            users,
            groups,
            accounts};
  }

 private:
  static void ValidateRules(const JsonObject& obj, CheckResult* r) {
    auto it = obj.find("rules");
    if (it == obj.end() || it->value().is_null()) return;
    if (!it->value().is_array()) {
      r->decode_errors.push_back(api::TypeInvalid(FieldPath("rules"), "", "must be an array"));
      return;
    }
    const boost::json::array& rules = it->value().get_array();
    for (size_t i = 0; i < rules.size(); ++i) {
      FieldPath path = FieldPath("rules").Index(static_cast<int64_t>(i));
      if (!rules[i].is_object()) {
        r->decode_errors.push_back(api::TypeInvalid(path, "", "must be an object"));
        continue;
      }
      const JsonObject& rule = rules[i].get_object();
      const boost::json::array* verbs = FindArray(rule, "verbs");
      if (verbs == nullptr || verbs->empty()) {
        r->errors.push_back(
            api::Required(path.Child("verbs"), "verbs must contain at least one value"));
      }
      const boost::json::array* urls = FindArray(rule, "nonResourceURLs");
      bool has_urls = urls != nullptr && !urls->empty();
      const boost::json::array* groups = FindArray(rule, "apiGroups");
      const boost::json::array* resources = FindArray(rule, "resources");
      if (!has_urls && (groups == nullptr || groups->empty())) {
        r->errors.push_back(api::Required(path.Child("apiGroups"),
                                          "resource rules must supply at least one api group"));
      }
      if (!has_urls && (resources == nullptr || resources->empty())) {
        r->errors.push_back(api::Required(path.Child("resources"),
                                          "resource rules must supply at least one resource"));
      }
    }
  }
  static void ValidateBinding(const JsonObject& obj, bool namespaced, CheckResult* r) {
    const JsonObject* ref = FindObject(obj, "roleRef");
    if (ref == nullptr) {
      r->errors.push_back(api::Required(FieldPath("roleRef"), ""));
      return;
    }
    std::string_view kind = GetString(*ref, "kind");
    if (GetString(*ref, "apiGroup") != "rbac.authorization.k8s.io") {
      r->errors.push_back(api::NotSupported(FieldPath("roleRef").Child("apiGroup"),
                                            api::RenderValue(GetString(*ref, "apiGroup")),
                                            {"rbac.authorization.k8s.io"}));
    }
    std::vector<std::string> kinds = {"ClusterRole"};
    if (namespaced) kinds = {"Role", "ClusterRole"};
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      r->errors.push_back(
          api::NotSupported(FieldPath("roleRef").Child("kind"), api::RenderValue(kind), kinds));
    }
    if (GetString(*ref, "name").empty()) {
      r->errors.push_back(api::Required(FieldPath("roleRef").Child("name"), ""));
    }
    if (const boost::json::array* subjects = FindArray(obj, "subjects")) {
      for (size_t i = 0; i < subjects->size(); ++i) {
        FieldPath path = FieldPath("subjects").Index(static_cast<int64_t>(i));
        if (!(*subjects)[i].is_object()) continue;
        const JsonObject& s = (*subjects)[i].get_object();
        std::string_view skind = GetString(s, "kind");
        if (skind != "User" && skind != "Group" && skind != "ServiceAccount") {
          r->errors.push_back(api::NotSupported(path.Child("kind"), api::RenderValue(skind),
                                                {"ServiceAccount", "User", "Group"}));
        }
        if (GetString(s, "name").empty())
          r->errors.push_back(api::Required(path.Child("name"), ""));
      }
    }
  }
};

// pkg/registry/core/resourcequota/strategy.go: the status is reset on create and kept by
// updates of the main resource (the status subresource writes it); validation as upstream's.
class ResourceQuotaStrategyImpl final : public Strategy {
 public:
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<api::corev1::ResourceQuota>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateResourceQuota(typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::corev1::ResourceQuota>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::corev1::ResourceQuota>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateResourceQuotaUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<api::corev1::ResourceQuota>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<api::corev1::ResourceQuota>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateResourceQuotaStatusUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }
  // printers.go printResourceQuota: every status.hard entry as `name: used/hard`, the
  // `limits.*` ones in their own column.
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            AgeColumn(),
            {"Request", "string", "",
             "Request represents a minimum amount of cpu/memory that a container may consume.", 0},
            {"Limit", "string", "",
             "Limits control the maximum amount of cpu/memory that a container may use "
             "independent of contention on the node.",
             0}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    FieldErrorList ignored;
    auto quota = DecodeAs<api::corev1::ResourceQuota>(obj, &ignored);
    std::string request, limit;
    for (const auto& [name, hard] : quota.status.hard) {
      auto used = quota.status.used.find(name);
      std::string* column = name.starts_with("limits.") ? &limit : &request;
      if (!column->empty()) *column += ", ";
      *column += name + ": " +
                 (used == quota.status.used.end() ? std::string("0") : used->second.ToString()) +
                 "/" + hard.ToString();
    }
    return {MetaString(obj, "name"), AgeCell(obj, now), request, limit};
  }

 protected:
  bool has_status() const override { return true; }
};

// resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677; upstream
// pkg/registry/resource/resourcepoolstatusrequest): `spec.limit` defaults to 100, the spec is
// immutable, the status is written once through the status subresource, and `kubectl get` prints
// the sums over the pools (upstream's printer columns).
class ResourcePoolStatusRequestStrategyImpl final : public Strategy {
 public:
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    auto typed = DecodeAs<ra3::ResourcePoolStatusRequest>(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourcePoolStatusRequest(typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<ra3::ResourcePoolStatusRequest>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<ra3::ResourcePoolStatusRequest>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    validation::SetDefaults(&typed);
    r.errors = validation::ValidateResourcePoolStatusRequestUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r;
    auto typed = DecodeAs<ra3::ResourcePoolStatusRequest>(obj, &r.decode_errors);
    FieldErrorList ignored;
    auto old_typed = DecodeAs<ra3::ResourcePoolStatusRequest>(old, &ignored);
    if (!r.decode_errors.empty()) return r;
    r.errors = validation::ValidateResourcePoolStatusRequestStatusUpdate(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }

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
  bool has_status() const override { return true; }
};

// Create-only review kinds; handled by handlers/reviews.cc, never stored.
class ReviewStrategyImpl final : public Strategy {};

// Binding objects posted to pods/{name}/binding or bindings.
class BindingStrategyImpl final : public Strategy {};

}  // namespace

// --- Strategy defaults -----------------------------------------------------------------------

void Strategy::PrepareForCreate(JsonObject& obj) const {
  if (has_status()) obj.erase("status");
}

void Strategy::PrepareForUpdate(JsonObject& obj, const JsonObject& old) const {
  if (!has_status()) return;
  if (auto it = old.find("status"); it != old.end()) {
    obj["status"] = it->value();
  } else {
    obj.erase("status");
  }
}

void Strategy::PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const {
  KeepAllButStatus(obj, old);
}

CheckResult Strategy::Check(JsonObject&) const { return {}; }
CheckResult Strategy::CheckUpdate(JsonObject& obj, const JsonObject&) const { return Check(obj); }
CheckResult Strategy::CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const {
  return CheckUpdate(obj, old);
}

std::vector<TableColumn> Strategy::TableColumns() const {
  return {NameColumn(),
          {"Created At", "date", "",
           "CreationTimestamp is a timestamp representing the server "
           "time when this object was created.",
           0}};
}

boost::json::array Strategy::TableCells(const JsonObject& obj, Timestamp) const {
  return {MetaString(obj, "name"), MetaString(obj, "creationTimestamp")};
}

TableColumn NameColumn() {
  return {"Name", "string", "name",
          "Name must be unique within a namespace. Is required when creating resources, although "
          "some resources may allow a client to request the generation of an appropriate name "
          "automatically. Name is primarily intended for creation idempotence and configuration "
          "definition. Cannot be updated. More info: "
          "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
          0};
}

TableColumn AgeColumn() {
  return {"Age", "string", "",
          "CreationTimestamp is a timestamp representing the server time when this object was "
          "created. It is not guaranteed to be set in happens-before order across separate "
          "operations. Clients may not set this value. It is represented in RFC3339 form and is "
          "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
          "https://git.k8s.io/community/contributors/devel/sig-architecture/"
          "api-conventions.md#metadata",
          0};
}

std::string AgeCell(const JsonObject& obj, Timestamp now) {
  return SinceCell(MetaString(obj, "creationTimestamp"), now);
}

#define DRAPLANE_STRATEGY(Name, Impl, ...)        \
  const Strategy& Name() {                        \
    static const Impl* s = new Impl(__VA_ARGS__); \
    return *s;                                    \
  }

DRAPLANE_STRATEGY(BindingStrategy, BindingStrategyImpl)
DRAPLANE_STRATEGY(ResourcePoolStatusRequestStrategy, ResourcePoolStatusRequestStrategyImpl)
DRAPLANE_STRATEGY(CoreEventStrategy, CoreEventStrategyImpl)
DRAPLANE_STRATEGY(EventsV1EventStrategy, EventsV1EventStrategyImpl)
DRAPLANE_STRATEGY(NamespaceStrategy, NamespaceStrategyImpl)
DRAPLANE_STRATEGY(NodeStrategy, NodeStrategyImpl)
DRAPLANE_STRATEGY(PodStrategy, PodStrategyImpl)
DRAPLANE_STRATEGY(LeaseStrategy, LeaseStrategyImpl)
DRAPLANE_STRATEGY(RbacStrategy, RbacStrategyImpl)
DRAPLANE_STRATEGY(ReviewStrategy, ReviewStrategyImpl)
DRAPLANE_STRATEGY(DeviceTaintRuleStrategy, DeviceTaintRuleStrategyImpl)
DRAPLANE_STRATEGY(ResourceQuotaStrategy, ResourceQuotaStrategyImpl)

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

#undef DRAPLANE_STRATEGY

}  // namespace draplane::server::handlers
