// AllocationDecision validation (decision_validation.h). draplane's own rules; names reuse the
// upstream format checks of the objects they name (Pod, claim, request, device, node).
#include "api/validation/decision_validation.h"

#include <set>
#include <string>

#include "api/validation/internal/common.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"
#include "api/validation/quota_validation.h"

namespace draplane::api::validation {
namespace {

using internal::Append;
namespace d = draplanev1alpha1;

void CheckCount(size_t size, size_t max, const FieldPath& path, FieldErrorList* errs) {
  if (size > max) {
    errs->push_back(TooMany(path, static_cast<int64_t>(size), static_cast<int64_t>(max)));
  }
}

void CheckText(std::string_view text, const FieldPath& path, FieldErrorList* errs) {
  if (text.size() > kDecisionMaxMessageLength) {
    errs->push_back(TooLong(path, static_cast<int64_t>(kDecisionMaxMessageLength)));
  }
}

void CheckRequired(std::string_view value, const FieldPath& path, FieldErrorList* errs) {
  if (value.empty()) errs->push_back(Required(path));
}

FieldErrorList ValidateDevice(const d::DecisionDevice& device, const FieldPath& path) {
  FieldErrorList errs = ValidateDriverName(device.driver, path.Child("driver"));
  Append(errs, ValidatePoolName(device.pool, path.Child("pool")));
  Append(errs, ValidateDeviceName(device.device, path.Child("device")));
  if (device.share_id.has_value())
    Append(errs, ValidateUID(*device.share_id, path.Child("shareID")));
  return errs;
}

FieldErrorList ValidateTier(const d::DecisionTier& tier, const FieldPath& path) {
  FieldErrorList errs = ValidateDeviceName(tier.subrequest, path.Child("subrequest"));
  FieldPath reasons_path = path.Child("reasons");
  CheckCount(tier.reasons.size(), kDecisionMaxReasonsPerTier, reasons_path, &errs);
  for (size_t i = 0; i < tier.reasons.size(); ++i) {
    const d::DecisionReason& reason = tier.reasons[i];
    FieldPath p = reasons_path.Index(static_cast<int64_t>(i));
    CheckRequired(reason.reason, p.Child("reason"), &errs);
    CheckText(reason.reason, p.Child("reason"), &errs);
    CheckText(reason.message, p.Child("message"), &errs);
    CheckCount(reason.nodes.size(), kDecisionMaxNodesPerReason, p.Child("nodes"), &errs);
    for (size_t n = 0; n < reason.nodes.size(); ++n) {
      Append(errs,
             ValidateNodeName(reason.nodes[n], p.Child("nodes").Index(static_cast<int64_t>(n))));
    }
    if (reason.node_count < static_cast<int64_t>(reason.nodes.size())) {
      errs.push_back(Invalid(p.Child("nodeCount"), RenderValue(int64_t{reason.node_count}),
                             "must be at least the number of nodes listed"));
    }
  }
  return errs;
}

FieldErrorList ValidateRequest(const d::DecisionRequest& request, const FieldPath& path) {
  FieldErrorList errs = ValidateDeviceName(request.name, path.Child("name"));
  if (!request.subrequest.empty()) {
    Append(errs, ValidateDeviceName(request.subrequest, path.Child("subrequest")));
  }
  if (!request.device_class_name.empty()) {
    Append(errs, ValidateDeviceClassName(request.device_class_name, path.Child("deviceClassName")));
  }
  FieldPath devices_path = path.Child("devices");
  CheckCount(request.devices.size(), kDecisionMaxDevices, devices_path, &errs);
  for (size_t i = 0; i < request.devices.size(); ++i) {
    Append(errs, ValidateDevice(request.devices[i], devices_path.Index(static_cast<int64_t>(i))));
  }
  FieldPath tiers_path = path.Child("tiersNotTaken");
  CheckCount(request.tiers_not_taken.size(), kDecisionMaxTiers, tiers_path, &errs);
  for (size_t i = 0; i < request.tiers_not_taken.size(); ++i) {
    Append(errs,
           ValidateTier(request.tiers_not_taken[i], tiers_path.Index(static_cast<int64_t>(i))));
  }
  return errs;
}

FieldErrorList ValidateClaim(const d::DecisionClaim& claim, const FieldPath& path) {
  FieldErrorList errs = ValidateDNS1123Subdomain(claim.name, path.Child("name"));
  FieldPath requests_path = path.Child("requests");
  CheckCount(claim.requests.size(), kDecisionMaxRequests, requests_path, &errs);
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < claim.requests.size(); ++i) {
    FieldPath p = requests_path.Index(static_cast<int64_t>(i));
    Append(errs, ValidateRequest(claim.requests[i], p));
    if (!names.insert(claim.requests[i].name).second) {
      errs.push_back(Duplicate(p.Child("name"), RenderValue(claim.requests[i].name)));
    }
  }
  FieldPath charges_path = path.Child("charges");
  CheckCount(claim.charges.size(), kDecisionMaxCharges, charges_path, &errs);
  for (const auto& [name, value] : claim.charges) {
    Append(errs, ValidateResourceQuotaResourceName(name, charges_path.Key(name)));
    Append(errs, ValidateResourceQuantityValue(name, value, charges_path.Key(name)));
  }
  return errs;
}

FieldErrorList ValidatePolicyVersion(const d::PolicyVersion& policy, const FieldPath& path) {
  FieldErrorList errs;
  CheckText(policy.digest, path.Child("digest"), &errs);
  FieldPath inputs_path = path.Child("inputs");
  CheckCount(policy.inputs.size(), kDecisionMaxPolicyInputs, inputs_path, &errs);
  for (size_t i = 0; i < policy.inputs.size(); ++i) {
    const d::PolicyInput& input = policy.inputs[i];
    FieldPath p = inputs_path.Index(static_cast<int64_t>(i));
    CheckRequired(input.kind, p.Child("kind"), &errs);
    CheckRequired(input.name, p.Child("name"), &errs);
    CheckRequired(input.resource_version, p.Child("resourceVersion"), &errs);
    for (const auto& [field, value] :
         {std::pair<std::string_view, std::string_view>{"apiVersion", input.api_version},
          {"kind", input.kind},
          {"namespace", input.namespace_},
          {"name", input.name},
          {"resourceVersion", input.resource_version},
          {"mode", input.mode}}) {
      CheckText(value, p.Child(field), &errs);
    }
  }
  return errs;
}

FieldErrorList ValidateSpec(const d::AllocationDecisionSpec& spec, const FieldPath& path) {
  FieldErrorList errs;
  if (spec.schema_version != kAllocationDecisionSchemaVersion) {
    errs.push_back(NotSupported(path.Child("schemaVersion"),
                                RenderValue(int64_t{spec.schema_version}),
                                {std::to_string(kAllocationDecisionSchemaVersion)}));
  }
  if (spec.time.empty()) errs.push_back(Required(path.Child("time")));
  CheckText(spec.scheduler.name, path.Child("scheduler").Child("name"), &errs);
  CheckText(spec.scheduler.instance, path.Child("scheduler").Child("instance"), &errs);
  if (spec.pod.name.empty()) {
    errs.push_back(Required(path.Child("pod").Child("name")));
  } else {
    Append(errs, ValidateDNS1123Subdomain(spec.pod.name, path.Child("pod").Child("name")));
  }
  CheckText(spec.pod.uid, path.Child("pod").Child("uid"), &errs);
  const FieldPath outcome = path.Child("outcome");
  if (spec.outcome.empty()) {
    errs.push_back(Required(outcome));
  } else if (spec.outcome != draplanev1alpha1::kAllocationDecisionOutcomeAllocated &&
             spec.outcome != draplanev1alpha1::kAllocationDecisionOutcomeUnschedulable) {
    errs.push_back(
        NotSupported(outcome, RenderValue(spec.outcome),
                     {std::string(draplanev1alpha1::kAllocationDecisionOutcomeAllocated),
                      std::string(draplanev1alpha1::kAllocationDecisionOutcomeUnschedulable)}));
  }
  if (spec.outcome == draplanev1alpha1::kAllocationDecisionOutcomeAllocated &&
      spec.node_name.empty()) {
    errs.push_back(Required(path.Child("nodeName"), "an allocated decision names its node"));
  } else if (!spec.node_name.empty()) {
    Append(errs, ValidateNodeName(spec.node_name, path.Child("nodeName")));
  }
  CheckText(spec.message, path.Child("message"), &errs);
  if (spec.nodes_evaluated < 0) {
    errs.push_back(Invalid(path.Child("nodesEvaluated"), RenderValue(int64_t{spec.nodes_evaluated}),
                           "must be greater than or equal to 0"));
  }
  if (spec.nodes_feasible < 0) {
    errs.push_back(Invalid(path.Child("nodesFeasible"), RenderValue(int64_t{spec.nodes_feasible}),
                           "must be greater than or equal to 0"));
  }
  FieldPath claims_path = path.Child("claims");
  CheckCount(spec.claims.size(), kDecisionMaxClaims, claims_path, &errs);
  for (size_t i = 0; i < spec.claims.size(); ++i) {
    Append(errs, ValidateClaim(spec.claims[i], claims_path.Index(static_cast<int64_t>(i))));
  }
  Append(errs, ValidatePolicyVersion(spec.policy_version, path.Child("policyVersion")));
  return errs;
}

}  // namespace

FieldErrorList ValidateAllocationDecision(const draplanev1alpha1::AllocationDecision& decision) {
  FieldErrorList errs = ValidateObjectMeta(decision.metadata, /*namespaced=*/true,
                                           NameIsDNSSubdomain, FieldPath("metadata"));
  Append(errs, ValidateSpec(decision.spec, FieldPath("spec")));
  return errs;
}

FieldErrorList ValidateAllocationDecisionUpdate(
    const draplanev1alpha1::AllocationDecision& decision,
    const draplanev1alpha1::AllocationDecision& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(decision.metadata, old.metadata, FieldPath("metadata"));
  if (!(decision.spec == old.spec)) {
    errs.push_back(Invalid(FieldPath("spec"), "null", "field is immutable"));
  }
  return errs;
}

}  // namespace draplane::api::validation
