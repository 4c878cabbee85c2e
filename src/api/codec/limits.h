// Limits every parser of src/api/codec applies, so that garbage input fails with a clear error
// instead of exhausting memory or the stack.
//
// Thread-safety: plain values.
#pragma once

#include <cstddef>

namespace draplane::api::codec {

// The deepest nesting of YAML sequences / mappings ParseYaml accepts, whatever
// ParseLimits::max_depth says: yaml-cpp's parser gives up at 500 nested nodes.
inline constexpr size_t kMaxYamlDepth = 400;

struct ParseLimits {
  // Largest input accepted, in bytes. A 10,000-node ResourceSlice dump is well below this.
  size_t max_bytes = size_t{1} << 30;
  // Deepest nesting of arrays / objects (JSON) or sequences / mappings (YAML) accepted. Kubernetes
  // objects nest a few dozen levels at most; the limit keeps recursive consumers (yaml-cpp's
  // parser, encoders) far from the end of the stack. YAML is held to at most kMaxYamlDepth.
  size_t max_depth = 1000;
  // YAML only: the most JSON values alias expansion (`*anchor`) may produce in one document
  // beyond the document's own size, which stops "billion laughs" inputs.
  size_t max_alias_expansion = size_t{1} << 20;
};

}  // namespace draplane::api::codec
