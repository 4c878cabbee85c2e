#include "agent/agent.h"

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <utility>

#include "agent/failure.h"
#include "agent/slice_plan.h"
#include "api/pods.h"
#include "api/validation/validation.h"
#include "client/events.h"
#include "client/informer.h"
#include "client/typed.h"
#include "client/workqueue.h"
#include "common/log.h"
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

std::string PodKey(std::string_view ns, std::string_view name) {
  return std::string(kPodKeyPrefix) + std::string(ns) + "/" + std::string(name);
}

bool IsLive(const cv1::Pod& pod) {
  return !pod.metadata.deletion_timestamp && !api::IsPodTerminal(pod);
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

void SetDefault(std::map<std::string, api::Quantity>* capacity, const std::string& name,
                const std::string& value) {
  if (capacity->count(name) == 0) (*capacity)[name] = *api::Quantity::Parse(value);
}

}  // namespace

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
                                                 .node_name = agent->options_.node_name},
                                 std::move(by_name));
  return agent;
}

Agent::Agent(client::ApiClient& api, std::vector<std::unique_ptr<Driver>> drivers,
             AgentOptions options, const Clock& clock)
    : api_(api), drivers_(std::move(drivers)), options_(std::move(options)), clock_(clock) {
  SetDefault(&options_.capacity, "cpu", "32");
  SetDefault(&options_.capacity, "memory", "256Gi");
  SetDefault(&options_.capacity, "pods", "110");
  events_ = std::make_unique<client::EventRecorder>(
      api_, clock_,
      client::EventRecorderOptions{
          .component = "draplane-agent", .host = options_.node_name, .synchronous = true});
}

Agent::~Agent() { Stop(); }

Status Agent::Init() {
  DRAPLANE_RETURN_IF_ERROR(preparer_->Recover());
  initialized_ = true;
  return Status::Ok();
}

// ---- node ---------------------------------------------------------------------------------

Status Agent::SyncNode() {
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  StatusOr<cv1::Node> got = client::Get<cv1::Node>(api_, "", options_.node_name);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound) return got.status();
  cv1::Node node;
  if (got.ok()) {
    node = std::move(*got);
  } else {
    node.metadata.name = options_.node_name;
  }
  // Metadata: labels and the agent annotation.
  bool meta_changed = !got.ok();
  std::map<std::string, std::string> labels = options_.labels;
  labels.emplace("kubernetes.io/hostname", options_.node_name);
  labels.emplace("kubernetes.io/os", "linux");
  for (const auto& [k, v] : labels) {
    auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) {
      node.metadata.labels[k] = v;
      meta_changed = true;
    }
  }
  if (node.metadata.annotations[std::string(kAgentAnnotation)] != "true") {
    node.metadata.annotations[std::string(kAgentAnnotation)] = "true";
    meta_changed = true;
  }
  if (!got.ok()) {
    StatusOr<cv1::Node> created = client::Create(api_, node, options_.field_manager);
    if (!created.ok()) return created.status();
    node = std::move(*created);
    log::Info("node {}: registered", options_.node_name);
  } else if (meta_changed) {
    StatusOr<cv1::Node> updated = client::Update(api_, node, options_.field_manager);
    if (!updated.ok()) return updated.status();
    node = std::move(*updated);
  }
  // Status: capacity, allocatable, Ready.
  std::map<std::string, api::Quantity, std::less<>> capacity(options_.capacity.begin(),
                                                             options_.capacity.end());
  bool status_changed = node.status.capacity != capacity || node.status.allocatable != capacity;
  const cv1::NodeCondition* ready = nullptr;
  for (const cv1::NodeCondition& c : node.status.conditions) {
    if (c.type == "Ready") ready = &c;
  }
  status_changed = status_changed || ready == nullptr || ready->status != cv1::kConditionStatusTrue;
  if (status_changed || clock_.Now() - last_node_status_ >= options_.node_status_interval) {
    node.status.capacity = capacity;
    node.status.allocatable = capacity;
    cv1::NodeCondition condition;
    condition.type = "Ready";
    condition.status = std::string(cv1::kConditionStatusTrue);
    condition.reason = "KubeletReady";
    condition.message = "draplane agent is posting ready status";
    condition.last_heartbeat_time = now;
    condition.last_transition_time = ready != nullptr && ready->status == cv1::kConditionStatusTrue
                                         ? ready->last_transition_time
                                         : now;
    std::erase_if(node.status.conditions,
                  [](const cv1::NodeCondition& c) { return c.type == "Ready"; });
    node.status.conditions.push_back(std::move(condition));
    node.status.node_info.kubelet_version = "draplane-agent";
    node.status.node_info.operating_system = "linux";
    StatusOr<cv1::Node> updated = client::UpdateStatus(api_, node, options_.field_manager);
    if (!updated.ok()) return updated.status();
    last_node_status_ = clock_.Now();
  }
  return EnsureLease();
}

