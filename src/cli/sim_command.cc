// `draplane sim`: the what-if simulator (sim/simulation.h, docs/design/sim.md).
//
//   sim run      one trace against one cluster and configuration: a report (text, JSON, HTML)
//   sim compare  the same trace under configurations A and B over K seeds, side by side
//   sim record   a live cluster's Pods, claims and Events as a trace
//   sim replay   a trace played against a live API server in real time (accelerated)
//
// Exit codes: 0 on success; 1 when a run's conservation checks failed, or when the API server
// refused to create some of a replay's Pods; 2 for usage errors and inputs that cannot be read
// or loaded.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "allocator/features.h"
#include "api/codec/json.h"
#include "api/meta/duration.h"
#include "cli/commands.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "sim/compare.h"
#include "sim/record.h"
#include "sim/replay.h"
#include "sim/simulation.h"

namespace draplane::cli {
namespace {

struct SimFlags {
  std::vector<std::string> cluster;
  std::string workload;
  // --seed as given (parsed by SeedOrFail); `seed_options` tell whether it was given at all.
  std::string seed;
  std::vector<CLI::Option*> seed_options;
  std::vector<std::string> policies;
  std::vector<std::string> changes;
  std::vector<std::string> a;
  std::vector<std::string> b;
  std::string a_name = "A";
  std::string b_name = "B";
  int seeds = 5;
  int jobs = 0;  // 0: one per core
  std::string output = "text";
  std::string html;
  std::string until;
  std::string kubernetes_version = "1.36";
  std::string feature_gates;
  bool placements = false;
  // record / replay
  std::string kubeconfig;
  std::string context;
  std::vector<std::string> namespaces;
  std::string out_file;
  double speed = 60;
  std::string placements_file;
};

[[noreturn]] void Fail(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "draplane sim %s: %s\n", command.c_str(), message.c_str());
  throw CommandExit{2};
}

// --seed: a whole number from 0 to 2^64-1 (the trace's `seed` has the same range); std::nullopt
// when not given. Anything else is refused rather than read as some other seed.
std::optional<uint64_t> SeedOrFail(const std::string& command, const SimFlags& flags) {
  bool given = false;
  for (const CLI::Option* o : flags.seed_options) given = given || o->count() > 0;
  if (!given) return std::nullopt;
  uint64_t seed = 0;
  const char* begin = flags.seed.data();
  const char* end = begin + flags.seed.size();
  auto [stop, error] = std::from_chars(begin, end, seed);
  if (flags.seed.empty() || error != std::errc() || stop != end) {
    Fail(command, "--seed: must be a whole number from 0 to 18446744073709551615, got \"" +
                      flags.seed + "\"");
  }
  return seed;
}

// Hand-written manifests are held to the API server's strict field validation, as kubectl holds
// them: a misspelled field is an error, not a setting silently left at its default.
sim::ParseOptions ParseOptions() { return sim::ParseOptions{.unknown_fields = UnknownFieldsOf}; }

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

allocator::Features FeaturesOrFail(const std::string& command, const SimFlags& flags) {
  StatusOr<allocator::Features> features = allocator::DefaultFeatures(flags.kubernetes_version);
  if (!features.ok()) Fail(command, std::string(features.status().message()));
  features = allocator::ApplyFeatureGates(flags.feature_gates, *features);
  if (!features.ok()) Fail(command, std::string(features.status().message()));
  return *features;
}

// Cluster, trace and the run options common to run and compare.
struct Inputs {
  sim::Cluster cluster;
  sim::Trace trace;
};

Inputs LoadInputs(const std::string& command, const SimFlags& flags) {
  Inputs in;
  StatusOr<sim::Cluster> cluster = sim::LoadCluster(flags.cluster);
  if (!cluster.ok()) Fail(command, cluster.status().ToString());
  in.cluster = std::move(*cluster);
  StatusOr<sim::Trace> trace = sim::LoadTrace(flags.workload, ParseOptions());
  if (!trace.ok()) Fail(command, trace.status().ToString());
  in.trace = std::move(*trace);
  for (const auto& [kind, count] : in.cluster.ignored) {
    std::fprintf(stderr, "draplane sim %s: left out %lld %s object(s) of --cluster\n",
                 command.c_str(), static_cast<long long>(count), kind.c_str());
  }
  return in;
}

sim::RunOptions RunOptionsOrFail(const std::string& command, const SimFlags& flags,
                                 const std::vector<std::string>& configuration) {
  sim::RunOptions options;
  options.features = FeaturesOrFail(command, flags);
  options.placements = flags.placements || !flags.placements_file.empty();
  options.seed = SeedOrFail(command, flags);
  if (!flags.until.empty()) {
    StatusOr<Duration> until = api::ParseNonNegativeDuration(flags.until);
    if (!until.ok()) Fail(command, "--until: " + std::string(until.status().message()));
    // A run of no virtual time measures nothing (and its window would be empty).
    if (*until <= Duration(0))
      Fail(command, "--until: must be positive, got \"" + flags.until + "\"");
    options.until = *until;
  }
  StatusOr<sim::Configuration> config = sim::LoadConfiguration(configuration, ParseOptions());
  if (!config.ok()) Fail(command, config.status().ToString());
  options.changes = std::move(config->changes);
  options.policies = std::move(config->policies);
  return options;
}

int RunCommand(const SimFlags& flags) {
  if (flags.output != "text" && flags.output != "json") Fail("run", "-o must be text or json");
  // The placements are a list per Pod, which only the JSON report carries.
  if (flags.placements && flags.output != "json") {
    Fail("run",
         "--placements adds every Pod's placement to the JSON report: use it with -o json, "
         "or write the placements with --placements-file FILE");
  }
  Inputs in = LoadInputs("run", flags);
  std::vector<std::string> configuration = flags.changes;
  configuration.insert(configuration.end(), flags.policies.begin(), flags.policies.end());
  sim::RunOptions options = RunOptionsOrFail("run", flags, configuration);
  StatusOr<sim::Report> report = sim::RunSimulation(in.cluster, in.trace, options);
  if (!report.ok()) Fail("run", report.status().ToString());
  // The default window is the trace's arrival period; when the Pods run on far past it (one
  // arrival at 1s of a 1h Pod: a window of 1s), most of the work is not measured. Said, not
  // changed: a steady-state trace is meant to be measured without its drain.
  if (!options.until && !in.trace.horizon && report->virtual_seconds > 2 * report->window_seconds) {
    auto text = [](double seconds) {
      return api::FormatDuration(std::chrono::milliseconds(std::llround(seconds * 1000)));
    };
    std::fprintf(stderr,
                 "draplane sim run: note: the window measured is the trace's arrival period (%s; "
                 "the trace has no horizon) but its Pods ran until %s; set the trace's horizon, or "
                 "--until, to measure their work\n",
                 text(report->window_seconds).c_str(), text(report->virtual_seconds).c_str());
  }
  if (flags.output == "json") {
    std::printf("%s", api::codec::WriteJson(sim::JsonReport(*report)).c_str());
  } else {
    std::printf("%s", sim::TextReport(*report).c_str());
  }
  if (!flags.html.empty() && !WriteFile(flags.html, sim::HtmlReport(*report))) {
    Fail("run", "cannot write " + flags.html);
  }
  if (!flags.placements_file.empty()) {
    boost::json::value json = sim::JsonReport(*report, false);
    boost::json::value placements = json.as_object()["placements"];
    if (placements.is_null()) placements = boost::json::array();
    if (!WriteFile(flags.placements_file, api::codec::WriteJson(placements))) {
      Fail("run", "cannot write " + flags.placements_file);
    }
  }
  std::fflush(stdout);
  return report->conservation.ok() ? 0 : 1;
}

int CompareCommand(const SimFlags& flags) {
  if (flags.output != "text" && flags.output != "json") Fail("compare", "-o must be text or json");
  if (flags.jobs < 0) Fail("compare", "--jobs must be at least 1 (or 0: one per core)");
  // Without either, both sides are the same configuration: every delta would be zero.
  if (flags.a.empty() && flags.b.empty()) {
    Fail("compare",
         "give the configurations to compare: --a FILE... and/or --b FILE... "
         "(ClusterChange documents and policy objects; a side without files is the "
         "cluster and trace as they are)");
  }
  Inputs in = LoadInputs("compare", flags);
  sim::CompareOptions options;
  options.seeds = flags.seeds;
  if (options.seeds < 1) Fail("compare", "--seeds must be at least 1");
  options.first_seed = SeedOrFail("compare", flags).value_or(in.trace.seed.value_or(1));
  std::vector<std::string> a = flags.a;
  std::vector<std::string> b = flags.b;
  a.insert(a.begin(), flags.policies.begin(), flags.policies.end());
  b.insert(b.begin(), flags.policies.begin(), flags.policies.end());
  options.a = RunOptionsOrFail("compare", flags, a);
  options.b = RunOptionsOrFail("compare", flags, b);
  options.a_name = flags.a_name;
  options.b_name = flags.b_name;
  options.jobs = flags.jobs > 0
                     ? flags.jobs
                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  StatusOr<sim::Comparison> comparison = sim::CompareConfigurations(in.cluster, in.trace, options);
  if (!comparison.ok()) Fail("compare", comparison.status().ToString());
  if (flags.output == "json") {
    std::printf("%s", api::codec::WriteJson(sim::ComparisonJson(*comparison)).c_str());
  } else {
    std::printf("%s", sim::ComparisonText(*comparison).c_str());
  }
  std::fflush(stdout);
  return comparison->failures.empty() ? 0 : 1;
}

std::unique_ptr<client::ApiClient> ClientOrFail(const std::string& command, const SimFlags& flags) {
  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) Fail(command, "kubeconfig: " + config.status().ToString());
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) Fail(command, api.status().ToString());
  return std::move(*api);
}

