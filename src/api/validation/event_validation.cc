#include "api/validation/event_validation.h"

#include <string>

#include "api/validation/internal/common.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using internal::Append;

constexpr size_t kReportingInstanceLengthLimit = 128;
constexpr size_t kActionLengthLimit = 128;
constexpr size_t kReasonLengthLimit = 128;
constexpr size_t kNoteLengthLimit = 1024;

// Upstream reports these with an empty value and the limit in the detail.
void CheckLength(FieldErrorList& errs, std::string_view field, std::string_view value,
                 size_t limit) {
  if (value.size() > limit) {
    errs.push_back(Invalid(FieldPath(std::string(field)), RenderValue(""),
                           "can have at most " + std::to_string(limit) + " characters"));
  }
}

void CheckRequired(FieldErrorList& errs, std::string_view field, std::string_view value) {
  if (value.empty()) errs.push_back(Required(FieldPath(std::string(field))));
}

FieldErrorList LegacyValidateEvent(const corev1::Event& event) {
  FieldErrorList errs;
  const std::string& ns = event.metadata.namespace_;
  const std::string& involved_ns = event.involved_object.namespace_;
  auto mismatch = [&] {
    errs.push_back(Invalid(FieldPath("involvedObject").Child("namespace"), RenderValue(involved_ns),
                           "does not match event.namespace"));
  };
  if (event.event_time.empty()) {
    // A legacy Event: its namespace is the involved object's ("" or "default" for a
    // cluster-scoped one, for old clients).
    if (involved_ns.empty() ? !ns.empty() && ns != "default" : ns != involved_ns) mismatch();
  } else {
    if (involved_ns.empty() && ns != "default" && ns != "kube-system") mismatch();
    CheckRequired(errs, "reportingController", event.reporting_component);
    for (const std::string& msg : IsQualifiedName(event.reporting_component)) {
      errs.push_back(
          Invalid(FieldPath("reportingController"), RenderValue(event.reporting_component), msg));
    }
    CheckRequired(errs, "reportingInstance", event.reporting_instance);
    CheckLength(errs, "reportingInstance", event.reporting_instance, kReportingInstanceLengthLimit);
    CheckRequired(errs, "action", event.action);
    CheckLength(errs, "action", event.action, kActionLengthLimit);
    CheckRequired(errs, "reason", event.reason);
    CheckLength(errs, "reason", event.reason, kReasonLengthLimit);
    CheckLength(errs, "message", event.message, kNoteLengthLimit);
  }
  for (const std::string& msg : IsDNS1123Subdomain(ns)) {
    errs.push_back(Invalid(FieldPath("namespace"), RenderValue(ns), msg));
  }
  return errs;
}

FieldErrorList ValidateSeries(const corev1::Event& event) {
  FieldErrorList errs;
  if (!event.series) return errs;
  if (event.series->count < 2) {
    errs.push_back(Invalid(FieldPath("series.count"), RenderValue(""), "should be at least 2"));
  }
  if (event.series->last_observed_time.empty()) {
    errs.push_back(Required(FieldPath("series.lastObservedTime")));
  }
  return errs;
}

template <typename T>
void CheckImmutable(FieldErrorList& errs, std::string_view field, const T& now, const T& old,
                    std::string rendered) {
  if (!(now == old)) {
    errs.push_back(
        Invalid(FieldPath(std::string(field)), std::move(rendered), "field is immutable"));
  }
}

}  // namespace

FieldErrorList ValidateEventCreate(const corev1::Event& event, bool events_v1) {
  FieldErrorList errs = LegacyValidateEvent(event);
  if (!events_v1) return errs;  // core/v1: the legacy rules only, for old clients
  Append(errs, ValidateSeries(event));
  if (event.event_time.empty()) errs.push_back(Required(FieldPath("eventTime")));
  if (event.type != corev1::kEventTypeNormal && event.type != corev1::kEventTypeWarning) {
    errs.push_back(Invalid(FieldPath("type"), RenderValue(""), "has invalid value: " + event.type));
  }
  auto unset = [&](std::string_view field, bool set) {
    if (set)
      errs.push_back(Invalid(FieldPath(std::string(field)), RenderValue(""), "needs to be unset"));
  };
  unset("firstTimestamp", !event.first_timestamp.empty());
  unset("lastTimestamp", !event.last_timestamp.empty());
  unset("count", event.count != 0);
  unset("source", !event.source.component.empty() || !event.source.host.empty());
  return errs;
}

FieldErrorList ValidateEventUpdate(const corev1::Event& event, const corev1::Event& old,
                                   bool events_v1) {
  FieldErrorList errs = LegacyValidateEvent(event);
  if (!events_v1) return errs;
  if (!(event.series == old.series)) Append(errs, ValidateSeries(event));
  CheckImmutable(errs, "involvedObject", event.involved_object, old.involved_object, "null");
  CheckImmutable(errs, "reason", event.reason, old.reason, RenderValue(event.reason));
  CheckImmutable(errs, "message", event.message, old.message, RenderValue(event.message));
  CheckImmutable(errs, "source", event.source, old.source, "null");
  CheckImmutable(errs, "firstTimestamp", event.first_timestamp, old.first_timestamp,
                 RenderValue(event.first_timestamp.text()));
  CheckImmutable(errs, "lastTimestamp", event.last_timestamp, old.last_timestamp,
                 RenderValue(event.last_timestamp.text()));
  CheckImmutable(errs, "count", event.count, old.count, RenderValue(int64_t{event.count}));
  CheckImmutable(errs, "type", event.type, old.type, RenderValue(event.type));
  CheckImmutable(errs, "eventTime", event.event_time, old.event_time,
                 RenderValue(event.event_time.text()));
  CheckImmutable(errs, "action", event.action, old.action, RenderValue(event.action));
  CheckImmutable(errs, "related", event.related, old.related, "null");
  CheckImmutable(errs, "reportingController", event.reporting_component, old.reporting_component,
                 RenderValue(event.reporting_component));
  CheckImmutable(errs, "reportingInstance", event.reporting_instance, old.reporting_instance,
                 RenderValue(event.reporting_instance));
  return errs;
}

}  // namespace draplane::api::validation