Status Agent::EnsureLease() {
  namespace co = api::coordinationv1;
  const api::Time now = api::Time::MicroFromTimestamp(clock_.Now());
  StatusOr<co::Lease> got = client::Get<co::Lease>(api_, kNodeLeaseNamespace, options_.node_name);
  if (got.ok()) {
    got->spec.renew_time = now;
    got->spec.holder_identity = options_.node_name;
    got->spec.lease_duration_seconds = options_.lease_duration_seconds;
    return client::Update(api_, *got, options_.field_manager).status();
  }
  if (got.status().code() != StatusCode::kNotFound) return got.status();
  co::Lease lease;
  lease.metadata.name = options_.node_name;
  lease.metadata.namespace_ = std::string(kNodeLeaseNamespace);
  StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", options_.node_name);
  if (node.ok()) {
    api::metav1::OwnerReference owner;
    owner.api_version = "v1";
    owner.kind = "Node";
    owner.name = node->metadata.name;
    owner.uid = node->metadata.uid;
    lease.metadata.owner_references.push_back(std::move(owner));
  }
  lease.spec.holder_identity = options_.node_name;
  lease.spec.lease_duration_seconds = options_.lease_duration_seconds;
  lease.spec.renew_time = now;
  StatusOr<co::Lease> created = client::Create(api_, lease, options_.field_manager);
  if (!created.ok() && created.status().code() == StatusCode::kNotFound) {
    // The API server normally creates kube-node-lease; a bare one (tests) may not have.
    cv1::Namespace ns;
    ns.metadata.name = std::string(kNodeLeaseNamespace);
    StatusOr<cv1::Namespace> created_ns = client::Create(api_, ns, options_.field_manager);
    if (!created_ns.ok() && created_ns.status().code() != StatusCode::kAlreadyExists) {
      return created_ns.status();
    }
    created = client::Create(api_, lease, options_.field_manager);
  }
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  return Status::Ok();
}

// ---- slices -------------------------------------------------------------------------------

Status Agent::SyncSlices() {
  std::vector<Inventory> all;
  std::vector<std::string> driver_names_seen;
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
  inventories_ = all;

  client::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<rv1::ResourceSlice> stored,
                            client::List<rv1::ResourceSlice>(api_, "", list));
  SlicePlan plan = PlanSliceSync(options_.node_name, all, managed_drivers_, stored.items);
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

