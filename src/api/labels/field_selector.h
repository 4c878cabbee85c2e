// Field selectors (`fieldSelector=spec.nodeName=n1,status.phase!=Failed`), parsed and matched
// as k8s.io/apimachinery/pkg/fields does: comma-separated terms `key=value`, `key==value` or
// `key!=value`, with `\` escaping `,`, `=`, `!` and `\` in values.
//
// Which fields a kind may be selected by is the kind's (upstream: each registry's GetAttrs /
// ToSelectableFields): `metadata.name` and `metadata.namespace` for every kind, plus the kind's
// own (`SelectableFieldNames`), whose values `SelectableFields` extracts from an object in its
// JSON form. The API server (server/handlers) and every ApiClient that filters lists itself
// (client::MemoryApi) use these, so a selector means the same thing everywhere.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace draplane::api::labels {

// Field name -> value, as a kind extracts them from an object.
using FieldSet = std::map<std::string, std::string, std::less<>>;

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
  bool Matches(const FieldSet& fields) const;

  // The fields named by the requirements.
  std::vector<std::string> Fields() const;

 private:
  std::vector<FieldRequirement> requirements_;
};

// The fields objects of `kind` in API group `group` ("" for core) may be selected by, beyond
// metadata.name and metadata.namespace.
const std::vector<std::string>& SelectableFieldNames(std::string_view group, std::string_view kind);

// The values of every selectable field of `object` (metadata.name and metadata.namespace
// included); an absent field has the value "".
FieldSet SelectableFields(std::string_view group, std::string_view kind,
                          const boost::json::object& object);

// InvalidArgument `field label not supported: <field>` when `selector` names a field objects of
// `kind` cannot be selected by.
Status CheckSelectableFields(const FieldSelector& selector, std::string_view group,
                             std::string_view kind);

}  // namespace draplane::api::labels
