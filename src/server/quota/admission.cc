#include "server/quota/admission.h"

#include <algorithm>
#include <set>

#include "api/quota/admission.h"

namespace draplane::server::quota {
namespace {

namespace corev1 = api::corev1;
using handlers::ApiError;

constexpr int kMaxAttempts = 16;

struct Plan {
  std::shared_ptr<const StoredQuota> quota;
  std::vector<std::string> keys;
  ResourceList requested;
};

}  // namespace

std::variant<QuotaAdmission::Charge, ApiError> QuotaAdmission::Admit(
    const handlers::ResourceInfo& r, const std::string& ns, const std::string& name,
    const handlers::JsonObject& obj, bool dry_run) {
  if (!r.namespaced || ns.empty() || api::quota::IsIgnoredResource(r.group, r.resource) ||
      !api::quota::Handles(r.group, r.resource, api::quota::Operation::kCreate, "")) {
    return Charge{};
  }
  // Cheap exit first: most namespaces have no quota.
  StatusOr<std::vector<std::shared_ptr<const StoredQuota>>> quotas = accounting_->QuotasOf(ns);
  if (!quotas.ok()) return handlers::NewInternalError(quotas.status().message());
  if (quotas->empty()) return Charge{};
  // And before decoding the object: no quota may limit it (an Allocation-mode quota's device
  // keys are the scheduler's, so a namespace with only those admits its claims and Pods as one
  // without quotas).
  if (std::none_of(quotas->begin(), quotas->end(),
                   [&](const std::shared_ptr<const StoredQuota>& q) {
                     return !api::quota::EnforcedKeys(q->quota, r.group, r.resource).empty();
                   })) {
    return Charge{};
  }

  std::optional<corev1::Pod> pod;
  ResourceList usage = accounting_->UsageOf(r, obj, &pod);
  store::Key key{r.StoreResource(), ns, name};
  uint64_t token = 0;
  auto give_up = [&](ApiError e) -> std::variant<Charge, ApiError> {
    if (token != 0) accounting_->EndCreate(token);
    return e;
  };

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (attempt > 0) {
      quotas = accounting_->QuotasOf(ns);
      if (!quotas.ok()) return give_up(handlers::NewInternalError(quotas.status().message()));
    }
    std::vector<Plan> plans;
    for (const std::shared_ptr<const StoredQuota>& q : *quotas) {
      if (!api::quota::QuotaMatches(q->quota, r.group, r.resource, pod ? &*pod : nullptr)) {
        continue;
      }
      std::vector<std::string> keys = api::quota::EnforcedKeys(q->quota, r.group, r.resource);
      if (keys.empty()) continue;
      if (pod.has_value()) {
        std::string violation = api::quota::PodConstraintViolation(*pod, keys);
        if (!violation.empty()) {
          return give_up(handlers::NewForbidden(
              r.Gr(), name, "failed quota: " + q->quota.metadata.name + ": " + violation));
        }
      }
      std::set<std::string, std::less<>> key_set(keys.begin(), keys.end());
      plans.push_back(Plan{q, std::move(keys), api::quota::Mask(usage, [&](std::string_view k) {
                             return key_set.count(k) > 0;
                           })});
    }
    if (plans.empty()) return Charge{};

    // A quota never synced for these keys is synced now, from the store (exclusive: a
    // controller-style write).
    bool resynced = false;
    for (const Plan& plan : plans) {
      if (api::quota::Synced(plan.quota->quota, plan.keys)) continue;
      WriterLock lock(accounting_->charge_mutex());
      std::vector<QuotaAccounting::InFlight> in_flight = accounting_->ChargedInFlight(ns);
      StatusOr<ResourceList> used = accounting_->Recompute(plan.quota->quota, in_flight);
      if (!used.ok()) return give_up(handlers::NewInternalError(used.status().message()));
      // Keys already carrying a value keep it (charges may be in it); missing ones are filled.
      ResourceList owned = *used;
      for (const auto& [k, v] : plan.quota->quota.status.used) {
        if (owned.count(k) > 0) owned[k] = v;
      }
      StatusOr<store::ObjectPtr> written =
          accounting_->WriteStatus(*plan.quota, api::quota::SyncedStatus(plan.quota->quota, owned));
      if (!written.ok() && written.status().code() != StatusCode::kConflict &&
          written.status().code() != StatusCode::kNotFound) {
        return give_up(handlers::NewInternalError(written.status().message()));
      }
      resynced = true;
      break;
    }
    if (resynced) continue;

    // Every quota must admit the request.
    for (const Plan& plan : plans) {
      if (std::optional<std::string> refusal =
              api::quota::ExceededQuota(plan.quota->quota, plan.requested)) {
        return give_up(handlers::NewForbidden(r.Gr(), name, *refusal));
      }
    }
    if (dry_run) return Charge{};

    if (token == 0) token = accounting_->BeginCreate(key, r.group, r.resource, usage, pod);
    ReaderLock lock(accounting_->charge_mutex());
    std::vector<const Plan*> charged;
    bool conflict = false;
    std::optional<ApiError> failure;
    for (const Plan& plan : plans) {
      bool changes = false;
      for (const auto& [k, q] : plan.requested) changes = changes || !q.IsZero();
      if (!changes) continue;
      corev1::ResourceQuotaStatus status = plan.quota->quota.status;
      for (const auto& [k, q] : plan.requested) status.used[k] = status.used[k].Add(q);
      StatusOr<store::ObjectPtr> written = accounting_->WriteStatus(*plan.quota, status);
      if (written.ok()) {
        charged.push_back(&plan);
        continue;
      }
      if (written.status().code() == StatusCode::kConflict ||
          written.status().code() == StatusCode::kNotFound) {
        conflict = true;
      } else {
        failure = handlers::NewInternalError(written.status().message());
      }
      break;
    }
    if (!conflict && !failure) {
      accounting_->MarkCharged(token);
      return Charge{token};
    }
    // Give back what was charged before the conflict, then start over with fresh quotas.
    for (const Plan* plan : charged) {
      (void)accounting_->EditStatus(plan->quota->key, [&](corev1::ResourceQuotaStatus* status) {
        for (const auto& [k, q] : plan->requested) {
          api::Quantity back = status->used[k].Sub(q);
          status->used[k] = back.Sign() < 0 ? api::Quantity::FromInt64(0) : back;
        }
      });
    }
    if (failure) return give_up(*failure);
  }
  return give_up(handlers::NewInternalError("resource quota evaluation timed out"));
}

void QuotaAdmission::Finish(const Charge& charge) {
  if (charge.in_flight != 0) accounting_->EndCreate(charge.in_flight);
}

}  // namespace draplane::server::quota