int RecordCommand(const SimFlags& flags) {
  std::unique_ptr<client::ApiClient> api = ClientOrFail("record", flags);
  StatusOr<sim::Trace> trace =
      sim::RecordTrace(*api, RealClock(), sim::RecordOptions{.namespaces = flags.namespaces});
  if (!trace.ok()) Fail("record", trace.status().ToString());
  std::string yaml = sim::TraceToYaml(*trace);
  if (flags.out_file.empty() || flags.out_file == "-") {
    std::printf("%s", yaml.c_str());
  } else if (!WriteFile(flags.out_file, yaml)) {
    Fail("record", "cannot write " + flags.out_file);
  }
  std::fflush(stdout);
  return 0;
}

int ReplayCommand(const SimFlags& flags) {
  if (!(flags.speed > 0)) Fail("replay", "--speed must be positive");
  StatusOr<sim::Trace> trace = sim::LoadTrace(flags.workload, ParseOptions());
  if (!trace.ok()) Fail("replay", trace.status().ToString());
  std::unique_ptr<client::ApiClient> api = ClientOrFail("replay", flags);
  uint64_t seed = SeedOrFail("replay", flags).value_or(trace->seed.value_or(1));
  StatusOr<sim::ReplayResult> result = sim::ReplayTrace(
      *api, RealClock(), *trace, sim::ReplayOptions{.seed = seed, .speed = flags.speed});
  if (!result.ok()) Fail("replay", result.status().ToString());
  std::printf("%s", sim::ReplaySummary(*result).c_str());
  if (!flags.placements_file.empty() &&
      !WriteFile(flags.placements_file,
                 api::codec::WriteJson(sim::ReplayPlacementsJson(*result)))) {
    Fail("replay", "cannot write " + flags.placements_file);
  }
  std::fflush(stdout);
  return sim::RejectedByApi(*result) > 0 ? 1 : 0;
}

