#include "server/handlers/health.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace draplane::server::handlers {
namespace {

http::Response Text(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.body = std::move(body);
  return r;
}

}  // namespace

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
  std::string_view endpoint = path.substr(1);
  std::string_view only;
  if (size_t slash = endpoint.find('/'); slash != std::string_view::npos) {
    only = endpoint.substr(slash + 1);
    endpoint = endpoint.substr(0, slash);
  }
  struct Check {
    std::string name;
    Status status;
  };
  std::vector<Check> checks = {
      {"ping", Status::Ok()}, {"log", Status::Ok()}, {store_check_, StoreStatus()}};
  checks.push_back({"poststarthook/rbac/bootstrap-roles",
                    bootstrapped_.load() ? Status::Ok() : UnavailableError("not finished")});
  if (endpoint == "readyz") {
    checks.push_back({"shutdown", shutting_down_.load()
                                      ? UnavailableError("process is shutting down")
                                      : Status::Ok()});
  }
  if (!only.empty()) {
    for (const Check& check : checks) {
      if (check.name != only) continue;
      if (check.status.ok()) return Text(200, "ok");
      return Text(500, "internal server error: " + std::string(check.status.message()));
    }
    return Text(404, "404 page not found");
  }
  std::optional<std::vector<std::pair<std::string, std::string>>> params = http::ParseQuery(query);
  bool verbose = false;
  std::vector<std::string> excluded;
  for (const auto& [name, value] : params.value_or(decltype(params)::value_type{})) {
    if (name == "verbose") verbose = true;
    if (name == "exclude") excluded.push_back(value);
  }
  std::string list;
  bool failed = false;
  for (const Check& check : checks) {
    if (std::find(excluded.begin(), excluded.end(), check.name) != excluded.end()) {
      list += "[+]" + check.name + " excluded: ok\n";
      continue;
    }
    if (check.status.ok()) {
      list += "[+]" + check.name + " ok\n";
    } else {
      failed = true;
      list += "[-]" + check.name + " failed: reason withheld\n";
    }
  }
  if (failed) return Text(500, list + std::string(endpoint) + " check failed\n");
  if (!verbose) return Text(200, "ok");
  return Text(200, list + std::string(endpoint) + " check passed\n");
}

}  // namespace draplane::server::handlers
