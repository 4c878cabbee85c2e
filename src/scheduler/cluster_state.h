// The cluster as the scheduler sees it: nodes with the pods placed on them (observed and
// assumed), claims, device classes and resource slices, the allocator's snapshot of classes and
// slices, and the device ledger (device_ledger.h). Informer events are applied to it on the
// scheduler's loop thread; plugins read it during a scheduling cycle.
//
// This is the seam that keeps the scheduler core free of HTTP: the scheduler feeds it from
// informers over any ApiClient, tests feed it directly, and `draplane explain` fills it from one
// list of each resource.
//
// Thread-safety: not thread-safe; owned by one thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "allocator/features.h"
#include "allocator/quota.h"
#include "allocator/snapshot.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/string_hash.h"
#include "scheduler/device_ledger.h"
#include "scheduler/framework/types.h"

namespace draplane::scheduler {

// Annotation of the claim the scheduler creates for extended resources backed by DRA
// (resourceapi.ExtendedResourceClaimAnnotation).
inline constexpr std::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";
// Prefix of the implicit extended resource name of every device class (KEP-5004).
inline constexpr std::string_view kImplicitExtendedResourcePrefix =
    "deviceclass.resource.kubernetes.io/";

class ClusterState {
 public:
  using PodPtr = std::shared_ptr<const api::corev1::Pod>;
  using ClaimPtr = std::shared_ptr<const api::resourcev1::ResourceClaim>;

  ClusterState();
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Nodes.
  void UpsertNode(std::shared_ptr<const api::corev1::Node> node);
  void RemoveNode(std::string_view name);
  // Every node, sorted by name (the stable evaluation order).
  const std::vector<NodeInfo*>& nodes() const { return order_; }
  NodeInfo* FindNode(std::string_view name);
  const NodeInfo* FindNode(std::string_view name) const;

  // Pods bound to nodes (terminal pods do not count; upstream removes them from its cache).
  // A pod previously assumed on the same node is thereby confirmed.
  void UpsertAssignedPod(const PodPtr& pod);
  void RemovePod(std::string_view uid);
  // Places a pod on a node before the API confirms it (upstream AssumePod).
  void AssumePod(std::string_view uid, std::string_view node, const Resources& requests);
  // Undoes AssumePod when binding failed (upstream ForgetPod); a confirmed pod stays.
  void ForgetAssumedPod(std::string_view uid);
  bool IsAssumed(std::string_view uid) const;
  // The pod is on a node according to the API (not merely assumed).
  bool IsBound(std::string_view uid) const;

  // Claims. Returns true when the claim's allocation conflicts with an earlier one
  // (DeviceLedger::Commit). A claim that loses its allocation (deallocated, replaced, removed)
  // gives what its namespace's committed holdings lose back to the status.used of the
  // namespace's Allocation-mode budgets at once, never below 0, until the next version of each
  // quota replaces its budget (the recount the deallocation starts writes that version): without
  // it the first attempts after a deallocation see the quota still full and fall back needlessly.
  bool UpsertClaim(const ClaimPtr& claim);
  void RemoveClaim(const api::resourcev1::ResourceClaim& claim);
  ClaimPtr FindClaim(std::string_view namespace_, std::string_view name) const;
  // The scheduler-made extended-resource claim owned by the pod with this uid, or null.
  ClaimPtr FindExtendedResourceClaim(std::string_view pod_uid) const;

  // Classes and slices.
  void UpsertClass(std::shared_ptr<const api::resourcev1::DeviceClass> device_class);
  void RemoveClass(std::string_view name);
  const api::resourcev1::DeviceClass* FindClass(std::string_view name) const;
  void UpsertSlice(std::shared_ptr<const api::resourcev1::ResourceSlice> slice);
  void RemoveSlice(std::string_view name);
  // DeviceTaintRules: the allocator and the ledger see each slice with the taints of the rules
  // that select its devices added (api/device_taints.h), as upstream's DRA plugin reads slices
  // through its tracker; a rule's change re-derives the slices it or its previous version
  // touched.
  void UpsertTaintRule(std::shared_ptr<const api::resourcev1::DeviceTaintRule> rule);
  void RemoveTaintRule(std::string_view name);
  // Every rule, by name.
  std::vector<const api::resourcev1::DeviceTaintRule*> TaintRules() const;

