#include "agent/health.h"

namespace draplane::agent {

std::string UnhealthyTaintKey(std::string_view driver) {
  return std::string(driver) + "/unhealthy";
}

std::optional<api::resourcev1::DeviceTaint> HealthTaint(std::string_view driver,
                                                        const DeviceHealth& health) {
  if (health.healthy) return std::nullopt;
  api::resourcev1::DeviceTaint taint;
  taint.key = UnhealthyTaintKey(driver);
  taint.effect =
      health.taint_effect.empty() ? std::string(kDefaultUnhealthyEffect) : health.taint_effect;
  // Slices store whole seconds; truncating here keeps desired and stored slices equal
  // (upstream resourceslice controller, roundTaintTimeAdded).
  if (health.since) taint.time_added = api::Time::FromTimestamp(*health.since);
  return taint;
}

api::resourcev1::Device PublishedDevice(std::string_view driver, const DiscoveredDevice& device) {
  api::resourcev1::Device out = device.device;
  if (std::optional<api::resourcev1::DeviceTaint> taint = HealthTaint(driver, device.health)) {
    out.taints.push_back(std::move(*taint));
  }
  return out;
}

}  // namespace draplane::agent
