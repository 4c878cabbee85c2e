// Opaque device configuration (claim and class `config[].opaque.parameters`) that draplane's
// drivers understand, private to the agent module.
//
//   - NVIDIA's GpuConfig / MigDeviceConfig (apiVersion resource.nvidia.com/v1beta1), for NVIDIA
//     GPUs (env prefix "NVIDIA", whatever the driver name): `sharing.strategy` TimeSlicing or MPS
//     becomes
//     `<ENV_PREFIX>_SHARING_STRATEGY=<strategy>`;
//   - draplane's DeviceConfig (apiVersion draplane.dev/v1alpha1): `env: {NAME: value}` adds
//     environment variables (names must be C identifiers).
// Anything else is InvalidArgument (terminal), as a real driver refuses configuration it does not
// know.
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "agent/driver.h"
#include "common/status.h"

namespace draplane::agent::internal {

// Applies `request.config` in order, appending to `out->edits.env`.
Status ApplyOpaqueConfig(const DevicePrepareRequest& request, std::string_view env_prefix,
                         PreparedDevice* out);

}  // namespace draplane::agent::internal
