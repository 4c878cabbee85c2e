// User impersonation (kube-apiserver's WithImpersonation filter): a request carrying
// Impersonate-User (and optionally Impersonate-Group, repeatable; Impersonate-Uid;
// Impersonate-Extra-<key>) runs as that user when the authenticated user may `impersonate` each
// of them, which is how `kubectl --as alice --as-group tenants` tests RBAC.
//
// Each impersonated value is authorized for the requesting user with verb `impersonate`:
//   Impersonate-User: users/<name> (group ""), or serviceaccounts/<name> in <namespace> for
//     system:serviceaccount:<namespace>:<name> (whose groups, when none are asked for, are
//     system:serviceaccounts and system:serviceaccounts:<namespace>);
//   Impersonate-Group: groups/<name>; Impersonate-Uid: uids/<uid> and Impersonate-Extra-<key>:
//     userextras/<key> named by each value (group authentication.k8s.io).
// The impersonated user is in system:authenticated unless it is system:anonymous (then
// system:unauthenticated) or the groups name either. Extra values are authorized and not kept
// (nothing in draplane reads them).
//
// Thread-safety: pure function over the authorizer (which is thread-safe).
#pragma once

#include <optional>
#include <variant>

#include "server/auth/authenticator.h"
#include "server/authz/authorizer.h"
#include "server/handlers/errors.h"
#include "server/http/http.h"

namespace draplane::server::handlers {

// The user the request acts as: std::nullopt without impersonation headers, the impersonated
// user when every value is allowed, else 400 (a group, uid or extra without a user) or 403 (not
// allowed to impersonate a value, named as upstream names it).
std::variant<std::optional<auth::UserInfo>, ApiError> Impersonate(const auth::UserInfo& requester,
                                                                  const http::Request& request,
                                                                  const authz::Authorizer& authz);

}  // namespace draplane::server::handlers
