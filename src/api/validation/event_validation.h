// Validation of Events with upstream's rules, field paths and wording
// (pkg/apis/core/validation/events.go). core/v1 and events.k8s.io/v1 Events are one object
// (api/events.h): both are validated as the core/v1 Event, so the paths name core/v1's fields
// (`involvedObject.namespace`, `reportingController`, `firstTimestamp` ...) whichever API the
// request came through, as upstream validates its internal Event. Metadata is validated by the
// caller (the server's generic strategy).
//
// Every Event passes the legacy rules: its namespace a DNS subdomain; without an eventTime (a
// legacy Event) the namespace that of the involved object ("" or "default" for a cluster-scoped
// one); with an eventTime (an events.k8s.io-style Event) a reporting controller that is a
// qualified name, a reporting instance and an action of at most 128 characters, a reason of at
// most 128 and a message of at most 1024. A create or update through events.k8s.io/v1 is held to
// the strict rules too: an eventTime, type Normal or Warning, none of the legacy fields
// (`firstTimestamp`, `lastTimestamp`, `count`, `source`), a series of count 2 or more with a
// lastObservedTime, and on update every field but the series and metadata unchanged.
//
// Thread-safety: pure functions.
#pragma once

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"

namespace draplane::api::validation {

// `events_v1` is true for a request through events.k8s.io/v1.
FieldErrorList ValidateEventCreate(const corev1::Event& event, bool events_v1);
FieldErrorList ValidateEventUpdate(const corev1::Event& event, const corev1::Event& old,
                                   bool events_v1);

}  // namespace draplane::api::validation
