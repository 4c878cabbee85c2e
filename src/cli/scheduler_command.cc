// `draplane scheduler`: runs the scheduler (scheduler/scheduler.h) against an API server until
// SIGINT or SIGTERM. With --leader-elect (the default) several replicas can run; one, holding
// the coordination.k8s.io Lease, schedules.
#include <memory>

#include "allocator/allocator.h"
#include "allocator/features.h"
#include "api/meta/duration.h"
#include "cli/commands.h"
#include "cli/component_runner.h"
#include "cli/in_process_transport.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "scheduler/scheduler.h"
#include "server/server.h"

namespace draplane::cli {
namespace {

struct SchedulerFlags {
  std::string kubeconfig;
  std::string context;
  std::vector<std::string> scheduler_names = {"default-scheduler", "draplane"};
  std::string kubernetes_version = "1.36";
  std::string feature_gates;
  bool leader_elect = true;
  std::string lease_name = "draplane-scheduler";
  std::string lease_namespace = "kube-system";
  std::string identity;
  int percentage_of_nodes_to_score = 0;
  int binders = 16;
  bool no_events = false;
  bool no_decision_records = false;
  int holdings_check_interval_seconds = 60;
  int64_t allocation_step_limit = allocator::kDefaultSearchStepLimit;
  uint64_t evaluation_budget = allocator::kDefaultEvaluationBudget;
  std::string binding_timeout = "600s";
  std::vector<std::string> metrics_tenants;
  std::string metrics_bind_address;
  int device_states_interval_seconds = 30;
};

int RunScheduler(const SchedulerFlags& flags) {
  sigset_t signals = BlockTerminationSignals();

  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return ReportFailure("scheduler", "kubeconfig", config.status());
  config->user_agent = "draplane-scheduler";
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return ReportFailure("scheduler", "client", api.status());

  StatusOr<allocator::Features> features = allocator::DefaultFeatures(flags.kubernetes_version);
  if (!features.ok()) return ReportFailure("scheduler", "--kubernetes-version", features.status());
  if (!flags.feature_gates.empty()) {
    features = allocator::ApplyFeatureGates(flags.feature_gates, *features);
    if (!features.ok()) return ReportFailure("scheduler", "--feature-gates", features.status());
  }
  StatusOr<Duration> binding_timeout = ParseBindingTimeout(flags.binding_timeout);
  if (!binding_timeout.ok())
    return ReportFailure("scheduler", "--binding-timeout", binding_timeout.status());
  std::string identity = flags.identity;
  if (identity.empty()) identity = "draplane-scheduler-" + SecureRandom().NewUuid().substr(0, 8);

  scheduler::SchedulerOptions options;
  options.scheduler_names = flags.scheduler_names;
  options.features = *features;
  options.percentage_of_nodes_to_score = flags.percentage_of_nodes_to_score;
  options.binder_threads = flags.binders;
  options.allocation_step_limit = flags.allocation_step_limit;
  options.evaluation_budget = flags.evaluation_budget;
  options.binding_timeout = *binding_timeout;
  options.record_events = !flags.no_events;
  options.decision_records = !flags.no_decision_records;
  options.holdings_check_interval = std::chrono::seconds(flags.holdings_check_interval_seconds);
  options.identity = identity;
  options.metrics_tenants = flags.metrics_tenants;
  options.device_states_interval = std::chrono::seconds(flags.device_states_interval_seconds);
  scheduler::Scheduler sched(**api, RealClock(), options);
  ComponentHealth health("sched-handler-sync");
  StatusOr<std::unique_ptr<server::http::HttpServer>> metrics =
      StartMetricsEndpoint(flags.metrics_bind_address, health);
  if (!metrics.ok()) return ReportFailure("scheduler", "--metrics-bind-address", metrics.status());

  ComponentRun run;
  run.command = "scheduler";
  run.identity = identity;
  run.server = config->server;
  run.leader_elect = flags.leader_elect;
  run.lease_name = flags.lease_name;
  run.lease_namespace = flags.lease_namespace;
  run.start = [&] { return sched.Start(); };
  run.stop = [&] { sched.Stop(); };
  run.health = &health;
  // Lease requests get their own client, bounded by the renew deadline.
  StatusOr<std::unique_ptr<client::ApiClient>> lease_api = CreateLeaseClient(*config);
  if (!lease_api.ok()) return ReportFailure("scheduler", "client", lease_api.status());
  return RunComponent(**lease_api, signals, run);
}

// The scheduler inside `draplane serve` (serve_command.cc), as system:kube-scheduler through the
// in-process transport (or the loopback listener, serve --embedded-transport), with the default
// profile and no leader election (one process).
class EmbeddedScheduler final : public server::EmbeddedComponent {
 public:
  EmbeddedScheduler(std::shared_ptr<EmbeddedInformers> shared, allocator::Features features,
                    Duration binding_timeout, bool decision_records,
                    std::vector<std::string> metrics_tenants)
      : shared_(std::move(shared)),
        features_(features),
        binding_timeout_(binding_timeout),
        decision_records_(decision_records),
        metrics_tenants_(std::move(metrics_tenants)) {}

