#include "server/quota/controller.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "api/gen/core_v1_codec.h"
#include "api/quota/metrics.h"
#include "api/quota/usage.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace draplane::server::quota {
namespace {

namespace corev1 = api::corev1;
using handlers::JsonObject;

const metrics::GaugeFamily& UsedGauge() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_quota_used", "ResourceQuota status.used per key, as last synced.",
      {"namespace", "quota", "resource"});
  return family;
}

const metrics::GaugeFamily& HardGauge() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "draplane_quota_hard", "ResourceQuota status.hard per key, as last synced.",
      {"namespace", "quota", "resource"});
  return family;
}

// Whether a watched change can change the usage of its namespace. Creates are charged by
// admission; deletes give back (replenishment); of updates only a Pod's can change usage (it
// turns terminal or starts terminating), and a quota's spec or mode.
bool ChangesUsage(const handlers::ResourceInfo& r, const store::WatchEvent& event) {
  using Type = store::WatchEvent::Type;
  if (r.group.empty() && r.resource == "resourcequotas") {
    if (event.type != Type::kModified || event.prev_object == nullptr) return true;
    StatusOr<JsonObject> now = handlers::ParseObject(event.object->value);
    StatusOr<JsonObject> before = handlers::ParseObject(event.prev_object->value);
    if (!now.ok() || !before.ok()) return true;
    auto spec_of = [](const JsonObject& o) {
      const boost::json::value* spec = o.if_contains("spec");
      return spec == nullptr ? boost::json::value() : *spec;
    };
    return spec_of(*now) != spec_of(*before) || handlers::MetaStringMap(*now, "annotations") !=
                                                    handlers::MetaStringMap(*before, "annotations");
  }
  if (event.type == Type::kDeleted) return true;
  if (event.type != Type::kModified || !(r.group.empty() && r.resource == "pods")) return false;
  if (event.prev_object == nullptr) return true;
  StatusOr<JsonObject> now = handlers::ParseObject(event.object->value);
  StatusOr<JsonObject> before = handlers::ParseObject(event.prev_object->value);
  if (!now.ok() || !before.ok()) return true;
  auto phase = [](const JsonObject& o) { return handlers::GetPathString(o, {"status", "phase"}); };
  return phase(*now) != phase(*before) || handlers::MetaString(*now, "deletionTimestamp") !=
                                              handlers::MetaString(*before, "deletionTimestamp");
}

}  // namespace

QuotaController::QuotaController(QuotaAccounting* accounting, handlers::Rest* rest,
                                 const handlers::Registry* registry, QuotaControllerOptions options)
    : accounting_(accounting), rest_(rest), registry_(registry), options_(options) {
  for (const handlers::ResourceInfo* r : registry_->StoredResources()) {
    if (r->namespaced && !api::quota::IsIgnoredResource(r->group, r->resource)) {
      resources_.push_back(r);
    }
  }
}

QuotaController::~QuotaController() { Stop(); }

StatusOr<std::set<std::string>> QuotaController::NamespacesWithQuotas() {
  std::set<std::string> out;
  store::ListOptions options;
  options.limit = 1000;
  while (true) {
    DRAPLANE_ASSIGN_OR_RETURN(store::ListResult page,
                              accounting_->store()->List("core/resourcequotas", options));
    for (const store::ObjectPtr& object : page.objects) out.insert(object->key.ns);
    if (page.continue_token.empty()) break;
    options.continue_token = page.continue_token;
  }
  return out;
}

Status QuotaController::Start() {
  DRAPLANE_ASSIGN_OR_RETURN(store::Revision revision, accounting_->store()->CurrentRevision());
  DRAPLANE_ASSIGN_OR_RETURN(quota_namespaces_, NamespacesWithQuotas());
  std::vector<std::string> resources;
  for (const handlers::ResourceInfo* r : resources_) resources.push_back(r->StoreResource());
  DRAPLANE_RETURN_IF_ERROR(
      watches_.Open(accounting_->store(), resources, revision, [this] { worker_.Notify(); }));
  for (const std::string& ns : quota_namespaces_) {
    if (StatusOr<int> s = SyncNamespace(ns, /*detect_drift=*/true); !s.ok()) {
      log::Warning("resourcequota: initial sync of {}: {}", ns, s.status().ToString());
      dirty_.insert(ns);
    }
  }
  next_resync_ = accounting_->clock().Now() + options_.resync_period;
  if (!dirty_.empty()) worker_.Notify();
  worker_.Start("resourcequota", [this] { Run(); });
  return Status::Ok();
}

void QuotaController::Stop() { worker_.Stop(); }

void QuotaController::Tick() { worker_.Tick(); }

