// `draplane controller-manager`: runs the controllers (controllers/controller_manager.h) against
// an API server until SIGINT or SIGTERM, optionally under leader election.
#include <cmath>
#include <memory>
#include <tuple>

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
  std::vector<std::string> controllers = {"resourceclaim", "garbagecollector",          "namespace",
                                          "nodelifecycle", "taint-eviction-controller", "podgc"};
  int terminated_pod_gc_threshold = controllers::PodGCOptions{}.terminated_pod_threshold;
  NodeLifecycleFlags node_lifecycle;
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
  options.node_lifecycle = options.taint_eviction = options.pod_gc = false;
  for (const std::string& c : flags.controllers) {
    if (c == "resourceclaim") {
      options.resource_claims = true;
    } else if (c == "garbagecollector") {
      options.garbage_collector = true;
    } else if (c == "namespace") {
      options.namespaces = true;
    } else if (c == "resourcepoolstatusrequest") {
      options.resource_pool_status = true;
    } else if (c == "nodelifecycle") {
      options.node_lifecycle = true;
    } else if (c == "taint-eviction-controller") {
      options.taint_eviction = true;
    } else if (c == "podgc" || c == "pod-garbage-collector-controller") {
      options.pod_gc = true;
    } else {
      return ReportFailure(
          "controller-manager", "--controllers",
          InvalidArgumentError("unknown controller \"" + c +
                               "\" (resourceclaim, garbagecollector, namespace, nodelifecycle, "
                               "taint-eviction-controller, podgc, resourcepoolstatusrequest)"));
    }
  }
  StatusOr<controllers::NodeLifecycleOptions> node_lifecycle =
      NodeLifecycleOptionsOf(flags.node_lifecycle);
  if (!node_lifecycle.ok()) {
    return ReportFailure("controller-manager", "flags", node_lifecycle.status());
  }
  options.node_lifecycle_options = *node_lifecycle;
  options.pod_gc_options.terminated_pod_threshold = flags.terminated_pod_gc_threshold;
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
  EmbeddedControllerManager(EmbeddedControllers controllers,
                            std::shared_ptr<EmbeddedInformers> shared)
      : controllers_(std::move(controllers)), shared_(std::move(shared)) {}

  std::string name() const override { return "controller-manager"; }

  Status Start(const server::ClientCredentials& credentials) override {
    DRAPLANE_ASSIGN_OR_RETURN(api_, NewEmbeddedClient(credentials, "draplane-controller-manager"));
    controllers::ControllerManagerOptions options;
    options.garbage_collector = false;
    options.namespaces = false;
    options.simulate_kubelet = controllers_.simulate_kubelet;
    options.claim_stages.tenants = controllers_.metrics_tenants;
    options.resource_pool_status = controllers_.resource_pool_status;
    options.node_lifecycle_options = controllers_.node_lifecycle;
    options.pod_gc_options.terminated_pod_threshold = controllers_.terminated_pod_gc_threshold;
    options.device_taint_eviction = controllers_.device_taint_eviction;
    manager_ = std::make_unique<controllers::ControllerManager>(
        *api_, RealClock(), options, shared_ ? shared_->informers.get() : nullptr);
    return manager_->Start();
  }

  void Stop() override {
    if (manager_) manager_->Stop();
  }

 private:
  EmbeddedControllers controllers_;
  std::shared_ptr<EmbeddedInformers> shared_;
  std::unique_ptr<client::ApiClient> api_;
  std::unique_ptr<controllers::ControllerManager> manager_;
};

}  // namespace

Status EmbedControllerManager(server::Server& server, EmbeddedControllers controllers,
                              std::shared_ptr<EmbeddedInformers> shared) {
  return server.Embed(
      std::make_unique<EmbeddedControllerManager>(std::move(controllers), std::move(shared)),
      "system:kube-controller-manager", {});
}

