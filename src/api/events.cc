#include "api/events.h"

#include <string_view>
#include <utility>

namespace draplane::api {
namespace {

struct Renamed {
  std::string_view events_v1;
  std::string_view core;
};

constexpr Renamed kRenamed[] = {
    {"regarding", "involvedObject"},
    {"note", "message"},
    {"reportingController", "reportingComponent"},
    {"deprecatedSource", "source"},
    {"deprecatedFirstTimestamp", "firstTimestamp"},
    {"deprecatedLastTimestamp", "lastTimestamp"},
    {"deprecatedCount", "count"},
};

void Rename(boost::json::object& event, std::string_view from, std::string_view to) {
  auto it = event.find(from);
  if (it == event.end()) {
    // A field of the other form that the source lacks is not carried over from a stale value.
    event.erase(to);
    return;
  }
  boost::json::value value = std::move(it->value());
  event.erase(it);
  event[to] = std::move(value);
}

}  // namespace

void EventsV1ToCoreEvent(boost::json::object& event) {
  for (const Renamed& r : kRenamed) Rename(event, r.events_v1, r.core);
  event["apiVersion"] = "v1";
}

void CoreEventToEventsV1(boost::json::object& event) {
  for (const Renamed& r : kRenamed) Rename(event, r.core, r.events_v1);
  event["apiVersion"] = "events.k8s.io/v1";
}

}  // namespace draplane::api
