// The node lifecycle controller (upstream pkg/controller/nodelifecycle): a node whose kubelet
// player (a node agent, the fake kubelet) stopped reporting is marked unhealthy, its Pods
// NotReady, and it is tainted so the scheduler avoids it and the taint eviction controller
// (tainteviction/) moves its Pods away once their tolerations end.
//
// Health (every `monitor_period`, upstream monitorNodeHealth / tryUpdateNodeHealth): a node's
// heartbeat is a change of its Ready condition's lastHeartbeatTime or a newer renewTime of its
// Lease kube-node-lease/<node>, each dated by this controller's clock when it sees it (no clock
// skew with the node). Without one for `monitor_grace_period` (`startup_grace_period` while the
// node never posted a Ready condition), Ready, MemoryPressure, DiskPressure and PIDPressure
// become Unknown (NodeStatusUnknown, "Kubelet stopped posting node status."; a condition never
// posted is added as NodeStatusNeverUpdated). On Ready leaving True: Event NodeNotReady on the
// Node, and every Pod on it gets Ready=False (Warning NodeNotReady, "Node is not ready"), as does
// a Pod bound to it later.
//   draplane differs in one place: a Node that has neither a Ready condition nor a Lease is
//   not monitored. Nothing ever reported for it, which in draplane means a node no kubelet
//   plays on purpose (a Node applied by hand, one the controllers' kubelet simulator runs);
//   upstream would mark it NodeStatusNeverUpdated and evict its Pods.
//
// Taints (upstream TaintNodesByCondition and taint-based eviction), each with timeAdded:
//   NoSchedule, on every node event: node.kubernetes.io/not-ready (Ready False),
//     unreachable (Ready Unknown), memory-pressure, disk-pressure, pid-pressure,
//     network-unavailable (condition True) and unschedulable (spec.unschedulable);
//   NoExecute not-ready / unreachable (mutually exclusive) for a node whose Ready is False /
//     Unknown, added at most `eviction_rate` nodes per second per zone (token bucket of one;
//     topology.kubernetes.io/region and zone); removed when Ready is True again.
// Zones (upstream handleDisruption): a zone is in FullDisruption when every monitored node in it
// is not Ready, PartialDisruption when more than two and at least `unhealthy_zone_threshold` of
// them are, else Normal. PartialDisruption taints at `secondary_eviction_rate` in zones larger
// than `large_cluster_threshold` and not at all in smaller ones. When every zone is in
// FullDisruption the controller assumes it is the one cut off: it removes every NoExecute taint
// it manages and taints nothing until a node is Ready again (the probe times then restart).
// Nodes labelled node.kubernetes.io/exclude-disruption do not count in their zone.
//
// Metrics (upstream node_collector_*): zone_size, zone_health (percent of Ready nodes),
// unhealthy_nodes_in_zone, evictions_total (NoExecute taints added), by zone.
//
// Work runs on one worker thread (queue keys "monitor", "node:<name>", "pod:<ns>/<name>").
//
// Thread-safety: Start/Stop from the owner; Sync on the worker (or a test's thread, never both).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/coordination_v1_types.h"
#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "client/events.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct NodeLifecycleOptions {
  Duration monitor_period = std::chrono::seconds(5);
  Duration monitor_grace_period = std::chrono::seconds(50);
  Duration startup_grace_period = std::chrono::seconds(60);
  double eviction_rate = 0.1;             // nodes per second, per zone
  double secondary_eviction_rate = 0.01;  // in a zone in PartialDisruption
  int large_cluster_threshold = 50;
  double unhealthy_zone_threshold = 0.55;
  std::string field_manager = "node-controller";
};

// "" for a node without region and zone labels, else "<region>:<zone>".
std::string NodeZone(const api::corev1::Node& node);

class NodeLifecycleController {
 public:
  // Registers its informers and handlers with `informers` (before informers.Start()).
  NodeLifecycleController(client::ApiClient& api, client::SharedInformers& informers,
                          const Clock& clock, NodeLifecycleOptions options = {});
  ~NodeLifecycleController();
  NodeLifecycleController(const NodeLifecycleController&) = delete;
  NodeLifecycleController& operator=(const NodeLifecycleController&) = delete;

  void Start();
  void Stop();

  // One sync of a queue key on the calling thread (tests): "monitor" is one health pass with
  // its NoExecute tainting.
  Status Sync(const std::string& key);

 private:
  // What the controller last saw of a node's heartbeat.
  struct Health {
    Timestamp probe;                     // when the last heartbeat was seen
    std::optional<api::Time> heartbeat;  // the Ready condition's lastHeartbeatTime then
    std::optional<api::Time> renewed;    // the Lease's renewTime then
    std::string ready;                   // the Ready status after the last pass ("" none)
    bool mark_pods = false;              // its Pods are still to be marked NotReady
  };
  enum class ZoneState { kInitial, kNormal, kPartialDisruption, kFullDisruption };
  // Nodes waiting for their NoExecute taint in one zone, and its token bucket.
  struct ZoneTainter {
    std::deque<std::string> waiting;
    std::set<std::string> marked;  // waiting or tainted, until reachable again
    double rate = 0;
    std::optional<Timestamp> next_token;  // nullopt: a token is available
  };

  Status Monitor();
  // Upstream tryUpdateNodeHealth: the Ready status before and after (Unknown when stale), "" when
  // the node has none. Writes the status when it went stale.
  Status UpdateHealth(const api::corev1::Node& node, std::string* observed, std::string* current);
  Status ProcessTaintBasedEviction(const api::corev1::Node& node, const std::string& ready);
  Status MarkPodsNotReady(const std::string& node_name,
                          const std::vector<std::shared_ptr<const api::corev1::Pod>>& pods);
  void HandleDisruption(const std::map<std::string, std::vector<std::string>>& zone_ready,
                        const std::vector<std::shared_ptr<const api::corev1::Node>>& nodes);
  // `stop`: every zone is down (master disruption mode), nothing is tainted.
  void SetZoneRate(const std::string& zone, size_t zone_size, ZoneState state, bool stop);
  ZoneTainter& TainterOf(const std::string& zone);
  // Adds the NoExecute taints that are due; the time the next one may be added, if any waits.
  std::optional<Timestamp> TaintPass();
  Status SyncNoScheduleTaints(const std::string& name);
  Status SyncPod(const std::string& key);
  // Adds `add` (timeAdded now) and removes the taints of the same key and effect as `remove`,
  // re-reading the Node on conflicts. `*changed` says whether the Node was written.
  Status SwapTaints(const std::string& node, const std::vector<api::corev1::Taint>& add,
                    const std::vector<api::corev1::Taint>& remove, bool* changed = nullptr);
  // Removes both NoExecute node-controller taints (upstream markNodeAsReachable); `why` is
  // logged.
  Status MarkReachable(const api::corev1::Node& node, std::string_view why);
  bool Monitored(const api::corev1::Node& node) const;

  client::ApiClient& api_;
  const Clock& clock_;
  const NodeLifecycleOptions options_;
  client::Informer<api::corev1::Node>& nodes_;
  client::Informer<api::coordinationv1::Lease>& leases_;
  client::Informer<api::corev1::Pod>& pods_;
  client::EventRecorder events_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;

  // Worker state: one worker, so no lock.
  std::map<std::string, Health> health_;  // the monitored nodes of the last pass
  std::map<std::string, ZoneState> zone_states_;
  std::map<std::string, ZoneTainter> tainters_;
};

}  // namespace draplane::controllers
