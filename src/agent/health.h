// Device health as device taints.
//
// A driver reports health per device (driver.h DeviceHealth); the agent publishes an unhealthy
// device with the taint `<driver>/unhealthy` (value empty, effect from the health report — the
// profile's fault or the driver's policy — else NoSchedule, timeAdded when the device turned
// unhealthy) and drops the taint when the device recovers. The scheduler then keeps new claims
// off it (NoSchedule / NoExecute), and the device taint eviction controller evicts Pods using a
// NoExecute-tainted device after their toleration seconds (controllers/devicetaint/).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/driver.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::agent {

inline constexpr std::string_view kDefaultUnhealthyEffect = "NoSchedule";

// "<driver>/unhealthy".
std::string UnhealthyTaintKey(std::string_view driver);

// The taint for `health`, or nullopt for a healthy device.
std::optional<api::resourcev1::DeviceTaint> HealthTaint(std::string_view driver,
                                                        const DeviceHealth& health);

// The published form of a discovered device: its device with the health taint added.
api::resourcev1::Device PublishedDevice(std::string_view driver, const DiscoveredDevice& device);

}  // namespace draplane::agent
