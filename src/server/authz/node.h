// The node authorizer: what a node agent (user `system:node:<name>` in group `system:nodes`)
// may do, decided from its own name and the objects bound to it, as upstream's Node authorizer
// (plugin/pkg/auth/authorizer/node/node_authorizer.go) together with the NodeRestriction
// admission plugin (admission/node_restriction.h) decide it:
//
//   nodes                 read any; create/update/patch/delete (and /status) its own only
//   resourceslices        get any; list/watch/deletecollection only with the field selector
//                         `spec.nodeName=<self>`; create/update/patch/delete allowed here, and
//                         admission then checks that the slice's spec.nodeName is its own
//   pods                  list/watch only with `spec.nodeName=<self>` or
//                         `status.nominatedNodeName=<self>`; get, delete and update the status of
//                         pods bound to it (spec.nodeName == self)
//   resourceclaims        get, and update the status of, claims reserved for a pod bound or
//                         nominated to it (a nominated pod's binding waits for its devices to be
//                         attached on that node: KEP-5007 binding conditions)
//   deviceclasses         read
//   events                create/update/patch (core and events.k8s.io)
//   leases                its own heartbeat Lease in `kube-node-lease`
// Anything else gets no opinion (RBAC may still allow it); a node's write to another node's
// object is denied outright.
//
// Thread-safety: safe for concurrent use; reads the store for pods and claims.
#pragma once

#include <boost/json.hpp>

#include "server/authz/authorizer.h"
#include "store/store.h"

namespace draplane::server::authz {

inline constexpr std::string_view kNodeUserPrefix = "system:node:";
inline constexpr std::string_view kNodesGroup = "system:nodes";

// The node name of a node identity, or empty when `user` is not one.
std::string NodeNameOf(const auth::UserInfo& user);

class NodeAuthorizer final : public Authorizer {
 public:
  explicit NodeAuthorizer(store::Store* store) : store_(store) {}
  Result Authorize(const Attributes& attributes) const override;

 private:
  bool PodBoundTo(const std::string& ns, const std::string& name, const std::string& node,
                  bool or_nominated) const;
  bool ClaimUsedBy(const std::string& ns, const std::string& name, const std::string& node) const;
  // The stored object at `key` as JSON (the store's error, e.g. NotFound, when it cannot be read).
  StatusOr<boost::json::object> ReadStored(const store::Key& key) const;
  // Whether the stored ResourceSlice `name` is for `node` (its spec.nodeName), or does not exist.
  bool SliceOf(const std::string& name, const std::string& node) const;

  store::Store* store_;
};

}  // namespace draplane::server::authz
