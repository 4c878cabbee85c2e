#include "client/events.h"

#include <gtest/gtest.h>

#include "client/typed.h"
#include "testing/test_api.h"

namespace draplane::client {
namespace {

using api::corev1::Event;
using api::corev1::Pod;

class EventsTest : public ::testing::Test {
 protected:
  EventsTest() : api_({.clock = &clock_, .namespaces = {"ns"}}) {
    pod_.metadata.name = "p";
    pod_.metadata.namespace_ = "ns";
    pod_.metadata.uid = "uid-1";
  }
  std::vector<Event> Events() {
    StatusOr<ObjectList<Event>> list = List<Event>(api_, "ns");
    EXPECT_TRUE(list.ok());
    return list.ok() ? list->items : std::vector<Event>{};
  }

  ManualClock clock_;
  draplane::testing::TestApi api_;
  Pod pod_;
};

TEST_F(EventsTest, RepeatsAreCorrelatedIntoOneEventWithACount) {
  EventRecorder recorder(api_, clock_, {.component = "default-scheduler", .synchronous = true});
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", "0/3 nodes are available");
  clock_.Advance(std::chrono::seconds(5));
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", "0/3 nodes are available");
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", "0/4 nodes are available");
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 2u);
  const Event& repeated = events[0].message == "0/3 nodes are available" ? events[0] : events[1];
  EXPECT_EQ(repeated.count, 2);
  EXPECT_EQ(repeated.involved_object.uid, "uid-1");
  EXPECT_EQ(repeated.involved_object.kind, "Pod");
  EXPECT_EQ(repeated.source.component, "default-scheduler");
  EXPECT_EQ(repeated.type, "Warning");
  EXPECT_LT(repeated.first_timestamp, repeated.last_timestamp);
}

// client-go's EventAggregator: a retried claim creation names a new generated claim each time,
// so its messages differ; from the tenth distinct one within ten minutes they go to one Event.
TEST_F(EventsTest, SimilarEventsAreAggregatedFromTheTenthDistinctMessage) {
  EventRecorder recorder(api_, clock_, {.component = "c", .synchronous = true});
  for (int i = 1; i <= 12; ++i) {
    recorder.Record(ReferenceTo(pod_), "Warning", "FailedResourceClaimCreation",
                    "claim p-gpu-" + std::to_string(i) + " is forbidden: exceeded quota");
    clock_.Advance(std::chrono::seconds(1));
  }
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 10u) << "nine as they came, then one for the rest";
  int aggregates = 0;
  for (const Event& e : events) {
    if (e.message.rfind("(combined from similar events): ", 0) != 0) continue;
    ++aggregates;
    EXPECT_EQ(e.message,
              "(combined from similar events): claim p-gpu-12 is forbidden: exceeded quota");
    EXPECT_EQ(e.count, 3);
  }
  EXPECT_EQ(aggregates, 1);
  // Another reason, or ten quiet minutes, starts afresh.
  clock_.Advance(std::chrono::minutes(11));
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedResourceClaimCreation", "another");
  EXPECT_EQ(Events().size(), 11u);
}

TEST_F(EventsTest, AnExpiredEventIsRecreated) {
  EventRecorder recorder(api_, clock_, {.component = "c", .synchronous = true});
  recorder.Record(ReferenceTo(pod_), "Normal", "Scheduled", "assigned");
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(Delete<Event>(api_, "ns", events[0].metadata.name).ok());
  recorder.Record(ReferenceTo(pod_), "Normal", "Scheduled", "assigned");
  events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count, 1);
}

TEST_F(EventsTest, TheWorkerWritesQueuedEventsAndLongMessagesAreCut) {
  EventRecorder recorder(api_, clock_, {.component = "c"});
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", std::string(5000, 'x'));
  recorder.Flush();
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message.size(), 1024u);
  EXPECT_TRUE(events[0].message.ends_with("x ...")) << "marked as cut, as kube-scheduler does";
  recorder.Stop();
  recorder.Record(ReferenceTo(pod_), "Warning", "X", "after stop");
  EXPECT_EQ(recorder.dropped(), 1);
}

// Series mode (client-go tools/events, kube-scheduler's recorder) on a manual clock.
class SeriesEventsTest : public EventsTest {
 protected:
  EventRecorderOptions Options(bool synchronous = true) {
    return {.component = "default-scheduler",
            .host = "default-scheduler-host",
            .synchronous = synchronous,
            .series = true};
  }
  void Fail(EventRecorder& recorder, std::string message = "0/3 nodes are available") {
    recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", std::move(message),
                    "Scheduling");
  }
  Event Only() {
    std::vector<Event> events = Events();
    EXPECT_EQ(events.size(), 1u);
    return events.empty() ? Event{} : events[0];
  }
};

