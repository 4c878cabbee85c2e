// ResourceQuota admission (upstream plugin/pkg/admission/resourcequota with
// k8s.io/apiserver/pkg/admission/plugin/resourcequota's quota evaluation): a create in a
// namespace with quotas is charged against every quota that tracks it, and refused when a quota
// would go over its hard limit:
//
//   403 Forbidden  resourceclaims.resource.k8s.io "c" is forbidden: exceeded quota: devices,
//                  requested: h100.deviceclass.resource.k8s.io/devices=1,
//                  used: h100.deviceclass.resource.k8s.io/devices=1,
//                  limited: h100.deviceclass.resource.k8s.io/devices=1
//
// Steps, for an object the evaluators handle (api/quota/usage.h; events and reviews never):
//   1. the quotas of the namespace that track the object (hard keys its evaluator charges,
//      scopes matching), each restricted to the keys the server owns (accounting.h: in
//      Allocation mode the device keys are the scheduler's, never refused here);
//   2. a quota whose status was never synced for those keys (a new quota, a changed spec.hard)
//      is synced first from the store (upstream answers "status unknown for quota" until its
//      controller catches up; draplane computes the status on the spot instead);
//   3. used + requested <= status.hard for every key, else the refusal above (the first quota in
//      name order that fails);
//   4. unless a dry run, `status.used` of each charged quota is increased with a write
//      conditioned on the quota's resourceVersion (re-read and re-checked on conflict), so
//      concurrent creates, other API servers on the same store and the scheduler never overspend
//      the last unit; a refusal after earlier quotas were charged gives their charge back.
//   5. until the object is written the charge is registered as in flight (QuotaAccounting), so
//      the controller's recompute does not undo it; a create that then fails leaves the charge
//      to the controller's next recompute (as upstream's replenishment does).
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/handlers/errors.h"
#include "server/handlers/json_util.h"
#include "server/handlers/registry.h"
#include "server/quota/accounting.h"

namespace draplane::server::quota {

class QuotaAdmission {
 public:
  explicit QuotaAdmission(QuotaAccounting* accounting) : accounting_(accounting) {}

  // A charge that must be ended (`Finish`) once the create was written or failed.
  struct Charge {
    uint64_t in_flight = 0;  // 0: nothing charged
  };

  // Charges the create of `obj` (resource `r`, namespace `ns`, name `name`; already defaulted
  // and validated). Returns the refusal, or the charge to finish. `dry_run` checks without
  // charging.
  std::variant<Charge, handlers::ApiError> Admit(const handlers::ResourceInfo& r,
                                                 const std::string& ns, const std::string& name,
                                                 const handlers::JsonObject& obj, bool dry_run);
  // Ends a charge's in-flight registration.
  void Finish(const Charge& charge);

 private:
  QuotaAccounting* accounting_;
};

}  // namespace draplane::server::quota
