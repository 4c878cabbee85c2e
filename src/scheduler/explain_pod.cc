#include "scheduler/explain_pod.h"

#include <algorithm>
#include <boost/json.hpp>

#include "api/labels/node_isolation.h"
#include "api/labels/taints.h"
#include "api/pods.h"
#include "client/events.h"
#include "client/list_all.h"
#include "client/typed.h"
#include "common/random.h"
#include "scheduler/explain.h"
#include "scheduler/profile.h"
#include "scheduler/starvation_holds.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

namespace {

ClaimView ViewClaim(const ClusterState& cluster, const Pod& pod, const std::string& pod_claim,
                    const ClusterState::ClaimPtr& claim) {
  ClaimView v;
  v.pod_claim = pod_claim;
  if (claim == nullptr) return v;
  v.claim = claim->metadata.name;
  if (!claim->status.allocation) {
    v.state = "not allocated";
  } else {
    v.state = "allocated";
    for (const rv1::DeviceRequestAllocationResult& r : claim->status.allocation->devices.results) {
      v.devices.push_back(r.driver + "/" + r.pool + "/" + r.device + " (" + r.request + ")");
    }
  }
  for (const auto& r : claim->status.reserved_for) v.reserved_for.push_back(r.name);
  (void)cluster;
  (void)pod;
  return v;
}

std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// A bound Pod that is not running yet waits for its node to prepare its devices: what the node
// agent reported (the Pod's DevicesPrepared condition, the node's isolation after repeated
// failures, docs/design/agent.md "Failing nodes") is the explanation, not the scheduler's.
void AddPreparation(const ClusterState& cluster, const Pod& pod, Timestamp now,
                    std::string* summary) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "DevicesPrepared" && c.status == "False") {
      *summary += "; devices not prepared: " + c.message;
    }
  }
  const NodeInfo* node = cluster.FindNode(pod.spec.node_name);
  if (node == nullptr || !api::labels::IsIsolated(node->node(), now)) return;
  *summary += "; the node is isolated after repeated device prepare failures";
  auto until = node->node().metadata.annotations.find(api::labels::kPrepareFailuresUntilAnnotation);
  if (until != node->node().metadata.annotations.end()) *summary += " until " + until->second;
  for (const auto& c : node->node().status.conditions) {
    if (c.type == api::labels::kPrepareFailuresCondition && c.status == "True") {
      *summary += " (" + c.message + ")";
    }
  }
}

// A bound Pod's node that stopped reporting (the node lifecycle controller set Ready Unknown, or
// the kubelet player reported False) and, while the node has NoExecute taints, when the taint
// eviction controller evicts the Pod (api/labels/taints.h).
void AddNodeHealth(const ClusterState& cluster, const Pod& pod, Timestamp now,
                   std::string* summary) {
  const NodeInfo* node = cluster.FindNode(pod.spec.node_name);
  if (node == nullptr) return;
  for (const auto& c : node->node().status.conditions) {
    if (c.type != "Ready" || c.status == "True") continue;
    *summary += "; the node is not ready (Ready " + c.status;
    if (!c.last_transition_time.empty()) *summary += " since " + c.last_transition_time.text();
    if (!c.message.empty()) *summary += ": " + c.message;
    *summary += ")";
  }
  std::optional<Timestamp> evicted = api::labels::NoExecuteEvictionTime(
      pod, node->node().spec.taints, [now](const api::corev1::Taint&) { return now; });
  if (!evicted) return;
  std::string taints;
  std::string undated;  // counted from now here, from when the controller saw them there
  for (const api::corev1::Taint& t : node->node().spec.taints) {
    if (t.effect != "NoExecute") continue;
    taints += (taints.empty() ? "" : ", ") + t.key + ":NoExecute";
    if (!t.time_added) undated += (undated.empty() ? "" : ", ") + t.key;
  }
  if (*evicted <= now) {
    *summary += "; it is being evicted for the node's taints " + taints;
  } else if (undated.empty()) {
    *summary += "; it will be evicted at " + api::Time::FromTimestamp(*evicted).text() +
                " for the node's taints " + taints + " unless they go first";
  } else {
    *summary += "; it will be evicted by " + api::Time::FromTimestamp(*evicted).text() +
                " at the latest for the node's taints " + taints + " unless they go first (" +
                undated +
                " carry no timeAdded: the taint eviction controller counts from when it first "
                "saw them)";
  }
}

