// The health checks behind /healthz, /livez and /readyz (kube-apiserver's healthz package):
// `ping`, `log`, the store backend (named after it: `etcd`, `sqlite`, `memory`; upstream's `etcd`
// check), `poststarthook/rbac/bootstrap-roles` (the bootstrap policy is in place) and, for
// /readyz only, `shutdown` (the server has not begun to shut down).
//
// The store check reads the result of a probe that runs on its own thread once per `interval`
// (a read of the current revision: for etcd a linearizable range through the cluster's quorum),
// so a probe that hangs on an unreachable backend never blocks a request; a probe older than
// `stale_after` counts as failed. /readyz therefore turns not-ready within about `interval` +
// the backend's connect failure after the store is lost, and ready again after it returns.
//
// Answers follow upstream: 200 `ok` (or the `[+]name ok` list with `?verbose`); on any failure
// 500 with the list, `[-]name failed: reason withheld` and `<endpoint> check failed`;
// `/readyz/<check>` answers that one check; `?exclude=<check>` (repeatable) leaves checks out.
//
// Thread-safety: all methods are safe for concurrent use.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/http/http.h"
#include "store/store.h"

namespace draplane::server::handlers {

struct HealthOptions {
  Duration interval = std::chrono::seconds(1);
  Duration stale_after = std::chrono::seconds(5);
};

class Health {
 public:
  // Starts the store probe.
  Health(store::Store* store, const Clock& clock, HealthOptions options = {});
  ~Health();  // stops the probe (waits for a probe in progress)

  // The bootstrap policy exists (`poststarthook/rbac/bootstrap-roles`).
  void set_bootstrapped(bool done) { bootstrapped_.store(done); }
  // Shutdown has begun (`shutdown`, /readyz only).
  void set_shutting_down(bool shutting_down) { shutting_down_.store(shutting_down); }

  // OK when the latest probe of the store succeeded and is recent; else why not.
  Status StoreStatus() const;

  // Answers GET `path` (/healthz, /livez, /readyz and their `/<check>` subpaths) with `query`
  // (the raw query string).
  http::Response Answer(std::string_view path, std::string_view query) const;

 private:
  void ProbeLoop();

  store::Store* store_;
  const Clock& clock_;
  const HealthOptions options_;
  const std::string store_check_;  // the backend's name
  std::atomic<bool> bootstrapped_{false};
  std::atomic<bool> shutting_down_{false};

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  Status last_probe_ DRAPLANE_GUARDED_BY(mu_);
  Duration last_success_ DRAPLANE_GUARDED_BY(mu_) = {};
  bool ever_succeeded_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::thread prober_;
};

}  // namespace draplane::server::handlers
