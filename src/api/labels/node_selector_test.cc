#include "api/labels/node_selector.h"

#include <gtest/gtest.h>

// Constructing generated structs needs the complete Boost.JSON types behind UnknownFields
// (api/meta/raw_json.h declares its default constructor inline).
#include <boost/json.hpp>
#include <string>
#include <vector>

namespace draplane::api::labels {
namespace {

corev1::NodeSelectorRequirement Req(std::string key, std::string op,
                                    std::vector<std::string> values) {
  corev1::NodeSelectorRequirement r;
  r.key = std::move(key);
  r.operator_ = std::move(op);
  r.values = std::move(values);
  return r;
}

corev1::NodeSelectorTerm Term(std::vector<corev1::NodeSelectorRequirement> expressions,
                              std::vector<corev1::NodeSelectorRequirement> fields = {}) {
  corev1::NodeSelectorTerm t;
  t.match_expressions = std::move(expressions);
  t.match_fields = std::move(fields);
  return t;
}

corev1::NodeSelector Selector(std::vector<corev1::NodeSelectorTerm> terms) {
  corev1::NodeSelector s;
  s.node_selector_terms = std::move(terms);
  return s;
}

struct MatchCase {
  const char* name;
  corev1::NodeSelector selector;
  LabelMap labels;
  std::string node_name;
  bool want;
};

// Derived from upstream nodeaffinity_test.go (TestNodeSelectorMatch, TestRequiredNodeAffinity)
// and v1helper TestMatchNodeSelectorTerms.
std::vector<MatchCase> MatchCases() {
  const LabelMap gpu = {{"gpu", "h100"}, {"zone", "a"}, {"cores", "64"}};
  return {
      {"NoTermsMatchNothing", Selector({}), gpu, "node1", false},
      {"EmptyTermMatchesNothing", Selector({Term({})}), gpu, "node1", false},
      {"EmptyTermThenMatchingTerm", Selector({Term({}), Term({Req("gpu", "In", {"h100"})})}), gpu,
       "node1", true},
      {"In", Selector({Term({Req("gpu", "In", {"a100", "h100"})})}), gpu, "node1", true},
      {"InMiss", Selector({Term({Req("gpu", "In", {"a100"})})}), gpu, "node1", false},
      {"InAbsent", Selector({Term({Req("tpu", "In", {"v5"})})}), gpu, "node1", false},
      {"NotInAbsent", Selector({Term({Req("tpu", "NotIn", {"v5"})})}), gpu, "node1", true},
      {"NotInMember", Selector({Term({Req("gpu", "NotIn", {"h100"})})}), gpu, "node1", false},
      {"Exists", Selector({Term({Req("zone", "Exists", {})})}), gpu, "node1", true},
      {"DoesNotExist", Selector({Term({Req("zone", "DoesNotExist", {})})}), gpu, "node1", false},
      {"GtTrue", Selector({Term({Req("cores", "Gt", {"32"})})}), gpu, "node1", true},
      {"GtEqual", Selector({Term({Req("cores", "Gt", {"64"})})}), gpu, "node1", false},
      {"LtTrue", Selector({Term({Req("cores", "Lt", {"128"})})}), gpu, "node1", true},
      {"GtLabelNotNumber", Selector({Term({Req("gpu", "Gt", {"1"})})}), gpu, "node1", false},
      {"ExpressionsAnded", Selector({Term({Req("gpu", "In", {"h100"}), Req("zone", "In", {"b"})})}),
       gpu, "node1", false},
      {"TermsOred", Selector({Term({Req("zone", "In", {"b"})}), Term({Req("zone", "In", {"a"})})}),
       gpu, "node1", true},
      {"FieldIn", Selector({Term({}, {Req("metadata.name", "In", {"node1"})})}), gpu, "node1",
       true},
      {"FieldInOtherNode", Selector({Term({}, {Req("metadata.name", "In", {"node1"})})}), gpu,
       "node2", false},
      {"FieldNotIn", Selector({Term({}, {Req("metadata.name", "NotIn", {"node1"})})}), gpu, "node2",
       true},
      {"FieldsSkippedForUnnamedNode", Selector({Term({}, {Req("metadata.name", "In", {"node1"})})}),
       gpu, "", true},
      {"UnknownFieldReadsEmpty", Selector({Term({}, {Req("spec.unschedulable", "In", {"a"})})}),
       gpu, "node1", false},
      {"UnknownFieldNotIn", Selector({Term({}, {Req("spec.unschedulable", "NotIn", {"a"})})}), gpu,
       "node1", true},
      {"LabelsAndFieldsAnded",
       Selector({Term({Req("gpu", "In", {"h100"})}, {Req("metadata.name", "In", {"node2"})})}), gpu,
       "node1", false},
      {"LabelsAndFieldsBoth",
       Selector({Term({Req("gpu", "In", {"h100"})}, {Req("metadata.name", "In", {"node1"})})}), gpu,
       "node1", true},
      {"BadTermSkippedWhenOtherMatches",
       Selector({Term({Req("gpu", "Foo", {"h100"})}), Term({Req("zone", "In", {"a"})})}), gpu,
       "node1", true},
  };
}

class NodeSelectorMatchTable : public testing::TestWithParam<MatchCase> {};

TEST_P(NodeSelectorMatchTable, MatchesUpstream) {
  const MatchCase& c = GetParam();
  const NodeSelectorMatcher m = NodeSelectorMatcher::Compile(c.selector);
  StatusOr<bool> got = m.Match(c.labels, c.node_name);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, c.want);
  corev1::Node node;
  node.metadata.name = c.node_name;
  node.metadata.labels = c.labels;
  StatusOr<bool> via_node = m.Match(node);
  ASSERT_TRUE(via_node.ok());
  EXPECT_EQ(*via_node, c.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, NodeSelectorMatchTable, testing::ValuesIn(MatchCases()),
                         [](const testing::TestParamInfo<MatchCase>& info) {
                           return std::string(info.param.name);
                         });

struct ErrorCase {
  const char* name;
  corev1::NodeSelector selector;
  std::string want;
};

std::vector<ErrorCase> ErrorCases() {
  return {
      {"UnknownOperator", Selector({Term({Req("gpu", "Foo", {"h100"})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "
       "\"Foo\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", "
       "\"Lt\""},
      {"GtTwoValues", Selector({Term({Req("cores", "Gt", {"1", "2"})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: "
       "[\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required"},
      {"GtNotInteger", Selector({Term({Req("cores", "Gt", {"many"})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "
       "\"many\": for 'Gt', 'Lt' operators, the value must be an integer"},
      {"InWithoutValues", Selector({Term({Req("gpu", "In", {})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: null: "
       "for 'in', 'notin' operators, values set can't be empty"},
      {"ExistsWithValues", Selector({Term({Req("gpu", "Exists", {"x"})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: "
       "[\"x\"]: values set must be empty for exists and does not exist"},
      {"FieldTwoValues", Selector({Term({}, {Req("metadata.name", "In", {"a", "b"})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].values: Invalid value: "
       "[\"a\",\"b\"]: must have one element"},
      {"FieldExists", Selector({Term({}, {Req("metadata.name", "Exists", {})})}),
       "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: "
       "\"Exists\": supported values: \"In\", \"NotIn\""},
      {"TwoTermsTwoErrors",
       Selector({Term({Req("gpu", "Foo", {})}), Term({}, {Req("metadata.name", "In", {})})}),
       "[spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "
       "\"Foo\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", "
       "\"Lt\", spec.nodeSelector.nodeSelectorTerms[1].matchFields[0].values: Invalid value: "
       "null: must have one element]"},
  };
}

class NodeSelectorErrorTable : public testing::TestWithParam<ErrorCase> {};

TEST_P(NodeSelectorErrorTable, ReportsUpstreamFieldErrors) {
  const ErrorCase& c = GetParam();
  const FieldPath path = FieldPath("spec").Child("nodeSelector");
  StatusOr<NodeSelectorMatcher> strict = NodeSelectorMatcher::CompileStrict(c.selector, path);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(strict.status().message(), c.want);
  // The lazy form reports the same errors when nothing matches.
  const NodeSelectorMatcher lazy = NodeSelectorMatcher::Compile(c.selector, path);
  StatusOr<bool> got = lazy.Match(LabelMap{{"gpu", "h100"}}, "node1");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), c.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, NodeSelectorErrorTable, testing::ValuesIn(ErrorCases()),
                         [](const testing::TestParamInfo<ErrorCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(NodeSelectorTest, CompileStrictSucceedsOnValidSelector) {
  StatusOr<NodeSelectorMatcher> m =
      NodeSelectorMatcher::CompileStrict(Selector({Term({Req("gpu", "In", {"h100"})})}));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->errors().empty());
  EXPECT_TRUE(*m->Match(LabelMap{{"gpu", "h100"}}, "n"));
}

TEST(RequiredNodeAffinityTest, AndsNodeSelectorAndAffinity) {
  corev1::Pod pod;
  pod.spec.node_selector = {{"zone", "a"}};
  corev1::Affinity affinity;
  corev1::NodeAffinity node_affinity;
  node_affinity.required_during_scheduling_ignored_during_execution =
      Selector({Term({Req("gpu", "In", {"h100"})})});
  affinity.node_affinity = node_affinity;
  pod.spec.affinity = affinity;
  const RequiredNodeAffinity required = RequiredNodeAffinity::FromPod(pod);

  corev1::Node node;
  node.metadata.name = "n1";
  node.metadata.labels = {{"zone", "a"}, {"gpu", "h100"}};
  EXPECT_TRUE(*required.Match(node));
  node.metadata.labels = {{"zone", "b"}, {"gpu", "h100"}};
  EXPECT_FALSE(*required.Match(node));
  node.metadata.labels = {{"zone", "a"}, {"gpu", "a100"}};
  EXPECT_FALSE(*required.Match(node));

  // No nodeSelector and no affinity: every node.
  EXPECT_TRUE(*RequiredNodeAffinity::FromPod(corev1::Pod()).Match(node));
  // An affinity with no terms: no node.
  corev1::Pod empty_affinity;
  corev1::Affinity a;
  corev1::NodeAffinity na;
  na.required_during_scheduling_ignored_during_execution = corev1::NodeSelector();
  a.node_affinity = na;
  empty_affinity.spec.affinity = a;
  EXPECT_FALSE(*RequiredNodeAffinity::FromPod(empty_affinity).Match(node));
}

}  // namespace
}  // namespace draplane::api::labels
