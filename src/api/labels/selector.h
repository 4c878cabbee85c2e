// Label selectors with Kubernetes semantics (k8s.io/apimachinery/pkg/labels/selector.go and
// metav1.LabelSelectorAsSelector in pkg/apis/meta/v1/helpers.go).
//
// A Selector is an AND of Requirements (key, operator, values). Selectors come from three places:
//   * the string form `a=b,c in (x,y),!d,e!=f,g` (Parse, upstream labels.Parse);
//   * a metav1.LabelSelector (matchLabels + matchExpressions; LabelSelectorAsSelector);
//   * a plain label set (SelectorFromSet, every key must equal its value).
// Construction validates keys (qualified names) and values (label values) and reports problems
// as field errors with upstream's paths and wording; matching never fails.
//
// Matching (Requirement::Matches, upstream Requirement.Matches):
//   In/=/==       the key is present and its value is one of the values;
//   NotIn/!=      the key is absent, or its value is none of the values;
//   Exists        the key is present;      DoesNotExist  the key is absent;
//   Gt/Lt         the key is present, its value and the single requirement value both parse as
//                 int64 (Go strconv.ParseInt rules), and label > value (Gt) or label < value (Lt).
//
// Thread-safety: immutable values after construction; const access is safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "common/status.h"

namespace draplane::api::labels {

// The label map type of the generated object model (metav1.ObjectMeta.labels).
using LabelMap = std::map<std::string, std::string, std::less<>>;

// upstream selection.Operator.
enum class Operator {
  kIn,            // "in"
  kNotIn,         // "notin"
  kEquals,        // "="
  kDoubleEquals,  // "=="
  kNotEquals,     // "!="
  kExists,        // "exists"
  kDoesNotExist,  // "!"
  kGreaterThan,   // "gt"
  kLessThan,      // "lt"
};

// The upstream string of an operator, e.g. "notin" or "!=".
std::string_view OperatorString(Operator op);

// Go strconv.ParseInt(s, 10, 64): an optional sign and one or more decimal digits, in range.
bool ParseGoInt64(std::string_view s, int64_t& out);

// Renders a []string the way field errors print it (encoding/json), an empty list as null (upstream
// passes nil slices for absent values).
std::string RenderStringList(const std::vector<std::string>& values);

// The text of a utilerrors aggregate of field errors, as Go prints it: one error alone, several as
// "[a, b]" with duplicates dropped; "" for none.
std::string AggregateMessage(const FieldErrorList& errors);
// InvalidArgument carrying AggregateMessage(errors) and one cause per error. Precondition:
// !errors.empty().
Status AggregateStatus(const FieldErrorList& errors);

class Requirement {
 public:
  // upstream labels.NewRequirement: validates the key (a qualified name, at `path.key`), the
  // operator's value count (at `path.values`), Gt/Lt integer values (at `path.values[i]`) and
  // each value (a label value, at `path.values[i][key]`). Returns the errors (empty when valid).
  static FieldErrorList Validate(std::string_view key, Operator op,
                                 const std::vector<std::string>& values, const FieldPath& path);
  // Validate(), then InvalidArgument (AggregateStatus) or the requirement.
  static StatusOr<Requirement> Create(std::string key, Operator op, std::vector<std::string> values,
                                      const FieldPath& path = {});
  // A requirement without validation (upstream SelectorFromValidatedSet): the caller vouches
  // for the key and values.
  static Requirement Unchecked(std::string key, Operator op, std::vector<std::string> values);

  const std::string& key() const { return key_; }
  Operator op() const { return op_; }
  const std::vector<std::string>& values() const { return values_; }

  // upstream Requirement.Matches; `labels` is any map from string keys to string values.
  template <typename Map>
  bool Matches(const Map& labels) const {
    const auto it = labels.find(key_);
    if (it == labels.end()) return MatchesAbsent();
    return MatchesValue(it->second);
  }
  bool MatchesAbsent() const;
  bool MatchesValue(std::string_view value) const;

  // upstream Requirement.String: `key=v`, `key in (a,b)` (values sorted), `!key`, `key>1`, ...
  std::string String() const;

  friend bool operator==(const Requirement&, const Requirement&) = default;

