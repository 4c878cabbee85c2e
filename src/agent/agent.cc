#include "agent/agent.h"

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <utility>

#include "agent/failure.h"
#include "agent/node_registration.h"
#include "agent/slice_plan.h"
#include "api/labels/node_isolation.h"
#include "api/pod_claims.h"
#include "api/pods.h"
#include "api/resource_health.h"
#include "api/validation/validation.h"
#include "client/events.h"
#include "client/informer.h"
#include "client/typed.h"
#include "client/workqueue.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;

namespace {

constexpr std::string_view kKeyNode = "node";
constexpr std::string_view kKeySlices = "slices";
constexpr std::string_view kKeyGc = "gc";
constexpr std::string_view kKeyResync = "resync";
constexpr std::string_view kPodKeyPrefix = "pod/";
constexpr std::string_view kAttachKeyPrefix = "attach/";
constexpr std::string_view kKeyIsolation = "isolation";

// The agent's metrics (process-wide, common/metrics.h): prepare failures per node and class, and
// whether the node is isolated for them.
metrics::CounterFamily PrepareFailuresMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "draplane_agent_device_prepare_failures_total",
      "Claims whose devices failed to prepare on the node, by failure class (retryable, "
      "terminal, needs-cleanup).",
      {"node", "class"});
  return family;
}
metrics::GaugeFamily NodeIsolatedMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_agent_node_isolated",
      "1 while the node is isolated for repeated device prepare failures (taint "
      "draplane.dev/device-prepare-failures), else 0.",
      {"node"});
  return family;
}

metrics::CounterFamily UnprepareFailuresMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "draplane_agent_device_unprepare_failures_total",
      "Claims whose devices failed to unprepare on the node, by failure class (retryable, "
      "terminal, needs-cleanup).",
      {"node", "class"});
  return family;
}
// Published vs discovered, at the last slice sync (before the agent corrected it).
metrics::GaugeFamily SliceDriftMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_slice_drift",
      "Devices whose published ResourceSlices differed from what the driver discovered at the "
      "agent's last slice sync, by kind: missing (discovered, not published), extra (published, "
      "not discovered), attribute (attributes or capacity differ). The agent then republishes; a "
      "value that stays non-zero means publishing fails or another writer changes the slices.",
      {"node", "driver", "kind"});
  return family;
}
metrics::GaugeFamily HeartbeatAgeMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_agent_heartbeat_age_seconds",
      "Seconds since the agent last renewed its node's heartbeat (Node status and Lease), or since "
      "its first attempt, as of its last attempt: 0 after a success, growing while they fail.",
      {"node"});
  return family;
}
metrics::GaugeFamily LastHeartbeatMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_agent_last_heartbeat_timestamp_seconds",
      "Unix time of the agent's last successful heartbeat (time() minus it: the age at scrape "
      "time, also when the agent is stuck).",
      {"node"});
  return family;
}

// Counts a failed unprepare by its failure class; returns `status`.
Status CountUnprepare(const std::string& node, Status status) {
  if (!status.ok()) {
    UnprepareFailuresMetric()
        .WithLabels({node, FailureClassName(ClassifyFailure(status))})
        .Increment();
  }
  return status;
}

std::string PodKey(std::string_view ns, std::string_view name) {
  return std::string(kPodKeyPrefix) + std::string(ns) + "/" + std::string(name);
}

bool IsLive(const cv1::Pod& pod) {
  return !pod.metadata.deletion_timestamp && !api::IsPodTerminal(pod);
}

std::vector<cv1::Pod> LiveOnly(std::vector<cv1::Pod> pods) {
  std::erase_if(pods, [](const cv1::Pod& pod) { return !IsLive(pod); });
  return pods;
}

// Does opaque config entry `config` (its `requests`) apply to allocation result request `req`?
// Upstream: an empty list applies to all requests; "req" covers its subrequests "req/sub".
bool ConfigApplies(const std::vector<std::string>& requests, const std::string& req) {
  if (requests.empty()) return true;
  const std::string parent = req.substr(0, req.find('/'));
  for (const std::string& r : requests) {
    if (r == req || r == parent) return true;
  }
  return false;
}

}  // namespace

namespace {

NodeRegistration RegistrationOf(const AgentOptions& options) {
  return NodeRegistration{.node_name = options.node_name,
                          .labels = options.labels,
                          .capacity = options.capacity,
                          .lease_duration_seconds = options.lease_duration_seconds,
                          .status_interval = options.node_status_interval,
                          .kubelet_version = "draplane-agent",
                          .ready_message = "draplane agent is posting ready status",
                          .field_manager = options.field_manager};
}

}  // namespace

api::corev1::Node RegisteredNode(const AgentOptions& options, Timestamp now) {
  return RegisteredNode(RegistrationOf(options), now);
}

StatusOr<std::unique_ptr<Agent>> Agent::Create(client::ApiClient& api,
                                               std::vector<std::unique_ptr<Driver>> drivers,
                                               AgentOptions options, const Clock& clock) {
  if (options.node_name.empty()) return InvalidArgumentError("agent: no node name");
  if (options.state_dir.empty()) return InvalidArgumentError("agent: no state dir");
  std::unique_ptr<Agent> agent(new Agent(api, std::move(drivers), std::move(options), clock));
  std::map<std::string, Driver*> by_name;
  for (const std::unique_ptr<Driver>& driver : agent->drivers_) {
    for (const std::string& name : driver->DriverNames()) {
      if (!by_name.emplace(name, driver.get()).second) {
        return InvalidArgumentError("agent: two drivers publish " + name);
      }
      agent->managed_drivers_.push_back(name);
    }
  }
  agent->preparer_ =
      std::make_unique<Preparer>(PreparerOptions{.state_dir = agent->options_.state_dir,
                                                 .node_name = agent->options_.node_name,
                                                 .cdi_dir = agent->options_.cdi_dir,
                                                 .shared_state = agent->options_.kubelet_plugin},
                                 std::move(by_name));
  return agent;
}

Agent::Agent(client::ApiClient& api, std::vector<std::unique_ptr<Driver>> drivers,
             AgentOptions options, const Clock& clock)
    : api_(api), drivers_(std::move(drivers)), options_(std::move(options)), clock_(clock) {
  events_ = std::make_unique<client::EventRecorder>(
      api_, clock_,
      client::EventRecorderOptions{
          .component = "draplane-agent", .host = options_.node_name, .synchronous = true});
  // Every series of the node exists from the start at 0, so that an alert on increase() sees the
  // first failure and dashboards find the families before anything failed.
  for (FailureClass cls :
       {FailureClass::kRetryable, FailureClass::kTerminal, FailureClass::kNeedsCleanup}) {
    PrepareFailuresMetric().WithLabels({options_.node_name, FailureClassName(cls)});
    UnprepareFailuresMetric().WithLabels({options_.node_name, FailureClassName(cls)});
  }
  NodeIsolatedMetric().WithLabels({options_.node_name}).Set(0);
}

