// ResourceQuota admission and status for the in-memory API (memory_api.h): what the API server's
// quota admission and quota controller do (server/quota/), with the same rules
// (api/quota/admission.h, api/quota/usage.h), kept exact as the objects change instead of
// recomputed on a timer. Used by MemoryApi only, under its lock.
//
//   - A quota stored whose status was never synced for the keys the server owns (new, or
//     spec.hard, scopes or device-quota mode changed) is synced from the objects of its
//     namespace at once: the API server's controller does this within moments, and its admission
//     syncs such a quota before it charges one.
//   - A create that a quota tracks is refused as the server refuses it ("exceeded quota: ...",
//     "failed quota: ...") or charged: each quota's status.used grows by the object's usage
//     before the object is stored.
//   - Replenishment: an object removed gives its usage back; a Pod that turns terminal or starts
//     terminating is re-evaluated (its compute resources stop counting), as the controller's
//     replenishment would.
//
// A Pod's or claim's usage is recorded when counted, and what it gives back is that record: a
// Pod stuck terminating past its grace period keeps counting until it is written again or
// removed (the server's periodic resync would drop it; nothing in a simulation is stuck so).
//
// Thread-safety: none; the owner serializes calls.
#pragma once

#include <boost/json/fwd.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/quota/usage.h"
#include "client/resource.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::client {

class MemoryQuotas {
 public:
  // Calls `visit(type, key, object)` for every stored object of namespace `ns`.
  using ObjectVisitor = std::function<void(const ResourceType&, const std::string& key,
                                           const boost::json::value& object)>;
  using ForEachObject = std::function<void(std::string_view ns, const ObjectVisitor& visit)>;

  // A status the API must write into quota `namespace_/name` (its current version's status
  // replaced), after which it calls QuotaStored with the new version.
  struct StatusWrite {
    std::string namespace_;
    std::string name;
    api::corev1::ResourceQuotaStatus status;
  };

  // `clock`: a Pod's usage depends on the time (api::quota::PodUsage).
  MemoryQuotas(const Clock& clock, ForEachObject objects);

  // Whether namespace `ns` has a quota; the hooks below do nothing for one that has none.
  bool Tracks(std::string_view ns) const { return namespaces_.contains(ns); }

  // The create of `object` (resource `type`, namespace `ns`, its final `name`): the refusal
  // (FailedPrecondition with the reason of the server's 403, "exceeded quota: ..."; the caller
  // names the object), or the charges to write before it is stored.
  StatusOr<std::vector<StatusWrite>> Admit(const ResourceType& type, const std::string& ns,
                                           const std::string& name,
                                           const boost::json::value& object);
  // An object replaced (`before` -> `after`): the usage changes to write.
  std::vector<StatusWrite> Replaced(const ResourceType& type, const std::string& ns,
                                    const std::string& key, const boost::json::value& before,
                                    const boost::json::value& after);
  // An object removed (`last`: its last version): the usage it gives back.
  std::vector<StatusWrite> Removed(const ResourceType& type, const std::string& ns,
                                   const std::string& key, const boost::json::value& last);

  // A version of a quota stored (created or replaced): when its status is not synced for the
  // keys the server owns, or `before` (null on create) had another spec or device-quota mode,
  // the quotas of its namespace are recounted from the objects: the statuses that differ.
  std::vector<StatusWrite> QuotaStored(const boost::json::value& quota,
                                       const boost::json::value* before);
  // The quota stored at `key` ("namespace/name") removed.
  void QuotaRemoved(std::string_view key);

 private:
  struct Namespace {
    std::map<std::string, api::corev1::ResourceQuota, std::less<>> quotas;  // by name
    // The usage counted for each Pod and claim a quota of the namespace tracks, by type and key.
    std::map<const ResourceType*, std::map<std::string, api::quota::ResourceList, std::less<>>>
        counted;
  };

  // The usage of an object as its evaluator sees it; `pod` receives the decoded Pod for Pods.
  api::quota::ResourceList UsageOf(const ResourceType& type, const boost::json::value& object,
                                   std::optional<api::corev1::Pod>* pod) const;
  // Whether a quota of `ns` has a key it owns that the evaluator of `type` charges.
  static bool Counts(const Namespace& ns, const ResourceType& type);
  // Adds `sign` x `usage` (of an object of `type`, `pod` when it is one) to the used values of
  // the quotas of `ns` that track it; returns their new statuses.
  std::vector<StatusWrite> Charge(Namespace& ns, const ResourceType& type,
                                  const api::quota::ResourceList& usage,
                                  const api::corev1::Pod* pod, int sign);
  // Recounts every quota of `ns` from its objects (and the records from scratch).
  std::vector<StatusWrite> Sync(const std::string& ns_name, Namespace& ns);

  const Clock& clock_;
  ForEachObject objects_;
  std::map<std::string, Namespace, std::less<>> namespaces_;
};

}  // namespace draplane::client
