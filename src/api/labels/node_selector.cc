// Node selectors, re-derived from nodeaffinity.go (NewLazyErrorNodeSelector, newNodeSelectorTerm,
// nodeSelectorRequirementsAsSelector, nodeSelectorRequirementsAsFieldSelector,
// RequiredNodeAffinity).
#include "api/labels/node_selector.h"

#include <optional>

namespace draplane::api::labels {
namespace {

const std::vector<std::string> kValidSelectorOperators = {"In",           "NotIn", "Exists",
                                                          "DoesNotExist", "Gt",    "Lt"};
const std::vector<std::string> kValidFieldSelectorOperators = {"In", "NotIn"};

std::optional<Operator> NodeOperator(std::string_view op) {
  if (op == "In") return Operator::kIn;
  if (op == "NotIn") return Operator::kNotIn;
  if (op == "Exists") return Operator::kExists;
  if (op == "DoesNotExist") return Operator::kDoesNotExist;
  if (op == "Gt") return Operator::kGreaterThan;
  if (op == "Lt") return Operator::kLessThan;
  return std::nullopt;
}

}  // namespace

NodeSelectorMatcher NodeSelectorMatcher::Compile(const corev1::NodeSelector& selector,
                                                 const FieldPath& path) {
  NodeSelectorMatcher m;
  const FieldPath terms_path = path.Child("nodeSelectorTerms");
  for (size_t i = 0; i < selector.node_selector_terms.size(); ++i) {
    const corev1::NodeSelectorTerm& term = selector.node_selector_terms[i];
    // A term without requirements selects no objects.
    if (term.match_expressions.empty() && term.match_fields.empty()) continue;
    const FieldPath term_path = terms_path.Index(static_cast<int64_t>(i));
    Term compiled;
    if (!term.match_expressions.empty()) {
      compiled.has_label_selector = true;
      const FieldPath p = term_path.Child("matchExpressions");
      for (size_t j = 0; j < term.match_expressions.size(); ++j) {
        const corev1::NodeSelectorRequirement& expr = term.match_expressions[j];
        const FieldPath rp = p.Index(static_cast<int64_t>(j));
        const std::optional<Operator> op = NodeOperator(expr.operator_);
        if (!op.has_value()) {
          compiled.errors.push_back(NotSupported(rp.Child("operator"), RenderValue(expr.operator_),
                                                 kValidSelectorOperators));
          continue;
        }
        FieldErrorList errs = Requirement::Validate(expr.key, *op, expr.values, rp);
        if (!errs.empty()) {
          compiled.errors.insert(compiled.errors.end(), errs.begin(), errs.end());
          continue;
        }
        compiled.labels = compiled.labels.Add(Requirement::Unchecked(expr.key, *op, expr.values));
      }
    }
    if (!term.match_fields.empty()) {
      compiled.has_field_selector = true;
      const FieldPath p = term_path.Child("matchFields");
      for (size_t j = 0; j < term.match_fields.size(); ++j) {
        const corev1::NodeSelectorRequirement& expr = term.match_fields[j];
        const FieldPath rp = p.Index(static_cast<int64_t>(j));
        if (expr.operator_ != "In" && expr.operator_ != "NotIn") {
          compiled.errors.push_back(NotSupported(rp.Child("operator"), RenderValue(expr.operator_),
                                                 kValidFieldSelectorOperators));
          continue;
        }
        if (expr.values.size() != 1) {
          compiled.errors.push_back(
              Invalid(rp.Child("values"), RenderStringList(expr.values), "must have one element"));
          continue;
        }
        compiled.fields.push_back({expr.key, expr.values[0], expr.operator_ == "In"});
      }
    }
    m.errors_.insert(m.errors_.end(), compiled.errors.begin(), compiled.errors.end());
    m.terms_.push_back(std::move(compiled));
  }
  return m;
}

StatusOr<NodeSelectorMatcher> NodeSelectorMatcher::CompileStrict(
    const corev1::NodeSelector& selector, const FieldPath& path) {
  NodeSelectorMatcher m = Compile(selector, path);
  if (!m.errors_.empty()) return AggregateStatus(m.errors_);
  return m;
}

RequiredNodeAffinity RequiredNodeAffinity::FromPod(const corev1::Pod& pod) {
  RequiredNodeAffinity r;
  if (!pod.spec.node_selector.empty()) r.node_selector_ = SelectorFromSet(pod.spec.node_selector);
  if (pod.spec.affinity.has_value() && pod.spec.affinity->node_affinity.has_value() &&
      pod.spec.affinity->node_affinity->required_during_scheduling_ignored_during_execution
          .has_value()) {
    r.affinity_ = NodeSelectorMatcher::Compile(
        *pod.spec.affinity->node_affinity->required_during_scheduling_ignored_during_execution);
  }
  return r;
}

StatusOr<bool> RequiredNodeAffinity::Match(const corev1::Node& node) const {
  if (node_selector_.has_value() && !node_selector_->Matches(node.metadata.labels)) return false;
  if (affinity_.has_value()) return affinity_->Match(node);
  return true;
}

}  // namespace draplane::api::labels
