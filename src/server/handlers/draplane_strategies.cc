// The strategies of draplane.dev/v1alpha1, draplane's own kinds (strategy.h). A new kind of the
// group adds its strategy here and its entry in `DraplaneResources()` (registry.cc).
#include <algorithm>
#include <string>

#include "api/gen/draplane_v1alpha1_codec.h"
#include "api/validation/decision_validation.h"
#include "api/validation/sharing_policy_validation.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"
#include "server/handlers/typed_json.h"

namespace draplane::server::handlers {
namespace {

namespace d = api::draplanev1alpha1;
namespace validation = api::validation;

// A record lives as long as a claim it names: on create every claim of `spec.claims` with a uid
// becomes an owner (unless the writer named it already), so the garbage collector
// (lifecycle/lifecycle.h) removes the record once the last of its claims is gone. Not a
// controller reference: a claim does not manage its records.
void OwnByClaims(d::AllocationDecision& decision) {
  std::vector<api::metav1::OwnerReference>& owners = decision.metadata.owner_references;
  for (const d::DecisionClaim& claim : decision.spec.claims) {
    if (claim.uid.empty() || claim.name.empty()) continue;
    bool named =
        std::any_of(owners.begin(), owners.end(),
                    [&](const api::metav1::OwnerReference& o) { return o.uid == claim.uid; });
    if (named) continue;
    api::metav1::OwnerReference owner;
    owner.api_version = "resource.k8s.io/v1";
    owner.kind = "ResourceClaim";
    owner.name = claim.name;
    owner.uid = claim.uid;
    owners.push_back(std::move(owner));
  }
}

// An AllocationDecision is written once by a scheduler and never rewritten: `spec` is
// immutable, metadata (labels, annotations, finalizers, owners) may change. There is no status.
class AllocationDecisionStrategyImpl final : public TypedStrategy<d::AllocationDecision> {
 public:
  // Stored as a custom resource is: quantities as written.
  api::DecodeOptions decode_options() const override { return {}; }

  // Selectable fields (spec.pod.name, spec.pod.uid, spec.nodeName, spec.outcome):
  // api/labels/field_selector.cc, shared with the in-memory API.

  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Pod", "string", "", "The Pod the allocation was made for.", 0},
            {"Node", "string", "", "The node the Pod's claims were allocated on.", 0},
            {"Outcome", "string", "", "Allocated or Unschedulable.", 0},
            {"Chosen", "string", "",
             "Per request: request[/subrequest]:devices, the subrequest being the firstAvailable "
             "tier taken.",
             0},
            AgeColumn(),
            {"Devices", "string", "", "The allocated devices, as driver/pool/device.", 1},
            {"Not Taken", "string", "",
             "The firstAvailable tiers skipped before the chosen one, with their first reason.", 1},
            {"Policy", "string", "", "The policy inputs used, as kind/name@resourceVersion.", 1},
            {"Scheduler", "string", "", "The scheduler and replica that decided.", 1}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    api::FieldErrorList ignored;
    auto decision = DecodeAs<d::AllocationDecision>(obj, &ignored);
    const d::AllocationDecisionSpec& spec = decision.spec;
    auto add = [](std::string& to, const std::string& item) {
      if (!to.empty()) to += ",";
      to += item;
    };
    std::string chosen, devices, not_taken, policy;
    for (const d::DecisionClaim& claim : spec.claims) {
      for (const d::DecisionRequest& request : claim.requests) {
        std::string name = request.name;
        if (!request.subrequest.empty()) name += "/" + request.subrequest;
        add(chosen, name + ":" + std::to_string(request.devices.size()));
        for (const d::DecisionDevice& device : request.devices) {
          add(devices, device.driver + "/" + device.pool + "/" + device.device);
        }
        for (const d::DecisionTier& tier : request.tiers_not_taken) {
          std::string item = request.name + "/" + tier.subrequest;
          if (!tier.reasons.empty()) item += "(" + tier.reasons.front().reason + ")";
          add(not_taken, item);
        }
      }
    }
    for (const d::PolicyInput& input : spec.policy_version.inputs) {
      add(policy, input.kind + "/" + input.name + "@" + input.resource_version);
    }
    std::string scheduler = spec.scheduler.name;
    if (!spec.scheduler.instance.empty()) {
      scheduler += (scheduler.empty() ? "" : "/") + spec.scheduler.instance;
    }
    auto or_none = [](const std::string& s) { return s.empty() ? std::string("<none>") : s; };
    return {MetaString(obj, "name"), spec.pod.name,     or_none(spec.node_name), spec.outcome,
            or_none(chosen),         AgeCell(obj, now), or_none(devices),        or_none(not_taken),
            or_none(policy),         or_none(scheduler)};
  }

