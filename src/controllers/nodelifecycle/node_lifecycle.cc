#include "controllers/nodelifecycle/node_lifecycle.h"

#include <algorithm>
#include <utility>

#include "api/pods.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "controllers/internal/pods_by_node.h"

namespace draplane::controllers {

namespace cv1 = api::corev1;
namespace co = api::coordinationv1;

namespace {

constexpr std::string_view kMonitorKey = "monitor";
constexpr std::string_view kNodePrefix = "node:";
constexpr std::string_view kPodPrefix = "pod:";
constexpr std::string_view kLeaseNamespace = "kube-node-lease";
constexpr std::string_view kNotReadyTaint = "node.kubernetes.io/not-ready";
constexpr std::string_view kUnreachableTaint = "node.kubernetes.io/unreachable";
constexpr std::string_view kUnschedulableTaint = "node.kubernetes.io/unschedulable";
constexpr std::string_view kExcludeDisruption = "node.kubernetes.io/exclude-disruption";
constexpr std::string_view kUnknown = "Unknown";

// Upstream's metrics (pkg/controller/nodelifecycle/metrics.go), under their names.
metrics::GaugeFamily ZoneHealthMetric() {
  static const metrics::GaugeFamily family =
      metrics::NewGaugeFamily("node_collector_zone_health",
                              "Gauge measuring percentage of healthy nodes per zone.", {"zone"});
  return family;
}
metrics::GaugeFamily ZoneSizeMetric() {
  static const metrics::GaugeFamily family =
      metrics::NewGaugeFamily("node_collector_zone_size",
                              "Gauge measuring number of registered Nodes per zones.", {"zone"});
  return family;
}
metrics::GaugeFamily UnhealthyNodesMetric() {
  static const metrics::GaugeFamily family =
      metrics::NewGaugeFamily("node_collector_unhealthy_nodes_in_zone",
                              "Gauge measuring number of not Ready Nodes per zones.", {"zone"});
  return family;
}
metrics::CounterFamily EvictionsMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "node_collector_evictions_total",
      "Number of Node evictions that happened since current instance of NodeController started.",
      {"zone"});
  return family;
}

// The node condition types a status of which taints the node NoSchedule, with that status and
// the taint's key (upstream nodeConditionToTaintKeyStatusMap).
struct ConditionTaint {
  std::string_view condition;
  std::string_view status;
  std::string_view key;
};
constexpr ConditionTaint kConditionTaints[] = {
    {"Ready", "False", kNotReadyTaint},
    {"Ready", kUnknown, kUnreachableTaint},
    {"MemoryPressure", "True", "node.kubernetes.io/memory-pressure"},
    {"DiskPressure", "True", "node.kubernetes.io/disk-pressure"},
    {"NetworkUnavailable", "True", "node.kubernetes.io/network-unavailable"},
    {"PIDPressure", "True", "node.kubernetes.io/pid-pressure"},
};

// Whether `key` is one of the NoSchedule taints this controller manages.
bool ManagedNoScheduleKey(std::string_view key) {
  if (key == kUnschedulableTaint) return true;
  return std::any_of(std::begin(kConditionTaints), std::end(kConditionTaints),
                     [&](const ConditionTaint& t) { return t.key == key; });
}

cv1::Taint MakeTaint(std::string_view key, std::string_view effect) {
  cv1::Taint t;
  t.key = std::string(key);
  t.effect = std::string(effect);
  return t;
}

