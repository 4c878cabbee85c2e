// What a request asks for, read from its method, path and query the way kube-apiserver's
// RequestInfoFactory.NewRequestInfo (staging/src/k8s.io/apiserver/pkg/endpoints/request/
// requestinfo.go) reads it. Authorization and routing both start from this.
//
// Resource requests:
//   /api/v1/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
//   /apis/{group}/{version}/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
//   /api/v1/{resource}[/{name}[/{subresource}]]          (cluster-scoped or all namespaces)
//   /api/v1/namespaces/{name}[/{subresource}]            (the namespaces resource itself)
//   /api/v1/watch/...                                     (legacy watch paths)
// Everything else is a non-resource request whose verb is the lower-cased HTTP method.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/auth/authenticator.h"
#include "server/authz/authorizer.h"

namespace draplane::server::handlers {

struct RequestInfo {
  bool is_resource_request = false;
  std::string path;
  // Resource requests: get, list, watch, create, update, patch, delete, deletecollection.
  // Non-resource requests: the lower-cased HTTP method (get, post, ...).
  std::string verb;
  std::string api_prefix;  // "api" or "apis"
  std::string api_group;   // "" for the core group
  std::string api_version;
  std::string namespace_;
  std::string resource;
  std::string subresource;
  std::string name;
  // The path segments after the group version (for error messages and routing checks).
  std::vector<std::string> parts;
};

// A boolean query parameter's value as upstream converts it (runtime.Convert_Slice_string_To_bool):
// "0" and "false" in any case are false, anything else (garbage included) is true.
bool QueryFlag(std::string_view value);

// Parses a request. `query` is the decoded query (watch=, fieldSelector=). For list and watch
// requests, a `fieldSelector` of `metadata.name=X` sets `name` to X, as upstream does, so that
// RBAC rules with resourceNames apply to single-object watches.
RequestInfo ParseRequestInfo(const std::string& method, const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& query);

// What the authorizer is asked for `user`'s request: the request's verb, resource and name, and
// for list, watch and deletecollection the field selector's equality requirements (the node
// authorizer's and RBAC's field-restricted rules read them).
authz::Attributes AttributesOf(const auth::UserInfo& user, const RequestInfo& info,
                               const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace draplane::server::handlers