  // Extended resource name -> device class serving it (explicit `extendedResourceName`, else
  // the implicit `deviceclass.resource.kubernetes.io/<class>`); among classes naming the same
  // resource the newest wins, then the first by name.
  const std::map<std::string, std::string, std::less<>>& extended_resource_classes() const {
    return extended_resource_classes_;
  }

  // ResourceQuotas. Those in Allocation mode (allocator::BudgetOf) are enforced by the scheduler.
  void UpsertQuota(std::shared_ptr<const api::corev1::ResourceQuota> quota);
  void RemoveQuota(const api::corev1::ResourceQuota& quota);
  // The Allocation-mode budgets of a namespace, by quota name; empty when it has none.
  const std::vector<allocator::QuotaBudget>& AllocationQuotas(std::string_view namespace_) const;
  // Every quota of a namespace (any mode), by name.
  std::vector<std::shared_ptr<const api::corev1::ResourceQuota>> Quotas(
      std::string_view namespace_) const;
  // Namespaces with Allocation-mode quotas, sorted.
  std::vector<std::string> AllocationQuotaNamespaces() const;

  // Every claim, optionally of one namespace only (unordered).
  std::vector<const api::resourcev1::ResourceClaim*> Claims(
      std::optional<std::string_view> namespace_ = std::nullopt) const;

  allocator::Snapshot& snapshot() { return snapshot_; }
  DeviceLedger& ledger() { return ledger_; }
  const DeviceLedger& ledger() const { return ledger_; }

  size_t claim_count() const { return claims_.size(); }

 private:
  struct PodPlacement {
    std::string node;
    bool assumed = false;
    Resources requests;
  };
  void RebuildExtendedResourceClasses();
  // Puts the published slice into the snapshot, tainted by the rules (UpsertTaintRule).
  void PutSlice(const std::shared_ptr<const api::resourcev1::ResourceSlice>& slice);
  // Puts again every slice that has rule taints or gets some now.
  void RetaintSlices();
  // Runs `release` (ledger changes of namespace `ns`'s claims) and gives what the namespace's
  // committed holdings lost back to its Allocation-mode budgets (UpsertClaim).
  template <typename Release>
  auto GivingBack(std::string_view ns, Release&& release);
  void PlacePod(const std::string& uid, const std::string& node, const Resources& requests,
                bool assumed);

  // Looked up for every placed pod and event; hashed, with order_ kept sorted by name.
  std::unordered_map<std::string, std::unique_ptr<NodeInfo>, StringHash, std::equal_to<>> nodes_;
  std::vector<NodeInfo*> order_;
  std::unordered_map<std::string, PodPlacement> placements_;                       // by pod uid
  std::unordered_map<std::string, ClaimPtr, StringHash, std::equal_to<>> claims_;  // by ns/name
  std::unordered_map<std::string, std::string> extended_claim_by_pod_;  // pod uid -> claim key
  std::map<std::string, std::shared_ptr<const api::resourcev1::DeviceClass>, std::less<>> classes_;
  std::map<std::string, std::string, std::less<>> extended_resource_classes_;
  std::unordered_map<std::string, allocator::Snapshot::SliceHandle> slice_handles_;
  // The slices as published, by name, and those whose snapshot copy carries rule taints.
  std::unordered_map<std::string, std::shared_ptr<const api::resourcev1::ResourceSlice>> slices_;
  std::unordered_set<std::string> ruled_slices_;
  std::map<std::string, std::shared_ptr<const api::resourcev1::DeviceTaintRule>, std::less<>>
      taint_rules_;
  allocator::Snapshot snapshot_;
  DeviceLedger ledger_;
  struct NamespaceQuotas {
    std::map<std::string, std::shared_ptr<const api::corev1::ResourceQuota>, std::less<>> all;
    std::vector<allocator::QuotaBudget> allocation;  // BudgetOf of `all`, by name
  };
  std::map<std::string, NamespaceQuotas, std::less<>> quotas_;
};

// "namespace/name".
std::string ClaimKey(std::string_view namespace_, std::string_view name);

}  // namespace draplane::scheduler