TEST_F(SeriesEventsTest, TheSecondOccurrenceStartsTheSeriesAndLaterOnesOnlyCount) {
  EventRecorder recorder(api_, clock_, Options());
  Fail(recorder);
  Event first = Only();
  EXPECT_EQ(first.action, "Scheduling");
  EXPECT_EQ(first.reporting_component, "default-scheduler");
  EXPECT_EQ(first.reporting_instance, "default-scheduler-host");
  EXPECT_EQ(first.event_time, api::Time::MicroFromTimestamp(clock_.Now()));
  EXPECT_FALSE(first.series.has_value());
  // As the API server stores an events.k8s.io Event: no legacy count, timestamps or source.
  EXPECT_EQ(first.count, 0);
  EXPECT_TRUE(first.first_timestamp.empty());
  EXPECT_TRUE(first.source.component.empty());

  clock_.Advance(std::chrono::seconds(5));
  // The message is no part of a series' identity: the first one stays.
  Fail(recorder, "0/4 nodes are available");
  Event second = Only();
  ASSERT_TRUE(second.series.has_value());
  EXPECT_EQ(second.series->count, 2);
  EXPECT_EQ(second.series->last_observed_time, api::Time::MicroFromTimestamp(clock_.Now()));
  EXPECT_EQ(second.message, "0/3 nodes are available");

  int64_t writes = api_.resource_version();
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(std::chrono::seconds(10));
    Fail(recorder);
    recorder.Tick();
  }
  EXPECT_EQ(api_.resource_version(), writes) << "repeats within the series only count";
  EXPECT_EQ(Only().series->count, 2);
}

TEST_F(SeriesEventsTest, AnotherVersionOfTheObjectOrAnotherActionIsAnotherEvent) {
  EventRecorder recorder(api_, clock_, Options());
  Fail(recorder);
  pod_.metadata.resource_version = "42";
  Fail(recorder);
  recorder.Record(ReferenceTo(pod_), "Warning", "FailedScheduling", "0/3 nodes are available",
                  "Binding");
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 3u);
  for (const Event& e : events) EXPECT_FALSE(e.series.has_value());
}

TEST_F(SeriesEventsTest, OpenSeriesAreWrittenEveryThirtyMinutes) {
  EventRecorder recorder(api_, clock_, Options());
  Fail(recorder);
  Fail(recorder);
  // One failure a minute: never quiet for six minutes, so only the refresh writes the count.
  for (int minute = 1; minute < 30; ++minute) {
    clock_.Advance(std::chrono::minutes(1));
    Fail(recorder);
    recorder.Tick();
  }
  EXPECT_EQ(Only().series->count, 2);
  clock_.Advance(std::chrono::minutes(1));
  Timestamp observed = clock_.Now();
  Fail(recorder);
  recorder.Tick();
  Event refreshed = Only();
  EXPECT_EQ(refreshed.series->count, 32);
  EXPECT_EQ(refreshed.series->last_observed_time, api::Time::MicroFromTimestamp(observed));
}

TEST_F(SeriesEventsTest, AQuietSeriesIsWrittenAndForgottenAfterSixMinutes) {
  EventRecorder recorder(api_, clock_, Options());
  for (int i = 0; i < 3; ++i) Fail(recorder);
  clock_.Advance(std::chrono::minutes(6));
  recorder.Tick();  // quiet for exactly six minutes: not yet over
  EXPECT_EQ(Only().series->count, 2);
  clock_.Advance(std::chrono::minutes(6));
  recorder.Tick();
  EXPECT_EQ(Only().series->count, 3);
  // Forgotten: the next occurrence is a new Event.
  Fail(recorder);
  EXPECT_EQ(Events().size(), 2u);
}

TEST_F(SeriesEventsTest, ASingletonIsForgottenAfterSixMinutes) {
  EventRecorder recorder(api_, clock_, Options());
  Fail(recorder);
  clock_.Advance(std::chrono::minutes(12));
  recorder.Tick();
  int64_t writes = api_.resource_version();
  Fail(recorder);
  EXPECT_EQ(api_.resource_version(), writes + 1);
  std::vector<Event> events = Events();
  ASSERT_EQ(events.size(), 2u);
  for (const Event& e : events) EXPECT_FALSE(e.series.has_value());
}

TEST_F(SeriesEventsTest, AnExpiredSeriesIsCreatedAgainWithItsCount) {
  EventRecorder recorder(api_, clock_, Options());
  for (int i = 0; i < 4; ++i) Fail(recorder);
  Event first = Only();
  ASSERT_TRUE(Delete<Event>(api_, "ns", first.metadata.name).ok());
  clock_.Advance(std::chrono::minutes(7));
  recorder.Tick();
  Event again = Only();
  EXPECT_EQ(again.metadata.name, first.metadata.name);
  ASSERT_TRUE(again.series.has_value());
  EXPECT_EQ(again.series->count, 4);
  EXPECT_EQ(again.event_time, first.event_time);
  EXPECT_EQ(again.message, first.message);
}

TEST_F(SeriesEventsTest, TheWorkerRunsTheTimersATickAsksFor) {
  EventRecorder recorder(api_, clock_, Options(/*synchronous=*/false));
  for (int i = 0; i < 5; ++i) Fail(recorder);
  recorder.Flush();
  EXPECT_EQ(Only().series->count, 2);
  clock_.Advance(std::chrono::minutes(7));
  recorder.Tick();
  recorder.Flush();
  EXPECT_EQ(Only().series->count, 5);
}

}  // namespace
}  // namespace draplane::client
