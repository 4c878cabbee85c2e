// Classifying prepare failures: what the agent does next when preparing a claim fails.
//
//   retryable     — try again with exponential backoff (the device is busy, the driver or the
//                   API is unavailable): Unavailable, ResourceExhausted, DeadlineExceeded,
//                   Conflict, Aborted-like Cancelled, Expired;
//   terminal      — retrying cannot help (bad opaque config, a device that does not exist, a
//                   driver that refuses): InvalidArgument, FailedPrecondition, NotFound,
//                   AlreadyExists, Unimplemented. The Pod gets the condition
//                   `DevicesPrepared=False` and fails with reason FailedPrepareDynamicResources;
//   needs-cleanup — a half-done prepare could not be rolled back (Internal): the agent
//                   unprepares the claim before it retries.
// Every failure also becomes a Warning Event `FailedPrepareDynamicResources` on the Pod, as the
// kubelet reports it.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "common/status.h"

namespace draplane::agent {

enum class FailureClass { kRetryable, kTerminal, kNeedsCleanup };

FailureClass ClassifyFailure(const Status& status);
// "retryable", "terminal", "needs-cleanup".
std::string_view FailureClassName(FailureClass c);

}  // namespace draplane::agent