// The claim controller's newest FailedResourceClaimCreation Event of each PodResourceClaim whose
// claim is not created yet ("PodResourceClaim <entry>: <why>", perhaps aggregated), added to the
// claim and the summary: without it the Pod only "waits for its claim" while an Admission-mode
// quota refuses the claim. Best effort: Events are history, and a failed read leaves them out.
void AddClaimCreationFailures(client::ApiClient& api, const Pod& pod, PodExplanation* e) {
  if (std::none_of(e->claims.begin(), e->claims.end(),
                   [](const ClaimView& c) { return c.state == "not created yet"; })) {
    return;
  }
  client::ListOptions options;
  options.field_selector =
      "involvedObject.uid=" + pod.metadata.uid + ",reason=FailedResourceClaimCreation";
  StatusOr<client::ObjectList<api::corev1::Event>> events =
      client::List<api::corev1::Event>(api, pod.metadata.namespace_, options);
  if (!events.ok()) return;
  auto last_seen = [](const api::corev1::Event& event) {
    return event.last_timestamp.empty() ? event.event_time : event.last_timestamp;
  };
  for (ClaimView& c : e->claims) {
    if (c.state != "not created yet") continue;
    const std::string prefix = "PodResourceClaim " + c.pod_claim + ": ";
    const api::corev1::Event* newest = nullptr;
    std::string_view why;
    for (const api::corev1::Event& event : events->items) {
      std::string_view message = event.message;
      if (message.starts_with(client::kCombinedEventPrefix)) {
        message.remove_prefix(client::kCombinedEventPrefix.size());
      }
      if (!message.starts_with(prefix)) continue;
      if (newest != nullptr && last_seen(event) <= last_seen(*newest)) continue;
      newest = &event;
      why = message.substr(prefix.size());
    }
    if (newest == nullptr) continue;
    c.creation_failure = std::string(why);
    c.creation_failure_time = last_seen(*newest).text();
    e->summary += "; claim " + c.pod_claim + " could not be created: " + c.creation_failure;
  }
}

}  // namespace