 protected:
  api::FieldErrorList Admit(d::AllocationDecision& decision) const override {
    OwnByClaims(decision);
    return validation::ValidateAllocationDecision(decision);
  }
  api::FieldErrorList AdmitUpdate(d::AllocationDecision& decision,
                                  const d::AllocationDecision& old) const override {
    return validation::ValidateAllocationDecisionUpdate(decision, old);
  }
};

// A DeviceSharingPolicy (docs/design/fair-share.md §1): defaulted and validated on every write of
// the main resource (api/validation/sharing_policy_validation.h); its status is the scheduler's,
// through the status subresource (reset on create, kept by updates of the main resource).
class DeviceSharingPolicyStrategyImpl final : public TypedStrategy<d::DeviceSharingPolicy> {
 public:
  // Stored as a custom resource is: quantities as written.
  api::DecodeOptions decode_options() const override { return {}; }

  std::vector<TableColumn> TableColumns() const override {
    return {
        NameColumn(),
        {"Domains", "string", "", "The device domains, each a set of competing classes.", 0},
        {"Tenants", "integer", "", "The number of tenant entries (namespaces or selectors).", 0},
        {"Default-Weight", "integer", "", "The weight of a namespace no entry names.", 0},
        {"Ready", "string", "", "The status of the Ready condition the scheduler reports.", 0},
        AgeColumn(),
        {"Half-Life", "string", "", "The half-life of the decayed usage history.", 1},
        {"Starvation", "string", "", "How long a Pod waits before it is starving.", 1},
        {"Max-Hold", "string", "", "How long devices stay held for a starving Pod.", 1},
        {"Holds", "boolean", "", "Whether devices are held for starving Pods.", 1}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    api::FieldErrorList ignored;
    auto policy = DecodeAs<d::DeviceSharingPolicy>(obj, &ignored);
    const d::DeviceSharingPolicySpec& spec = policy.spec;
    std::string domains;
    for (const d::SharingDomain& domain : spec.domains) {
      if (!domains.empty()) domains += ",";
      domains += domain.name;
    }
    std::string ready = "<unknown>";
    if (policy.status) {
      for (const api::metav1::Condition& c : policy.status->conditions) {
        if (c.type == "Ready") ready = c.status;
      }
    }
    const d::SharingUsage usage = spec.usage.value_or(d::SharingUsage{});
    const d::SharingAging aging = spec.aging.value_or(d::SharingAging{});
    return {MetaString(obj, "name"),
            domains,
            static_cast<int64_t>(spec.tenants.size()),
            spec.default_weight.value_or(api::validation::kSharingDefaultWeight),
            ready,
            AgeCell(obj, now),
            usage.half_life.value_or(""),
            aging.starvation_threshold.value_or(""),
            aging.max_hold.value_or(""),
            aging.holds.value_or(true)};
  }

 protected:
  api::FieldErrorList Admit(d::DeviceSharingPolicy& policy) const override {
    validation::SetDefaults(&policy);
    return validation::ValidateDeviceSharingPolicy(policy);
  }
  api::FieldErrorList AdmitUpdate(d::DeviceSharingPolicy& policy,
                                  const d::DeviceSharingPolicy& old) const override {
    validation::SetDefaults(&policy);
    return validation::ValidateDeviceSharingPolicyUpdate(policy, old);
  }
  api::FieldErrorList AdmitStatusUpdate(d::DeviceSharingPolicy& policy,
                                        const d::DeviceSharingPolicy& old) const override {
    return validation::ValidateDeviceSharingPolicyStatusUpdate(policy, old);
  }
  bool has_status() const override { return true; }
};

}  // namespace

const Strategy& DeviceSharingPolicyStrategy() {
  return StrategyInstance<DeviceSharingPolicyStrategyImpl>();
}

const Strategy& AllocationDecisionStrategy() {
  return StrategyInstance<AllocationDecisionStrategyImpl>();
}

}  // namespace draplane::server::handlers
