#include "server/internal/watch_worker.h"

#include "common/mutex.h"
#include "common/thread_name.h"

namespace draplane::server::internal {

void WatchWorker::Start(const std::string& name, std::function<void()> loop) {
  thread_ = std::thread([name, loop = std::move(loop)] {
    SetCurrentThreadName(name);
    loop();
  });
}

void WatchWorker::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void WatchWorker::Tick() {
  {
    MutexLock lock(mu_);
    tick_ = true;
  }
  cv_.NotifyAll();
}

void WatchWorker::Notify() {
  {
    MutexLock lock(mu_);
    pending_ = true;
  }
  cv_.NotifyAll();
}

std::optional<bool> WatchWorker::Wait() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_ || pending_ || tick_; });
  if (stopping_) return std::nullopt;
  bool tick = tick_;
  pending_ = false;
  tick_ = false;
  return tick;
}

bool WatchWorker::Pause(Duration wait) {
  MutexLock lock(mu_);
  cv_.WaitFor(lock, wait, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_; });
  return !stopping_;
}

bool WatchWorker::stopping() {
  MutexLock lock(mu_);
  return stopping_;
}

Status ResourceWatches::Open(store::Store* store, const std::vector<std::string>& resources,
                             store::Revision from, std::function<void()> notify) {
  watchers_.clear();
  revision_ = from;
  for (const std::string& resource : resources) {
    store::WatchOptions options;
    options.revision = from;
    options.notify = notify;
    StatusOr<std::unique_ptr<store::Watcher>> watcher = store->Watch(resource, std::move(options));
    if (!watcher.ok()) {
      watchers_.clear();
      return watcher.status();
    }
    watchers_.push_back(std::move(watcher).value());
  }
  return Status::Ok();
}

bool ResourceWatches::Drain(const std::function<void(size_t, const store::WatchEvent&)>& fn) {
  for (size_t i = 0; i < watchers_.size(); ++i) {
    while (true) {
      std::vector<store::WatchEvent> events;
      if (!watchers_[i]->Poll(&events, 512).ok()) return false;
      if (events.empty()) break;
      for (const store::WatchEvent& e : events) {
        if (e.revision > revision_) revision_ = e.revision;
        if (e.type != store::WatchEvent::Type::kBookmark && e.object != nullptr) fn(i, e);
      }
    }
  }
  return true;
}

}  // namespace draplane::server::internal
