// Runs a long-lived client component (`draplane scheduler`, `draplane controller-manager`) until
// SIGINT or SIGTERM, either at once or only while holding a coordination.k8s.io Lease.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/api_client.h"
#include "client/kubeconfig.h"
#include "client/leader_election.h"
#include "common/status.h"
#include "server/http/healthz.h"
#include "server/http/http_server.h"

namespace draplane::cli {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts later) and
// ignores SIGPIPE; call first, before any client thread exists, and hand the set to
// RunComponent, which waits for those signals.
sigset_t BlockTerminationSignals();

// The health checks a component's --metrics-bind-address serves (/healthz, /livez, /readyz, as
// kube-scheduler's): `ping` and `log`; `leaderElection` under leader election (failing while this
// replica leads but has not renewed its lease for leaseDuration + 20 s, client-go's
// HealthzAdaptor); /readyz adds the component's sync check (kube-scheduler's
// `sched-handler-sync`: failing from the start until the component's informers have synced;
// a standby, which runs nothing, passes) and `shutdown` (failing once a signal asked it to stop).
//
// Thread-safety: the setters and Checks are safe from any thread.
class ComponentHealth {
 public:
  explicit ComponentHealth(std::string sync_check) : sync_check_(std::move(sync_check)) {}

  // The elector whose lease the `leaderElection` check watches; it must outlive its use here
  // (cleared before it is destroyed).
  void set_elector(const client::LeaderElector* elector) { elector_.store(elector); }
  void set_leader_elect(bool leader_elect) { leader_elect_.store(leader_elect); }
  void set_running(bool running) { running_.store(running); }
  void set_synced(bool synced) { synced_.store(synced); }
  void set_shutting_down(bool shutting_down) { shutting_down_.store(shutting_down); }

  // The checks of `path`'s endpoint (/healthz, /livez, /readyz or one of their `/<check>`).
  std::vector<server::http::HealthCheck> Checks(std::string_view path) const;

 private:
  const std::string sync_check_;
  std::atomic<const client::LeaderElector*> elector_{nullptr};
  std::atomic<bool> leader_elect_{false};
  std::atomic<bool> running_{false};  // started (or starting) its work: not a standby
  std::atomic<bool> synced_{false};
  std::atomic<bool> shutting_down_{false};
};

struct ComponentRun {
  std::string command;  // "scheduler": prefixes messages ("draplane scheduler: ...")
  std::string identity;
  std::string server;  // printed in the running line
  bool leader_elect = false;
  std::string lease_name;
  std::string lease_namespace;
  std::function<Status()> start;
  std::function<void()> stop;
  ComponentHealth* health = nullptr;  // told about the election, the start and the shutdown
};

// Starts the component (under leader election: when the lease is won) and waits for a signal in
// `signals` or, under leader election, the loss of the lease. Returns the process exit code: 0
// after a signal, 1 when the lease was lost, 2 when the component or the election could not
// start.
int RunComponent(client::ApiClient& api, const sigset_t& signals, const ComponentRun& run);

// The leader-election flags of a component (--leader-elect "so that <purpose>",
// --leader-elect-lease-name, --leader-elect-namespace, checked as object names, --identity).
void AddLeaderElectionOptions(CLI::App& cmd, const std::string& purpose, bool& leader_elect,
                              std::string& lease_name, std::string& lease_namespace,
                              std::string& identity);

// A Go-duration flag's value; InvalidArgument naming the flag when it does not parse, is
// negative, or is zero where `zero_allowed` is false (zero then switches the mechanism off).
StatusOr<Duration> ParseDurationFlag(std::string_view flag, const std::string& text,
                                     bool zero_allowed);

// --metrics-tenants of every component that exports per-tenant metrics (serve, scheduler,
// controller-manager): the namespaces labelled as their own tenant, checked as namespace names.
void AddMetricsTenantsOption(CLI::App& cmd, std::vector<std::string>& tenants);

// --metrics-bind-address of every long-lived client component (scheduler, controller-manager,
// agent): HOST:PORT on which it serves /metrics (the Prometheus text format, as `draplane serve`
// serves the API server's) and /healthz over plain HTTP (as kube-scheduler's --bind-address);
// empty, the default: not served.
void AddMetricsBindOption(CLI::App& cmd, std::string& address);

// The listener of --metrics-bind-address, or null when `address` is empty; InvalidArgument for
// a malformed address, Unavailable when it cannot be bound. Serves /metrics and `health`'s checks
// (which must outlive the listener) until destroyed.
StatusOr<std::unique_ptr<server::http::HttpServer>> StartMetricsEndpoint(
    const std::string& address, const ComponentHealth& health);

// A client for the leader election's Lease requests: `config`'s, with every request bounded by
// the renew deadline, as kube-scheduler's leader election client (a renewal stuck on an API that
// does not answer must fail in time for the replica to stop leading).
StatusOr<std::unique_ptr<client::ApiClient>> CreateLeaseClient(const client::RestConfig& config);

}  // namespace draplane::cli
