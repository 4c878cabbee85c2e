// The Event TTL (kube-apiserver's --event-ttl): core/v1 and events.k8s.io/v1 Events not written
// for `ttl` are deleted. Upstream stores every Event under an etcd lease of the TTL that each
// create and update renews, so an Event that is still being recorded (its count patched) lives
// on, and one nobody writes any more goes. Without Events' expiry a long-running server keeps
// every Event its controllers ever recorded (the scheduler and the claim controllers record one
// per failed attempt, kubectl describe lists them), and its store and lists only grow.
//
// The worker keeps every Event's expiry: one TTL after the server saw it written (a store watch
// delivers each create and update). The store keeps no lease across a restart, so at start an
// Event's last write is taken from the newest time it records itself (metadata.creationTimestamp,
// firstTimestamp, lastTimestamp, eventTime, series.lastObservedTime; events.k8s.io/v1 Events are
// stored in core/v1's form, api/events.h), never later than now: an Event left from long before
// the restart goes at the first sweep, one written just before lives out its TTL. The server's
// once-a-second Tick wakes the worker; a sweep walks the expiries from the earliest, so it costs
// the number of Events removed, not the number stored. Deletes are conditional on the revision
// indexed (an Event written meanwhile stays, with its renewed expiry). Expired Events are counted
// in `draplane_events_expired_total{resource="core/events"}` (both APIs' Events).
//
// `draplane serve --event-ttl` (default 1h, as upstream; 0 keeps Events until deleted).
//
// Thread-safety: Start/Stop/Tick/SweepNow may be called from any thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/internal/watch_worker.h"
#include "store/store.h"

namespace draplane::server::lifecycle {

class EventExpiry {
 public:
  // `ttl` must be positive.
  EventExpiry(store::Store* store, const Clock* clock, Duration ttl);
  ~EventExpiry();

  // Indexes the stored Events, deletes the expired ones, then starts the worker.
  Status Start();
  void Stop();
  // Wakes the worker to look at the clock.
  void Tick();
  // Deletes the expired Events now, on the caller's thread. Returns how many were deleted.
  StatusOr<int64_t> SweepNow();

  // When the Event stored as `value` was last written, as far as it says itself: the newest of
  // its creation and the times it records; nullopt when none parses.
  static std::optional<Timestamp> LastRecordedTime(std::string_view value);

 private:
  void Run();

  struct Entry {
    store::Revision revision = 0;  // the revision indexed (delete precondition)
    Timestamp expiry{};
  };
  // Indexes one written Event to expire at `expiry`; forgets a deleted one.
  void Index(const store::WatchEvent& event, Timestamp expiry) DRAPLANE_REQUIRES(sweep_mu_);
  StatusOr<int64_t> Load() DRAPLANE_REQUIRES(sweep_mu_);
  int64_t ExpireDue() DRAPLANE_REQUIRES(sweep_mu_);
  // Drains the watch into the index; false when it ended.
  bool Drain() DRAPLANE_REQUIRES(sweep_mu_);
  // Drains, reloading when the watch ended.
  Status Follow() DRAPLANE_REQUIRES(sweep_mu_);

  store::Store* store_;
  const Clock* clock_;
  const Duration ttl_;

  internal::WatchWorker worker_;

  // Serialises sweeps between the worker and SweepNow.
  Mutex sweep_mu_;
  internal::ResourceWatches watches_ DRAPLANE_GUARDED_BY(sweep_mu_);
  bool watching_ DRAPLANE_GUARDED_BY(sweep_mu_) = false;
  std::map<store::Key, Entry> events_ DRAPLANE_GUARDED_BY(sweep_mu_);
  // (expiry, key) of every indexed Event: earliest first.
  std::set<std::tuple<Timestamp, store::Key>> by_expiry_ DRAPLANE_GUARDED_BY(sweep_mu_);
};

}  // namespace draplane::server::lifecycle
