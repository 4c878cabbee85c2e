#include "scheduler/cluster_state.h"

#include <algorithm>

#include "api/device_taints.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;

std::string ClaimKey(std::string_view namespace_, std::string_view name) {
  std::string key;
  key.reserve(namespace_.size() + name.size() + 1);
  key.append(namespace_).push_back('/');
  key.append(name);
  return key;
}

ClusterState::ClusterState() = default;

namespace {

bool NameBefore(const NodeInfo* node, std::string_view name) { return node->name() < name; }

}  // namespace

void ClusterState::UpsertNode(std::shared_ptr<const api::corev1::Node> node) {
  auto it = nodes_.find(node->metadata.name);
  if (it != nodes_.end()) {
    it->second->SetNode(std::move(node));
    return;
  }
  std::string name = node->metadata.name;
  auto info = std::make_unique<NodeInfo>(std::move(node));
  // Pods observed before their node.
  for (const auto& [uid, placement] : placements_) {
    if (placement.node == name) info->AddPod(uid, placement.requests);
  }
  order_.insert(std::lower_bound(order_.begin(), order_.end(), name, NameBefore), info.get());
  nodes_.emplace(std::move(name), std::move(info));
}

void ClusterState::RemoveNode(std::string_view name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  order_.erase(std::lower_bound(order_.begin(), order_.end(), name, NameBefore));
  nodes_.erase(it);
}

NodeInfo* ClusterState::FindNode(std::string_view name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.get();
}

const NodeInfo* ClusterState::FindNode(std::string_view name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.get();
}

void ClusterState::PlacePod(const std::string& uid, const std::string& node,
                            const Resources& requests, bool assumed) {
  auto it = placements_.find(uid);
  if (it != placements_.end() && it->second.node != node) {
    if (NodeInfo* old = FindNode(it->second.node)) old->RemovePod(uid);
  }
  placements_[uid] = PodPlacement{node, assumed, requests};
  if (NodeInfo* info = FindNode(node)) info->AddPod(uid, requests);
}

void ClusterState::UpsertAssignedPod(const PodPtr& pod) {
  const std::string& phase = pod->status.phase;
  if (pod->spec.node_name.empty() || phase == "Succeeded" || phase == "Failed") {
    RemovePod(pod->metadata.uid);
    return;
  }
  PlacePod(pod->metadata.uid, pod->spec.node_name, ComputePodRequests(*pod), false);
}

void ClusterState::RemovePod(std::string_view uid) {
  auto it = placements_.find(std::string(uid));
  if (it == placements_.end()) return;
  if (NodeInfo* info = FindNode(it->second.node)) info->RemovePod(it->first);
  placements_.erase(it);
}

void ClusterState::AssumePod(std::string_view uid, std::string_view node,
                             const Resources& requests) {
  PlacePod(std::string(uid), std::string(node), requests, true);
}

void ClusterState::ForgetAssumedPod(std::string_view uid) {
  auto it = placements_.find(std::string(uid));
  if (it == placements_.end() || !it->second.assumed) return;
  RemovePod(uid);
}

bool ClusterState::IsAssumed(std::string_view uid) const {
  auto it = placements_.find(std::string(uid));
  return it != placements_.end() && it->second.assumed;
}

bool ClusterState::IsBound(std::string_view uid) const {
  auto it = placements_.find(std::string(uid));
  return it != placements_.end() && !it->second.assumed;
}

template <typename Release>
auto ClusterState::GivingBack(std::string_view ns, Release&& release) {
  auto quotas = quotas_.find(ns);
  if (quotas == quotas_.end() || quotas->second.allocation.empty()) return release();
  const allocator::Holdings& holdings = ledger_.holdings();
  allocator::ResourceList before = holdings.Usage(ns, allocator::Holdings::Scope::kCommitted);
  auto result = release();
  allocator::ResourceList after = holdings.Usage(ns, allocator::Holdings::Scope::kCommitted);
  for (allocator::QuotaBudget& budget : quotas->second.allocation) {
    for (auto& [key, used] : budget.used) {
      auto was = before.find(key);
      if (was == before.end()) continue;
      auto now = after.find(key);
      api::Quantity released = now == after.end() ? was->second : was->second.Sub(now->second);
      if (released.Sign() <= 0) continue;
      used = used.Sub(released);
      if (used.Sign() < 0) used = api::Quantity::FromInt64(0);
    }
  }
  return result;
}