Agent::~Agent() { Stop(); }

Status Agent::Init() {
  DRAPLANE_RETURN_IF_ERROR(preparer_->Recover());
  initialized_ = true;
  return Status::Ok();
}

// ---- node ---------------------------------------------------------------------------------

Status Agent::SyncNode() {
  return SyncNodeRegistration(api_, RegistrationOf(options_), clock_, &last_node_status_);
}

// ---- slices -------------------------------------------------------------------------------

Status Agent::SyncSlices() {
  std::vector<Inventory> all;
  MutexLock lock(drivers_mu_);
  for (const std::unique_ptr<Driver>& driver : drivers_) {
    StatusOr<std::vector<Inventory>> found = driver->Discover();
    if (!found.ok()) {
      // Keep what this driver published last time.
      log::Warning("node {}: {} driver: {}", options_.node_name, driver->kind(),
                   found.status().ToString());
      std::vector<std::string> names = driver->DriverNames();
      for (const Inventory& inv : inventories_) {
        if (std::find(names.begin(), names.end(), inv.driver) != names.end()) all.push_back(inv);
      }
      continue;
    }
    all.insert(all.end(), found->begin(), found->end());
  }
  lock.Unlock();
  // A device's health changed: the Pods of the node report it (KEP-4680).
  auto health_of = [](const std::vector<Inventory>& inventories) {
    std::map<std::string, bool> out;
    for (const Inventory& inv : inventories) {
      for (const DiscoveredDevice& d : inv.devices) {
        out[inv.driver + "/" + d.device.name] = d.health.healthy;
      }
    }
    return out;
  };
  const bool health_changed = health_of(all) != health_of(inventories_);
  inventories_ = all;
  if (health_changed && queue_ && pods_) {
    for (const auto& pod : pods_->List()) {
      queue_->Add(PodKey(pod->metadata.namespace_, pod->metadata.name));
    }
  }
  {
    MutexLock observer_lock(observer_mu_);
    if (discovery_observer_) discovery_observer_(inventories_);
  }

  client::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<rv1::ResourceSlice> stored,
                            client::List<rv1::ResourceSlice>(api_, "", list));
  for (const auto& [driver, drift] :
       CompareSlices(options_.node_name, all, managed_drivers_, stored.items)) {
    SliceDriftMetric().WithLabels({options_.node_name, driver, "missing"}).Set(drift.missing);
    SliceDriftMetric().WithLabels({options_.node_name, driver, "extra"}).Set(drift.extra);
    SliceDriftMetric().WithLabels({options_.node_name, driver, "attribute"}).Set(drift.attribute);
  }
  // The Node owns the slices (upstream's kubelet plugins publish them so): deleting the Node
  // deletes them, rather than leaving its devices counted as available. Read each time, since a
  // Node deleted and registered again has a new uid. Without it (not registered yet, or not
  // readable by this identity) the slices keep their owners.
  std::optional<api::metav1::OwnerReference> owner;
  if (StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", options_.node_name); node.ok()) {
    owner.emplace();
    owner->api_version = "v1";
    owner->kind = "Node";
    owner->name = node->metadata.name;
    owner->uid = node->metadata.uid;
    owner->controller = true;
  }
  SlicePlan plan = PlanSliceSync(options_.node_name, all, managed_drivers_, stored.items, owner);
  if (plan.empty()) return Status::Ok();
  // Validate everything before writing anything.
  for (const auto* list_of : {&plan.updates, &plan.creates}) {
    for (const rv1::ResourceSlice& slice : *list_of) {
      api::FieldErrorList errors = api::validation::ValidateResourceSlice(slice);
      if (!errors.empty()) {
        return InvalidArgumentError("node " + options_.node_name + ": slice " +
                                    slice.metadata.name +
                                    " would be invalid: " + errors.front().ToString());
      }
    }
  }
  for (const std::string& name : plan.deletes) {
    Status s = client::Delete<rv1::ResourceSlice>(api_, "", name);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  for (const rv1::ResourceSlice& slice : plan.updates) {
    DRAPLANE_RETURN_IF_ERROR(client::Update(api_, slice, options_.field_manager).status());
  }
  for (const rv1::ResourceSlice& slice : plan.creates) {
    DRAPLANE_RETURN_IF_ERROR(client::Create(api_, slice, options_.field_manager).status());
  }
  log::Info("node {}: published slices ({} created, {} updated, {} deleted)", options_.node_name,
            plan.creates.size(), plan.updates.size(), plan.deletes.size());
  return Status::Ok();
}

// ---- pods ---------------------------------------------------------------------------------

StatusOr<std::vector<std::string>> PodClaimNames(const cv1::Pod& pod) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<api::PodClaimRef> refs, api::ResolvePodClaims(pod));
  std::vector<std::string> out;
  out.reserve(refs.size());
  for (api::PodClaimRef& ref : refs) out.push_back(std::move(ref.claim));
  return out;
}

std::string_view Agent::DeviceHealthOf(std::string_view driver, std::string_view pool,
                                       std::string_view device, std::string* message) const {
  if (pool != options_.node_name) return api::kResourceHealthUnknown;
  for (const Inventory& inv : inventories_) {
    if (inv.driver != driver) continue;
    for (const DiscoveredDevice& d : inv.devices) {
      if (d.device.name != device) continue;
      if (message != nullptr) *message = d.health.message;
      return d.health.healthy ? api::kResourceHealthy : api::kResourceUnhealthy;
    }
  }
  return api::kResourceHealthUnknown;
}

void Agent::RecordFailure(const cv1::Pod& pod, const std::string& message) {
  events_->Record(client::ReferenceTo(pod), cv1::kEventTypeWarning, kFailedPrepareReason, message);
}

