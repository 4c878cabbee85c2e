// The strategies of the core group (""/v1) that this server stores: Pod, Node, Namespace,
// ResourceQuota, and the Binding subresource (strategy.h). Events are in strategies_events.cc.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/gen/core_v1_codec.h"
#include "api/priority.h"
#include "api/resource_health.h"
#include "api/stored_quantities.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"
#include "api/validation/node_validation.h"
#include "api/validation/pod_defaults.h"
#include "api/validation/pod_validation.h"
#include "api/validation/quota_validation.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

using api::FieldErrorList;
using api::FieldPath;
namespace validation = api::validation;

class PodStrategyImpl final : public GenericStrategyOf<api::corev1::Pod> {
 public:
  PodStrategyImpl() : GenericStrategyOf(true, validation::NameIsDNSSubdomain, true) {}

  // pod strategy PrepareForCreate: status = {phase: Pending, qosClass}.
  void PrepareForCreate(JsonObject& obj) const override {
    validation::SetPodDefaults(obj);
    JsonObject status;
    status["phase"] = "Pending";
    status["qosClass"] = validation::PodQosClass(obj);
    obj["status"] = std::move(status);
  }

  // The status is kept as for every kind; so are the priority and preemption policy the Priority
  // admission set on create when the update leaves them out (before the generation is compared).
  // The object is defaulted as a create's is (upstream defaults every decoded object), so a Pod
  // replaced by its manifest as written compares equal to the defaulted one stored.
  void PrepareForUpdate(JsonObject& obj, const JsonObject& old) const override {
    GenericStrategyOf::PrepareForUpdate(obj, old);
    validation::SetPodDefaults(obj);
    api::KeepPodPriority(obj, old);
  }

  // Pods are stored as sent but for their quantities, kept as upstream stores them.
  CheckResult Check(JsonObject& obj) const override {
    api::CanonicalizePodQuantities(obj);
    CheckResult r = GenericStrategyOf::Check(obj);
    if (!r.decode_errors.empty()) return r;
    Append(r.errors, validation::ValidatePodSpec(obj));
    return r;
  }

  // ValidatePodUpdate: only a few spec fields may change after creation.
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    api::CanonicalizePodQuantities(obj);
    CheckResult r = GenericStrategyOf::CheckUpdate(obj, old);
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
    CheckOnlyAddedTolerations(obj, old, &r.errors);
    CheckOnlyRemovedSchedulingGates(obj, old, &r.errors);
    Append(r.errors, validation::ValidatePodActiveDeadlineUpdate(obj, old));
    return r;
  }

  // ValidatePodStatusUpdate, for the parts of pod status this server checks: the resource claim
  // statuses and KEP-4680's containerStatuses[].allocatedResourcesStatus.
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = CheckUpdate(obj, old);
    if (!r.decode_errors.empty()) return r;
    Append(r.errors, validation::ValidatePodResourceClaimStatuses(obj));
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
  // Upstream validateOnlyAddedTolerations: every existing toleration stays, only its
  // tolerationSeconds may change; new ones may be added.
  static void CheckOnlyAddedTolerations(const JsonObject& obj, const JsonObject& old,
                                        FieldErrorList* errors) {
    auto tolerations = [](const JsonObject& pod) {
      std::vector<JsonObject> out;
      const JsonObject* spec = FindObject(pod, "spec");
      const boost::json::array* list = spec ? FindArray(*spec, "tolerations") : nullptr;
      if (list == nullptr) return out;
      for (const boost::json::value& t : *list) {
        if (!t.is_object()) continue;
        JsonObject o = t.get_object();
        o.erase("tolerationSeconds");
        out.push_back(std::move(o));
      }
      return out;
    };
    const std::vector<JsonObject> now = tolerations(obj);
    for (const JsonObject& t : tolerations(old)) {
      if (std::find(now.begin(), now.end(), t) == now.end()) {
        errors->push_back(
            api::Forbidden(FieldPath("spec").Child("tolerations"),
                           "existing toleration can not be modified except its tolerationSeconds"));
        return;
      }
    }
  }

  // Upstream validateOnlyDeletedSchedulingGates: gates may be removed, never added.
  static void CheckOnlyRemovedSchedulingGates(const JsonObject& obj, const JsonObject& old,
                                              FieldErrorList* errors) {
    auto gates = [](const JsonObject& pod) {
      std::vector<std::string> out;
      const JsonObject* spec = FindObject(pod, "spec");
      const boost::json::array* list = spec ? FindArray(*spec, "schedulingGates") : nullptr;
      if (list == nullptr) return out;
      for (const boost::json::value& g : *list) {
        if (g.is_object()) out.emplace_back(GetString(g.get_object(), "name"));
      }
      return out;
    };
    const std::vector<std::string> before = gates(old);
    for (const std::string& g : gates(obj)) {
      if (std::find(before.begin(), before.end(), g) == before.end()) {
        errors->push_back(
            api::Forbidden(FieldPath("spec").Child("schedulingGates"),
                           "only deletion is allowed, but found new scheduling gate '" + g + "'"));
      }
    }
  }

  static JsonObject Mutable(const JsonObject& pod) {
    const JsonObject* spec = FindObject(pod, "spec");
    JsonObject out = spec ? *spec : JsonObject();
    // Compared as values: a Pod stored before quantities were canonical may say 0.5 for 500m.
    api::CanonicalizePodSpecQuantities(out);
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
};

