// Weighted, decayed shares of device domains per tenant (issue 22; docs/design/fair-share.md §2):
// what the fair-share queue order (queue_order.h) ranks tenants by.
//
// Terms:
//   domain          a set of device classes that compete (FairShareConfig::domains), each class
//                   with a cost per held device; a class is in at most one domain.
//   capacity units  Σ over the devices the ledger's free-device index matches with a domain
//                   class, of the cost of that class (a device matched by several classes of the
//                   domain counts once, at the highest of their costs).
//   current         cur(t,d): the cost of what tenant t (a namespace) holds in d — committed and
//                   in flight, read from the DeviceLedger's holdings through its observer hook,
//                   never counted twice — divided by d's capacity units.
//   decayed         hist(t,d) ← hist·2^(−Δ/h) + cur·(1 − 2^(−Δ/h)), Δ the time since the last
//                   update on the injected clock, h the half-life. cur is constant between ledger
//                   events, so advancing at each event and each read is exact (piecewise).
//   fair share      fair(t,d) = w_t / Σ w over the tenants active in d (holding there, or with a
//                   pod in the active queue whose requests name a class of d).
//   effective       e(t,d) = ((1−φ)·cur + φ·hist) / fair(t,d), φ the history fraction: 1 means
//                   "exactly at its fair share".
//   pod share       the max of e over the domains its requests can use (DRF across domains).
//
// Weights: the first tenant entry naming the namespace, else the first whose selector matches
// the namespace's labels (SetNamespaceLabels), in list order; else the default weight.
//
// The config is plain data: the DeviceSharingPolicy API object (draplane.dev/v1alpha1) compiles
// to it (CompileSharingPolicy); the scheduler follows the policy named `default` (scheduler.h).
//
// Thread-safety: not thread-safe; owned by the scheduler's loop thread (as the ledger it
// observes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/holdings.h"
#include "api/gen/draplane_v1alpha1_types.h"
#include "api/labels/selector.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/device_ledger.h"

namespace draplane::scheduler {

// What one device of a class costs in its domain (exactly one kind).
struct FairShareCost {
  enum class Kind { kPerDevice, kPerCounter, kPerCapacity };
  Kind kind = Kind::kPerDevice;
  // kPerDevice: cost units per device.
  double per_device = 1;
  // kPerCounter / kPerCapacity: the counter (summed over the device's consumesCounters) or
  // capacity named `name` costs `weight` units per `unit` of it.
  std::string name{};
  double unit = 1;
  double weight = 1;
};

struct FairShareDomain {
  std::string name;
  std::vector<std::string> device_classes;
  // Per class; a class without an entry costs one unit per device.
  std::map<std::string, FairShareCost, std::less<>> cost{};
};

struct FairShareTenant {
  // Exactly one of the two is used: namespaces when non-empty, else the selector.
  std::vector<std::string> namespaces{};
  std::optional<api::labels::Selector> namespace_selector{};
  double weight = 1;
};

struct FairShareConfig {
  std::vector<FairShareDomain> domains;
  std::vector<FairShareTenant> tenants{};
  double default_weight = 1;
  Duration half_life = std::chrono::hours(24);
  double history_fraction = 0.5;
  // Aging: a pod's credit grows linearly to 1 after this wait (queue_order.h).
  Duration full_credit_after = std::chrono::minutes(30);
  // A pod waiting this long is starving: it goes before every other pod of its band.
  Duration starvation_threshold = std::chrono::hours(2);
  // Starvation holds (docs/design/fair-share.md §4): whether they are taken, and how long a
  // complete hold waits for its pod.
  bool holds = true;
  Duration max_hold = std::chrono::minutes(15);
};

// The config a DeviceSharingPolicy object stands for, its absent fields defaulted as the API
// server defaults them (so objects that never passed the server, a simulator's or a test's, mean
// the same). Errors name the field: a policy the server accepted compiles.
StatusOr<FairShareConfig> CompileSharingPolicy(
    const api::draplanev1alpha1::DeviceSharingPolicy& policy);

class FairShareModel final : public HoldingsObserver {
 public:
  // `ledger` and `clock` must outlive the model; the model observes the ledger from now on and
  // takes its present holdings (call Detach, or destroy the model, before the ledger goes).
  FairShareModel(FairShareConfig config, DeviceLedger& ledger, const Clock& clock);
  ~FairShareModel() override;
  FairShareModel(const FairShareModel&) = delete;
  FairShareModel& operator=(const FairShareModel&) = delete;

  const FairShareConfig& config() const { return config_; }

  // Continues `previous`'s decayed history (as of now) for every tenant and every domain of the
  // same name: a policy edit changes weights, costs or classes, not what tenants used. Call right
  // after construction, before the model sees pending pods.
  void TakeHistory(FairShareModel& previous);

  // Takes the decayed values a status reports (per domain name and tenant) as the history now:
  // a scheduler's restart, or `draplane queue`, continues where the status writer left off (at
  // most its interval ago). Call right after construction.
  void RestoreHistory(const api::draplanev1alpha1::DeviceSharingPolicyStatus& status);

  // The tenants the model knows (held or waited in a domain since it was built), sorted.
  std::vector<std::string> Tenants() const;
  // Whether `namespace_` holds in or waits for `domain` (so counts in its fair shares).
  bool Active(std::string_view namespace_, int domain) const;

