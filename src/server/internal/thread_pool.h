// A fixed pool of worker threads draining one FIFO queue of tasks: the server runs request
// handlers (which may block on the store) and watch fan-out here, never on the I/O threads.
//
// Thread-safety: Post may be called from any thread, including from a task; Shutdown from any
// thread but a worker.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace draplane::server::internal {

class ThreadPool {
 public:
  // Starts `threads` workers (at least one).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`. Returns false (dropping it) once Shutdown has begun.
  bool Post(std::function<void()> task);

  // Runs every task already queued, stops accepting new ones and joins the workers. A task
  // running in a worker may still call Post (it is refused). Idempotent; not from a worker.
  void Shutdown();

  size_t queued() const;

 private:
  void Work();

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ DRAPLANE_GUARDED_BY(mu_);
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace draplane::server::internal