class NodeStrategyImpl final : public GenericStrategyOf<api::corev1::Node> {
 public:
  NodeStrategyImpl() : GenericStrategyOf(false, validation::NameIsDNSSubdomain, true) {}

  // Nodes keep the status they are created with (the kubelet registers with one).
  void PrepareForCreate(JsonObject&) const override {}

  // Nodes are stored as sent but for their quantities, kept as upstream stores them.
  CheckResult Check(JsonObject& obj) const override {
    api::CanonicalizeNodeQuantities(obj);
    return GenericStrategyOf::Check(obj);
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    api::CanonicalizeNodeQuantities(obj);
    return GenericStrategyOf::CheckUpdate(obj, old);
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    api::CanonicalizeNodeQuantities(obj);
    return GenericStrategyOf::CheckStatusUpdate(obj, old);
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

 protected:
  // spec.taints (upstream validateNodeTaints, on create and update).
  FieldErrorList Validate(const api::corev1::Node& node) const override {
    return validation::ValidateNodeTaints(node.spec.taints, FieldPath("spec").Child("taints"));
  }
};

class NamespaceStrategyImpl final : public GenericStrategyOf<api::corev1::Namespace> {
 public:
  NamespaceStrategyImpl() : GenericStrategyOf(false, validation::NameIsDNSLabel, true) {}

  // SetDefaults_Namespace: the immutable kubernetes.io/metadata.name label is a default, so the
  // writer owns it in the managed fields (the strategy sets it again below).
  void DefaultWithTime(JsonObject& obj, Timestamp) const override {
    if (!MetaString(obj, "name").empty()) AddNameLabel(obj);
  }
  // namespace strategy PrepareForCreate: phase Active, the "kubernetes" finalizer after the
  // client's own, and the label.
  void PrepareForCreate(JsonObject& obj) const override {
    JsonObject status;
    status["phase"] = "Active";
    obj["status"] = std::move(status);
    JsonObject& spec = EnsureObject(obj, "spec");
    boost::json::value& finalizers = spec["finalizers"];
    if (!finalizers.is_array()) finalizers = boost::json::array();
    boost::json::array& list = finalizers.get_array();
    if (std::find(list.begin(), list.end(), boost::json::value("kubernetes")) == list.end()) {
      list.emplace_back("kubernetes");
    }
    AddNameLabel(obj);
  }

  // ValidateNamespaceStatusUpdate: the phase follows the deletion, so that a status write cannot
  // make a namespace refuse every create as terminating while nothing deletes it.
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = GenericStrategyOf::CheckStatusUpdate(obj, old);
    if (!r.decode_errors.empty()) return r;
    const std::string phase(GetPathString(obj, {"status", "phase"}));
    const bool deleting = !MetaString(obj, "deletionTimestamp").empty();
    if (!deleting && phase != "Active") {
      r.errors.push_back(api::Invalid(FieldPath("status").Child("Phase"), api::RenderValue(phase),
                                      "may only be 'Active' if `deletionTimestamp` is empty"));
    } else if (deleting && phase != "Terminating") {
      r.errors.push_back(
          api::Invalid(FieldPath("status").Child("Phase"), api::RenderValue(phase),
                       "may only be 'Terminating' if `deletionTimestamp` is not empty"));
    }
    return r;
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

 protected:
  // ValidateNamespace / ValidateNamespaceFinalizeUpdate: spec.finalizers are finalizer names.
  FieldErrorList Validate(const api::corev1::Namespace& ns) const override {
    return validation::ValidateFinalizerNames(ns.spec.finalizers,
                                              FieldPath("spec").Child("finalizers"));
  }

 private:
  static void AddNameLabel(JsonObject& obj) {
    JsonObject& meta = EnsureObject(obj, "metadata");
    JsonObject& labels = EnsureObject(meta, "labels");
    labels["kubernetes.io/metadata.name"] = GetString(meta, "name");
  }
};

// pkg/registry/core/resourcequota/strategy.go: the status is reset on create and kept by
// updates of the main resource (the status subresource writes it); validation as upstream's.
class ResourceQuotaStrategyImpl final : public TypedStrategy<api::corev1::ResourceQuota> {
 public:
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
  FieldErrorList Admit(api::corev1::ResourceQuota& quota) const override {
    return validation::ValidateResourceQuota(quota);
  }
  FieldErrorList AdmitUpdate(api::corev1::ResourceQuota& quota,
                             const api::corev1::ResourceQuota& old) const override {
    return validation::ValidateResourceQuotaUpdate(quota, old);
  }
  FieldErrorList AdmitStatusUpdate(api::corev1::ResourceQuota& quota,
                                   const api::corev1::ResourceQuota& old) const override {
    return validation::ValidateResourceQuotaStatusUpdate(quota, old);
  }

  bool has_status() const override { return true; }
};

// Binding objects posted to pods/{name}/binding or bindings.
class BindingStrategyImpl final : public Strategy {};

}  // namespace

const Strategy& PodStrategy() { return StrategyInstance<PodStrategyImpl>(); }
const Strategy& NodeStrategy() { return StrategyInstance<NodeStrategyImpl>(); }
const Strategy& NamespaceStrategy() { return StrategyInstance<NamespaceStrategyImpl>(); }
const Strategy& ResourceQuotaStrategy() { return StrategyInstance<ResourceQuotaStrategyImpl>(); }
const Strategy& BindingStrategy() { return StrategyInstance<BindingStrategyImpl>(); }

}  // namespace draplane::server::handlers
