// A fixed pool of worker threads draining one FIFO queue of tasks: the server runs request
// handlers (which may block on the store) and watch fan-out here, never on the I/O threads.
//
// Thread-safety: Post may be called from any thread, including from a task; Shutdown from any
// thread but a worker.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace draplane::server::internal
