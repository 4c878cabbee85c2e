// The answer to a ResourcePoolStatusRequest (KEP-5677, 1.37 shape): per pool of one driver, the
// device counts, the partition and shareable-capacity summaries and validation errors, computed
// from the ResourceSlices, the holdings of the allocated claims (allocator/holdings.h, the one
// account of who holds which device; admin-access results hold nothing) and the taints.
// docs/design/pool-status.md gives every rule and where it comes from; in short:
//
//   - a pool is its slices at the highest generation; fewer slices than the declared
//     resourceSliceCount makes it incomplete (`PoolIncomplete:`, counts unset; the controller
//     does not write such an answer but retries);
//   - totalDevices: devices published; allocatedDevices: distinct devices held by a claim;
//     unavailableDevices: devices with a NoSchedule or NoExecute taint (their own, or a
//     DeviceTaintRule whose driver / pool / device selector picks them); availableDevices:
//     total - allocated - unavailable, at least 0;
//   - partitionSummary, for a pool with shared counters and a grouping attribute (a slice's
//     partitionTypeAttribute, else the request's defaultPartitionTypeAttribute): per
//     (attribute, type) the devices and how many more fit, each group against the same counter
//     baseline (counters debited once per held device);
//   - shareableSummary, for a pool with allowMultipleAllocations devices: held or not, and per
//     capacity the total, the consumedCapacity of the allocations and what is left.
//
// Pure: no clock, threads or I/O. Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include "allocator/holdings.h"
#include "api/gen/resource_v1_types.h"
#include "api/gen/resource_v1alpha3_types.h"

namespace draplane::controllers::poolstatus {

// What the status is computed from (borrowed).
struct Inputs {
  std::vector<const api::resourcev1::ResourceSlice*> slices;
  std::vector<const api::resourcev1::ResourceClaim*> claims;
  std::vector<const api::resourcev1::DeviceTaintRule*> rules;
};

struct Result {
  // poolCount and the first `limit` pools, sorted by driver and pool name; no conditions.
  api::resourcev1alpha3::ResourcePoolStatusRequestStatus status;
  // Pools (of all that matched) whose slices are not all published yet.
  int incomplete = 0;
  // Pools in `status.pools` with a validationError.
  int errors = 0;
};

// The status for `spec` (limit defaulted to 100 when unset).
Result Compute(const api::resourcev1alpha3::ResourcePoolStatusRequestSpec& spec,
               const Inputs& inputs);

// The same with the holdings given (a caller that keeps a live ledger).
Result Compute(const api::resourcev1alpha3::ResourcePoolStatusRequestSpec& spec,
               const Inputs& inputs, const allocator::Holdings& holdings);

// The Complete condition's message: "Calculated status for N pools" or "... (M incomplete)"
// when M of the reported pools carry a validationError (upstream's wording).
std::string CompleteMessage(const Result& result);

}  // namespace draplane::controllers::poolstatus
