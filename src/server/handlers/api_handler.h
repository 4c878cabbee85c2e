// The request pipeline of the API server, in kube-apiserver's filter order:
//   1. read the RequestInfo and authenticate (401 for bad credentials), on the I/O thread
//      (a token lookup; a lookup miss may re-read the token file);
//   2. API Priority and Fairness (flowcontrol/flowcontrol.h): wait for a seat of the request's
//      priority level, or 429 with Retry-After; then hand the request to a worker with its seat;
//   3. authorize (403 with upstream's wording);
//   4. route: health and version endpoints, /metrics, discovery, OpenAPI, the review kinds
//      (SelfSubjectAccessReview & co.), the computed PodExplanations (pod_explanations.h), and
//      the resource verbs (handlers/rest.h).
// Every answer is counted in `apiserver_request_total` and timed in
// `apiserver_request_duration_seconds`.
//
// Thread-safety: Handle may be called concurrently from any number of I/O threads.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "server/auth/authenticator.h"
#include "server/authz/authorizer.h"
#include "server/authz/rbac.h"
#include "server/flowcontrol/flowcontrol.h"
#include "server/handlers/health.h"
#include "server/handlers/pod_explanations.h"
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
  flowcontrol::Controller* flowcontrol = nullptr;
  const Health* health = nullptr;
  PodExplanations* pod_explanations = nullptr;
};

class ApiHandler {
 public:
  ApiHandler(ApiHandlerOptions options, ApiHandlerDependencies deps);

  // The http::Handler of the server: the request waits for its seat without a thread and is
  // served on the worker pool (I/O threads must not block).
  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);
  // Serves the request on the calling thread, which may block, also while it waits for its seat
  // (in-process callers: two thread hand-offs fewer per request than Handle).
  void Serve(const http::Request& request, std::shared_ptr<http::Exchange> exchange);

 private:
  struct Call;

  // Step 1: false when the request was answered already (malformed query, 401).
  bool Admit(Call& call, http::Exchange& exchange) const;
  flowcontrol::Classification Classify(const Call& call) const;
  // Steps 3 and 4, holding a seat.
  void Execute(Call& call, std::shared_ptr<http::Exchange> exchange);
  void Reject(Call& call, http::Exchange& exchange, flowcontrol::RejectReason reason) const;
  void Record(const Call& call, int code) const;

  http::Response NonResource(const http::Request& request, const RequestInfo& info);
  http::Response Review(const Scope& scope, const auth::UserInfo& user);

  ApiHandlerOptions options_;
  ApiHandlerDependencies deps_;
};

}  // namespace draplane::server::handlers