StatusOr<std::vector<std::string>> Agent::PodClaimNames(const cv1::Pod& pod) const {
  std::vector<std::string> out;
  for (const cv1::PodResourceClaim& ref : pod.spec.resource_claims) {
    if (ref.resource_claim_name) {
      out.push_back(*ref.resource_claim_name);
      continue;
    }
    bool found = false;
    for (const cv1::PodResourceClaimStatus& status : pod.status.resource_claim_statuses) {
      if (status.name != ref.name) continue;
      found = true;
      // No name: no claim is needed for this entry (upstream API semantics).
      if (status.resource_claim_name) out.push_back(*status.resource_claim_name);
    }
    if (!found) {
      return NotFoundError("the claim for " + ref.name + " has not been created yet");
    }
  }
  if (pod.status.extended_resource_claim_status &&
      !pod.status.extended_resource_claim_status->resource_claim_name.empty()) {
    out.push_back(pod.status.extended_resource_claim_status->resource_claim_name);
  }
  return out;
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
    return got.status();
  }
  const cv1::Pod& pod = *got;
  if (pod.spec.node_name != options_.node_name) return PodOutcome::kDone;

  // 1. Deleting: release devices, then finish the deletion as the kubelet would.
  if (pod.metadata.deletion_timestamp) {
    DRAPLANE_RETURN_IF_ERROR(CollectGarbage());
    if (options_.simulate_containers) {
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
  // 3. Prepare.
  StatusOr<std::vector<std::string>> claim_names = PodClaimNames(pod);
  if (!claim_names.ok()) {
    log::Debug("pod {}/{}: {}", namespace_, name, claim_names.status().ToString());
    return PodOutcome::kRetry;
  }
  std::set<std::string> our_drivers(managed_drivers_.begin(), managed_drivers_.end());
  for (const std::string& claim_name : *claim_names) {
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
    ClaimToPrepare request{
        .uid = claim->metadata.uid, .namespace_ = namespace_, .name = claim_name, .devices = {}};
    const rv1::DeviceAllocationResult& devices = claim->status.allocation->devices;
    for (const rv1::DeviceRequestAllocationResult& result : devices.results) {
      if (our_drivers.count(result.driver) == 0 || result.pool != options_.node_name) continue;
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
    if (request.devices.empty()) continue;
    StatusOr<ClaimRecord> record = preparer_->Prepare(request);
    if (!record.ok()) {
      const FailureClass cls = ClassifyFailure(record.status());
      const std::string message = "claim " + claim_name + ": " +
                                  std::string(record.status().message()) + " (" +
                                  std::string(FailureClassName(cls)) + ")";
      log::Warning("node {}: pod {}/{}: {}", options_.node_name, namespace_, name, message);
      RecordFailure(pod, message);
      if (cls == FailureClass::kNeedsCleanup) {
        Status cleaned = preparer_->Unprepare(request.uid);
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
    Status written = WriteDeviceStatus(namespace_, claim_name, request.uid, *record);
    if (!written.ok()) {
      log::Warning("node {}: claim {}/{} device status: {}", options_.node_name, namespace_,
                   claim_name, written.ToString());
      return PodOutcome::kRetry;
    }
  }
  if (options_.simulate_containers) {
    Status running = MarkRunning(pod);
    if (!running.ok()) {
      if (running.code() == StatusCode::kConflict) return PodOutcome::kRetry;
      return running;
    }
  }
  return PodOutcome::kDone;
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

Status Agent::MarkRunning(const cv1::Pod& pod) {
  if (pod.status.phase == cv1::kPodPhaseRunning && api::HasPodCondition(pod, "Ready", "True") &&
      api::HasPodCondition(pod, kDevicesPreparedCondition, "True")) {
    return Status::Ok();
  }
  cv1::Pod updated = pod;
  const api::Time now = api::Time::FromTimestamp(clock_.Now());
  api::SetPodCondition(&updated.status, kDevicesPreparedCondition, "True", "", "", now);
  boost::json::value json = client::ToJson(updated);
  json.as_object()["status"] = api::RunningPodStatus(updated, now);
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

Status Agent::CollectGarbage() {
  client::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<cv1::Pod> pods,
                            client::List<cv1::Pod>(api_, "", list));
  std::vector<cv1::Pod> live;
  for (cv1::Pod& pod : pods.items) {
    if (IsLive(pod)) live.push_back(std::move(pod));
  }
  return UnprepareUnused(live);
}

Status Agent::UnprepareUnused(const std::vector<cv1::Pod>& live_pods) {
  std::set<std::pair<std::string, std::string>> used;
  for (const cv1::Pod& pod : live_pods) {
    StatusOr<std::vector<std::string>> names = PodClaimNames(pod);
    if (!names.ok()) continue;
    for (const std::string& name : *names) used.emplace(pod.metadata.namespace_, name);
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
    Status s = preparer_->Unprepare(uid);
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
  for (std::string_view key : {kKeyNode, kKeySlices, kKeyResync}) queue_->Add(std::string(key));
  pods_->Start();
  loop_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Agent::Stop() {
  if (!started_.exchange(false)) return;
  queue_->ShutDown();
  if (loop_.joinable()) loop_.join();
  pods_->Stop();
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
    if (!s.ok()) log::Warning("node {}: heartbeat: {}", options_.node_name, s.ToString());
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
