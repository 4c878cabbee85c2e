// The defaults of every strategy (strategy.h) and what the strategies of the API groups share
// (strategies_internal.h).
#include "server/handlers/strategy.h"

#include <optional>
#include <utility>
#include <vector>

#include "api/gen/meta_v1_codec.h"
#include "api/meta/codec_support.h"
#include "api/validation/meta_validation.h"
#include "common/saturating.h"
#include "server/handlers/strategies_internal.h"

namespace draplane::server::handlers {
namespace {

// Create-only review kinds (authentication.k8s.io, authorization.k8s.io); handled by
// handlers/reviews.cc, never stored.
class ReviewStrategyImpl final : public Strategy {};

}  // namespace

using api::FieldErrorList;
using api::FieldPath;
namespace validation = api::validation;

api::metav1::ObjectMeta DecodeMeta(const JsonObject& obj, FieldErrorList* decode_errors) {
  api::metav1::ObjectMeta meta;
  if (auto m = obj.find("metadata");
      m != obj.end() && !m->value().is_object() && !m->value().is_null()) {
    decode_errors->push_back(api::FieldError{
        api::FieldErrorType::kTypeInvalid, "metadata", api::internal::RenderJsonValue(m->value()),
        "expected object, got " + std::string(api::internal::JsonTypeName(m->value()))});
  } else if (m != obj.end() && m->value().is_object()) {
    FieldErrorList errors;
    Decode(m->value(), &meta, &errors);
    for (api::FieldError& e : errors) {
      e.field = e.field.empty() ? "metadata" : "metadata." + e.field;
      decode_errors->push_back(std::move(e));
    }
  }
  return meta;
}

void KeepAllButStatus(JsonObject& obj, const JsonObject& old) {
  JsonObject result;
  if (auto status = obj.find("status"); status != obj.end()) {
    // `old` with its status replaced in place (appended when it has none), the new status moved
    // rather than copied and the old one not copied at all.
    result.reserve(old.size() + 1);
    bool replaced = false;
    for (const auto& member : old) {
      if (member.key() == "status") {
        result.emplace(member.key(), std::move(status->value()));
        replaced = true;
      } else {
        result.emplace(member.key(), member.value());
      }
    }
    if (!replaced) result.emplace("status", std::move(status->value()));
  } else {
    result = old;
    result.erase("status");
  }
  std::string_view rv = MetaString(obj, "resourceVersion");
  JsonObject& meta = EnsureObject(result, "metadata");
  if (rv.empty()) {
    meta.erase("resourceVersion");
  } else {
    meta["resourceVersion"] = rv;
  }
  obj = std::move(result);
}

std::string SinceCell(std::string_view time, Timestamp now) {
  std::optional<Timestamp> t = ParseTime(time);
  if (!t) return "<unknown>";
  return HumanDuration(Between(*t, now));
}

// --- GenericStrategy -------------------------------------------------------------------------

CheckResult GenericStrategy::Check(JsonObject& obj) const {
  CheckResult result;
  api::metav1::ObjectMeta meta = DecodeMeta(obj, &result.decode_errors);
  if (!result.decode_errors.empty()) return result;
  result.errors = validation::ValidateObjectMeta(meta, namespaced_, names_, FieldPath("metadata"));
  return result;
}

CheckResult GenericStrategy::CheckUpdate(JsonObject& obj, const JsonObject& old) const {
  CheckResult result;
  api::metav1::ObjectMeta meta = DecodeMeta(obj, &result.decode_errors);
  FieldErrorList ignored;
  api::metav1::ObjectMeta old_meta = DecodeMeta(old, &ignored);
  if (!result.decode_errors.empty()) return result;
  result.errors = validation::ValidateObjectMetaUpdate(meta, old_meta, FieldPath("metadata"));
  Append(result.errors,
         validation::ValidateObjectMeta(meta, namespaced_, names_, FieldPath("metadata")));
  return result;
}

CheckResult GenericStrategy::CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const {
  return GenericStrategy::CheckUpdate(obj, old);
}

// --- Strategy defaults -----------------------------------------------------------------------

void Strategy::DefaultWithTime(JsonObject&, Timestamp) const {}

void Strategy::PrepareForUpdateWithTime(JsonObject&, const JsonObject&, Timestamp) const {}

void Strategy::PrepareForCreate(JsonObject& obj) const {
  if (has_status()) obj.erase("status");
}

void Strategy::PrepareForUpdate(JsonObject& obj, const JsonObject& old) const {
  if (!has_status()) return;
  if (auto it = old.find("status"); it != old.end()) {
    obj["status"] = it->value();
  } else {
    obj.erase("status");
  }
}

void Strategy::PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const {
  KeepAllButStatus(obj, old);
}

CheckResult Strategy::Check(JsonObject&) const { return {}; }
CheckResult Strategy::CheckUpdate(JsonObject& obj, const JsonObject&) const { return Check(obj); }
CheckResult Strategy::CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const {
  return CheckUpdate(obj, old);
}

std::vector<TableColumn> Strategy::TableColumns() const {
  return {NameColumn(),
          {"Created At", "date", "",
           "CreationTimestamp is a timestamp representing the server "
           "time when this object was created.",
           0}};
}

boost::json::array Strategy::TableCells(const JsonObject& obj, Timestamp) const {
  return {MetaString(obj, "name"), MetaString(obj, "creationTimestamp")};
}

TableColumn NameColumn() {
  return {"Name", "string", "name",
          "Name must be unique within a namespace. Is required when creating resources, although "
          "some resources may allow a client to request the generation of an appropriate name "
          "automatically. Name is primarily intended for creation idempotence and configuration "
          "definition. Cannot be updated. More info: "
          "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
          0};
}

TableColumn AgeColumn() {
  return {"Age", "string", "",
          "CreationTimestamp is a timestamp representing the server time when this object was "
          "created. It is not guaranteed to be set in happens-before order across separate "
          "operations. Clients may not set this value. It is represented in RFC3339 form and is "
          "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
          "https://git.k8s.io/community/contributors/devel/sig-architecture/"
          "api-conventions.md#metadata",
          0};
}

std::string AgeCell(const JsonObject& obj, Timestamp now) {
  return SinceCell(MetaString(obj, "creationTimestamp"), now);
}

const Strategy& ReviewStrategy() { return StrategyInstance<ReviewStrategyImpl>(); }

}  // namespace draplane::server::handlers
