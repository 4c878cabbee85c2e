// The node agent: one per node. It registers the Node and keeps its heartbeat Lease, publishes
// the node's ResourceSlices from its drivers, prepares the claims of Pods bound to the node
// (CDI specs, checkpoint), writes per-device claim status, and — for simulated nodes — plays the
// kubelet: a Pod becomes Running / Ready once its devices are prepared, and a deleted Pod is
// finished once they are unprepared.
//
// Work (docs/design/agent.md, "Agent loop"):
//   - node:   register the Node and renew its Lease (node_registration.h) every
//             `heartbeat_interval`;
//   - slices: Discover() on every driver every `discovery_interval`, build the node's slices
//             and apply PlanSliceSync (slice_plan.h); every slice is validated first and nothing
//             is published when one is invalid;
//   - pod:    for a Pod bound to the node (SyncPod):
//               1. deleting: unprepare the claims only it used; finish the deletion
//                  (grace period 0) when simulating containers;
//               2. Succeeded / Failed: unprepare the claims only it used;
//               3. otherwise resolve its claims (direct, template-generated via
//                  `status.resourceClaimStatuses`, and the extended-resource claim), require
//                  each to be allocated and reserved for the Pod, prepare the devices of this
//                  node's pools (prepare.h), write `status.devices` (condition Ready, CDI device
//                  IDs in `data`, NIC network data), then mark the Pod Running and Ready with
//                  each container's allocatedResourcesStatus (KEP-4680: its devices' health as
//                  last discovered; a change of health is written to the Pods of the node, with
//                  a DeviceUnhealthy or DeviceHealthy Event).
//             A failure is classified (failure.h): retryable → Warning Event
//             FailedPrepareDynamicResources and a rate-limited retry; needs-cleanup → unprepare,
//             then retry; terminal → the Event, condition DevicesPrepared=False and phase Failed.
//             A device still prepared for another claim (a force-deleted Pod's,
//             kubernetes/kubernetes#141471) is never prepared again: the agent first unprepares
//             what no live Pod uses, and otherwise waits (Warning Event DeviceStillPrepared) and
//             retries.
//   - attach: for a Pod nominated to the node (status.nominatedNodeName, set by the scheduler
//             while it waits for binding conditions, KEP-5007/KEP-5278): every allocated device
//             of this node with bindingConditions is attached by its driver
//             (Driver::AttachDevice), and the outcome is written as the device's conditions in
//             the claim's status.devices — the binding conditions True, or the first failure
//             condition True; a failed device is republished at once (its driver reports it
//             unhealthy, so it gets a taint).
//   - isolation: `isolate_after_failures` prepare failures in a row (retryable or terminal)
//             isolate the node (api/labels/node_isolation.h: the NoSchedule taint
//             draplane.dev/device-prepare-failures, the annotation with its end, the condition
//             DevicePrepareFailures) for `isolation_backoff`, doubled for every isolation that
//             follows within `isolation_max_backoff` of the previous one's end, up to
//             `isolation_max_backoff`. A successful prepare (the retried claim is the probe) or
//             the end of the backoff lifts it.
//   - gc:     unprepare prepared claims that no live Pod on the node uses any more (also claims
//             deleted or re-created under the same name).
// With Start(), an informer on the node's Pods and periodic timers feed a work queue served by
// one loop thread; without it, the Sync* methods run the same steps synchronously (tests,
// `draplane agent --once`).
//
// Kubelet-plugin mode (`kubelet_plugin`, kubelet_plugin.h): on a real node the kubelet decides
// when claims are prepared and owns the Node, its Lease and Pod status. The agent then runs only
// the `slices` work; claims are prepared and unprepared through PrepareClaim / UnprepareClaim,
// which the plugin's gRPC handlers call, and nothing is unprepared unless the kubelet asks.
//
// Thread-safety: Start/Stop from the owner; the Sync* methods must not be called while started.
// PrepareClaim / UnprepareClaim may be called from any thread (they are serialised with each
// other and with the drivers' discovery).
// Ownership: the agent owns its drivers; the ApiClient and Clock must outlive it.
#pragma once

#include <atomic>
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/driver.h"
#include "agent/node_registration.h"
#include "agent/prepare.h"
#include "api/gen/core_v1_types.h"
#include "api/quantity.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace draplane::client {
class EventRecorder;
class WorkQueue;
template <typename T>
class Informer;
}  // namespace draplane::client

