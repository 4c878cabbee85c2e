#include "cli/component_runner.h"

#include <pthread.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "api/meta/duration.h"
#include "cli/commands.h"
#include "cli/object_ref.h"
#include "client/leader_election.h"
#include "client/rest_client.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "server/server.h"

namespace draplane::cli {

sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::vector<server::http::HealthCheck> ComponentHealth::Checks(std::string_view path) const {
  std::vector<server::http::HealthCheck> checks = {{"ping", Status::Ok()}, {"log", Status::Ok()}};
  if (leader_elect_.load()) {
    // client-go's maxTolerableExpiredLease as kube-scheduler sets it.
    const client::LeaderElector* elector = elector_.load();
    checks.push_back({"leaderElection", elector != nullptr
                                            ? elector->Check(std::chrono::seconds(20))
                                            : Status::Ok()});
  }
  if (path.starts_with("/readyz")) {
    const bool waiting = running_.load() && !synced_.load();
    checks.push_back({sync_check_, waiting ? UnavailableError("waiting for the informers' first "
                                                              "lists")
                                           : Status::Ok()});
    checks.push_back({"shutdown", shutting_down_.load()
                                      ? UnavailableError("process is shutting down")
                                      : Status::Ok()});
  }
  return checks;
}

StatusOr<std::unique_ptr<client::ApiClient>> CreateLeaseClient(const client::RestConfig& config) {
  return client::CreateRestClient(
      config,
      client::RestClientOptions{.request_timeout = client::LeaderElectionConfig{}.renew_deadline});
}

int RunComponent(client::ApiClient& api, const sigset_t& signals, const ComponentRun& run) {
  auto fail = [&](const std::string& what, const Status& s) {
    return ReportFailure(run.command, what, s);
  };
  Mutex mu;
  CondVar cv;
  bool stop = false;
  bool lost = false;
  std::thread waiter([&] {
    int received = 0;
    sigwait(&signals, &received);
    MutexLock lock(mu);
    stop = true;
    cv.NotifyAll();
  });
  // The waiter sits in sigwait; a SIGTERM aimed at it (blocked, so delivered to sigwait) ends it.
  auto end_waiter = [&] {
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
  };

  std::unique_ptr<client::LeaderElector> elector;
  std::thread election;
  if (run.leader_elect) {
    client::LeaderElectionConfig le;
    le.lease_name = run.lease_name;
    le.lease_namespace = run.lease_namespace;
    le.identity = run.identity;
    le.on_started_leading = [&] {
      if (run.health != nullptr) run.health->set_running(true);
      Status s = run.start();
      if (!s.ok()) log::Error("{}: {}", run.command, s.ToString());
      if (s.ok() && run.health != nullptr) run.health->set_synced(true);
    };
    le.on_stopped_leading = [&] {
      MutexLock lock(mu);
      lost = true;
      cv.NotifyAll();
    };
    StatusOr<std::unique_ptr<client::LeaderElector>> created =
        client::LeaderElector::Create(api, RealClock(), le);
    if (!created.ok()) {
      end_waiter();
      return fail("leader election", created.status());
    }
    elector = std::move(*created);
    if (run.health != nullptr) {
      run.health->set_leader_elect(true);
      run.health->set_elector(elector.get());
    }
    election = std::thread([&] { elector->Run(); });
  } else {
    if (run.health != nullptr) run.health->set_running(true);
    Status s = run.start();
    if (!s.ok()) {
      end_waiter();
      return fail("start", s);
    }
    if (run.health != nullptr) run.health->set_synced(true);
  }
  std::printf("%s %s running against %s\n", run.command.c_str(), run.identity.c_str(),
              run.server.c_str());
  std::fflush(stdout);
  {
    MutexLock lock(mu);
    cv.Wait(lock, [&]() DRAPLANE_REQUIRES(mu) { return stop || lost; });
  }
  if (run.health != nullptr) run.health->set_shutting_down(true);
  run.stop();
  if (elector) {
    elector->Stop();
    election.join();
    if (run.health != nullptr) run.health->set_elector(nullptr);
  }
  if (stop) {
    waiter.join();
    return 0;
  }
  end_waiter();
  std::fprintf(stderr, "draplane %s: lost the leader lease, exiting\n", run.command.c_str());
  return 1;
}

void AddLeaderElectionOptions(CLI::App& cmd, const std::string& purpose, bool& leader_elect,
                              std::string& lease_name, std::string& lease_namespace,
                              std::string& identity) {
  cmd.add_option("--leader-elect", leader_elect,
                 "Hold a coordination.k8s.io Lease so that " + purpose)
      ->capture_default_str();
  cmd.add_option("--leader-elect-lease-name", lease_name)
      ->capture_default_str()
      ->check(ObjectNameCheck("--leader-elect-lease-name"));
  cmd.add_option("--leader-elect-namespace", lease_namespace)
      ->capture_default_str()
      ->check(NamespaceNameCheck("--leader-elect-namespace"));
  cmd.add_option("--identity", identity, "Replica identity (default: generated)");
}

StatusOr<Duration> ParseDurationFlag(std::string_view flag, const std::string& text,
                                     bool zero_allowed) {
  StatusOr<Duration> parsed = api::ParseDuration(text);
  if (!parsed.ok()) return parsed.status().WithPrefix(std::string(flag));
  if (*parsed < Duration(0) || (*parsed == Duration(0) && !zero_allowed)) {
    return InvalidArgumentError(
        std::string(flag) +
        (zero_allowed ? ": must not be negative (0 switches it off)" : ": must be positive"));
  }
  return parsed;
}

void AddMetricsTenantsOption(CLI::App& cmd, std::vector<std::string>& tenants) {
  cmd.add_option("--metrics-tenants", tenants,
                 "Namespaces that label metrics as their own tenant (the rest count as "
                 "\"other\", which bounds the series count)")
      ->delimiter(',')
      ->check(NamespaceNameCheck("--metrics-tenants"));
}

void AddMetricsBindOption(CLI::App& cmd, std::string& address) {
  cmd.add_option("--metrics-bind-address", address,
                 "Serve /metrics and /healthz over plain HTTP on HOST:PORT (e.g. "
                 "127.0.0.1:10259; port 0 picks one); empty: not served");
}

StatusOr<std::unique_ptr<server::http::HttpServer>> StartMetricsEndpoint(
    const std::string& address, const ComponentHealth& health) {
  if (address.empty()) return std::unique_ptr<server::http::HttpServer>();
  server::http::HttpServerOptions options;
  DRAPLANE_RETURN_IF_ERROR(server::ParseListenAddress(address, &options.host, &options.port));
  options.io_threads = 1;
  options.max_connections = 64;
  // Malformed requests, oversized headers and the like: a plain-text answer.
  options.protocol_error = [](int status, std::string message) {
    server::http::Response response;
    response.status = status;
    response.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
    response.body = std::move(message) + "\n";
    return response;
  };
  auto handler = [&health](server::http::Request request,
                           std::shared_ptr<server::http::Exchange> exchange) {
    server::http::Response response;
    if (request.method != "GET" && request.method != "HEAD") {
      response.status = 405;
      response.body = "method not allowed\n";
    } else if (request.path == "/metrics") {
      response.headers.push_back({"Content-Type", std::string(metrics::kTextContentType)});
      response.body = metrics::RenderText();
    } else if (request.path == "/healthz" || request.path == "/livez" ||
               request.path == "/readyz" || request.path.starts_with("/healthz/") ||
               request.path.starts_with("/livez/") || request.path.starts_with("/readyz/")) {
      response =
          server::http::AnswerHealth(request.path, request.query, health.Checks(request.path));
    } else {
      response.status = 404;
      response.body = "404 page not found\n";
    }
    exchange->Respond(std::move(response));
  };
  const std::string host = options.host;
  StatusOr<std::unique_ptr<server::http::HttpServer>> started =
      server::http::HttpServer::Start(std::move(options), std::move(handler));
  if (started.ok()) {
    log::Info("metrics: serving /metrics and /healthz on http://{}:{}", host, (*started)->port());
  }
  return started;
}

}  // namespace draplane::cli