void AddNodeLifecycleFlags(CLI::App& cmd, NodeLifecycleFlags& flags) {
  cmd.add_option("--node-monitor-period", flags.monitor_period,
                 "How often the node lifecycle controller checks every node's heartbeat (Go "
                 "duration)")
      ->capture_default_str();
  cmd.add_option("--node-monitor-grace-period", flags.monitor_grace_period,
                 "How long a node may go without a heartbeat (its Ready condition or its Lease) "
                 "before it is marked Unknown and tainted unreachable (Go duration)")
      ->capture_default_str();
  cmd.add_option("--node-startup-grace-period", flags.startup_grace_period,
                 "The same for a node that never posted a Ready condition (Go duration)")
      ->capture_default_str();
  cmd.add_option("--node-eviction-rate", flags.eviction_rate,
                 "Nodes per second, per zone, tainted NoExecute (their Pods evicted) while the "
                 "zone is healthy")
      ->capture_default_str();
  cmd.add_option(
         "--secondary-node-eviction-rate", flags.secondary_eviction_rate,
         "The same in a zone where too many nodes are not ready "
         "(--unhealthy-zone-threshold); 0 in zones of at most --large-cluster-size-threshold "
         "nodes")
      ->capture_default_str();
  cmd.add_option("--large-cluster-size-threshold", flags.large_cluster_threshold,
                 "Nodes a zone needs for --secondary-node-eviction-rate to apply")
      ->capture_default_str();
  cmd.add_option("--unhealthy-zone-threshold", flags.unhealthy_zone_threshold,
                 "Share of not ready nodes (at least 3) that makes a zone unhealthy")
      ->capture_default_str();
}

void AddTerminatedPodGCThresholdFlag(CLI::App& cmd, int& threshold) {
  cmd.add_option("--terminated-pod-gc-threshold", threshold,
                 "Succeeded and Failed Pods kept at most: the Pod garbage collector deletes the "
                 "excess, evicted and oldest first (0 or less: keep them all)")
      ->capture_default_str();
}

StatusOr<controllers::NodeLifecycleOptions> NodeLifecycleOptionsOf(
    const NodeLifecycleFlags& flags) {
  controllers::NodeLifecycleOptions options;
  for (auto [name, text, out] :
       {std::tuple{"--node-monitor-period", &flags.monitor_period, &options.monitor_period},
        std::tuple{"--node-monitor-grace-period", &flags.monitor_grace_period,
                   &options.monitor_grace_period},
        std::tuple{"--node-startup-grace-period", &flags.startup_grace_period,
                   &options.startup_grace_period}}) {
    DRAPLANE_ASSIGN_OR_RETURN(*out, ParseDurationFlag(name, *text, /*zero_allowed=*/false));
  }
  for (auto [name, rate] :
       {std::pair{"--node-eviction-rate", flags.eviction_rate},
        std::pair{"--secondary-node-eviction-rate", flags.secondary_eviction_rate}}) {
    if (!std::isfinite(rate) || rate < 0) {
      return InvalidArgumentError(std::string(name) + ": must be a finite number, not negative");
    }
  }
  if (flags.large_cluster_threshold < 0) {
    return InvalidArgumentError("--large-cluster-size-threshold: must not be negative");
  }
  if (!(flags.unhealthy_zone_threshold > 0 && flags.unhealthy_zone_threshold <= 1)) {
    return InvalidArgumentError("--unhealthy-zone-threshold: must be in (0, 1]");
  }
  options.eviction_rate = flags.eviction_rate;
  options.secondary_eviction_rate = flags.secondary_eviction_rate;
  options.large_cluster_threshold = flags.large_cluster_threshold;
  options.unhealthy_zone_threshold = flags.unhealthy_zone_threshold;
  return options;
}

void AddControllerManagerCommand(CLI::App& app) {
  auto flags = std::make_shared<ControllerManagerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "controller-manager",
      "Run the controllers: claims from templates and their release, garbage collection, "
      "namespace deletion, node health, taint eviction and Pod garbage collection");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--controllers", flags->controllers,
                  "Controllers to run: resourceclaim, garbagecollector, namespace, "
                  "nodelifecycle, taint-eviction-controller, podgc, resourcepoolstatusrequest "
                  "(needs a server serving resource.k8s.io/v1alpha3)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--simulate-kubelet", flags->simulate_kubelet,
                "Play the kubelet for every node: bound Pods run, deleted Pods terminate");
  AddLeaderElectionOptions(*cmd, "only one replica runs", flags->leader_elect, flags->lease_name,
                           flags->lease_namespace, flags->identity);
  AddMetricsTenantsOption(*cmd, flags->metrics_tenants);
  AddMetricsBindOption(*cmd, flags->metrics_bind_address);
  AddNodeLifecycleFlags(*cmd, flags->node_lifecycle);
  AddTerminatedPodGCThresholdFlag(*cmd, flags->terminated_pod_gc_threshold);
  cmd->callback([flags] {
    int code = RunControllerManager(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