void QuotaController::Observe(const handlers::ResourceInfo& r, const store::WatchEvent& event) {
  const std::string& ns = event.object->key.ns;
  bool is_quota = r.group.empty() && r.resource == "resourcequotas";
  if (is_quota && event.type != store::WatchEvent::Type::kDeleted) quota_namespaces_.insert(ns);
  if (quota_namespaces_.count(ns) == 0) return;
  if (!is_quota && !CountedByServer(ns, r)) return;
  if (ChangesUsage(r, event)) {
    dirty_.insert(ns);
  } else if (is_quota) {
    ObserveUsage(event);
  }
}

bool QuotaController::CountedByServer(const std::string& ns,
                                      const handlers::ResourceInfo& r) const {
  auto keys = server_keys_.find(ns);
  if (keys == server_keys_.end()) return true;
  return std::any_of(keys->second.begin(), keys->second.end(), [&](const std::string& key) {
    return api::quota::EvaluatorMatches(r.group, r.resource, key);
  });
}

void QuotaController::ObserveUsage(const store::WatchEvent& event) {
  // A quota write that no sync follows: admission's charge of a create, the scheduler's charge
  // of an Allocation-mode quota (holdings.md). The gauges follow status.used as written, so an
  // "at quota" alert fires when the quota starts refusing, not at the next sync.
  StatusOr<JsonObject> parsed = handlers::ParseObject(event.object->value);
  if (!parsed.ok()) return;
  corev1::ResourceQuota quota;
  api::FieldErrorList errors;
  Decode(boost::json::value(*parsed), &quota, &errors);
  if (!errors.empty()) return;
  const std::string& ns = event.object->key.ns;
  for (const auto& [key, value] : quota.status.used) {
    UsedGauge().WithLabels({ns, quota.metadata.name, key}).Set(value.AsApproximateDouble());
    series_[ns].first.emplace(quota.metadata.name, key);
  }
}

void QuotaController::Run() {
  while (std::optional<bool> tick = worker_.Wait()) {
    bool watching = watches_.Drain(
        [this](size_t i, const store::WatchEvent& e) { Observe(*resources_[i], e); });
    if (!watching) {
      // A watch ended (too slow, history lost): start over from a list, and resync everything.
      log::Warning("resourcequota: watch ended; resyncing every quota");
      std::vector<std::string> resources;
      for (const handlers::ResourceInfo* r : resources_) resources.push_back(r->StoreResource());
      StatusOr<store::Revision> current = accounting_->store()->CurrentRevision();
      StatusOr<std::set<std::string>> namespaces = NamespacesWithQuotas();
      if (!current.ok() || !namespaces.ok() ||
          !watches_.Open(accounting_->store(), resources, *current, [this] { worker_.Notify(); })
               .ok()) {
        if (!worker_.Pause(std::chrono::seconds(1))) return;
        worker_.Notify();  // try again
        continue;
      }
      quota_namespaces_ = std::move(namespaces).value();
      dirty_.insert(quota_namespaces_.begin(), quota_namespaces_.end());
    }
    std::set<std::string> work;
    work.swap(dirty_);
    bool resync = *tick && accounting_->clock().Now() >= next_resync_;
    if (resync) {
      next_resync_ = accounting_->clock().Now() + options_.resync_period;
      work.insert(quota_namespaces_.begin(), quota_namespaces_.end());
    }
    for (const std::string& ns : work) {
      if (worker_.stopping()) return;
      StatusOr<int> synced = SyncNamespace(ns, /*detect_drift=*/resync);
      if (!synced.ok()) {
        log::Warning("resourcequota: sync of {}: {}", ns, synced.status().ToString());
        dirty_.insert(ns);  // again at the next wake-up
      }
    }
  }
}

