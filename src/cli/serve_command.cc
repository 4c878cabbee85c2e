// `draplane serve`: runs the Kubernetes-compatible API server (server/server.h) until SIGINT or
// SIGTERM, then shuts down gracefully. Prints `ready: <url> kubeconfig=<path>` on stdout once it
// accepts requests. Unless turned off, the claim controllers and the scheduler run in the process
// as embedded API clients (controller_manager_command.cc, scheduler_command.cc), by default over
// the in-process transport (in_process_transport.h), with --embedded-transport=loopback over the
// HTTPS listener. They share one set of informers (EmbedSharedInformers).
#include <signal.h>

#include <cstdio>
#include <memory>
#include <tuple>

#include "agent/profile.h"
#include "cli/commands.h"
#include "cli/component_runner.h"
#include "cli/in_process_transport.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/server.h"

namespace draplane::cli {
namespace {

// Owns the informers of EmbeddedInformers. It reads as system:kube-controller-manager, whose
// role may read every resource the embedded components watch; each component still writes as
// itself. Started first and stopped last, so its informers never call into a stopped component.
class SharedInformersComponent final : public server::EmbeddedComponent {
 public:
  explicit SharedInformersComponent(std::shared_ptr<EmbeddedInformers> shared)
      : shared_(std::move(shared)) {}

  std::string name() const override { return "shared-informers"; }

  Status Start(const server::ClientCredentials& credentials) override {
    DRAPLANE_ASSIGN_OR_RETURN(shared_->api,
                              NewEmbeddedClient(credentials, "draplane-shared-informers"));
    shared_->informers = std::make_unique<client::SharedInformers>(*shared_->api);
    return Status::Ok();
  }

  void Stop() override {
    if (shared_->informers) shared_->informers->Stop();
  }