PodExplanation ExplainPod(ClusterState& cluster, const Pod& pod,
                          const allocator::Features& features, const Clock& clock,
                          std::vector<allocator::DeviceHold> holds) {
  PodExplanation out;
  out.pod = pod.metadata.namespace_ + "/" + pod.metadata.name;
  out.phase = pod.status.phase.empty() ? "Pending" : pod.status.phase;
  out.node = pod.spec.node_name;
  for (const auto& c : pod.status.conditions) {
    if (c.type == "PodScheduled" && c.status == "False") out.scheduled_message = c.message;
  }
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName n = ClaimNameForPod(pod, entry);
    if (!n.error.empty() || n.skip) {
      ClaimView v;
      v.pod_claim = entry.name;
      v.state = n.skip ? "not needed" : "not created yet";
      out.claims.push_back(std::move(v));
      continue;
    }
    ClaimView v =
        ViewClaim(cluster, pod, entry.name, cluster.FindClaim(pod.metadata.namespace_, n.name));
    if (v.claim.empty()) {
      v.claim = n.name;
      v.state = "missing";
    }
    out.claims.push_back(std::move(v));
  }
  if (ClusterState::ClaimPtr special = cluster.FindExtendedResourceClaim(pod.metadata.uid)) {
    out.claims.push_back(ViewClaim(cluster, pod, "extended-resources", special));
  }
  if (!pod.spec.node_name.empty()) {
    out.summary = "bound to node " + pod.spec.node_name;
    if (out.phase == "Pending") AddPreparation(cluster, pod, clock.Now(), &out.summary);
    AddNodeHealth(cluster, pod, clock.Now(), &out.summary);
    return out;
  }

  const allocator::ResourceList held =
      cluster.ledger().holdings().Usage(pod.metadata.namespace_, allocator::Holdings::Scope::kAll);
  for (const allocator::QuotaBudget& q : cluster.AllocationQuotas(pod.metadata.namespace_)) {
    for (const auto& [key, hard] : q.hard) {
      auto used = q.used.find(key);
      auto holds = held.find(key);
      out.quotas.push_back("quota " + q.namespace_ + "/" + q.name + " " + key + ": used " +
                           (used == q.used.end() ? "0" : used->second.ToString()) + " of " +
                           hard.ToString() + " (allocations hold " +
                           (holds == held.end() ? "0" : holds->second.ToString()) + ")");
    }
  }

  Framework framework;
  DynamicResourcesDeps deps;
  deps.cluster = &cluster;
  deps.run_async = [](std::function<void()>) {};
  deps.clock = &clock;
  if (!holds.empty()) deps.holds = [held = std::move(holds)] { return held; };
  std::unique_ptr<Random> random = NewSeededRandom(1);
  deps.random = random.get();
  DynamicResourcesOptions options;
  options.features = features;
  options.explain_budget = 1 << 30;
  options.keep_explanations = true;
  options.confirm_allocations = false;
  AddDefaultPlugins(framework, deps, options, nullptr);
  CycleState state;
  PodInfo info;
  info.pod = std::make_shared<const Pod>(pod);
  info.requests = ComputePodRequests(pod);
  PluginStatus gate = framework.RunPreEnqueue(pod);
  if (!gate.ok()) {
    out.pre_filter = gate.plugin() + ": " + gate.Message();
    out.summary = "waiting before scheduling: " + gate.Message();
    return out;
  }
  Framework::Evaluation e = framework.Evaluate(state, info, cluster);
  if (e.pre_filter) {
    out.pre_filter = e.pre_filter->plugin() + ": " + e.pre_filter->Message();
    Diagnosis d;
    d.total_nodes = static_cast<int>(cluster.nodes().size());
    d.pre_filter = e.pre_filter;
    out.summary = FailedSchedulingMessage(d);
    return out;
  }
  Diagnosis diagnosis;
  diagnosis.total_nodes = static_cast<int>(cluster.nodes().size());
  std::vector<std::string> fitting;
  for (NodeVerdict& v : e.nodes) {
    NodeView n;
    n.node = v.node;
    n.fits = v.status.ok();
    if (!n.fits) {
      n.plugin = v.status.plugin();
      n.reason = v.status.Message();
      diagnosis.nodes.push_back(v);
    } else {
      fitting.push_back(v.node);
    }
    if (const allocator::Explanation* x = DeviceExplanation(state, v.node)) n.devices = *x;
    out.nodes.push_back(std::move(n));
  }
  if (fitting.empty()) {
    out.summary = FailedSchedulingMessage(diagnosis);
  } else {
    out.summary = "fits on " + std::to_string(fitting.size()) + " of " +
                  std::to_string(e.nodes.size()) + " nodes: ";
    for (size_t i = 0; i < fitting.size() && i < 10; ++i) {
      out.summary += (i > 0 ? ", " : "") + fitting[i];
    }
    if (fitting.size() > 10) out.summary += ", ...";
  }
  return out;
}

