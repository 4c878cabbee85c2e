// `draplane explain pod NS/NAME`: why a Pod is where it is, or why it is still pending, against
// the live cluster (scheduler/explain_pod.h). Reads nodes, pods, claims, device classes and
// resource slices once; writes nothing.
#include <cstdio>
#include <memory>

#include "allocator/features.h"
#include "cli/commands.h"
#include "cli/list_all.h"
#include "cli/object_ref.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "client/typed.h"
#include "scheduler/explain_pod.h"

namespace draplane::cli {
namespace {

namespace rv1 = api::resourcev1;

struct ExplainFlags {
  std::string kubeconfig;
  std::string context;
  std::string pod;
  std::string output = "text";
  std::string kubernetes_version = "1.36";
  std::string feature_gates;
  bool brief = false;
};

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "draplane explain: %s: %s\n", what.c_str(), s.ToString().c_str());
  return s.code() == StatusCode::kNotFound ? 1 : 2;
}

int RunExplainPod(const ExplainFlags& flags) {
  if (flags.output != "text" && flags.output != "json") {
    return Fail("-o", InvalidArgumentError("output must be text or json"));
  }
  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return Fail("kubeconfig", config.status());
  // The reference was checked when the arguments were parsed (NamespacedNameCheck).
  StatusOr<NamespacedName> ref = ParseNamespacedName(flags.pod, config->default_namespace, "pod");
  if (!ref.ok()) return Fail("pod", ref.status());
  const std::string& ns = ref->ns;
  const std::string& name = ref->name;
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return Fail("client", api.status());
  StatusOr<allocator::Features> features = allocator::DefaultFeatures(flags.kubernetes_version);
  if (!features.ok()) return Fail("--kubernetes-version", features.status());
  if (!flags.feature_gates.empty()) {
    features = allocator::ApplyFeatureGates(flags.feature_gates, *features);
    if (!features.ok()) return Fail("--feature-gates", features.status());
  }

  StatusOr<api::corev1::Pod> pod = client::Get<api::corev1::Pod>(**api, ns, name);
  if (!pod.ok()) return Fail("pod " + ns + "/" + name, pod.status());

  scheduler::ClusterState cluster;
  StatusOr<std::vector<rv1::DeviceClass>> classes = ListAll<rv1::DeviceClass>(**api);
  if (!classes.ok()) return Fail("list deviceclasses", classes.status());
  for (rv1::DeviceClass& c : *classes) {
    cluster.UpsertClass(std::make_shared<const rv1::DeviceClass>(std::move(c)));
  }
  StatusOr<std::vector<rv1::ResourceSlice>> slices = ListAll<rv1::ResourceSlice>(**api);
  if (!slices.ok()) return Fail("list resourceslices", slices.status());
  for (rv1::ResourceSlice& s : *slices) {
    cluster.UpsertSlice(std::make_shared<const rv1::ResourceSlice>(std::move(s)));
  }
  StatusOr<std::vector<api::corev1::Node>> nodes = ListAll<api::corev1::Node>(**api);
  if (!nodes.ok()) return Fail("list nodes", nodes.status());
  for (api::corev1::Node& n : *nodes) {
    cluster.UpsertNode(std::make_shared<const api::corev1::Node>(std::move(n)));
  }
  StatusOr<std::vector<rv1::ResourceClaim>> claims = ListAll<rv1::ResourceClaim>(**api);
  if (!claims.ok()) return Fail("list resourceclaims", claims.status());
  for (rv1::ResourceClaim& c : *claims) {
    cluster.UpsertClaim(std::make_shared<const rv1::ResourceClaim>(std::move(c)));
  }
  // The quotas of the Pod's namespace: Allocation-mode ones are checked inside the search.
  StatusOr<client::ObjectList<api::corev1::ResourceQuota>> quotas =
      client::List<api::corev1::ResourceQuota>(**api, ns);
  if (!quotas.ok()) return Fail("list resourcequotas", quotas.status());
  for (api::corev1::ResourceQuota& q : quotas->items) {
    cluster.UpsertQuota(std::make_shared<const api::corev1::ResourceQuota>(std::move(q)));
  }
  StatusOr<std::vector<api::corev1::Pod>> pods = ListAll<api::corev1::Pod>(**api);
  if (!pods.ok()) return Fail("list pods", pods.status());
  for (api::corev1::Pod& p : *pods) {
    if (!p.spec.node_name.empty()) {
      cluster.UpsertAssignedPod(std::make_shared<const api::corev1::Pod>(std::move(p)));
    }
  }

  scheduler::PodExplanation e = scheduler::ExplainPod(cluster, *pod, *features);
  std::string out = flags.output == "json" ? e.ToJson() + "\n" : e.ToText(!flags.brief);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

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
