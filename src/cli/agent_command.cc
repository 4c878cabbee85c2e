// `draplane agent`: the node agent (agent/agent.h) for one node.
//
//   draplane agent --node NAME --kubeconfig F --profile F      simulated devices from a profile
//   draplane agent --node NAME --kubeconfig F --drivers nvml,sysfs   real devices
//   draplane agent --profile F [--node NAME] --dry-run         print the slices it would publish
//   draplane agent --kubelet-plugin ...                        next to a real kubelet: serve the
//                                                              kubelet's DRA plugin API
//
// Without --dry-run or --once it runs until SIGINT / SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/drivers/nvml/nvml_driver.h"
#include "agent/drivers/profile/profile_driver.h"
#include "agent/drivers/sysfs/sysfs_driver.h"
#include "agent/kubelet_plugin.h"
#include "agent/profile.h"
#include "agent/simulated.h"
#include "agent/slice_plan.h"
#include "api/codec/yaml.h"
#include "api/gen/resource_v1_codec.h"
#include "api/meta/duration.h"
#include "api/validation/names.h"
#include "api/validation/validation.h"
#include "cli/commands.h"
#include "cli/component_runner.h"
#include "cli/object_ref.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace draplane::cli {
namespace {

struct AgentFlags {
  std::string node;
  std::string metrics_bind_address;
  std::string kubeconfig;
  std::string profile;
  std::string drivers;
  std::string state_dir;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sysfs_root = "/sys";
  std::string heartbeat = "10s";
  std::string discovery = "5s";
  int isolate_after_failures = 3;
  std::string isolation_backoff = "30s";
  std::string isolation_max_backoff = "10m";
  bool dry_run = false;
  bool once = false;
  bool no_simulate_containers = false;
  std::vector<std::string> driver_names;
  bool kubelet_plugin = false;
  std::string registry_dir = std::string(agent::kDefaultRegistryDir);
  std::string plugins_dir = std::string(agent::kDefaultPluginsDir);
  std::string plugin_instance;
  std::string cdi_dir;
};

constexpr char kAgentFooter[] = R"(
Drivers (--drivers, comma-separated; default: profile with --profile, else nvml,sysfs):
  profile  simulated GPUs (with MIG), FPGAs and NICs from --profile, a NodeProfile or a
           ClusterProfile (then --node picks the node); faults in the profile inject unhealthy
           devices and prepare failures; the file is re-read when it changes
  nvml     NVIDIA GPUs through libnvidia-ml.so.1 (--nvml-library); without the library the
           agent says so and publishes no GPUs; driver name gpu.draplane.dev
  sysfs    NICs and FPGAs by PCI class under --sysfs-root; driver names nic.draplane.dev and
           fpga.draplane.dev
--driver-name gpu=NAME, nic=NAME, fpga=NAME (repeatable) renames what nvml and sysfs publish,
e.g. gpu=gpu.nvidia.com where draplane replaces NVIDIA's DRA driver.

The agent registers the Node and its heartbeat Lease, publishes the node's ResourceSlices,
prepares the claims of Pods bound to the node (CDI specs under <state-dir>/cdi, checkpoint in
<state-dir>/checkpoint.json), and plays the kubelet for them unless --no-simulate-containers.
--dry-run prints the slices it would publish (YAML) and exits; --once syncs once and exits.

With --kubelet-plugin (a real node; examples/deploy/) the kubelet decides when claims are
prepared: the agent publishes slices and serves, per DRA driver, the registration socket
<registry-dir>/<driver>[-<instance>]-reg.sock and the DRA socket
<plugins-dir>/<driver>/dra[-<instance>].sock (NodePrepareResources, NodeUnprepareResources,
NodeWatchResources); the kubelet owns the Node and the Pods. --plugin-instance (the Pod UID in a
DaemonSet) gives each instance its own sockets for rolling updates. --cdi-dir points the CDI specs
at the container runtime's directory (/var/run/cdi).)";

// --driver-name KIND=NAME: the DRA driver names of the hardware drivers, by kind.
StatusOr<std::map<std::string, std::string>> DriverNames(const AgentFlags& flags) {
  std::map<std::string, std::string> out = {{"gpu", std::string(agent::kNvmlDriver)},
                                            {"nic", std::string(agent::kSysfsNicDriver)},
                                            {"fpga", std::string(agent::kSysfsFpgaDriver)}};
  for (const std::string& entry : flags.driver_names) {
    const size_t eq = entry.find('=');
    const std::string kind = entry.substr(0, eq);
    if (eq == std::string::npos || out.count(kind) == 0) {
      return InvalidArgumentError("--driver-name " + entry +
                                  ": want KIND=NAME with KIND gpu, nic or fpga");
    }
    const std::string name = entry.substr(eq + 1);
    api::FieldErrorList errors =
        api::validation::ValidateDriverName(name, api::FieldPath("--driver-name").Key(kind));
    if (!errors.empty()) return InvalidArgumentError(errors.front().ToString());
    out[kind] = name;
  }
  return out;
}

StatusOr<std::vector<std::unique_ptr<agent::Driver>>> MakeDrivers(const AgentFlags& flags,
                                                                  const std::string& node,
                                                                  const std::string& state_dir,
                                                                  const Clock& clock) {
  std::string list = flags.drivers;
  if (list.empty()) list = flags.profile.empty() ? "nvml,sysfs" : "profile";
  DRAPLANE_ASSIGN_OR_RETURN(auto names, DriverNames(flags));
  std::vector<std::unique_ptr<agent::Driver>> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "profile") {
      if (flags.profile.empty()) return InvalidArgumentError("--drivers profile needs --profile");
      DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<agent::ProfileDriver> d,
                                agent::ProfileDriver::Create({.node_name = node,
                                                              .profile_path = flags.profile,
                                                              .node = {},
                                                              .clock = &clock,
                                                              .state_dir = state_dir,
                                                              .crash_exits_process = true}));
      out.push_back(std::move(d));
    } else if (name == "nvml") {
      std::unique_ptr<agent::NvmlDriver> d =
          agent::NvmlDriver::Open({.driver_name = names["gpu"],
                                   .library = flags.nvml_library,
                                   .sysfs_root = flags.sysfs_root,
                                   .clock = &clock});
      if (!d->available())
        std::fprintf(stderr, "draplane agent: nvml: %s\n", d->unavailable_reason().c_str());
      out.push_back(std::move(d));
    } else if (name == "sysfs") {
      std::vector<agent::SysfsRule> rules = agent::DefaultSysfsRules();
      for (agent::SysfsRule& rule : rules) rule.driver = names[rule.type];
      out.push_back(agent::SysfsDriver::New({.sysfs_root = flags.sysfs_root, .rules = rules}));
    } else {
      return InvalidArgumentError("unknown driver \"" + name + "\" (profile, nvml, sysfs)");
    }
  }
  return out;
}

