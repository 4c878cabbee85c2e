// The scheduling queue's order as `draplane queue` shows it (docs/design/fair-share.md §5),
// computed from API objects with the scheduler's own code: the DeviceSharingPolicy `default`
// compiled to a FairShareModel over a DeviceLedger of the slices, classes and claims (its
// decayed history restored from the policy's status), and the pending Pods put through the
// same ActiveOrder the scheduler pops from (FairShareOrder, or PrioritySortOrder without a
// policy).
//
// What the API does not show, and how the view stands in for it:
//   - which pending Pods sit in the scheduler's active queue (the rest wait for an event or a
//     backoff): every pending Pod is counted as active, so the positions are those the Pods
//     would have if all were ready now, and each tenant counts as active where it waits;
//   - when a Pod first entered the queue: the last transition of its PodScheduled=False
//     condition, else its creation (the scheduler's own reading is earlier by the first
//     attempt's duration at most);
//   - the cost account (issue 17): not shown, no Pod is indebted;
//   - bindings between two pops: the positions assume none (each share as it is now).
//
// Thread-safety: a pure function of its inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocator/hold.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/draplane_v1alpha1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/fair_share.h"

namespace draplane::scheduler {

struct QueueViewInputs {
  // The policy named `default`, if any.
  std::optional<api::draplanev1alpha1::DeviceSharingPolicy> policy;
  std::vector<api::corev1::Pod> pods;  // every Pod; the pending ones are ordered
  std::vector<api::resourcev1::ResourceClaim> claims;
  std::vector<api::resourcev1::DeviceClass> classes;
  std::vector<api::resourcev1::ResourceSlice> slices;
  std::vector<api::corev1::Namespace> namespaces;  // for tenant entries with a selector
  // Scheduler names whose Pods are ordered (empty: default-scheduler).
  std::vector<std::string> scheduler_names;
  Timestamp now;
};

// A waiting Pod's starvation hold: the target node, since when, the devices held so far and how
// many it needs there.
struct QueuedHold {
  std::string node;
  Timestamp since{};
  std::vector<allocator::HeldDeviceId> devices{};
  int64_t needed = 0;
};

struct QueuedPodView {
  int64_t position = 0;  // 1-based, over every pending Pod
  std::string namespace_;
  std::string name;
  int64_t priority = 0;  // the band
  Timestamp waiting_since;
  // With a policy: the domains its requests use, its tenant's weight, the Pod's share (the max
  // of its tenant's effective share over those domains) and the fair share of that domain, its
  // aging credit, and since when it starves (nullopt: it does not).
  std::vector<std::string> domains{};
  double weight = 0;
  double share = 0;
  double fair = 0;
  double credit = 0;
  std::optional<Timestamp> starving_since{};
  // Its starvation hold, read from the annotation the scheduler keeps on the Pod
  // (kHeldDevicesAnnotation).
  std::optional<QueuedHold> hold{};
};

struct QueueView {
  // The policy in force; empty without one (the order is priority, then arrival).
  std::string policy;
  // Why the policy named `default` is not in force (it does not compile); empty otherwise.
  std::string policy_error;
  std::vector<QueuedPodView> pods;     // in pop order
  std::vector<DomainShares> shares{};  // with a policy
};

// A Pod the scheduler still has to place: not bound, not finished, not being deleted, one of
// `scheduler_names`' (empty: default-scheduler).
bool IsPendingForScheduler(const api::corev1::Pod& pod,
                           const std::vector<std::string>& scheduler_names);

QueueView ComputeQueueView(const QueueViewInputs& inputs);

}  // namespace draplane::scheduler
