#include "server/authz/bootstrap.h"

#include <boost/json.hpp>

namespace draplane::server::authz {
namespace {

using boost::json::array;
using boost::json::object;

using Words = std::vector<std::string_view>;

array Strings(const Words& values) {
  array out;
  for (std::string_view v : values) out.emplace_back(v);
  return out;
}

object Rule(const Words& groups, const Words& resources, const Words& verbs) {
  object r;
  r["apiGroups"] = Strings(groups);
  r["resources"] = Strings(resources);
  r["verbs"] = Strings(verbs);
  return r;
}

object UrlRule(const Words& urls, const Words& verbs) {
  object r;
  r["nonResourceURLs"] = Strings(urls);
  r["verbs"] = Strings(verbs);
  return r;
}

object Metadata(std::string_view name) {
  object meta;
  meta["name"] = name;
  object labels;
  labels["kubernetes.io/bootstrapping"] = "rbac-defaults";
  meta["labels"] = std::move(labels);
  object annotations;
  annotations["rbac.authorization.kubernetes.io/autoupdate"] = "true";
  meta["annotations"] = std::move(annotations);
  return meta;
}

BootstrapObject ClusterRole(std::string_view name, array rules) {
  object o;
  o["apiVersion"] = "rbac.authorization.k8s.io/v1";
  o["kind"] = "ClusterRole";
  o["metadata"] = Metadata(name);
  o["rules"] = std::move(rules);
  return {"rbac.authorization.k8s.io/clusterroles", std::move(o)};
}

BootstrapObject ClusterRoleBinding(
    std::string_view name, std::string_view role,
    std::initializer_list<std::pair<std::string_view, std::string_view>> subjects) {
  object o;
  o["apiVersion"] = "rbac.authorization.k8s.io/v1";
  o["kind"] = "ClusterRoleBinding";
  o["metadata"] = Metadata(name);
  object ref;
  ref["apiGroup"] = "rbac.authorization.k8s.io";
  ref["kind"] = "ClusterRole";
  ref["name"] = role;
  o["roleRef"] = std::move(ref);
  array subs;
  for (const auto& [kind, subject] : subjects) {
    object s;
    s["apiGroup"] = "rbac.authorization.k8s.io";
    s["kind"] = kind;
    s["name"] = subject;
    subs.push_back(std::move(s));
  }
  o["subjects"] = std::move(subs);
  return {"rbac.authorization.k8s.io/clusterrolebindings", std::move(o)};
}

const Words kRead = {"get", "list", "watch"};
const Words kReadWrite = {"get",    "list",  "watch",  "create",
                          "update", "patch", "delete", "deletecollection"};

}  // namespace

std::vector<BootstrapObject> BootstrapPolicy() {
  std::vector<BootstrapObject> out;
  out.push_back(
      ClusterRole("cluster-admin", array{Rule({"*"}, {"*"}, {"*"}), UrlRule({"*"}, {"*"})}));
  out.push_back(
      ClusterRole("system:discovery",
                  array{UrlRule({"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                 "/openapi", "/openapi/*", "/readyz", "/version", "/version/"},
                                {"get"})}));
  out.push_back(ClusterRole(
      "system:public-info-viewer",
      array{UrlRule({"/healthz", "/livez", "/readyz", "/version", "/version/"}, {"get"})}));
  // Read access to the monitoring endpoints for the group system:monitoring (Prometheus'
  // identity), as upstream's bootstrap policy grants it.
  out.push_back(ClusterRole("system:monitoring",
                            array{UrlRule({"/metrics", "/metrics/slis", "/livez", "/readyz",
                                           "/healthz", "/livez/*", "/readyz/*", "/healthz/*"},
                                          {"get"})}));
  out.push_back(
      ClusterRole("system:basic-user",
                  array{Rule({"authorization.k8s.io"},
                             {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, {"create"}),
                        Rule({"authentication.k8s.io"}, {"selfsubjectreviews"}, {"create"})}));
  out.push_back(ClusterRole("draplane:device-class-viewer",
                            array{Rule({"resource.k8s.io"}, {"deviceclasses"}, kRead)}));
  out.push_back(ClusterRole(
      "draplane:tenant",
      array{Rule({"resource.k8s.io"}, {"resourceclaims", "resourceclaimtemplates"}, kReadWrite),
            Rule({"resource.k8s.io"}, {"resourceclaims/status"}, {"get"}),
            Rule({""}, {"pods"}, kReadWrite), Rule({""}, {"pods/status"}, {"get"}),
            Rule({""}, {"events"}, kRead), Rule({"events.k8s.io"}, {"events"}, kRead),
            // Their quotas and the scheduler's decision records, read-only (upstream's `view`
            // role reads quotas too); a RoleBinding keeps both to the tenant's namespace.
            Rule({""}, {"resourcequotas", "resourcequotas/status"}, kRead),
            Rule({"draplane.dev"}, {"allocationdecisions"}, kRead),
            // Why their Pods wait (handlers/pod_explanations.h: the Pod's own get is checked
            // too).
            Rule({"draplane.dev"}, {"podexplanations"}, {"get"})}));
  out.push_back(ClusterRole(
      "draplane:scheduler",
      array{Rule({""}, {"pods"}, {"get", "list", "watch", "update", "patch", "delete"}),
            Rule({""}, {"pods/binding", "bindings"}, {"create"}),
            Rule({""}, {"pods/status"}, {"get", "update", "patch"}),
            Rule({""}, {"nodes", "namespaces"}, kRead),
            // create / delete: the special claims of DRA-backed extended resources, as
            // upstream's bootstrappolicy grants kube-scheduler with DRAExtendedResource.
            Rule({"resource.k8s.io"}, {"resourceclaims"},
                 {"get", "list", "watch", "create", "update", "patch", "delete"}),
            Rule({"resource.k8s.io"}, {"resourceclaims/status"}, {"get", "update", "patch"}),
            Rule({"resource.k8s.io"},
                 {"deviceclasses", "resourceslices", "resourceclaimtemplates", "devicetaintrules"},
                 kRead),
            Rule({"", "events.k8s.io"}, {"events"}, {"create", "update", "patch"}),
            Rule({"coordination.k8s.io"}, {"leases"}, {"get", "list", "watch", "create", "update"}),
            // Allocation-mode quotas: the scheduler charges device keys in status.used.
            Rule({""}, {"resourcequotas"}, kRead),
            Rule({""}, {"resourcequotas/status"}, {"get", "update", "patch"}),
            Rule({"draplane.dev"}, {"allocationdecisions"}, {"get", "list", "watch", "create"}),
            // Fair share (docs/design/fair-share.md): the scheduler reads the policies and
            // reports shares in their status; only admins write the spec (weights are a
            // privilege).
            Rule({"draplane.dev"}, {"devicesharingpolicies"}, kRead),
            Rule({"draplane.dev"}, {"devicesharingpolicies/status"}, {"get", "update", "patch"})}));
  out.push_back(ClusterRole(
      "draplane:controller-manager",
      array{Rule({"*"}, {"*"}, {"get", "list", "watch", "delete"}),
            Rule({""}, {"pods", "pods/status"}, {"update", "patch"}),
            // The node lifecycle controller: Unknown conditions and the node taints
            // (upstream system:controller:node-controller).
            Rule({""}, {"nodes", "nodes/status"}, {"update", "patch"}),
            Rule({"resource.k8s.io"}, {"resourceclaims", "resourceclaims/status"}, kReadWrite),
            Rule({"resource.k8s.io"}, {"devicetaintrules/status"}, {"get", "update", "patch"}),
            // The pool status controller answers each request once (upstream
            // system:controller:resourcepoolstatusrequest-controller); delete is the TTL sweep.
            Rule({"resource.k8s.io"}, {"resourcepoolstatusrequests/status"},
                 {"get", "update", "patch"}),
            Rule({""}, {"namespaces", "namespaces/finalize", "namespaces/status"},
                 {"get", "update", "patch"}),
            Rule({"", "events.k8s.io"}, {"events"}, {"create", "update", "patch"}),
            Rule({"coordination.k8s.io"}, {"leases"}, {"create", "update", "patch"})}));
  // What scheduler::ExplainPodFromApi reads, and nothing else.
  out.push_back(ClusterRole(
      "draplane:pod-explainer",
      array{Rule({""}, {"pods", "nodes", "resourcequotas", "events"}, {"get", "list"}),
            Rule({"resource.k8s.io"},
                 {"deviceclasses", "resourceslices", "resourceclaims", "devicetaintrules"},
                 {"get", "list"})}));
  out.push_back(ClusterRole(
      "draplane:node-agent",
      array{Rule({""}, {"nodes", "nodes/status"},
                 {"get", "list", "watch", "create", "update", "patch"}),
            Rule({""}, {"pods"}, kRead), Rule({""}, {"pods/status"}, {"update", "patch"}),
            Rule({"resource.k8s.io"}, {"resourceslices"}, kReadWrite),
            Rule({"resource.k8s.io"}, {"resourceclaims"}, {"get"}),
            Rule({"resource.k8s.io"}, {"resourceclaims/status"}, {"update", "patch"}),
            Rule({"resource.k8s.io"}, {"deviceclasses"}, kRead),
            Rule({"", "events.k8s.io"}, {"events"}, {"create", "update", "patch"}),
            Rule({"coordination.k8s.io"}, {"leases"}, {"get", "create", "update", "patch"})}));
  out.push_back(ClusterRole(
      "draplane:admin",
      array{Rule({"resource.k8s.io"}, {"*"}, {"*"}),
            Rule({""}, {"pods", "pods/status", "nodes", "nodes/status", "namespaces", "events"},
                 {"*"}),
            Rule({"events.k8s.io"}, {"events"}, {"*"}),
            Rule({""}, {"resourcequotas", "resourcequotas/status"}, {"*"}),
            Rule({"draplane.dev"}, {"*"}, {"*"}),
            Rule({"rbac.authorization.k8s.io"}, {"rolebindings", "roles"}, {"*"})}));

  // Upstream's user-facing roles (bootstrappolicy ClusterRoles), over the kinds this server
  // serves, so that `kubectl create rolebinding --clusterrole=edit` grants what it does in a
  // cluster. Their aggregation rules are written out: this server does not evaluate them.
  array view{Rule({""},
                  {"pods", "pods/status", "events", "resourcequotas", "resourcequotas/status",
                   "namespaces", "namespaces/status"},
                  kRead),
             Rule({"resource.k8s.io"},
                  {"resourceclaims", "resourceclaims/status", "resourceclaimtemplates"}, kRead),
             Rule({"draplane.dev"}, {"allocationdecisions"}, kRead),
             Rule({"draplane.dev"}, {"podexplanations"}, {"get"})};
  array edit = view;
  edit.push_back(Rule({""}, {"pods"}, kReadWrite));
  edit.push_back(Rule({""}, {"pods/eviction"}, {"create"}));
  edit.push_back(
      Rule({"resource.k8s.io"}, {"resourceclaims", "resourceclaimtemplates"}, kReadWrite));
  array admin = edit;
  admin.push_back(Rule({"rbac.authorization.k8s.io"}, {"roles", "rolebindings"}, kReadWrite));
  admin.push_back(Rule({"authorization.k8s.io"}, {"localsubjectaccessreviews"}, {"create"}));
  out.push_back(ClusterRole("view", std::move(view)));
  out.push_back(ClusterRole("edit", std::move(edit)));
  out.push_back(ClusterRole("admin", std::move(admin)));

  out.push_back(
      ClusterRoleBinding("cluster-admin", "cluster-admin", {{"Group", "system:masters"}}));
  out.push_back(ClusterRoleBinding("system:discovery", "system:discovery",
                                   {{"Group", "system:authenticated"}}));
  out.push_back(
      ClusterRoleBinding("system:public-info-viewer", "system:public-info-viewer",
                         {{"Group", "system:authenticated"}, {"Group", "system:unauthenticated"}}));
  out.push_back(ClusterRoleBinding("system:monitoring", "system:monitoring",
                                   {{"Group", "system:monitoring"}}));
  out.push_back(ClusterRoleBinding("system:basic-user", "system:basic-user",
                                   {{"Group", "system:authenticated"}}));
  out.push_back(ClusterRoleBinding("draplane:device-class-viewer", "draplane:device-class-viewer",
                                   {{"Group", "system:authenticated"}}));
  out.push_back(
      ClusterRoleBinding("draplane:scheduler", "draplane:scheduler", {{"User", kSchedulerUser}}));
  out.push_back(ClusterRoleBinding("draplane:controller-manager", "draplane:controller-manager",
                                   {{"User", kControllerManagerUser}}));
  out.push_back(ClusterRoleBinding("draplane:pod-explainer", "draplane:pod-explainer",
                                   {{"User", kPodExplainerUser}}));
  return out;
}

}  // namespace draplane::server::authz