StatusOr<PodOutcome> Agent::SyncPod(const std::string& namespace_, const std::string& name) {
  if (!initialized_) return FailedPreconditionError("Agent::Init was not called");
  StatusOr<cv1::Pod> got = client::Get<cv1::Pod>(api_, namespace_, name);
  if (!got.ok()) {
    if (got.status().code() == StatusCode::kNotFound) {
      DRAPLANE_RETURN_IF_ERROR(CollectGarbage());
      return PodOutcome::kDone;
    }
    if (got.status().code() != StatusCode::kFailedPrecondition) return got.status();
    // The node authorizer lets a node read only the Pods bound to it, so a Pod deleted since it
    // was queued is refused (403), not 404. Gone when the node's own list no longer has it
    // (cleaned up, done: retrying it would go on for good); still listed, the authorizer has yet
    // to learn of its binding: try again later.
    DRAPLANE_ASSIGN_OR_RETURN(std::vector<cv1::Pod> pods, NodePods());
    for (const cv1::Pod& pod : pods) {
      if (pod.metadata.namespace_ == namespace_ && pod.metadata.name == name) {
        return PodOutcome::kRetry;
      }
    }
    DRAPLANE_RETURN_IF_ERROR(UnprepareUnused(LiveOnly(std::move(pods))));
    return PodOutcome::kDone;
  }
  const cv1::Pod& pod = *got;
  if (pod.spec.node_name != options_.node_name) return PodOutcome::kDone;

  // 1. Deleting: release devices, then finish the deletion as the kubelet would.
  if (pod.metadata.deletion_timestamp) {
    DRAPLANE_RETURN_IF_ERROR(CollectGarbage());
    if (options_.simulate_containers) {
      // A Pod a finalizer keeps first ends Failed (api/pods.h).
      if (std::optional<boost::json::object> stopped =
              api::StoppedPodStatusPatch(pod, api::Time::FromTimestamp(clock_.Now()))) {
        Status s =
            client::PatchOnly<cv1::Pod>(api_, namespace_, name, client::PatchType::kMerge,
                                        std::move(*stopped), "status", options_.field_manager);
        if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
      }
      client::DeleteOptions force;
      force.grace_period_seconds = 0;
      force.precondition_uid = pod.metadata.uid;
      Status s = client::Delete<cv1::Pod>(api_, namespace_, name, force);
      if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kConflict) {
        return s;
      }
    }
    return PodOutcome::kDone;
  }
  // 2. Finished.
  if (api::IsPodTerminal(pod)) {
    DRAPLANE_RETURN_IF_ERROR(CollectGarbage());
    return PodOutcome::kDone;
  }
  // Playing the kubelet, a running Pod's active deadline: failed once it passes (its claims are
  // then released and its devices unprepared as a finished Pod's), looked at again when it will.
  if (std::optional<Timestamp> deadline = api::ActiveDeadline(pod);
      deadline && options_.simulate_containers) {
    const api::Time now = api::Time::FromTimestamp(clock_.Now());
    if (std::optional<boost::json::object> failed = api::DeadlineExceededStatusPatch(pod, now)) {
      Status s = client::PatchOnly<cv1::Pod>(api_, namespace_, name, client::PatchType::kMerge,
                                             std::move(*failed), "status", options_.field_manager);
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;  // Conflict: the newer Pod
      return PodOutcome::kDone;
    }
    if (queue_) queue_->AddAfter(PodKey(namespace_, name), *deadline - clock_.Now());
  }
  // 3. Prepare.
  StatusOr<std::vector<api::PodClaimRef>> claim_names = api::ResolvePodClaims(pod);
  if (!claim_names.ok()) {
    log::Debug("pod {}/{}: {}", namespace_, name, claim_names.status().ToString());
    return PodOutcome::kRetry;
  }
  // The claims by pod claim name, for the containers' device health (KEP-4680).
  std::map<std::string, rv1::ResourceClaim> by_entry;
  for (const auto& [entry, claim_name] : *claim_names) {
    StatusOr<rv1::ResourceClaim> claim =
        client::Get<rv1::ResourceClaim>(api_, namespace_, claim_name);
    if (!claim.ok()) {
      // Not found, or not yet readable by this node (the node authorizer lets a node read a
      // claim only once it is reserved for one of its Pods): try again later.
      if (claim.status().code() == StatusCode::kNotFound ||
          claim.status().code() == StatusCode::kFailedPrecondition) {
        return PodOutcome::kRetry;
      }
      return claim.status();
    }
    bool reserved = false;
    for (const rv1::ResourceClaimConsumerReference& ref : claim->status.reserved_for) {
      if (ref.uid == pod.metadata.uid) reserved = true;
    }
    if (!claim->status.allocation || !reserved) {
      log::Debug("pod {}/{}: claim {} is not allocated and reserved for it yet", namespace_, name,
                 claim_name);
      return PodOutcome::kRetry;
    }
    if (!entry.empty()) by_entry[entry] = *claim;
    if (options_.simulate_containers) {
      // Playing the kubelet: it hands each device to its driver's plugin on the node, and one
      // that has none here fails the Pod's start until it registers (the kubelet retries).
      for (const rv1::DeviceRequestAllocationResult& r :
           claim->status.allocation->devices.results) {
        if (std::find(managed_drivers_.begin(), managed_drivers_.end(), r.driver) !=
            managed_drivers_.end()) {
          continue;
        }
        const std::string message = "claim " + claim_name + ": DRA driver " + r.driver +
                                    " is not registered on node " + options_.node_name +
                                    " (device " + r.pool + "/" + r.device + ")";
        log::Info("node {}: pod {}/{}: {}", options_.node_name, namespace_, name, message);
        RecordFailure(pod, message);
        return PodOutcome::kRetry;
      }
    }
    const ClaimToPrepare request = ToPrepare(namespace_, claim_name, *claim);
    if (request.devices.empty()) continue;
    const bool was_prepared = preparer_->IsPrepared(request);
    if (!was_prepared) {
      std::string held = preparer_->StillPreparedForAnother(request);
      if (!held.empty()) {
        // kubernetes/kubernetes#141471: release what no live Pod uses any more, then look again.
        Status gc = CollectGarbage();
        if (!gc.ok()) log::Warning("node {}: unpreparing: {}", options_.node_name, gc.ToString());
        held = preparer_->StillPreparedForAnother(request);
      }
      if (!held.empty()) {
        const std::string message =
            "claim " + claim_name + ": " + held + "; waiting until the node has unprepared it";
        log::Info("node {}: pod {}/{}: {}", options_.node_name, namespace_, name, message);
        events_->Record(client::ReferenceTo(pod), cv1::kEventTypeWarning,
                        kDeviceStillPreparedReason, message);
        return PodOutcome::kRetry;
      }
    }
    StatusOr<ClaimRecord> record = preparer_->Prepare(request);
    if (!record.ok()) {
      const FailureClass cls = ClassifyFailure(record.status());
      const std::string message = "claim " + claim_name + ": " +
                                  std::string(record.status().message()) + " (" +
                                  std::string(FailureClassName(cls)) + ")";
      log::Warning("node {}: pod {}/{}: {}", options_.node_name, namespace_, name, message);
      RecordFailure(pod, message);
      PrepareFailuresMetric().WithLabels({options_.node_name, FailureClassName(cls)}).Increment();
      Status noted = NotePrepareFailure(message);
      if (!noted.ok()) {
        log::Warning("node {}: isolating the node: {}", options_.node_name, noted.ToString());
      }
      if (cls == FailureClass::kNeedsCleanup) {
        Status cleaned = CountUnprepare(options_.node_name, preparer_->Unprepare(request.uid));
        if (!cleaned.ok()) {
          log::Warning("node {}: cleaning up claim {}: {}", options_.node_name, claim_name,
                       cleaned.ToString());
        }
      }
      if (cls == FailureClass::kTerminal) {
        DRAPLANE_RETURN_IF_ERROR(MarkFailed(pod, message));
        DRAPLANE_RETURN_IF_ERROR(CollectGarbage());
        return PodOutcome::kTerminal;
      }
      return PodOutcome::kRetry;
    }
    if (!was_prepared) {
      Status noted = NotePrepareSuccess();
      if (!noted.ok()) {
        log::Warning("node {}: lifting the node's isolation: {}", options_.node_name,
                     noted.ToString());
      }
    }
    Status written = WriteDeviceStatus(namespace_, claim_name, request.uid, *record);
    if (!written.ok()) {
      log::Warning("node {}: claim {}/{} device status: {}", options_.node_name, namespace_,
                   claim_name, written.ToString());
      return PodOutcome::kRetry;
    }
  }
  if (options_.simulate_containers) {
    std::map<std::string, const rv1::ResourceClaim*> claims;
    for (const auto& [entry, claim] : by_entry) claims[entry] = &claim;
    Status running = MarkRunning(pod, claims);
    if (!running.ok()) {
      if (running.code() == StatusCode::kConflict) return PodOutcome::kRetry;
      return running;
    }
  }
  return PodOutcome::kDone;
}

