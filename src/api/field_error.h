// Field errors in the shape of Kubernetes' `field.Error`
// (k8s.io/apimachinery/pkg/util/validation/field).
//
// Decoding and validation report problems as a list of FieldErrors, each naming the field path
// (`spec.devices.requests[0].name`), the error type and a detail, and render them exactly as the
// Kubernetes API server does: `spec.devices.requests[0].exactly.count: Invalid value: 0: must be
// greater than zero`. A validation failure is a value (a FieldErrorList), not a Status; callers
// that must fail convert the list with ToInvalidStatus().
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace draplane::api {

enum class FieldErrorType {
  kNotFound,      // "Not found"
  kRequired,      // "Required value"
  kDuplicate,     // "Duplicate value"
  kInvalid,       // "Invalid value"
  kNotSupported,  // "Unsupported value"
  kForbidden,     // "Forbidden"
  kTooLong,       // "Too long"
  kTooMany,       // "Too many"
  kInternal,      // "Internal error"
  kTypeInvalid,   // "Invalid value" (the value has the wrong JSON type)
};

// The text Kubernetes prints for a type, e.g. "Required value".
std::string_view FieldErrorTypeText(FieldErrorType type);
// The `metav1.CauseType` string for a type, e.g. "FieldValueRequired".
std::string_view FieldErrorCauseType(FieldErrorType type);

// A path to a field, built as in Go: Path("spec").Child("devices").Index(0).Key("gpu").
// Renders as `spec.devices[0][gpu]`.
class FieldPath {
 public:
  FieldPath() = default;
  explicit FieldPath(std::string_view root) : text_(root) {}
  FieldPath Child(std::string_view name) const;
  FieldPath Index(int64_t index) const;
  FieldPath Key(std::string_view key) const;
  const std::string& String() const { return text_; }
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
};

struct FieldError {
  FieldErrorType type = FieldErrorType::kInvalid;
  std::string field;
  // The offending value already rendered as Kubernetes prints it (`0`, `"abc"`, `true`), or
  // empty when the type prints no value (Required, Forbidden, TooLong, Internal) or the value is
  // omitted.
  std::string bad_value;
  std::string detail;

  // "field: Type: value: detail", with the value and detail parts left out when empty, as
  // `field.Error.Error()` does.
  std::string ToString() const;
  // The same without the leading "field: ".
  std::string Body() const;

  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrorList = std::vector<FieldError>;

// Renders a value the way field errors print it.
std::string RenderValue(std::string_view string_value);  // "abc" with quotes and escapes
std::string RenderValue(int64_t value);                  // 12
std::string RenderBool(bool value);                      // true

// Constructors mirroring field.Required, field.Invalid, ... Values are pre-rendered.
FieldError Required(const FieldPath& path, std::string detail = "");
FieldError Invalid(const FieldPath& path, std::string rendered_value, std::string detail);
FieldError NotSupported(const FieldPath& path, std::string rendered_value,
                        const std::vector<std::string>& valid_values);
FieldError Duplicate(const FieldPath& path, std::string rendered_value);
FieldError Forbidden(const FieldPath& path, std::string detail);
FieldError TooLong(const FieldPath& path, int64_t max_length);
FieldError TooMany(const FieldPath& path, int64_t actual, int64_t max);
FieldError NotFound(const FieldPath& path, std::string rendered_value);
FieldError TypeInvalid(const FieldPath& path, std::string rendered_value, std::string detail);
FieldError InternalFieldError(const FieldPath& path, std::string detail);

// An InvalidArgument Status for `kind "name"`, worded as the API server's 422 message
// (`ResourceClaim.resource.k8s.io "c" is invalid: [a: Required value, b: ...]`), with one cause
// per error. `qualified_kind` is e.g. "ResourceClaim.resource.k8s.io".
Status ToInvalidStatus(std::string_view qualified_kind, std::string_view name,
                       const FieldErrorList& errors);

}  // namespace draplane::api
