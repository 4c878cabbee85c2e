#include "api/resource_pool.h"

#include <algorithm>

namespace draplane::api {

const resourcev1::Device* FindPublishedDevice(
    const std::vector<const resourcev1::ResourceSlice*>& pool_slices, std::string_view name) {
  int64_t generation = 0;
  for (const resourcev1::ResourceSlice* s : pool_slices) {
    generation = std::max(generation, s->spec.pool.generation);
  }
  for (const resourcev1::ResourceSlice* s : pool_slices) {
    if (s->spec.pool.generation != generation) continue;
    for (const resourcev1::Device& d : s->spec.devices) {
      if (d.name == name) return &d;
    }
  }
  return nullptr;
}

}  // namespace draplane::api
