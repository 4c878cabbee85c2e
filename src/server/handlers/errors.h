// API errors: every failure the server answers, as a `metav1.Status` with upstream's reason,
// HTTP code and message wording (k8s.io/apimachinery/pkg/api/errors). This is the one place that
// maps a draplane `Status` to an HTTP answer (STYLE.md, "Errors").
//
// Handlers build an ApiError with the constructor named after the upstream function
// (`NewNotFound` ...), or convert a Status from a lower layer with `FromStatus`, and render it
// with `ToResponse`.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "common/status.h"
#include "server/http/http.h"

namespace draplane::server::handlers {

// A resource within an API group, e.g. {"resource.k8s.io", "resourceclaims"}.
struct GroupResource {
  std::string group;
  std::string resource;

  // "resourceclaims.resource.k8s.io", or "pods" for the core group.
  std::string Qualified() const;
};

struct ApiError {
  int code = 500;
  std::string reason;  // metav1.StatusReason: "NotFound", "Invalid", ...
  std::string message;
  // `details`; left out of the Status when all are empty, unless `empty_details` (upstream's
  // NotFound and Forbidden always carry one: kubectl reads its name, and a missing one crashed
  // `kubectl debug` on the 404 of an unknown subresource).
  bool empty_details = false;
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;
  // metadata.continue of the Status: for a list whose continue token expired, the token that
  // resumes it at the newest revision.
  std::string continue_token;
};

// `<qualified resource> "<name>" not found` (404 NotFound).
ApiError NewNotFound(const GroupResource& gr, std::string_view name);
// `<qualified resource> "<name>" already exists` (409 AlreadyExists).
ApiError NewAlreadyExists(const GroupResource& gr, std::string_view name);
// `Operation cannot be fulfilled on <qualified resource> "<name>": <detail>` (409 Conflict).
ApiError NewConflict(const GroupResource& gr, std::string_view name, std::string_view detail);
// The optimistic-concurrency conflict with upstream's standard detail.
ApiError NewModifiedConflict(const GroupResource& gr, std::string_view name);
// `<Kind>.<group> "<name>" is invalid: <errors>` (422 Invalid) with one cause per error.
// `group_kind` is e.g. "ResourceClaim.resource.k8s.io" ("Pod" for the core group).
ApiError NewInvalid(std::string_view group_kind, std::string_view name,
                    const api::FieldErrorList& errors);
// 400 BadRequest with `message` as is.
ApiError NewBadRequest(std::string message);
// `<qualified resource> "<name>" is forbidden: <reason>` (403 Forbidden); without a name
// `<qualified resource> is forbidden: <reason>`.
ApiError NewForbidden(const GroupResource& gr, std::string_view name, std::string_view reason);
// 403 for a non-resource path: `forbidden: <reason>`.
ApiError NewForbiddenPath(std::string_view reason);
// 401 Unauthorized.
ApiError NewUnauthorized();
// 410 Gone, reason Expired (a resourceVersion or continue token that is too old).
ApiError NewResourceExpired(std::string message);
// 405 MethodNotAllowed.
ApiError NewMethodNotSupported(const GroupResource& gr, std::string_view action);
// 406 NotAcceptable.
ApiError NewNotAcceptable(std::string_view accept);
// 415 UnsupportedMediaType naming the media types the request could have used, as upstream.
ApiError NewUnsupportedMediaType(const std::vector<std::string_view>& accepted);
// 413 RequestEntityTooLarge.
ApiError NewRequestEntityTooLarge(std::string message);
// 404 for a path that names no API (`the server could not find the requested resource`).
ApiError NewNotFoundPath();
// 500 InternalError: `Internal error occurred: <message>`.
ApiError NewInternalError(std::string_view message);
// 504 Timeout for a resourceVersion newer than the store (kube-apiserver's
// `Too large resource version`), retry after one second.
ApiError NewTooLargeResourceVersion(int64_t requested, int64_t current);
// 503 ServiceUnavailable.
ApiError NewServiceUnavailable(std::string message);
// 429 TooManyRequests.
ApiError NewTooManyRequests(std::string message);

// Where a failure happened, for wording errors from lower layers.
struct ErrorContext {
  GroupResource gr;
  std::string name;
  std::string group_kind;  // for Invalid, e.g. "ResourceClaim.resource.k8s.io"
};

// Maps a non-OK Status (store, admission, validation, codec) to an ApiError:
//   InvalidArgument with causes → 422 Invalid; without → 400 BadRequest
//   NotFound → 404; AlreadyExists → 409; Conflict → 409 (detail from the message)
//   Expired → 410; DeadlineExceeded → 504 Timeout; ResourceExhausted → 429
//   Unavailable → 503; FailedPrecondition → 409 Conflict; Unimplemented → 405
//   Cancelled, Internal → 500.
ApiError FromStatus(const Status& status, const ErrorContext& context);

// The `metav1.Status` JSON of an error (compact, one line).
std::string StatusJson(const ApiError& error);
// The HTTP answer: the Status JSON with `Content-Type: application/json` (and `Retry-After`).
http::Response ToResponse(const ApiError& error);
// A successful `metav1.Status` (what DELETE answers for an object that is gone).
std::string SuccessStatusJson(const GroupResource& gr, std::string_view name, std::string_view uid);

}  // namespace draplane::server::handlers
