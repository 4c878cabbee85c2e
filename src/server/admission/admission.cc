#include "server/admission/admission.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/device_taints.h"
#include "api/gen/scheduling_v1_codec.h"
#include "api/labels/node_isolation.h"
#include "api/priority.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "server/authz/node.h"

namespace draplane::server::admission {
namespace {

using handlers::ApiError;
using handlers::JsonObject;

bool IsProtectedNamespace(std::string_view name) {
  return name == "default" || name == "kube-system" || name == "kube-public" ||
         name == "kube-node-lease";
}

// The first exactly.adminAccess=true request of a claim spec ("spec.devices.requests") or of a
// template ("spec.spec.devices.requests").
std::optional<api::FieldPath> AdminAccessRequest(const JsonObject& spec, const api::FieldPath&) {
  const JsonObject* devices = handlers::FindObject(spec, "devices");
  const boost::json::array* requests =
      devices ? handlers::FindArray(*devices, "requests") : nullptr;
  if (requests == nullptr) return std::nullopt;
  for (size_t i = 0; i < requests->size(); ++i) {
    if (!(*requests)[i].is_object()) continue;
    const JsonObject* exactly = handlers::FindObject((*requests)[i].get_object(), "exactly");
    if (exactly == nullptr) continue;
    const boost::json::value* admin = exactly->if_contains("adminAccess");
    if (admin != nullptr && admin->is_bool() && admin->get_bool()) {
      // Upstream names the request's adminAccess (AuthorizedForAdmin).
      return api::FieldPath("spec")
          .Child("devices")
          .Child("requests")
          .Index(static_cast<int64_t>(i))
          .Child("adminAccess");
    }
  }
  return std::nullopt;
}

std::optional<api::FieldPath> AdminAccessResult(const JsonObject& obj) {
  const JsonObject* status = handlers::FindObject(obj, "status");
  const JsonObject* allocation = status ? handlers::FindObject(*status, "allocation") : nullptr;
  const JsonObject* devices = allocation ? handlers::FindObject(*allocation, "devices") : nullptr;
  const boost::json::array* results = devices ? handlers::FindArray(*devices, "results") : nullptr;
  if (results == nullptr) return std::nullopt;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!(*results)[i].is_object()) continue;
    const boost::json::value* admin = (*results)[i].get_object().if_contains("adminAccess");
    if (admin != nullptr && admin->is_bool() && admin->get_bool()) {
      return api::FieldPath("status")
          .Child("allocation")
          .Child("devices")
          .Child("results")
          .Index(static_cast<int64_t>(i))
          .Child("adminAccess");
    }
  }
  return std::nullopt;
}

// draplane's DeviceTaintRule guardrail (docs/design/agent.md): a rule whose deviceSelector is
// missing or sets none of driver / pool / device would taint every device of the cluster
// (kubernetes#141422); it is refused unless annotated `draplane.dev/select-all: "true"`.
std::optional<ApiError> DeviceTaintRuleSelector(const Attributes& a) {
  const handlers::ResourceInfo& r = *a.resource;
  if (r.group != "resource.k8s.io" || r.resource != "devicetaintrules" || a.object == nullptr ||
      !a.subresource.empty() || a.operation == Operation::kDelete) {
    return std::nullopt;
  }
  const JsonObject* spec = handlers::FindObject(*a.object, "spec");
  const JsonObject* selector = spec ? handlers::FindObject(*spec, "deviceSelector") : nullptr;
  if (selector != nullptr) {
    for (const char* field : {"driver", "pool", "device"}) {
      const boost::json::value* v = selector->if_contains(field);
      if (v != nullptr && v->is_string()) return std::nullopt;
    }
  }
  handlers::StringMap annotations = handlers::MetaStringMap(*a.object, "annotations");
  auto it = annotations.find(api::kSelectAllAnnotation);
  if (it != annotations.end() && it->second == "true") return std::nullopt;
  api::FieldErrorList errors;
  errors.push_back(api::Forbidden(
      api::FieldPath("spec").Child("deviceSelector"),
      "a DeviceTaintRule without driver, pool or device would taint every device; select "
      "devices, or add the annotation `draplane.dev/select-all: \"true\"` to mean all of them"));
  return handlers::NewInvalid(r.GroupKind(), a.name, errors);
}

}  // namespace

