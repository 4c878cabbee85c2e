// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection: leaderelection.go, resourcelock/leaselock.go).
//
// Several replicas share one Lease; the one named in `spec.holderIdentity` leads. Algorithm of one
// attempt (TryAcquireOrRenew), as client-go's tryAcquireOrRenew:
//   1. Get the Lease. Missing: create it with this identity as holder (acquireTime = renewTime =
//      now, leaseTransitions 0) and lead.
//   2. When the record differs from the one seen last time, remember it together with the local
//      time of observation (client-go's observedTime — expiry is judged on the local clock, not on
//      the writer's timestamps, so clock skew between replicas does not matter).
//   3. Held by another identity and observedTime + leaseDuration is still in the future: do not
//      lead.
//   4. Otherwise write the Lease with this identity (acquireTime and leaseTransitions + 1 when
//      the holder changes; renewTime = now) through an Update with the resourceVersion read in 1;
//      a Conflict means another replica won the race: do not lead.
// Run() loops: acquire (an attempt every `retry_period`), call `on_started_leading`, renew every
// `retry_period`; when no renewal succeeded for `renew_deadline`, call `on_stopped_leading` and
// return. On Stop() a leader releases the Lease (empty holder, leaseDurationSeconds 1) so another
// replica takes over at once.
//
// Time: decisions read the injected Clock; Run() paces itself with real waits (Stop() interrupts
// them). Tests drive TryAcquireOrRenew() directly with a ManualClock.
//
// Metrics: leader_election_master_status{name} (client-go's): 1 while this replica leads the
// lease `name`, 0 while it does not.
//
// Thread-safety: TryAcquireOrRenew and Run are called from one thread; IsLeader, Check and Stop
// from any.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "api/gen/coordination_v1_types.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace draplane::client {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name{};
  std::string identity{};
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  std::function<void()> on_started_leading{};
  std::function<void()> on_stopped_leading{};
};

class LeaderElector {
 public:
  // InvalidArgument when a name or identity is empty or the durations are inconsistent
  // (lease_duration > renew_deadline > retry_period > 0, as client-go requires).
  static StatusOr<std::unique_ptr<LeaderElector>> Create(ApiClient& api, const Clock& clock,
                                                         LeaderElectionConfig config);

  // One acquire-or-renew attempt. Returns whether this replica holds the lease afterwards;
  // non-OK only when the API failed in a way other than a lost race.
  StatusOr<bool> TryAcquireOrRenew();
  // Releases the lease if held (holder cleared, leaseDurationSeconds 1).
  Status Release();

  // Blocks: acquire, lead, renew until the lease is lost or Stop() is called.
  void Run();
  void Stop();
  bool IsLeader() const { return leader_.load(); }
  const std::string& identity() const { return config_.identity; }
  // The `leaderElection` health check (client-go's HealthzAdaptor): failing while this replica
  // leads but has not renewed the lease for leaseDuration + `tolerance` (a renewal stuck on an
  // API that does not answer); OK otherwise, a standby included.
  Status Check(Duration tolerance) const;

 private:
  LeaderElector(ApiClient& api, const Clock& clock, LeaderElectionConfig config);
  // Sleeps `d` of real time or until Stop(); returns false when stopping.
  bool Wait(Duration d);

  ApiClient& api_;
  const Clock& clock_;
  const LeaderElectionConfig config_;
  std::optional<api::coordinationv1::LeaseSpec> observed_;
  Duration observed_at_{0};  // monotonic
  std::string observed_rv_;
  // Sets leader_ and the leader_election_master_status gauge; a renewal (leading) also dates
  // renewed_at_.
  void SetLeader(bool leading);

  std::atomic<bool> leader_{false};
  std::atomic<int64_t> renewed_at_ns_{0};  // monotonic, of the last acquire or renewal
  Mutex mu_;
  CondVar cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
};

}  // namespace draplane::client
