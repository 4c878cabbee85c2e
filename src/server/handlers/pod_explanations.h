// draplane.dev/v1alpha1 PodExplanation: GET /apis/draplane.dev/v1alpha1/namespaces/{ns}/
// podexplanations/{name}, the explanation tree of `draplane explain pod` for Pod ns/name, read
// only and computed on request (docs/design/dashboard.md, "Pod explanations"). A computed read like
// metrics.k8s.io's PodMetrics, not a `pods/{name}/explanation` subresource: core/v1 is upstream's
// and clients know its subresources; a draplane.dev resource is discovered, authorized by RBAC on
// its own resource name and printed by kubectl as any other.
//
// The computation is the scheduler's (scheduler/explain_pod.h), which the server may not depend
// on (docs/architecture.md): `draplane serve` hands it in (Server::ServePodExplanations, a
// PodExplainer). Until then the resource answers 503.
//
// Authorization: RBAC allows `get podexplanations` in the namespace (the request's own check),
// and the viewer must also be allowed to `get` the Pod itself (403 otherwise), so an explanation
// never tells more about a Pod than the Pod does. The explainer reads the cluster as its own
// identity; what it returns names no object of another namespace (scheduler/explain_pod.h).
//
// Cost: at most ServingLimits::max_pod_explanations_in_flight explanations run at once,
// server-wide; one more is refused with 429 and Retry-After (each reads the whole cluster and runs
// the allocator on every node). The CEL runtime cost limit bounds each selector evaluation as in
// the scheduler.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "server/authz/authorizer.h"
#include "server/handlers/rest.h"
#include "server/http/http.h"
#include "server/server.h"

namespace draplane::server::handlers {

class PodExplanations {
 public:
  explicit PodExplanations(int max_in_flight) : max_in_flight_(max_in_flight) {}

  void SetExplainer(PodExplainer explainer);
  // Answers a request for the podexplanations resource (authorized by RBAC already).
  http::Response Handle(const Scope& scope, const authz::Authorizer& authorizer);

 private:
  const int max_in_flight_;
  Mutex mu_;
  PodExplainer explainer_ DRAPLANE_GUARDED_BY(mu_);
  int in_flight_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

}  // namespace draplane::server::handlers
