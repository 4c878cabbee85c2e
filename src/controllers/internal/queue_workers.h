// Worker threads draining a controller's work queue: each key is synced by one worker at a time;
// a failed sync is retried with the queue's per-key backoff, a successful one resets it
// (client-go's processNextWorkItem / handleErr).
//
// Thread-safety: Start and Stop from the owner; the sync function runs on worker threads.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client/workqueue.h"
#include "common/log.h"
#include "common/status.h"
#include "common/thread_name.h"

namespace draplane::controllers::internal {

class QueueWorkers {
 public:
  using Sync = std::function<Status(const std::string& key)>;

  QueueWorkers(std::string name, client::WorkQueue& queue, Sync sync)
      : name_(std::move(name)), queue_(queue), sync_(std::move(sync)) {}
  ~QueueWorkers() { Stop(); }

  void Start(int workers) {
    for (int i = 0; i < workers; ++i) {
      threads_.emplace_back([this] {
        SetCurrentThreadName(name_);
        Run();
      });
    }
  }
  void Stop() {
    queue_.ShutDown();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  // Syncs every key ready now on the calling thread, until none is ready (without worker threads:
  // the simulator). Returns the number of syncs.
  int ProcessReady() {
    int synced = 0;
    while (std::optional<std::string> key = queue_.TryGet()) {
      ProcessOne(*key).IgnoreError();  // logged and retried by ProcessOne
      queue_.Done(*key);
      ++synced;
    }
    return synced;
  }

  // Syncs one key on the calling thread with the same retry bookkeeping (tests).
  Status ProcessOne(const std::string& key) {
    Status s = sync_(key);
    if (s.ok()) {
      queue_.Forget(key);
    } else {
      log::Debug("{}: sync {}: {}", name_, key, s.ToString());
      queue_.AddRateLimited(key);
    }
    return s;
  }

 private:
  void Run() {
    while (std::optional<std::string> key = queue_.Get()) {
      ProcessOne(*key).IgnoreError();  // logged and retried by ProcessOne
      queue_.Done(*key);
    }
  }

  std::string name_;
  client::WorkQueue& queue_;
  Sync sync_;
  std::vector<std::thread> threads_;
};

}  // namespace draplane::controllers::internal
