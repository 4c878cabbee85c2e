// `draplane kubeconfig`: mints an identity (a bearer token, or a client certificate) for the
// API server whose data directory is given, and prints a kubeconfig for it on stdout.
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/object_ref.h"
#include "common/clock.h"
#include "common/random.h"
#include "server/auth/kubeconfig.h"

namespace draplane::cli {

void AddKubeconfigCommand(CLI::App& app) {
  struct Flags {
    server::auth::IdentityRequest request;
    std::string groups;
  };
  auto flags = std::make_shared<Flags>();
  flags->request.data_dir = "./draplane-data";
  CLI::App* cmd = app.add_subcommand(
      "kubeconfig", "Create an identity for the API server and print its kubeconfig");
  cmd->add_option("--data-dir", flags->request.data_dir, "The server's data directory")
      ->capture_default_str();
  cmd->add_option("--user", flags->request.user,
                  "User name (e.g. alice, system:node:gpu-1, system:kube-scheduler)")
      ->required();
  cmd->add_option("--groups", flags->groups, "Comma-separated groups (e.g. system:nodes)");
  cmd->add_option("--server", flags->request.server,
                  "Server URL (default: the one the server last wrote to <data-dir>/server-url)");
  cmd->add_option("--namespace", flags->request.default_namespace,
                  "Default namespace of the kubeconfig's context")
      ->check(NamespaceNameCheck("--namespace"));
  cmd->add_flag("--client-certificate", flags->request.client_certificate,
                "Issue a client certificate (CN=user, O=groups) instead of a token");
  cmd->callback([flags] {
    std::stringstream groups(flags->groups);
    std::string group;
    while (std::getline(groups, group, ',')) {
      if (!group.empty()) flags->request.groups.push_back(group);
    }
    StatusOr<std::string> config =
        server::auth::MintKubeconfig(flags->request, RealClock(), SecureRandom());
    if (!config.ok()) {
      std::fprintf(stderr, "draplane kubeconfig: %s\n", config.status().ToString().c_str());
      throw CommandExit{2};
    }
    std::fwrite(config->data(), 1, config->size(), stdout);
  });
}

}  // namespace draplane::cli
