// `draplane serve`: runs the Kubernetes-compatible API server (server/server.h) until SIGINT or
// SIGTERM, then shuts down gracefully. Prints `ready: <url> kubeconfig=<path>` on stdout once it
// accepts requests. Unless turned off, the claim controllers and the scheduler run in the process
// as embedded API clients (controller_manager_command.cc, scheduler_command.cc), by default over
// the in-process transport (in_process_transport.h), with --embedded-transport=loopback over the
// HTTPS listener. They share one set of informers (EmbedSharedInformers).
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "allocator/features.h"
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
  bool no_decision_records = false;
  bool no_controller_manager = false;
  std::vector<std::string> metrics_tenants;
  bool simulate_kubelet = false;
  std::string embedded_transport = "in-process";  // or "loopback"
  std::string decision_max_age = "168h";
  std::string event_ttl = "1h";
  std::string quota_resync_period = "5m";
  // Limits and timeouts (docs/design/server.md, "Limits and timeouts"), as Go durations.
  std::string request_timeout = "1m0s";
  int64_t min_request_timeout = 1800;
  std::string read_header_timeout = "32s";
  std::string idle_timeout = "1m30s";
  std::string compaction_interval = "5m0s";
  std::string shutdown_delay = "0s";
  std::string kubernetes_version = "1.36";
  std::string feature_gates;
  std::string binding_timeout = "600s";  // the embedded scheduler's
  NodeLifecycleFlags node_lifecycle;     // the embedded controllers'
  int terminated_pod_gc_threshold = controllers::PodGCOptions{}.terminated_pod_threshold;
};

// Takes the gates that concern the API server and the controller manager only out of a
// `--feature-gates` value: DRAResourcePoolStatus (KEP-5677; on by default here, where the
// controller that answers the requests always runs). Returns the other entries, for the
// allocator's parser (allocator/features.h).
StatusOr<std::string> TakeServerGates(std::string_view gates, bool* resource_pool_status) {
  std::string rest;
  while (!gates.empty()) {
    size_t comma = gates.find(',');
    std::string_view entry = gates.substr(0, comma);
    gates = comma == std::string_view::npos ? std::string_view() : gates.substr(comma + 1);
    size_t eq = entry.find('=');
    std::string_view name = entry.substr(0, eq);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name != "DRAResourcePoolStatus") {
      if (!rest.empty()) rest += ",";
      rest += entry;
      continue;
    }
    std::string_view value = eq == std::string_view::npos ? "" : entry.substr(eq + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    if (value != "true" && value != "false") {
      return InvalidArgumentError("feature gate DRAResourcePoolStatus: invalid value \"" +
                                  std::string(value) + "\" (want true or false)");
    }
    *resource_pool_status = value == "true";
  }
  return rest;
}

// The DRA behaviour of the release and gates, for the API server's admission and the embedded
// scheduler alike; `resource_pool_status` receives DRAResourcePoolStatus.
StatusOr<allocator::Features> ServeFeatures(const ServeFlags& flags, bool* resource_pool_status) {
  DRAPLANE_ASSIGN_OR_RETURN(allocator::Features features,
                            allocator::DefaultFeatures(flags.kubernetes_version));
  DRAPLANE_ASSIGN_OR_RETURN(std::string gates,
                            TakeServerGates(flags.feature_gates, resource_pool_status));
  if (gates.empty()) return features;
  return allocator::ApplyFeatureGates(gates, features);
}

// Parses the duration flags into `options` and `shutdown_delay`; InvalidArgument naming the
// flag.
Status ApplyDurations(const ServeFlags& flags, server::ServerOptions& options,
                      Duration* shutdown_delay) {
  struct Flag {
    const char* name;
    const std::string* text;
    Duration* out;
    bool zero_allowed;  // 0 switches the mechanism off
  };
  for (const Flag& flag :
       {Flag{"--request-timeout", &flags.request_timeout, &options.limits.request_timeout, false},
        Flag{"--read-header-timeout", &flags.read_header_timeout,
             &options.limits.read_header_timeout, true},
        Flag{"--idle-timeout", &flags.idle_timeout, &options.limits.idle_timeout, true},
        Flag{"--etcd-compaction-interval", &flags.compaction_interval,
             &options.limits.compaction_interval, true},
        Flag{"--decision-max-age", &flags.decision_max_age, &options.decision_max_age, false},
        Flag{"--event-ttl", &flags.event_ttl, &options.event_ttl, true},
        Flag{"--quota-resync-period", &flags.quota_resync_period, &options.quota_resync_period,
             false},
        Flag{"--shutdown-delay-duration", &flags.shutdown_delay, shutdown_delay, true}}) {
    DRAPLANE_ASSIGN_OR_RETURN(*flag.out,
                              ParseDurationFlag(flag.name, *flag.text, flag.zero_allowed));
  }
  if (flags.min_request_timeout <= 0) {
    return InvalidArgumentError("--min-request-timeout: must be positive");
  }
  options.watch_min_timeout = std::chrono::seconds(flags.min_request_timeout);
  return Status::Ok();
}

