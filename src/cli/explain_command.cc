// `draplane explain pod NS/NAME`: why a Pod is where it is, or why it is still pending, against
// the live cluster (scheduler/explain_pod.h, which reads nodes, pods, claims, device classes and
// resource slices once and writes nothing).
#include <cstdio>
#include <memory>

#include "allocator/features.h"
#include "cli/commands.h"
#include "cli/in_process_transport.h"
#include "cli/object_ref.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "common/status_macros.h"
#include "scheduler/explain_pod.h"
#include "server/authz/bootstrap.h"

namespace draplane::cli {
namespace {

struct ExplainFlags {
  std::string kubeconfig;
  std::string context;
  std::string pod;
  std::string output = "text";
  std::string kubernetes_version = "1.36";
  std::string feature_gates;
  bool brief = false;
};

int RunExplainPod(const ExplainFlags& flags) {
  // Only the object asked about being absent exits 1 (as `kubectl get`); a missing kubeconfig
  // or any other failure is a usage or environment error.
  auto fail = [](std::string_view what, const Status& s) {
    return ReportFailure("explain", what, s);
  };
  auto fail_lookup = [](std::string_view what, const Status& s) {
    return ReportFailure("explain", what, s, kExplainNotFoundExit);
  };
  if (flags.output != "text" && flags.output != "json") {
    return fail("-o", InvalidArgumentError("output must be text or json"));
  }
  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return fail("kubeconfig", config.status());
  // The reference was checked when the arguments were parsed (NamespacedNameCheck).
  StatusOr<NamespacedName> ref = ParseNamespacedName(flags.pod, config->default_namespace, "pod");
  if (!ref.ok()) return fail("pod", ref.status());
  const std::string& ns = ref->ns;
  const std::string& name = ref->name;
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return fail("client", api.status());
  StatusOr<allocator::Features> features = allocator::DefaultFeatures(flags.kubernetes_version);
  if (!features.ok()) return fail("--kubernetes-version", features.status());
  if (!flags.feature_gates.empty()) {
    features = allocator::ApplyFeatureGates(flags.feature_gates, *features);
    if (!features.ok()) return fail("--feature-gates", features.status());
  }

  StatusOr<scheduler::PodExplanation> e = scheduler::ExplainPodFromApi(**api, ns, name, *features);
  if (!e.ok() && e.status().code() == StatusCode::kFailedPrecondition &&
      e.status().message().find("forbidden") != std::string_view::npos) {
    // The explanation reads the whole cluster, which a tenant may not; the server computes it
    // as its own identity for anyone who may read the Pod (pod_explanations.h).
    return fail("pod " + ns + "/" + name,
                Status(e.status().code(), std::string(e.status().message()) +
                                              "; without cluster-wide read access, ask the "
                                              "server: kubectl get podexplanation " +
                                              name + " -n " + ns + " -o yaml"));
  }
  if (!e.ok()) return fail_lookup("pod " + ns + "/" + name, e.status());
  std::string out = flags.output == "json" ? e->ToJson() + "\n" : e->ToText(!flags.brief);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

Status ServePodExplanations(server::Server& server, const allocator::Features& features) {
  server::ClientCredentials credentials =
      server.IssueCredentials(std::string(server::authz::kPodExplainerUser), {});
  DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<client::ApiClient> api,
                            NewEmbeddedClient(credentials, "draplane-pod-explainer"));
  std::shared_ptr<client::ApiClient> shared_api = std::move(api);
  server.ServePodExplanations(
      [shared_api, features](const std::string& ns,
                             const std::string& name) -> StatusOr<std::string> {
        DRAPLANE_ASSIGN_OR_RETURN(scheduler::PodExplanation e,
                                  scheduler::ExplainPodFromApi(*shared_api, ns, name, features));
        return e.ToJson();
      });
  return Status::Ok();
}

void AddExplainCommand(CLI::App& app) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* cmd = app.add_subcommand("explain", "Explain scheduling decisions against a cluster");
  cmd->require_subcommand(1);
  CLI::App* pod = cmd->add_subcommand(
      "pod", "Why a Pod is on its node, or every node's reason for not taking it");
  pod->add_option("pod", flags->pod, "NAMESPACE/NAME (or NAME in the context's namespace)")
      ->required()
      ->check(NamespacedNameCheck("pod"));
  pod->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  pod->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  pod->add_option("-o,--output", flags->output, "text or json")->capture_default_str();
  pod->add_flag("--brief", flags->brief, "Leave out the per-device explanations");
  pod->add_option("--kubernetes-version", flags->kubernetes_version,
                  "Default DRA feature gates of this release (1.34 ... 1.37)")
      ->capture_default_str();
  pod->add_option("--feature-gates", flags->feature_gates, "Gate=true|false,...");
  pod->callback([flags] {
    int code = RunExplainPod(*flags);
    if (code != 0) throw CommandExit{code};
  });
  AddExplainClaimCommand(*cmd);
}

}  // namespace draplane::cli