  // Namespace labels, for tenant entries with a selector.
  void SetNamespaceLabels(const std::string& namespace_, api::labels::LabelMap labels);
  void RemoveNamespace(std::string_view namespace_);
  double Weight(std::string_view namespace_) const;

  // The domain of a class (an index into config().domains), or -1.
  int DomainOf(std::string_view device_class) const;
  // The domains of a set of classes: sorted, unique.
  std::vector<int> DomainsOf(const std::vector<std::string>& device_classes) const;

  // A pod of `namespace_` needing `domains` entered or left the active queue (active tenants).
  void AddPending(const std::string& namespace_, const std::vector<int>& domains);
  void RemovePending(const std::string& namespace_, const std::vector<int>& domains);

  // The values of the header comment at the clock's present reading. Unknown tenants hold
  // nothing (current 0, decayed 0, fair share as if they were active).
  double CapacityUnits(int domain);
  double Current(std::string_view namespace_, int domain);
  double Decayed(std::string_view namespace_, int domain);
  double FairShare(std::string_view namespace_, int domain);
  // The usage the effective share weighs: current and decayed mixed by history_fraction.
  double Used(std::string_view namespace_, int domain);
  double EffectiveShare(std::string_view namespace_, int domain);
  // Max of EffectiveShare over `domains`; 0 for none.
  double PodShare(std::string_view namespace_, const std::vector<int>& domains);

  // HoldingsObserver.
  void OnHoldingAdded(const allocator::Holdings::Holding& holding) override;
  void OnHoldingRemoved(const allocator::Holdings::Holding& holding) override;
  void OnDevicesChanged() override;

 private:
  struct Use {
    double cost = 0;      // cost units held
    int64_t devices = 0;  // devices held (whether the tenant holds anything: no float residue)
    int64_t pending = 0;  // pods in the active queue needing the domain
    double decayed = 0;
    Duration updated{0};  // monotonic reading `decayed` is at

    // Holding or waiting in the domain: counted in its fair shares.
    bool active() const { return devices > 0 || pending > 0; }
  };
  struct Tenant {
    double weight = 1;
    std::vector<Use> uses;  // by domain
  };

  Tenant& TenantOf(std::string_view namespace_);
  double ComputeWeight(std::string_view namespace_) const;
  // Brings capacity units up to date with the ledger's devices (lazily after OnDevicesChanged).
  void RefreshCapacity();
  // The current share `use` stands for in `domain` (0 without capacity).
  double CurrentOf(const Use& use, int domain) const;
  // Advances one use's decayed value to `now` with the current share it had until now.
  void Advance(Use& use, int domain, Duration now);
  void AdvanceAll(Duration now);
  // Adds (sign +1) or removes (-1) a holding's devices from its tenant's uses.
  void Apply(const allocator::Holdings::Holding& holding, int sign);
  double ActiveWeight(int domain);
  double CostOf(const allocator::Holdings::HeldDevice& device, const FairShareCost& cost) const;

  const FairShareConfig config_;
  DeviceLedger* ledger_;
  const Clock& clock_;
  std::map<std::string, std::pair<int, FairShareCost>, std::less<>> class_domain_;
  std::map<std::string, Tenant, std::less<>> tenants_;
  std::map<std::string, api::labels::LabelMap, std::less<>> namespace_labels_;
  std::vector<double> capacity_;
  bool capacity_stale_ = true;
  // Σ weight of the active tenants per domain; recomputed when `active_stale_`.
  std::vector<double> active_weight_;
  bool active_stale_ = true;
};

// A pod's aging credit: min(wait / full_credit_after, 1) (queue_order.h).
double AgingCredit(const FairShareConfig& config, Duration enqueued_at, Duration now);

// A pending pod as the shares count it: its tenant, its domains (FairShareModel::DomainsOf), and
// whether it waited past the starvation threshold.
struct PendingShare {
  std::string namespace_;
  std::vector<int> domains;
  bool starving = false;
};

// One tenant's standing in one domain (the header comment's values at one instant).
struct TenantShare {
  std::string namespace_;
  double weight = 0;
  double fair = 0;
  double current = 0;
  double decayed = 0;
  double effective = 0;
  int64_t pending = 0;
  int64_t starving = 0;
};

struct DomainShares {
  std::string name;
  double capacity_units = 0;
  // Tenants holding there, decaying there or with pending pods needing it; by namespace.
  std::vector<TenantShare> tenants;
};

// Every domain's shares now: what the policy status, the metrics and `draplane queue` report.
// Fair shares here are over the tenants holding or waiting in the domain with any of `pending`
// (fair-share.md §5), whichever queue the Pods are in: the model's own (which the order uses)
// counts only Pods in the active queue, so a tenant whose Pods wait in backoff would be left out
// of the others' shares.
std::vector<DomainShares> ComputeShares(FairShareModel& model,
                                        const std::vector<PendingShare>& pending);

// The status the scheduler writes for the policy in force: observedGeneration, the shares
// (fractions in thousandths) and `ready`.
api::draplanev1alpha1::DeviceSharingPolicyStatus SharingStatus(
    const std::vector<DomainShares>& shares, int64_t generation, api::metav1::Condition ready);

}  // namespace draplane::scheduler
