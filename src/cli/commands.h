// Registration of the subcommands (internal to the cli module).
//
// Each Add*Command adds one subcommand to `app` and installs its callback. A callback that
// fails throws `CommandExit` with the exit code; Run() turns it into the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/features.h"
#include "client/api_client.h"
#include "client/shared_informers.h"
#include "common/clock.h"
#include "common/status.h"
#include "controllers/nodelifecycle/node_lifecycle.h"
#include "controllers/podgc/pod_gc.h"

namespace draplane::server {
class Server;
}  // namespace draplane::server

namespace draplane::cli {

// Thrown by a subcommand callback to end the program with `code` (CLI11 callbacks cannot
// return values). Caught in Run(); never crosses the module boundary.
struct CommandExit {
  int code;
};

// Prints "draplane <command>: <what>: <status>" on standard error and returns the exit code of
// the failed command: 2, or `not_found_exit` when `s` is NotFound.
int ReportFailure(std::string_view command, std::string_view what, const Status& s,
                  int not_found_exit = 2);
// The fields of `object` (by its apiVersion and kind) that its kind's schema does not declare,
// as the API server's strict field validation reports them ("spec.tenants[0].weigth"); none for
// a kind without a schema.
std::vector<std::string> UnknownFieldsOf(const boost::json::object& object);
// Rows as a table with columns padded to their widest cell, two spaces apart (kubectl's
// printer); the first row is the header.
std::string Table(const std::vector<std::vector<std::string>>& rows);
// `draplane explain` exits 1 when what it was asked to explain does not exist (as `kubectl get`).
inline constexpr int kExplainNotFoundExit = 1;

void AddVersionCommand(CLI::App& app);
void AddSchedulerCommand(CLI::App& app);
void AddControllerManagerCommand(CLI::App& app);
void AddExplainCommand(CLI::App& app);
// `explain claim`, added to the `explain` subcommand (explain_claim.cc).
void AddExplainClaimCommand(CLI::App& explain);
void AddConvertCommand(CLI::App& app);
void AddLintCommand(CLI::App& app);
void AddCelCommand(CLI::App& app);
void AddServeCommand(CLI::App& app);
void AddKubeconfigCommand(CLI::App& app);
void AddScenarioCommand(CLI::App& app);
void AddAllocateCommand(CLI::App& app);
void AddAgentCommand(CLI::App& app);
void AddFakeKubeletCommand(CLI::App& app);
void AddSimCommand(CLI::App& app);
// `draplane pools` (pools_command.cc).
void AddPoolsCommand(CLI::App& app);
// `draplane queue` (queue_command.cc).
void AddQueueCommand(CLI::App& app);
// Informers shared by the components `draplane serve` embeds, so that each object change is
// watched, decoded and cached once (client/shared_informers.h). EmbedSharedInformers embeds
// their owner first (it stops last, after every component using them) and fills `informers`.
struct EmbeddedInformers {
  std::unique_ptr<client::ApiClient> api;
  std::unique_ptr<client::SharedInformers> informers;
};
Status EmbedSharedInformers(server::Server& server, std::shared_ptr<EmbeddedInformers> shared);
// The scheduler and the controllers embedded in `draplane serve` (scheduler_command.cc,
// controller_manager_command.cc); with `shared` they use those informers.
// `decision_records`: write an AllocationDecision per committed allocation (scheduler.h).
Status EmbedScheduler(server::Server& server, std::shared_ptr<EmbeddedInformers> shared,
                      const allocator::Features& features, Duration binding_timeout,
                      bool decision_records = true, std::vector<std::string> metrics_tenants = {});
// `--binding-timeout`: a Go-style duration of at least 1 s (upstream validates
// DynamicResourcesArgs.bindingTimeout the same way); InvalidArgument otherwise.
StatusOr<Duration> ParseBindingTimeout(std::string_view text);
struct EmbeddedControllers {
  bool simulate_kubelet = false;
  std::vector<std::string> metrics_tenants;
  // Run the ResourcePoolStatusRequest controller (the server serves the API:
  // DRAResourcePoolStatus).
  bool resource_pool_status = false;
  controllers::NodeLifecycleOptions node_lifecycle;
  int terminated_pod_gc_threshold = controllers::PodGCOptions{}.terminated_pod_threshold;
  // Run the device taint eviction controller: serve runs it, as upstream's controller manager,
  // only with DRADeviceTaints on (with it off the scheduler ignores device taints, and no taint
  // may evict). The standalone controller-manager has no feature gates and always runs it.
  bool device_taint_eviction = true;
};
Status EmbedControllerManager(server::Server& server, EmbeddedControllers controllers,
                              std::shared_ptr<EmbeddedInformers> shared);
// The node lifecycle controller's flags (upstream kube-controller-manager's), for
// controller-manager and serve.
struct NodeLifecycleFlags {
  std::string monitor_period = "5s";
  std::string monitor_grace_period = "50s";
  std::string startup_grace_period = "1m0s";
  double eviction_rate = 0.1;
  double secondary_eviction_rate = 0.01;
  int large_cluster_threshold = 50;
  double unhealthy_zone_threshold = 0.55;
};
void AddNodeLifecycleFlags(CLI::App& cmd, NodeLifecycleFlags& flags);
// The Pod garbage collector's --terminated-pod-gc-threshold, for controller-manager and serve.
void AddTerminatedPodGCThresholdFlag(CLI::App& cmd, int& threshold);
// InvalidArgument naming the flag.
StatusOr<controllers::NodeLifecycleOptions> NodeLifecycleOptionsOf(const NodeLifecycleFlags& flags);
// Serves `server`'s draplane.dev PodExplanations (server/handlers/pod_explanations.h) with the
// explanation `draplane explain pod` prints (scheduler::ExplainPodFromApi; explain_command.cc),
// reading the cluster in-process as system:draplane:pod-explainer. Errors of the client.
Status ServePodExplanations(server::Server& server, const allocator::Features& features);
// Embeds one simulated node agent per node of a cluster profile into `server` (serve
// --simulate-nodes; simulate_nodes.cc); state under <data_dir>/agents/<node>.
Status EmbedSimulatedNodes(server::Server& server, const std::string& profile_path,
                           const std::string& data_dir);

}  // namespace draplane::cli
