// The request pipeline of the API server, in kube-apiserver's filter order:
//   1. hand the request from the I/O thread to a worker;
//   2. authenticate (401 for bad credentials);
//   3. read the RequestInfo and authorize it (403 with upstream's wording);
//   4. route: health and version endpoints, /metrics, discovery, OpenAPI, the review kinds
//      (SelfSubjectAccessReview & co.), and the resource verbs (handlers/rest.h).
// Every answer is counted in `apiserver_request_total` and timed in
// `apiserver_request_duration_seconds`.
//
// Thread-safety: Handle may be called concurrently from any number of I/O threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/clock.h"
#include "server/auth/authenticator.h"
#include "server/authz/authorizer.h"
#include "server/authz/rbac.h"
#include "server/handlers/registry.h"
#include "server/handlers/rest.h"
#include "server/http/http.h"
#include "server/internal/thread_pool.h"

namespace draplane::server::handlers {

struct ApiHandlerOptions {
  std::string draplane_version;
  std::string server_address;  // host:port, for /api's serverAddressByClientCIDRs
};

struct ApiHandlerDependencies {
  const Registry* registry = nullptr;
  auth::Authenticator* authenticator = nullptr;
  const authz::Authorizer* authorizer = nullptr;
  const authz::RbacAuthorizer* rbac = nullptr;  // for SelfSubjectRulesReview
  Rest* rest = nullptr;
  internal::ThreadPool* pool = nullptr;
  const Clock* clock = nullptr;
};

class ApiHandler {
 public:
  ApiHandler(ApiHandlerOptions options, ApiHandlerDependencies deps);

  // The http::Handler of the server: the request is served on the worker pool (I/O threads must
  // not block).
  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);
  // Serves the request on the calling thread, which may block (in-process callers: two thread
  // hand-offs fewer per request than Handle).
  void Serve(const http::Request& request, std::shared_ptr<http::Exchange> exchange);

  // /readyz answers 200 only once this is set (after bootstrap).
  void set_ready(bool ready) { ready_.store(ready); }

 private:
  http::Response NonResource(const http::Request& request, const RequestInfo& info);
  http::Response Review(const Scope& scope, const auth::UserInfo& user);

  ApiHandlerOptions options_;
  ApiHandlerDependencies deps_;
  std::atomic<bool> ready_{false};
};

}  // namespace draplane::server::handlers
