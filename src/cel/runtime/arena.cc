#include "cel/runtime/arena.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace draplane::cel {
namespace {
constexpr size_t kFirstBlock = 4096 - 64;
}  // namespace

Arena::~Arena() {
  Reset();
  while (head_ != nullptr) {
    Block* next = head_->next;
    std::free(head_);
    head_ = next;
  }
}

void* Arena::AllocateSlow(size_t size, size_t align) {
  if (size > budget_ || total_ + size > budget_) return nullptr;
  size_t capacity = std::max(kFirstBlock, size + align);
  if (head_ != nullptr) capacity = std::max(capacity, head_->capacity * 2);
  capacity = std::min(capacity, std::max(budget_ - total_, size + align));
  auto* block = static_cast<Block*>(std::malloc(sizeof(Block) + capacity));
  if (block == nullptr) return nullptr;
  block->next = head_;
  block->capacity = capacity;
  head_ = block;
  size_t offset = (reinterpret_cast<uintptr_t>(block->data()) % align == 0)
                      ? 0
                      : align - reinterpret_cast<uintptr_t>(block->data()) % align;
  used_ = offset + size;
  total_ += size;
  return block->data() + offset;
}

char* Arena::CopyBytes(const char* data, size_t size) {
  char* p = static_cast<char*>(Allocate(size == 0 ? 1 : size, 1));
  if (p != nullptr && size != 0) std::memcpy(p, data, size);
  return p;
}

bool Arena::RegisterDestructor(void* obj, void (*fn)(void*)) {
  auto* d = static_cast<Destructor*>(Allocate(sizeof(Destructor), alignof(Destructor)));
  if (d == nullptr) return false;
  d->fn = fn;
  d->obj = obj;
  d->next = destructors_;
  destructors_ = d;
  return true;
}

void Arena::Reset() {
  for (Destructor* d = destructors_; d != nullptr; d = d->next) d->fn(d->obj);
  destructors_ = nullptr;
  if (head_ != nullptr) {
    // Keep the oldest (smallest) block.
    Block* keep = head_;
    while (keep->next != nullptr) {
      Block* b = keep;
      keep = keep->next;
      std::free(b);
    }
    head_ = keep;
  }
  used_ = 0;
  total_ = 0;
}

}  // namespace draplane::cel
