// The simulator's collector: measures a run from the real objects the components write — Pods,
// ResourceClaim allocations, ResourceSlices, DeviceClasses — as the shared informers deliver them
// (docs/design/sim.md, "Metrics"). It also checks conservation at every change.
//
// Device units (one place for this accounting, so a holdings ledger can replace it): a device
// that consumes no shared counters is one unit; a counter set (a partitionable GPU) is one unit,
// and a device consuming from it weighs the largest fraction of any of its counters it consumes;
// an allocation of a multi-allocatable device weighs the largest fraction of any capacity it
// consumes; admin access weighs nothing. Amounts are integers in micro-units, times in
// milliseconds, so the three ways device-seconds are summed (per tenant from each allocation's
// interval, per class and overall from the time integral) must agree exactly.
//
// Time: the engine calls Advance(from, to) before the clock jumps; the state is constant in
// between (changes happen only at event instants), so integrals are exact. Fragmentation and
// the series are sampled on a fixed grid.
//
// Thread-safety: used from the simulation's one thread (informer handlers run there too).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "api/quantity.h"
#include "cel/cel.h"
#include "client/shared_informers.h"
#include "common/clock.h"
#include "sim/report.h"

namespace draplane::sim::internal {

struct CollectorOptions {
  Duration window{0};       // the measured window [0, window)
  Duration sample_step{0};  // grid of fragmentation and series samples
  bool placements = false;  // keep per-Pod placements for the report
  std::map<std::string, double> tenant_weights;
};

class Collector {
 public:
  Collector(const Clock& clock, CollectorOptions options);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Registers handlers and informers (before the informers start).
  void Attach(client::SharedInformers& informers);

  // A Pod the trace submitted (by uid, right after it was created): its arrival time, how long
  // it runs once bound, and its request size in device units when unscheduled (for demand).
  void Submitted(const std::string& uid, Duration at, Duration duration);
  // A trace Pod the API refused to create (unscheduled, reason RejectedByApi).
  void Rejected(const std::string& pod, Duration at, const std::string& message);
  // A submitted Pod whose claim the resourceclaim controller could not make (its
  // FailedResourceClaimCreation Event: a template missing, a ResourceQuota refusing the claim).
  // Left unscheduled without a scheduling attempt, it is reported with reason ClaimNotCreated and
  // `message` (the latest such Event's) instead of NeverAttempted.
  void ClaimNotCreated(const std::string& uid, std::string message);
  // A pending Pod the engine deleted because its `deleteAfter` passed.
  void GaveUp(const std::string& uid);
  // The state settled at `from` holds until `to`: integrates it and samples the grid points in
  // [from, to).
  void Advance(Duration from, Duration to);
  // Fills the report's measurements; `end` is where the run stopped.
  void Finish(Duration end, Report* report);

  // Pods the trace submitted that are neither bound nor gone.
  int64_t pending() const { return pending_; }

 private:
  struct Device;
  struct Unit;
  struct PodState;
  struct ClaimState;

  void OnSlice(const api::resourcev1::ResourceSlice& slice);
  void OnClass(const api::resourcev1::DeviceClass& device_class);
  void OnPod(const api::corev1::Pod* old_pod, const api::corev1::Pod& pod);
  void OnPodDelete(const api::corev1::Pod& pod);
  void OnClaim(const api::resourcev1::ResourceClaim* old_claim,
               const api::resourcev1::ResourceClaim& claim);
  void OnClaimDelete(const api::resourcev1::ResourceClaim& claim);
  // Whether every device (and counter set) of the claim's allocation is known.
  bool Resolvable(const api::resourcev1::ResourceClaim& claim) const;
  void ResolvePending();
  void Open(ClaimState& state, const api::resourcev1::ResourceClaim& claim);
  void Close(ClaimState& state);
  void SetPending(PodState& pod, bool pending);
  // Device classes are matched lazily: the first allocation or sample after slices or classes
  // changed recomputes every device's class mask.
  void EnsureClassMasks();
  int TenantIndex(const std::string& ns);
  int ClassIndex(const std::string& name);
  void Sample(Duration at);
  Duration Now() const;
  void Violation(int64_t* counter, std::string what);

  const Clock& clock_;
  const CollectorOptions options_;
  std::shared_ptr<const cel::Environment> cel_env_;
  std::unique_ptr<cel::CompileCache> cel_cache_;

  // Devices and units.
  std::unordered_map<std::string, int> device_index_;  // driver/pool/device -> devices_
  std::vector<Device> devices_;
  std::unordered_map<std::string, int> unit_index_;  // counter sets: driver/pool/set -> units_
  std::vector<Unit> units_;
  std::map<std::string, std::shared_ptr<const api::resourcev1::DeviceClass>> classes_;
  bool masks_stale_ = true;
  std::vector<std::string> class_names_;  // index -> name (classes seen in requests or slices)
  std::unordered_map<std::string, int> class_ids_;

  // Pods and claims.
  std::unordered_map<std::string, std::unique_ptr<PodState>> pods_;      // uid
  std::vector<PodState*> pod_order_;                                     // submission order
  std::unordered_map<std::string, std::unique_ptr<ClaimState>> claims_;  // uid
  std::unordered_map<std::string, std::string> claim_uid_by_key_;        // ns/name -> uid
  std::vector<std::string> unresolved_;  // claim uids allocated devices not known yet
  int64_t pending_ = 0;

  // Tenants.
  std::vector<std::string> tenant_names_;
  std::unordered_map<std::string, int> tenant_ids_;

  // Current allocation, in micro-units.
  int64_t allocated_ = 0;
  std::vector<int64_t> allocated_by_class_;
  std::vector<int64_t> allocated_by_tenant_;
  std::unordered_map<std::string, std::string> exclusive_holder_;  // device -> claim uid

  // Integrals over the window, micro-unit milliseconds.
  api::Int128 integral_ = 0;
  std::vector<api::Int128> integral_by_class_;
  std::vector<api::Int128> tenant_closed_;  // from closed and clipped allocation intervals
  // The same per (tenant, class) (fair-share proofs: a tenant's share of one class).
  std::map<std::pair<int, int>, api::Int128> tenant_class_closed_;

  // Fallback tiers.
  std::map<int64_t, int64_t> tiers_;

  // Samples.
  Duration next_sample_{0};
  int64_t samples_ = 0;
  double fragmentation_devices_sum_ = 0;
  double fragmentation_counters_sum_ = 0;
  Series series_;

  Conservation conservation_;
};

}  // namespace draplane::sim::internal