ClaimToPrepare Agent::ToPrepare(const std::string& namespace_, const std::string& name,
                                const rv1::ResourceClaim& claim) const {
  ClaimToPrepare request{
      .uid = claim.metadata.uid, .namespace_ = namespace_, .name = name, .devices = {}};
  if (!claim.status.allocation) return request;
  const rv1::DeviceAllocationResult& devices = claim.status.allocation->devices;
  for (const rv1::DeviceRequestAllocationResult& result : devices.results) {
    if (std::find(managed_drivers_.begin(), managed_drivers_.end(), result.driver) ==
            managed_drivers_.end() ||
        result.pool != options_.node_name) {
      continue;
    }
    AllocatedDevice device{.request = result.request,
                           .driver = result.driver,
                           .pool = result.pool,
                           .device = result.device,
                           .share_id = result.share_id,
                           .admin_access = result.admin_access.value_or(false),
                           .config = {}};
    for (const rv1::DeviceAllocationConfiguration& config : devices.config) {
      if (config.opaque && config.opaque->driver == result.driver &&
          ConfigApplies(config.requests, result.request)) {
        device.config.push_back(&config.opaque->parameters);
      }
    }
    request.devices.push_back(std::move(device));
  }
  return request;
}

StatusOr<ClaimRecord> Agent::PrepareClaim(const rv1::ResourceClaim& claim) {
  if (!initialized_) return FailedPreconditionError("Agent::Init was not called");
  const std::string& ns = claim.metadata.namespace_;
  const std::string& name = claim.metadata.name;
  if (!claim.status.allocation) {
    return FailedPreconditionError("not allocated");
  }
  const ClaimToPrepare request = ToPrepare(ns, name, claim);
  if (request.devices.empty()) {
    ClaimRecord nothing;
    nothing.namespace_ = ns;
    nothing.name = name;
    nothing.state = PrepareState::kCompleted;
    return nothing;
  }
  StatusOr<ClaimRecord> record = [&] {
    MutexLock lock(drivers_mu_);
    StatusOr<ClaimRecord> prepared = preparer_->Prepare(request);
    if (!prepared.ok() && ClassifyFailure(prepared.status()) == FailureClass::kNeedsCleanup) {
      Status cleaned = CountUnprepare(options_.node_name, preparer_->Unprepare(request.uid));
      if (!cleaned.ok()) {
        log::Warning("node {}: cleaning up claim {}/{}: {}", options_.node_name, ns, name,
                     cleaned.ToString());
      }
    }
    return prepared;
  }();
  if (!record.ok()) {
    PrepareFailuresMetric()
        .WithLabels({options_.node_name, FailureClassName(ClassifyFailure(record.status()))})
        .Increment();
    return record.status();
  }
  Status written = WriteDeviceStatus(ns, name, request.uid, *record);
  if (!written.ok()) {
    log::Warning("node {}: claim {}/{} device status: {}", options_.node_name, ns, name,
                 written.ToString());
  }
  return record;
}

void Agent::set_discovery_observer(std::function<void(const std::vector<Inventory>&)> observer) {
  MutexLock lock(observer_mu_);
  discovery_observer_ = std::move(observer);
}

Status Agent::UnprepareClaim(const std::string& claim_uid, std::string_view driver) {
  if (!initialized_) return FailedPreconditionError("Agent::Init was not called");
  MutexLock lock(drivers_mu_);
  return CountUnprepare(options_.node_name, preparer_->Unprepare(claim_uid, driver));
}

Status Agent::WriteDeviceStatus(const std::string& namespace_, const std::string& name,
                                const std::string& uid, const ClaimRecord& record) {
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  for (int attempt = 0; attempt < 3; ++attempt) {
    StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api_, namespace_, name);
    if (!claim.ok()) return claim.status();
    if (claim->metadata.uid != uid || !claim->status.allocation) {
      return ConflictError("claim " + name + " changed while preparing");
    }
    bool changed = false;
    for (const DeviceRecord& d : record.devices) {
      rv1::AllocatedDeviceStatus* entry = nullptr;
      for (rv1::AllocatedDeviceStatus& s : claim->status.devices) {
        if (s.driver == d.driver && s.pool == d.pool && s.device == d.device &&
            s.share_id == d.share_id) {
          entry = &s;
        }
      }
      if (entry == nullptr) {
        claim->status.devices.emplace_back();
        entry = &claim->status.devices.back();
        entry->driver = d.driver;
        entry->pool = d.pool;
        entry->device = d.device;
        entry->share_id = d.share_id;
        changed = true;
      }
      boost::json::array ids;
      for (const std::string& id : d.cdi_device_ids) ids.emplace_back(id);
      api::RawJson data(boost::json::value(boost::json::object{{"cdiDeviceIDs", std::move(ids)}}));
      if (!(entry->data == data)) {
        entry->data = std::move(data);
        changed = true;
      }
      if (entry->network_data != d.network) {
        entry->network_data = d.network;
        changed = true;
      }
      api::metav1::Condition* ready = nullptr;
      for (api::metav1::Condition& c : entry->conditions) {
        if (c.type == "Ready") ready = &c;
      }
      if (ready == nullptr || ready->status != "True") {
        if (ready == nullptr) {
          entry->conditions.emplace_back();
          ready = &entry->conditions.back();
          ready->type = "Ready";
        }
        ready->status = "True";
        ready->reason = "Prepared";
        ready->message = "prepared on node " + options_.node_name;
        ready->last_transition_time = now;
        ready->observed_generation = claim->metadata.generation;
        changed = true;
      }
    }
    if (!changed) return Status::Ok();
    StatusOr<rv1::ResourceClaim> updated =
        client::UpdateStatus(api_, *claim, options_.field_manager);
    if (updated.ok()) return Status::Ok();
    if (updated.status().code() != StatusCode::kConflict) return updated.status();
  }
  return ConflictError("claim " + name + ": status kept changing");
}

