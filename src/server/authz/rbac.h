// Role-based access control over rbac.authorization.k8s.io/v1 Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings, evaluated as upstream's RBAC authorizer does
// (plugin/pkg/auth/authorizer/rbac/rbac.go, pkg/apis/rbac/v1/evaluation_helpers.go):
//   1. Members of `system:masters` may do everything (kube-apiserver's privileged group).
//   2. Every ClusterRoleBinding naming the user (User), one of its groups (Group) or its service
//      account (ServiceAccount) grants the rules of the ClusterRole it references, everywhere.
//   3. Every RoleBinding in the request's namespace naming the user grants the rules of its Role
//      (same namespace) or ClusterRole, in that namespace only.
//   A rule allows a resource request when verb, API group, resource ("res" or "res/sub", "*",
//   "*/sub") and resourceNames (empty = any; a request without a name never matches a
//   non-empty list) all match; a non-resource request when verb and nonResourceURLs ("*" or a
//   "/prefix*" pattern) match. Aggregation rules are not evaluated (issue 6: "aggregated
//   nothing").
//
// `RbacCache` keeps the four kinds in memory: loaded from the store, kept current by a store
// watch (other servers' writes) and by `Observe` calls from the REST handlers (this server's own
// writes are visible to the very next request, which upstream's informer-based cache does not
// promise).
//
// Thread-safety: RbacAuthorizer and RbacCache are safe for concurrent use; snapshots are
// immutable and shared.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "server/authz/authorizer.h"
#include "store/store.h"

namespace draplane::server::authz {

struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;

  friend bool operator==(const PolicyRule&, const PolicyRule&) = default;
};

struct Subject {
  std::string kind;  // User, Group, ServiceAccount
  std::string name;
  std::string namespace_;

  friend bool operator==(const Subject&, const Subject&) = default;
};

struct Binding {
  std::string namespace_;  // empty for ClusterRoleBindings
  std::string name;
  std::string role_kind;  // Role or ClusterRole
  std::string role_name;
  std::vector<Subject> subjects;
};

// An immutable view of every RBAC object.
struct RbacSnapshot {
  std::map<std::string, std::vector<PolicyRule>> cluster_roles;
  std::map<std::pair<std::string, std::string>, std::vector<PolicyRule>> roles;  // (ns, name)
  std::vector<Binding> cluster_role_bindings;
  std::map<std::string, std::vector<Binding>> role_bindings;  // by namespace
};

// upstream RuleAllows.
bool RuleAllows(const Attributes& attributes, const PolicyRule& rule);

// upstream ConfirmNoEscalation's Covers: the rules of `granted`, broken down into one verb, API
// group, resource and resource name (or one verb and URL) each, that no rule of `owner` allows.
// A wildcard in `granted` is covered only by the same wildcard, a rule without resourceNames
// only by one without them.
std::vector<PolicyRule> UncoveredRules(const std::vector<PolicyRule>& owner,
                                       const std::vector<PolicyRule>& granted);
// A rule as upstream's escalation error lists it: {APIGroups:["*"], Resources:["*"], Verbs:["*"]}.
std::string DescribeRule(const PolicyRule& rule);

// Parses the rules of a Role / ClusterRole JSON object; parses a binding.
std::vector<PolicyRule> ParseRules(std::string_view json);
Binding ParseBinding(std::string_view json);

class RbacCache {
 public:
  explicit RbacCache(store::Store* store);
  ~RbacCache();

  // Loads everything and starts the watch thread. Returns the store's error.
  Status Start();
  // Stops the watch thread. Idempotent.
  void Stop();

  // Applies a write this server made (`object` is the stored object after the write; for a
  // delete, `deleted` is true). `store_resource` is e.g. "rbac.authorization.k8s.io/roles".
  void Observe(std::string_view store_resource, const store::Object& object, bool deleted);

  std::shared_ptr<const RbacSnapshot> snapshot() const;

 private:
  struct Entry {
    store::Revision revision = 0;
    std::string value;  // empty: deleted (a tombstone, so older events cannot resurrect it)
  };
  Status Load();
  void Apply(std::string_view resource, const store::Key& key, store::Revision revision,
             const std::string* value);
  void Rebuild();
  void WatchLoop();

  store::Store* store_;
  mutable Mutex mu_;
  std::map<std::string, std::map<store::Key, Entry>> objects_ DRAPLANE_GUARDED_BY(mu_);
  std::shared_ptr<const RbacSnapshot> snapshot_ DRAPLANE_GUARDED_BY(mu_);
  store::Revision loaded_revision_ DRAPLANE_GUARDED_BY(mu_) = 0;

  Mutex watch_mu_;
  CondVar watch_cv_;
  bool watch_pending_ DRAPLANE_GUARDED_BY(watch_mu_) = false;
  bool stopping_ DRAPLANE_GUARDED_BY(watch_mu_) = false;
  std::thread thread_;
};

class RbacAuthorizer final : public Authorizer {
 public:
  explicit RbacAuthorizer(const RbacCache* cache) : cache_(cache) {}
  Result Authorize(const Attributes& attributes) const override;

  // The rules that apply to `user` in `namespace_` (cluster-wide ones included), for
  // SelfSubjectRulesReview.
  std::vector<PolicyRule> RulesFor(const auth::UserInfo& user, const std::string& namespace_) const;
  // The rules of the role a binding references: a ClusterRole, or a Role of `namespace_`;
  // std::nullopt when it does not exist.
  std::optional<std::vector<PolicyRule>> RoleRules(std::string_view kind, std::string_view name,
                                                   const std::string& namespace_) const;

 private:
  const RbacCache* cache_;
};

// The RBAC resources' store names.
inline constexpr std::string_view kRolesResource = "rbac.authorization.k8s.io/roles";
inline constexpr std::string_view kClusterRolesResource = "rbac.authorization.k8s.io/clusterroles";
inline constexpr std::string_view kRoleBindingsResource = "rbac.authorization.k8s.io/rolebindings";
inline constexpr std::string_view kClusterRoleBindingsResource =
    "rbac.authorization.k8s.io/clusterrolebindings";

}  // namespace draplane::server::authz
