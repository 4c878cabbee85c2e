#include "api/labels/field_selector.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/events.h"

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

// One Event, selected through either API by the same values under each API's field names
// (api/events.h).
TEST(SelectableFieldsTest, AnEventSelectsAlikeThroughBothEventApis) {
  boost::json::object core = boost::json::parse(R"({
      "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
      "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u1",
                         "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec"},
      "reason": "FailedScheduling", "type": "Warning", "message": "0/3 nodes",
      "reportingComponent": "default-scheduler", "source": {"component": "kubelet"}})")
                                 .as_object();
  boost::json::object events_v1 = core;
  CoreEventToEventsV1(events_v1);
  FieldSet by_core = SelectableFields("", "Event", core);
  FieldSet by_events_v1 = SelectableFields("events.k8s.io", "Event", events_v1);
  for (std::string_view f :
       {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}) {
    EXPECT_EQ(by_events_v1["regarding." + std::string(f)],
              by_core["involvedObject." + std::string(f)])
        << f;
  }
  EXPECT_EQ(by_events_v1["regarding.name"], "p");
  EXPECT_EQ(by_events_v1["reportingController"], "default-scheduler");
  EXPECT_EQ(by_events_v1["source"], "kubelet");
  EXPECT_EQ(by_events_v1["reason"], "FailedScheduling");
  EXPECT_EQ(by_events_v1["type"], "Warning");
  EXPECT_EQ(by_events_v1["metadata.name"], "e");

  EXPECT_TRUE(CheckSelectableFields(*FieldSelector::Parse("regarding.name=p,reportingController=x"),
                                    "events.k8s.io", "Event")
                  .ok());
  Status legacy_name = CheckSelectableFields(*FieldSelector::Parse("involvedObject.name=p"),
                                             "events.k8s.io", "Event");
  EXPECT_EQ(legacy_name.message(), "field label not supported: involvedObject.name");
  Status new_name = CheckSelectableFields(*FieldSelector::Parse("regarding.name=p"), "", "Event");
  EXPECT_EQ(new_name.message(), "field label not supported: regarding.name");
}

// The conversion keeps everything and renames only the fields the two forms name differently.
TEST(EventConversionTest, RoundTripsBetweenTheTwoForms) {
  boost::json::object events_v1 = boost::json::parse(R"({
      "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
      "eventTime": "2026-12-06T10:00:00.000000Z", "series": {"count": 2,
      "lastObservedTime": "2026-12-06T10:05:00.000000Z"}, "reportingController": "c",
      "reportingInstance": "c-1", "action": "Binding", "reason": "Scheduled",
      "regarding": {"kind": "Pod", "name": "p"}, "related": {"kind": "Node", "name": "n"},
      "note": "bound", "type": "Normal", "deprecatedSource": {"component": "old"},
      "deprecatedFirstTimestamp": "2026-12-06T09:00:00Z",
      "deprecatedLastTimestamp": "2026-12-06T09:30:00Z", "deprecatedCount": 4})")
                                      .as_object();
  boost::json::object core = events_v1;
  EventsV1ToCoreEvent(core);
  EXPECT_EQ(core, boost::json::parse(R"({
      "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
      "eventTime": "2026-12-06T10:00:00.000000Z", "series": {"count": 2,
      "lastObservedTime": "2026-12-06T10:05:00.000000Z"}, "reportingInstance": "c-1",
      "action": "Binding", "reason": "Scheduled", "related": {"kind": "Node", "name": "n"},
      "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p"}, "message": "bound",
      "reportingComponent": "c", "source": {"component": "old"},
      "firstTimestamp": "2026-12-06T09:00:00Z", "lastTimestamp": "2026-12-06T09:30:00Z",
      "count": 4})")
                      .as_object());
  boost::json::object back = core;
  CoreEventToEventsV1(back);
  EXPECT_EQ(back, events_v1);
}

}  // namespace
}  // namespace draplane::api::labels