std::string PodExplanation::ToText(bool devices) const {
  std::string out = "Pod " + pod + ": " + phase;
  if (!node.empty()) out += " on node " + node;
  out += "\n";
  if (!scheduled_message.empty()) out += "  PodScheduled=False: " + scheduled_message + "\n";
  if (!claims.empty()) {
    out += "Claims:\n";
    for (const ClaimView& c : claims) {
      out += "  " + c.pod_claim;
      if (!c.claim.empty()) out += " -> " + c.claim;
      out += ": " + c.state + "\n";
      if (!c.creation_failure.empty()) {
        out +=
            "      creation failed (" + c.creation_failure_time + "): " + c.creation_failure + "\n";
      }
      for (const std::string& d : c.devices) out += "      device " + d + "\n";
      if (!c.reserved_for.empty()) {
        out += "      reserved for";
        for (const std::string& r : c.reserved_for) out += " " + r;
        out += "\n";
      }
    }
  }
  if (!quotas.empty()) {
    out += "Quotas (Allocation mode, checked for every candidate device):\n";
    for (const std::string& q : quotas) out += "  " + q + "\n";
  }
  if (pre_filter) out += "Rejected before node evaluation: " + *pre_filter + "\n";
  if (!nodes.empty()) {
    out += "Nodes (" + std::to_string(nodes.size()) + "):\n";
    for (const NodeView& n : nodes) {
      out += "  " + n.node + ": ";
      out += n.fits ? std::string("fits") : n.plugin + ": " + n.reason;
      out += "\n";
      if (devices && n.devices) out += Indent(n.devices->ToText(), "      ");
    }
  }
  out += "Summary: " + summary + "\n";
  return out;
}

std::string PodExplanation::ToJson() const {
  boost::json::object o;
  o["pod"] = pod;
  o["phase"] = phase;
  if (!node.empty()) o["node"] = node;
  if (!scheduled_message.empty()) o["podScheduledMessage"] = scheduled_message;
  boost::json::array cs;
  for (const ClaimView& c : claims) {
    boost::json::array devices;
    for (const std::string& d : c.devices) devices.push_back(boost::json::value(d));
    boost::json::array reserved;
    for (const std::string& r : c.reserved_for) reserved.push_back(boost::json::value(r));
    boost::json::object view{{"podClaim", c.pod_claim},
                             {"claim", c.claim},
                             {"state", c.state},
                             {"devices", std::move(devices)},
                             {"reservedFor", std::move(reserved)}};
    if (!c.creation_failure.empty()) {
      view["creationFailure"] = boost::json::object{{"message", c.creation_failure},
                                                    {"lastSeen", c.creation_failure_time}};
    }
    cs.push_back(std::move(view));
  }
  o["claims"] = std::move(cs);
  if (pre_filter) o["preFilter"] = *pre_filter;
  if (!quotas.empty()) {
    boost::json::array qs;
    for (const std::string& q : quotas) qs.push_back(boost::json::value(q));
    o["quotas"] = std::move(qs);
  }
  boost::json::array ns;
  for (const NodeView& n : nodes) {
    boost::json::object v{{"node", n.node}, {"fits", n.fits}};
    if (!n.fits) {
      v["plugin"] = n.plugin;
      v["reason"] = n.reason;
    }
    if (n.devices) v["devices"] = boost::json::parse(n.devices->ToJson(0));
    ns.push_back(std::move(v));
  }
  o["nodes"] = std::move(ns);
  o["summary"] = summary;
  return boost::json::serialize(o);
}

