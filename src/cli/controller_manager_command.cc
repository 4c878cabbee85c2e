// `draplane controller-manager`: runs the controllers (controllers/controller_manager.h) against
// an API server until SIGINT or SIGTERM, optionally under leader election.
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "client/kubeconfig.h"
#include "client/leader_election.h"
#include "client/rest_client.h"
#include "common/log.h"
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
};

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "draplane controller-manager: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 2;
}

int RunControllerManager(const ControllerManagerFlags& flags) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  controllers::ControllerManagerOptions options;
  options.resource_claims = options.garbage_collector = options.namespaces = false;
  for (const std::string& c : flags.controllers) {
    if (c == "resourceclaim") {
      options.resource_claims = true;
    } else if (c == "garbagecollector") {
      options.garbage_collector = true;
    } else if (c == "namespace") {
      options.namespaces = true;
    } else {
      return Fail("--controllers", InvalidArgumentError("unknown controller \"" + c +
                                                        "\" (resourceclaim, garbagecollector, "
                                                        "namespace)"));
    }
  }
  options.simulate_kubelet = flags.simulate_kubelet;

  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return Fail("kubeconfig", config.status());
  config->user_agent = "draplane-controller-manager";
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return Fail("client", api.status());
  std::string identity = flags.identity;
  if (identity.empty()) {
    identity = "draplane-controller-manager-" + SecureRandom().NewUuid().substr(0, 8);
  }
  controllers::ControllerManager manager(**api, RealClock(), options);

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool lost = false;
  std::thread waiter([&] {
    int received = 0;
    sigwait(&signals, &received);
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  });
  std::unique_ptr<client::LeaderElector> elector;
  std::thread election;
  if (flags.leader_elect) {
    client::LeaderElectionConfig le;
    le.lease_name = flags.lease_name;
    le.lease_namespace = flags.lease_namespace;
    le.identity = identity;
    le.on_started_leading = [&] {
      Status s = manager.Start();
      if (!s.ok()) log::Error("controller-manager: {}", s.ToString());
    };
    le.on_stopped_leading = [&] {
      std::lock_guard<std::mutex> lock(mu);
      lost = true;
      cv.notify_all();
    };
    StatusOr<std::unique_ptr<client::LeaderElector>> created =
        client::LeaderElector::Create(**api, RealClock(), le);
    if (!created.ok()) {
      pthread_kill(waiter.native_handle(), SIGTERM);
      waiter.join();
      return Fail("leader election", created.status());
    }
    elector = std::move(*created);
    election = std::thread([&] { elector->Run(); });
  } else {
    Status s = manager.Start();
    if (!s.ok()) {
      pthread_kill(waiter.native_handle(), SIGTERM);
      waiter.join();
      return Fail("start", s);
    }
  }
  std::printf("controller-manager %s running against %s\n", identity.c_str(),
              config->server.c_str());
  std::fflush(stdout);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stop || lost; });
  }
  manager.Stop();
  if (elector) {
    elector->Stop();
    election.join();
  }
  if (!stop) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return lost && !stop ? 1 : 0;
}

// The controllers inside `draplane serve` (serve_command.cc), as system:kube-controller-manager
// over the server's loopback listener, without leader election (one process). Garbage
// collection and namespace deletion are left to the server, which does them itself
// (server/lifecycle/lifecycle.h).
class EmbeddedControllerManager final : public server::EmbeddedComponent {
 public:
  explicit EmbeddedControllerManager(bool simulate_kubelet) : simulate_kubelet_(simulate_kubelet) {}

  std::string name() const override { return "controller-manager"; }

  Status Start(const server::ClientCredentials& credentials) override {
    client::RestConfig config;
    config.server = credentials.server_url;
    config.ca_pem = credentials.ca_pem;
    config.bearer_token = credentials.token;
    config.user_agent = "draplane-controller-manager";
    DRAPLANE_ASSIGN_OR_RETURN(api_, client::CreateRestClient(config));
    controllers::ControllerManagerOptions options;
    options.garbage_collector = false;
    options.namespaces = false;
    options.simulate_kubelet = simulate_kubelet_;
    manager_ = std::make_unique<controllers::ControllerManager>(*api_, RealClock(), options);
    return manager_->Start();
  }

  void Stop() override {
    if (manager_) manager_->Stop();
  }

 private:
  bool simulate_kubelet_;
  std::unique_ptr<client::ApiClient> api_;
  std::unique_ptr<controllers::ControllerManager> manager_;
};

}  // namespace

Status EmbedControllerManager(server::Server& server, bool simulate_kubelet) {
  return server.Embed(std::make_unique<EmbeddedControllerManager>(simulate_kubelet),
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
                  "Controllers to run: resourceclaim, garbagecollector, namespace")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--simulate-kubelet", flags->simulate_kubelet,
                "Play the kubelet for every node: bound Pods run, deleted Pods terminate");
  cmd->add_option("--leader-elect", flags->leader_elect,
                  "Hold a coordination.k8s.io Lease so that only one replica runs")
      ->capture_default_str();
  cmd->add_option("--leader-elect-lease-name", flags->lease_name)->capture_default_str();
  cmd->add_option("--leader-elect-namespace", flags->lease_namespace)->capture_default_str();
  cmd->add_option("--identity", flags->identity, "Replica identity (default: generated)");
  cmd->callback([flags] {
    int code = RunControllerManager(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
