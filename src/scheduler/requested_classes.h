// The device classes a pending Pod's claims request, read once for the fair-share order, the
// queue's explanations (`draplane queue`, FailedScheduling messages), starvation holds and the
// fair-share placement preference (docs/design/fair-share.md §3, §4).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::scheduler {

// One device class a claim requests: an exact request's (tier 0), or a firstAvailable
// subrequest's (tier = its index, so 0 is the request's first choice).
struct RequestedClass {
  const std::string& device_class;
  size_t tier;
  const std::string& allocation_mode;
  std::optional<int64_t> count;
};

// Calls `fn` for each class of `claim`'s requests, in request and subrequest order.
void ForEachRequestedClass(const api::resourcev1::ResourceClaim& claim,
                           const std::function<void(const RequestedClass&)>& fn);

struct PodClasses {
  // Every class the Pod's claims name, sorted and unique: the fair-share domains it waits in.
  std::vector<std::string> all{};
  // The first choices of the claims not yet allocated (exact requests, first subrequests),
  // sorted and unique: what the Pod waits for before it falls back.
  std::vector<std::string> preferred{};
  // The first class of the first claim, in request order ("" for none): what a Pod's wait is
  // labelled with in metrics.
  std::string first{};
};

// `find` returns the Pod's claim of that name (in the Pod's namespace), or null when it does not
// exist yet. `extra`, when given, is one more claim of the Pod (the scheduler's claim for
// extended resources).
PodClasses ClassesOfPod(
    const api::corev1::Pod& pod,
    const std::function<const api::resourcev1::ResourceClaim*(std::string_view name)>& find,
    const api::resourcev1::ResourceClaim* extra = nullptr);

}  // namespace draplane::scheduler
