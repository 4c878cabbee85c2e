#include "server/quota/accounting.h"

#include <algorithm>
#include <set>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "common/status_macros.h"

namespace draplane::server::quota {
namespace {

namespace corev1 = api::corev1;
using handlers::JsonObject;

constexpr std::string_view kQuotaResource = "core/resourcequotas";

template <typename T>
bool DecodeJson(const JsonObject& obj, T* out) {
  api::FieldErrorList errors;
  Decode(boost::json::value(obj), out, &errors);
  return errors.empty();
}

// The stored form of a quota: its JSON without resourceVersion (the store's revision is).
StatusOr<std::string> StoredForm(const corev1::ResourceQuota& quota) {
  boost::json::value encoded = Encode(quota);
  if (!encoded.is_object()) return InternalError("a ResourceQuota did not encode as an object");
  JsonObject& obj = encoded.get_object();
  if (JsonObject* meta = handlers::FindObject(obj, "metadata")) meta->erase("resourceVersion");
  return handlers::ToStoredJson(std::move(obj));
}

}  // namespace

QuotaAccounting::QuotaAccounting(store::Store* store, const handlers::Registry* registry,
                                 const Clock* clock)
    : store_(store), registry_(registry), clock_(clock) {}

StatusOr<std::vector<std::shared_ptr<const StoredQuota>>> QuotaAccounting::QuotasOf(
    std::string_view ns) {
  store::ListOptions options;
  options.ns = std::string(ns);
  DRAPLANE_ASSIGN_OR_RETURN(store::ListResult listed, store_->List(kQuotaResource, options));
  std::vector<std::shared_ptr<const StoredQuota>> out;
  MutexLock lock(mu_);
  // Forget cached quotas of this namespace that are gone.
  std::set<store::Key> present;
  for (const store::ObjectPtr& object : listed.objects) present.insert(object->key);
  for (auto it = cache_.lower_bound(store::Key{std::string(kQuotaResource), std::string(ns), ""});
       it != cache_.end() && it->first.resource == kQuotaResource && it->first.ns == ns;) {
    it = present.count(it->first) > 0 ? std::next(it) : cache_.erase(it);
  }
  for (const store::ObjectPtr& object : listed.objects) {
    auto cached = cache_.find(object->key);
    if (cached != cache_.end() && cached->second->revision == object->revision) {
      out.push_back(cached->second);
      continue;
    }
    StatusOr<JsonObject> parsed =
        handlers::ParseObject(handlers::WithResourceVersion(object->value, object->revision));
    if (!parsed.ok()) continue;  // not a quota the server wrote; nothing to enforce
    auto stored = std::make_shared<StoredQuota>();
    stored->key = object->key;
    stored->revision = object->revision;
    if (!DecodeJson(*parsed, &stored->quota)) continue;
    cache_[object->key] = stored;
    out.push_back(std::move(stored));
  }
  return out;
}

ResourceList QuotaAccounting::UsageOf(const handlers::ResourceInfo& r, const JsonObject& obj,
                                      std::optional<corev1::Pod>* pod) const {
  pod->reset();
  switch (api::quota::EvaluatorFor(r.group, r.resource)) {
    case api::quota::Evaluator::kResourceClaims: {
      api::resourcev1::ResourceClaim claim;
      if (!DecodeJson(obj, &claim)) return {};
      return api::quota::ResourceClaimUsage(claim);
    }
    case api::quota::Evaluator::kPods: {
      corev1::Pod decoded;
      if (!DecodeJson(obj, &decoded)) return {};
      ResourceList usage = api::quota::PodUsage(decoded, clock_->Now());
      *pod = std::move(decoded);
      return usage;
    }
    case api::quota::Evaluator::kObjectCount:
      break;
  }
  return api::quota::ObjectCountUsage(r.group, r.resource);
}

StatusOr<ResourceList> QuotaAccounting::Recompute(const corev1::ResourceQuota& quota,
                                                  const std::vector<InFlight>& in_flight) {
  const std::string& ns = quota.metadata.namespace_;
  ResourceList used;
  std::vector<std::string> owned;
  for (const auto& [key, hard] : quota.spec.hard) {
    if (!api::quota::ServerOwned(quota, key)) continue;
    owned.push_back(key);
    used.emplace(key, api::Quantity::FromInt64(0));
  }
  if (owned.empty()) return used;
  auto owned_by = [&](const std::string& group, const std::string& resource) {
    return [&, group, resource](std::string_view key) {
      return used.count(key) > 0 && api::quota::EvaluatorMatches(group, resource, key);
    };
  };
  std::set<store::Key> listed_keys;
  for (const handlers::ResourceInfo* r : registry_->StoredResources()) {
    if (!r->namespaced || api::quota::IsIgnoredResource(r->group, r->resource)) continue;
    bool needed = std::any_of(owned.begin(), owned.end(), [&](const std::string& key) {
      return api::quota::EvaluatorMatches(r->group, r->resource, key);
    });
    if (!needed) continue;
    auto keep = owned_by(r->group, r->resource);
    store::ListOptions options;
    options.ns = ns;
    DRAPLANE_ASSIGN_OR_RETURN(store::ListResult listed, store_->List(r->StoreResource(), options));
    for (const store::ObjectPtr& object : listed.objects) {
      listed_keys.insert(object->key);
      StatusOr<JsonObject> parsed = handlers::ParseObject(object->value);
      if (!parsed.ok()) continue;
      std::optional<corev1::Pod> pod;
      ResourceList usage = UsageOf(*r, *parsed, &pod);
      if (!api::quota::QuotaMatches(quota, r->group, r->resource, pod ? &*pod : nullptr)) {
        continue;
      }
      used = api::quota::Add(used, api::quota::Mask(usage, keep));
    }
  }
  for (const InFlight& entry : in_flight) {
    if (entry.key.ns != ns || listed_keys.count(entry.key) > 0) continue;
    if (!api::quota::QuotaMatches(quota, entry.group, entry.resource,
                                  entry.pod ? &*entry.pod : nullptr)) {
      continue;
    }
    used =
        api::quota::Add(used, api::quota::Mask(entry.usage, owned_by(entry.group, entry.resource)));
  }
  return used;
}

StatusOr<store::ObjectPtr> QuotaAccounting::WriteStatus(const StoredQuota& quota,
                                                        const corev1::ResourceQuotaStatus& status) {
  corev1::ResourceQuota updated = quota.quota;
  updated.status = status;
  DRAPLANE_ASSIGN_OR_RETURN(std::string stored, StoredForm(updated));
  return store_->Update(quota.key, std::move(stored), store::Preconditions{quota.revision});
}

StatusOr<store::ObjectPtr> QuotaAccounting::EditStatus(
    const store::Key& key, const std::function<void(corev1::ResourceQuotaStatus*)>& edit) {
  return store_->GuaranteedUpdate(key, [&](const store::Object* current) -> StatusOr<std::string> {
    DRAPLANE_ASSIGN_OR_RETURN(JsonObject parsed, handlers::ParseObject(current->value));
    corev1::ResourceQuota quota;
    if (!DecodeJson(parsed, &quota)) return InternalError("a stored ResourceQuota does not decode");
    edit(&quota.status);
    return StoredForm(quota);
  });
}

uint64_t QuotaAccounting::BeginCreate(const store::Key& key, std::string group,
                                      std::string resource, ResourceList usage,
                                      std::optional<corev1::Pod> pod) {
  MutexLock lock(mu_);
  uint64_t token = next_token_++;
  in_flight_.emplace(token, InFlight{key, std::move(group), std::move(resource), std::move(usage),
                                     std::move(pod), false});
  return token;
}

void QuotaAccounting::MarkCharged(uint64_t token) {
  MutexLock lock(mu_);
  if (auto it = in_flight_.find(token); it != in_flight_.end()) it->second.charged = true;
}

std::vector<QuotaAccounting::InFlight> QuotaAccounting::ChargedInFlight(std::string_view ns) {
  MutexLock lock(mu_);
  std::vector<InFlight> out;
  for (const auto& [token, entry] : in_flight_) {
    if (entry.charged && entry.key.ns == ns) out.push_back(entry);
  }
  return out;
}

void QuotaAccounting::EndCreate(uint64_t token) {
  MutexLock lock(mu_);
  in_flight_.erase(token);
}

}  // namespace draplane::server::quota
