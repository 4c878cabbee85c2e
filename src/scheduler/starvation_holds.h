// Starvation holds in the scheduler (docs/design/fair-share.md §4): devices kept free on one
// target node for a Pod that waited past its DeviceSharingPolicy's starvation threshold, so that
// work-conserving backfill cannot take, one by one, every device it needs.
//
//   target   after a failed attempt of a starving Pod without a hold: among the nodes with enough
//            devices of each class the Pod needs, the one where it lacks the fewest (free devices
//            counted); ties by node name. A Pod no node can ever fit gets none, nor does one its
//            Allocation-mode quota has no room for (Scheduler::QuotaHasRoomFor).
//   needs    per request of its unallocated claims: the class and count of an `exactly` request
//            (All: every device of the class on the node), the first subrequest of a
//            firstAvailable one (the tier it prefers).
//   growth   before every attempt (Grow): each hold drops its devices something else now holds (a
//            higher band may take them) and takes the free devices of its classes on its node, up
//            to its needs; the Pod that started waiting first takes first. Held devices are free in
//            the ledger; only the allocator's HoldConstraint (allocator/hold.h) keeps them from
//            other Pods.
//   release  on bind or deletion (Release), or MaxHold after the hold became complete without the
//            Pod binding (Expire): the Pod then gets no new target for another MaxHold, so two
//            starving Pods cannot pin a node between them forever.
//   persisted as the Pod annotation draplane.dev/held-devices (AnnotationOf / ParseAnnotation),
//            which a restarted scheduler reads back (Restore).
//   overtakes an allocation to another Pod of the same or a lower band that entered the queue
//            after the starving Pod, of a device of a class the starving Pod needs on its target
//            node, while its hold is incomplete (Overtakes): with holds enforced this stays 0.
//
// Time: monotonic readings of the scheduler's clock, and wall time for the persisted `since`.
// Thread-safety: not thread-safe; owned by the scheduler's loop thread (as the ledger it reads).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/hold.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/device_ledger.h"

namespace draplane::scheduler {

// The annotation a starving Pod's hold is persisted in.
inline constexpr std::string_view kHeldDevicesAnnotation = "draplane.dev/held-devices";

struct HoldNeed {
  std::string device_class;
  int64_t count = 1;  // kAllDevices: every device of the class on the node
  static constexpr int64_t kAllDevices = -1;

  friend bool operator==(const HoldNeed&, const HoldNeed&) = default;
};

struct StarvationHold {
  std::string pod;  // namespace/name
  std::string uid;
  int32_t priority = 0;
  std::string node;
  Timestamp since{};     // wall: when the hold began (persisted)
  Duration enqueued{0};  // monotonic: when the Pod first entered the queue
  std::vector<HoldNeed> needs;
  std::vector<allocator::HeldDeviceId> devices{};  // sorted
  std::optional<Duration> complete_since{};        // monotonic: every need held since then
};

class StarvationHolds {
 public:
  // `ledger` must outlive this.
  explicit StarvationHolds(const DeviceLedger& ledger) : ledger_(&ledger) {}

  // The node a Pod needing `needs` should wait on among `nodes` (see the header); nullopt when
  // none has enough devices of every needed class.
  std::optional<std::string> PickTarget(const std::vector<std::string>& nodes,
                                        const std::vector<HoldNeed>& needs) const;

  bool Has(std::string_view uid) const { return holds_.contains(uid); }
  // Whether the Pod's last hold ended by MaxHold less than MaxHold ago.
  bool CoolingDown(std::string_view uid, Duration now) const;
  // A new hold (its node set; devices are taken by the next Grow) or one restored at start.
  void Start(StarvationHold hold);
  // See the header. Returns the uids whose held devices changed.
  std::vector<std::string> Grow(Duration now);
  // Complete holds older than `max_hold`: removed, and their Pods cool down until now +
  // `max_hold`.
  std::vector<StarvationHold> Expire(Duration now, Duration max_hold);
  // The Pod bound or went away: its hold, if it had one.
  std::optional<StarvationHold> Release(std::string_view uid);

  const std::map<std::string, StarvationHold, std::less<>>& holds() const { return holds_; }
  // The holds for the allocator's HoldConstraint, `starving` measured at `now`.
  std::vector<allocator::DeviceHold> InForce(Duration now) const;
  // The earliest monotonic reading at which Expire has work: a complete hold reaching
  // `max_hold`, or a cooldown ending (nullopt: none).
  std::optional<Duration> NextExpiry(Duration max_hold) const;

  // Devices held times seconds since the previous call (the holds' price), by the holds' first
  // needed class.
  std::map<std::string, double> TakeHeldDeviceSeconds(Duration now);
  // How many starving Pods an allocation overtakes (see the header): `devices` with their
  // classes, given on `node` to a Pod of `priority` that first entered the queue at `enqueued`.
  struct Given {
    std::string device_class;
    allocator::HeldDeviceId device;
  };
  std::vector<const StarvationHold*> Overtaken(std::string_view pod_uid, int32_t priority,
                                               Duration enqueued, std::string_view node,
                                               const std::vector<Given>& devices) const;

  // The annotation value of a hold: {"node":…,"since":…,"needs":[{"deviceClass":…,"count":…}],
  // "devices":[{"driver":…,"pool":…,"device":…}]}.
  static std::string AnnotationOf(const StarvationHold& hold);
  // A hold read back from the annotation (pod, uid, priority and enqueued are the caller's).
  static StatusOr<StarvationHold> ParseAnnotation(std::string_view text);

 private:
  // How many devices `need` wants on `node` (All: the node's devices of the class).
  int64_t Wanted(const HoldNeed& need, std::string_view node) const;

  const DeviceLedger* ledger_;
  std::map<std::string, StarvationHold, std::less<>> holds_;  // by pod uid
  std::map<std::string, Duration, std::less<>> cooldown_;     // pod uid -> until
  Duration accounted_{0};
  bool accounting_ = false;
  // Grow's answer is a function of the holds and the ledger: it is not computed again (before
  // every attempt) until one of them changed. `grown_` false: the holds changed since.
  bool grown_ = false;
  uint64_t grown_at_ = 0;  // the ledger's changes() then
};

}  // namespace draplane::scheduler