bool ClusterState::UpsertClaim(const ClaimPtr& claim) {
  std::string key = ClaimKey(claim->metadata.namespace_, claim->metadata.name);
  auto it = claims_.find(key);
  return GivingBack(claim->metadata.namespace_, [&] {
    if (it != claims_.end() && it->second->metadata.uid != claim->metadata.uid) {
      // Replaced by a new object with the same name.
      ledger_.Uncommit(it->second->metadata.uid);
    }
    claims_[key] = claim;
    auto annotation = claim->metadata.annotations.find(kExtendedResourceClaimAnnotation);
    if (annotation != claim->metadata.annotations.end() && annotation->second == "true") {
      for (const api::metav1::OwnerReference& owner : claim->metadata.owner_references) {
        if (owner.kind == "Pod" && owner.controller.value_or(false)) {
          extended_claim_by_pod_[owner.uid] = key;
        }
      }
    }
    return ledger_.Commit(claim);
  });
}

void ClusterState::RemoveClaim(const rv1::ResourceClaim& claim) {
  std::string key = ClaimKey(claim.metadata.namespace_, claim.metadata.name);
  auto it = claims_.find(key);
  if (it != claims_.end() && it->second->metadata.uid == claim.metadata.uid) claims_.erase(it);
  GivingBack(claim.metadata.namespace_, [&] {
    ledger_.Uncommit(claim.metadata.uid);
    return true;
  });
  for (const api::metav1::OwnerReference& owner : claim.metadata.owner_references) {
    auto e = extended_claim_by_pod_.find(owner.uid);
    if (e != extended_claim_by_pod_.end() && e->second == key) extended_claim_by_pod_.erase(e);
  }
}

ClusterState::ClaimPtr ClusterState::FindClaim(std::string_view namespace_,
                                               std::string_view name) const {
  auto it = claims_.find(ClaimKey(namespace_, name));
  return it == claims_.end() ? nullptr : it->second;
}

ClusterState::ClaimPtr ClusterState::FindExtendedResourceClaim(std::string_view pod_uid) const {
  auto it = extended_claim_by_pod_.find(std::string(pod_uid));
  if (it == extended_claim_by_pod_.end()) return nullptr;
  auto claim = claims_.find(it->second);
  return claim == claims_.end() ? nullptr : claim->second;
}

void ClusterState::UpsertClass(std::shared_ptr<const rv1::DeviceClass> device_class) {
  classes_[device_class->metadata.name] = device_class;
  snapshot_.SetClass(device_class);
  ledger_.SetClass(device_class);
  RebuildExtendedResourceClasses();
}

void ClusterState::RemoveClass(std::string_view name) {
  auto it = classes_.find(name);
  if (it == classes_.end()) return;
  classes_.erase(it);
  snapshot_.RemoveClass(name);
  ledger_.RemoveClass(name);
  RebuildExtendedResourceClasses();
}

const rv1::DeviceClass* ClusterState::FindClass(std::string_view name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : it->second.get();
}

void ClusterState::RebuildExtendedResourceClasses() {
  // resource -> (class creation time, class name) of the current winner
  std::map<std::string, std::pair<api::Time, std::string>, std::less<>> best;
  auto offer = [&](const std::string& resource, const rv1::DeviceClass& c) {
    auto it = best.find(resource);
    if (it == best.end() || c.metadata.creation_timestamp > it->second.first ||
        (c.metadata.creation_timestamp == it->second.first &&
         c.metadata.name < it->second.second)) {
      best[resource] = {c.metadata.creation_timestamp, c.metadata.name};
    }
  };
  for (const auto& [name, c] : classes_) {
    if (c->spec.extended_resource_name.has_value() && !c->spec.extended_resource_name->empty()) {
      offer(*c->spec.extended_resource_name, *c);
    }
    offer(std::string(kImplicitExtendedResourcePrefix) + name, *c);
  }
  extended_resource_classes_.clear();
  for (const auto& [resource, winner] : best) {
    extended_resource_classes_.emplace(resource, winner.second);
  }
}

void ClusterState::UpsertSlice(std::shared_ptr<const rv1::ResourceSlice> slice) {
  slices_[slice->metadata.name] = slice;
  PutSlice(slice);
}

void ClusterState::PutSlice(const std::shared_ptr<const rv1::ResourceSlice>& slice) {
  std::shared_ptr<const rv1::ResourceSlice> seen = slice;
  if (!taint_rules_.empty()) {
    if (std::optional<rv1::ResourceSlice> tainted = api::WithRuleTaints(*slice, TaintRules())) {
      seen = std::make_shared<const rv1::ResourceSlice>(std::move(*tainted));
    }
  }
  if (seen != slice) {
    ruled_slices_.insert(slice->metadata.name);
  } else {
    ruled_slices_.erase(slice->metadata.name);
  }
  auto it = slice_handles_.find(slice->metadata.name);
  if (it == slice_handles_.end()) {
    slice_handles_.emplace(slice->metadata.name, snapshot_.AddSlice(seen));
  } else {
    snapshot_.UpdateSlice(it->second, seen);
  }
  // The ledger's device states (draplane_devices, holds) count rule-tainted devices as tainted.
  ledger_.SetSlice(std::move(seen));
}

