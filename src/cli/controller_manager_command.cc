// `draplane controller-manager`: runs the controllers (controllers/controller_manager.h) against
// an API server until SIGINT or SIGTERM, optionally under leader election.
#include <memory>

#include "cli/commands.h"
#include "cli/component_runner.h"
#include "cli/in_process_transport.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "controllers/controller_manager.h"
#include "server/server.h"

namespace draplane::cli {
namespace {

struct ControllerManagerFlags {
  std::string kubeconfig;
  std::string context;
  std::vector<std::string> controllers = {"resourceclaim", "garbagecollector", "namespace"};
  bool simulate_kubelet = false;
  bool leader_elect = true;
  std::string lease_name = "draplane-controller-manager";
  std::string lease_namespace = "kube-system";
  std::string identity;
  std::vector<std::string> metrics_tenants;
  std::string metrics_bind_address;
};

int RunControllerManager(const ControllerManagerFlags& flags) {
  sigset_t signals = BlockTerminationSignals();

  controllers::ControllerManagerOptions options;
  options.resource_claims = options.garbage_collector = options.namespaces = false;
  for (const std::string& c : flags.controllers) {
    if (c == "resourceclaim") {
      options.resource_claims = true;
    } else if (c == "garbagecollector") {
      options.garbage_collector = true;
    } else if (c == "namespace") {
      options.namespaces = true;
    } else if (c == "resourcepoolstatusrequest") {
      options.resource_pool_status = true;
    } else {
      return ReportFailure("controller-manager", "--controllers",
                           InvalidArgumentError("unknown controller \"" + c +
                                                "\" (resourceclaim, garbagecollector, "
                                                "namespace, resourcepoolstatusrequest)"));
    }
  }
  options.simulate_kubelet = flags.simulate_kubelet;
  options.claim_stages.tenants = flags.metrics_tenants;

  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return ReportFailure("controller-manager", "kubeconfig", config.status());
  config->user_agent = "draplane-controller-manager";
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return ReportFailure("controller-manager", "client", api.status());
  std::string identity = flags.identity;
  if (identity.empty()) {
    identity = "draplane-controller-manager-" + SecureRandom().NewUuid().substr(0, 8);
  }
  controllers::ControllerManager manager(**api, RealClock(), options);

  ComponentHealth health("informer-sync");
  StatusOr<std::unique_ptr<server::http::HttpServer>> metrics =
      StartMetricsEndpoint(flags.metrics_bind_address, health);
  if (!metrics.ok()) {
    return ReportFailure("controller-manager", "--metrics-bind-address", metrics.status());
  }

  ComponentRun run;
  run.command = "controller-manager";
  run.identity = identity;
  run.server = config->server;
  run.leader_elect = flags.leader_elect;
  run.lease_name = flags.lease_name;
  run.lease_namespace = flags.lease_namespace;
  run.start = [&] { return manager.Start(); };
  run.stop = [&] { manager.Stop(); };
  run.health = &health;
  // Lease requests get their own client, bounded by the renew deadline.
  StatusOr<std::unique_ptr<client::ApiClient>> lease_api = CreateLeaseClient(*config);
  if (!lease_api.ok()) return ReportFailure("controller-manager", "client", lease_api.status());
  return RunComponent(**lease_api, signals, run);
}

// The controllers inside `draplane serve` (serve_command.cc), as system:kube-controller-manager
// through the in-process transport (or the loopback listener, serve --embedded-transport),
// without leader election (one process). Garbage
// collection and namespace deletion are left to the server, which does them itself
// (server/lifecycle/lifecycle.h).
class EmbeddedControllerManager final : public server::EmbeddedComponent {
 public:
  EmbeddedControllerManager(bool simulate_kubelet, std::vector<std::string> metrics_tenants,
                            bool resource_pool_status, std::shared_ptr<EmbeddedInformers> shared)
      : simulate_kubelet_(simulate_kubelet),
        metrics_tenants_(std::move(metrics_tenants)),
        resource_pool_status_(resource_pool_status),
        shared_(std::move(shared)) {}

  std::string name() const override { return "controller-manager"; }

  Status Start(const server::ClientCredentials& credentials) override {
    DRAPLANE_ASSIGN_OR_RETURN(api_, NewEmbeddedClient(credentials, "draplane-controller-manager"));
    controllers::ControllerManagerOptions options;
    options.garbage_collector = false;
    options.namespaces = false;
    options.simulate_kubelet = simulate_kubelet_;
    options.claim_stages.tenants = metrics_tenants_;
    options.resource_pool_status = resource_pool_status_;
    manager_ = std::make_unique<controllers::ControllerManager>(
        *api_, RealClock(), options, shared_ ? shared_->informers.get() : nullptr);
    return manager_->Start();
  }

  void Stop() override {
    if (manager_) manager_->Stop();
  }

 private:
  bool simulate_kubelet_;
  std::vector<std::string> metrics_tenants_;
  bool resource_pool_status_;
  std::shared_ptr<EmbeddedInformers> shared_;
  std::unique_ptr<client::ApiClient> api_;
  std::unique_ptr<controllers::ControllerManager> manager_;
};

}  // namespace

Status EmbedControllerManager(server::Server& server, bool simulate_kubelet,
                              std::vector<std::string> metrics_tenants, bool resource_pool_status,
                              std::shared_ptr<EmbeddedInformers> shared) {
  return server.Embed(
      std::make_unique<EmbeddedControllerManager>(simulate_kubelet, std::move(metrics_tenants),
                                                  resource_pool_status, std::move(shared)),
      "system:kube-controller-manager", {});
}

void AddControllerManagerCommand(CLI::App& app) {
  auto flags = std::make_shared<ControllerManagerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "controller-manager",
      "Run the controllers: claims from templates and their release, garbage collection, "
      "namespace deletion");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--controllers", flags->controllers,
                  "Controllers to run: resourceclaim, garbagecollector, namespace, "
                  "resourcepoolstatusrequest (needs a server serving resource.k8s.io/v1alpha3)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--simulate-kubelet", flags->simulate_kubelet,
                "Play the kubelet for every node: bound Pods run, deleted Pods terminate");
  AddLeaderElectionOptions(*cmd, "only one replica runs", flags->leader_elect, flags->lease_name,
                           flags->lease_namespace, flags->identity);
  AddMetricsTenantsOption(*cmd, flags->metrics_tenants);
  AddMetricsBindOption(*cmd, flags->metrics_bind_address);
  cmd->callback([flags] {
    int code = RunControllerManager(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
