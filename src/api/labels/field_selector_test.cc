#include "api/labels/field_selector.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace draplane::api::labels {
namespace {

TEST(FieldSelectorTest, ParsesOperatorsAndEscapes) {
  StatusOr<FieldSelector> s =
      FieldSelector::Parse("spec.nodeName=n1,status.phase!=Failed,a==b\\,c");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->requirements().size(), 3u);
  EXPECT_EQ(*s->RequiresExactMatch("spec.nodeName"), "n1");
  EXPECT_FALSE(s->RequiresExactMatch("status.phase").has_value());
  EXPECT_EQ(s->requirements()[2].value, "b,c");
  EXPECT_TRUE(s->Matches({{"spec.nodeName", "n1"}, {"status.phase", "Running"}, {"a", "b,c"}}));
  EXPECT_FALSE(s->Matches({{"spec.nodeName", "n1"}, {"status.phase", "Failed"}, {"a", "b,c"}}));
}

TEST(FieldSelectorTest, EscapedOperatorsBelongToTheValue) {
  // fields.splitTerm: an escaped '=' or '!' is not an operator; `\\` is a backslash.
  StatusOr<FieldSelector> s = FieldSelector::Parse(R"(a=x\=y,b!=p\!q,c=back\\slash)");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->requirements().size(), 3u);
  EXPECT_EQ(s->requirements()[0].field, "a");
  EXPECT_EQ(s->requirements()[0].value, "x=y");
  EXPECT_FALSE(s->requirements()[1].equals);
  EXPECT_EQ(s->requirements()[1].value, "p!q");
  EXPECT_EQ(s->requirements()[2].value, "back\\slash");
  // A missing field compares as "".
  EXPECT_TRUE(FieldSelector::Parse("spec.nodeName=")->Matches({}));
}

TEST(FieldSelectorTest, ATermWithoutOperatorIsRejectedWithUpstreamWording) {
  StatusOr<FieldSelector> s = FieldSelector::Parse("spec.nodeName=n1,foo");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "invalid selector: 'spec.nodeName=n1,foo'; can't understand 'foo'");
}

TEST(SelectableFieldsTest, EachKindSelectsOnItsOwnFields) {
  boost::json::object pod = boost::json::parse(R"({
      "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"nodeName": "n1", "hostNetwork": true},
      "status": {"phase": "Running"}})")
                                .as_object();
  FieldSet fields = SelectableFields("", "Pod", pod);
  EXPECT_EQ(fields["metadata.name"], "p");
  EXPECT_EQ(fields["metadata.namespace"], "ns");
  EXPECT_EQ(fields["spec.nodeName"], "n1");
  EXPECT_EQ(fields["spec.hostNetwork"], "true");
  EXPECT_EQ(fields["status.phase"], "Running");
  EXPECT_EQ(fields["spec.schedulerName"], "");

  boost::json::object slice =
      boost::json::parse(R"({"metadata":{"name":"s"},"spec":{"nodeName":"n1","driver":"d"}})")
          .as_object();
  EXPECT_EQ(SelectableFields("resource.k8s.io", "ResourceSlice", slice)["spec.driver"], "d");

  StatusOr<FieldSelector> by_driver = FieldSelector::Parse("spec.driver=d");
  ASSERT_TRUE(by_driver.ok());
  EXPECT_TRUE(CheckSelectableFields(*by_driver, "resource.k8s.io", "ResourceSlice").ok());
  Status claims = CheckSelectableFields(*by_driver, "resource.k8s.io", "ResourceClaim");
  EXPECT_EQ(claims.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(claims.message(), "field label not supported: spec.driver");
  EXPECT_TRUE(
      CheckSelectableFields(*FieldSelector::Parse("metadata.name=x"), "", "ConfigMap").ok());

  boost::json::object decision =
      boost::json::parse(
          R"({"metadata":{"name":"d"},"spec":{"pod":{"name":"llm-3","uid":"u"},"outcome":"Allocated"}})")
          .as_object();
  FieldSet decided = SelectableFields("draplane.dev", "AllocationDecision", decision);
  EXPECT_EQ(decided["spec.pod.name"], "llm-3");
  EXPECT_EQ(decided["spec.pod.uid"], "u");
  EXPECT_EQ(decided["spec.outcome"], "Allocated");
  EXPECT_EQ(decided["spec.nodeName"], "");
  EXPECT_TRUE(CheckSelectableFields(*FieldSelector::Parse("spec.pod.name=llm-3"), "draplane.dev",
                                    "AllocationDecision")
                  .ok());
}

}  // namespace
}  // namespace draplane::api::labels
