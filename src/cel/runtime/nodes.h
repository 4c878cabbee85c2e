// Program nodes: a compiled CEL expression is a tree of nodes evaluated recursively (the
// "direct step" model of cel-cpp, `eval/eval/direct_expression_step.h`). Each node returns a
// `Value` (errors are values) and charges its own runtime cost to the context.
//
// Semantics mirrored from cel-go's interpreter (`interpreter/interpretable.go`):
//  - `&&` / `||` evaluate left to right, stop at the first false / true, and otherwise return
//    the first error (non-bool operands count as errors), so errors are absorbed commutatively;
//  - `?:` evaluates only the chosen branch; a non-bool condition is "no such overload";
//  - calls are strict: the first error argument is the result;
//  - comprehensions evaluate the range, then the accumulator initialiser (an error initialiser
//    is just the accumulator's value), then per element the condition (stop on false) and the
//    step; the result expression sees only the accumulator.
//
// Thread-safety: nodes are immutable after planning and may be evaluated concurrently with
// different contexts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cel/runtime/eval_context.h"
#include "cel/runtime/function.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

class Node {
 public:
  virtual ~Node() = default;
  virtual Value Eval(EvalContext& ctx) const = 0;
  // The value when the node is a constant (for constant folding), else nullptr.
  virtual const Value* constant() const { return nullptr; }
};
using NodePtr = std::unique_ptr<Node>;

class ConstNode final : public Node {
 public:
  explicit ConstNode(Value v) : value_(v) {}
  Value Eval(EvalContext&) const override { return value_; }
  const Value* constant() const override { return &value_; }

 private:
  Value value_;
};

// A comprehension or bind variable.
class SlotNode final : public Node {
 public:
  explicit SlotNode(int slot) : slot_(slot) {}
  Value Eval(EvalContext& ctx) const override {
    ctx.cost += 1;
    return ctx.slots[slot_];
  }
  int slot() const { return slot_; }

 private:
  int slot_;
};

// A variable of the activation. `alternatives` are tried in order; each names a variable and
// the fields to select from it (so `a.b.c` can bind to "a.b.c", or "a.b" then field c, ...).
class VariableNode final : public Node {
 public:
  struct Alternative {
    std::string name;
    std::vector<std::string> fields;
  };
  explicit VariableNode(std::vector<Alternative> alternatives)
      : alternatives_(std::move(alternatives)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::vector<Alternative> alternatives_;
};

// Field selection `operand.field` and presence test `has(operand.field)`.
class SelectNode final : public Node {
 public:
  SelectNode(NodePtr operand, std::string field, bool test_only, uint64_t cost)
      : operand_(std::move(operand)),
        field_(std::move(field)),
        test_only_(test_only),
        cost_(cost) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr operand_;
  std::string field_;
  bool test_only_;
  uint64_t cost_;
};

// Indexing `operand[index]`.
class IndexNode final : public Node {
 public:
  IndexNode(NodePtr operand, NodePtr index, uint64_t cost)
      : operand_(std::move(operand)), index_(std::move(index)), cost_(cost) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr operand_;
  NodePtr index_;
  uint64_t cost_;
};

// Optional field selection `operand.?field` and optional index `operand[?index]`.
class OptionalSelectNode final : public Node {
 public:
  OptionalSelectNode(NodePtr operand, NodePtr key, bool is_index, uint64_t cost)
      : operand_(std::move(operand)), key_(std::move(key)), is_index_(is_index), cost_(cost) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr operand_;
  NodePtr key_;
  bool is_index_;
  uint64_t cost_;
};

class AndNode final : public Node {
 public:
  explicit AndNode(std::vector<NodePtr> terms) : terms_(std::move(terms)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::vector<NodePtr> terms_;
};

class OrNode final : public Node {
 public:
  explicit OrNode(std::vector<NodePtr> terms) : terms_(std::move(terms)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::vector<NodePtr> terms_;
};

class ConditionalNode final : public Node {
 public:
  ConditionalNode(NodePtr cond, NodePtr then_node, NodePtr else_node)
      : cond_(std::move(cond)), then_(std::move(then_node)), else_(std::move(else_node)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr cond_, then_, else_;
};

// `@not_strictly_false(x)`: x when x is a bool, else true.
class NotStrictlyFalseNode final : public Node {
 public:
  explicit NotStrictlyFalseNode(NodePtr arg) : arg_(std::move(arg)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr arg_;
};

// `a == b` / `a != b` with heterogeneous equality.
class EqualNode final : public Node {
 public:
  EqualNode(NodePtr lhs, NodePtr rhs, bool negate)
      : lhs_(std::move(lhs)), rhs_(std::move(rhs)), negate_(negate) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr lhs_, rhs_;
  bool negate_;
};

// `a == <constant>` / `a != <constant>` for a string, int, bool or double constant: compares
// without dispatch when the kinds agree (the common selector shape).
class EqualConstNode final : public Node {
 public:
  EqualConstNode(NodePtr lhs, Value constant, bool negate);
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr lhs_;
  Value constant_;
  uint64_t constant_size_;
  bool negate_;
};

// `a < b`, `a <= b`, `a > b`, `a >= b` over numbers (cross-type), strings, bytes, bools,
// timestamps and durations.
class CompareNode final : public Node {
 public:
  enum class Op : uint8_t { kLess, kLessEqual, kGreater, kGreaterEqual };
  CompareNode(NodePtr lhs, NodePtr rhs, Op op)
      : lhs_(std::move(lhs)), rhs_(std::move(rhs)), op_(op) {}
  Value Eval(EvalContext& ctx) const override;
  static bool Holds(Op op, int cmp);

