// The claim stage tracker (round2-design §7.3 B): how long a ResourceClaim takes from created to
// a ready Pod, stage by stage, as the histogram
//
//   draplane_claim_stage_duration_seconds{stage, device_class, tenant}
//
// with stages created_to_allocated, allocated_to_reserved, reserved_to_bound, bound_to_prepared,
// prepared_to_ready and created_to_ready. A claim reaches
//   created    when it is first seen (after the informer's first list: a claim listed at start
//              has an unknown creation time, and so has every stage it had already reached);
//   allocated  status.allocation is set;
//   reserved   status.reservedFor names a Pod (the first one is the claim's Pod);
//   bound      that Pod has spec.nodeName;
//   prepared   every allocated device has a status.devices entry with Ready=True (what the node
//              agent writes; a kubelet with another driver writes none, and then both prepare
//              stages are skipped, never guessed);
//   ready      that Pod has condition Ready=True.
// Each time is when the tracker observed the change through its watches (the injected Clock's
// monotonic reading), not a timestamp in the object: metav1 timestamps have one-second
// resolution, too coarse for an allocation that takes 100 ms, and watches alone make it work
// against any API server. A stage is observed once, when its end is reached and its start time is
// known. `device_class` is the class of the claim's first request (of the chosen subrequest for
// firstAvailable); `tenant` is the namespace if it is in the allowlist, else "other"
// (metrics::TenantLabels), so the series count is at most classes × 6 × (allowlist + 1).
//
// Thread-safety: handlers run on the informers' threads; the state is guarded by one mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "client/shared_informers.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"

namespace draplane::controllers {

struct StageTrackerOptions {
  // Namespaces reported under their own tenant label; the rest are "other".
  std::vector<std::string> tenants;
};

class ClaimStageTracker {
 public:
  enum Stage { kCreated, kAllocated, kReserved, kBound, kPrepared, kReady, kStageCount };

  // Registers handlers with the claim and Pod informers of `informers` (before they start).
  ClaimStageTracker(client::SharedInformers& informers, const Clock& clock,
                    StageTrackerOptions options = {});
  ~ClaimStageTracker();
  ClaimStageTracker(const ClaimStageTracker&) = delete;
  ClaimStageTracker& operator=(const ClaimStageTracker&) = delete;

  // Removes the handlers; nothing is observed afterwards.
  void Stop();

  // Events handled so far (claims and Pods), for tests that step a manual clock between writes.
  int64_t events() const;
  // Claims currently tracked (deleted claims are forgotten).
  size_t tracked() const;

  // The histogram family (process-wide).
  static const metrics::HistogramFamily& Durations();

 private:
  struct Claim {
    std::string namespace_;
    std::string device_class;
    std::string pod_name;
    std::string pod_uid;
    std::optional<Duration> at[kStageCount];
    bool reached[kStageCount] = {};
  };

  void OnClaim(const api::resourcev1::ResourceClaim& claim, bool listed);
  void OnClaimDeleted(const api::resourcev1::ResourceClaim& claim);
  void OnPod(const api::corev1::Pod& pod);
  // Marks the stages `pod` shows for `claim` (bound, ready); mu_ held.
  void NotePod(Claim& claim, const api::corev1::Pod& pod, std::optional<Duration> now)
      DRAPLANE_REQUIRES(mu_);
  // Records stage `s` of `claim` reached (at `now` when known) and observes the stages ending
  // there; mu_ held.
  void Reach(Claim& claim, Stage s, std::optional<Duration> now) DRAPLANE_REQUIRES(mu_);

  const Clock& clock_;
  const metrics::TenantLabels tenants_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::corev1::Pod>& pods_;
  client::InformerBase::HandlerId claim_handlers_ = 0;
  client::InformerBase::HandlerId pod_handlers_ = 0;

  mutable Mutex mu_;
  std::map<std::string, Claim> by_uid_ DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, std::set<std::string>> claims_of_pod_  // pod uid -> claim uids
      DRAPLANE_GUARDED_BY(mu_);
  int64_t events_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

}  // namespace draplane::controllers
