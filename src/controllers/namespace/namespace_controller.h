// Namespace deletion (upstream pkg/controller/namespace, reduced to the resources draplane
// serves): a Namespace with a deletionTimestamp has its content deleted — pods, resource
// claims, claim templates, events and leases — and, once nothing is left, its `kubernetes`
// finalizer removed through the `finalize` subresource, so the API server deletes it.
//
// Content with finalizers (allocated claims) goes away as the other controllers release it; the
// namespace is re-checked every `recheck_interval` until it is empty.
//
// Thread-safety: Start/Stop from the owner; syncs run on the worker threads.
#pragma once

#include <string>

#include "client/api_client.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct NamespaceControllerOptions {
  int workers = 1;
  Duration recheck_interval = std::chrono::seconds(2);
  client::RateLimiterOptions rate_limits{};
};

class NamespaceController {
 public:
  NamespaceController(client::ApiClient& api, client::SharedInformers& informers,
                      const Clock& clock, NamespaceControllerOptions options = {});
  ~NamespaceController();

  void Start();
  void Stop();
  // Deletes what is left in the namespace; finalizes it when empty. Unavailable ("content
  // remains") when it must be looked at again.
  Status Sync(const std::string& name);

 private:
  client::ApiClient& api_;
  const NamespaceControllerOptions options_;
  client::Informer<api::corev1::Namespace>& namespaces_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
};

}  // namespace draplane::controllers