constexpr char kRunFooter[] = R"(
--cluster takes files or directories: a kubectl dump (`kubectl get nodes,deviceclasses,
resourceslices,resourceclaims,pods -A -o yaml`), a ClusterProfile (examples/cluster-demo.yaml)
plus DeviceClasses, or both. --workload is a WorkloadTrace (docs/design/sim.md). --policy and
--change add configuration files: policy objects (created before the trace starts) and
ClusterChange documents (applied to the cluster first).

The run uses the real scheduler and resourceclaim controller on a virtual clock; the report has
pods, waitSeconds, fallback, utilization, fragmentation, tenants, jainIndex, decisions (one
decision = one scheduling attempt of one Pod) and wallSeconds. Same inputs and --seed give the
same report except wallSeconds and decisionsPerWallSecond.
Exit code: 0, 1 when a conservation check failed, 2 for unreadable or invalid input.)";

constexpr char kCompareFooter[] = R"(
Runs the trace under configuration A (--a FILE...) and B (--b FILE...) for --seeds seeds each;
both runs of one seed see the same arrivals. Each configuration file holds ClusterChange
documents (e.g. converting nodes to MIG, relabelling node ownership) and policy objects; --policy
files apply to both. Prints every metric's mean under A and B, the mean difference B - A and its
95 % confidence interval (paired t). The runs are independent: --jobs of them run at once (by
default one per core), each holding its own simulated cluster in memory; the output is the same
for any --jobs.)";

}  // namespace

void AddSimCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("sim", "What-if simulation on the real scheduling code");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<SimFlags>();
  auto common = [&](CLI::App* sub) {
    sub->add_option("--cluster", flags->cluster,
                    "Cluster dump or ClusterProfile files or directories")
        ->required();
    sub->add_option("--workload", flags->workload, "WorkloadTrace file")->required();
    flags->seed_options.push_back(
        sub->add_option("--seed", flags->seed, "Seed (default: the trace's, else 1)"));
    sub->add_option("--policy", flags->policies, "Policy objects to create first (repeatable)");
    sub->add_option("-o,--output", flags->output, "text or json")->capture_default_str();
    sub->add_option("--until", flags->until, "Stop at this virtual time (e.g. 24h)");
    sub->add_option("--kubernetes-version", flags->kubernetes_version,
                    "DRA feature gates of this release (1.34 to 1.37)")
        ->capture_default_str();
    sub->add_option("--feature-gates", flags->feature_gates, "DRA feature gates, Name=true,...");
  };
  CLI::App* run = cmd->add_subcommand("run", "Replay a trace against a cluster and report");
  common(run);
  run->add_option("--change", flags->changes, "ClusterChange files (repeatable)");
  run->add_option("--html", flags->html, "Also write a self-contained HTML report here");
  run->add_flag("--placements", flags->placements, "Add every Pod's placement to the JSON");
  run->add_option("--placements-file", flags->placements_file,
                  "Write the placements (JSON) to this file");
  run->footer(kRunFooter);
  run->callback([flags] {
    int code = RunCommand(*flags);
    if (code != 0) throw CommandExit{code};
  });

  CLI::App* compare = cmd->add_subcommand("compare", "Compare two configurations over seeds");
  common(compare);
  compare->add_option("--a", flags->a, "Configuration A files (changes, policies)");
  compare->add_option("--b", flags->b, "Configuration B files (changes, policies)");
  compare->add_option("--a-name", flags->a_name, "A's name in the output")->capture_default_str();
  compare->add_option("--b-name", flags->b_name, "B's name in the output")->capture_default_str();
  compare->add_option("--seeds", flags->seeds, "Seeds per configuration")->capture_default_str();
  compare
      ->add_option("--jobs", flags->jobs,
                   "Simulations run at once (0: one per core; the output does not depend on it)")
      ->capture_default_str();
  compare->footer(kCompareFooter);
  compare->callback([flags] {
    int code = CompareCommand(*flags);
    if (code != 0) throw CommandExit{code};
  });

  CLI::App* record = cmd->add_subcommand(
      "record", "Write a live cluster's Pods, claims and Events as a WorkloadTrace");
  record->add_option("--kubeconfig", flags->kubeconfig,
                     "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  record->add_option("--context", flags->context, "Kubeconfig context");
  record->add_option("-n,--namespace", flags->namespaces,
                     "Record only these namespaces (default: all but kube-*)");
  record->add_option("--out", flags->out_file, "Write the trace here (default: stdout)");
  record->callback([flags] {
    int code = RecordCommand(*flags);
    if (code != 0) throw CommandExit{code};
  });

  CLI::App* replay = cmd->add_subcommand(
      "replay", "Play a trace against a live API server in accelerated real time");
  replay->add_option("--kubeconfig", flags->kubeconfig,
                     "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  replay->add_option("--context", flags->context, "Kubeconfig context");
  replay->add_option("--workload", flags->workload, "WorkloadTrace file")->required();
  flags->seed_options.push_back(
      replay->add_option("--seed", flags->seed, "Seed (default: the trace's, else 1)"));
  replay->add_option("--speed", flags->speed, "Virtual seconds per real second")
      ->capture_default_str();
  replay->add_option("--placements-file", flags->placements_file,
                     "Write the placements (JSON) to this file");
  replay->callback([flags] {
    int code = ReplayCommand(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
