#include "cel/program.h"

#include <string_view>
#include <vector>

#include "cel/environment.h"

namespace draplane::cel {
namespace {

// Per-thread evaluation scratch: an arena reset after each evaluation (keeping its first block)
// and the variable slots.
struct Scratch {
  Arena arena;
  std::vector<Value> slots;
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

constexpr std::string_view kNoSuchKey = "no such key:";

}  // namespace

std::string EnhanceRuntimeError(std::string_view message) {
  std::string out(message);
  if (out.find(kNoSuchKey) != std::string::npos) {
    out +=
        ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
        "with has() for optional fields";
  }
  return out;
}

Program::Program(std::shared_ptr<const Environment> env, std::string expression,
                 std::unique_ptr<Arena> constants, NodePtr root, int slot_count, Type output_type,
                 std::optional<uint64_t> estimated_cost, uint64_t cost_limit,
                 ListAttributeMode list_mode)
    : env_(std::move(env)),
      expression_(std::move(expression)),
      constants_(std::move(constants)),
      root_(std::move(root)),
      slot_count_(slot_count),
      output_type_(std::move(output_type)),
      estimated_cost_(estimated_cost),
      cost_limit_(cost_limit),
      list_mode_(list_mode) {}

Program::~Program() = default;

Value Program::Run(EvalContext& ctx) const {
  Value v = root_->Eval(ctx);
  if (ctx.cancelled || ctx.cost > ctx.cost_limit) {
    ctx.cancelled = true;
    return EvalContext::CostLimitExceeded();
  }
  return v;
}

SelectorResult Program::Match(const DeviceInput& device) const {
  if (const std::optional<std::string>& error = device.error(list_mode_)) [[unlikely]] {
    return SelectorResult::Error(*error, 0);
  }
  Scratch& scratch = ThreadScratch();
  if (scratch.slots.size() < static_cast<size_t>(slot_count_)) [[unlikely]] {
    scratch.slots.resize(static_cast<size_t>(slot_count_));
  }
  EvalContext ctx;
  ctx.arena = &scratch.arena;
  ctx.slots = scratch.slots.data();
  ctx.device = &device;
  ctx.list_mode = list_mode_;
  ctx.cost_limit = cost_limit_;
  Value v = root_->Eval(ctx);
  if (v.kind() == ValueKind::kBool && !ctx.cancelled && ctx.cost <= cost_limit_) [[likely]] {
    if (scratch.arena.used()) scratch.arena.Reset();
    return SelectorResult::Match(v.bool_value(), ctx.cost);
  }
  // The error text may live in the arena: copy it out before resetting.
  SelectorResult result = NotAMatch(v, ctx);
  if (scratch.arena.used()) scratch.arena.Reset();
  return result;
}

SelectorResult Program::NotAMatch(const Value& v, const EvalContext& ctx) const {
  if (ctx.cancelled || ctx.cost > cost_limit_) {
    return SelectorResult::Error(std::string(EvalContext::CostLimitExceeded().error().message),
                                 ctx.cost);
  }
  if (v.IsError()) return SelectorResult::Error(EnhanceRuntimeError(v.error().message), ctx.cost);
  const TypeValue* t = TypeOf(v);
  std::string type_name(t ? t->name : "error");
  return SelectorResult::Error("CEL result of type " + type_name +
                                   " could not be converted to bool: type conversion error "
                                   "from '" +
                                   type_name + "' to 'bool'",
                               ctx.cost);
}

EvalResult Program::Evaluate(const Activation& activation) const {
  auto arena = std::make_unique<Arena>();
  std::vector<Value> slots(static_cast<size_t>(slot_count_));
  EvalContext ctx;
  ctx.arena = arena.get();
  ctx.slots = slots.data();
  ctx.activation = &activation;
  ctx.cost_limit = cost_limit_;
  Value v = Run(ctx);
  return EvalResult(std::move(arena), v, ctx.cost);
}

EvalResult Program::Evaluate(const Activation& activation, const DeviceInput& device) const {
  auto arena = std::make_unique<Arena>();
  if (const std::optional<std::string>& error = device.error(list_mode_)) {
    Value err = MakeError(arena.get(), *error);
    return EvalResult(std::move(arena), err, 0);
  }
  std::vector<Value> slots(static_cast<size_t>(slot_count_));
  EvalContext ctx;
  ctx.arena = arena.get();
  ctx.slots = slots.data();
  ctx.activation = &activation;
  ctx.device = &device;
  ctx.list_mode = list_mode_;
  ctx.cost_limit = cost_limit_;
  Value v = Run(ctx);
  return EvalResult(std::move(arena), v, ctx.cost);
}

}  // namespace draplane::cel
