// A bump allocator for the values created during one CEL evaluation (strings, lists, maps,
// optionals, errors, library objects), in the spirit of cel-cpp's per-evaluation arena.
//
// Evaluation never frees individual objects; Reset() drops everything at once and keeps the
// first block for reuse, so a thread that evaluates many selectors stops allocating after warm
// up. Objects with non-trivial destructors are registered and destroyed on Reset().
//
// A byte budget bounds what one evaluation may allocate; Allocate() returns nullptr beyond it
// and callers turn that into the CEL error "memory limit exceeded" (a guard against expressions
// whose values grow exponentially while staying under the cost limit).
//
// Thread-safety: none; one arena per evaluating thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace draplane::cel {

class Arena {
 public:
  // 64 MiB: far above anything a device selector needs.
  static constexpr size_t kDefaultBudget = size_t{64} << 20;

  explicit Arena(size_t budget = kDefaultBudget) : budget_(budget) {}
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Uninitialised storage of `size` bytes aligned to `align` (<= 16), or nullptr when the
  // budget is exhausted.
  void* Allocate(size_t size, size_t align = alignof(std::max_align_t)) {
    size_t offset = (used_ + (align - 1)) & ~(align - 1);
    if (head_ != nullptr && offset + size <= head_->capacity) {
      used_ = offset + size;
      total_ += size;
      return head_->data() + offset;
    }
    return AllocateSlow(size, align);
  }

  // Constructs a T; a non-trivially-destructible T is destroyed on Reset(). nullptr when the
  // budget is exhausted.
  template <typename T, typename... Args>
  T* New(Args&&... args) {
    void* p = Allocate(sizeof(T), alignof(T));
    if (p == nullptr) return nullptr;
    T* obj = new (p) T(std::forward<Args>(args)...);
    if constexpr (!std::is_trivially_destructible_v<T>) {
      if (!RegisterDestructor(obj, [](void* o) { static_cast<T*>(o)->~T(); })) {
        obj->~T();
        return nullptr;
      }
    }
    return obj;
  }

  // An array of `n` default-constructed trivially destructible Ts, or nullptr.
  template <typename T>
  T* NewArray(size_t n) {
    static_assert(std::is_trivially_destructible_v<T>);
    if (n > budget_ / sizeof(T)) return nullptr;
    void* p = Allocate(sizeof(T) * (n == 0 ? 1 : n), alignof(T));
    if (p == nullptr) return nullptr;
    T* arr = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) new (arr + i) T();
    return arr;
  }

  // Copies `size` bytes; nullptr when over budget.
  char* CopyBytes(const char* data, size_t size);

  // Destroys registered objects and releases all blocks but the first.
  void Reset();

  // True if anything was allocated since construction or the last Reset().
  bool used() const { return total_ != 0; }
  size_t bytes_allocated() const { return total_; }

 private:
  struct Block {
    Block* next;
    size_t capacity;
    char* data() { return reinterpret_cast<char*>(this + 1); }
  };
  struct Destructor {
    void (*fn)(void*);
    void* obj;
    Destructor* next;
  };
  static_assert(sizeof(Block) % alignof(std::max_align_t) == 0);

  void* AllocateSlow(size_t size, size_t align);
  bool RegisterDestructor(void* obj, void (*fn)(void*));

  size_t budget_;
  Block* head_ = nullptr;
  size_t used_ = 0;   // bytes used in head_
  size_t total_ = 0;  // bytes handed out since the last Reset()
  Destructor* destructors_ = nullptr;
};

}  // namespace draplane::cel