namespace {

constexpr std::string_view kPriorityClasses = "scheduling.k8s.io/priorityclasses";

bool IsPriorityClass(const handlers::ResourceInfo& r) {
  return r.group == "scheduling.k8s.io" && r.resource == "priorityclasses";
}

}  // namespace

StatusOr<std::vector<api::schedulingv1::PriorityClass>> Admission::PriorityClasses() const {
  DRAPLANE_ASSIGN_OR_RETURN(store::ListResult list, store_->List(kPriorityClasses, {}));
  std::vector<api::schedulingv1::PriorityClass> out;
  out.reserve(list.objects.size());
  std::map<std::string, std::pair<store::Revision, api::schedulingv1::PriorityClass>, std::less<>>
      decoded;
  MutexLock lock(mu_);
  for (const store::ObjectPtr& o : list.objects) {
    auto cached = priority_classes_.find(o->key.name);
    if (cached != priority_classes_.end() && cached->second.first == o->revision) {
      out.push_back(cached->second.second);
    } else {
      StatusOr<JsonObject> parsed = handlers::ParseObject(o->value);
      if (!parsed.ok()) return parsed.status();
      api::FieldErrorList errors;
      api::schedulingv1::PriorityClass pc;
      api::schedulingv1::Decode(boost::json::value(std::move(*parsed)), &pc, &errors);
      if (!errors.empty())
        return InternalError("stored PriorityClass " + o->key.name + ": " +
                             errors.front().ToString());
      out.push_back(std::move(pc));
    }
    decoded.emplace(o->key.name, std::make_pair(o->revision, out.back()));
  }
  // Only the classes of this list: a deleted class leaves the cache.
  priority_classes_ = std::move(decoded);
  return out;
}

std::optional<ApiError> Admission::Mutate(const Attributes& a, JsonObject& object) const {
  const handlers::ResourceInfo& r = *a.resource;
  if (!r.group.empty() || r.resource != "pods" || !a.subresource.empty() ||
      a.operation == Operation::kDelete) {
    return std::nullopt;
  }
  // DefaultTolerationSeconds acts on updates too: an update (kubectl apply replaces the atomic
  // tolerations list with the manifest's) gets the defaults back instead of being refused for
  // removing them. Priority acts on creates only (the strategy keeps what it set).
  if (a.operation == Operation::kUpdate) {
    AddDefaultTolerations(object);
    return std::nullopt;
  }
  StatusOr<std::vector<api::schedulingv1::PriorityClass>> classes = PriorityClasses();
  if (!classes.ok()) {
    return handlers::FromStatus(
        classes.status(),
        {{"scheduling.k8s.io", "priorityclasses"}, "", "PriorityClass.scheduling.k8s.io"});
  }
  if (std::optional<std::string> refused = api::AdmitPodPriority(object, *classes)) {
    return handlers::NewForbidden(r.Gr(), a.name, *refused);
  }
  AddDefaultTolerations(object);
  return std::nullopt;
}

