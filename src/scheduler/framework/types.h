// The scheduling framework's vocabulary (upstream k8s.io/kube-scheduler/framework and
// pkg/scheduler/framework): plugin statuses, per-attempt cycle state, node and pod information,
// cluster events.
//
// Thread-safety: plain values, except CycleState (one attempt; the scheduling cycle writes it on
// the loop thread, then the binding cycle reads it on a binder thread — never concurrently).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "common/status.h"
#include "common/string_hash.h"

namespace draplane::scheduler {

// upstream framework.Code.
enum class Code {
  kSuccess,
  kError,
  // Rejected; preemption might help (not attempted for DRA reasons).
  kUnschedulable,
  // Rejected; nothing on this node can change that during this attempt.
  kUnschedulableAndUnresolvable,
  kWait,
  kSkip,
  kPending,
};

std::string_view CodeName(Code code);

// The outcome of one plugin call (upstream framework.Status): a code, reasons in words, the
// plugin that produced it, and for kError the underlying Status.
//
// A code and one pointer: the reasons, the plugin and the error live behind it, absent for the
// statuses without them. Filters return a status per plugin per candidate node (millions in a
// simulated day), nearly all Success; constructing and destroying those is then free.
class PluginStatus {
 public:
  PluginStatus() = default;
  PluginStatus(const PluginStatus& other)
      : code_(other.code_),
        details_(other.details_ ? std::make_unique<Details>(*other.details_) : nullptr) {}
  PluginStatus& operator=(const PluginStatus& other) {
    if (this != &other) *this = PluginStatus(other);
    return *this;
  }
  PluginStatus(PluginStatus&&) noexcept = default;
  PluginStatus& operator=(PluginStatus&&) noexcept = default;

  static PluginStatus Success() { return PluginStatus(); }
  static PluginStatus Skip() { return OfCode(Code::kSkip); }
  static PluginStatus Unschedulable(std::string reason) {
    return WithReason(Code::kUnschedulable, std::move(reason));
  }
  static PluginStatus Unresolvable(std::string reason) {
    return WithReason(Code::kUnschedulableAndUnresolvable, std::move(reason));
  }
  // UnschedulableAndUnresolvable without a reason and without allocating: a Filter's rejection
  // when it is not asked to explain (plugin.h).
  static PluginStatus UnexplainedRejection() { return OfCode(Code::kUnschedulableAndUnresolvable); }
  static PluginStatus Error(Status error);
  static PluginStatus Pending(std::string reason) {
    return WithReason(Code::kPending, std::move(reason));
  }
  static PluginStatus Wait(std::string reason) {
    return WithReason(Code::kWait, std::move(reason));
  }
  // Wait for one of the plugin's own writes (not for the cluster): the binding is parked
  // without holding a binder thread, and nothing is announced to the user.
  static PluginStatus WaitForWrite(std::string reason) {
    PluginStatus s = WithReason(Code::kWait, std::move(reason));
    s.details_->waits_for_write = true;
    return s;
  }

  PluginStatus(Code code, std::vector<std::string> reasons) : code_(code) {
    if (!reasons.empty()) MutableDetails().reasons = std::move(reasons);
  }

  Code code() const { return code_; }
  bool ok() const { return code_ == Code::kSuccess; }
  bool skipped() const { return code_ == Code::kSkip; }
  // Unschedulable, UnschedulableAndUnresolvable or Pending.
  bool rejected() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable ||
           code_ == Code::kPending;
  }
  const std::vector<std::string>& reasons() const {
    return details_ ? details_->reasons : EmptyDetails().reasons;
  }
  // The reasons joined with ", " (upstream Status.Message).
  std::string Message() const;
  const std::string& plugin() const { return details_ ? details_->plugin : EmptyDetails().plugin; }
  // Returns *this, so `return s.WithPlugin(name);` copies the status: on hot paths set the
  // plugin, then `return s;`.
  PluginStatus& WithPlugin(std::string_view plugin) {
    MutableDetails().plugin = std::string(plugin);
    return *this;
  }
  const Status& error() const { return details_ ? details_->error : EmptyDetails().error; }
  // A Wait made by WaitForWrite.
  bool waits_for_write() const { return details_ && details_->waits_for_write; }

 private:
  struct Details {
    bool waits_for_write = false;
    std::vector<std::string> reasons;
    std::string plugin;
    Status error;
  };
  static const Details& EmptyDetails();
  Details& MutableDetails() {
    if (!details_) details_ = std::make_unique<Details>();
    return *details_;
  }
  // Just the code: no reasons vector made and destroyed (a Filter's rejection per node).
  static PluginStatus OfCode(Code code) {
    PluginStatus s;
    s.code_ = code;
    return s;
  }
  // One reason, moved in (a braced list would copy it: an initializer_list's elements are const).
  static PluginStatus WithReason(Code code, std::string reason) {
    PluginStatus s;
    s.code_ = code;
    s.MutableDetails().reasons.push_back(std::move(reason));
    return s;
  }

  Code code_ = Code::kSuccess;
  std::unique_ptr<Details> details_;
};

// Data plugins keep for one scheduling attempt, by type (upstream CycleState keyed by name).
class CycleState {
 public:
  // This attempt's plugin calls are timed into scheduler_plugin_execution_duration_seconds
  // (one attempt in ten, as upstream samples them: timing every Filter call would cost more than
  // a cheap filter).
  bool record_plugin_metrics = false;

