// `draplane fakekubelet`: the kubelet's side of the DRA plugin APIs for one node, without
// containers (fakekubelet/fake_kubelet.h) — to test `draplane agent --kubelet-plugin` or any DRA
// driver's kubelet plugin against an API server.
//
//   draplane fakekubelet --node NAME --kubeconfig F --registry-dir D [--cdi-dir D]...
//                        [--report FILE] [--profile F]
//
// Runs until SIGINT / SIGTERM.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/kubelet_plugin.h"
#include "agent/profile.h"
#include "agent/simulated.h"
#include "api/meta/duration.h"
#include "cli/commands.h"
#include "cli/component_runner.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "common/log.h"
#include "fakekubelet/fake_kubelet.h"

namespace draplane::cli {
namespace {

struct FakeKubeletFlags {
  std::string node;
  std::string kubeconfig;
  std::string registry_dir = std::string(agent::kDefaultRegistryDir);
  std::vector<std::string> cdi_dirs;
  std::string report;
  std::string profile;
  std::string call_timeout = "45s";
  std::string retry_base_delay = "10s";
  std::string retry_max_delay = "10s";
  std::string slice_wipe_delay = "30s";
  std::string heartbeat = "10s";
  std::string registry_poll = "1s";
  std::string health_retry = "5s";
  bool no_wipe_on_start = false;
  std::vector<std::string> refuse_drivers;
  std::vector<std::string> services;
};

constexpr char kFakeKubeletFooter[] = R"(
The fake kubelet registers the Node (labels and capacity from --profile's node, if given) and
renews its Lease, discovers DRA plugins in --registry-dir (GetInfo, NotifyRegistrationStatus),
keeps their health streams open, and for each Pod bound to the node calls NodePrepareResources
before marking it Running and NodeUnprepareResources after it stopped, with the kubelet's rules:
per-driver batches, a per-call deadline (--call-timeout), a failed Pod sync retried after 10 s
(--retry-base-delay; a shorter base than --retry-max-delay backs off exponentially),
a deleted Pod finished only after its claims were unprepared. CDI device IDs must resolve to a spec
in a --cdi-dir (default /etc/cdi and /var/run/cdi). Every registration, call, answer and health
change is one JSON line in --report. --service limits the plugin API versions it speaks, to test a
plugin against older kubelets. --slice-wipe-delay: how long after a driver's last plugin
went away its ResourceSlices are deleted (negative: never).)";

int RunFakeKubelet(const FakeKubeletFlags& flags) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "draplane fakekubelet: %s\n", s.ToString().c_str());
    return 1;
  };
  if (flags.node.empty()) return fail(InvalidArgumentError("--node is required"));
  sigset_t signals = BlockTerminationSignals();
  fakekubelet::FakeKubeletOptions options;
  options.node_name = flags.node;
  options.registry_dir = flags.registry_dir;
  options.cdi_dirs = flags.cdi_dirs;
  if (options.cdi_dirs.empty()) options.cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  options.report_path = flags.report;
  options.wipe_slices_on_start = !flags.no_wipe_on_start;
  options.refuse_drivers.insert(flags.refuse_drivers.begin(), flags.refuse_drivers.end());
  options.services.insert(flags.services.begin(), flags.services.end());
  struct {
    const char* flag;
    const std::string& text;
    Duration* into;
  } durations[] = {
      {"--call-timeout", flags.call_timeout, &options.call_timeout},
      {"--retry-base-delay", flags.retry_base_delay, &options.retry.base_delay},
      {"--retry-max-delay", flags.retry_max_delay, &options.retry.max_delay},
      {"--heartbeat-interval", flags.heartbeat, &options.heartbeat_interval},
      {"--registry-poll-interval", flags.registry_poll, &options.registry_poll_interval},
      {"--health-retry-interval", flags.health_retry, &options.health_retry_interval}};
  for (const auto& d : durations) {
    StatusOr<Duration> parsed = api::ParseNonNegativeDuration(d.text);
    if (!parsed.ok()) return fail(parsed.status().WithPrefix(d.flag));
    *d.into = *parsed;
  }
  if (flags.slice_wipe_delay.starts_with("-")) {
    options.slice_wipe_delay = Duration(-1);
  } else {
    StatusOr<Duration> wipe = api::ParseDuration(flags.slice_wipe_delay);
    if (!wipe.ok()) return fail(wipe.status().WithPrefix("--slice-wipe-delay"));
    options.slice_wipe_delay = *wipe;
  }
  if (!flags.profile.empty()) {
    StatusOr<agent::ClusterProfile> profile = agent::LoadProfile(flags.profile);
    if (!profile.ok()) return fail(profile.status());
    StatusOr<agent::ProfileNode> entry = agent::FindNode(*profile, flags.node);
    if (!entry.ok()) return fail(entry.status());
    agent::AgentOptions node;
    agent::ApplyNodeTemplate(*entry->node, &node);
    options.labels = node.labels;
    options.capacity = node.capacity;
  }
  const std::string kubeconfig =
      flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(kubeconfig);
  if (!config.ok()) return fail(config.status());
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return fail(api.status());
  StatusOr<std::unique_ptr<fakekubelet::FakeKubelet>> kubelet =
      fakekubelet::FakeKubelet::Create(**api, std::move(options), RealClock());
  if (!kubelet.ok()) return fail(kubelet.status());
  Status started = (*kubelet)->Start();
  if (!started.ok()) return fail(started);
  std::printf("fakekubelet: node %s, registry %s, server %s\n", flags.node.c_str(),
              flags.registry_dir.c_str(), config->server.c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  log::Info("fakekubelet: received signal {}, stopping", received);
  (*kubelet)->Stop();
  return 0;
}

}  // namespace