void Admission::AddDefaultTolerations(JsonObject& pod) const {
  boost::json::value& spec_value = pod["spec"];
  if (!spec_value.is_object()) return;  // validation refuses it
  JsonObject& spec = spec_value.get_object();
  boost::json::value& list = spec["tolerations"];
  if (list.is_null()) list = boost::json::array();
  if (!list.is_array()) return;  // validation refuses it
  boost::json::array& tolerations = list.get_array();
  for (const auto& entry : {std::pair<std::string_view, int64_t>{"node.kubernetes.io/not-ready",
                                                                 default_tolerations_.not_ready},
                            {"node.kubernetes.io/unreachable", default_tolerations_.unreachable}}) {
    const std::string_view key = entry.first;
    const int64_t seconds = entry.second;
    if (seconds < 0) continue;
    const bool tolerated =
        std::any_of(tolerations.begin(), tolerations.end(), [&](const boost::json::value& t) {
          if (!t.is_object()) return false;
          std::string_view k = handlers::GetString(t.get_object(), "key");
          std::string_view effect = handlers::GetString(t.get_object(), "effect");
          return (k.empty() || k == key) && (effect.empty() || effect == "NoExecute");
        });
    if (tolerated) continue;
    tolerations.push_back(JsonObject{{"key", key},
                                     {"operator", "Exists"},
                                     {"effect", "NoExecute"},
                                     {"tolerationSeconds", seconds}});
  }
  if (tolerations.empty()) spec.erase("tolerations");
}

std::optional<ApiError> Admission::PriorityClassRules(const Attributes& a) const {
  const handlers::ResourceInfo& r = *a.resource;
  if (!IsPriorityClass(r)) return std::nullopt;
  if (a.operation == Operation::kDelete) {
    if (api::FindSystemPriorityClass(a.name) != nullptr) {
      return handlers::NewForbidden(r.Gr(), a.name,
                                    "this is a system priority class and cannot be deleted");
    }
    return std::nullopt;
  }
  const boost::json::value* global =
      a.object != nullptr ? a.object->if_contains("globalDefault") : nullptr;
  if (global == nullptr || !global->is_bool() || !global->get_bool()) return std::nullopt;
  StatusOr<std::vector<api::schedulingv1::PriorityClass>> classes = PriorityClasses();
  if (!classes.ok()) {
    return handlers::FromStatus(classes.status(), {r.Gr(), a.name, r.GroupKind()});
  }
  // A create, or an update that makes another class than the current default one the default.
  const api::schedulingv1::PriorityClass* current = api::DefaultPriorityClass(*classes);
  if (current != nullptr &&
      (a.operation == Operation::kCreate || current->metadata.name != a.name)) {
    return handlers::NewForbidden(r.Gr(), a.name,
                                  "PriorityClass " + current->metadata.name +
                                      " is already marked as default. Only one default can exist");
  }
  return std::nullopt;
}

std::optional<ApiError> Admission::Admit(const Attributes& a) const {
  if (auto e = NamespaceLifecycle(a)) return e;
  if (auto e = NodeRestriction(a)) return e;
  if (auto e = DraAdminAccess(a)) return e;
  if (auto e = PriorityClassRules(a)) return e;
  if (auto e = DeviceTaintRuleSelector(a)) return e;
  if (auto e = RbacEscalation(a)) return e;
  return std::nullopt;
}

std::optional<ApiError> Admission::NamespaceLifecycle(const Attributes& a) const {
  const handlers::ResourceInfo& r = *a.resource;
  if (r.group.empty() && r.resource == "namespaces" && a.operation == Operation::kDelete &&
      IsProtectedNamespace(a.name)) {
    return handlers::NewForbidden(r.Gr(), a.name, "this namespace may not be deleted");
  }
  if (!r.namespaced || a.operation != Operation::kCreate || a.namespace_.empty()) {
    return std::nullopt;
  }
  StatusOr<store::ObjectPtr> ns = store_->Get(store::Key{"core/namespaces", "", a.namespace_});
  if (!ns.ok()) {
    if (ns.status().code() == StatusCode::kNotFound) {
      return handlers::NewNotFound({"", "namespaces"}, a.namespace_);
    }
    return handlers::FromStatus(ns.status(), {{"", "namespaces"}, a.namespace_, "Namespace"});
  }
  if (Terminating(**ns)) {
    return handlers::NewForbidden(r.Gr(), a.name,
                                  "unable to create new content in namespace " + a.namespace_ +
                                      " because it is being terminated");
  }
  return std::nullopt;
}

