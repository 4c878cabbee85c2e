#include "cel/lib/helpers.h"

namespace draplane::cel::internal {

uint64_t CostTraverseArg0(const Value* args, size_t n, const Value&) {
  return n >= 1 ? TraversalCost(CostSize(args[0])) : 1;
}

uint64_t CostTraverseArg0Twice(const Value* args, size_t n, const Value&) {
  return n >= 1 ? (CostSize(args[0]) * 2 + 9) / 10 : 1;
}

uint64_t CostTraverseResultTwice(const Value*, size_t, const Value& result) {
  return (CostSize(result) * 2 + 9) / 10;
}

uint64_t CostRegex(const Value* args, size_t n, const Value&) {
  if (n < 2) return 1;
  uint64_t str = TraversalCost(1 + CostSize(args[0]));
  uint64_t re = (CostSize(args[1]) + 3) / 4;
  return str * re;
}

namespace {
// apiserver pkg/cel/library/cost.go traversalCost (note: floor, not ceil, for strings).
uint64_t Traverse(const Value& v, int depth) {
  switch (v.kind()) {
    case ValueKind::kString:
    case ValueKind::kBytes:
      return v.string_value().size() / 10;
    case ValueKind::kList: {
      if (depth > 64) return 1;
      uint64_t c = 0;
      for (uint32_t i = 0; i < v.list().size; ++i) c += Traverse(v.list().elems[i], depth + 1);
      return c;
    }
    case ValueKind::kMap: {
      if (depth > 64) return 1;
      uint64_t c = 0;
      for (uint32_t i = 0; i < v.map().size(); ++i) {
        c += Traverse(v.map().entries()[i].key, depth + 1) +
             Traverse(v.map().entries()[i].value, depth + 1);
      }
      return c;
    }
    default:
      return 1;
  }
}
}  // namespace

uint64_t CostTraversal(const Value* args, size_t n, const Value&) {
  return n >= 1 ? Traverse(args[0], 0) : 0;
}

}  // namespace draplane::cel::internal
