// Specialised nodes the planner emits for common shapes (private to the planner).
//
// Thread-safety: immutable; evaluate concurrently.
#pragma once

#include <re2/re2.h>

#include <memory>

#include "cel/runtime/nodes.h"

namespace draplane::cel {

// `s.matches(<const>)`, `s.find(<const>)`, `s.findAll(<const>)` with the pattern compiled once.
class RegexNode final : public Node {
 public:
  enum class Mode : uint8_t { kMatches, kFind, kFindAll };
  RegexNode(NodePtr subject, std::shared_ptr<const RE2> re, size_t pattern_size, Mode mode)
      : subject_(std::move(subject)),
        re_(std::move(re)),
        pattern_cost_((pattern_size + 3) / 4),
        mode_(mode) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr subject_;
  std::shared_ptr<const RE2> re_;
  uint64_t pattern_cost_;
  Mode mode_;
};

}  // namespace draplane::cel

namespace draplane::cel {

// `x <op> <constant>` with an int, uint, double or string constant: compares directly when x
// has the constant's kind, else falls back to the generic comparison.
class CompareConstNode final : public Node {
 public:
  CompareConstNode(NodePtr lhs, Value constant, CompareNode::Op op, bool constant_on_left);
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr lhs_;
  Value constant_;
  uint64_t constant_size_;
  CompareNode::Op op_;
  bool constant_on_left_;
};

// `x.compareTo(C)`, `x.isGreaterThan(C)`, `x.isLessThan(C)` with a constant quantity or semver
// C: one comparison without dispatch (cost 1 as the library charges).
class ConstCompareToNode final : public Node {
 public:
  enum class Mode : uint8_t { kCompareTo, kGreaterThan, kLessThan };
  ConstCompareToNode(NodePtr receiver, Value constant, Mode mode)
      : receiver_(std::move(receiver)), constant_(constant), mode_(mode) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr receiver_;
  Value constant_;  // a quantity or a semver
  Mode mode_;
};

// `s.contains(C)`, `s.startsWith(C)`, `s.endsWith(C)` with a constant string C.
class StringConstMethodNode final : public Node {
 public:
  enum class Mode : uint8_t { kContains, kStartsWith, kEndsWith };
  StringConstMethodNode(NodePtr receiver, std::string_view constant, Mode mode)
      : receiver_(std::move(receiver)),
        constant_(constant),
        mode_(mode),
        constant_cost_(TraversalCost(constant.size())) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr receiver_;
  std::string_view constant_;  // owned by the program's constant arena
  Mode mode_;
  uint64_t constant_cost_;
};

}  // namespace draplane::cel
