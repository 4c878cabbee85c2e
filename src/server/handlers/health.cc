#include "server/handlers/health.h"

#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"
#include "server/http/healthz.h"

namespace draplane::server::handlers {

Health::Health(store::Store* store, const Clock& clock, HealthOptions options)
    : store_(store),
      clock_(clock),
      options_(options),
      store_check_(std::string(store->backend())),
      last_probe_(UnavailableError("not probed yet")) {
  prober_ = std::thread([this] {
    SetCurrentThreadName("store-health");
    ProbeLoop();
  });
}

Health::~Health() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  prober_.join();
}

void Health::ProbeLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    StatusOr<store::Revision> revision = store_->CurrentRevision();
    Duration now = clock_.MonotonicNow();
    lock.Lock();
    if (last_probe_.ok() && !revision.ok()) {
      log::Warning("health: the {} store does not answer: {}", store_check_,
                   revision.status().ToString());
    } else if (!last_probe_.ok() && revision.ok() && ever_succeeded_) {
      log::Info("health: the {} store answers again", store_check_);
    }
    last_probe_ = revision.status();
    if (revision.ok()) {
      last_success_ = now;
      ever_succeeded_ = true;
    }
    cv_.WaitFor(lock, options_.interval, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_; });
  }
}

Status Health::StoreStatus() const {
  MutexLock lock(mu_);
  if (!last_probe_.ok()) return last_probe_;
  if (!ever_succeeded_ || clock_.MonotonicNow() - last_success_ > options_.stale_after) {
    return UnavailableError("the store has not answered a probe recently");
  }
  return Status::Ok();
}

http::Response Health::Answer(std::string_view path, std::string_view query) const {
  std::vector<http::HealthCheck> checks = {
      {"ping", Status::Ok()}, {"log", Status::Ok()}, {store_check_, StoreStatus()}};
  checks.push_back({"poststarthook/rbac/bootstrap-roles",
                    bootstrapped_.load() ? Status::Ok() : UnavailableError("not finished")});
  if (path.starts_with("/readyz")) {
    checks.push_back({"shutdown", shutting_down_.load()
                                      ? UnavailableError("process is shutting down")
                                      : Status::Ok()});
  }
  return http::AnswerHealth(path, query, checks);
}

}  // namespace draplane::server::handlers
