// A compiled CEL expression and its evaluation.
//
// Two entry points:
//  - Match(const DeviceInput&) for DRA device selectors (the allocator's innermost loop): the
//    device is converted once (DeviceInput), the program evaluates against it with a
//    thread-local scratch arena that is reset, not freed, so the common selector shapes do not
//    allocate after warm-up. The result is a small value: match, no match, or an error with
//    upstream's message.
//  - Evaluate(const Activation&) for arbitrary variables (`draplane cel eval`, conformance).
//
// Runtime cost is tracked per evaluation with cel-go's model and limited (1,000,000 for DRA,
// `CELSelectorExpressionMaxCost`); exceeding it fails the evaluation with
// "operation cancelled: actual cost limit exceeded".
//
// Thread-safety: a Program is immutable; Match() and Evaluate() may run concurrently.
// Ownership: a Program keeps its Environment alive.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cel/checker/types.h"
#include "cel/list_attribute_mode.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/device_input.h"
#include "cel/runtime/eval_context.h"
#include "cel/runtime/nodes.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

class Environment;

// dynamic-resource-allocation cel/errors.go EnhanceRuntimeError: a "no such key" error gets the
// hint about optional chaining and has(). Match() applies it; callers of Evaluate() that report
// DRA errors apply it themselves.
std::string EnhanceRuntimeError(std::string_view message);

// The outcome of matching a device: true, false, or an error (a value, not a Status: upstream
// turns it into an allocation error "selector #i on device D: CEL runtime error: <error>").
class SelectorResult {
 public:
  static SelectorResult Match(bool matches, uint64_t cost) {
    SelectorResult r;
    r.matches_ = matches;
    r.cost_ = cost;
    return r;
  }
  static SelectorResult Error(std::string message, uint64_t cost) {
    SelectorResult r;
    r.is_error_ = true;
    r.error_ = std::move(message);
    r.cost_ = cost;
    return r;
  }

  bool is_error() const { return is_error_; }
  // Precondition: !is_error().
  bool matches() const { return matches_; }
  // Upstream's text, e.g. "no such key: model. consider using CEL optional chaining (.?
  // followed by orValue()) or guarding the check with has() for optional fields".
  const std::string& error() const { return error_; }
  // The runtime cost the evaluation was charged.
  uint64_t cost() const { return cost_; }

 private:
  bool is_error_ = false;
  bool matches_ = false;
  uint64_t cost_ = 0;
  std::string error_;
};

// The result of a generic evaluation. The value may point into this result, the program and the
// activation; keep all three alive while reading it.
class EvalResult {
 public:
  EvalResult(std::unique_ptr<Arena> arena, Value value, uint64_t cost)
      : arena_(std::move(arena)), value_(value), cost_(cost) {}
  const Value& value() const { return value_; }
  bool is_error() const { return value_.IsError(); }
  uint64_t cost() const { return cost_; }

 private:
  std::unique_ptr<Arena> arena_;
  Value value_;
  uint64_t cost_;
};

class Program {
 public:
  // Built by Environment::Compile.
  Program(std::shared_ptr<const Environment> env, std::string expression,
          std::unique_ptr<Arena> constants, NodePtr root, int slot_count, Type output_type,
          std::optional<uint64_t> estimated_cost, uint64_t cost_limit, ListAttributeMode list_mode);
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  // Evaluates a selector against `device` (see the header comment). A non-bool result is the
  // error "CEL result of type <t> could not be converted to bool: ...".
  SelectorResult Match(const DeviceInput& device) const;

  // Evaluates with variables bound by name.
  EvalResult Evaluate(const Activation& activation) const;
  // The same with a device bound to `device` (DRA environment).
  EvalResult Evaluate(const Activation& activation, const DeviceInput& device) const;

  const std::string& expression() const { return expression_; }
  // The checked result type (dyn when compiled without checking).
  const Type& output_type() const { return output_type_; }
  // cel-go's worst-case cost estimate, when computed at compile time.
  std::optional<uint64_t> estimated_cost() const { return estimated_cost_; }
  uint64_t cost_limit() const { return cost_limit_; }
  // How the program reads list-typed device attributes (its environment's release).
  ListAttributeMode list_mode() const { return list_mode_; }

 private:
  Value Run(EvalContext& ctx) const;
  SelectorResult NotAMatch(const Value& v, const EvalContext& ctx) const;

  std::shared_ptr<const Environment> env_;
  std::string expression_;
  std::unique_ptr<Arena> constants_;
  NodePtr root_;
  int slot_count_;
  Type output_type_;
  std::optional<uint64_t> estimated_cost_;
  uint64_t cost_limit_;
  ListAttributeMode list_mode_;
};

}  // namespace draplane::cel
