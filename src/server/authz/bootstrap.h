// The default RBAC policy `draplane serve` creates at start (upstream:
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy). ClusterRoles:
//   cluster-admin                 everything; bound to group system:masters
//   system:discovery              discovery and OpenAPI documents; bound to system:authenticated
//   system:public-info-viewer     /healthz, /livez, /readyz, /version; bound to everyone
//   system:basic-user             self reviews (`kubectl auth can-i`, `auth whoami`)
//   draplane:device-class-viewer  read DeviceClasses (tenants must see what they can ask for);
//                                 bound to system:authenticated
//   draplane:tenant               claims, claim templates and pods in one namespace; bind it
//                                 per tenant namespace with a RoleBinding
//   draplane:scheduler            what the scheduler needs; bound to user system:kube-scheduler
//   draplane:controller-manager   what the claim controller, the garbage collector, the
//                                 namespace, node lifecycle and eviction controllers need;
//                                 bound to user
//                                 system:kube-controller-manager
//   draplane:node-agent           informational: node agents are authorized by the node
//                                 authorizer (authz/node.h), which this role documents
//   draplane:admin                everything on the draplane resources, for operators who are
//                                 not cluster-admin
// Objects carry the label `kubernetes.io/bootstrapping: rbac-defaults` and the annotation
// `rbac.authorization.kubernetes.io/autoupdate: "true"`; the server recreates missing ones and
// rewrites ones that still carry the annotation when their content differs (upstream's
// auto-reconciliation); removing the annotation keeps an operator's edits.
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

namespace draplane::server::authz {

struct BootstrapObject {
  std::string store_resource;  // "rbac.authorization.k8s.io/clusterroles" ...
  boost::json::object object;  // without uid / creationTimestamp
};

std::vector<BootstrapObject> BootstrapPolicy();

// The identities of components embedded in (or run next to) the server.
inline constexpr std::string_view kSchedulerUser = "system:kube-scheduler";
inline constexpr std::string_view kControllerManagerUser = "system:kube-controller-manager";
// Reads the cluster for the PodExplanations `draplane serve` computes (read-only).
inline constexpr std::string_view kPodExplainerUser = "system:draplane:pod-explainer";

}  // namespace draplane::server::authz
