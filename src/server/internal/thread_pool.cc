#include "server/internal/thread_pool.h"

#include <algorithm>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace draplane::server::internal {

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i)
    threads_.emplace_back([this] {
      SetCurrentThreadName("api-pool");
      Work();
    });
}

ThreadPool::~ThreadPool() { Shutdown(); }

bool ThreadPool::Post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyOne();
  return true;
}

void ThreadPool::Shutdown() {
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.NotifyAll();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t ThreadPool::queued() const {
  MutexLock lock(mu_);
  return tasks_.size();
}

void ThreadPool::Work() {
  while (true) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    // Our code does not throw; a third-party exception that slips through ends the task (a
    // request whose Exchange is dropped gets a 500), never the process.
    try {
      task();
    } catch (const std::exception& e) {
      log::Error("api-pool: a task threw: {}", e.what());
    } catch (...) {
      log::Error("api-pool: a task threw");
    }
  }
}

}  // namespace draplane::server::internal