// The node name: --node, else the NodeProfile's metadata.name, else the host name.
StatusOr<std::string> NodeName(const AgentFlags& flags) {
  if (!flags.node.empty()) return flags.node;
  if (!flags.profile.empty()) {
    DRAPLANE_ASSIGN_OR_RETURN(agent::ClusterProfile profile, agent::LoadProfile(flags.profile));
    if (profile.is_node_profile && !profile.name.empty()) return profile.name;
    return InvalidArgumentError("--node is required with a ClusterProfile");
  }
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    return InvalidArgumentError("--node is required (no host name)");
  }
  return std::string(host);
}

int DryRun(const AgentFlags& flags, const std::string& node) {
  std::vector<std::unique_ptr<agent::Driver>> drivers;
  {
    // A dry run keeps no state.
    StatusOr<std::vector<std::unique_ptr<agent::Driver>>> made =
        MakeDrivers(flags, node, "", RealClock());
    if (!made.ok()) {
      std::fprintf(stderr, "draplane agent: %s\n", made.status().ToString().c_str());
      return 2;
    }
    drivers = std::move(*made);
  }
  boost::json::array items;
  int problems = 0;
  for (const std::unique_ptr<agent::Driver>& driver : drivers) {
    StatusOr<std::vector<agent::Inventory>> found = driver->Discover();
    if (!found.ok()) {
      std::fprintf(stderr, "draplane agent: %s driver: %s\n", driver->kind().c_str(),
                   found.status().ToString().c_str());
      return 1;
    }
    for (const agent::Inventory& inv : *found) {
      for (const api::resourcev1::ResourceSlice& slice : agent::BuildPoolSlices(node, inv, 1)) {
        for (const api::FieldError& e : api::validation::ValidateResourceSlice(slice)) {
          std::fprintf(stderr, "%s: %s\n", slice.metadata.name.c_str(), e.ToString().c_str());
          ++problems;
        }
        items.push_back(api::resourcev1::Encode(slice));
      }
    }
  }
  boost::json::object list{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
  std::fputs(api::codec::WriteYaml(boost::json::value(std::move(list))).c_str(), stdout);
  return problems == 0 ? 0 : 1;
}

// `dir` absolute and spelled one way ("cdi/" and "/work/cdi" alike become "/work/cdi"): the kubelet
// dials the registered socket path as given, whatever its own working directory.
std::string AbsoluteDir(const std::string& dir) {
  if (dir.empty()) return dir;
  std::error_code error;
  std::filesystem::path path = std::filesystem::absolute(dir, error);
  if (error) return dir;
  path = path.lexically_normal();
  if (path.has_relative_path() && path.filename().empty()) path = path.parent_path();
  return path.string();
}

int RunAgent(const AgentFlags& given) {
  AgentFlags flags = given;
  for (std::string* dir :
       {&flags.state_dir, &flags.cdi_dir, &flags.registry_dir, &flags.plugins_dir}) {
    *dir = AbsoluteDir(*dir);
  }
  StatusOr<std::string> node = NodeName(flags);
  if (!node.ok()) {
    std::fprintf(stderr, "draplane agent: %s\n", node.status().ToString().c_str());
    return 2;
  }
  if (flags.dry_run) return DryRun(flags, *node);
  if (flags.kubelet_plugin && flags.once) {
    std::fprintf(stderr,
                 "draplane agent: --once cannot be combined with --kubelet-plugin (the kubelet "
                 "decides when claims are prepared)\n");
    return 2;
  }

  sigset_t signals = BlockTerminationSignals();

  auto fail = [](const Status& s) {
    std::fprintf(stderr, "draplane agent: %s\n", s.ToString().c_str());
    return 1;
  };
  StatusOr<Duration> heartbeat = api::ParseNonNegativeDuration(flags.heartbeat);
  StatusOr<Duration> discovery = api::ParseNonNegativeDuration(flags.discovery);
  if (!heartbeat.ok()) return fail(heartbeat.status().WithPrefix("--heartbeat-interval"));
  if (!discovery.ok()) return fail(discovery.status().WithPrefix("--discovery-interval"));
  StatusOr<Duration> isolation_backoff = api::ParseNonNegativeDuration(flags.isolation_backoff);
  StatusOr<Duration> isolation_max = api::ParseNonNegativeDuration(flags.isolation_max_backoff);
  if (!isolation_backoff.ok()) {
    return fail(isolation_backoff.status().WithPrefix("--isolation-backoff"));
  }
  if (!isolation_max.ok())
    return fail(isolation_max.status().WithPrefix("--isolation-max-backoff"));
  if (*isolation_max < *isolation_backoff) {
    return fail(
        InvalidArgumentError("--isolation-max-backoff: must not be less than "
                             "--isolation-backoff"));
  }
  const std::string kubeconfig =
      flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(kubeconfig);
  if (!config.ok()) return fail(config.status());
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return fail(api.status());
  const std::string state_dir =
      flags.state_dir.empty() ? "/var/lib/draplane/agent/" + *node : flags.state_dir;

  const Clock& clock = RealClock();
  StatusOr<std::vector<std::unique_ptr<agent::Driver>>> drivers =
      MakeDrivers(flags, *node, state_dir, clock);
  if (!drivers.ok()) return fail(drivers.status());
  agent::AgentOptions options;
  options.node_name = *node;
  options.state_dir = state_dir;
  options.heartbeat_interval = *heartbeat;
  options.discovery_interval = *discovery;
  options.simulate_containers = !flags.no_simulate_containers;
  options.kubelet_plugin = flags.kubelet_plugin;
  options.cdi_dir = flags.cdi_dir;
  options.isolate_after_failures = flags.isolate_after_failures;
  options.isolation_backoff = *isolation_backoff;
  options.isolation_max_backoff = *isolation_max;
  if (!flags.profile.empty()) {
    StatusOr<agent::ClusterProfile> profile = agent::LoadProfile(flags.profile);
    if (!profile.ok()) return fail(profile.status());
    StatusOr<agent::ProfileNode> entry = agent::FindNode(*profile, *node);
    if (!entry.ok()) return fail(entry.status());
    agent::ApplyNodeTemplate(*entry->node, &options);
  }
  StatusOr<std::unique_ptr<agent::Agent>> agent =
      agent::Agent::Create(**api, std::move(*drivers), std::move(options), clock);
  if (!agent.ok()) return fail(agent.status());
  Status init = (*agent)->Init();
  if (!init.ok()) return fail(init);
  if (flags.once) {
    for (Status s : {(*agent)->SyncNode(), (*agent)->SyncSlices(), (*agent)->SyncPods()}) {
      if (!s.ok()) return fail(s);
    }
    return 0;
  }
  std::unique_ptr<agent::KubeletPlugin> plugin;
  if (flags.kubelet_plugin) {
    StatusOr<std::unique_ptr<agent::KubeletPlugin>> started_plugin =
        agent::KubeletPlugin::Start(**agent, **api, clock,
                                    agent::KubeletPluginOptions{.registry_dir = flags.registry_dir,
                                                                .plugins_dir = flags.plugins_dir,
                                                                .instance = flags.plugin_instance});
    if (!started_plugin.ok()) return fail(started_plugin.status());
    plugin = std::move(*started_plugin);
  }
  ComponentHealth health("informer-sync");
  StatusOr<std::unique_ptr<server::http::HttpServer>> metrics =
      StartMetricsEndpoint(flags.metrics_bind_address, health);
  if (!metrics.ok()) return fail(metrics.status().WithPrefix("--metrics-bind-address"));
  health.set_running(true);
  Status started = (*agent)->Start();
  if (!started.ok()) return fail(started);
  health.set_synced(true);
  std::printf("agent: node %s, state %s, server %s%s\n", node->c_str(), state_dir.c_str(),
              config->server.c_str(), flags.kubelet_plugin ? ", kubelet plugin" : "");
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  log::Info("agent: received signal {}, stopping", received);
  health.set_shutting_down(true);
  // The kubelet first loses the registration sockets, then the endpoints; the agent last.
  if (plugin) plugin->Stop();
  (*agent)->Stop();
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* cmd =
      app.add_subcommand("agent", "Run the node agent: publish devices, prepare claims");
  cmd->footer(kAgentFooter);
  cmd->add_option("--node", flags->node,
                  "Node name (default: the NodeProfile's name, or the host name)")
      ->check(ObjectNameCheck("--node"));
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--profile", flags->profile,
                  "NodeProfile or ClusterProfile of simulated devices");
  cmd->add_option("--drivers", flags->drivers, "Comma-separated drivers: profile, nvml, sysfs");
  cmd->add_option("--state-dir", flags->state_dir,
                  "Checkpoint and CDI specs (default /var/lib/draplane/agent/<node>)");
  cmd->add_option("--driver-name", flags->driver_names,
                  "KIND=NAME: DRA driver name of the nvml (gpu) or sysfs (nic, fpga) devices");
  cmd->add_option("--nvml-library", flags->nvml_library, "The NVML library to load")
      ->capture_default_str();
  cmd->add_option("--sysfs-root", flags->sysfs_root, "Root of the sysfs tree")
      ->capture_default_str();
  cmd->add_option("--heartbeat-interval", flags->heartbeat, "Lease renewal period")
      ->capture_default_str();
  cmd->add_option("--discovery-interval", flags->discovery, "Device discovery period")
      ->capture_default_str();
  cmd->add_option("--isolate-after-failures", flags->isolate_after_failures,
                  "Isolate the node (taint draplane.dev/device-prepare-failures) after this many "
                  "device prepare failures in a row (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--isolation-backoff", flags->isolation_backoff,
                  "How long the first isolation lasts (unless a prepare succeeds first); each "
                  "that follows soon after doubles it")
      ->capture_default_str();
  cmd->add_option("--isolation-max-backoff", flags->isolation_max_backoff, "The longest isolation")
      ->capture_default_str();
  cmd->add_flag("--dry-run", flags->dry_run, "Print the ResourceSlices it would publish and exit");
  cmd->add_flag("--once", flags->once, "Sync the node, its slices and its Pods once, then exit");
  cmd->add_flag("--no-simulate-containers", flags->no_simulate_containers,
                "Only prepare devices; leave Pod status to the kubelet");
  cmd->add_flag("--kubelet-plugin", flags->kubelet_plugin,
                "Serve the kubelet's DRA plugin API; the kubelet decides when claims are prepared");
  cmd->add_option("--kubelet-registry-dir", flags->registry_dir,
                  "Where the kubelet looks for plugin registration sockets")
      ->capture_default_str();
  cmd->add_option("--kubelet-plugins-dir", flags->plugins_dir,
                  "Parent of the per-driver directories holding the DRA sockets")
      ->capture_default_str();
  cmd->add_option("--plugin-instance", flags->plugin_instance,
                  "Unique id of this instance (the Pod UID) for rolling updates: own socket names");
  cmd->add_option("--cdi-dir", flags->cdi_dir,
                  "Where CDI specs are written (default <state-dir>/cdi; /var/run/cdi on a node)");
  AddMetricsBindOption(*cmd, flags->metrics_bind_address);
  cmd->callback([flags] {
    int code = RunAgent(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