bool Admission::Terminating(const store::Object& ns) const {
  {
    MutexLock lock(mu_);
    auto it = terminating_.find(ns.key.name);
    if (it != terminating_.end() && it->second.first == ns.revision) return it->second.second;
  }
  StatusOr<JsonObject> parsed = handlers::ParseObject(ns.value);
  bool terminating =
      parsed.ok() && (!handlers::MetaString(*parsed, "deletionTimestamp").empty() ||
                      handlers::GetPathString(*parsed, {"status", "phase"}) == "Terminating");
  MutexLock lock(mu_);
  terminating_[ns.key.name] = {ns.revision, terminating};
  return terminating;
}

namespace {

// Upstream's NodeRestriction label rule (plugin/pkg/admission/noderestriction, and the kubelet's
// own list in k8s.io/kubelet/pkg/apis): labels under node-restriction.kubernetes.io, and labels
// under kubernetes.io or k8s.io (and their subdomains) other than those the kubelet sets itself.
bool IsForbiddenNodeLabel(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view ns = key.substr(0, slash);
  if (ns == "node-restriction.kubernetes.io") return true;
  auto in = [&](std::string_view domain) {
    return ns == domain || (ns.size() > domain.size() && ns.ends_with(domain) &&
                            ns[ns.size() - domain.size() - 1] == '.');
  };
  if (!in("kubernetes.io") && !in("k8s.io")) return false;
  static constexpr std::string_view kKubeletLabels[] = {
      "kubernetes.io/hostname",
      "kubernetes.io/arch",
      "kubernetes.io/os",
      "beta.kubernetes.io/instance-type",
      "node.kubernetes.io/instance-type",
      "failure-domain.beta.kubernetes.io/region",
      "failure-domain.beta.kubernetes.io/zone",
      "topology.kubernetes.io/region",
      "topology.kubernetes.io/zone",
      "beta.kubernetes.io/arch",
      "beta.kubernetes.io/os",
  };
  for (std::string_view allowed : kKubeletLabels) {
    if (key == allowed) return false;
  }
  return !in("kubelet.kubernetes.io") && !in("node.kubernetes.io");
}

}  // namespace

