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
