// Status and StatusOr: the one error type of draplane (STYLE.md, "Errors").
//
// A Status is either OK or carries a code from a closed set, a message, and optionally a list of
// field causes (for validation failures, mirroring `metav1.StatusCause`). Detail goes into the
// message and the causes, never into new codes. A legitimate "no" (an unsatisfiable claim, a CEL
// error value, a validation failure list) is a value, not a non-OK Status.
//
// Thread-safety: Status and StatusOr are values; const access from several threads is safe.
// An OK Status holds no allocation; a non-OK Status owns one heap block shared on copy.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace draplane {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kExpired,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kDeadlineExceeded,
  kCancelled,
  kUnimplemented,
  kInternal,
};

// Returns the upper-case name of a code, e.g. "INVALID_ARGUMENT".
std::string_view StatusCodeName(StatusCode code);

// One cause of a failure, in the shape of `metav1.StatusCause`: `type` is the Kubernetes cause
// type (e.g. "FieldValueInvalid", "FieldValueRequired"), `field` the field path
// (e.g. "spec.devices.requests[0].name") and `message` the human-readable reason.
struct StatusCause {
  std::string type;
  std::string message;
  std::string field;

  friend bool operator==(const StatusCause&, const StatusCause&) = default;
};

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  // A status with `code` and `message`; `code` kOk yields an OK status and drops the message.
  Status(StatusCode code, std::string message, std::vector<StatusCause> causes = {});

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The message; empty for OK.
  std::string_view message() const;
  // The field causes; empty for OK and for failures without causes.
  const std::vector<StatusCause>& causes() const;

  // Returns a copy whose message is `prefix + ": " + message()`; OK stays OK.
  Status WithPrefix(std::string_view prefix) const;

  // "OK" or "INVALID_ARGUMENT: message".
  std::string ToString() const;

  // Explicitly ignores a status, for the rare call whose failure does not matter (say why).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b);

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::vector<StatusCause> causes;
  };
  std::shared_ptr<const Rep> rep_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status ConflictError(std::string message);
Status ExpiredError(std::string message);
Status FailedPreconditionError(std::string message);
Status ResourceExhaustedError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status CancelledError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);

namespace internal {
[[noreturn]] void DieBecauseStatusOrHasNoValue(const Status& status);
}  // namespace internal

// Either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // Precondition: `status` is not OK (an OK status without a value becomes kInternal).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK Status");
  }
  StatusOr(const T& value) : value_(std::in_place, value) {}        // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::in_place, std::move(value)) {}  // NOLINT: implicit by design
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
           !std::is_same_v<std::decay_t<U>, StatusOr<T>> && !std::is_same_v<std::decay_t<U>, T>)
      StatusOr(U&& value)
      : value_(std::in_place, std::forward<U>(value)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // Precondition: ok(). Violations terminate the process with the status in the message.
  const T& value() const& {
    if (!ok()) internal::DieBecauseStatusOrHasNoValue(status_);
    return *value_;
  }
  T& value() & {
    if (!ok()) internal::DieBecauseStatusOrHasNoValue(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieBecauseStatusOrHasNoValue(status_);
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace draplane