namespace draplane::agent {

inline constexpr std::string_view kFailedPrepareReason = "FailedPrepareDynamicResources";
inline constexpr std::string_view kDevicesPreparedCondition = "DevicesPrepared";
inline constexpr std::string_view kDeviceStillPreparedReason = "DeviceStillPrepared";
// Events when an allocated device's health changes (KEP-4680; `kubectl describe pod` shows them).
inline constexpr std::string_view kDeviceUnhealthyReason = "DeviceUnhealthy";
inline constexpr std::string_view kDeviceHealthyReason = "DeviceHealthy";

struct AgentOptions {
  std::string node_name;
  // Checkpoint and CDI specs (prepare.h).
  std::string state_dir;
  std::map<std::string, std::string> labels{};
  // Node capacity (= allocatable); cpu, memory and pods get defaults when absent
  // (node_registration.h).
  std::map<std::string, api::Quantity> capacity{};
  Duration heartbeat_interval = std::chrono::seconds(10);
  int32_t lease_duration_seconds = 40;
  Duration node_status_interval = std::chrono::minutes(1);
  Duration discovery_interval = std::chrono::seconds(5);
  // Every Pod of the node is reconciled and garbage collected this often.
  Duration resync_interval = std::chrono::seconds(30);
  // Backoff of retryable prepare failures.
  Duration retry_base_delay = std::chrono::milliseconds(500);
  Duration retry_max_delay = std::chrono::seconds(30);
  // Play the kubelet for this node's Pods (simulated nodes; `draplane agent` on a real node
  // alongside a kubelet turns it off and only prepares).
  bool simulate_containers = true;
  // Kubelet-plugin mode (see above).
  bool kubelet_plugin = false;
  // CDI spec directory; empty: `<state_dir>/cdi` (prepare.h).
  std::string cdi_dir{};
  // Failing-node isolation (see above); 0 prepare failures: never isolate.
  int isolate_after_failures = 3;
  Duration isolation_backoff = std::chrono::seconds(30);
  Duration isolation_max_backoff = std::chrono::minutes(10);
  std::string field_manager = "draplane-agent";
};

// The Node an agent with `options` registers (agent::RegisteredNode of node_registration.h, with
// the agent's kubelet version and Ready message): SyncNode keeps the stored Node at it; the
// simulator builds profile nodes from it.
api::corev1::Node RegisteredNode(const AgentOptions& options, Timestamp now);

// What SyncPod did.
enum class PodOutcome {
  kDone,      // nothing more to do until the Pod changes
  kRetry,     // retry with backoff (retryable failure, or the claims are not ready yet)
  kTerminal,  // prepare failed for good; the Pod was failed
};

// The names of the claims a Pod uses (in its namespace), as the kubelet resolves them
// (resourceclaim.Name): direct names, template-generated ones from
// `status.resourceClaimStatuses` (an entry without a name needs no claim), and the
// extended-resource claim. NotFound when a generated claim is not created yet.
StatusOr<std::vector<std::string>> PodClaimNames(const api::corev1::Pod& pod);

class Agent {
 public:
  // InvalidArgument when the options lack a node name or state dir, or two drivers publish
  // the same DRA driver name.
  static StatusOr<std::unique_ptr<Agent>> Create(client::ApiClient& api,
                                                 std::vector<std::unique_ptr<Driver>> drivers,
                                                 AgentOptions options, const Clock& clock);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Recovers the checkpoint (prepare.h Recover). Required before anything else.
  Status Init();

  // The steps, synchronously.
  Status SyncNode();
  Status SyncSlices();
  StatusOr<PodOutcome> SyncPod(const std::string& namespace_, const std::string& name);
  // Attaches the devices with binding conditions of a Pod nominated to the node (see above):
  // nullopt when nothing is left to do, else when to look again.
  StatusOr<std::optional<Duration>> SyncAttach(const api::corev1::Pod& pod);
  // Lifts the node's isolation when its time has come; when to look again, or nullopt.
  StatusOr<std::optional<Duration>> SyncIsolation();
  // Every Pod bound to the node, then garbage collection.
  Status SyncPods();
  Status CollectGarbage();

  // Starts the informer, timers and loop thread (after Init()).
  Status Start();
  // Stops and joins; idempotent.
  void Stop();

  // Kubelet-plugin mode: prepares the devices of `claim` that this node's drivers serve, all of
  // them as one unit (prepare.h), and writes the claim's `status.devices` (best effort: a failed
  // status write is logged, the devices stay prepared). A claim without devices here gets an
  // empty record. FailedPrecondition "not allocated" when the claim is not; otherwise the
  // Preparer's errors, classified by failure.h (needs-cleanup ones are cleaned up before
  // returning).
  StatusOr<ClaimRecord> PrepareClaim(const api::resourcev1::ResourceClaim& claim);
  // Kubelet-plugin mode: unprepares a claim by UID; OK when it is not prepared.
  Status UnprepareClaim(const std::string& claim_uid, std::string_view driver = {});
  // Called on the loop thread after every discovery with the inventories (health included).
  // May be replaced (or cleared with nullptr) at any time; returns once no call of the previous
  // observer is in flight.
  void set_discovery_observer(std::function<void(const std::vector<Inventory>&)> observer);
  bool kubelet_plugin() const { return options_.kubelet_plugin; }
  // The DRA driver names the agent's drivers publish.
  const std::vector<std::string>& managed_drivers() const { return managed_drivers_; }

