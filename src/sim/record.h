// `draplane sim record`: a live cluster's workload as a WorkloadTrace (docs/design/sim.md,
// "Recording").
//
// From the API (any Kubernetes API server, through an ApiClient): every Pod of the recorded
// namespaces becomes an arrival at its creation time (relative to the earliest Pod) with its
// manifest (spec without nodeName; name, labels and annotations); the claim templates and the
// ResourceClaims its spec names are recorded too, and as policies the PriorityClasses the Pods
// name and the default class (the system classes exist in every run). Its duration is what the
// cluster observed:
//   - finished Pods (Succeeded, Failed): the last container's finishedAt minus the Pod's start
//     (status.startTime, else its `Scheduled` Event);
//   - running Pods: the time they have run so far (a lower bound);
//   - pending Pods: none (the trace's defaultDuration applies).
// The horizon is the span from the earliest Pod to now. Pods already deleted are gone from the
// API and cannot be recorded (their Events remain, but not their specs).
//
// Thread-safety: uses the calling thread.
#pragma once

#include <string>
#include <vector>

#include "client/api_client.h"
#include "common/clock.h"
#include "common/status.h"
#include "sim/trace.h"

namespace draplane::sim {

struct RecordOptions {
  // Empty: every namespace except kube-system, kube-public and kube-node-lease.
  std::vector<std::string> namespaces;
};

// The trace of the cluster's Pods; errors from listing.
StatusOr<Trace> RecordTrace(client::ApiClient& api, const Clock& clock,
                            const RecordOptions& options);

}  // namespace draplane::sim
