// The worker thread and the store watches of the server's own controllers that follow the store
// (the lifecycle controller, the quota controller, the decision record retention): one thread
// woken by a watch notification, by Tick() (time-based work, which the owner checks against its
// injected clock) or by Stop(); watches of several resources opened from one revision and
// drained together.
//
// Thread-safety: WatchWorker's methods may be called from any thread; a ResourceWatches belongs
// to the worker thread (its notify callback runs on store threads and only signals the worker).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "store/store.h"

namespace draplane::server::internal {

class WatchWorker {
 public:
  WatchWorker() = default;
  ~WatchWorker() { Stop(); }
  WatchWorker(const WatchWorker&) = delete;
  WatchWorker& operator=(const WatchWorker&) = delete;

  // Runs `loop` on a new thread named `name`; `loop` returns when Wait() says to stop.
  void Start(const std::string& name, std::function<void()> loop);
  // Wakes and joins the thread. Idempotent.
  void Stop();
  // Wakes the worker with a tick.
  void Tick();
  // Wakes the worker (what a store watch's notify does).
  void Notify();

  // Blocks until notified, ticked or stopped: nullopt when stopping, else whether a tick came
  // since the last Wait.
  std::optional<bool> Wait();
  // Blocks for up to `wait` (retries after failures) unless stopped; false when stopping.
  bool Pause(Duration wait);
  // Whether Stop was called (long rounds of work check it between items).
  bool stopping();

 private:
  Mutex mu_;
  CondVar cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  bool pending_ DRAPLANE_GUARDED_BY(mu_) = false;
  bool tick_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class ResourceWatches {
 public:
  // Watches every resource of `resources` (store resource names) after revision `from`, calling
  // `notify` when events queue up. Error from the store's Watch (e.g. Expired).
  Status Open(store::Store* store, const std::vector<std::string>& resources, store::Revision from,
              std::function<void()> notify);
  // Hands every queued event but bookmarks to `fn(index into resources, event)`. False when a
  // watch has ended (a slow consumer, lost history): reload from a list and Open again.
  bool Drain(const std::function<void(size_t, const store::WatchEvent&)>& fn);
  void Close() { watchers_.clear(); }
  // The newest revision seen (a reopen continues from here).
  store::Revision revision() const { return revision_; }

 private:
  std::vector<std::unique_ptr<store::Watcher>> watchers_;
  store::Revision revision_ = 0;
};

}  // namespace draplane::server::internal
