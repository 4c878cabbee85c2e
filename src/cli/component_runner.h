// Runs a long-lived client component (`draplane scheduler`, `draplane controller-manager`) until
// SIGINT or SIGTERM, either at once or only while holding a coordination.k8s.io Lease.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/api_client.h"
#include "common/status.h"
#include "server/http/http_server.h"

namespace draplane::cli {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts later) and
// ignores SIGPIPE; call first, before any client thread exists, and hand the set to
// RunComponent, which waits for those signals.
sigset_t BlockTerminationSignals();

struct ComponentRun {
  std::string command;  // "scheduler": prefixes messages ("draplane scheduler: ...")
  std::string identity;
  std::string server;  // printed in the running line
  bool leader_elect = false;
  std::string lease_name;
  std::string lease_namespace;
  std::function<Status()> start;
  std::function<void()> stop;
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

// --metrics-tenants of every component that exports per-tenant metrics (serve, scheduler,
// controller-manager): the namespaces labelled as their own tenant, checked as namespace names.
void AddMetricsTenantsOption(CLI::App& cmd, std::vector<std::string>& tenants);

// --metrics-bind-address of every long-lived client component (scheduler, controller-manager,
// agent): HOST:PORT on which it serves /metrics (the Prometheus text format, as `draplane serve`
// serves the API server's) and /healthz over plain HTTP (as kube-scheduler's --bind-address);
// empty, the default: not served.
void AddMetricsBindOption(CLI::App& cmd, std::string& address);

// The listener of --metrics-bind-address, or null when `address` is empty; InvalidArgument for
// a malformed address, Unavailable when it cannot be bound. Serves until destroyed.
StatusOr<std::unique_ptr<server::http::HttpServer>> StartMetricsEndpoint(
    const std::string& address);

}  // namespace draplane::cli