Status Agent::MarkRunning(const cv1::Pod& pod,
                          const std::map<std::string, const rv1::ResourceClaim*>& claims) {
  std::map<std::string, std::string> messages;  // resourceID -> why it is unhealthy
  std::map<std::string, boost::json::array> health = api::AllocatedResourcesStatus(
      pod, claims, [&](std::string_view driver, std::string_view pool, std::string_view device) {
        std::string message;
        std::string_view h = DeviceHealthOf(driver, pool, device, &message);
        if (h == api::kResourceUnhealthy) {
          messages[std::string(driver) + "/" + std::string(pool) + "/" + std::string(device)] =
              message;
        }
        return h;
      });
  if (pod.status.phase == cv1::kPodPhaseRunning && api::HasPodCondition(pod, "Ready", "True") &&
      api::HasPodCondition(pod, kDevicesPreparedCondition, "True")) {
    // Running already: only the devices' health may have changed (KEP-4680).
    boost::json::value json = client::ToJson(pod);
    boost::json::object& status = json.as_object()["status"].as_object();
    auto statuses = status.find("containerStatuses");
    if (statuses == status.end() || !statuses->value().is_array()) return Status::Ok();
    boost::json::array before = statuses->value().get_array();
    if (!api::SetAllocatedResourcesStatus(statuses->value().get_array(), health)) {
      return Status::Ok();
    }
    RecordHealthChanges(pod, before, statuses->value().get_array(), messages);
    return UpdatePodStatusJson(pod, std::move(json));
  }
  cv1::Pod updated = pod;
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  api::SetPodCondition(&updated.status, kDevicesPreparedCondition, "True", "", "", now);
  boost::json::value json = client::ToJson(updated);
  api::RunningPodOptions running;
  running.allocated_resources_status = std::move(health);
  boost::json::object status = api::RunningPodStatus(updated, now, running);
  RecordHealthChanges(pod, boost::json::array(), status["containerStatuses"].as_array(), messages);
  json.as_object()["status"] = std::move(status);
  return UpdatePodStatusJson(pod, std::move(json));
}

Status Agent::UpdatePodStatusJson(const cv1::Pod& pod, boost::json::value json) {
  client::ApiRequest request;
  request.verb = client::Verb::kUpdate;
  request.resource = &client::ResourceOf<cv1::Pod>();
  request.namespace_ = pod.metadata.namespace_;
  request.name = pod.metadata.name;
  request.subresource = "status";
  request.field_manager = options_.field_manager;
  request.body = std::move(json);
  return api_.Do(request).status();
}

void Agent::RecordHealthChanges(const cv1::Pod& pod, const boost::json::array& before,
                                const boost::json::array& after,
                                const std::map<std::string, std::string>& messages) {
  // resourceID -> health, over every container's entries.
  auto healths = [](const boost::json::array& statuses) {
    std::map<std::string, std::string> out;
    for (const boost::json::value& cs : statuses) {
      if (!cs.is_object()) continue;
      auto entries = cs.get_object().find("allocatedResourcesStatus");
      if (entries == cs.get_object().end() || !entries->value().is_array()) continue;
      for (const boost::json::value& e : entries->value().get_array()) {
        auto resources = e.as_object().find("resources");
        if (resources == e.as_object().end()) continue;
        for (const boost::json::value& r : resources->value().as_array()) {
          out[std::string(r.at("resourceID").as_string())] =
              std::string(r.at("health").as_string());
        }
      }
    }
    return out;
  };
  std::map<std::string, std::string> old_health = healths(before);
  for (const auto& [id, health] : healths(after)) {
    auto was = old_health.find(id);
    const bool unhealthy = health == api::kResourceUnhealthy;
    if (was == old_health.end() ? !unhealthy : was->second == health) continue;
    if (unhealthy) {
      auto why = messages.find(id);
      events_->Record(client::ReferenceTo(pod), cv1::kEventTypeWarning, kDeviceUnhealthyReason,
                      "device " + id + " is Unhealthy" +
                          (why == messages.end() || why->second.empty() ? "" : ": " + why->second));
    } else if (health == api::kResourceHealthy) {
      events_->Record(client::ReferenceTo(pod), cv1::kEventTypeNormal, kDeviceHealthyReason,
                      "device " + id + " is Healthy again");
    }
  }
}

Status Agent::MarkFailed(const cv1::Pod& pod, const std::string& message) {
  cv1::Pod updated = pod;
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  updated.status.phase = std::string(cv1::kPodPhaseFailed);
  updated.status.reason = std::string(kFailedPrepareReason);
  updated.status.message = message;
  api::SetPodCondition(&updated.status, kDevicesPreparedCondition, "False", kFailedPrepareReason,
                       message, now);
  api::SetPodCondition(&updated.status, "Ready", "False", kFailedPrepareReason, message, now);
  return client::UpdateStatus(api_, updated, options_.field_manager).status();
}

// ---- attach (KEP-5007) --------------------------------------------------------------------

