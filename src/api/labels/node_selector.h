// Node selectors with Kubernetes semantics
// (k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go).
//
// A corev1.NodeSelector is an OR of terms; a term is an AND of matchExpressions (on node labels)
// and matchFields (on node fields; only `metadata.name` exists). Algorithm, as upstream:
//   1. Terms with neither matchExpressions nor matchFields are dropped: they match no node.
//   2. Each remaining term is compiled: matchExpressions become label Requirements (In, NotIn,
//      Exists, DoesNotExist, Gt, Lt; NewRequirement validation, so Gt/Lt take exactly one
//      integer), matchFields become field terms (In / NotIn with exactly one value, compared
//      with the node's field value; an unknown field reads as ""). Problems become field errors
//      at `<path>.nodeSelectorTerms[i].matchExpressions[j]...`; a term with errors never matches.
//   3. Match: true when some term matches. A term's matchFields are skipped for a node without a
//      name. When no term matches and some failed to compile, Match returns their errors
//      (upstream LazyErrorNodeSelector); CompileStrict fails up front instead (NewNodeSelector).
//   An empty selector (no terms) therefore matches nothing.
//
// Thread-safety: immutable after construction.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"
#include "api/labels/selector.h"
#include "common/status.h"

namespace draplane::api::labels {

class NodeSelectorMatcher {
 public:
  // upstream NewLazyErrorNodeSelector: never fails; errors are kept per term and reported by
  // Match. `path` prefixes the field paths (e.g. "spec.nodeSelector").
  static NodeSelectorMatcher Compile(const corev1::NodeSelector& selector,
                                     const FieldPath& path = {});
  // upstream NewNodeSelector: InvalidArgument with every compile error (aggregated).
  static StatusOr<NodeSelectorMatcher> CompileStrict(const corev1::NodeSelector& selector,
                                                     const FieldPath& path = {});

  // True when a term matches the node's labels and name. When none does and some term failed to
  // compile: InvalidArgument with those errors. `name` empty means the node has no name.
  template <typename Map>
  StatusOr<bool> Match(const Map& node_labels, std::string_view name) const {
    for (const Term& term : terms_) {
      if (!term.errors.empty()) continue;
      if (term.Matches(node_labels, name)) return true;
    }
    if (!errors_.empty()) return AggregateStatus(errors_);
    return false;
  }
  StatusOr<bool> Match(const corev1::Node& node) const {
    return Match(node.metadata.labels, node.metadata.name);
  }
  // The compile errors of all terms, in term order.
  const FieldErrorList& errors() const { return errors_; }

 private:
  struct FieldTerm {
    std::string field;
    std::string value;
    bool equal = true;  // In: field == value; NotIn: field != value
  };
  struct Term {
    Selector labels;  // Nothing when the term has no matchExpressions
    bool has_label_selector = false;
    std::vector<FieldTerm> fields;
    bool has_field_selector = false;
    FieldErrorList errors;

    template <typename Map>
    bool Matches(const Map& node_labels, std::string_view name) const {
      if (has_label_selector && !labels.Matches(node_labels)) return false;
      if (has_field_selector && !name.empty()) {
        for (const FieldTerm& f : fields) {
          const std::string_view actual = f.field == "metadata.name" ? name : std::string_view();
          if ((actual == f.value) != f.equal) return false;
        }
      }
      return true;
    }
  };

  std::vector<Term> terms_;
  FieldErrorList errors_;
};

// upstream nodeaffinity.RequiredNodeAffinity: a pod's spec.nodeSelector (every label must equal)
// AND its requiredDuringSchedulingIgnoredDuringExecution node affinity.
class RequiredNodeAffinity {
 public:
  static RequiredNodeAffinity FromPod(const corev1::Pod& pod);
  // True when the node satisfies both; the affinity's compile errors as for
  // NodeSelectorMatcher::Match.
  StatusOr<bool> Match(const corev1::Node& node) const;

 private:
  std::optional<Selector> node_selector_;
  std::optional<NodeSelectorMatcher> affinity_;
};

}  // namespace draplane::api::labels
