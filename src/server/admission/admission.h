// Admission: checks that need more than the object itself, run after authorization and the
// kind's own validation, before the write (kube-apiserver's admission chain). Plugins, in order:
//
//   NamespaceLifecycle  a namespaced object needs an existing namespace that is not being
//                       deleted (404 / 403); default, kube-system, kube-public and
//                       kube-node-lease cannot be deleted (upstream plugin/pkg/admission/
//                       namespace/lifecycle).
//   NodeRestriction     a node identity may only create, update or delete ResourceSlices whose
//                       spec.nodeName is its own (old and new object), only create its own Node
//                       and its own heartbeat Lease, not change a Pod's labels, claim statuses
//                       or extended resource claim status through its status
//                       (plugin/pkg/admission/noderestriction), and of a claim's status only
//                       status.devices (its driver's report; draplane's agents run as the node).
//   DRAAdminAccess      a claim or claim template asking for adminAccess, or a claim status that
//                       grants it, needs the namespace label
//                       `resource.kubernetes.io/admin-access: "true"` (pkg/registry/resource
//                       AuthorizedForAdmin / AuthorizedForAdminStatus); failures are field
//                       errors of the Invalid answer, with upstream's path and wording.
//   Priority            (mutating, Mutate) a new Pod's spec.priorityClassName, or the global
//                       default class, sets spec.priority and spec.preemptionPolicy; an unknown
//                       class or a priority the Pod states itself is refused (403); an update
//                       keeps what admission set (the Pod strategy's PrepareForUpdate). A
//                       PriorityClass may not become a second global default, and the system
//                       classes may not be deleted (plugin/pkg/admission/priority;
//                       pkg/registry/scheduling).
//   DefaultToleration-  (mutating, Mutate) a new or updated Pod without a toleration of the
//   Seconds             NoExecute taint node.kubernetes.io/not-ready (or unreachable) -- one whose
//                       key is empty or that key, and whose effect is empty or NoExecute -- gets
//                       {key, operator: Exists, effect: NoExecute, tolerationSeconds: N}, N
//                       300 by default (plugin/pkg/admission/defaulttolerationseconds), so the
//                       taint eviction controller moves it off a failed node after N seconds.
//   DeviceTaintRule     draplane's guardrail: a DeviceTaintRule whose deviceSelector is missing
//                       or empty is refused unless annotated `draplane.dev/select-all: "true"`
//                       (docs/design/agent.md).
//   RBAC escalation     (with an RBAC authorizer) a Role or ClusterRole may only be written with
//                       rules its author holds, a binding only to a role whose rules its author
//                       holds, unless the author is in system:masters or may `escalate` the role
//                       / `bind` the role referenced (upstream ConfirmNoEscalation,
//                       pkg/registry/rbac/*/policybased); an update that leaves the rules, the
//                       role reference and the subjects as they were is not checked.
//
// Thread-safety: safe for concurrent use. The only state besides the store handle is a memo of
// whether each namespace is terminating, by the namespace object's revision (guarded by a mutex;
// a namespace's stored bytes at one revision never change, so the memo cannot go stale).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "api/gen/scheduling_v1_types.h"
#include "common/mutex.h"
#include "server/auth/authenticator.h"
#include "server/authz/rbac.h"
#include "server/handlers/errors.h"
#include "server/handlers/json_util.h"
#include "server/handlers/registry.h"
#include "store/store.h"

namespace draplane::server::admission {

enum class Operation { kCreate, kUpdate, kDelete };

struct Attributes {
  const handlers::ResourceInfo* resource = nullptr;
  std::string subresource;
  Operation operation = Operation::kCreate;
  const auth::UserInfo* user = nullptr;
  std::string namespace_;
  std::string name;
  const handlers::JsonObject* object = nullptr;      // the new object (create, update)
  const handlers::JsonObject* old_object = nullptr;  // update, delete
};

// DefaultTolerationSeconds' N per taint; negative: none added.
struct DefaultTolerationSeconds {
  int64_t not_ready = 300;
  int64_t unreachable = 300;
};

class Admission {
 public:
  // `rbac` (optional) enables the RBAC escalation check. `dra_admin_access` false: DRAAdminAccess
  // is off, the strategies drop a claim or template spec's adminAccess, and there is no namespace
  // label to check for it (a status write's allocation result is still checked).
  explicit Admission(store::Store* store, const authz::RbacAuthorizer* rbac = nullptr,
                     DefaultTolerationSeconds default_tolerations = {},
                     bool dra_admin_access = true)
      : store_(store),
        rbac_(rbac),
        default_tolerations_(default_tolerations),
        dra_admin_access_(dra_admin_access) {}

  // The mutating plugins (Priority, DefaultTolerationSeconds), run before Admit on `object`, the
  // new object of a create or update (`attributes.object` points to it). Returns the error that
  // refuses the request.
  std::optional<handlers::ApiError> Mutate(const Attributes& attributes,
                                           handlers::JsonObject& object) const;

  // Returns the error that refuses the request, or std::nullopt to let it through.
  std::optional<handlers::ApiError> Admit(const Attributes& attributes) const;

 private:
  // DefaultTolerationSeconds on a Pod create's or update's object.
  void AddDefaultTolerations(handlers::JsonObject& pod) const;
  std::optional<handlers::ApiError> NamespaceLifecycle(const Attributes& a) const;
  std::optional<handlers::ApiError> NodeRestriction(const Attributes& a) const;
  std::optional<handlers::ApiError> DraAdminAccess(const Attributes& a) const;
  std::optional<handlers::ApiError> PriorityClassRules(const Attributes& a) const;
  std::optional<handlers::ApiError> RbacEscalation(const Attributes& a) const;
  // The PriorityClasses stored now, each decoded once per revision.
  StatusOr<std::vector<api::schedulingv1::PriorityClass>> PriorityClasses() const;
  // Whether `ns` (the namespace object just read) is being deleted: parsed once per revision.
  bool Terminating(const store::Object& ns) const;

  store::Store* store_;
  const authz::RbacAuthorizer* rbac_;
  const DefaultTolerationSeconds default_tolerations_;
  const bool dra_admin_access_;
  mutable Mutex mu_;
  // Namespace name -> (revision read, terminating at that revision).
  mutable std::map<std::string, std::pair<store::Revision, bool>, std::less<>> terminating_
      DRAPLANE_GUARDED_BY(mu_);
  // PriorityClass name -> (revision read, the class decoded at that revision), as of the last
  // list: every Pod create reads the classes.
  mutable std::map<std::string, std::pair<store::Revision, api::schedulingv1::PriorityClass>,
                   std::less<>>
      priority_classes_ DRAPLANE_GUARDED_BY(mu_);
};

// The namespace label that allows admin access to devices.
inline constexpr std::string_view kAdminAccessLabel = "resource.kubernetes.io/admin-access";

}  // namespace draplane::server::admission
