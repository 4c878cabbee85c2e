// Device attribute values and names the agent's drivers publish (nvml, sysfs, profile), private
// to the agent.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "api/gen/resource_v1_types.h"

namespace draplane::agent::internal {

// The standard attribute naming the PCIe root complex a device hangs off.
inline constexpr std::string_view kPcieRootAttribute = "resource.kubernetes.io/pcieRoot";

inline api::resourcev1::DeviceAttribute StringAttr(std::string value) {
  api::resourcev1::DeviceAttribute a;
  a.string_value = std::move(value);
  return a;
}

inline api::resourcev1::DeviceAttribute VersionAttr(std::string value) {
  api::resourcev1::DeviceAttribute a;
  a.version_value = std::move(value);
  return a;
}

inline api::resourcev1::DeviceAttribute BoolAttr(bool value) {
  api::resourcev1::DeviceAttribute a;
  a.bool_value = value;
  return a;
}

}  // namespace draplane::agent::internal
