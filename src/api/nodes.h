// Node rules shared by the controllers and the API server.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>

#include "api/gen/core_v1_types.h"

namespace draplane::api {

// Whether the Node's Ready condition is True (upstream nodeutil.IsNodeReady): its kubelet (a
// node agent, a fake kubelet, the kubelet simulator) reports in; the node lifecycle controller
// turns the condition Unknown when it stops.
inline bool IsNodeReady(const corev1::Node& node) {
  return std::any_of(
      node.status.conditions.begin(), node.status.conditions.end(),
      [](const corev1::NodeCondition& c) { return c.type == "Ready" && c.status == "True"; });
}

}  // namespace draplane::api
