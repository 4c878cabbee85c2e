#include "cel/planner/fast_nodes.h"

#include <vector>

#include "cel/lib/regex_cache.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::cel {

Value RegexNode::Eval(EvalContext& ctx) const {
  Value s = subject_->Eval(ctx);
  if (s.IsError()) return s;
  if (s.kind() != ValueKind::kString) {
    ctx.cost += 1;
    return NoSuchOverload();
  }
  std::string_view str = s.string_value();
  ctx.cost += TraversalCost(1 + str.size()) * pattern_cost_;
  re2::StringPiece input(str.data(), str.size());
  switch (mode_) {
    case Mode::kMatches:
      return Value::Bool(RE2::PartialMatch(input, *re_));
    case Mode::kFind: {
      re2::StringPiece m;
      if (!re_->Match(input, 0, str.size(), RE2::UNANCHORED, &m, 1)) return Value::String("");
      return Value::String(std::string_view(m.data(), m.size()));
    }
    case Mode::kFindAll: {
      std::vector<Value> out;
      for (std::string_view m : internal::FindAllMatches(*re_, str, -1)) {
        out.push_back(Value::String(m));
      }
      return MakeList(ctx.arena, out.data(), out.size());
    }
  }
  return NoSuchOverload();
}

}  // namespace draplane::cel

namespace draplane::cel {

CompareConstNode::CompareConstNode(NodePtr lhs, Value constant, CompareNode::Op op,
                                   bool constant_on_left)
    : lhs_(std::move(lhs)),
      constant_(constant),
      constant_size_(CostSize(constant)),
      op_(op),
      constant_on_left_(constant_on_left) {}

Value CompareConstNode::Eval(EvalContext& ctx) const {
  Value v = lhs_->Eval(ctx);
  if (v.IsError()) return v;
  int cmp;
  if (v.kind() == ValueKind::kInt && constant_.kind() == ValueKind::kInt) {
    ctx.cost += 1;
    int64_t a = v.int_value(), b = constant_.int_value();
    cmp = a < b ? -1 : (a > b ? 1 : 0);
  } else {
    if (v.kind() == ValueKind::kString || v.kind() == ValueKind::kBytes) {
      uint64_t s = CostSize(v);
      ctx.cost += TraversalCost(s < constant_size_ ? s : constant_size_);
    } else {
      ctx.cost += 1;
    }
    cmp = Compare(v, constant_);
    if (cmp == kIncomparable) return NoSuchOverload();
  }
  if (constant_on_left_ && cmp != kUnordered) cmp = -cmp;
  return Value::Bool(CompareNode::Holds(op_, cmp));
}

Value ConstCompareToNode::Eval(EvalContext& ctx) const {
  Value v = receiver_->Eval(ctx);
  if (v.IsError()) return v;
  ctx.cost += 1;
  if (v.kind() != constant_.kind()) return NoSuchOverload();
  int cmp = v.kind() == ValueKind::kQuantity ? CompareQuantity(v.quantity(), constant_.quantity())
                                             : CompareSemver(v.semver(), constant_.semver());
  switch (mode_) {
    case Mode::kCompareTo:
      return Value::Int(cmp);
    case Mode::kGreaterThan:
      return Value::Bool(cmp == 1);
    case Mode::kLessThan:
      return Value::Bool(cmp == -1);
  }
  return NoSuchOverload();
}

Value StringConstMethodNode::Eval(EvalContext& ctx) const {
  Value v = receiver_->Eval(ctx);
  if (v.IsError()) return v;
  if (v.kind() != ValueKind::kString) {
    ctx.cost += 1;
    return NoSuchOverload();
  }
  std::string_view s = v.string_value();
  switch (mode_) {
    case Mode::kContains:
      ctx.cost += TraversalCost(s.size()) * constant_cost_;
      return Value::Bool(s.find(constant_) != std::string_view::npos);
    case Mode::kStartsWith:
      ctx.cost += TraversalCost(s.size());
      return Value::Bool(s.size() >= constant_.size() &&
                         s.compare(0, constant_.size(), constant_) == 0);
    case Mode::kEndsWith:
      ctx.cost += TraversalCost(s.size());
      return Value::Bool(s.size() >= constant_.size() &&
                         s.compare(s.size() - constant_.size(), constant_.size(), constant_) == 0);
  }
  return NoSuchOverload();
}

}  // namespace draplane::cel
