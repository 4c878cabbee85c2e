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
  recorder.Stop();
  recorder.Record(ReferenceTo(pod_), "Warning", "X", "after stop");
  EXPECT_EQ(recorder.dropped(), 1);
}

}  // namespace
}  // namespace draplane::client
