// Quota admission's rules (upstream plugin/pkg/admission/resourcequota and
// k8s.io/apiserver/pkg/admission/plugin/resourcequota), shared by the API server's quota
// admission and quota controller (server/quota/) and the simulator's in-memory API
// (client/memory_api.h), so that both refuse the same creates with the same message.
//
// Ownership of `status.used` (docs/design/quota.md): every key of an Admission-mode quota, and
// the keys other than the scheduler's device keys of an Allocation-mode quota, are charged at
// admission and recomputed from the objects; the device keys of an Allocation-mode quota
// (`IsAllocationChargedKey`) belong to the scheduler.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/quota/usage.h"

namespace draplane::api::quota {

// Whether admission and the quota controller account `key` of `quota` (the rule above).
bool ServerOwned(const corev1::ResourceQuota& quota, std::string_view key);

// The keys of `quota` admission enforces for objects of (group, resource): owned by the server
// and charged by the resource's evaluator, in spec.hard's order.
std::vector<std::string> EnforcedKeys(const corev1::ResourceQuota& quota, std::string_view group,
                                      std::string_view resource);

// The Pod evaluator's Constraints: when a quota limits cpu or memory (`keys`: its enforced keys),
// every container must state it (upstream keeps this "for backward compatibility"). Empty when
// satisfied, else "must specify <resource> for: <containers>; ...".
std::string PodConstraintViolation(const corev1::Pod& pod, const std::vector<std::string>& keys);

// The refusal of `quota` for a create requesting `requested` (already restricted to the
// quota's enforced keys): "exceeded quota: <name>, requested: <k=v>, used: <k=v>, limited:
// <k=v>", naming the keys that `status.used + requested` takes over `status.hard`; nullopt when
// the request fits.
std::optional<std::string> ExceededQuota(const corev1::ResourceQuota& quota,
                                         const ResourceList& requested);

// The status the quota controller writes: `status.hard` = `spec.hard`; `status.used` has every
// key of spec.hard, the server-owned ones from `owned_used` (0 when absent there), the others
// as they were (0 when absent).
corev1::ResourceQuotaStatus SyncedStatus(const corev1::ResourceQuota& quota,
                                         const ResourceList& owned_used);

// Whether the quota's status was synced for `keys`: status.hard equals spec.hard and
// status.used has each of them.
bool Synced(const corev1::ResourceQuota& quota, const std::vector<std::string>& keys);

}  // namespace draplane::api::quota
