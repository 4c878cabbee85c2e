#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace draplane {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kConflict:
      return "CONFLICT";
    case StatusCode::kExpired:
      return "EXPIRED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message, std::vector<StatusCause> causes) {
  if (code == StatusCode::kOk) return;
  rep_ = std::make_shared<const Rep>(Rep{code, std::move(message), std::move(causes)});
}

std::string_view Status::message() const {
  return rep_ ? std::string_view(rep_->message) : std::string_view();
}

const std::vector<StatusCause>& Status::causes() const {
  static const std::vector<StatusCause> kNone;
  return rep_ ? rep_->causes : kNone;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  std::string message(prefix);
  message += ": ";
  message += rep_->message;
  return Status(rep_->code, std::move(message), rep_->causes);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

bool operator==(const Status& a, const Status& b) {
  if (a.rep_ == b.rep_) return true;
  if (!a.rep_ || !b.rep_) return false;
  return a.rep_->code == b.rep_->code && a.rep_->message == b.rep_->message &&
         a.rep_->causes == b.rep_->causes;
}

Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
Status ConflictError(std::string m) { return Status(StatusCode::kConflict, std::move(m)); }
Status ExpiredError(std::string m) { return Status(StatusCode::kExpired, std::move(m)); }
Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
Status UnavailableError(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

namespace internal {
void DieBecauseStatusOrHasNoValue(const Status& status) {
  std::fprintf(stderr, "FATAL: StatusOr accessed without a value: %s\n", status.ToString().c_str());
  std::abort();
}
}  // namespace internal

}  // namespace draplane