std::optional<ApiError> Admission::NodeRestriction(const Attributes& a) const {
  std::string node = authz::NodeNameOf(*a.user);
  if (node.empty()) return std::nullopt;
  const handlers::ResourceInfo& r = *a.resource;
  if (r.group == "resource.k8s.io" && r.resource == "resourceslices") {
    auto node_of = [](const JsonObject* o) {
      return o == nullptr ? std::string()
                          : std::string(handlers::GetPathString(*o, {"spec", "nodeName"}));
    };
    std::string verb = a.operation == Operation::kCreate   ? "create"
                       : a.operation == Operation::kUpdate ? "update"
                                                           : "delete";
    for (const JsonObject* o : {a.object, a.old_object}) {
      if (o == nullptr) continue;
      std::string owner = node_of(o);
      if (owner != node) {
        return handlers::NewForbidden(r.Gr(), a.name,
                                      "node \"" + node + "\" cannot " + verb +
                                          " a ResourceSlice whose spec.nodeName is \"" + owner +
                                          "\"; a node may only write the slices of its own node");
      }
    }
    return std::nullopt;
  }
  if (r.group.empty() && r.resource == "nodes" && a.operation == Operation::kCreate &&
      a.name != node) {
    return handlers::NewForbidden(
        r.Gr(), a.name, "node \"" + node + "\" is not allowed to create node \"" + a.name + "\"");
  }
  if (r.group.empty() && r.resource == "nodes" && a.subresource.empty() && a.object != nullptr) {
    // Upstream admitNode: a node may not give itself labels reserved for the control plane
    // (which steer workloads to it), nor change its own taints (an admin's NoSchedule taint
    // would no longer keep workloads away).
    handlers::StringMap labels = handlers::MetaStringMap(*a.object, "labels");
    handlers::StringMap old_labels;
    if (a.old_object != nullptr) old_labels = handlers::MetaStringMap(*a.old_object, "labels");
    std::string forbidden;
    for (const auto& [key, value] : labels) {
      auto old = old_labels.find(key);
      if (old != old_labels.end() && old->second == value) continue;
      if (!IsForbiddenNodeLabel(key)) continue;
      forbidden += (forbidden.empty() ? "" : ", ") + key;
    }
    for (const auto& [key, value] : old_labels) {
      if (labels.count(key) == 0 && IsForbiddenNodeLabel(key)) {
        forbidden += (forbidden.empty() ? "" : ", ") + key;
      }
    }
    if (!forbidden.empty()) {
      return handlers::NewForbidden(
          r.Gr(), a.name,
          "node \"" + node +
              (a.operation == Operation::kCreate ? "\" is not allowed to set the following labels: "
                                                 : "\" is not allowed to modify labels: ") +
              forbidden);
    }
    if (a.operation == Operation::kUpdate && a.old_object != nullptr) {
      const JsonObject* spec = handlers::FindObject(*a.object, "spec");
      const JsonObject* old_spec = handlers::FindObject(*a.old_object, "spec");
      const boost::json::value* taints = spec ? spec->if_contains("taints") : nullptr;
      const boost::json::value* old_taints = old_spec ? old_spec->if_contains("taints") : nullptr;
      // draplane's one exception: the agent's own isolation taint (api/labels/node_isolation.h),
      // which only ever keeps workloads away; every other taint stays the admin's.
      auto others = [](const boost::json::value* v) {
        boost::json::array out;
        if (v == nullptr || !v->is_array()) return out;
        for (const boost::json::value& taint : v->get_array()) {
          const boost::json::value* key =
              taint.is_object() ? taint.get_object().if_contains("key") : nullptr;
          if (key != nullptr && key->is_string() &&
              key->get_string() == api::labels::kPrepareFailuresTaintKey) {
            continue;
          }
          out.push_back(taint);
        }
        return out;
      };
      bool same = others(taints) == others(old_taints);
      if (!same) {
        return handlers::NewForbidden(r.Gr(), a.name,
                                      "node \"" + node + "\" is not allowed to modify taints");
      }
    }
  }
  if (r.group.empty() && r.resource == "pods" && a.subresource == "status" &&
      a.operation == Operation::kUpdate && a.object != nullptr && a.old_object != nullptr) {
    // Upstream admitPodStatus: the status a node writes is the kubelet's; which claims the Pod
    // uses is the claim controller's and the scheduler's (a node naming another Pod's claim
    // there would become its user), and labels steer controllers.
    if (!(handlers::MetaStringMap(*a.object, "labels") ==
          handlers::MetaStringMap(*a.old_object, "labels"))) {
      return handlers::NewForbidden(
          r.Gr(), a.name, "node \"" + node + "\" cannot update labels through pod status");
    }
    auto claim_statuses = [](const JsonObject& pod) {
      std::vector<std::pair<std::string, std::optional<std::string>>> out;
      const JsonObject* status = handlers::FindObject(pod, "status");
      const boost::json::array* list =
          status ? handlers::FindArray(*status, "resourceClaimStatuses") : nullptr;
      for (size_t i = 0; list != nullptr && i < list->size(); ++i) {
        if (!(*list)[i].is_object()) continue;
        const JsonObject& entry = (*list)[i].get_object();
        const boost::json::value* claim = entry.if_contains("resourceClaimName");
        out.emplace_back(std::string(handlers::GetString(entry, "name")),
                         claim != nullptr && claim->is_string()
                             ? std::optional<std::string>(std::string(claim->get_string()))
                             : std::nullopt);
      }
      return out;
    };
    if (claim_statuses(*a.object) != claim_statuses(*a.old_object)) {
      // Upstream's wording, its typo included.
      return handlers::NewForbidden(r.Gr(), a.name,
                                    "node \"" + node + "\" cannot update resource claim statues");
    }
    auto extended_status = [](const JsonObject& pod) -> boost::json::value {
      const JsonObject* status = handlers::FindObject(pod, "status");
      const boost::json::value* v =
          status ? status->if_contains("extendedResourceClaimStatus") : nullptr;
      return v == nullptr ? boost::json::value() : *v;
    };
    if (extended_status(*a.object) != extended_status(*a.old_object)) {
      return handlers::NewForbidden(
          r.Gr(), a.name, "node \"" + node + "\" cannot update extended resource claim status");
    }
  }
  if (r.group == "resource.k8s.io" && r.resource == "resourceclaims" && a.subresource == "status" &&
      a.operation == Operation::kUpdate && a.object != nullptr && a.old_object != nullptr) {
    // The node authorizer lets a node's driver report on the claims of its Pods
    // (status.devices, binding conditions, KEP-4817); the allocation and the reservations are
    // the scheduler's and the claim controller's. Without this a node could release a claim a
    // Pod elsewhere still uses, and its device would be handed to another tenant.
    auto without_devices = [](const JsonObject& claim) {
      const JsonObject* status = handlers::FindObject(claim, "status");
      JsonObject out = status ? *status : JsonObject();
      out.erase("devices");
      return out;
    };
    if (without_devices(*a.object) != without_devices(*a.old_object)) {
      return handlers::NewForbidden(r.Gr(), a.name,
                                    "node \"" + node +
                                        "\" may only update status.devices of a ResourceClaim, "
                                        "not its allocation or reservations");
    }
  }
  if (r.group == "coordination.k8s.io" && r.resource == "leases" &&
      a.operation == Operation::kCreate && (a.namespace_ != "kube-node-lease" || a.name != node)) {
    return handlers::NewForbidden(r.Gr(), a.name,
                                  "node \"" + node +
                                      "\" may only create its own lease in "
                                      "namespace kube-node-lease");
  }
  return std::nullopt;
}

