// Watch fan-out shared by the three backends (docs/design/store.md, "Watch").
//
// A backend feeds the hub every committed event, in revision order, from one publisher at a time
// (memory: under its write lock; SQLite: its writer thread after each commit; etcd: the thread
// reading its one prefix watch). The hub
//   1. keeps a ring of recent events, covering every revision in (window_start, current];
//   2. registers watchers, each with a filter (resource, namespace, name), a bounded queue and a
//      notify callback;
//   3. on Publish, appends each event to the ring and pushes it to every matching watcher whose
//      start revision is older, ending a watcher whose queue is full with ResourceExhausted;
//   4. on Subscribe from revision R, queues the ring's events after R and registers the watcher
//      under the same lock, so no event is missed or repeated; when R is older than the ring, a
//      backend-supplied backfill (SQLite's history table) fills the gap first, else Expired.
// Publishing costs O(watchers of the event's resource) per event; no thread per watcher.
//
// Thread-safety: every method is safe for concurrent use. Lock order: the hub's mutex, then a
// watcher's. Notify callbacks run after both are released.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"
#include "store/store.h"

namespace draplane::store::internal {

class HubCore;

// The state one Watcher shares with the hub.
class WatchState {
 public:
  WatchState(std::string resource, const WatchOptions& options, size_t queue_limit);

  // Consumer side (store.h, Watcher).
  Status Poll(std::vector<WatchEvent>* out, size_t max_events);
  StatusOr<WatchEvent> Next();
  void RequestBookmark();
  void Cancel();
  Status status() const;

  // Producer side, called by the hub with its lock held.
  const std::string& resource() const { return resource_; }
  bool Matches(const Object& object) const;
  // Events at or before `revision` are not delivered. Call before the watcher is shared.
  void SetStartRevision(Revision revision);
  // The newest revision queued (or the start revision).
  Revision last_revision() const;
  // Queues `event` unless it is at or before the start revision (or, for a bookmark, older than
  // last_revision()); `bounded` applies the queue limit (the start-up backlog is unbounded).
  // Returns true when the consumer must be notified (the queue turned non-empty, or the watch
  // just ended because it was full). The hub hands each event to a watcher at most once.
  bool Push(const WatchEvent& event, bool bounded);
  // Ends the watch with `status` unless it has ended; true when it ended now.
  bool End(Status status);
  bool ended() const;
  // Runs the notify callback unless the watch was cancelled.
  void Notify();

  void Attach(std::weak_ptr<HubCore> hub, uint64_t id);

 private:
  const std::string resource_;
  const std::string ns_;
  const std::string name_;
  const size_t queue_limit_;
  const std::function<void()> notify_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<WatchEvent> queue_ DRAPLANE_GUARDED_BY(mu_);
  Revision start_revision_ DRAPLANE_GUARDED_BY(mu_) = 0;
  Revision last_revision_ DRAPLANE_GUARDED_BY(mu_) = 0;
  Status end_ DRAPLANE_GUARDED_BY(mu_);  // set once
  bool ended_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::weak_ptr<HubCore> hub_ DRAPLANE_GUARDED_BY(mu_);
  uint64_t id_ DRAPLANE_GUARDED_BY(mu_) = 0;

  // Serialises notify calls with Cancel(), so no notify starts after Cancel() returns.
  // Recursive: a notify callback may cancel its own watch.
  RecursiveMutex notify_mu_;
  bool cancelled_ DRAPLANE_GUARDED_BY(notify_mu_) = false;
};

using NotifyList = std::vector<std::shared_ptr<WatchState>>;
// Runs the notify callbacks a Publish or Terminate returned. Call with no store lock held.
void RunNotifies(const NotifyList& list);

// Reads the events of `resource` with revisions in (from, to] from durable history, in order;
// Expired when `from` is older than the history retains.
using Backfill = std::function<StatusOr<std::vector<WatchEvent>>(std::string_view resource,
                                                                 Revision from, Revision to)>;

struct WatchHubOptions {
  std::string backend;  // metric label
  // The ring holds at most this many events (0: unbounded; trimmed only by Compact) and, when
  // ring_limit is set, values of at most `ring_byte_limit` bytes (0: no byte bound): older
  // revisions are then replayed from the backfill, or Expired.
  size_t ring_limit = 0;
  size_t ring_byte_limit = 0;
  size_t default_queue_limit = 10'000;
  // The history starts after this revision: the ring covers (start_revision, current].
  Revision start_revision = 0;
};

class WatchHub {
 public:
  explicit WatchHub(const WatchHubOptions& options);
  // Ends every watcher with Cancelled ("store closed").
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Appends events (revisions increasing, each newer than current()) and fans them out.
  // Returns the watchers to notify (RunNotifies, once no store lock is held).
  [[nodiscard]] NotifyList Publish(const std::vector<WatchEvent>& events);

  // Advances current() without an event (etcd progress notifications: no event of the prefix
  // at or before `revision` is pending).
  void AdvanceTo(Revision revision);

  // Starts a watcher; `options.revision` 0 means current(). `backfill` (may be empty) serves
  // revisions older than the ring.
  StatusOr<std::unique_ptr<Watcher>> Subscribe(std::string_view resource,
                                               const WatchOptions& options,
                                               const Backfill& backfill);

  // Drops ring events at or before `revision`; later Subscribe calls from such a revision fail
  // with Expired (or use the backfill).
  void Compact(Revision revision);

  // Ends every watcher with `status` and restarts the history after `restart_revision`.
  [[nodiscard]] NotifyList TerminateAll(const Status& status, Revision restart_revision);

  Revision current() const;
  Revision window_start() const;
  size_t watcher_count() const;

 private:
  std::shared_ptr<HubCore> core_;
};

}  // namespace draplane::store::internal
