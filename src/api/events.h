// One Event, two APIs: core/v1 Event and events.k8s.io/v1 Event are the same object, stored once
// (in core/v1's form, as kube-apiserver stores its internal Event) and converted field by field
// on the way in and out, as upstream's pkg/apis/events/v1/conversion.go does:
//
//   events.k8s.io/v1            core/v1
//   regarding                   involvedObject
//   note                        message
//   reportingController         reportingComponent
//   deprecatedSource            source
//   deprecatedFirstTimestamp    firstTimestamp
//   deprecatedLastTimestamp     lastTimestamp
//   deprecatedCount             count
//
// The other fields (metadata, eventTime, series, action, reason, related, reportingInstance,
// type) have the same name in both. An Event written through either API is therefore read
// through the other: `kubectl describe` (core/v1) shows what an events.k8s.io writer recorded.
//
// Field selectors follow the same mapping (upstream's AddFieldLabelConversionsForEvent):
// events.k8s.io/v1 selects on regarding.*, reportingController, source (the deprecated source's
// component), reason, type and the metadata fields, see api/labels/field_selector.h.
//
// Thread-safety: pure functions on values the caller owns.
#pragma once

#include <boost/json/object.hpp>

namespace draplane::api {

// Rewrites an events.k8s.io/v1 Event (JSON) as the same core/v1 Event: renamed fields, and
// apiVersion "v1". Fields of neither form are kept as they are.
void EventsV1ToCoreEvent(boost::json::object& event);

// The reverse: a core/v1 Event (JSON) as the same events.k8s.io/v1 Event.
void CoreEventToEventsV1(boost::json::object& event);

}  // namespace draplane::api