 private:
  Requirement(std::string key, Operator op, std::vector<std::string> values)
      : key_(std::move(key)), op_(op), values_(std::move(values)) {}
  std::string key_;
  Operator op_ = Operator::kExists;
  std::vector<std::string> values_;
};

class Selector {
 public:
  // Matches everything (upstream labels.Everything / an empty internalSelector).
  Selector() = default;
  static Selector Everything() { return Selector(); }
  // Matches nothing (upstream labels.Nothing).
  static Selector Nothing();

  // A copy with `r` added; requirements stay sorted by key (stable for equal keys).
  Selector Add(Requirement r) const;

  template <typename Map>
  bool Matches(const Map& labels) const {
    if (nothing_) return false;
    for (const Requirement& r : requirements_) {
      if (!r.Matches(labels)) return false;
    }
    return true;
  }
  // True when the selector does not restrict anything (Everything); false for Nothing.
  bool Empty() const { return !nothing_ && requirements_.empty(); }
  bool IsNothing() const { return nothing_; }
  const std::vector<Requirement>& requirements() const { return requirements_; }
  // upstream Selector.String: the requirements joined by ','; "" for Everything and Nothing.
  std::string String() const;

  friend bool operator==(const Selector&, const Selector&) = default;

 private:
  std::vector<Requirement> requirements_;
  bool nothing_ = false;
};

// upstream labels.Parse: the string form
//   <selector> ::= <requirement> | <requirement> "," <selector>
//   <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<")
//   VALUE ]
// Whitespace (space, tab, CR, LF) separates tokens. Errors are InvalidArgument with upstream's
// messages, e.g. "unable to parse requirement: found '', expected: identifier"; `path` prefixes
// the field errors of key and value validation (upstream renders an empty path as "<nil>").
StatusOr<Selector> Parse(std::string_view selector, const FieldPath& path = {});

// upstream labels.SelectorFromSet / ValidatedSelectorFromSet: every key equals its value.
template <typename Map>
Selector SelectorFromSet(const Map& set) {
  Selector s;
  for (const auto& [key, value] : set) {
    s = s.Add(Requirement::Unchecked(std::string(key), Operator::kEquals, {std::string(value)}));
  }
  return s;
}
template <typename Map>
StatusOr<Selector> ValidatedSelectorFromSet(const Map& set) {
  Selector s;
  for (const auto& [key, value] : set) {
    StatusOr<Requirement> r =
        Requirement::Create(std::string(key), Operator::kEquals, {std::string(value)});
    if (!r.ok()) return r.status();
    s = s.Add(*std::move(r));
  }
  return s;
}

// A metav1.LabelSelectorRequirement as plain data (operator as written: In, NotIn, Exists,
// DoesNotExist).
struct LabelSelectorRequirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
};

// upstream metav1.LabelSelectorAsSelector for a present selector: no matchLabels and no
// matchExpressions select everything. Errors: InvalidArgument with the NewRequirement aggregate
// (e.g. `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`) or
// `"Foo" is not a valid label selector operator`. (A null selector selects nothing: callers
// holding an optional return Selector::Nothing() for it, as the template below does.)
StatusOr<Selector> LabelSelectorAsSelector(
    const LabelMap& match_labels, const std::vector<LabelSelectorRequirement>& expressions);

// The same for a generated metav1.LabelSelector (any struct with `match_labels` and
// `match_expressions` whose items have `key`, `operator_` and `values`).
template <typename LabelSelectorT>
StatusOr<Selector> LabelSelectorAsSelector(const LabelSelectorT& selector) {
  LabelMap match_labels(selector.match_labels.begin(), selector.match_labels.end());
  std::vector<LabelSelectorRequirement> expressions;
  expressions.reserve(selector.match_expressions.size());
  for (const auto& e : selector.match_expressions) {
    expressions.push_back({e.key, e.operator_, e.values});
  }
  return LabelSelectorAsSelector(match_labels, expressions);
}
template <typename LabelSelectorT>
StatusOr<Selector> LabelSelectorAsSelector(const std::optional<LabelSelectorT>& selector) {
  if (!selector.has_value()) return Selector::Nothing();
  return LabelSelectorAsSelector(*selector);
}

}  // namespace draplane::api::labels
