#include "server/quota/admission.h"

#include <algorithm>
#include <set>

namespace draplane::server::quota {
namespace {

namespace corev1 = api::corev1;
using handlers::ApiError;

constexpr int kMaxAttempts = 16;

// The keys of `quota` the server enforces for objects of (group, resource).
std::vector<std::string> EnforcedKeys(const corev1::ResourceQuota& quota, std::string_view group,
                                      std::string_view resource) {
  std::vector<std::string> keys;
  for (const auto& [key, hard] : quota.spec.hard) {
    if (QuotaAccounting::ServerOwned(quota, key) &&
        api::quota::EvaluatorMatches(group, resource, key)) {
      keys.push_back(key);
    }
  }
  return keys;
}

// The pod evaluator's Constraints: when a quota limits cpu or memory, every container must
// state it (upstream keeps this "for backward compatibility"). Empty when satisfied, else
// "must specify <resource> for: <containers>; ...".
std::string PodConstraints(const corev1::Pod& pod, const std::vector<std::string>& keys) {
  static constexpr std::string_view kValidated[] = {
      "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"};
  std::set<std::string> required;
  for (const std::string& key : keys) {
    for (std::string_view v : kValidated) {
      if (key == v) required.insert(key);
    }
  }
  if (required.empty()) return "";
  std::map<std::string, std::set<std::string>> missing;
  for (const auto* list : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (const corev1::Container& c : *list) {
      std::set<std::string> has;
      // podComputeUsageHelper over the container's (defaulted) requests and limits.
      for (const auto& [name, q] : c.resources.limits) {
        if (name == "cpu" || name == "memory") {
          has.insert(name);
          has.insert("requests." + name);
          has.insert("limits." + name);
        }
      }
      for (const auto& [name, q] : c.resources.requests) {
        if (name == "cpu" || name == "memory") {
          has.insert(name);
          has.insert("requests." + name);
        }
      }
      for (const std::string& r : required) {
        if (has.count(r) == 0) missing[r].insert(c.name);
      }
    }
  }
  if (missing.empty()) return "";
  std::string out = "must specify ";
  bool first = true;
  for (const auto& [resource, containers] : missing) {
    if (!first) out += "; ";
    first = false;
    out += resource + " for: ";
    bool first_container = true;
    for (const std::string& c : containers) {
      if (!first_container) out += ",";
      first_container = false;
      out += c;
    }
  }
  return out;
}

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
  if (std::none_of(quotas->begin(), quotas->end(), [&](const std::shared_ptr<const StoredQuota>& q) {
        return !EnforcedKeys(q->quota, r.group, r.resource).empty();
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
      std::vector<std::string> keys = EnforcedKeys(q->quota, r.group, r.resource);
      if (keys.empty()) continue;
      if (pod.has_value()) {
        std::string violation = PodConstraints(*pod, keys);
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
      if (QuotaAccounting::Synced(plan.quota->quota, plan.keys)) continue;
      WriterLock lock(accounting_->charge_mutex());
      std::vector<QuotaAccounting::InFlight> in_flight = accounting_->ChargedInFlight(ns);
      StatusOr<ResourceList> used = accounting_->Recompute(plan.quota->quota, in_flight);
      if (!used.ok()) return give_up(handlers::NewInternalError(used.status().message()));
      // Keys already carrying a value keep it (charges may be in it); missing ones are filled.
      ResourceList owned = *used;
      for (const auto& [k, v] : plan.quota->quota.status.used) {
        if (owned.count(k) > 0) owned[k] = v;
      }
      StatusOr<store::ObjectPtr> written = accounting_->WriteStatus(
          *plan.quota, QuotaAccounting::SyncedStatus(plan.quota->quota, owned));
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
      const corev1::ResourceQuotaStatus& status = plan.quota->quota.status;
      ResourceList new_used = api::quota::Add(
          api::quota::Mask(status.used,
                           [&](std::string_view k) { return plan.requested.count(k) > 0; }),
          plan.requested);
      std::set<std::string, std::less<>> exceeded;
      for (const auto& [k, value] : new_used) {
        auto hard = status.hard.find(k);
        if (hard != status.hard.end() && value.Compare(hard->second) > 0) exceeded.insert(k);
      }
      if (exceeded.empty()) continue;
      auto in_exceeded = [&](std::string_view k) { return exceeded.count(k) > 0; };
      return give_up(handlers::NewForbidden(
          r.Gr(), name,
          "exceeded quota: " + plan.quota->quota.metadata.name + ", requested: " +
              api::quota::PrettyPrint(api::quota::Mask(plan.requested, in_exceeded)) +
              ", used: " + api::quota::PrettyPrint(api::quota::Mask(status.used, in_exceeded)) +
              ", limited: " + api::quota::PrettyPrint(api::quota::Mask(status.hard, in_exceeded))));
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
