#include "cel/planner/fast_nodes.h"

#include <vector>

#include "cel/lib/regex_cache.h"

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