  template <typename T>
  T* Get() const {
    for (const auto& [type, value] : data_) {
      if (type == TypeKey<T>()) return static_cast<T*>(value.get());
    }
    return nullptr;
  }
  template <typename T>
  T* Set(std::shared_ptr<T> value) {
    T* raw = value.get();
    for (auto& [type, stored] : data_) {
      if (type == TypeKey<T>()) {
        stored = std::move(value);
        return raw;
      }
    }
    data_.emplace_back(TypeKey<T>(), std::move(value));
    return raw;
  }

 private:
  // One address per type: comparing it is one instruction, where comparing two type_infos
  // compares their names when the types differ.
  template <typename T>
  static const void* TypeKey() {
    static constexpr char kKey = 0;
    return &kKey;
  }

  // A handful of entries, read by every plugin at every node: a linear scan comparing type keys
  // beats hashing.
  std::vector<std::pair<const void*, std::shared_ptr<void>>> data_;
};

// Resource amounts in the units the scheduler compares (upstream framework.Resource): CPU in
// millicores, memory and ephemeral storage in bytes, everything else (extended resources,
// hugepages) by its integer value.
struct Resources {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;
  std::map<std::string, int64_t, std::less<>> scalar;

  // Running totals (a node's requested resources): wrap at the int64 range as upstream's Go
  // int64 does, so that adding and later subtracting a Pod cancel exactly whatever its size.
  void Add(const Resources& other);
  void Subtract(const Resources& other);
  // One Pod's requests summed over its containers: saturate, so that requests past the int64
  // range (a tenant may write them) stay larger than any node instead of wrapping around.
  void AddSaturating(const Resources& other);
  // From a resource list (node allocatable, or a container's requests).
  static Resources FromList(const std::map<std::string, api::Quantity, std::less<>>& list);
};

// What a pod asks of a node (upstream resourcehelper.PodRequests): containers and sidecars
// (restartable init containers) add up, each regular init container needs its own request plus
// the sidecars started before it, the larger of the two wins, plus pod overhead; pod-level
// `spec.resources.requests` replace the container sums for the resources they name. `pods` is 1.
Resources ComputePodRequests(const api::corev1::Pod& pod);

// True for resources counted in Resources::scalar that a device plugin or DRA may provide
// (upstream IsExtendedResourceName): a name with a domain that is not kubernetes.io, or
// `requests.`-free names outside the `kubernetes.io/` namespace; hugepages are not extended.
bool IsExtendedResourceName(std::string_view name);

// Where a table keyed by node name (DeviceLedger::FreeOn) last found a node's entry, kept with the
// node for the lookups made per candidate node: the table, its version then, the entry (null:
// none). The table alone reads and writes it.
struct NodeEntryCache {
  const void* table = nullptr;
  uint64_t version = 0;
  const void* entry = nullptr;
};

// A node with the pods the scheduler placed or observed on it.
class NodeInfo {
 public:
  explicit NodeInfo(std::shared_ptr<const api::corev1::Node> node);

  const api::corev1::Node& node() const { return *node_; }
  const std::shared_ptr<const api::corev1::Node>& node_ptr() const { return node_; }
  const std::string& name() const { return node_->metadata.name; }
  // name() hashed once, for the lookups made per candidate node.
  const HashedString& hashed_name() const { return hashed_name_; }
  void SetNode(std::shared_ptr<const api::corev1::Node> node);

  const Resources& allocatable() const { return allocatable_; }
  const Resources& requested() const { return requested_; }
  size_t pod_count() const { return pods_.size(); }
  // Pod uid -> its requests.
  const std::map<std::string, Resources, std::less<>>& pods() const { return pods_; }

  // Adds (or replaces) a pod's requests; RemovePod undoes it. Both bump generation().
  void AddPod(const std::string& uid, const Resources& requests);
  bool RemovePod(const std::string& uid);
  bool HasPod(const std::string& uid) const { return pods_.contains(uid); }
  // Changes whenever the node or its pods change.
  uint64_t generation() const { return generation_; }
  // For the device ledger's per-node counts, on the loop thread (Filter).
  NodeEntryCache& ledger_entry() const { return ledger_entry_; }

 private:
  std::shared_ptr<const api::corev1::Node> node_;
  HashedString hashed_name_{""};  // views node_'s name, which node_ keeps alive
  Resources allocatable_;
  Resources requested_;
  std::map<std::string, Resources, std::less<>> pods_;
  uint64_t generation_ = 0;
  mutable NodeEntryCache ledger_entry_;
};

// The kinds of cluster changes that can make a rejected pod schedulable (upstream
// framework.ClusterEvent: a resource and an action type).
enum class EventResource {
  kPod,          // the unscheduled pod itself changed
  kAssignedPod,  // a pod bound to a node
  kNode,
  kResourceClaim,
  kResourceSlice,
  kDeviceClass,
  kResourceQuota,  // an Allocation-mode quota changed (its limits or its usage)
};

enum ActionType : uint32_t {
  kAdd = 1u << 0,
  kDelete = 1u << 1,
  kUpdateNodeLabel = 1u << 2,
  kUpdateNodeTaint = 1u << 3,
  kUpdateNodeAllocatable = 1u << 4,
  kUpdateNodeCondition = 1u << 5,
  kUpdatePodGeneratedResourceClaim = 1u << 6,
  kUpdatePodSpec = 1u << 7,  // tolerations, resources, scheduling gates
  kUpdate = 1u << 8,         // any other update
  kAll = 0xffffffffu,
};

struct ClusterEventSpec {
  EventResource resource;
  uint32_t actions = 0;
};

}  // namespace draplane::scheduler