// Raises the soft limit on open files to the hard limit, as Go programs do at start (Go 1.19+):
// every connection and watch holds a descriptor; the connection cap is derived from the result.
void RaiseFileDescriptorLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log::Warning("serve: cannot raise the open file limit: {}", std::strerror(errno));
  }
}

int RunServe(ServeFlags& flags) {
  // Block the shutdown signals before any thread starts, so that only sigwait() sees them.
  sigset_t signals = BlockTerminationSignals();

  bool resource_pool_status = true;
  StatusOr<allocator::Features> features = ServeFeatures(flags, &resource_pool_status);
  if (!features.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", features.status().ToString().c_str());
    return 2;
  }
  server::DraAdmission& admission = flags.options.dra_admission;
  admission.features = allocator::ValidationFeatures(*features);
  admission.list_attributes = features->list_attributes;
  admission.resource_pool_status = resource_pool_status;
  StatusOr<Duration> binding_timeout = ParseBindingTimeout(flags.binding_timeout);
  if (!binding_timeout.ok()) {
    std::fprintf(stderr, "draplane serve: --binding-timeout: %s\n",
                 binding_timeout.status().ToString().c_str());
    return 2;
  }
  flags.options.tls_sans = flags.tls_sans;
  flags.options.anonymous_auth = !flags.no_anonymous;
  flags.options.draplane_version = DRAPLANE_VERSION;
  flags.options.embedded_in_process = flags.embedded_transport == "in-process";
  Duration shutdown_delay{0};
  if (Status durations = ApplyDurations(flags, flags.options, &shutdown_delay); !durations.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", durations.ToString().c_str());
    return 2;
  }
  StatusOr<controllers::NodeLifecycleOptions> node_lifecycle =
      NodeLifecycleOptionsOf(flags.node_lifecycle);
  if (!node_lifecycle.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", node_lifecycle.status().ToString().c_str());
    return 2;
  }
  RaiseFileDescriptorLimit();
  StatusOr<std::unique_ptr<server::Server>> server = server::Server::Start(flags.options);
  if (!server.ok()) {
    std::fprintf(stderr, "draplane serve: %s\n", server.status().ToString().c_str());
    return 2;
  }
  // The claim controllers and the scheduler run in the process unless turned off.
  auto shared = std::make_shared<EmbeddedInformers>();
  Status components = EmbedSharedInformers(**server, shared);
  if (components.ok() && !flags.no_controller_manager) {
    components =
        EmbedControllerManager(**server,
                               {.simulate_kubelet = flags.simulate_kubelet,
                                .metrics_tenants = flags.metrics_tenants,
                                .resource_pool_status = resource_pool_status,
                                .node_lifecycle = *node_lifecycle,
                                .terminated_pod_gc_threshold = flags.terminated_pod_gc_threshold,
                                .device_taint_eviction = features->device_taints},
                               shared);
  }
  if (components.ok() && !flags.no_scheduler) {
    components = EmbedScheduler(**server, shared, *features, *binding_timeout,
                                !flags.no_decision_records, flags.metrics_tenants);
  }
  if (components.ok()) components = ServePodExplanations(**server, *features);
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
  if (flags.options.plain_http) {
    // client-go (kubectl) applies a kubeconfig's user only to TLS servers: it sends no token here.
    log::Warning(
        "serve: plain HTTP: kubectl sends no credentials without TLS (client-go applies a "
        "kubeconfig's user only to https servers), so it acts as system:anonymous; the token in {} "
        "works with clients that send it (curl -H 'Authorization: Bearer ...')",
        (*server)->admin_kubeconfig_path());
  }
  std::printf("ready: %s kubeconfig=%s\n", (*server)->url().c_str(),
              (*server)->admin_kubeconfig_path().c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  (*server)->BeginShutdown();
  if (shutdown_delay > Duration(0)) {
    // kube-apiserver's --shutdown-delay-duration: /readyz fails while everything is still
    // served, so a load balancer takes this replica out before it stops; a second signal cuts
    // the delay short.
    log::Info("serve: received signal {}; /readyz fails, serving {}s more before shutting down",
              received, std::chrono::duration_cast<std::chrono::seconds>(shutdown_delay).count());
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(shutdown_delay);
    timespec wait{.tv_sec = static_cast<time_t>(seconds.count()),
                  .tv_nsec = static_cast<long>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(shutdown_delay - seconds)
                          .count())};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      log::Info("serve: second signal, shutting down now");
    }
  }
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
  cmd->add_flag("--no-decision-records", flags->no_decision_records,
                "The embedded scheduler writes no AllocationDecision records");
  cmd->add_flag("--no-controller-manager", flags->no_controller_manager,
                "Do not run the embedded claim controllers (run `draplane controller-manager` "
                "instead)");
  AddMetricsTenantsOption(*cmd, flags->metrics_tenants);
  cmd->add_flag("--simulate-kubelet", flags->simulate_kubelet,
                "The embedded controllers play the kubelet: bound Pods run, deleted Pods "
                "terminate");
  cmd->add_option("--shutdown-delay-duration", flags->shutdown_delay,
                  "After SIGTERM or SIGINT, /readyz fails while the server keeps serving this "
                  "long, then it shuts down (Go duration; a second signal cuts it short)")
      ->capture_default_str();
  cmd->add_option("--default-not-ready-toleration-seconds",
                  flags->options.default_not_ready_toleration_seconds,
                  "Seconds a new Pod tolerates node.kubernetes.io/not-ready:NoExecute unless it "
                  "tolerates it itself (negative: add no toleration)")
      ->capture_default_str();
  cmd->add_option("--default-unreachable-toleration-seconds",
                  flags->options.default_unreachable_toleration_seconds,
                  "The same for node.kubernetes.io/unreachable:NoExecute")
      ->capture_default_str();
  AddNodeLifecycleFlags(*cmd, flags->node_lifecycle);
  AddTerminatedPodGCThresholdFlag(*cmd, flags->terminated_pod_gc_threshold);
  cmd->add_option("--binding-timeout", flags->binding_timeout,
                  "How long the embedded scheduler's bindings wait for allocated devices' "
                  "bindingConditions (KEP-5007) before the Pod is retried (at least 1s)")
      ->capture_default_str();
  cmd->add_option("--embedded-transport", flags->embedded_transport,
                  "How the embedded scheduler, controllers and simulated nodes reach the server: "
                  "in-process (straight into the request handlers, no TLS, HTTP or sockets) or "
                  "loopback (over the HTTP(S) listener, like any remote client)")
      ->check(CLI::IsMember({"in-process", "loopback"}))
      ->capture_default_str();
  cmd->add_option("--event-ttl", flags->event_ttl,
                  "Events not written for this long are deleted, as kube-apiserver's --event-ttl "
                  "(Go duration; 0 keeps them until deleted)")
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
  // Limits and timeouts; docs/design/server.md lists each next to kube-apiserver's.
  server::ServingLimits& limits = flags->options.limits;
  cmd->add_option("--request-timeout", flags->request_timeout,
                  "How long a request may take before it is answered 504 Timeout (watches: "
                  "--min-request-timeout); a quarter of it is the longest wait in the API "
                  "Priority and Fairness queues")
      ->capture_default_str();
  cmd->add_option("--min-request-timeout", flags->min_request_timeout,
                  "Seconds: a watch without timeoutSeconds ends after a random time between this "
                  "and twice this")
      ->capture_default_str();
  cmd->add_option("--read-header-timeout", flags->read_header_timeout,
                  "How long the TLS handshake and the first request's header block may take, "
                  "counted from the connection's start; for a later request on a kept-alive "
                  "connection, counted from its first byte")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", flags->idle_timeout,
                  "How long a keep-alive connection may wait for its next request")
      ->capture_default_str();
  cmd->add_option("--max-connections", limits.max_connections,
                  "Open connections at most; at the cap a new one closes an idle one")
      ->capture_default_str();
  cmd->add_option("--max-buffered-request-bytes", limits.max_buffered_request_bytes,
                  "Bytes of request headers over 16 KiB and bodies over 64 KiB the server buffers "
                  "at once; past it such requests get 429 / 431")
      ->capture_default_str();
  cmd->add_option("--max-requests-inflight", limits.max_requests_inflight,
                  "With --max-mutating-requests-inflight: the seats API Priority and Fairness "
                  "shares among its priority levels")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-mutating-requests-inflight", limits.max_mutating_requests_inflight,
                  "See --max-requests-inflight")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-watches-per-user", limits.max_watches_per_user,
                  "Watches one user may hold open (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--max-watches", limits.max_watches,
                  "Watches open on the server at most (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--max-object-bytes", flags->options.store_options.max_value_bytes,
                  "The largest stored object, for every store (etcd's --max-request-bytes)")
      ->capture_default_str();
  cmd->add_option("--max-history-bytes", flags->options.store_options.max_history_bytes,
                  "Bytes of values written since the last compaction after which the memory and "
                  "SQLite stores compact half of them (0: no size bound)")
      ->capture_default_str();
  cmd->add_option("--etcd-compaction-interval", flags->compaction_interval,
                  "How often the server compacts the store's history to what it was one interval "
                  "earlier, for every store (0: never)")
      ->capture_default_str();
  cmd->add_option("--kubernetes-version", flags->kubernetes_version,
                  "Release whose DRA behaviour the server and the embedded scheduler have: "
                  "default feature gates, CEL semantics of list attributes (1.34 ... 1.37)")
      ->capture_default_str();
  cmd->add_option("--feature-gates", flags->feature_gates,
                  "DRA gates on top of the release's defaults, e.g. "
                  "DRADerivedAttributes=true,DRADeviceCompatibilityGroups=true; "
                  "DRAResourcePoolStatus=false stops serving ResourcePoolStatusRequest");
  cmd->callback([flags] {
    int code = RunServe(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