const cv1::NodeCondition* FindCondition(const cv1::Node& node, std::string_view type) {
  for (const cv1::NodeCondition& c : node.status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool HasTaint(const cv1::Node& node, std::string_view key, std::string_view effect) {
  return std::any_of(node.spec.taints.begin(), node.spec.taints.end(),
                     [&](const cv1::Taint& t) { return t.key == key && t.effect == effect; });
}

}  // namespace

std::string NodeZone(const cv1::Node& node) {
  auto label = [&](std::string_view stable, std::string_view beta) -> std::string {
    auto it = node.metadata.labels.find(std::string(stable));
    if (it == node.metadata.labels.end()) it = node.metadata.labels.find(std::string(beta));
    return it == node.metadata.labels.end() ? std::string() : it->second;
  };
  std::string region =
      label("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region");
  std::string zone = label("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone");
  if (region.empty() && zone.empty()) return "";
  return region + ":" + zone;
}

NodeLifecycleController::NodeLifecycleController(client::ApiClient& api,
                                                 client::SharedInformers& informers,
                                                 const Clock& clock, NodeLifecycleOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      nodes_(informers.Get<cv1::Node>()),
      leases_(informers.Get<co::Lease>()),
      pods_(informers.Get<cv1::Pod>()),
      events_(api, clock,
              client::EventRecorderOptions{
                  .component = "node-controller", .host = "", .synchronous = false}),
      queue_(clock, {}, "node_lifecycle_controller"),
      workers_("node-lifecycle", queue_, [this](const std::string& key) { return Sync(key); }) {
  ZoneHealthMetric();
  ZoneSizeMetric();
  UnhealthyNodesMetric();
  EvictionsMetric();
  internal::AddPodsByNodeIndex(pods_);
  auto node_changed = [this](const auto& n) {
    queue_.Add(std::string(kNodePrefix) + n->metadata.name);
  };
  nodes_.AddHandlers({.on_add = node_changed,
                      .on_update = [node_changed](const auto&, const auto& n) { node_changed(n); },
                      .on_delete = {}});
  // A Pod bound to a node that is not Ready is marked NotReady (upstream podUpdated).
  pods_.AddHandlers({.on_add =
                         [this](const auto& p) {
                           if (!p->spec.node_name.empty()) {
                             queue_.Add(std::string(kPodPrefix) + p->metadata.namespace_ + "/" +
                                        p->metadata.name);
                           }
                         },
                     .on_update =
                         [this](const auto& before, const auto& p) {
                           if (!p->spec.node_name.empty() &&
                               before->spec.node_name != p->spec.node_name) {
                             queue_.Add(std::string(kPodPrefix) + p->metadata.namespace_ + "/" +
                                        p->metadata.name);
                           }
                         },
                     .on_delete = {}});
}

NodeLifecycleController::~NodeLifecycleController() { Stop(); }

void NodeLifecycleController::Start() {
  queue_.Add(std::string(kMonitorKey));
  workers_.Start(1);
}

void NodeLifecycleController::Stop() {
  workers_.Stop();
  events_.Stop();
}

Status NodeLifecycleController::Sync(const std::string& key) {
  if (key == kMonitorKey) {
    Status s = Monitor();
    std::optional<Timestamp> next_taint = TaintPass();
    Duration wait = options_.monitor_period;
    if (next_taint) wait = std::min(wait, std::max(Duration(0), *next_taint - clock_.Now()));
    queue_.AddAfter(std::string(kMonitorKey), wait);
    return s;
  }
  if (key.starts_with(kNodePrefix)) return SyncNoScheduleTaints(key.substr(kNodePrefix.size()));
  if (key.starts_with(kPodPrefix)) return SyncPod(key.substr(kPodPrefix.size()));
  return Status::Ok();
}

bool NodeLifecycleController::Monitored(const cv1::Node& node) const {
  return FindCondition(node, "Ready") != nullptr ||
         leases_.Get(kLeaseNamespace, node.metadata.name) != nullptr;
}

Status NodeLifecycleController::Monitor() {
  std::vector<std::shared_ptr<const cv1::Node>> nodes = nodes_.List();
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
  Status first;
  auto keep_first = [&](Status s) {
    if (!s.ok() && first.ok()) first = std::move(s);
  };
  std::map<std::string, std::vector<std::string>> zone_ready;  // zone -> Ready status per node
  std::vector<std::shared_ptr<const cv1::Node>> monitored;
  std::set<std::string> seen;
  for (const auto& node : nodes) {
    if (!Monitored(*node)) continue;
    seen.insert(node->metadata.name);
    monitored.push_back(node);
    if (!health_.contains(node->metadata.name)) {
      events_.Record(client::ReferenceTo(*node), cv1::kEventTypeNormal, "RegisteredNode",
                     "Node " + node->metadata.name + " event: Registered Node " +
                         node->metadata.name + " in Controller");
    }
    std::string observed, current;
    if (Status s = UpdateHealth(*node, &observed, &current); !s.ok()) {
      log::Warning("node-lifecycle: node {}: updating its health: {} (no Pod is evicted)",
                   node->metadata.name, s.ToString());
      keep_first(std::move(s));
      continue;
    }
    if (node->metadata.labels.count(std::string(kExcludeDisruption)) == 0) {
      zone_ready[NodeZone(*node)].push_back(current);
    }
    if (current.empty()) continue;
    keep_first(ProcessTaintBasedEviction(*node, current));
    Health& h = health_[node->metadata.name];
    h.ready = current;
    if (current == "True") {
      h.mark_pods = false;
      continue;
    }
    if (observed == "True") {
      log::Info("node-lifecycle: node {} is not ready ({})", node->metadata.name, current);
      events_.Record(client::ReferenceTo(*node), cv1::kEventTypeNormal, "NodeNotReady",
                     "Node " + node->metadata.name + " status is now: NodeNotReady");
      h.mark_pods = true;
    }
    // Until every Pod was marked: a failed write is retried on the next pass.
    if (h.mark_pods) {
      Status marked = MarkPodsNotReady(
          node->metadata.name, pods_.ByIndex(internal::kPodsByNodeIndex, node->metadata.name));
      h.mark_pods = !marked.ok();
      keep_first(std::move(marked));
    }
  }
  // Nodes gone, or no longer reporting, are forgotten.
  std::erase_if(health_, [&](const auto& entry) { return !seen.contains(entry.first); });
  HandleDisruption(zone_ready, monitored);
  return first;
}

Status NodeLifecycleController::UpdateHealth(const cv1::Node& cached, std::string* observed,
                                             std::string* current) {
  const Timestamp now = clock_.Now();
  const cv1::NodeCondition* ready = FindCondition(cached, "Ready");
  auto [it, added] = health_.try_emplace(cached.metadata.name);
  Health& h = it->second;
  if (added) {
    // A node never heard of: its grace period starts now, or, while it never posted a Ready
    // condition, at its creation (upstream's startup grace).
    h.probe = now;
    if (ready == nullptr && !cached.metadata.creation_timestamp.empty()) {
      h.probe = cached.metadata.creation_timestamp.ToTimestamp();
    }
    if (ready != nullptr) h.heartbeat = ready->last_heartbeat_time;
  } else if (ready != nullptr && ready->last_heartbeat_time != h.heartbeat) {
    h.probe = now;
    h.heartbeat = ready->last_heartbeat_time;
  }
  // Lease renewals are heartbeats too, however old the status.
  if (auto lease = leases_.Get(kLeaseNamespace, cached.metadata.name);
      lease != nullptr && lease->spec.renew_time &&
      (!h.renewed || *h.renewed < *lease->spec.renew_time)) {
    h.renewed = lease->spec.renew_time;
    if (!added) h.probe = now;
  }
  *observed = ready != nullptr ? ready->status : std::string(kUnknown);
  *current = ready != nullptr ? ready->status : "";
  const Duration grace =
      ready != nullptr ? options_.monitor_grace_period : options_.startup_grace_period;
  if (now <= h.probe + grace) return Status::Ok();

  // Stale: Ready and the pressure conditions become Unknown (NetworkUnavailable belongs to the
  // network's controller).
  cv1::Node node = cached;
  const api::Time stamp = api::Time::FromTimestamp(now);
  bool changed = false;
  for (std::string_view type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    auto c = std::find_if(node.status.conditions.begin(), node.status.conditions.end(),
                          [&](const cv1::NodeCondition& c) { return c.type == type; });
    if (c == node.status.conditions.end()) {
      cv1::NodeCondition never;
      never.type = std::string(type);
      never.status = std::string(kUnknown);
      never.reason = "NodeStatusNeverUpdated";
      never.message = "Kubelet never posted node status.";
      never.last_heartbeat_time = node.metadata.creation_timestamp;
      never.last_transition_time = stamp;
      node.status.conditions.push_back(std::move(never));
      changed = true;
    } else if (c->status != kUnknown) {
      c->status = std::string(kUnknown);
      c->reason = "NodeStatusUnknown";
      c->message = "Kubelet stopped posting node status.";
      c->last_transition_time = stamp;
      changed = true;
    }
  }
  *current = std::string(kUnknown);
  if (!changed) return Status::Ok();
  StatusOr<cv1::Node> written = client::UpdateStatus(api_, node, options_.field_manager);
  if (!written.ok()) {
    if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
    *current = *observed;
    return written.status();
  }
  // The controller's own write is no heartbeat.
  if (const cv1::NodeCondition* r = FindCondition(*written, "Ready"))
    h.heartbeat = r->last_heartbeat_time;
  log::Info("node-lifecycle: node {}: no heartbeat for {}s, status Unknown", node.metadata.name,
            std::chrono::duration_cast<std::chrono::seconds>(now - h.probe).count());
  return Status::Ok();
}

Status NodeLifecycleController::ProcessTaintBasedEviction(const cv1::Node& node,
                                                          const std::string& ready) {
  const std::string& name = node.metadata.name;
  if (ready == "True") return MarkReachable(node, "it is ready again");
  const bool unknown = ready == kUnknown;
  const std::string_view want = unknown ? kUnreachableTaint : kNotReadyTaint;
  const std::string_view opposite = unknown ? kNotReadyTaint : kUnreachableTaint;
  // The other NoExecute taint is swapped at once: the node was being evicted already.
  if (HasTaint(node, opposite, "NoExecute")) {
    return SwapTaints(name, {MakeTaint(want, "NoExecute")}, {MakeTaint(opposite, "NoExecute")});
  }
  // Once per episode: the node stays marked until it is reachable again.
  ZoneTainter& tainter = TainterOf(NodeZone(node));
  if (tainter.marked.insert(name).second) tainter.waiting.push_back(name);
  return Status::Ok();
}

NodeLifecycleController::ZoneTainter& NodeLifecycleController::TainterOf(const std::string& zone) {
  auto [it, added] = tainters_.try_emplace(zone);
  if (added) it->second.rate = options_.eviction_rate;
  return it->second;
}

Status NodeLifecycleController::MarkReachable(const cv1::Node& node, std::string_view why) {
  const std::string& name = node.metadata.name;
  ZoneTainter& tainter = TainterOf(NodeZone(node));
  if (tainter.marked.erase(name) != 0) std::erase(tainter.waiting, name);
  if (!HasTaint(node, kNotReadyTaint, "NoExecute") &&
      !HasTaint(node, kUnreachableTaint, "NoExecute")) {
    return Status::Ok();
  }
  bool changed = false;
  DRAPLANE_RETURN_IF_ERROR(SwapTaints(
      name, {}, {MakeTaint(kNotReadyTaint, "NoExecute"), MakeTaint(kUnreachableTaint, "NoExecute")},
      &changed));
  if (changed) log::Info("node-lifecycle: node {}: NoExecute taints removed ({})", name, why);
  return Status::Ok();
}

Status NodeLifecycleController::MarkPodsNotReady(
    const std::string& node_name, const std::vector<std::shared_ptr<const cv1::Pod>>& pods) {
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  Status first;
  for (const auto& cached : pods) {
    if (cached->spec.node_name != node_name) continue;
    const cv1::PodCondition* ready = nullptr;
    for (const cv1::PodCondition& c : cached->status.conditions) {
      if (c.type == cv1::kPodConditionTypeReady) ready = &c;
    }
    if (ready == nullptr || ready->status == "False") continue;
    cv1::Pod pod = *cached;
    api::SetPodCondition(&pod.status, cv1::kPodConditionTypeReady, "False", ready->reason,
                         ready->message, now);
    StatusOr<cv1::Pod> written = client::UpdateStatus(api_, pod, options_.field_manager);
    if (!written.ok()) {
      if (written.status().code() != StatusCode::kNotFound && first.ok()) {
        first = written.status();
      }
      continue;
    }
    events_.Record(client::ReferenceTo(*written), cv1::kEventTypeWarning, "NodeNotReady",
                   "Node is not ready");
  }
  return first;
}

void NodeLifecycleController::HandleDisruption(
    const std::map<std::string, std::vector<std::string>>& zone_ready,
    const std::vector<std::shared_ptr<const cv1::Node>>& nodes) {
  std::map<std::string, ZoneState> states;
  bool all_fully_disrupted = true;
  for (const auto& [zone, readies] : zone_ready) {
    const size_t unhealthy = static_cast<size_t>(std::count_if(
        readies.begin(), readies.end(), [](const std::string& r) { return r != "True"; }));
    ZoneSizeMetric().WithLabels({zone}).Set(static_cast<double>(readies.size()));
    ZoneHealthMetric().WithLabels({zone}).Set(100.0 *
                                              static_cast<double>(readies.size() - unhealthy) /
                                              static_cast<double>(readies.size()));
    UnhealthyNodesMetric().WithLabels({zone}).Set(static_cast<double>(unhealthy));
    ZoneState state = ZoneState::kNormal;
    if (unhealthy > 0 && unhealthy == readies.size()) {
      state = ZoneState::kFullDisruption;
    } else if (unhealthy > 2 &&
               static_cast<double>(unhealthy) / static_cast<double>(readies.size()) >=
                   options_.unhealthy_zone_threshold) {
      state = ZoneState::kPartialDisruption;
    }
    all_fully_disrupted = all_fully_disrupted && state == ZoneState::kFullDisruption;
    states[zone] = state;
    zone_states_.try_emplace(zone, ZoneState::kInitial);
  }
  bool all_were_fully_disrupted = true;
  for (auto it = zone_states_.begin(); it != zone_states_.end();) {
    if (zone_ready.count(it->first) == 0) {
      ZoneSizeMetric().WithLabels({it->first}).Set(0);
      ZoneHealthMetric().WithLabels({it->first}).Set(100);
      UnhealthyNodesMetric().WithLabels({it->first}).Set(0);
      it = zone_states_.erase(it);
      continue;
    }
    all_were_fully_disrupted = all_were_fully_disrupted && it->second == ZoneState::kFullDisruption;
    ++it;
  }
  if (all_fully_disrupted && all_were_fully_disrupted) return;
  if (all_fully_disrupted) {
    // Every node at once: more likely this controller lost the nodes than every node died.
    log::Warning(
        "node-lifecycle: every node is not ready; entering master disruption mode (no node is "
        "tainted NoExecute until one is ready again)");
    for (const auto& node : nodes) {
      if (Status s = MarkReachable(*node, "master disruption mode"); !s.ok()) {
        log::Warning("node-lifecycle: node {}: removing NoExecute taints: {}", node->metadata.name,
                     s.ToString());
      }
    }
    for (auto& [zone, state] : zone_states_) {
      SetZoneRate(zone, zone_ready.at(zone).size(), ZoneState::kFullDisruption, /*stop=*/true);
      state = ZoneState::kFullDisruption;
    }
    return;
  }
  if (all_were_fully_disrupted) {
    log::Info("node-lifecycle: some nodes are ready; leaving master disruption mode");
    // Every node gets a fresh grace period: their heartbeats may have been lost with ours.
    const Timestamp now = clock_.Now();
    for (auto& [name, h] : health_) h.probe = now;
    for (auto& [zone, state] : zone_states_) {
      state = states.at(zone);
      SetZoneRate(zone, zone_ready.at(zone).size(), state, /*stop=*/false);
    }
    return;
  }
  for (auto& [zone, state] : zone_states_) {
    const ZoneState now_state = states.at(zone);
    if (state == now_state) continue;
    log::Info("node-lifecycle: zone \"{}\" is now in state {}", zone,
              now_state == ZoneState::kNormal              ? "Normal"
              : now_state == ZoneState::kPartialDisruption ? "PartialDisruption"
                                                           : "FullDisruption");
    SetZoneRate(zone, zone_ready.at(zone).size(), now_state, /*stop=*/false);
    state = now_state;
  }
}

void NodeLifecycleController::SetZoneRate(const std::string& zone, size_t zone_size,
                                          ZoneState state, bool stop) {
  double rate = options_.eviction_rate;  // Normal, and a zone that is down as a whole
  if (stop) {
    rate = 0;
  } else if (state == ZoneState::kPartialDisruption) {
    rate = zone_size > static_cast<size_t>(options_.large_cluster_threshold)
               ? options_.secondary_eviction_rate
               : 0;
  }
  ZoneTainter& tainter = TainterOf(zone);
  if (tainter.rate == rate) return;
  tainter.rate = rate;
  tainter.next_token.reset();  // a new bucket starts full
}

std::optional<Timestamp> NodeLifecycleController::TaintPass() {
  const Timestamp now = clock_.Now();
  std::optional<Timestamp> next;
  for (auto& [zone, tainter] : tainters_) {
    while (!tainter.waiting.empty() && tainter.rate > 0) {
      if (tainter.next_token && now < *tainter.next_token) {
        next = next ? std::min(*next, *tainter.next_token) : *tainter.next_token;
        break;
      }
      const std::string name = tainter.waiting.front();
      tainter.waiting.pop_front();
      // The Ready status as the last pass saw it (the cache may not show that pass's write yet).
      auto health = health_.find(name);
      if (health == health_.end() || health->second.ready.empty() ||
          health->second.ready == "True") {
        tainter.marked.erase(name);  // gone, or ready again meanwhile
        continue;
      }
      const bool unknown = health->second.ready != "False";
      const std::string_view add = unknown ? kUnreachableTaint : kNotReadyTaint;
      const std::string_view remove = unknown ? kNotReadyTaint : kUnreachableTaint;
      bool changed = false;
      Status s = SwapTaints(name, {MakeTaint(add, "NoExecute")}, {MakeTaint(remove, "NoExecute")},
                            &changed);
      if (!s.ok()) {
        log::Warning("node-lifecycle: node {}: tainting {}:NoExecute: {}", name, add, s.ToString());
        tainter.waiting.push_front(name);
        tainter.next_token = now + std::chrono::seconds(1);  // retried shortly
        next = next ? std::min(*next, *tainter.next_token) : *tainter.next_token;
        break;
      }
      log::Info("node-lifecycle: node {}: tainted {}:NoExecute", name, add);
      EvictionsMetric().WithLabels({zone}).Increment();
      tainter.next_token = now + std::chrono::duration_cast<Duration>(
                                     std::chrono::duration<double>(1.0 / tainter.rate));
    }
  }
  return next;
}

Status NodeLifecycleController::SyncNoScheduleTaints(const std::string& name) {
  auto node = nodes_.Get("", name);
  if (node == nullptr) return Status::Ok();
  std::vector<cv1::Taint> want;
  for (const ConditionTaint& t : kConditionTaints) {
    const cv1::NodeCondition* c = FindCondition(*node, t.condition);
    if (c != nullptr && c->status == t.status) want.push_back(MakeTaint(t.key, "NoSchedule"));
  }
  if (node->spec.unschedulable) want.push_back(MakeTaint(kUnschedulableTaint, "NoSchedule"));
  std::vector<cv1::Taint> add, remove;
  for (const cv1::Taint& t : want) {
    if (!HasTaint(*node, t.key, t.effect)) add.push_back(t);
  }
  for (const cv1::Taint& t : node->spec.taints) {
    if (t.effect != "NoSchedule" || !ManagedNoScheduleKey(t.key)) continue;
    if (std::none_of(want.begin(), want.end(),
                     [&](const cv1::Taint& w) { return w.key == t.key; })) {
      remove.push_back(t);
    }
  }
  if (add.empty() && remove.empty()) return Status::Ok();
  return SwapTaints(name, add, remove);
}

Status NodeLifecycleController::SyncPod(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return Status::Ok();
  auto pod = pods_.Get(key.substr(0, slash), key.substr(slash + 1));
  if (pod == nullptr || pod->spec.node_name.empty()) return Status::Ok();
  auto it = health_.find(pod->spec.node_name);
  if (it == health_.end() || it->second.ready.empty() || it->second.ready == "True") {
    return Status::Ok();
  }
  return MarkPodsNotReady(pod->spec.node_name, {pod});
}

Status NodeLifecycleController::SwapTaints(const std::string& name,
                                           const std::vector<cv1::Taint>& add,
                                           const std::vector<cv1::Taint>& remove, bool* changed) {
  if (changed != nullptr) *changed = false;
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  for (int attempt = 0; attempt < 5; ++attempt) {
    StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", name);
    if (!node.ok()) {
      return node.status().code() == StatusCode::kNotFound ? Status::Ok() : node.status();
    }
    std::vector<cv1::Taint> taints;
    for (const cv1::Taint& t : node->spec.taints) {
      if (std::none_of(remove.begin(), remove.end(), [&](const cv1::Taint& r) {
            return r.key == t.key && r.effect == t.effect;
          })) {
        taints.push_back(t);
      }
    }
    for (cv1::Taint t : add) {
      if (std::any_of(taints.begin(), taints.end(), [&](const cv1::Taint& have) {
            return have.key == t.key && have.effect == t.effect;
          })) {
        continue;
      }
      t.time_added = now;
      taints.push_back(std::move(t));
    }
    if (taints == node->spec.taints) return Status::Ok();
    node->spec.taints = std::move(taints);
    StatusOr<cv1::Node> written = client::Update(api_, *node, options_.field_manager);
    if (written.ok()) {
      if (changed != nullptr) *changed = true;
      return Status::Ok();
    }
    if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
    if (written.status().code() != StatusCode::kConflict) return written.status();
  }
  return ConflictError("node " + name + ": its taints kept changing");
}

}  // namespace draplane::controllers
