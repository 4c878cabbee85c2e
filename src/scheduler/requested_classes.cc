#include "scheduler/requested_classes.h"

#include <algorithm>

#include "scheduler/plugins/dynamic_resources.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;

void ForEachRequestedClass(const rv1::ResourceClaim& claim,
                           const std::function<void(const RequestedClass&)>& fn) {
  for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
    if (r.exactly.has_value()) {
      fn({r.exactly->device_class_name, 0, r.exactly->allocation_mode, r.exactly->count});
    }
    for (size_t i = 0; i < r.first_available.size(); ++i) {
      const rv1::DeviceSubRequest& sub = r.first_available[i];
      fn({sub.device_class_name, i, sub.allocation_mode, sub.count});
    }
  }
}

PodClasses ClassesOfPod(const api::corev1::Pod& pod,
                        const std::function<const rv1::ResourceClaim*(std::string_view)>& find,
                        const rv1::ResourceClaim* extra) {
  PodClasses out;
  auto add = [&](const rv1::ResourceClaim& claim) {
    const bool allocated = claim.status.allocation.has_value();
    ForEachRequestedClass(claim, [&](const RequestedClass& c) {
      if (out.all.empty()) out.first = c.device_class;
      out.all.push_back(c.device_class);
      if (!allocated && c.tier == 0) out.preferred.push_back(c.device_class);
    });
  };
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName name = ClaimNameForPod(pod, entry);
    if (name.name.empty()) continue;
    if (const rv1::ResourceClaim* claim = find(name.name)) add(*claim);
  }
  if (extra != nullptr) add(*extra);
  for (std::vector<std::string>* v : {&out.all, &out.preferred}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return out;
}

}  // namespace draplane::scheduler