  const std::string& node_name() const { return options_.node_name; }
  const Preparer& preparer() const { return *preparer_; }
  // The end of the node's current isolation, if it is isolated.
  std::optional<Timestamp> isolated_until() const { return isolated_until_; }
  // The inventories of the last successful discovery.
  const std::vector<Inventory>& inventories() const { return inventories_; }

 private:
  Agent(client::ApiClient& api, std::vector<std::unique_ptr<Driver>> drivers, AgentOptions options,
        const Clock& clock);
  void Run();
  void Process(const std::string& key);
  // The health of a device of this node as last discovered (KEP-4680: Healthy, Unhealthy, or
  // Unknown for devices this agent does not know); `message` says why it is unhealthy.
  std::string_view DeviceHealthOf(std::string_view driver, std::string_view pool,
                                  std::string_view device, std::string* message) const;
  // The Pods bound to this node, as the API lists them.
  StatusOr<std::vector<api::corev1::Pod>> NodePods();
  Status UnprepareUnused(const std::vector<api::corev1::Pod>& live_pods);
  // The devices of `claim` (named `name` in `namespace_`) this node's drivers serve, with the
  // opaque config that applies to each.
  ClaimToPrepare ToPrepare(const std::string& namespace_, const std::string& name,
                           const api::resourcev1::ResourceClaim& claim) const;
  Status WriteDeviceStatus(const std::string& namespace_, const std::string& name,
                           const std::string& uid, const ClaimRecord& record);
  // Running and Ready, with each container's allocatedResourcesStatus (KEP-4680) from the
  // claims by pod claim name; for a running Pod only the health is refreshed.
  Status MarkRunning(const api::corev1::Pod& pod,
                     const std::map<std::string, const api::resourcev1::ResourceClaim*>& claims);
  // Updates the status of `pod` with its JSON (fields the generated model does not carry).
  Status UpdatePodStatusJson(const api::corev1::Pod& pod, boost::json::value json);
  // DeviceUnhealthy / DeviceHealthy Events for the devices whose health differs between two
  // versions of status.containerStatuses; `messages`: why each unhealthy device is.
  void RecordHealthChanges(const api::corev1::Pod& pod, const boost::json::array& before,
                           const boost::json::array& after,
                           const std::map<std::string, std::string>& messages);
  Status MarkFailed(const api::corev1::Pod& pod, const std::string& message);
  void RecordFailure(const api::corev1::Pod& pod, const std::string& message);
  // Failing-node isolation: a prepare failed (`message`), or one succeeded.
  Status NotePrepareFailure(const std::string& message);
  Status NotePrepareSuccess();
  // Writes the node's isolation state (taint, annotation, condition) as `isolated_until_` says;
  // `reason` and `message` describe the condition.
  Status WriteIsolation(const std::string& reason, const std::string& message);
  Status WriteAttachConditions(
      const api::resourcev1::ResourceClaim& claim,
      const std::vector<std::pair<api::resourcev1::DeviceRequestAllocationResult, AttachResult>>&
          outcomes);

  client::ApiClient& api_;
  std::vector<std::unique_ptr<Driver>> drivers_;
  AgentOptions options_;
  const Clock& clock_;
  std::unique_ptr<Preparer> preparer_;
  std::vector<std::string> managed_drivers_;
  std::vector<Inventory> inventories_;
  Mutex observer_mu_;
  std::function<void(const std::vector<Inventory>&)> discovery_observer_
      DRAPLANE_GUARDED_BY(observer_mu_);
  // Serialises the drivers and the preparer between the loop thread's discovery and the kubelet
  // plugin's gRPC threads.
  Mutex drivers_mu_;
  std::unique_ptr<client::EventRecorder> events_;
  Timestamp last_node_status_{};
  bool initialized_ = false;

  // Failing-node isolation (loop thread).
  int consecutive_failures_ = 0;
  std::string last_failure_;
  int isolation_level_ = 0;
  std::optional<Timestamp> isolated_until_;
  // The last successful heartbeat (the first attempt until one succeeds); agent thread only.
  std::optional<Timestamp> last_heartbeat_;
  std::optional<Timestamp> last_isolation_end_;

  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::Informer<api::corev1::Pod>> pods_;
  // Pods nominated to the node (status.nominatedNodeName), for attaching their devices.
  std::unique_ptr<client::Informer<api::corev1::Pod>> nominated_;
  std::thread loop_;
  std::atomic<bool> started_{false};
};

}  // namespace draplane::agent
