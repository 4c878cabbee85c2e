// Mutexes and condition variables the clang thread-safety analysis understands
// (common/thread_annotations.h): thin wrappers over the standard types, with the same costs.
//
//   Mutex mu_;                       std::mutex, a capability
//   MutexLock lock(mu_);             std::unique_lock: held until the scope ends, or Unlock()
//   CondVar cv_;                     std::condition_variable over a MutexLock
//   SharedMutex mu_;                 std::shared_mutex; WriterLock / ReaderLock hold it
//   RecursiveMutex mu_;              std::recursive_mutex; RecursiveMutexLock holds it
//
// A condition variable's predicate runs with the lock held, which the analysis cannot see
// through the standard library: mark the lambda `DRAPLANE_REQUIRES(mu_)`.
//
// Thread-safety: these are the synchronisation primitives; a Mutex and a CondVar are used from any
// thread, a scoped lock only on the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "common/thread_annotations.h"

namespace draplane {

class DRAPLANE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() DRAPLANE_ACQUIRE() { mu_.lock(); }
  void Unlock() DRAPLANE_RELEASE() { mu_.unlock(); }
  // True when the mutex was free and is now held.
  bool TryLock() DRAPLANE_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds this mutex, which it reached under another name (a
  // pointer kept elsewhere); nothing is checked at run time.
  void AssertHeld() const DRAPLANE_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction; Unlock() and Lock() release and take it again
// in between (the analysis follows both).
class DRAPLANE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) DRAPLANE_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() DRAPLANE_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() DRAPLANE_RELEASE() { lock_.unlock(); }
  void Lock() DRAPLANE_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// std::condition_variable over a MutexLock. The waits release the lock while blocked and hold it
// again when they return, as the standard ones do.
class CondVar {
 public:
  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

  void Wait(MutexLock& lock) DRAPLANE_NO_THREAD_SAFETY_ANALYSIS { cv_.wait(lock.lock_); }
  template <typename Predicate>
  void Wait(MutexLock& lock, Predicate done) DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    cv_.wait(lock.lock_, std::move(done));
  }
  // False when `timeout` passed before `done` held.
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout,
               Predicate done) DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_for(lock.lock_, timeout, std::move(done));
  }
  template <typename Rep, typename Period>
  std::cv_status WaitFor(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout)
      DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_for(lock.lock_, timeout);
  }
  template <typename ClockType, typename Duration, typename Predicate>
  bool WaitUntil(MutexLock& lock, const std::chrono::time_point<ClockType, Duration>& deadline,
                 Predicate done) DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_until(lock.lock_, deadline, std::move(done));
  }
  template <typename ClockType, typename Duration>
  std::cv_status WaitUntil(MutexLock& lock,
                           const std::chrono::time_point<ClockType, Duration>& deadline)
      DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_until(lock.lock_, deadline);
  }

 private:
  std::condition_variable cv_;
};

class DRAPLANE_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() DRAPLANE_ACQUIRE() { mu_.lock(); }
  void Unlock() DRAPLANE_RELEASE() { mu_.unlock(); }
  void LockShared() DRAPLANE_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() DRAPLANE_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class DRAPLANE_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) DRAPLANE_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() DRAPLANE_RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared for its scope.
class DRAPLANE_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) DRAPLANE_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() DRAPLANE_RELEASE() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A mutex its holder may take again (a callback run under it may re-enter). The analysis does
// not model re-entry; each RecursiveMutexLock is one acquisition.
class DRAPLANE_CAPABILITY("mutex") RecursiveMutex {
 public:
  RecursiveMutex() = default;
  RecursiveMutex(const RecursiveMutex&) = delete;
  RecursiveMutex& operator=(const RecursiveMutex&) = delete;

  void Lock() DRAPLANE_ACQUIRE() { mu_.lock(); }
  void Unlock() DRAPLANE_RELEASE() { mu_.unlock(); }

 private:
  std::recursive_mutex mu_;
};

class DRAPLANE_SCOPED_CAPABILITY RecursiveMutexLock {
 public:
  explicit RecursiveMutexLock(RecursiveMutex& mu) DRAPLANE_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~RecursiveMutexLock() DRAPLANE_RELEASE() { mu_.Unlock(); }
  RecursiveMutexLock(const RecursiveMutexLock&) = delete;
  RecursiveMutexLock& operator=(const RecursiveMutexLock&) = delete;

 private:
  RecursiveMutex& mu_;
};

}  // namespace draplane
