// The strategies of Event in the core group (v1) and in events.k8s.io (v1): one object in two
// forms (api/events.h), validated alike as core/v1's Event (api/validation/event_validation.h),
// with the same printer columns (strategy.h).
#include <algorithm>
#include <string>
#include <vector>

#include "api/events.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/events_v1_codec.h"
#include "api/validation/event_validation.h"
#include "api/validation/names.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

namespace validation = api::validation;

std::vector<TableColumn> EventColumns() {
  return {{"Last Seen", "string", "",
           "The time at which the most recent occurrence of this event "
           "was recorded.",
           0},
          {"Type", "string", "",
           "Type of this event (Normal, Warning), new types could be added "
           "in the future",
           0},
          {"Reason", "string", "",
           "This should be a short, machine understandable string that "
           "gives the reason for the transition into the object's current status.",
           0},
          {"Object", "string", "", "The object that this event is about.", 0},
          {"Subobject", "string", "", "The field of the object this event is about.", 1},
          {"Source", "string", "", "The component reporting this event.", 1},
          {"Message", "string", "",
           "A human-readable description of the status of this "
           "operation.",
           0},
          {"First Seen", "string", "", "The time at which the event was first recorded.", 1},
          {"Count", "string", "", "The number of times this event has occurred.", 1},
          {"Name", "string", "name", "Name must be unique within a namespace.", 1}};
}

// The generic metadata checks and a decode in the request's form `T`, then upstream's Event
// validation of the object as core/v1's Event; `kEventsV1` for events.k8s.io's stricter rules.
template <typename T, bool kEventsV1>
class EventStrategy : public GenericStrategyOf<T> {
 public:
  EventStrategy() : GenericStrategyOf<T>(true, validation::NameIsDNSSubdomain, false) {}

  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategyOf<T>::Check(obj);
    if (!r.decode_errors.empty()) return r;
    Append(r.errors, validation::ValidateEventCreate(AsCoreEvent(obj), kEventsV1));
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = GenericStrategyOf<T>::CheckUpdate(obj, old);
    if (!r.decode_errors.empty()) return r;
    Append(r.errors,
           validation::ValidateEventUpdate(AsCoreEvent(obj), AsCoreEvent(old), kEventsV1));
    return r;
  }

 private:
  // Decoded in the request's form already; the core form of a valid object decodes as well.
  static api::corev1::Event AsCoreEvent(const JsonObject& obj) {
    api::FieldErrorList ignored;
    if constexpr (!kEventsV1) {
      return DecodeAs<api::corev1::Event>(obj, &ignored);
    } else {
      JsonObject core = obj;
      api::EventsV1ToCoreEvent(core);
      return DecodeAs<api::corev1::Event>(core, &ignored);
    }
  }
};

class CoreEventStrategyImpl final : public EventStrategy<api::corev1::Event, false> {
 public:
  std::vector<TableColumn> TableColumns() const override { return EventColumns(); }
  // printers.go printEvent: an events.k8s.io-style Event (the scheduler's) has eventTime and a
  // series instead of the legacy timestamps and count.
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string_view first = GetString(obj, "firstTimestamp");
    if (first.empty()) first = GetString(obj, "eventTime");
    std::string_view last = GetString(obj, "lastTimestamp");
    if (last.empty()) last = first;
    const JsonObject* series = FindObject(obj, "series");
    const JsonObject empty;
    const JsonObject* involved = FindObject(obj, "involvedObject");
    if (involved == nullptr) involved = &empty;
    std::string kind(GetString(*involved, "kind"));
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    std::string source(GetPathString(obj, {"source", "component"}));
    std::string host(GetPathString(obj, {"source", "host"}));
    if (!host.empty()) source += ", " + host;
    if (source.empty()) source = std::string(GetString(obj, "reportingComponent"));
    int64_t count = 0;
    if (auto it = obj.find("count"); it != obj.end() && it->value().is_int64()) {
      count = it->value().get_int64();
    }
    if (series != nullptr) {
      last = GetString(*series, "lastObservedTime");
      if (auto it = series->find("count"); it != series->end() && it->value().is_int64()) {
        count = it->value().get_int64();
      }
    } else if (count == 0) {
      count = 1;
    }
    return {SinceCell(last, now),
            GetString(obj, "type"),
            GetString(obj, "reason"),
            kind + "/" + std::string(GetString(*involved, "name")),
            GetString(*involved, "fieldPath"),
            source,
            GetString(obj, "message"),
            SinceCell(first, now),
            std::to_string(count),
            MetaString(obj, "name")};
  }
};

class EventsV1EventStrategyImpl final : public EventStrategy<api::eventsv1::Event, true> {
 public:
  std::vector<TableColumn> TableColumns() const override { return EventColumns(); }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string_view last = GetString(obj, "deprecatedLastTimestamp");
    if (last.empty()) last = GetString(obj, "eventTime");
    std::string_view first = GetString(obj, "deprecatedFirstTimestamp");
    if (first.empty()) first = GetString(obj, "eventTime");
    const JsonObject empty;
    const JsonObject* regarding = FindObject(obj, "regarding");
    if (regarding == nullptr) regarding = &empty;
    std::string kind(GetString(*regarding, "kind"));
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    int64_t count = 1;
    if (auto it = obj.find("deprecatedCount"); it != obj.end() && it->value().is_int64()) {
      count = it->value().get_int64();
    }
    return {SinceCell(last, now),
            GetString(obj, "type"),
            GetString(obj, "reason"),
            kind + "/" + std::string(GetString(*regarding, "name")),
            GetString(*regarding, "fieldPath"),
            GetString(obj, "reportingController"),
            GetString(obj, "note"),
            SinceCell(first, now),
            std::to_string(count),
            MetaString(obj, "name")};
  }
};

}  // namespace

const Strategy& CoreEventStrategy() { return StrategyInstance<CoreEventStrategyImpl>(); }
const Strategy& EventsV1EventStrategy() { return StrategyInstance<EventsV1EventStrategyImpl>(); }

}  // namespace draplane::server::handlers
