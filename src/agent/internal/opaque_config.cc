#include "agent/internal/opaque_config.h"

#include <boost/json.hpp>

#include "api/validation/names.h"

namespace draplane::agent::internal {

Status ApplyOpaqueConfig(const DevicePrepareRequest& request, std::string_view env_prefix,
                         PreparedDevice* out) {
  for (const api::RawJson* raw : request.config) {
    if (raw == nullptr || !raw->has_value()) continue;
    const boost::json::value& v = raw->value();
    const boost::json::object* o = v.if_object();
    auto str = [&](std::string_view key) -> std::string {
      if (o == nullptr) return "";
      const boost::json::value* f = o->if_contains(key);
      return f != nullptr && f->is_string() ? std::string(f->as_string()) : "";
    };
    const std::string api_version = str("apiVersion");
    const std::string kind = str("kind");
    if (api_version == "resource.nvidia.com/v1beta1" &&
        (kind == "GpuConfig" || kind == "MigDeviceConfig") && env_prefix == "NVIDIA") {
      const boost::json::value* sharing = o->if_contains("sharing");
      if (sharing != nullptr && sharing->is_object()) {
        const boost::json::value* strategy = sharing->as_object().if_contains("strategy");
        if (strategy == nullptr || !strategy->is_string() ||
            (strategy->as_string() != "TimeSlicing" && strategy->as_string() != "MPS")) {
          return InvalidArgumentError(kind + ": sharing.strategy must be TimeSlicing or MPS");
        }
        out->edits.env.push_back(std::string(env_prefix) +
                                 "_SHARING_STRATEGY=" + std::string(strategy->as_string()));
      }
      continue;
    }
    if (api_version == "draplane.dev/v1alpha1" && kind == "DeviceConfig") {
      const boost::json::value* env = o->if_contains("env");
      if (env != nullptr) {
        if (!env->is_object()) return InvalidArgumentError("DeviceConfig: env must be a map");
        for (const auto& [name, value] : env->as_object()) {
          if (!api::validation::IsCIdentifier(name).empty() || !value.is_string()) {
            return InvalidArgumentError("DeviceConfig: env." + std::string(name) +
                                        " must be a C identifier with a string value");
          }
          out->edits.env.push_back(std::string(name) + "=" + std::string(value.as_string()));
        }
      }
      continue;
    }
    // Named as a GroupVersionKind prints ("gpu.example.com/v1, Kind=GpuConfig"); parameters
    // without apiVersion or kind are said to lack them.
    if (api_version.empty() || kind.empty()) {
      return InvalidArgumentError(
          "opaque configuration for driver " + request.driver + " without " +
          (api_version.empty() && kind.empty() ? std::string("apiVersion and kind")
           : api_version.empty()               ? "apiVersion (kind " + kind + ")"
                                               : "kind (apiVersion " + api_version + ")") +
          ": the driver cannot tell what it configures");
    }
    return InvalidArgumentError("unsupported opaque configuration \"" + api_version +
                                ", Kind=" + kind + "\" for driver " + request.driver);
  }
  return Status::Ok();
}

}  // namespace draplane::agent::internal
