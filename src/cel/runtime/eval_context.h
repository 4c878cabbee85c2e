// Per-evaluation state shared by the program nodes: the arena for values created during the
// evaluation, the comprehension / bind variable slots, the variable bindings, the device being
// matched, and the runtime cost tracker.
//
// Runtime cost follows cel-go (`interpreter/runtimecost.go`) with Kubernetes' call costs
// (`apiserver pkg/cel/library/cost.go`): identifiers and each select / index 1, list literals
// 10, map literals 30, calls 1 unless size dependent, constants and logical operators 0, and
// comprehensions the sum of their iterations. Once the cost passes the limit the evaluation is
// cancelled with "operation cancelled: actual cost limit exceeded"; cancellation cannot be
// absorbed by `&&`, `||` or `?:`.
//
// Thread-safety: one context per evaluation, never shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cel/list_attribute_mode.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

class DeviceInput;

// Variables bound by name for the generic evaluation API. Values must outlive the activation;
// arena() holds values built for it.
class Activation {
 public:
  Activation() = default;
  Activation(const Activation&) = delete;
  Activation& operator=(const Activation&) = delete;

  void Bind(std::string name, Value value);
  // The bound value, or nullptr.
  const Value* Find(std::string_view name) const;
  Arena& arena() { return arena_; }

 private:
  std::vector<std::pair<std::string, Value>> vars_;
  Arena arena_{size_t{1} << 30};
};

struct EvalContext {
  Arena* arena = nullptr;
  Value* slots = nullptr;
  const Activation* activation = nullptr;
  const DeviceInput* device = nullptr;
  // How the program reads the device's list attributes (its release).
  ListAttributeMode list_mode = ListAttributeMode::kLists;
  uint64_t cost = 0;
  uint64_t cost_limit = UINT64_MAX;
  bool cancelled = false;

  // Adds `c` and reports whether the evaluation may continue; on the first overrun marks the
  // context cancelled.
  bool Charge(uint64_t c) {
    cost += c;
    if (cost > cost_limit) cancelled = true;
    return !cancelled;
  }
  // The cancellation error value.
  static Value CostLimitExceeded();
};

}  // namespace draplane::cel