StatusOr<std::optional<Duration>> Agent::SyncAttach(const cv1::Pod& pod) {
  if (!initialized_) return FailedPreconditionError("Agent::Init was not called");
  if (!pod.spec.node_name.empty() || pod.status.nominated_node_name != options_.node_name ||
      pod.metadata.deletion_timestamp || api::IsPodTerminal(pod)) {
    return std::optional<Duration>();
  }
  StatusOr<std::vector<api::PodClaimRef>> claim_names = api::ResolvePodClaims(pod);
  if (!claim_names.ok()) return std::optional<Duration>();  // nothing allocated for it yet
  std::set<std::string> our_drivers(managed_drivers_.begin(), managed_drivers_.end());
  std::optional<Duration> again;
  for (const auto& [entry, claim_name] : *claim_names) {
    StatusOr<rv1::ResourceClaim> claim =
        client::Get<rv1::ResourceClaim>(api_, pod.metadata.namespace_, claim_name);
    if (!claim.ok()) {
      if (claim.status().code() == StatusCode::kNotFound ||
          claim.status().code() == StatusCode::kFailedPrecondition) {
        continue;  // gone, or not (or no longer) reserved for a Pod of this node
      }
      return claim.status();
    }
    bool reserved = false;
    for (const rv1::ResourceClaimConsumerReference& ref : claim->status.reserved_for) {
      if (ref.uid == pod.metadata.uid) reserved = true;
    }
    if (!claim->status.allocation || !reserved) continue;
    std::vector<std::pair<rv1::DeviceRequestAllocationResult, AttachResult>> outcomes;
    for (const rv1::DeviceRequestAllocationResult& r : claim->status.allocation->devices.results) {
      if (r.binding_conditions.empty() || our_drivers.count(r.driver) == 0 ||
          r.pool != options_.node_name) {
        continue;
      }
      // Answered already?
      bool answered = false;
      for (const rv1::AllocatedDeviceStatus& d : claim->status.devices) {
        if (d.driver != r.driver || d.pool != r.pool || d.device != r.device) continue;
        for (const api::metav1::Condition& c : d.conditions) {
          if (c.status == "True" &&
              (std::find(r.binding_conditions.begin(), r.binding_conditions.end(), c.type) !=
                   r.binding_conditions.end() ||
               std::find(r.binding_failure_conditions.begin(), r.binding_failure_conditions.end(),
                         c.type) != r.binding_failure_conditions.end())) {
            answered = true;
          }
        }
      }
      if (answered) continue;
      Driver* driver = nullptr;
      for (const std::unique_ptr<Driver>& d : drivers_) {
        std::vector<std::string> names = d->DriverNames();
        if (std::find(names.begin(), names.end(), r.driver) != names.end()) driver = d.get();
      }
      if (driver == nullptr) continue;
      AttachResult result =
          driver->AttachDevice(DevicePrepareRequest{.claim_uid = claim->metadata.uid,
                                                    .claim_namespace = claim->metadata.namespace_,
                                                    .claim_name = claim->metadata.name,
                                                    .request = r.request,
                                                    .driver = r.driver,
                                                    .pool = r.pool,
                                                    .device = r.device,
                                                    .share_id = r.share_id,
                                                    .admin_access = r.admin_access.value_or(false),
                                                    .config = {}});
      if (result.kind == AttachResult::Kind::kPending) {
        again = again ? std::min(*again, result.retry_after) : result.retry_after;
        continue;
      }
      if (result.kind == AttachResult::Kind::kFailed && queue_) {
        queue_->Add(std::string(kKeySlices));  // publish the failed device's taint at once
      }
      outcomes.emplace_back(r, std::move(result));
    }
    if (!outcomes.empty()) DRAPLANE_RETURN_IF_ERROR(WriteAttachConditions(*claim, outcomes));
  }
  return again;
}

Status Agent::WriteAttachConditions(
    const rv1::ResourceClaim& claim,
    const std::vector<std::pair<rv1::DeviceRequestAllocationResult, AttachResult>>& outcomes) {
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  rv1::ResourceClaim current = claim;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) {
      StatusOr<rv1::ResourceClaim> fresh =
          client::Get<rv1::ResourceClaim>(api_, claim.metadata.namespace_, claim.metadata.name);
      if (!fresh.ok()) return fresh.status();
      if (fresh->metadata.uid != claim.metadata.uid || !fresh->status.allocation ||
          !(*fresh->status.allocation == *claim.status.allocation)) {
        return Status::Ok();  // deallocated or allocated anew meanwhile: nothing to report
      }
      current = std::move(*fresh);
    }
    for (const auto& [r, result] : outcomes) {
      rv1::AllocatedDeviceStatus* entry = nullptr;
      for (rv1::AllocatedDeviceStatus& d : current.status.devices) {
        if (d.driver == r.driver && d.pool == r.pool && d.device == r.device &&
            d.share_id == r.share_id) {
          entry = &d;
        }
      }
      if (entry == nullptr) {
        current.status.devices.emplace_back();
        entry = &current.status.devices.back();
        entry->driver = r.driver;
        entry->pool = r.pool;
        entry->device = r.device;
        entry->share_id = r.share_id;
      }
      auto set = [&](const std::string& type, const std::string& reason,
                     const std::string& message) {
        std::erase_if(entry->conditions,
                      [&](const api::metav1::Condition& c) { return c.type == type; });
        api::metav1::Condition c;
        c.type = type;
        c.status = "True";
        c.reason = reason;
        c.message = message;
        c.last_transition_time = now;
        c.observed_generation = current.metadata.generation;
        entry->conditions.push_back(std::move(c));
      };
      if (result.kind == AttachResult::Kind::kAttached) {
        for (const std::string& type : r.binding_conditions) {
          set(type, "Attached", "attached to node " + options_.node_name);
        }
      } else if (!r.binding_failure_conditions.empty()) {
        set(r.binding_failure_conditions.front(), "AttachFailed", result.message);
      }
    }
    StatusOr<rv1::ResourceClaim> updated =
        client::UpdateStatus(api_, current, options_.field_manager);
    if (updated.ok()) {
      log::Info("node {}: claim {}/{}: attach outcome of {} device(s) reported", options_.node_name,
                claim.metadata.namespace_, claim.metadata.name, outcomes.size());
      return Status::Ok();
    }
    if (updated.status().code() != StatusCode::kConflict) return updated.status();
  }
  return ConflictError("claim " + claim.metadata.name + ": status kept changing");
}

// ---- isolation ----------------------------------------------------------------------------