void ClusterState::RemoveSlice(std::string_view name) {
  auto it = slice_handles_.find(std::string(name));
  if (it == slice_handles_.end()) return;
  snapshot_.RemoveSlice(it->second);
  slice_handles_.erase(it);
  slices_.erase(std::string(name));
  ruled_slices_.erase(std::string(name));
  ledger_.RemoveSlice(name);
}

void ClusterState::UpsertTaintRule(std::shared_ptr<const rv1::DeviceTaintRule> rule) {
  auto [it, added] = taint_rules_.try_emplace(rule->metadata.name, rule);
  if (!added) {
    // A status write (the eviction controller's conditions) changes nothing the slices see.
    const rv1::DeviceTaintRule& old = *it->second;
    auto select_all = [](const rv1::DeviceTaintRule& r) {
      auto a = r.metadata.annotations.find(api::kSelectAllAnnotation);
      return a != r.metadata.annotations.end() ? a->second : std::string();
    };
    bool same = old.spec == rule->spec && select_all(old) == select_all(*rule);
    it->second = std::move(rule);
    if (same) return;
  }
  RetaintSlices();
}

void ClusterState::RemoveTaintRule(std::string_view name) {
  auto it = taint_rules_.find(name);
  if (it == taint_rules_.end()) return;
  taint_rules_.erase(it);
  RetaintSlices();
}

std::vector<const rv1::DeviceTaintRule*> ClusterState::TaintRules() const {
  std::vector<const rv1::DeviceTaintRule*> out;
  out.reserve(taint_rules_.size());
  for (const auto& [name, rule] : taint_rules_) out.push_back(rule.get());
  return out;
}

void ClusterState::RetaintSlices() {
  // Rules change rarely; every slice is looked at (a rule's selector names no slice).
  const std::vector<const rv1::DeviceTaintRule*> rules = TaintRules();
  for (const auto& [name, slice] : slices_) {
    if (ruled_slices_.count(name) > 0 || api::WithRuleTaints(*slice, rules)) PutSlice(slice);
  }
}

void ClusterState::UpsertQuota(std::shared_ptr<const api::corev1::ResourceQuota> quota) {
  NamespaceQuotas& ns = quotas_[quota->metadata.namespace_];
  ns.all[quota->metadata.name] = std::move(quota);
  ns.allocation.clear();
  for (const auto& [name, q] : ns.all) {
    if (std::optional<allocator::QuotaBudget> budget = allocator::BudgetOf(*q)) {
      ns.allocation.push_back(std::move(*budget));
    }
  }
}

void ClusterState::RemoveQuota(const api::corev1::ResourceQuota& quota) {
  auto it = quotas_.find(quota.metadata.namespace_);
  if (it == quotas_.end()) return;
  it->second.all.erase(quota.metadata.name);
  std::erase_if(it->second.allocation,
                [&](const allocator::QuotaBudget& b) { return b.name == quota.metadata.name; });
  if (it->second.all.empty()) quotas_.erase(it);
}

const std::vector<allocator::QuotaBudget>& ClusterState::AllocationQuotas(
    std::string_view namespace_) const {
  static const std::vector<allocator::QuotaBudget> kNone;
  auto it = quotas_.find(namespace_);
  return it == quotas_.end() ? kNone : it->second.allocation;
}

std::vector<std::shared_ptr<const api::corev1::ResourceQuota>> ClusterState::Quotas(
    std::string_view namespace_) const {
  std::vector<std::shared_ptr<const api::corev1::ResourceQuota>> out;
  auto it = quotas_.find(namespace_);
  if (it == quotas_.end()) return out;
  for (const auto& [name, q] : it->second.all) out.push_back(q);
  return out;
}

std::vector<std::string> ClusterState::AllocationQuotaNamespaces() const {
  std::vector<std::string> out;
  for (const auto& [ns, q] : quotas_) {
    if (!q.allocation.empty()) out.push_back(ns);
  }
  return out;
}

std::vector<const rv1::ResourceClaim*> ClusterState::Claims(
    std::optional<std::string_view> namespace_) const {
  std::vector<const rv1::ResourceClaim*> out;
  for (const auto& [key, claim] : claims_) {
    if (!namespace_.has_value() || claim->metadata.namespace_ == *namespace_) {
      out.push_back(claim.get());
    }
  }
  return out;
}

}  // namespace draplane::scheduler
