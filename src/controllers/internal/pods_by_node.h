// The Pod informer index by spec.nodeName that the node lifecycle and taint eviction controllers
// share (upstream's nodeNameKeyIndex): registering it twice replaces it with the same function.
#pragma once

#include <string>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "client/informer.h"

namespace draplane::controllers::internal {

inline const std::string kPodsByNodeIndex = "spec.nodeName";

inline void AddPodsByNodeIndex(client::Informer<api::corev1::Pod>& pods) {
  pods.AddIndex(kPodsByNodeIndex, [](const api::corev1::Pod& p) {
    return p.spec.node_name.empty() ? std::vector<std::string>{}
                                    : std::vector<std::string>{p.spec.node_name};
  });
}

}  // namespace draplane::controllers::internal
