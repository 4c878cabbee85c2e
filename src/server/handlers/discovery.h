// Discovery documents, shaped as kube-apiserver serves them (api/discovery/*.json upstream):
//   /version                     version.Info (see kServedKubernetesVersion)
//   /api                         APIVersions, or the aggregated APIGroupDiscoveryList of the
//                                core group when the client asks for it
//   /apis                        APIGroupList, or the aggregated list of the named groups
//   /apis/<group>                APIGroup
//   /api/v1, /apis/<g>/<v>       APIResourceList
// Aggregated discovery (apidiscovery.k8s.io v2, and v2beta1 for kubectl 1.27-1.29) is chosen
// by the Accept header exactly as client-go asks for it:
//   application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...,application/json
//
// Thread-safety: pure functions over the immutable registry.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/handlers/registry.h"

namespace draplane::server::handlers {

// The Kubernetes version the server reports. kubectl picks its own behaviour (and the
// /usr/bin/kubectl dispatcher picks a kubectl binary) from it; draplane serves the API of
// Kubernetes 1.33+ (resource.k8s.io/v1 is 1.34's), and 1.33 is the newest kubectl installed
// here, so that is what it reports (docs/design/server.md).
inline constexpr std::string_view kServedKubernetesMajor = "1";
inline constexpr std::string_view kServedKubernetesMinor = "33";
inline constexpr std::string_view kServedKubernetesGitVersion = "v1.33.0";

// The body of /version; `draplane_version` goes into gitVersion's build metadata.
std::string VersionJson(std::string_view draplane_version);

struct DiscoveryDocument {
  std::string content_type;
  std::string body;
};

// The aggregated discovery media type the Accept header asks for (the first acceptable of
// apidiscovery.k8s.io v2 / v2beta1), or std::nullopt for legacy discovery.
std::optional<std::string> AggregatedVersion(std::string_view accept);

// /api (`aggregated_version`: "v2", "v2beta1", or nullopt for APIVersions).
DiscoveryDocument CoreGroupDiscovery(const Registry& registry,
                                     const std::optional<std::string>& aggregated_version,
                                     std::string_view server_address);
// /apis
DiscoveryDocument GroupsDiscovery(const Registry& registry,
                                  const std::optional<std::string>& aggregated_version);
// /apis/<group>; std::nullopt when the group is not served.
std::optional<std::string> GroupDiscovery(const Registry& registry, std::string_view group);
// /api/v1 and /apis/<group>/<version>; std::nullopt when not served.
std::optional<std::string> ResourceListDiscovery(const Registry& registry, std::string_view group,
                                                 std::string_view version);

}  // namespace draplane::server::handlers
