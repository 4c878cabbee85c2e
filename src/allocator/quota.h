// Allocation-mode device quota (docs/design/holdings.md): a ResourceQuota annotated
// `draplane.dev/device-quota-mode: Allocation` charges its device resource names (charges.h)
// from what the allocator actually allocates, and the allocator enforces it inside its search:
// QuotaConstraint refuses a device whose charge would take a quota over `spec.hard`, so the
// same search moves on to the next device or the next firstAvailable subrequest (an exhausted
// H100 quota gives the A100 pair on the same node).
//
// The search starts from each quota's usage as the caller knows it, per resource name:
//   max(status.used, committed holdings) + in-flight holdings
// (status.used may lag the allocations a scheduler has observed, and never contains the ones it
// has reserved but not written). The scheduler's quota write after binding (with a
// resourceVersion precondition) is what makes the limit hold across replicas; this constraint
// makes the allocator choose within it.
//
// Pure: no clock, threads or I/O. Thread-safety: a QuotaConstraint is used by one Allocate call
// at a time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/charges.h"
#include "allocator/holdings.h"
#include "allocator/policy.h"
#include "api/gen/core_v1_types.h"

namespace draplane::allocator {

// The reason code of quota rejections in explanations (PolicyRejection::code).
inline constexpr std::string_view kQuotaPolicyCode = "quota";

// One Allocation-mode ResourceQuota, reduced to the resource names this module charges.
struct QuotaBudget {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  ResourceList hard;  // spec.hard, names ParseDeviceResource accepts only
  ResourceList used;  // status.used for those names

  friend bool operator==(const QuotaBudget&, const QuotaBudget&) = default;
};

// The budget of a ResourceQuota in Allocation mode (api::quota::ModeOf): the device resource
// names the scheduler owns (api::quota::IsAllocationChargedKey) with their hard limits and
// status.used; nullopt when the quota is not in Allocation mode or limits none of them.
std::optional<QuotaBudget> BudgetOf(const api::corev1::ResourceQuota& quota);

// "quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1" (used/hard), with
// ", needs N" unless N is one device.
std::string QuotaExceededMessage(const QuotaBudget& quota, std::string_view resource,
                                 const api::Quantity& used, const api::Quantity& hard,
                                 const api::Quantity& needs);

// The first resource name of `quota.hard` that `used + increment` would exceed, as a message
// (QuotaExceededMessage), or nullopt when the increment fits.
std::optional<std::string> ExceedsQuota(const QuotaBudget& quota, const ResourceList& used,
                                        const ResourceList& increment);

// `used + increment` on the names `quota.hard` limits (status.used as the quota writes it).
ResourceList ChargedUsage(const QuotaBudget& quota, const ResourceList& used,
                          const ResourceList& increment);

class QuotaConstraint final : public PolicyConstraint {
 public:
  // `quotas`: the Allocation-mode quotas of `ns`, the namespace of every claim the
  // search allocates. `holdings`: what the namespace holds (committed and in flight); it must
  // outlive the constraint and not change while a search runs.
  QuotaConstraint(std::string ns, std::vector<QuotaBudget> quotas, const Holdings& holdings);

  std::string_view name() const override { return kQuotaPolicyCode; }
  std::optional<PolicyRejection> Add(const PolicyCandidate& candidate) override;
  void Remove(const PolicyCandidate& candidate) override;
  // Refuses a request whose device count alone exceeds what a quota leaves of its class.
  std::optional<PolicyRejection> CheckRequest(const PolicyRequest& request) override;

  const std::vector<QuotaBudget>& quotas() const { return quotas_; }
  // Where quota `i` starts, per resource name it limits.
  const ResourceList& base(size_t i) const { return base_[i]; }

 private:
  // A limited resource name of one quota, in the order of quotas_ and then of `hard`.
  struct Limit {
    size_t quota = 0;
    const std::string* key = nullptr;  // into quotas_[quota].hard
    DeviceResource resource;           // *key in parts
    api::Quantity hard;
    api::Quantity used;  // base plus the charges accepted by the search so far
  };
  // A charge reduced to the limits it touches: (index into limits_, amount), by index.
  using Slots = std::vector<std::pair<size_t, api::Quantity>>;
  struct Accepted {
    const Slots* slots = nullptr;  // into plain_charges_; null: `own`
    Slots own;
    std::string shared_device;  // a share of a device with counters: its key (in shares_)
  };
  // What ChargeDevice charges a device that has neither counters nor capacities depends only
  // on these (charges.h), so its slots are computed once per search.
  struct PlainKey {
    std::string device_class;
    bool admin_access = false;
    auto operator<=>(const PlainKey&) const = default;
  };
  Slots ToSlots(const ResourceList& charge) const;
  // The charge of a candidate on the limits (ForEachDeviceCharge), summed per limit. For a share
  // of a device with counters, `shared_device` is set and the counters are charged unless the
  // namespace or this search holds the device already.
  Slots ChargeSlots(const PolicyCandidate& candidate, const DeviceFacts& facts,
                    std::string* shared_device);
  std::optional<PolicyRejection> Check(const Slots& charge) const;

  std::string namespace_;
  std::vector<QuotaBudget> quotas_;
  std::vector<ResourceList> base_;  // per quota
  const Holdings* holdings_ = nullptr;
  std::vector<Limit> limits_;
  std::map<std::string, std::vector<size_t>, std::less<>> limits_by_key_;
  std::map<PlainKey, Slots> plain_charges_;
  std::map<std::string, int, std::less<>> shares_;  // device key -> shares with counters
  std::vector<Accepted> stack_;
};

}  // namespace draplane::allocator
