// Quota metrics that more than one component writes in one process (`draplane serve` embeds the
// scheduler next to the server's quota controller): one family, registered here once.
//
// Thread-safety: safe for concurrent use (common/metrics.h).
#pragma once

#include "common/metrics.h"

namespace draplane::api::quota {

// `draplane_quota_drift_total{namespace,quota}`: usage values a periodic recount corrected
// although they had been kept in sync — the server's quota controller for the keys it charges,
// the scheduler for the device keys of Allocation-mode quotas.
const metrics::CounterFamily& DriftCounter();

}  // namespace draplane::api::quota
