// Quota accounting over the store, shared by quota admission (admission.h) and the quota status
// controller (controller.h): the quotas of a namespace, which of their keys the API server
// accounts, usage recomputed from the stored objects, and the creates admitted but not yet
// written (docs/design/quota.md).
//
// Ownership of `status.used` (api::quota::ServerOwned): every key of an Admission-mode quota, and
// the non-device keys of an Allocation-mode quota (`count/...`, `pods`, `requests.cpu`, ...), are
// charged by admission and recomputed by the controller. The device keys of an Allocation-mode
// quota
// (`api::quota::IsAllocationChargedKey`) belong to the scheduler, which charges them from the
// allocation with conditional status writes; the server never changes their values (it only
// adds a missing key as 0 so that `kubectl describe quota` shows every key).
//
// Creates in flight. Admission registers a create before it charges (`BeginCreate`), charges
// and marks it charged under the shared side of `charge_mutex()`, and ends it once the object is
// written or the write failed. The controller takes its snapshot (the quotas and the charged
// creates in flight) under the exclusive side, so a charge is either in the quota it read and in
// the snapshot, or it lands after the quota's revision the controller read, and the
// controller's conditional write of `status.used` fails and starts over. A charged create in
// flight that is not yet in the store is counted from the snapshot, once (by key).
//
// Thread-safety: safe for concurrent use (a mutex guards the decoded-quota cache and the
// in-flight creates).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/quota/admission.h"
#include "api/quota/usage.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/handlers/json_util.h"
#include "server/handlers/registry.h"
#include "store/store.h"

namespace draplane::server::quota {

using api::quota::ResourceList;

// One stored quota, decoded (with its resourceVersion in metadata).
struct StoredQuota {
  store::Key key;
  store::Revision revision = 0;
  api::corev1::ResourceQuota quota;
};

class QuotaAccounting {
 public:
  QuotaAccounting(store::Store* store, const handlers::Registry* registry, const Clock* clock);

  // The quotas of `ns`, in name order. Decoded once per revision.
  StatusOr<std::vector<std::shared_ptr<const StoredQuota>>> QuotasOf(std::string_view ns);

  // The usage of an object of resource `r` (JSON in its served form); `pod` receives the decoded
  // Pod when `r` is pods (for scope matching), else it is reset.
  ResourceList UsageOf(const handlers::ResourceInfo& r, const handlers::JsonObject& obj,
                       std::optional<api::corev1::Pod>* pod) const;

  // A create admitted and charged, not yet in the store.
  struct InFlight {
    store::Key key;
    std::string group;
    std::string resource;
    ResourceList usage;
    std::optional<api::corev1::Pod> pod;
    bool charged = false;
  };

  // The usage of the server-owned keys of `quota`, recomputed from the objects stored in its
  // namespace plus `in_flight` (the charged creates of a snapshot; one found in the store is not
  // counted twice). Every owned key is present (0 when nothing uses it).
  StatusOr<ResourceList> Recompute(const api::corev1::ResourceQuota& quota,
                                   const std::vector<InFlight>& in_flight);

  // Writes `status` into the stored quota if its revision is still `revision`. Conflict when it
  // changed; NotFound when it is gone.
  StatusOr<store::ObjectPtr> WriteStatus(const StoredQuota& quota,
                                         const api::corev1::ResourceQuotaStatus& status);

  // Edits the stored quota's status with `edit` in a read-modify-write loop (the store's
  // GuaranteedUpdate). NotFound when the quota is gone.
  StatusOr<store::ObjectPtr> EditStatus(
      const store::Key& key, const std::function<void(api::corev1::ResourceQuotaStatus*)>& edit);

  // Creates in flight (see above). `BeginCreate` returns a token for the others.
  uint64_t BeginCreate(const store::Key& key, std::string group, std::string resource,
                       ResourceList usage, std::optional<api::corev1::Pod> pod);
  void MarkCharged(uint64_t token);
  void EndCreate(uint64_t token);
  // The charged creates in flight in `ns`, with `charge_mutex()` held exclusively.
  std::vector<InFlight> ChargedInFlight(std::string_view ns) DRAPLANE_REQUIRES(charge_mu_);
  // Shared by admission while it charges; exclusive for a controller snapshot.
  SharedMutex& charge_mutex() DRAPLANE_RETURN_CAPABILITY(charge_mu_) { return charge_mu_; }

  store::Store* store() const { return store_; }
  const Clock& clock() const { return *clock_; }

 private:
  store::Store* store_;
  const handlers::Registry* registry_;
  const Clock* clock_;

  SharedMutex charge_mu_;
  Mutex mu_;
  // store key -> the decoded quota at its revision.
  std::map<store::Key, std::shared_ptr<const StoredQuota>> cache_ DRAPLANE_GUARDED_BY(mu_);
  uint64_t next_token_ DRAPLANE_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, InFlight> in_flight_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace draplane::server::quota