std::optional<ApiError> Admission::RbacEscalation(const Attributes& a) const {
  if (rbac_ == nullptr || a.user == nullptr || a.object == nullptr ||
      a.operation == Operation::kDelete || !a.subresource.empty()) {
    return std::nullopt;
  }
  const handlers::ResourceInfo& r = *a.resource;
  if (r.group != "rbac.authorization.k8s.io") return std::nullopt;
  const bool role = r.resource == "roles" || r.resource == "clusterroles";
  const bool binding = r.resource == "rolebindings" || r.resource == "clusterrolebindings";
  if (!role && !binding) return std::nullopt;
  // upstream EscalationAllowed: the privileged group may grant anything.
  if (a.user->InGroup(auth::kMastersGroup)) return std::nullopt;
  const std::string ns = r.resource == "roles" || r.resource == "rolebindings" ? a.namespace_ : "";
  auto may = [&](std::string_view verb, std::string_view resource, std::string_view name) {
    authz::Attributes q;
    q.user = *a.user;
    q.verb = std::string(verb);
    q.resource_request = true;
    q.api_group = r.group;
    q.resource = std::string(resource);
    q.namespace_ = ns;
    q.name = std::string(name);
    return rbac_->Authorize(q).decision == authz::Decision::kAllow;
  };
  std::vector<authz::PolicyRule> granted;
  if (role) {
    granted = authz::ParseRules(boost::json::serialize(*a.object));
    if (a.old_object != nullptr &&
        granted == authz::ParseRules(boost::json::serialize(*a.old_object))) {
      return std::nullopt;
    }
    if (may("escalate", r.resource, a.name)) return std::nullopt;
  } else {
    authz::Binding b = authz::ParseBinding(boost::json::serialize(*a.object));
    if (a.old_object != nullptr) {
      authz::Binding old = authz::ParseBinding(boost::json::serialize(*a.old_object));
      if (old.role_kind == b.role_kind && old.role_name == b.role_name &&
          old.subjects == b.subjects) {
        return std::nullopt;
      }
    }
    if (may("bind", b.role_kind == "ClusterRole" ? "clusterroles" : "roles", b.role_name)) {
      return std::nullopt;
    }
    std::optional<std::vector<authz::PolicyRule>> rules =
        rbac_->RoleRules(b.role_kind, b.role_name, ns);
    if (!rules.has_value()) {
      return handlers::NewForbidden(
          r.Gr(), a.name,
          "user \"" + a.user->name + "\" cannot bind " + b.role_kind + " \"" + b.role_name +
              "\", which does not exist (only system:masters may bind a role before it exists)");
    }
    granted = std::move(*rules);
  }
  std::vector<authz::PolicyRule> missing =
      authz::UncoveredRules(rbac_->RulesFor(*a.user, ns), granted);
  if (missing.empty()) return std::nullopt;
  std::string groups;
  for (const std::string& g : a.user->groups) groups += (groups.empty() ? "\"" : " \"") + g + "\"";
  std::string message = "user \"" + a.user->name + "\" (groups=[" + groups +
                        "]) is attempting to grant RBAC permissions not currently held:";
  for (const authz::PolicyRule& rule : missing) message += "\n" + authz::DescribeRule(rule);
  return handlers::NewForbidden(r.Gr(), a.name, message);
}

