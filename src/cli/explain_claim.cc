#include "cli/explain_claim.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "api/codec/json.h"
#include "api/codec/yaml.h"
#include "api/gen/draplane_v1alpha1_codec.h"
#include "cli/commands.h"
#include "cli/object_ref.h"
#include "client/kubeconfig.h"
#include "client/rest_client.h"
#include "client/typed.h"

namespace draplane::cli {
namespace {

namespace d = api::draplanev1alpha1;
namespace rv1 = api::resourcev1;

bool NamesClaim(const d::DecisionClaim& entry, const rv1::ResourceClaim& claim) {
  if (!entry.uid.empty() && !claim.metadata.uid.empty()) return entry.uid == claim.metadata.uid;
  return entry.name == claim.metadata.name;
}

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

void AppendRequest(const d::DecisionRequest& request, std::string* out) {
  *out += "  Request " + request.name + ":\n";
  std::string chosen =
      request.subrequest.empty() ? std::string("exactly") : "subrequest " + request.subrequest;
  if (!request.device_class_name.empty()) chosen += " (class " + request.device_class_name + ")";
  *out += "    chosen:    " + chosen + "\n";
  std::vector<std::string> devices;
  for (const d::DecisionDevice& device : request.devices) {
    std::string id = device.driver + "/" + device.pool + "/" + device.device;
    if (device.share_id.has_value()) id += " (share " + *device.share_id + ")";
    if (device.admin_access.value_or(false)) id += " (admin access)";
    devices.push_back(std::move(id));
  }
  *out +=
      "    devices:   " + (devices.empty() ? std::string("<none>") : Join(devices, ", ")) + "\n";
  for (const d::DecisionTier& tier : request.tiers_not_taken) {
    *out += "    not taken: subrequest " + tier.subrequest + "\n";
    for (const d::DecisionReason& reason : tier.reasons) {
      std::string nodes = Join(reason.nodes, ", ");
      if (reason.node_count > static_cast<int32_t>(reason.nodes.size())) nodes += ", ...";
      *out += "      " + reason.reason;
      if (!reason.message.empty()) *out += ": " + reason.message;
      *out += " (" + std::to_string(reason.node_count) + " node" +
              (reason.node_count == 1 ? "" : "s") + (nodes.empty() ? "" : ": " + nodes) + ")\n";
    }
  }
}

struct ExplainClaimFlags {
  std::string kubeconfig;
  std::string context;
  std::string claim;
  std::string output = "text";
  bool all = false;
};

StatusOr<std::vector<d::AllocationDecision>> ListDecisions(client::ApiClient& api,
                                                           const std::string& ns,
                                                           const std::string& field_selector) {
  std::vector<d::AllocationDecision> out;
  client::ListOptions options;
  options.limit = 500;
  options.field_selector = field_selector;
  while (true) {
    StatusOr<client::ObjectList<d::AllocationDecision>> page =
        client::List<d::AllocationDecision>(api, ns, options);
    if (!page.ok()) return page.status();
    for (d::AllocationDecision& item : page->items) out.push_back(std::move(item));
    if (page->continue_token.empty()) return out;
    options.continue_token = page->continue_token;
  }
}

int RunExplainClaim(const ExplainClaimFlags& flags) {
  // Only the object asked about being absent exits 1 (as `kubectl get`); a missing kubeconfig
  // or any other failure is a usage or environment error.
  auto fail = [](std::string_view what, const Status& s) {
    return ReportFailure("explain claim", what, s);
  };
  auto fail_lookup = [](std::string_view what, const Status& s) {
    return ReportFailure("explain claim", what, s, kExplainNotFoundExit);
  };
  if (flags.output != "text" && flags.output != "json" && flags.output != "yaml") {
    return fail("-o", InvalidArgumentError("output must be text, yaml or json"));
  }
  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return fail("kubeconfig", config.status());
  // The reference was checked when the arguments were parsed (NamespacedNameCheck).
  StatusOr<NamespacedName> ref =
      ParseNamespacedName(flags.claim, config->default_namespace, "claim");
  if (!ref.ok()) return fail("claim", ref.status());
  const std::string& ns = ref->ns;
  const std::string& name = ref->name;
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return fail("client", api.status());
  StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(**api, ns, name);
  if (!claim.ok()) return fail_lookup("resourceclaim " + ns + "/" + name, claim.status());

  // The Pods the claim is (or was) for narrow the search; without one every record of the
  // namespace is read (bounded by the retention cap).
  std::vector<d::AllocationDecision> candidates;
  for (const auto& [pod_name, pod_uid] : ClaimPods(*claim)) {
    std::string selector =
        pod_uid.empty() ? "spec.pod.name=" + pod_name : "spec.pod.uid=" + pod_uid;
    StatusOr<std::vector<d::AllocationDecision>> found = ListDecisions(**api, ns, selector);
    if (!found.ok()) return fail("list allocationdecisions in " + ns, found.status());
    for (d::AllocationDecision& decision : *found) candidates.push_back(std::move(decision));
  }
  std::vector<d::AllocationDecision> decisions = DecisionsForClaim(*claim, std::move(candidates));
  if (decisions.empty()) {
    StatusOr<std::vector<d::AllocationDecision>> all = ListDecisions(**api, ns, "");
    if (!all.ok()) return fail("list allocationdecisions in " + ns, all.status());
    decisions = DecisionsForClaim(*claim, std::move(all).value());
  }
  if (decisions.empty()) {
    std::string why;
    if (claim->status.allocation.has_value()) {
      why =
          "no AllocationDecision names this claim (it was allocated by another scheduler, or "
          "its record has passed the retention bounds)";
    } else {
      // Pending: a record is written when the scheduler allocates; why it has not is the Pod's.
      why =
          "the claim is not allocated, and a decision is recorded only when draplane's "
          "scheduler allocates it";
      if (std::vector<std::pair<std::string, std::string>> pods = ClaimPods(*claim);
          !pods.empty()) {
        why +=
            "; `draplane explain pod " + ns + "/" + pods.front().first + "` says why its Pod waits";
      }
    }
    return fail_lookup("resourceclaim " + ns + "/" + name, NotFoundError(why));
  }
  if (!flags.all) decisions.resize(1);
  std::string out;
  if (flags.output == "text") {
    for (size_t i = 0; i < decisions.size(); ++i) {
      if (i > 0) out += "\n";
      out += DecisionText(decisions[i], *claim);
    }
  } else {
    boost::json::value value;
    if (decisions.size() == 1) {
      value = Encode(decisions[0]);
    } else {
      d::AllocationDecisionList list;
      list.items = std::move(decisions);
      value = Encode(list);
    }
    out =
        flags.output == "json" ? api::codec::WriteJson(value) + "\n" : api::codec::WriteYaml(value);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

std::vector<d::AllocationDecision> DecisionsForClaim(const rv1::ResourceClaim& claim,
                                                     std::vector<d::AllocationDecision> decisions) {
  std::vector<d::AllocationDecision> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (d::AllocationDecision& decision : decisions) {
    bool names = std::any_of(decision.spec.claims.begin(), decision.spec.claims.end(),
                             [&](const d::DecisionClaim& c) { return NamesClaim(c, claim); });
    if (!names || !seen.insert({decision.metadata.namespace_, decision.metadata.name}).second) {
      continue;
    }
    out.push_back(std::move(decision));
  }
  std::sort(out.begin(), out.end(),
            [](const d::AllocationDecision& a, const d::AllocationDecision& b) {
              if (a.spec.time != b.spec.time) return a.spec.time > b.spec.time;
              return a.metadata.name < b.metadata.name;
            });
  return out;
}

std::vector<std::pair<std::string, std::string>> ClaimPods(const rv1::ResourceClaim& claim) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& consumer : claim.status.reserved_for) {
    if (consumer.resource == "pods" && consumer.api_group.empty()) {
      out.emplace_back(consumer.name, consumer.uid);
    }
  }
  for (const auto& owner : claim.metadata.owner_references) {
    if (owner.kind == "Pod" && owner.api_version == "v1") out.emplace_back(owner.name, owner.uid);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// Whether the devices `decision` gave the claim are the claim's allocation now.
bool AllocationMatches(const d::AllocationDecision& decision, const rv1::ResourceClaim& claim) {
  using DeviceId = std::tuple<std::string, std::string, std::string, std::string>;
  std::multiset<DeviceId> decided, now;
  for (const d::DecisionClaim& entry : decision.spec.claims) {
    if (!NamesClaim(entry, claim)) continue;
    for (const d::DecisionRequest& request : entry.requests) {
      for (const d::DecisionDevice& device : request.devices) {
        decided.emplace(device.driver, device.pool, device.device, device.share_id.value_or(""));
      }
    }
  }
  for (const rv1::DeviceRequestAllocationResult& result :
       claim.status.allocation->devices.results) {
    now.emplace(result.driver, result.pool, result.device, result.share_id.value_or(""));
  }
  return decided == now;
}

}  // namespace

std::string DecisionText(const d::AllocationDecision& decision, const rv1::ResourceClaim& claim) {
  const d::AllocationDecisionSpec& spec = decision.spec;
  std::string out = "Claim " + claim.metadata.namespace_ + "/" + claim.metadata.name;
  if (!claim.metadata.uid.empty()) out += " (uid " + claim.metadata.uid + ")";
  out += "\nDecision " + decision.metadata.namespace_ + "/" + decision.metadata.name + " at " +
         spec.time.text();
  std::string scheduler = spec.scheduler.name;
  if (!spec.scheduler.instance.empty()) {
    scheduler += (scheduler.empty() ? "" : ", replica ") + spec.scheduler.instance;
  }
  if (!scheduler.empty()) out += " by " + scheduler;
  out += "\n  Pod:       " + spec.pod.name;
  if (!spec.pod.uid.empty()) out += " (uid " + spec.pod.uid + ")";
  out += "\n  Outcome:   " + spec.outcome;
  if (!spec.node_name.empty()) out += " on node " + spec.node_name;
  if (spec.nodes_evaluated > 0) {
    // The search stops at a node no later one can outscore (docs/design/scheduler.md): nodes
    // not evaluated are not counted, so this is not "how full the cluster was".
    out += ", " + std::to_string(spec.nodes_feasible) + " feasible of " +
           std::to_string(spec.nodes_evaluated) + " nodes evaluated";
  }
  out += "\n";
  // The record is history: whether it still describes the claim is the claim's status (a
  // record of an attempt that allocated nothing has nothing to compare).
  if (spec.outcome == "Allocated" && !claim.status.allocation.has_value()) {
    out +=
        "  Now:       not allocated (deallocated since: the devices and charges below were "
        "given back)\n";
  } else if (spec.outcome == "Allocated" && !AllocationMatches(decision, claim)) {
    out += "  Now:       allocated differently (a later allocation; --all lists every record)\n";
  }
  if (!spec.message.empty()) out += "  Message:   " + spec.message + "\n";
  std::vector<std::string> others;
  for (const d::DecisionClaim& entry : spec.claims) {
    if (!NamesClaim(entry, claim)) {
      others.push_back(entry.name);
      continue;
    }
    for (const d::DecisionRequest& request : entry.requests) AppendRequest(request, &out);
    if (!entry.charges.empty()) {
      std::vector<std::string> charges;
      for (const auto& [key, value] : entry.charges)
        charges.push_back(key + "=" + value.ToString());
      out += "  Charged:   " + Join(charges, ", ") + "\n";
    }
  }
  for (const d::PolicyInput& input : spec.policy_version.inputs) {
    std::string who = input.namespace_.empty() ? input.name : input.namespace_ + "/" + input.name;
    out += "  Policy:    " + input.kind + " " + who + " at resourceVersion " +
           input.resource_version + (input.mode.empty() ? "" : " (" + input.mode + ")") + "\n";
  }
  if (!spec.policy_version.digest.empty()) {
    out += "  Digest:    " + spec.policy_version.digest + "\n";
  }
  if (!others.empty()) out += "  Also in this decision: " + Join(others, ", ") + "\n";
  if (spec.truncated) out += "  (the record was summarised: some entries were left out)\n";
  return out;
}

void AddExplainClaimCommand(CLI::App& explain) {
  auto flags = std::make_shared<ExplainClaimFlags>();
  CLI::App* cmd = explain.add_subcommand(
      "claim", "The stored decision record of a claim's allocation (AllocationDecision)");
  cmd->add_option("claim", flags->claim, "NAMESPACE/NAME (or NAME in the context's namespace)")
      ->required()
      ->check(NamespacedNameCheck("claim"));
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("-o,--output", flags->output, "text, yaml or json")->capture_default_str();
  cmd->add_flag("--all", flags->all,
                "Every record of the claim, newest first, not just the newest");
  cmd->callback([flags] {
    int code = RunExplainClaim(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
