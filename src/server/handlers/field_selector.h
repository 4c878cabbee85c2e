// Field selectors (`fieldSelector=spec.nodeName=n1,status.phase!=Failed`), parsed and matched
// as k8s.io/apimachinery/pkg/fields does: comma-separated terms `key=value`, `key==value` or
// `key!=value`, with `\` escaping `,`, `=`, `!` and `\` in values.
//
// Which fields a kind supports is the kind's business (handlers/registry.h); matching works on a
// flat map from field name to value that the kind extracts from an object.
//
// Thread-safety: plain values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace draplane::server::handlers {

struct FieldRequirement {
  std::string field;
  bool equals = true;  // false: `!=`
  std::string value;
};

class FieldSelector {
 public:
  // The empty selector matches everything.
  FieldSelector() = default;
  // Parses a selector. InvalidArgument for a term without an operator, e.g.
  // `invalid selector: 'foo'; can't understand 'foo'`.
  static StatusOr<FieldSelector> Parse(std::string_view text);

  bool empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }

  // The value `field` must equal for every match (a single `field=value` term), if any.
  std::optional<std::string> RequiresExactMatch(std::string_view field) const;

  // True when every requirement holds; a field absent from `fields` has the value "".
  bool Matches(const std::map<std::string, std::string, std::less<>>& fields) const;

  // The fields named by the requirements.
  std::vector<std::string> Fields() const;

 private:
  std::vector<FieldRequirement> requirements_;
};

}  // namespace draplane::server::handlers
