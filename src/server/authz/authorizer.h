// Authorization: may this user do this verb on this resource (or path)?
//
// Mirrors k8s.io/apiserver/pkg/authorization/authorizer: an Authorizer answers Allow, Deny or
// NoOpinion for request Attributes; a union tries authorizers in order and the first Allow or
// Deny decides (kube-apiserver's `--authorization-mode=Node,RBAC`). No opinion from anyone is a
// denial.
//
// Thread-safety: implementations are safe for concurrent use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/auth/authenticator.h"

namespace draplane::server::authz {

struct Attributes {
  auth::UserInfo user;
  std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection; or the
                     // lower-case HTTP method for non-resource requests
  bool resource_request = false;
  std::string path;  // non-resource requests
  std::string api_group;
  std::string api_version;
  std::string resource;
  std::string subresource;
  std::string namespace_;
  std::string name;
  // Exact-match field selector requirements of list/watch/deletecollection requests
  // (`spec.nodeName=n1`), for the node authorizer's selector rules.
  std::vector<std::pair<std::string, std::string>> field_requirements;
};

enum class Decision { kNoOpinion, kAllow, kDeny };

struct Result {
  Decision decision = Decision::kNoOpinion;
  std::string reason;
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  virtual Result Authorize(const Attributes& attributes) const = 0;
};

// Tries `authorizers` in order; the first Allow or Deny wins; NoOpinion when all abstain.
class UnionAuthorizer final : public Authorizer {
 public:
  explicit UnionAuthorizer(std::vector<const Authorizer*> authorizers)
      : authorizers_(std::move(authorizers)) {}
  Result Authorize(const Attributes& attributes) const override;

 private:
  std::vector<const Authorizer*> authorizers_;
};

// The reason text of a forbidden request, as responsewriters.forbiddenMessage words it:
// `User "alice" cannot list resource "pods" in API group "" in the namespace "b"`.
std::string ForbiddenMessage(const Attributes& attributes);

}  // namespace draplane::server::authz
