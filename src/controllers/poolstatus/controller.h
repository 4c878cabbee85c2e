// The ResourcePoolStatusRequest controller (KEP-5677; upstream
// pkg/controller/resourcepoolstatusrequest): answers each request once.
//
//   - A request without status is computed from the informers' slices, claims and
//     DeviceTaintRules (pool_status.h) and written through the status subresource with the
//     condition Complete=True (reason CalculationComplete); a request with status is never
//     touched again (checked when queued and again in the sync). Fresh numbers: delete and
//     re-create it.
//   - While a matched pool has fewer slices than it declares, nothing is written: the request is
//     retried (rate-limited) up to `max_retries` times, then left pending (upstream).
//   - Every `cleanup_period` (10 min) requests completed more than `completed_ttl` (1 h) ago, or
//     pending for more than `pending_ttl` (24 h), are deleted with a uid precondition.
//
// Thread-safety: Start/Stop from the owner; syncs run on one worker thread.
#pragma once

#include <string>

#include "client/api_client.h"
#include "client/resource_v1alpha3.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct PoolStatusControllerOptions {
  int max_retries = 5;
  Duration cleanup_period = std::chrono::minutes(10);
  Duration completed_ttl = std::chrono::hours(1);
  Duration pending_ttl = std::chrono::hours(24);
  std::string field_manager = "resourcepoolstatusrequest-controller";
  client::RateLimiterOptions rate_limits{};
};

class PoolStatusController {
 public:
  // Registers its informers and handlers with `informers` (before informers.Start()).
  PoolStatusController(client::ApiClient& api, client::SharedInformers& informers,
                       const Clock& clock, PoolStatusControllerOptions options = {});
  ~PoolStatusController();

  void Start();
  void Stop();

  // One sync of a queue key (a request name, or the cleanup key) on the calling thread (tests).
  Status Sync(const std::string& key);

 private:
  Status SyncRequest(const std::string& name);
  Status Cleanup();

  client::ApiClient& api_;
  const Clock& clock_;
  const PoolStatusControllerOptions options_;
  client::Informer<api::resourcev1alpha3::ResourcePoolStatusRequest>& requests_;
  client::Informer<api::resourcev1::ResourceSlice>& slices_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::resourcev1::DeviceTaintRule>& rules_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
};

}  // namespace draplane::controllers