Status Agent::NotePrepareFailure(const std::string& message) {
  ++consecutive_failures_;
  last_failure_ = message;
  if (options_.isolate_after_failures <= 0 ||
      consecutive_failures_ < options_.isolate_after_failures || isolated_until_) {
    return Status::Ok();
  }
  const Timestamp now = clock_.Now();
  // Exponential backoff: an isolation that follows the previous one closely lasts twice as long.
  if (last_isolation_end_ && now - *last_isolation_end_ < options_.isolation_max_backoff) {
    ++isolation_level_;
  } else {
    isolation_level_ = 1;
  }
  Duration backoff = options_.isolation_backoff;
  for (int i = 1; i < isolation_level_ && backoff < options_.isolation_max_backoff; ++i) {
    backoff *= 2;
  }
  backoff = std::min(backoff, options_.isolation_max_backoff);
  isolated_until_ = now + backoff;
  const std::string text =
      std::to_string(consecutive_failures_) +
      " device prepares in a row failed (last: " + last_failure_ + "); no new pods until " +
      api::Time::FromTimestamp(*isolated_until_).text() + " (isolation " +
      std::to_string(isolation_level_) + ", " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(backoff).count()) +
      "s) or until a prepare succeeds";
  log::Warning("node {}: isolated: {}", options_.node_name, text);
  NodeIsolatedMetric().WithLabels({options_.node_name}).Set(1);
  if (queue_) queue_->AddAfter(std::string(kKeyIsolation), backoff);
  return WriteIsolation("RepeatedPrepareFailures", text);
}

Status Agent::NotePrepareSuccess() {
  consecutive_failures_ = 0;
  if (!isolated_until_) return Status::Ok();
  isolated_until_.reset();
  last_isolation_end_ = clock_.Now();
  log::Info("node {}: a device prepare succeeded; isolation lifted", options_.node_name);
  NodeIsolatedMetric().WithLabels({options_.node_name}).Set(0);
  return WriteIsolation("PrepareSucceeded", "a device prepare succeeded; the node takes new pods");
}

StatusOr<std::optional<Duration>> Agent::SyncIsolation() {
  const Timestamp now = clock_.Now();
  if (!isolated_until_) {
    // After a restart: adopt the isolation written before, or clean up one that is over.
    StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", options_.node_name);
    if (!node.ok()) {
      if (node.status().code() == StatusCode::kNotFound) return std::optional<Duration>();
      return node.status();
    }
    std::optional<Timestamp> until = api::labels::IsolationUntil(*node);
    if (!until) return std::optional<Duration>();
    if (now < *until && *until != Timestamp::max()) {
      isolated_until_ = until;
      NodeIsolatedMetric().WithLabels({options_.node_name}).Set(1);
      return std::optional<Duration>(*until - now);
    }
  } else if (now < *isolated_until_) {
    return std::optional<Duration>(*isolated_until_ - now);
  }
  isolated_until_.reset();
  last_isolation_end_ = now;
  consecutive_failures_ = 0;
  log::Info("node {}: isolation backoff over; isolation lifted", options_.node_name);
  NodeIsolatedMetric().WithLabels({options_.node_name}).Set(0);
  DRAPLANE_RETURN_IF_ERROR(
      WriteIsolation("BackoffExpired", "the isolation backoff is over; the node takes new pods"));
  return std::optional<Duration>();
}

Status Agent::WriteIsolation(const std::string& reason, const std::string& message) {
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  for (int attempt = 0; attempt < 3; ++attempt) {
    StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", options_.node_name);
    if (!node.ok()) return node.status();
    const std::string key(api::labels::kPrepareFailuresTaintKey);
    const std::string annotation(api::labels::kPrepareFailuresUntilAnnotation);
    std::erase_if(node->spec.taints, [&](const cv1::Taint& t) { return t.key == key; });
    node->metadata.annotations.erase(annotation);
    if (isolated_until_) {
      cv1::Taint taint;
      taint.key = key;
      taint.effect = "NoSchedule";
      taint.time_added = now;
      node->spec.taints.push_back(std::move(taint));
      node->metadata.annotations[annotation] = api::Time::FromTimestamp(*isolated_until_).text();
    }
    StatusOr<cv1::Node> updated = client::Update(api_, *node, options_.field_manager);
    if (!updated.ok()) {
      if (updated.status().code() == StatusCode::kConflict) continue;
      return updated.status();
    }
    cv1::NodeCondition condition;
    condition.type = std::string(api::labels::kPrepareFailuresCondition);
    condition.status = isolated_until_ ? "True" : "False";
    condition.reason = reason;
    condition.message = message;
    condition.last_heartbeat_time = now;
    condition.last_transition_time = now;
    std::erase_if(updated->status.conditions,
                  [&](const cv1::NodeCondition& c) { return c.type == condition.type; });
    updated->status.conditions.push_back(std::move(condition));
    StatusOr<cv1::Node> written = client::UpdateStatus(api_, *updated, options_.field_manager);
    if (written.ok()) return Status::Ok();
    if (written.status().code() != StatusCode::kConflict) return written.status();
  }
  return ConflictError("node " + options_.node_name + ": kept changing");
}

Status Agent::SyncPods() {
  client::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<cv1::Pod> pods,
                            client::List<cv1::Pod>(api_, "", list));
  Status first;
  for (const cv1::Pod& pod : pods.items) {
    StatusOr<PodOutcome> outcome = SyncPod(pod.metadata.namespace_, pod.metadata.name);
    if (!outcome.ok() && first.ok()) first = outcome.status();
  }
  Status gc = CollectGarbage();
  return first.ok() ? gc : first;
}

StatusOr<std::vector<cv1::Pod>> Agent::NodePods() {
  client::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<cv1::Pod> pods,
                            client::List<cv1::Pod>(api_, "", list));
  return std::move(pods.items);
}

Status Agent::CollectGarbage() {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<cv1::Pod> pods, NodePods());
  return UnprepareUnused(LiveOnly(std::move(pods)));
}

Status Agent::UnprepareUnused(const std::vector<cv1::Pod>& live_pods) {
  std::set<std::pair<std::string, std::string>> used;
  for (const cv1::Pod& pod : live_pods) {
    StatusOr<std::vector<api::PodClaimRef>> names = api::ResolvePodClaims(pod);
    if (!names.ok()) continue;
    for (const auto& [entry, name] : *names) used.emplace(pod.metadata.namespace_, name);
  }
  std::vector<std::string> unused;
  for (const auto& [uid, record] : preparer_->checkpoint().claims) {
    if (used.count({record.namespace_, record.name}) == 0) {
      unused.push_back(uid);
      continue;
    }
    // Still referenced by name: is it still the same claim?
    StatusOr<rv1::ResourceClaim> claim =
        client::Get<rv1::ResourceClaim>(api_, record.namespace_, record.name);
    // Gone, or no longer readable by this node (no Pod of the node uses it any more).
    const bool gone = !claim.ok() && (claim.status().code() == StatusCode::kNotFound ||
                                      claim.status().code() == StatusCode::kFailedPrecondition);
    if (!claim.ok() && !gone) return claim.status();
    if (gone || claim->metadata.uid != uid || !claim->status.allocation) {
      unused.push_back(uid);
    }
  }
  Status first;
  for (const std::string& uid : unused) {
    const ClaimRecord record = preparer_->checkpoint().claims.at(uid);
    Status s = CountUnprepare(options_.node_name, preparer_->Unprepare(uid));
    if (s.ok()) {
      log::Info("node {}: unprepared claim {}/{} ({})", options_.node_name, record.namespace_,
                record.name, uid);
    } else if (first.ok()) {
      first = s;
    }
  }
  return first;
}