std::optional<ApiError> Admission::DraAdminAccess(const Attributes& a) const {
  const handlers::ResourceInfo& r = *a.resource;
  if (r.group != "resource.k8s.io" || a.object == nullptr) return std::nullopt;
  std::optional<api::FieldPath> path;
  // With DRAAdminAccess off the strategies drop a spec's adminAccess: nothing to check there. A
  // status write's allocation result keeps it, and is checked whatever the gate.
  if (!dra_admin_access_ && a.subresource.empty()) return std::nullopt;
  if (r.resource == "resourceclaims" && a.subresource.empty() &&
      a.operation == Operation::kCreate) {
    if (const JsonObject* spec = handlers::FindObject(*a.object, "spec")) {
      path = AdminAccessRequest(*spec, api::FieldPath("spec"));
    }
  } else if (r.resource == "resourceclaimtemplates" && a.operation != Operation::kDelete) {
    const JsonObject* outer = handlers::FindObject(*a.object, "spec");
    const JsonObject* spec = outer ? handlers::FindObject(*outer, "spec") : nullptr;
    if (spec != nullptr) path = AdminAccessRequest(*spec, api::FieldPath("spec"));
  } else if (r.resource == "resourceclaims" && a.subresource == "status" &&
             a.operation == Operation::kUpdate) {
    // AuthorizedForAdminStatus: only a newly granted admin access is checked.
    if (a.old_object == nullptr || !AdminAccessResult(*a.old_object)) {
      path = AdminAccessResult(*a.object);
    }
  }
  if (!path) return std::nullopt;
  StatusOr<store::ObjectPtr> ns = store_->Get(store::Key{"core/namespaces", "", a.namespace_});
  api::FieldErrorList errors;
  if (!ns.ok()) {
    errors.push_back(
        api::InternalFieldError(*path, "could not retrieve namespace to verify admin access: " +
                                           std::string(ns.status().message())));
  } else {
    StatusOr<JsonObject> parsed = handlers::ParseObject((*ns)->value);
    handlers::StringMap labels;
    if (parsed.ok()) labels = handlers::MetaStringMap(*parsed, "labels");
    auto it = labels.find(kAdminAccessLabel);
    if (it == labels.end() || it->second != "true") {
      errors.push_back(api::Forbidden(*path, "admin access to devices requires the `" +
                                                 std::string(kAdminAccessLabel) +
                                                 ": true` label on the containing namespace"));
    }
  }
  if (errors.empty()) return std::nullopt;
  return handlers::NewInvalid(r.GroupKind(), a.name, errors);
}

}  // namespace draplane::server::admission