void AddFakeKubeletCommand(CLI::App& app) {
  auto flags = std::make_shared<FakeKubeletFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fakekubelet", "Play the kubelet for one node's DRA plugins (tests, driver development)");
  cmd->footer(kFakeKubeletFooter);
  cmd->add_option("--node", flags->node, "Node name")->required();
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--registry-dir", flags->registry_dir, "Plugin registration directory")
      ->capture_default_str();
  cmd->add_option("--cdi-dir", flags->cdi_dirs,
                  "Where CDI specs are looked up (repeatable; default /etc/cdi, /var/run/cdi)");
  cmd->add_option("--report", flags->report, "Append what it saw, one JSON object per line");
  cmd->add_option("--profile", flags->profile,
                  "NodeProfile or ClusterProfile giving the Node's labels and capacity");
  cmd->add_option("--call-timeout", flags->call_timeout, "Deadline of each plugin call")
      ->capture_default_str();
  cmd->add_option("--retry-base-delay", flags->retry_base_delay,
                  "First backoff of a failed Pod sync")
      ->capture_default_str();
  cmd->add_option("--retry-max-delay", flags->retry_max_delay, "Longest backoff")
      ->capture_default_str();
  cmd->add_option("--slice-wipe-delay", flags->slice_wipe_delay,
                  "Delete a driver's slices this long after its last plugin left (negative: "
                  "never)")
      ->capture_default_str();
  cmd->add_flag("--no-wipe-slices-on-start", flags->no_wipe_on_start,
                "Keep the node's slices at start (the kubelet wipes them)");
  cmd->add_option("--heartbeat-interval", flags->heartbeat, "Lease renewal period")
      ->capture_default_str();
  cmd->add_option("--registry-poll-interval", flags->registry_poll,
                  "Rescan of the registry dir besides inotify")
      ->capture_default_str();
  cmd->add_option("--health-retry-interval", flags->health_retry,
                  "Wait before re-opening an ended health stream")
      ->capture_default_str();
  cmd->add_option("--refuse-driver", flags->refuse_drivers,
                  "Refuse this driver's registration (repeatable; negative tests)");
  cmd->add_option("--service", flags->services,
                  "A plugin service this kubelet speaks (repeatable; default all: "
                  "v1.DRAPlugin, v1beta1.DRAPlugin, v1/v1beta1/v1alpha1.DRAResourceHealth). "
                  "--service v1beta1.DRAPlugin plays a kubelet older than 1.34");
  cmd->callback([flags] {
    int code = RunFakeKubelet(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