// ---- loop ---------------------------------------------------------------------------------

Status Agent::Start() {
  if (!initialized_) return FailedPreconditionError("Agent::Init was not called");
  if (started_.exchange(true)) return Status::Ok();
  queue_ = std::make_unique<client::WorkQueue>(
      clock_, client::RateLimiterOptions{.base_delay = options_.retry_base_delay,
                                         .max_delay = options_.retry_max_delay,
                                         .qps = 0,
                                         .burst = 0});
  if (options_.kubelet_plugin) {
    // The kubelet owns the Node, its Lease and the Pods; only slices are the agent's.
    queue_->Add(std::string(kKeySlices));
    loop_ = std::thread([this] { Run(); });
    return Status::Ok();
  }
  client::InformerOptions informer;
  informer.field_selector = "spec.nodeName=" + options_.node_name;
  pods_ = std::make_unique<client::Informer<cv1::Pod>>(api_, informer);
  client::WorkQueue* queue = queue_.get();
  pods_->AddHandlers({.on_add =
                          [queue](const auto& pod) {
                            queue->Add(PodKey(pod->metadata.namespace_, pod->metadata.name));
                          },
                      .on_update =
                          [queue](const auto&, const auto& pod) {
                            queue->Add(PodKey(pod->metadata.namespace_, pod->metadata.name));
                          },
                      .on_delete = [queue](const auto&) { queue->Add(std::string(kKeyGc)); }});
  // Pods the scheduler nominated to this node while it waits for binding conditions.
  client::InformerOptions nominated;
  nominated.field_selector = "status.nominatedNodeName=" + options_.node_name;
  nominated_ = std::make_unique<client::Informer<cv1::Pod>>(api_, nominated);
  auto attach = [queue](const cv1::Pod& pod) {
    if (pod.spec.node_name.empty()) {
      queue->Add(std::string(kAttachKeyPrefix) + pod.metadata.namespace_ + "/" + pod.metadata.name);
    }
  };
  nominated_->AddHandlers({.on_add = [attach](const auto& pod) { attach(*pod); },
                           .on_update = [attach](const auto&, const auto& pod) { attach(*pod); },
                           .on_delete = {}});
  for (std::string_view key : {kKeyNode, kKeySlices, kKeyResync, kKeyIsolation}) {
    queue_->Add(std::string(key));
  }
  pods_->Start();
  nominated_->Start();
  loop_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Agent::Stop() {
  if (!started_.exchange(false)) return;
  queue_->ShutDown();
  if (loop_.joinable()) loop_.join();
  if (pods_) pods_->Stop();
  if (nominated_) nominated_->Stop();
  events_->Stop();
}

void Agent::Run() {
  while (std::optional<std::string> key = queue_->Get()) {
    Process(*key);
    queue_->Done(*key);
  }
}

void Agent::Process(const std::string& key) {
  if (key == kKeyNode) {
    Status s = SyncNode();
    const Timestamp now = clock_.Now();
    if (!last_heartbeat_) last_heartbeat_ = now;  // the age counts from the first attempt
    if (s.ok()) {
      last_heartbeat_ = now;
      LastHeartbeatMetric()
          .WithLabels({options_.node_name})
          .Set(std::chrono::duration<double>(now.time_since_epoch()).count());
    } else {
      log::Warning("node {}: heartbeat: {}", options_.node_name, s.ToString());
    }
    HeartbeatAgeMetric()
        .WithLabels({options_.node_name})
        .Set(std::chrono::duration<double>(now - *last_heartbeat_).count());
    queue_->AddAfter(key, options_.heartbeat_interval);
  } else if (key == kKeySlices) {
    Status s = SyncSlices();
    if (!s.ok()) {
      log::Warning("node {}: publishing slices: {}", options_.node_name, s.ToString());
      queue_->AddRateLimited(key);
    } else {
      queue_->Forget(key);
      queue_->AddAfter(key, options_.discovery_interval);
    }
  } else if (key == kKeyGc) {
    Status s = CollectGarbage();
    if (!s.ok()) {
      log::Warning("node {}: unpreparing: {}", options_.node_name, s.ToString());
      queue_->AddRateLimited(key);
    } else {
      queue_->Forget(key);
    }
  } else if (key == kKeyResync) {
    for (const auto& pod : pods_->List()) {
      queue_->Add(PodKey(pod->metadata.namespace_, pod->metadata.name));
    }
    queue_->Add(std::string(kKeyGc));
    queue_->AddAfter(key, options_.resync_interval);
  } else if (key == kKeyIsolation) {
    StatusOr<std::optional<Duration>> again = SyncIsolation();
    if (!again.ok()) {
      log::Warning("node {}: lifting the isolation: {}", options_.node_name,
                   again.status().ToString());
      queue_->AddRateLimited(key);
    } else if (*again) {
      queue_->AddAfter(key, **again);
    }
  } else if (key.starts_with(kAttachKeyPrefix)) {
    const std::string rest = key.substr(kAttachKeyPrefix.size());
    const size_t slash = rest.find('/');
    std::shared_ptr<const cv1::Pod> pod =
        nominated_->Get(rest.substr(0, slash), rest.substr(slash + 1));
    if (pod == nullptr) return;
    StatusOr<std::optional<Duration>> again = SyncAttach(*pod);
    if (!again.ok()) {
      log::Warning("node {}: attaching devices of pod {}: {}", options_.node_name, rest,
                   again.status().ToString());
      queue_->AddRateLimited(key);
    } else if (*again) {
      queue_->AddAfter(key, **again);
    } else {
      queue_->Forget(key);
    }
  } else if (key.starts_with(kPodKeyPrefix)) {
    const std::string rest = key.substr(kPodKeyPrefix.size());
    const size_t slash = rest.find('/');
    StatusOr<PodOutcome> outcome = SyncPod(rest.substr(0, slash), rest.substr(slash + 1));
    if (!outcome.ok()) {
      log::Warning("node {}: pod {}: {}", options_.node_name, rest, outcome.status().ToString());
      queue_->AddRateLimited(key);
    } else if (*outcome == PodOutcome::kRetry) {
      queue_->AddRateLimited(key);
    } else {
      queue_->Forget(key);
    }
  }
}

}  // namespace draplane::agent