StatusOr<PodExplanation> ExplainPodFromApi(client::ApiClient& api, const std::string& ns,
                                           const std::string& name,
                                           const allocator::Features& features,
                                           const Clock& clock) {
  StatusOr<Pod> pod = client::Get<Pod>(api, ns, name);
  if (!pod.ok()) return pod.status();

  ClusterState cluster;
  StatusOr<std::vector<rv1::DeviceClass>> classes = client::ListAll<rv1::DeviceClass>(api);
  if (!classes.ok()) return classes.status().WithPrefix("list deviceclasses");
  for (rv1::DeviceClass& c : *classes) {
    cluster.UpsertClass(std::make_shared<const rv1::DeviceClass>(std::move(c)));
  }
  // The rules first: each slice is then put in tainted once.
  StatusOr<std::vector<rv1::DeviceTaintRule>> rules = client::ListAll<rv1::DeviceTaintRule>(api);
  if (!rules.ok()) return rules.status().WithPrefix("list devicetaintrules");
  for (rv1::DeviceTaintRule& r : *rules) {
    cluster.UpsertTaintRule(std::make_shared<const rv1::DeviceTaintRule>(std::move(r)));
  }
  StatusOr<std::vector<rv1::ResourceSlice>> slices = client::ListAll<rv1::ResourceSlice>(api);
  if (!slices.ok()) return slices.status().WithPrefix("list resourceslices");
  for (rv1::ResourceSlice& s : *slices) {
    cluster.UpsertSlice(std::make_shared<const rv1::ResourceSlice>(std::move(s)));
  }
  StatusOr<std::vector<api::corev1::Node>> nodes = client::ListAll<api::corev1::Node>(api);
  if (!nodes.ok()) return nodes.status().WithPrefix("list nodes");
  for (api::corev1::Node& n : *nodes) {
    cluster.UpsertNode(std::make_shared<const api::corev1::Node>(std::move(n)));
  }
  StatusOr<std::vector<rv1::ResourceClaim>> claims = client::ListAll<rv1::ResourceClaim>(api);
  if (!claims.ok()) return claims.status().WithPrefix("list resourceclaims");
  for (rv1::ResourceClaim& c : *claims) {
    cluster.UpsertClaim(std::make_shared<const rv1::ResourceClaim>(std::move(c)));
  }
  // The quotas of the Pod's namespace: Allocation-mode ones are checked inside the search.
  StatusOr<client::ObjectList<api::corev1::ResourceQuota>> quotas =
      client::List<api::corev1::ResourceQuota>(api, ns);
  if (!quotas.ok()) return quotas.status().WithPrefix("list resourcequotas");
  for (api::corev1::ResourceQuota& q : quotas->items) {
    cluster.UpsertQuota(std::make_shared<const api::corev1::ResourceQuota>(std::move(q)));
  }
  StatusOr<std::vector<Pod>> pods = client::ListAll<Pod>(api);
  if (!pods.ok()) return pods.status().WithPrefix("list pods");
  std::vector<allocator::DeviceHold> holds;
  for (Pod& p : *pods) {
    if (!p.spec.node_name.empty()) {
      cluster.UpsertAssignedPod(std::make_shared<const Pod>(std::move(p)));
      continue;
    }
    auto held = p.metadata.annotations.find(std::string(kHeldDevicesAnnotation));
    // The scheduler holds nothing for a Pod that is going away or has ended (its annotation may
    // outlive the hold).
    if (held == p.metadata.annotations.end() || p.metadata.deletion_timestamp ||
        api::IsPodTerminal(p)) {
      continue;
    }
    // A hold the scheduler persisted; one it cannot read back it does not enforce either.
    StatusOr<StarvationHold> hold = StarvationHolds::ParseAnnotation(held->second);
    if (!hold.ok() || hold->devices.empty()) continue;
    holds.push_back(
        {.pod = p.metadata.namespace_ + "/" + p.metadata.name,
         .pod_uid = p.metadata.uid,
         .priority = p.spec.priority.value_or(0),
         .node = hold->node,
         .since = api::Time::FromTimestamp(hold->since).text(),
         .starving = std::max(Duration{0},
                              Duration(clock.Now() - p.metadata.creation_timestamp.ToTimestamp())),
         .devices = std::move(hold->devices)});
  }
  PodExplanation explained = ExplainPod(cluster, *pod, features, clock, std::move(holds));
  AddClaimCreationFailures(api, *pod, &explained);
  return explained;
}

}  // namespace draplane::scheduler
