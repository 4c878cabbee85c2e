// Device states for the capacity metrics (issue 23, docs/design/metrics.md "Device states"):
// every physical device counted once per device class in one of idle / allocated / unavailable /
// fragmented, and the used ratio of every counter set and shared capacity per pool.
//
// Physical devices. A device that consumes counters belongs to the physical device of its first
// counter set (driver, pool, counter set): a MIG-partitionable GPU's whole-GPU device and its
// partitions are one physical device. Any other device is its own physical device. A physical
// device is counted under a class when at least one of its devices matches the class (the
// ledger's class matching, DeviceLedger::ForEachDevice), so an A100 with MIG partitions counts
// once under the whole-GPU class and once under the MIG class, never once per partition.
//
// States, for a physical device P and a class C (first that applies):
//   - P has no free remainder for C (no device of P matching C is unallocated, untainted and
//     fits the counters P's allocations left): `allocated` when any device of P is allocated,
//     else `unavailable` (every device is tainted NoSchedule / NoExecute; the agent publishes an
//     unhealthy device with such a taint, agent/health.h);
//   - some pending request shape has class C and no shape of class C can use P's free remainder:
//     `fragmented` (a partitioned GPU whose leftover counters fit no pending profile counts here,
//     not under `allocated`: its leftover is stranded capacity, the number the metric exists for);
//   - otherwise `allocated` when any device of P is allocated, else `idle`.
//
// Shapes. A shape is one pending (sub)request (its exactly block, or one firstAvailable
// subrequest) of an unallocated claim of a Pending Pod; identical requests of many Pods are one
// shape. Whether a shape can use P is decided by the real allocator: a synthetic claim with the
// shape alone is allocated on P's node again and again against a scratch copy of the ledger's
// allocated state until it no longer fits, and every physical device a result names is usable
// by the shape. Constraints between requests of one claim are not part of a shape, so a device
// counted usable may still be unusable for the whole claim: `fragmented` never over-reports.
//
// Cost (bounded per shape, not per Pod): at most kMaxShapes shapes (the first by (class,
// request) order; the rest are counted in `shapes_dropped`); per shape, nodes without a free
// remainder for its class are skipped, and the allocator runs at most (free physical devices of
// the class on the node + 1) times per node, each bounded by the scheduler's step limit; all
// selector evaluations together are bounded by one attempt's CEL evaluation budget.
//
// Thread-safety: pure function of its arguments; runs on the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "allocator/features.h"
#include "api/gen/resource_v1_types.h"
#include "scheduler/cluster_state.h"

namespace draplane::scheduler {

inline constexpr size_t kMaxShapes = 32;

struct DeviceStates {
  // (driver, device class, state) -> physical devices; every state of every (driver, class)
  // that has a device is present, zeros included.
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> devices;
  // (driver, pool, counter set) -> the most-used counter's used / total (Cluster Autoscaler's
  // utilization rule for partitionable devices).
  std::map<std::tuple<std::string, std::string, std::string>, double> counter_used;
  // (driver, pool, capacity name) -> used / total over the pool's multi-allocatable devices
  // (consumed capacity of their shares).
  std::map<std::tuple<std::string, std::string, std::string>, double> capacity_used;
  size_t shapes = 0;          // shapes evaluated
  size_t shapes_dropped = 0;  // shapes over kMaxShapes, not evaluated
  int64_t allocator_calls = 0;
};

// The distinct request shapes of `claims` (unallocated claims of Pending Pods), in (class,
// order of appearance) order.
std::vector<api::resourcev1::ExactDeviceRequest> PendingShapes(
    const std::vector<const api::resourcev1::ResourceClaim*>& claims);

// The device states of `cluster` against `shapes` (see above). `step_limit` bounds each
// allocator call (allocator::Options::max_search_steps), `evaluation_budget` the CEL cost of the
// whole computation (allocator::EvaluationBudget; 0: no limit): once spent, the remaining shapes
// count as able to use every device of their class (unknown is never reported as fragmented)
// and as dropped.
DeviceStates ComputeDeviceStates(ClusterState& cluster,
                                 const std::vector<api::resourcev1::ExactDeviceRequest>& shapes,
                                 const allocator::Features& features, int64_t step_limit,
                                 uint64_t evaluation_budget = 0);

}  // namespace draplane::scheduler
