#include "cel/runtime/eval_context.h"

namespace draplane::cel {

void Activation::Bind(std::string name, Value value) {
  for (auto& [n, v] : vars_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  vars_.emplace_back(std::move(name), value);
}

const Value* Activation::Find(std::string_view name) const {
  for (const auto& [n, v] : vars_) {
    if (n == name) return &v;
  }
  return nullptr;
}

Value EvalContext::CostLimitExceeded() {
  static constexpr ErrorValue kError{"operation cancelled: actual cost limit exceeded"};
  return StaticError(&kError);
}

}  // namespace draplane::cel