 private:
  NodePtr lhs_, rhs_;
  Op op_;
};

// `x in list` / `k in map`.
class InNode final : public Node {
 public:
  InNode(NodePtr elem, NodePtr container)
      : elem_(std::move(elem)), container_(std::move(container)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr elem_, container_;
};

// A function call dispatched over candidate overloads.
class CallNode final : public Node {
 public:
  CallNode(std::string function, std::vector<const OverloadImpl*> candidates,
           std::vector<NodePtr> args);
  Value Eval(EvalContext& ctx) const override;
  const std::vector<const OverloadImpl*>& candidates() const { return candidates_; }

 private:
  template <size_t N>
  Value EvalN(EvalContext& ctx) const;

  std::string function_;
  std::vector<const OverloadImpl*> candidates_;
  std::vector<NodePtr> args_;
  bool non_strict_ = false;
};

class ListNode final : public Node {
 public:
  ListNode(std::vector<NodePtr> elems, std::vector<bool> optional)
      : elems_(std::move(elems)), optional_(std::move(optional)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::vector<NodePtr> elems_;
  std::vector<bool> optional_;
};

class MapNode final : public Node {
 public:
  MapNode(std::vector<NodePtr> keys, std::vector<NodePtr> values, std::vector<bool> optional)
      : keys_(std::move(keys)), values_(std::move(values)), optional_(std::move(optional)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::vector<NodePtr> keys_, values_;
  std::vector<bool> optional_;
};

class ComprehensionNode final : public Node {
 public:
  struct Spec {
    NodePtr range;
    NodePtr init;
    NodePtr condition;
    NodePtr step;
    NodePtr result;
    int iter_slot = -1;
    int iter_slot2 = -1;  // -1 for one-variable comprehensions
    int accu_slot = -1;
  };
  explicit ComprehensionNode(Spec spec) : s_(std::move(spec)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  Spec s_;
};

// `cel.bind(v, init, body)` (a comprehension over an empty list): evaluates `init` into the
// slot, then `body`.
class BindNode final : public Node {
 public:
  BindNode(int slot, NodePtr init, NodePtr body)
      : slot_(slot), init_(std::move(init)), body_(std::move(body)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  int slot_;
  NodePtr init_, body_;
};

// The step `@result + [elem]` of map/filter/transformList macros: appends to the accumulator
// list in place (the accumulator is private to the comprehension), charging what the generic
// step would cost (add 1, accumulator 1, list literal 10).
class AccuAppendNode final : public Node {
 public:
  AccuAppendNode(int accu_slot, NodePtr elem) : accu_slot_(accu_slot), elem_(std::move(elem)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  int accu_slot_;
  NodePtr elem_;
};

// `cel.@mapInsert(@result, k, v)` / `cel.@mapInsert(@result, {k: v})` of transformMap and
// transformMapEntry: inserts into the accumulator map; a duplicate key is an error.
class AccuMapInsertNode final : public Node {
 public:
  AccuMapInsertNode(int accu_slot, NodePtr key, NodePtr value)
      : accu_slot_(accu_slot), key_(std::move(key)), value_(std::move(value)) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  int accu_slot_;
  NodePtr key_;    // null for the entry form
  NodePtr value_;  // the value, or the entry map for the entry form
};

// `opt.or(other)` / `opt.orValue(v)`: the right side is evaluated only when `opt` is empty.
class OptionalOrNode final : public Node {
 public:
  OptionalOrNode(NodePtr lhs, NodePtr rhs, bool or_value)
      : lhs_(std::move(lhs)), rhs_(std::move(rhs)), or_value_(or_value) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  NodePtr lhs_, rhs_;
  bool or_value_;
};

// Go-style type name used in cel-go's "got 'types.Int', expected iterable type".
std::string_view GoTypeName(const Value& v);

}  // namespace draplane::cel