  std::string name() const override { return "scheduler"; }

  Status Start(const server::ClientCredentials& credentials) override {
    DRAPLANE_ASSIGN_OR_RETURN(api_, NewEmbeddedClient(credentials, "draplane-scheduler"));
    scheduler::SchedulerOptions options;
    options.features = features_;
    options.identity = "draplane-serve-scheduler";
    options.binding_timeout = binding_timeout_;
    options.decision_records = decision_records_;
    options.metrics_tenants = metrics_tenants_;
    if (shared_) options.informers = shared_->informers.get();
    scheduler_ = std::make_unique<scheduler::Scheduler>(*api_, RealClock(), options);
    return scheduler_->Start();
  }

  void Stop() override {
    if (scheduler_) scheduler_->Stop();
  }

 private:
  std::shared_ptr<EmbeddedInformers> shared_;
  allocator::Features features_;
  Duration binding_timeout_;
  const bool decision_records_;
  const std::vector<std::string> metrics_tenants_;
  std::unique_ptr<client::ApiClient> api_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
};

}  // namespace

Status EmbedScheduler(server::Server& server, std::shared_ptr<EmbeddedInformers> shared,
                      const allocator::Features& features, Duration binding_timeout,
                      bool decision_records, std::vector<std::string> metrics_tenants) {
  return server.Embed(
      std::make_unique<EmbeddedScheduler>(std::move(shared), features, binding_timeout,
                                          decision_records, std::move(metrics_tenants)),
      "system:kube-scheduler", {});
}

StatusOr<Duration> ParseBindingTimeout(std::string_view text) {
  DRAPLANE_ASSIGN_OR_RETURN(Duration d, api::ParseDuration(text));
  if (d < std::chrono::seconds(1)) {
    return InvalidArgumentError("must be at least 1s, got " + std::string(text));
  }
  return d;
}

void AddSchedulerCommand(CLI::App& app) {
  auto flags = std::make_shared<SchedulerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "scheduler", "Run the scheduler: bind pending Pods to nodes and allocate their claims");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--scheduler-name", flags->scheduler_names,
                  "spec.schedulerName values to schedule (repeatable)")
      ->capture_default_str();
  cmd->add_option("--kubernetes-version", flags->kubernetes_version,
                  "Default DRA feature gates of this release (1.34 ... 1.37)")
      ->capture_default_str();
  cmd->add_option("--feature-gates", flags->feature_gates,
                  "Gate=true|false,... (DRAPrioritizedList, DRAPartitionableDevices, ...)");
  AddLeaderElectionOptions(*cmd, "only one replica schedules", flags->leader_elect,
                           flags->lease_name, flags->lease_namespace, flags->identity);
  cmd->add_option("--percentage-of-nodes-to-score", flags->percentage_of_nodes_to_score,
                  "0: adaptive, as upstream")
      ->capture_default_str();
  cmd->add_option("--binders", flags->binders, "Threads writing claims and bindings")
      ->capture_default_str();
  cmd->add_option("--allocation-step-limit", flags->allocation_step_limit,
                  "Search steps per node after which a Pod's attempt fails and is retried "
                  "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--evaluation-budget", flags->evaluation_budget,
                  "CEL cost units one scheduling attempt may spend evaluating device selectors, "
                  "over all nodes; a Pod that spends it backs off and its namespace's Pods queue "
                  "behind other tenants' (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--binding-timeout", flags->binding_timeout,
                  "How long a binding waits for allocated devices' bindingConditions (KEP-5007) "
                  "before the Pod is retried (at least 1s)")
      ->capture_default_str();
  cmd->add_flag("--no-events", flags->no_events,
                "Do not record Events and PodScheduled conditions");
  cmd->add_flag("--no-decision-records", flags->no_decision_records,
                "Do not write an AllocationDecision per committed allocation");
  cmd->add_option("--holdings-check-interval", flags->holdings_check_interval_seconds,
                  "Seconds between checks of the holdings ledger and of Allocation-mode quota "
                  "usage against a recompute")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddMetricsTenantsOption(*cmd, flags->metrics_tenants);
  AddMetricsBindOption(*cmd, flags->metrics_bind_address);
  cmd->add_option("--device-states-interval", flags->device_states_interval_seconds,
                  "Seconds between recomputations of the device-state metrics (draplane_devices, "
                  "counter and capacity used ratios); 0 turns them off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([flags] {
    int code = RunScheduler(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
