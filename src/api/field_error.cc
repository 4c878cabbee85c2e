#include "api/field_error.h"

#include <cstdio>

namespace draplane::api {

std::string_view FieldErrorTypeText(FieldErrorType type) {
  switch (type) {
    case FieldErrorType::kNotFound:
      return "Not found";
    case FieldErrorType::kRequired:
      return "Required value";
    case FieldErrorType::kDuplicate:
      return "Duplicate value";
    case FieldErrorType::kInvalid:
      return "Invalid value";
    case FieldErrorType::kNotSupported:
      return "Unsupported value";
    case FieldErrorType::kForbidden:
      return "Forbidden";
    case FieldErrorType::kTooLong:
      return "Too long";
    case FieldErrorType::kTooMany:
      return "Too many";
    case FieldErrorType::kInternal:
      return "Internal error";
    case FieldErrorType::kTypeInvalid:
      return "Invalid value";
  }
  return "Invalid value";
}

std::string_view FieldErrorCauseType(FieldErrorType type) {
  switch (type) {
    case FieldErrorType::kNotFound:
      return "FieldValueNotFound";
    case FieldErrorType::kRequired:
      return "FieldValueRequired";
    case FieldErrorType::kDuplicate:
      return "FieldValueDuplicate";
    case FieldErrorType::kInvalid:
      return "FieldValueInvalid";
    case FieldErrorType::kNotSupported:
      return "FieldValueNotSupported";
    case FieldErrorType::kForbidden:
      return "FieldValueForbidden";
    case FieldErrorType::kTooLong:
      return "FieldValueTooLong";
    case FieldErrorType::kTooMany:
      return "FieldValueTooMany";
    case FieldErrorType::kInternal:
      return "InternalError";
    case FieldErrorType::kTypeInvalid:
      return "FieldValueTypeInvalid";
  }
  return "FieldValueInvalid";
}

FieldPath FieldPath::Child(std::string_view name) const {
  FieldPath out;
  out.text_.reserve(text_.size() + name.size() + 1);
  out.text_ = text_;
  if (!out.text_.empty()) out.text_ += '.';
  out.text_ += name;
  return out;
}

FieldPath FieldPath::Index(int64_t index) const {
  FieldPath out = *this;
  out.text_ += '[';
  out.text_ += std::to_string(index);
  out.text_ += ']';
  return out;
}

FieldPath FieldPath::Key(std::string_view key) const {
  FieldPath out = *this;
  out.text_ += '[';
  out.text_ += key;
  out.text_ += ']';
  return out;
}

std::string FieldError::Body() const {
  std::string out(FieldErrorTypeText(type));
  const bool prints_value = type != FieldErrorType::kRequired &&
                            type != FieldErrorType::kForbidden &&
                            type != FieldErrorType::kTooLong && type != FieldErrorType::kInternal;
  if (prints_value && !bad_value.empty()) {
    out += ": ";
    out += bad_value;
  }
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

std::string FieldError::ToString() const { return field + ": " + Body(); }

// Quotes like Go's strconv.Quote: printable ASCII as is, common escapes, other bytes as \x.. .
// Valid UTF-8 sequences above ASCII are kept (Go keeps printable runes).
std::string RenderValue(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out += '"';
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[5];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string RenderValue(int64_t value) { return std::to_string(value); }

std::string RenderBool(bool value) { return value ? "true" : "false"; }

FieldError Required(const FieldPath& path, std::string detail) {
  return {FieldErrorType::kRequired, path.String(), "", std::move(detail)};
}

FieldError Invalid(const FieldPath& path, std::string rendered_value, std::string detail) {
  return {FieldErrorType::kInvalid, path.String(), std::move(rendered_value), std::move(detail)};
}

FieldError NotSupported(const FieldPath& path, std::string rendered_value,
                        const std::vector<std::string>& valid_values) {
  std::string detail;
  if (!valid_values.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < valid_values.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += RenderValue(valid_values[i]);
    }
  }
  return {FieldErrorType::kNotSupported, path.String(), std::move(rendered_value),
          std::move(detail)};
}

FieldError Duplicate(const FieldPath& path, std::string rendered_value) {
  return {FieldErrorType::kDuplicate, path.String(), std::move(rendered_value), ""};
}

FieldError Forbidden(const FieldPath& path, std::string detail) {
  return {FieldErrorType::kForbidden, path.String(), "", std::move(detail)};
}

FieldError TooLong(const FieldPath& path, int64_t max_length) {
  return {FieldErrorType::kTooLong, path.String(), "",
          "may not be more than " + std::to_string(max_length) + " bytes"};
}

FieldError TooMany(const FieldPath& path, int64_t actual, int64_t max) {
  std::string detail =
      max >= 0 ? "must have at most " + std::to_string(max) + " items" : "has too many items";
  return {FieldErrorType::kTooMany, path.String(), actual >= 0 ? std::to_string(actual) : "",
          std::move(detail)};
}

FieldError NotFound(const FieldPath& path, std::string rendered_value) {
  return {FieldErrorType::kNotFound, path.String(), std::move(rendered_value), ""};
}

FieldError TypeInvalid(const FieldPath& path, std::string rendered_value, std::string detail) {
  return {FieldErrorType::kTypeInvalid, path.String(), std::move(rendered_value),
          std::move(detail)};
}

FieldError InternalFieldError(const FieldPath& path, std::string detail) {
  return {FieldErrorType::kInternal, path.String(), "", std::move(detail)};
}

Status ToInvalidStatus(std::string_view qualified_kind, std::string_view name,
                       const FieldErrorList& errors) {
  std::string message(qualified_kind);
  message += " \"";
  message += name;
  message += "\" is invalid: ";
  if (errors.size() == 1) {
    message += errors[0].ToString();
  } else {
    message += '[';
    for (size_t i = 0; i < errors.size(); ++i) {
      if (i > 0) message += ", ";
      message += errors[i].ToString();
    }
    message += ']';
  }
  std::vector<StatusCause> causes;
  causes.reserve(errors.size());
  for (const FieldError& e : errors) {
    causes.push_back({std::string(FieldErrorCauseType(e.type)), e.Body(), e.field});
  }
  return Status(StatusCode::kInvalidArgument, std::move(message), std::move(causes));
}

}  // namespace draplane::api
