// Registering a Node and keeping its heartbeat, as the kubelet does: what a simulated node's agent
// does for itself (agent.h) and what the fake kubelet does for the node whose kubelet plugins it
// drives (fakekubelet/).
//
// SyncNodeRegistration:
//   1. create the Node if missing, with the labels (plus kubernetes.io/hostname and
//      kubernetes.io/os=linux) and the annotation `draplane.dev/agent: "true"`, which tells the
//      controllers' kubelet simulator that something on the node already plays the kubelet;
//   2. on an existing Node, add missing or changed labels and the annotation;
//   3. write the status (capacity = allocatable, with defaults for cpu, memory and pods; the
//      kubelet's conditions MemoryPressure, DiskPressure, PIDPressure False and Ready True
//      (KubeletReady), conditions of other reporters kept; nodeInfo) when it changes or when
//      `status_interval` passed since `*last_status`;
//   4. renew the Lease `kube-node-lease/<node>` (created with the Node as owner, and the
//      namespace created when a bare API server lacks it).
//
// Thread-safety: stateless; `*last_status` belongs to the caller.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "api/gen/core_v1_types.h"
#include "api/quantity.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::agent {

inline constexpr std::string_view kAgentAnnotation = "draplane.dev/agent";
inline constexpr std::string_view kNodeLeaseNamespace = "kube-node-lease";

struct NodeRegistration {
  std::string node_name;
  std::map<std::string, std::string> labels;
  // Node capacity (= allocatable); cpu 32, memory 256Gi and pods 110 when absent.
  std::map<std::string, api::Quantity> capacity;
  int32_t lease_duration_seconds = 40;
  Duration status_interval = std::chrono::minutes(1);
  // nodeInfo.kubeletVersion: who plays the kubelet ("draplane-agent", "draplane-fakekubelet").
  std::string kubelet_version;
  // The Ready condition's message.
  std::string ready_message;
  std::string field_manager;
};

// The Node steps 1-3 keep the stored Node at: labels (the options' plus kubernetes.io/hostname
// and kubernetes.io/os unless set), the annotation, capacity = allocatable with the defaults, the
// four kubelet conditions stamped `now`, nodeInfo. The simulator registers profile nodes with it.
api::corev1::Node RegisteredNode(const NodeRegistration& node, Timestamp now);

// Steps 1-4. Errors of the API calls; `*last_status` is set when the status was written.
Status SyncNodeRegistration(client::ApiClient& api, const NodeRegistration& node,
                            const Clock& clock, Timestamp* last_status);

}  // namespace draplane::agent
