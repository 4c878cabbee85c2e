#include "allocator/hold.h"

#include "api/meta/duration.h"

namespace draplane::allocator {

std::string HeldMessage(const DeviceHold& hold) {
  std::string out = "held for " + hold.pod;
  if (!hold.since.empty()) out += " since " + hold.since;
  // Whole seconds: the message is for people.
  out += " (starving " +
         api::FormatDuration(std::chrono::floor<std::chrono::seconds>(hold.starving)) + ")";
  return out;
}

HoldConstraint::HoldConstraint(const std::vector<DeviceHold>& holds, std::string_view pod_uid,
                               int32_t priority) {
  for (const DeviceHold& hold : holds) {
    // A higher band takes what a lower one holds; the Pod itself takes its own devices.
    if (hold.pod_uid == pod_uid || hold.priority < priority) continue;
    PolicyRejection rejection{std::string(kHoldPolicyCode), HeldMessage(hold)};
    for (const HeldDeviceId& device : hold.devices) refused_.emplace(device, rejection);
  }
}

std::optional<PolicyRejection> HoldConstraint::Add(const PolicyCandidate& candidate) {
  auto it = refused_.find(DeviceView{candidate.driver, candidate.pool, candidate.device});
  if (it == refused_.end()) return std::nullopt;
  return it->second;
}

void HoldConstraint::Remove(const PolicyCandidate& candidate) {
  (void)candidate;  // refusals only: nothing accepted is tracked
}

}  // namespace draplane::allocator
