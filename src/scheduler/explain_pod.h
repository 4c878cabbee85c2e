// `draplane explain pod`: why a Pod is (or is not) where it is, as data.
//
// For a bound Pod: its node and the devices each of its claims holds. For a pending Pod: the
// scheduler's default profile evaluated against the cluster state given — PreFilter, then every
// filter on every node with the allocator explaining each device decision — so the output lists
// each node's verdict and, for device failures, every candidate device with the reason it was
// skipped (allocator::Explanation). Nothing is written to the cluster.
//
// ExplainPodFromApi reads that state through an API client first: what `draplane explain pod`
// does against a cluster and what `draplane serve` answers at
// /apis/draplane.dev/v1alpha1/namespaces/{ns}/podexplanations/{name} (docs/design/dashboard.md,
// "Pod explanations").
//
// Thread-safety: ExplainPod uses the ClusterState exclusively while it runs; ExplainPodFromApi
// builds its own and may run concurrently with others over one client.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocator/explanation.h"
#include "allocator/features.h"
#include "allocator/hold.h"
#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/cluster_state.h"

namespace draplane::scheduler {

struct ClaimView {
  std::string pod_claim;  // spec.resourceClaims[].name ("extended-resources" for KEP-5004)
  std::string claim;      // the ResourceClaim's name, "" when not created yet
  std::string state;      // "allocated", "not allocated", "not created yet", "missing"
  // Not created yet: the claim controller's newest FailedResourceClaimCreation Event for the
  // entry (an Admission-mode quota refusing the claim, a missing template) and when it was seen.
  std::string creation_failure;
  std::string creation_failure_time;
  std::vector<std::string> devices;       // "driver/pool/device (request)"
  std::vector<std::string> reserved_for;  // pod names
};

struct NodeView {
  std::string node;
  bool fits = false;
  std::string plugin;  // the rejecting plugin
  std::string reason;
  std::optional<allocator::Explanation> devices;
};

struct PodExplanation {
  std::string pod;  // "namespace/name"
  std::string phase;
  std::string node;               // bound node, if any
  std::string scheduled_message;  // PodScheduled=False message, if any
  std::vector<ClaimView> claims;
  std::optional<std::string> pre_filter;  // "<plugin>: <reason>" when rejected before nodes
  // The Allocation-mode quotas of the Pod's namespace, one line per limited resource:
  // "quota team-a/devices h100.deviceclass.resource.k8s.io/devices: used 1 of 1 (allocations
  // hold 1)". Their refusals appear per candidate device (policy quota).
  std::vector<std::string> quotas;
  std::vector<NodeView> nodes;
  // "fits on 3 of 12 nodes: a, b, c" or the FailedScheduling message.
  std::string summary;

  // For terminals; with `devices`, every node's device explanation is printed in full.
  std::string ToText(bool devices) const;
  std::string ToJson() const;
};

// `clock` judges time-bound state: binding timeouts (KEP-5007) and node isolations. `holds`:
// the starvation holds in force (allocator/hold.h), which keep devices from the Pod as they keep
// them from its attempts.
PodExplanation ExplainPod(ClusterState& cluster, const api::corev1::Pod& pod,
                          const allocator::Features& features, const Clock& clock = RealClock(),
                          std::vector<allocator::DeviceHold> holds = {});

// Reads the Pod ns/name, then the device classes, slices, nodes, claims and assigned Pods of the
// whole cluster and the ResourceQuotas of the Pod's namespace (cluster-wide lists in pages of
// 500; nothing is written), and explains the Pod, with the starvation holds the pending Pods
// carry (their draplane.dev/held-devices annotation; starving since their creation). For a claim
// not created yet it also reads the Pod's FailedResourceClaimCreation Events
// (ClaimView::creation_failure; an identity that may not read Events gets the explanation without).
// Errors: the Pod's NotFound, and any other read's error prefixed with what was read ("list
// resourceslices: ...").
StatusOr<PodExplanation> ExplainPodFromApi(client::ApiClient& api, const std::string& ns,
                                           const std::string& name,
                                           const allocator::Features& features,
                                           const Clock& clock = RealClock());

}  // namespace draplane::scheduler