StatusOr<int> QuotaController::SyncNamespace(const std::string& ns, bool detect_drift) {
  int drift = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::vector<std::shared_ptr<const StoredQuota>> quotas;
    std::vector<QuotaAccounting::InFlight> in_flight;
    {
      // The snapshot: quotas and the charged creates in flight, with no charge in between.
      WriterLock lock(accounting_->charge_mutex());
      DRAPLANE_ASSIGN_OR_RETURN(quotas, accounting_->QuotasOf(ns));
      in_flight = accounting_->ChargedInFlight(ns);
    }
    std::vector<std::string>& server_keys = server_keys_[ns];
    server_keys.clear();
    for (const std::shared_ptr<const StoredQuota>& stored : quotas) {
      for (const auto& [key, hard] : stored->quota.spec.hard) {
        if (api::quota::ServerOwned(stored->quota, key)) server_keys.push_back(key);
      }
    }
    bool conflict = false;
    QuotaSeries used_series;
    QuotaSeries hard_series;
    for (const std::shared_ptr<const StoredQuota>& stored : quotas) {
      const corev1::ResourceQuota& quota = stored->quota;
      DRAPLANE_ASSIGN_OR_RETURN(ResourceList used, accounting_->Recompute(quota, in_flight));
      corev1::ResourceQuotaStatus status = api::quota::SyncedStatus(quota, used);
      std::string detail;
      if (detect_drift) {
        for (const auto& [key, value] : status.used) {
          if (!api::quota::ServerOwned(quota, key)) continue;
          auto old_used = quota.status.used.find(key);
          auto old_hard = quota.status.hard.find(key);
          auto spec_hard = quota.spec.hard.find(key);
          bool was_synced =
              old_used != quota.status.used.end() && old_hard != quota.status.hard.end() &&
              spec_hard != quota.spec.hard.end() && old_hard->second == spec_hard->second;
          if (!was_synced || old_used->second == value) continue;
          if (!detail.empty()) detail += ", ";
          detail += key + " " + old_used->second.ToString() + " -> " + value.ToString();
        }
      }
      if (!(status == quota.status)) {
        StatusOr<store::ObjectPtr> written = accounting_->WriteStatus(*stored, status);
        if (!written.ok()) {
          if (written.status().code() == StatusCode::kConflict) {
            conflict = true;
            break;
          }
          if (written.status().code() == StatusCode::kNotFound) continue;
          return written.status();
        }
        if (!detail.empty()) {
          ++drift;
          RecordDrift(*stored, detail);
        }
      }
      for (const auto& [key, value] : status.used) {
        UsedGauge().WithLabels({ns, quota.metadata.name, key}).Set(value.AsApproximateDouble());
        used_series.emplace(quota.metadata.name, key);
      }
      for (const auto& [key, value] : status.hard) {
        HardGauge().WithLabels({ns, quota.metadata.name, key}).Set(value.AsApproximateDouble());
        hard_series.emplace(quota.metadata.name, key);
      }
    }
    if (!conflict) {
      ForgetSeries(ns, std::move(used_series), std::move(hard_series));
      return drift;
    }
  }
  return ConflictError("resource quota status of namespace " + ns +
                       " kept changing while it was recomputed");
}

void QuotaController::ForgetSeries(const std::string& ns, QuotaSeries used, QuotaSeries hard) {
  auto& [used_before, hard_before] = series_[ns];
  for (const auto& [quota, key] : used_before) {
    if (!used.contains({quota, key})) UsedGauge().Remove({ns, quota, key});
  }
  for (const auto& [quota, key] : hard_before) {
    if (!hard.contains({quota, key})) HardGauge().Remove({ns, quota, key});
  }
  if (used.empty() && hard.empty()) {
    series_.erase(ns);
    return;
  }
  used_before = std::move(used);
  hard_before = std::move(hard);
}

void QuotaController::RecordDrift(const StoredQuota& stored, const std::string& detail) {
  const corev1::ResourceQuota& quota = stored.quota;
  api::quota::DriftCounter()
      .WithLabels({quota.metadata.namespace_, quota.metadata.name})
      .Increment();
  log::Warning("resourcequota: {}/{} corrected: {}", quota.metadata.namespace_, quota.metadata.name,
               detail);
  const handlers::ResourceInfo* events = registry_->Find("", "v1", "events");
  if (events == nullptr || rest_ == nullptr) return;
  Timestamp now = accounting_->clock().Now();
  corev1::Event event;
  char suffix[40];
  std::snprintf(suffix, sizeof(suffix), ".%" PRIx64 "%04" PRIx64,
                static_cast<uint64_t>(now.time_since_epoch().count()), ++event_sequence_ % 0x10000);
  event.metadata.name = quota.metadata.name + suffix;
  event.metadata.namespace_ = quota.metadata.namespace_;
  event.involved_object.kind = "ResourceQuota";
  event.involved_object.api_version = "v1";
  event.involved_object.namespace_ = quota.metadata.namespace_;
  event.involved_object.name = quota.metadata.name;
  event.involved_object.uid = quota.metadata.uid;
  event.involved_object.resource_version = std::to_string(stored.revision);
  event.reason = "QuotaUsageCorrected";
  event.message =
      "status.used did not match the objects in the namespace and was corrected: " + detail;
  event.type = std::string(corev1::kEventTypeWarning);
  event.source.component = "resourcequota-controller";
  event.reporting_component = "draplane-apiserver";
  event.first_timestamp = api::Time::FromTimestamp(now);
  event.last_timestamp = event.first_timestamp;
  event.count = 1;
  boost::json::value encoded = Encode(event);
  if (!encoded.is_object()) return;
  StatusOr<store::ObjectPtr> created =
      rest_->CreateInternal(*events, std::move(encoded.get_object()));
  if (!created.ok()) {
    log::Warning("resourcequota: cannot record an Event: {}", created.status().ToString());
  }
}

}  // namespace draplane::server::quota