 private:
  std::shared_ptr<EmbeddedInformers> shared_;
};

struct ServeFlags {
  server::ServerOptions options;
  std::vector<std::string> tls_sans;
  bool no_anonymous = false;
  std::string simulate_nodes;  // a cluster profile (simulate_nodes.cc)
  bool no_scheduler = false;
  bool no_controller_manager = false;
  bool simulate_kubelet = false;
  std::string embedded_transport = "in-process";  // or "loopback"
  std::string decision_max_age = "168h";
  std::string quota_resync_period = "5m";
};

int RunServe(ServeFlags& flags) {
  // Block the shutdown signals before any thread starts, so that only sigwait() sees them.
  sigset_t signals = BlockTerminationSignals();

  flags.options.tls_sans = flags.tls_sans;
  flags.options.anonymous_auth = !flags.no_anonymous;
  flags.options.draplane_version = DRAPLANE_VERSION;
  flags.options.embedded_in_process = flags.embedded_transport == "in-process";
  for (auto [flag, text, target] :
       {std::tuple{"--decision-max-age", &flags.decision_max_age, &flags.options.decision_max_age},
        std::tuple{"--quota-resync-period", &flags.quota_resync_period,
                   &flags.options.quota_resync_period}}) {
    StatusOr<Duration> duration = agent::ParseDuration(*text);
    if (!duration.ok() || *duration <= Duration(0)) {
      std::fprintf(stderr, "draplane serve: %s: %s\n", flag,
                   duration.ok() ? "must be positive" : duration.status().ToString().c_str());
      return 2;
    }
    *target = *duration;
  }
  StatusOr<std::unique_ptr<server::Server>> server = server::Server::Start(flags.options);
  if (!server.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", server.status().ToString().c_str());
    return 2;
  }
  // The claim controllers and the scheduler run in the process unless turned off.
  auto shared = std::make_shared<EmbeddedInformers>();
  Status components = EmbedSharedInformers(**server, shared);
  if (components.ok() && !flags.no_controller_manager) {
    components = EmbedControllerManager(**server, flags.simulate_kubelet, shared);
  }
  if (components.ok() && !flags.no_scheduler) components = EmbedScheduler(**server, shared);
  if (!components.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", components.ToString().c_str());
    (*server)->Shutdown();
    return 2;
  }
  if (!flags.simulate_nodes.empty()) {
    Status embedded = EmbedSimulatedNodes(**server, flags.simulate_nodes, flags.options.data_dir);
    if (!embedded.ok()) {
      std::fprintf(stderr, "draplane serve: --simulate-nodes: %s\n", embedded.ToString().c_str());
      (*server)->Shutdown();
      return 2;
    }
  }
  std::printf("ready: %s kubeconfig=%s\n", (*server)->url().c_str(),
              (*server)->admin_kubeconfig_path().c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  log::Info("serve: received signal {}, shutting down", received);
  (*server)->Shutdown();
  return 0;
}

}  // namespace

Status EmbedSharedInformers(server::Server& server, std::shared_ptr<EmbeddedInformers> shared) {
  return server.Embed(std::make_unique<SharedInformersComponent>(std::move(shared)),
                      "system:kube-controller-manager", {});
}

void AddServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the Kubernetes-compatible API server (kubectl works against it)");
  cmd->add_option("--listen", flags->options.listen,
                  "HOST:PORT to serve on (HTTPS unless --plain-http)")
      ->capture_default_str();
  cmd->add_option("--data-dir", flags->options.data_dir,
                  "Directory for the CA, certificates, tokens, admin.kubeconfig and the "
                  "default SQLite store")
      ->capture_default_str();
  cmd->add_option("--store", flags->options.store_url,
                  "memory://, sqlite:///path/to/db or etcd://host:port[,...] "
                  "(default: sqlite://<data-dir>/store.db)");
  cmd->add_flag("--plain-http", flags->options.plain_http,
                "Serve plain HTTP (only allowed on a loopback address)");
  cmd->add_option("--tls-san", flags->tls_sans,
                  "Extra DNS name or IP for the serving certificate (repeatable)");
  cmd->add_flag("--no-anonymous-auth", flags->no_anonymous,
                "Answer unauthenticated requests with 401 instead of treating them as "
                "system:anonymous");
  cmd->add_option("--io-threads", flags->options.io_threads, "Network I/O threads")
      ->capture_default_str();
  cmd->add_option("--workers", flags->options.worker_threads, "Request worker threads")
      ->capture_default_str();
  cmd->add_option("--simulate-nodes", flags->simulate_nodes,
                  "Run one node agent per node of this cluster profile in the server process "
                  "(e.g. examples/cluster-demo.yaml)");
  cmd->add_flag("--no-scheduler", flags->no_scheduler,
                "Do not run the embedded scheduler (run `draplane scheduler` instead)");
  cmd->add_flag("--no-controller-manager", flags->no_controller_manager,
                "Do not run the embedded claim controllers (run `draplane controller-manager` "
                "instead)");
  cmd->add_flag("--simulate-kubelet", flags->simulate_kubelet,
                "The embedded controllers play the kubelet: bound Pods run, deleted Pods "
                "terminate");
  cmd->add_option("--embedded-transport", flags->embedded_transport,
                  "How the embedded scheduler, controllers and simulated nodes reach the server: "
                  "in-process (straight into the request handlers, no TLS, HTTP or sockets) or "
                  "loopback (over the HTTP(S) listener, like any remote client)")
      ->check(CLI::IsMember({"in-process", "loopback"}))
      ->capture_default_str();
  cmd->add_option("--decision-max-age", flags->decision_max_age,
                  "AllocationDecision records older than this are deleted (Go duration)")
      ->capture_default_str();
  cmd->add_option("--decision-max-per-namespace", flags->options.decision_max_per_namespace,
                  "At most this many AllocationDecision records are kept per namespace (the "
                  "oldest go first)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--quota-resync-period", flags->quota_resync_period,
                  "How often every ResourceQuota's usage is recomputed in full (Go duration)")
      ->capture_default_str();
  cmd->callback([flags] {
    int code = RunServe(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
