// Starvation holds (docs/design/fair-share.md §4): devices kept free on a target node for a Pod
// that has waited past its DeviceSharingPolicy's starvation threshold, so that work-conserving
// backfill cannot take, one by one, every device the starving Pod needs.
//
// HoldConstraint is a policy constraint (policy.h) built for one scheduling attempt from the holds
// in force and the attempting Pod's uid and priority. It refuses a held device to every Pod of the
// same or a lower priority band than the Pod it is held for, with code "held" and a message that
// names that Pod ("held for team-b/train since 2026-12-02T12:03:00Z (starving 2h14m)"), so the
// search tries the next device or firstAvailable subrequest and the explanation says why. The Pod
// the devices are held for takes them as any free device; a Pod of a higher band may take them too
// (strict bands come first; the hold then waits for the next release).
//
// Who holds what, when holds grow, and when they are released (bind, deletion, maxHold) is the
// scheduler's; this module only enforces a given set. Pure: no clock, threads or I/O.
// Thread-safety: a HoldConstraint is used by one Allocate call at a time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "allocator/policy.h"
#include "common/clock.h"

namespace draplane::allocator {

// The reason code of hold rejections in explanations (PolicyRejection::code).
inline constexpr std::string_view kHoldPolicyCode = "held";

// A published device, by driver, pool and device name (a pool name may contain '/', so the three
// are kept apart).
struct HeldDeviceId {
  std::string driver;
  std::string pool;
  std::string device;

  friend auto operator<=>(const HeldDeviceId&, const HeldDeviceId&) = default;
};

// The devices held for one starving Pod.
struct DeviceHold {
  std::string pod;       // "namespace/name"
  std::string pod_uid;   // the Pod the devices are held for
  int32_t priority = 0;  // its spec.priority: the band the hold protects against
  std::string node;      // the target node the devices are on
  std::string since;     // when the hold began (RFC 3339, as persisted on the Pod)
  Duration starving{0};  // how long the Pod has waited, as of this attempt
  std::vector<HeldDeviceId> devices;

  friend bool operator==(const DeviceHold&, const DeviceHold&) = default;
};

// "held for team-b/train since 2026-12-02T12:03:00Z (starving 2h14m)".
std::string HeldMessage(const DeviceHold& hold);

class HoldConstraint final : public PolicyConstraint {
 public:
  // `holds`: every hold in force (copied as needed); the attempt is for the Pod `pod_uid` at
  // `priority`. Only holds of other Pods at the same or a higher priority are enforced.
  HoldConstraint(const std::vector<DeviceHold>& holds, std::string_view pod_uid, int32_t priority);

  std::string_view name() const override { return kHoldPolicyCode; }
  std::optional<PolicyRejection> Add(const PolicyCandidate& candidate) override;
  void Remove(const PolicyCandidate& candidate) override;

  // True when no hold applies to this attempt: the caller may leave the constraint out (the
  // search then keeps its policy-free shortcuts).
  bool empty() const { return refused_.empty(); }

 private:
  struct Less {
    using is_transparent = void;
    // Both sides as string_views: clang with libstdc++ does not compare a tuple of strings with a
    // tuple of string_views.
    template <typename T>
    static std::tuple<std::string_view, std::string_view, std::string_view> Key(const T& d) {
      return {d.driver, d.pool, d.device};
    }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Key(a) < Key(b);
    }
  };
  struct DeviceView {
    std::string_view driver;
    std::string_view pool;
    std::string_view device;
  };

  // Every device this attempt may not take, with the rejection to give.
  std::map<HeldDeviceId, PolicyRejection, Less> refused_;
};

}  // namespace draplane::allocator
