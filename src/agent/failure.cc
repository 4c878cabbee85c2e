#include "agent/failure.h"

namespace draplane::agent {

FailureClass ClassifyFailure(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kUnimplemented:
      return FailureClass::kTerminal;
    case StatusCode::kInternal:
      return FailureClass::kNeedsCleanup;
    case StatusCode::kOk:
    case StatusCode::kConflict:
    case StatusCode::kExpired:
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCancelled:
      return FailureClass::kRetryable;
  }
  return FailureClass::kRetryable;
}

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kRetryable:
      return "retryable";
    case FailureClass::kTerminal:
      return "terminal";
    case FailureClass::kNeedsCleanup:
      return "needs-cleanup";
  }
  return "retryable";
}

}  // namespace draplane::agent
