#include "api/validation/event_validation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace draplane::api::validation {
namespace {

std::vector<std::string> Texts(const FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

// An Event as kube-scheduler records it through events.k8s.io/v1.
corev1::Event Recorded() {
  corev1::Event e;
  e.metadata.name = "p.1";
  e.metadata.namespace_ = "team-a";
  e.involved_object.kind = "Pod";
  e.involved_object.namespace_ = "team-a";
  e.involved_object.name = "p";
  e.event_time = *Time::Parse("2026-12-06T10:00:00.000000Z");
  e.reporting_component = "default-scheduler";
  e.reporting_instance = "default-scheduler-1";
  e.action = "Scheduling";
  e.reason = "FailedScheduling";
  e.type = "Warning";
  e.message = "0/3 nodes are available";
  return e;
}

TEST(EventValidationTest, ARecordedEventPassesThroughBothApis) {
  EXPECT_TRUE(ValidateEventCreate(Recorded(), /*events_v1=*/false).empty());
  EXPECT_TRUE(ValidateEventCreate(Recorded(), /*events_v1=*/true).empty());
}

TEST(EventValidationTest, LegacyEventsLiveInTheirObjectsNamespace) {
  corev1::Event legacy;
  legacy.metadata.namespace_ = "team-a";
  legacy.involved_object.namespace_ = "team-b";
  EXPECT_EQ(
      Texts(ValidateEventCreate(legacy, false)),
      std::vector<std::string>{
          R"(involvedObject.namespace: Invalid value: "team-b": does not match event.namespace)"});
  // A cluster-scoped object's: "" or default (old clients).
  legacy.involved_object.namespace_.clear();
  EXPECT_FALSE(ValidateEventCreate(legacy, false).empty());
  legacy.metadata.namespace_ = "default";
  EXPECT_TRUE(ValidateEventCreate(legacy, false).empty());
}

TEST(EventValidationTest, AnEventWithAnEventTimeNeedsItsReporterAndBoundedText) {
  corev1::Event e = Recorded();
  e.reporting_component.clear();
  e.reporting_instance = std::string(129, 'i');
  e.action.clear();
  e.reason = std::string(129, 'r');
  e.message = std::string(1025, 'm');
  e.involved_object.namespace_.clear();  // in team-a, neither default nor kube-system
  EXPECT_EQ(
      Texts(ValidateEventCreate(e, false)),
      (std::vector<std::string>{
          R"(involvedObject.namespace: Invalid value: "": does not match event.namespace)",
          "reportingController: Required value",
          R"(reportingController: Invalid value: "": name part must be non-empty)",
          R"(reportingController: Invalid value: "": name part must consist of alphanumeric )"
          R"(characters, '-', '_' or '.', and must start and end with an alphanumeric )"
          R"(character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for )"
          R"(validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))",
          R"(reportingInstance: Invalid value: "": can have at most 128 characters)",
          "action: Required value", R"(reason: Invalid value: "": can have at most 128 characters)",
          R"(message: Invalid value: "": can have at most 1024 characters)"}));
}

TEST(EventValidationTest, EventsV1CreatesAreStrict) {
  corev1::Event e = Recorded();
  e.event_time = Time();
  e.reporting_instance = "i";  // the legacy rules pass without an eventTime
  e.type = "Fine";
  e.count = 3;
  e.source.component = "kubelet";
  e.first_timestamp = *Time::Parse("2026-12-06T09:00:00Z");
  e.series.emplace();
  e.series->count = 1;
  EXPECT_TRUE(ValidateEventCreate(e, false).empty());
  EXPECT_EQ(Texts(ValidateEventCreate(e, true)),
            (std::vector<std::string>{R"(series.count: Invalid value: "": should be at least 2)",
                                      "series.lastObservedTime: Required value",
                                      "eventTime: Required value",
                                      R"(type: Invalid value: "": has invalid value: Fine)",
                                      R"(firstTimestamp: Invalid value: "": needs to be unset)",
                                      R"(count: Invalid value: "": needs to be unset)",
                                      R"(source: Invalid value: "": needs to be unset)"}));
}

TEST(EventValidationTest, EventsV1UpdatesChangeOnlyTheSeries) {
  corev1::Event old = Recorded();
  corev1::Event e = old;
  e.series.emplace();
  e.series->count = 2;
  e.series->last_observed_time = *Time::Parse("2026-12-06T10:05:00.000000Z");
  EXPECT_TRUE(ValidateEventUpdate(e, old, true).empty());
  e.message = "changed";
  e.action = "Binding";
  EXPECT_EQ(Texts(ValidateEventUpdate(e, old, true)),
            (std::vector<std::string>{R"(message: Invalid value: "changed": field is immutable)",
                                      R"(action: Invalid value: "Binding": field is immutable)"}));
  // Through core/v1 the legacy rules only: a recorder patches its Event's count and message.
  EXPECT_TRUE(ValidateEventUpdate(e, old, false).empty());
}

}  // namespace
}  // namespace draplane::api::validation
