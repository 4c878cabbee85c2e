#include "server/handlers/errors.h"

#include <boost/json.hpp>

namespace draplane::server::handlers {
namespace {

std::string Quoted(std::string_view s) {
  // Go's %q for the simple names Kubernetes allows; escapes quotes and backslashes.
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

ApiError Make(int code, std::string reason, std::string message) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

}  // namespace

std::string GroupResource::Qualified() const {
  return group.empty() ? resource : resource + "." + group;
}

// errors.NewNotFound
ApiError NewNotFound(const GroupResource& gr, std::string_view name) {
  ApiError e = Make(404, "NotFound", gr.Qualified() + " " + Quoted(name) + " not found");
  e.name = std::string(name);
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}

// errors.NewAlreadyExists
ApiError NewAlreadyExists(const GroupResource& gr, std::string_view name) {
  ApiError e = Make(409, "AlreadyExists", gr.Qualified() + " " + Quoted(name) + " already exists");
  e.name = std::string(name);
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}

// errors.NewConflict
ApiError NewConflict(const GroupResource& gr, std::string_view name, std::string_view detail) {
  ApiError e = Make(409, "Conflict",
                    "Operation cannot be fulfilled on " + gr.Qualified() + " " + Quoted(name) +
                        ": " + std::string(detail));
  e.name = std::string(name);
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}

// storage.errors OptimisticLockErrorMsg
ApiError NewModifiedConflict(const GroupResource& gr, std::string_view name) {
  return NewConflict(gr, name,
                     "the object has been modified; please apply your changes to the latest "
                     "version and try again");
}

// errors.NewInvalid
ApiError NewInvalid(std::string_view group_kind, std::string_view name,
                    const api::FieldErrorList& errors) {
  std::string message = std::string(group_kind) + " " + Quoted(name) + " is invalid";
  if (errors.size() == 1) {
    message += ": " + errors[0].ToString();
  } else if (!errors.empty()) {
    message += ": [";
    for (size_t i = 0; i < errors.size(); ++i) {
      if (i > 0) message += ", ";
      message += errors[i].ToString();
    }
    message += "]";
  }
  ApiError e = Make(422, "Invalid", std::move(message));
  e.name = std::string(name);
  size_t dot = group_kind.find('.');
  e.kind = std::string(group_kind.substr(0, dot));
  e.group = dot == std::string_view::npos ? "" : std::string(group_kind.substr(dot + 1));
  for (const api::FieldError& error : errors) {
    e.causes.push_back(StatusCause{.type = std::string(api::FieldErrorCauseType(error.type)),
                                   .message = error.Body(),
                                   .field = error.field});
  }
  return e;
}

ApiError NewBadRequest(std::string message) { return Make(400, "BadRequest", std::move(message)); }

// errors.NewForbidden
ApiError NewForbidden(const GroupResource& gr, std::string_view name, std::string_view reason) {
  std::string message = gr.Qualified();
  if (!name.empty()) message += " " + Quoted(name);
  message += " is forbidden: " + std::string(reason);
  ApiError e = Make(403, "Forbidden", std::move(message));
  e.name = std::string(name);
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}

ApiError NewForbiddenPath(std::string_view reason) {
  ApiError e = Make(403, "Forbidden", "forbidden: " + std::string(reason));
  e.empty_details = true;
  return e;
}

ApiError NewUnauthorized() { return Make(401, "Unauthorized", "Unauthorized"); }

// errors.NewResourceExpired
ApiError NewResourceExpired(std::string message) {
  return Make(410, "Expired", std::move(message));
}

// errors.NewMethodNotSupported
ApiError NewMethodNotSupported(const GroupResource& gr, std::string_view action) {
  ApiError e = Make(
      405, "MethodNotAllowed",
      std::string(action) + " is not supported on resources of kind " + Quoted(gr.Qualified()));
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}

ApiError NewNotAcceptable(std::string_view accept) {
  return Make(406, "NotAcceptable",
              "only the following media types are accepted: application/json, "
              "application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (asked for " +
                  std::string(accept) + ")");
}

// negotiation.NewUnsupportedMediaTypeError
ApiError NewUnsupportedMediaType(const std::vector<std::string_view>& accepted) {
  std::string types;
  for (std::string_view t : accepted) types += (types.empty() ? "" : ", ") + std::string(t);
  return Make(
      415, "UnsupportedMediaType",
      "the body of the request was in an unknown format - accepted media types include: " + types);
}

ApiError NewRequestEntityTooLarge(std::string message) {
  return Make(413, "RequestEntityTooLarge", std::move(message));
}

ApiError NewNotFoundPath() {
  ApiError e = Make(404, "NotFound", "the server could not find the requested resource");
  e.empty_details = true;
  return e;
}

// errors.NewInternalError
ApiError NewInternalError(std::string_view message) {
  ApiError e = Make(500, "InternalError", "Internal error occurred: " + std::string(message));
  e.causes.push_back(StatusCause{.type = "", .message = std::string(message), .field = ""});
  return e;
}

// storage.NewTooLargeResourceVersionError
ApiError NewTooLargeResourceVersion(int64_t requested, int64_t current) {
  ApiError e = Make(504, "Timeout",
                    "Too large resource version: " + std::to_string(requested) +
                        ", current: " + std::to_string(current));
  e.causes.push_back(StatusCause{
      .type = "ResourceVersionTooLarge", .message = "Too large resource version", .field = ""});
  e.retry_after_seconds = 1;
  return e;
}

ApiError NewServiceUnavailable(std::string message) {
  return Make(503, "ServiceUnavailable", std::move(message));
}

ApiError NewTooManyRequests(std::string message) {
  ApiError e = Make(429, "TooManyRequests", std::move(message));
  e.retry_after_seconds = 1;
  return e;
}

ApiError FromStatus(const Status& status, const ErrorContext& context) {
  switch (status.code()) {
    case StatusCode::kOk:
      return NewInternalError("an OK status reported as an error");
    case StatusCode::kInvalidArgument:
      if (!status.causes().empty()) {
        ApiError e = Make(422, "Invalid", std::string(status.message()));
        e.name = context.name;
        size_t dot = context.group_kind.find('.');
        e.kind = context.group_kind.substr(0, dot);
        e.group = dot == std::string::npos ? "" : context.group_kind.substr(dot + 1);
        e.causes = status.causes();
        return e;
      }
      return NewBadRequest(std::string(status.message()));
    case StatusCode::kNotFound:
      return NewNotFound(context.gr, context.name);
    case StatusCode::kAlreadyExists:
      return NewAlreadyExists(context.gr, context.name);
    case StatusCode::kConflict:
      return NewModifiedConflict(context.gr, context.name);
    case StatusCode::kFailedPrecondition:
      return NewConflict(context.gr, context.name, status.message());
    case StatusCode::kExpired:
      return NewResourceExpired(std::string(status.message()));
    case StatusCode::kDeadlineExceeded: {
      ApiError e = Make(504, "Timeout", std::string(status.message()));
      e.retry_after_seconds = 1;
      return e;
    }
    case StatusCode::kResourceExhausted:
      return NewTooManyRequests(std::string(status.message()));
    case StatusCode::kUnavailable:
      return NewServiceUnavailable(std::string(status.message()));
    case StatusCode::kUnimplemented:
      return NewMethodNotSupported(context.gr, status.message());
    case StatusCode::kCancelled:
    case StatusCode::kInternal:
      return NewInternalError(status.message());
  }
  return NewInternalError(status.message());
}

std::string StatusJson(const ApiError& error) {
  boost::json::object out;
  out["kind"] = "Status";
  out["apiVersion"] = "v1";
  boost::json::object metadata;
  if (!error.continue_token.empty()) metadata["continue"] = error.continue_token;
  out["metadata"] = std::move(metadata);
  out["status"] = "Failure";
  out["message"] = error.message;
  out["reason"] = error.reason;
  boost::json::object details;
  if (!error.name.empty()) details["name"] = error.name;
  if (!error.group.empty()) details["group"] = error.group;
  if (!error.kind.empty()) details["kind"] = error.kind;
  if (!error.uid.empty()) details["uid"] = error.uid;
  if (!error.causes.empty()) {
    boost::json::array causes;
    for (const StatusCause& cause : error.causes) {
      boost::json::object c;
      if (!cause.type.empty()) c["reason"] = cause.type;
      if (!cause.message.empty()) c["message"] = cause.message;
      if (!cause.field.empty()) c["field"] = cause.field;
      causes.push_back(std::move(c));
    }
    details["causes"] = std::move(causes);
  }
  if (error.retry_after_seconds > 0) details["retryAfterSeconds"] = error.retry_after_seconds;
  if (!details.empty() || error.empty_details) out["details"] = std::move(details);
  out["code"] = error.code;
  return boost::json::serialize(out);
}

http::Response ToResponse(const ApiError& error) {
  http::Response response;
  response.status = error.code;
  response.headers.push_back({"Content-Type", "application/json"});
  response.headers.push_back({"Cache-Control", "no-cache, private"});
  if (error.retry_after_seconds > 0) {
    response.headers.push_back({"Retry-After", std::to_string(error.retry_after_seconds)});
  }
  response.body = StatusJson(error);
  return response;
}

std::string SuccessStatusJson(const GroupResource& gr, std::string_view name,
                              std::string_view uid) {
  boost::json::object out;
  out["kind"] = "Status";
  out["apiVersion"] = "v1";
  out["metadata"] = boost::json::object();
  out["status"] = "Success";
  boost::json::object details;
  details["name"] = name;
  if (!gr.group.empty()) details["group"] = gr.group;
  details["kind"] = gr.resource;
  if (!uid.empty()) details["uid"] = uid;
  out["details"] = std::move(details);
  return boost::json::serialize(out);
}

}  // namespace draplane::server::handlers
