#include "api/quota/metrics.h"

namespace draplane::api::quota {

const metrics::CounterFamily& DriftCounter() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "draplane_quota_drift_total",
      "Quota usage values the periodic resync had to correct although they were synced.",
      {"namespace", "quota"});
  return family;
}

}  // namespace draplane::api::quota
