// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), so
// that what a comment used to say ("guarded by mu_") is checked by the compiler: every clang build
// (the `tsan` preset, which compiles every library of the draplane binary, and `fuzz`) has
// `-Wthread-safety -Werror=thread-safety`, and a read or write of a guarded member without its
// mutex, a call that needs a lock its caller does not hold, or a lock taken twice fails the build.
// Other compilers see empty macros.
//
// Use with the mutex types of common/mutex.h (std::mutex carries no annotations):
//   Mutex mu_;
//   int count_ DRAPLANE_GUARDED_BY(mu_) = 0;
//   std::unique_ptr<T> ptr_ DRAPLANE_PT_GUARDED_BY(mu_);   // the pointee is guarded
//   void AddLocked() DRAPLANE_REQUIRES(mu_);               // callers hold mu_
//   void Add() DRAPLANE_EXCLUDES(mu_);                     // callers must not hold mu_
// A lambda that runs under a lock its creator holds (a condition variable's predicate) says so:
//   cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return count_ > 0; });
//
// Thread-safety: macros only.
#pragma once

#if defined(__clang__)
#define DRAPLANE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DRAPLANE_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a "capability" in clang's terms), named `name` in diagnostics.
#define DRAPLANE_CAPABILITY(name) DRAPLANE_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a capability for its lifetime.
#define DRAPLANE_SCOPED_CAPABILITY DRAPLANE_THREAD_ANNOTATION(scoped_lockable)

// Data members: reads and writes need the capability (shared for reads).
#define DRAPLANE_GUARDED_BY(x) DRAPLANE_THREAD_ANNOTATION(guarded_by(x))
// Pointer members: the pointee needs the capability (the pointer itself does not).
#define DRAPLANE_PT_GUARDED_BY(x) DRAPLANE_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock order: this capability is taken after / before the named ones.
#define DRAPLANE_ACQUIRED_AFTER(...) DRAPLANE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define DRAPLANE_ACQUIRED_BEFORE(...) DRAPLANE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

// Functions: the caller holds the capabilities (exclusively, or at least shared).
#define DRAPLANE_REQUIRES(...) DRAPLANE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define DRAPLANE_REQUIRES_SHARED(...) \
  DRAPLANE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// Functions: the caller must not hold the capabilities (the function takes them).
#define DRAPLANE_EXCLUDES(...) DRAPLANE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// Functions that take or give back a capability (lock types, and functions that return with a
// lock held or release one their caller took).
#define DRAPLANE_ACQUIRE(...) DRAPLANE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define DRAPLANE_ACQUIRE_SHARED(...) \
  DRAPLANE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define DRAPLANE_RELEASE(...) DRAPLANE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define DRAPLANE_RELEASE_SHARED(...) \
  DRAPLANE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define DRAPLANE_RELEASE_GENERIC(...) \
  DRAPLANE_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define DRAPLANE_TRY_ACQUIRE(...) DRAPLANE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define DRAPLANE_TRY_ACQUIRE_SHARED(...) \
  DRAPLANE_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// The function checks at run time that the capability is held; the analysis then assumes it.
#define DRAPLANE_ASSERT_CAPABILITY(x) DRAPLANE_THREAD_ANNOTATION(assert_capability(x))
// The function returns the capability named (accessors of a private mutex).
#define DRAPLANE_RETURN_CAPABILITY(x) DRAPLANE_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function. Only where the analysis cannot follow the locking
// (a lock handed through a standard-library call); say why beside it.
#define DRAPLANE_NO_THREAD_SAFETY_ANALYSIS DRAPLANE_THREAD_ANNOTATION(no_thread_safety_analysis)
