// The ResourceQuota status controller, running inside the API server over the store (upstream
// runs pkg/controller/resourcequota in kube-controller-manager): keeps `status.hard` equal to
// `spec.hard` and `status.used` equal to what the objects of the namespace use, for the keys the
// server owns (accounting.h; an Allocation-mode quota's device keys are the scheduler's and are
// left as they are).
//
// When it syncs a namespace:
//   - at start: every namespace with a quota (a full resync);
//   - on changes: a quota created or its spec / annotations changed; an object of the namespace
//     deleted (replenishment: admission only ever adds); a Pod whose usage changed (it turned
//     terminal, or started terminating) — of the resources a quota of the namespace counts with
//     a key the server owns;
//   - periodically: every namespace with a quota, every `resync_period` of the injected clock
//     (upstream's --resource-quota-sync-period, 5 minutes).
//
// Drift: a full resync that has to correct a value that was already synced (what the quota said
// differs from what the objects use, although every change should have been accounted) counts
// `draplane_quota_drift_total{namespace,quota}` and records a Warning Event
// `QuotaUsageCorrected` on the quota naming the keys and both values. Every sync sets the gauges
// `draplane_quota_used` and `draplane_quota_hard` {namespace,quota,resource}; the used gauges
// also follow every charge written to a quota's status.used (admission's, the scheduler's
// Allocation-mode charges), which no sync follows.
//
// Thread-safety: Start/Stop/Tick may be called from any thread; the work runs on one
// thread of its own.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "server/handlers/registry.h"
#include "server/handlers/rest.h"
#include "server/internal/watch_worker.h"
#include "server/quota/accounting.h"
#include "store/store.h"

namespace draplane::server::quota {

struct QuotaControllerOptions {
  // How often every namespace with a quota is recomputed in full (drift detection).
  Duration resync_period = std::chrono::minutes(5);
};

class QuotaController {
 public:
  // `rest` writes the Events (as the server itself).
  QuotaController(QuotaAccounting* accounting, handlers::Rest* rest,
                  const handlers::Registry* registry, QuotaControllerOptions options = {});
  ~QuotaController();

  // Syncs every namespace with a quota, then starts the watches and the worker thread.
  Status Start();
  // Stops the worker. Idempotent.
  void Stop();
  // Wakes the worker to look at the clock (the periodic resync); called about once a second.
  void Tick();

 private:
  void Run();
  // Recomputes the quotas of `ns` and writes what changed; with `detect_drift`, corrections of
  // synced values are reported as drift. Returns the number of drift corrections.
  StatusOr<int> SyncNamespace(const std::string& ns, bool detect_drift);
  // Marks the namespace of a changed object for a sync when the change can change usage.
  void Observe(const handlers::ResourceInfo& r, const store::WatchEvent& event);
  // Whether a quota of `ns` counts objects of `r` with a key the server owns, as its last sync
  // read the quotas (true before its first sync).
  bool CountedByServer(const std::string& ns, const handlers::ResourceInfo& r) const;
  // Sets the used gauges of every key of a quota's write that changed no usage (a charge).
  void ObserveUsage(const store::WatchEvent& event);
  void RecordDrift(const StoredQuota& quota, const std::string& detail);
  // (quota, resource) pairs with a draplane_quota_used / draplane_quota_hard series.
  using QuotaSeries = std::set<std::pair<std::string, std::string>>;
  // Drops the series of `ns` that its last sync no longer set (a deleted quota, a removed key).
  void ForgetSeries(const std::string& ns, QuotaSeries used, QuotaSeries hard);
  StatusOr<std::set<std::string>> NamespacesWithQuotas();

  QuotaAccounting* accounting_;
  handlers::Rest* rest_;
  const handlers::Registry* registry_;
  QuotaControllerOptions options_;
  std::vector<const handlers::ResourceInfo*> resources_;  // watched: namespaced, not ignored

  internal::WatchWorker worker_;

  // Owned by the worker thread (and by Start before it runs).
  internal::ResourceWatches watches_;
  std::set<std::string> quota_namespaces_;
  // Per synced namespace: the hard keys of its quotas that the server owns. A change of a
  // resource none of them counts is not looked at (an Allocation-mode quota of device keys
  // alone counts nothing here: parsing every Pod update of its namespace was most of the
  // controller's work under scheduling load). A quota change syncs the namespace, which
  // refreshes its keys.
  std::map<std::string, std::vector<std::string>> server_keys_;
  std::set<std::string> dirty_;
  Timestamp next_resync_{};
  uint64_t event_sequence_ = 0;  // makes Event names unique within the process
  // Per namespace: the gauge series its last sync set (used, hard).
  std::map<std::string, std::pair<QuotaSeries, QuotaSeries>> series_;
};

}  // namespace draplane::server::quota
