// Differential fuzzing of the streaming manifest reader (api/codec/stream.h) against
// ParseManifest: for any bytes both must accept or reject alike and deliver the same objects with
// the same positions. The one documented difference is skipped: a top-level `items` array whose
// document turns out not to be a List after the items were streamed.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "api/codec/manifest.h"
#include "api/codec/stream.h"
#include "common/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using draplane::api::codec::ManifestObject;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto parsed = draplane::api::codec::ParseManifest(text);
  std::istringstream in(text);
  std::vector<ManifestObject> streamed;
  const draplane::Status status =
      draplane::api::codec::StreamManifest(in, {}, [&](ManifestObject& object) {
        streamed.push_back(std::move(object));
        return draplane::Status::Ok();
      });
  if (!status.ok() &&
      status.message().find("a top-level items array needs a List kind") != std::string::npos) {
    return 0;
  }
  DRAPLANE_CHECK_MSG(
      status.ok() == parsed.ok(),
      (std::string(status.message()) + " vs " + std::string(parsed.status().message())).c_str());
  if (!status.ok()) return 0;
  DRAPLANE_CHECK(streamed.size() == parsed->size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    DRAPLANE_CHECK(streamed[i].position.Label() == (*parsed)[i].position.Label());
    DRAPLANE_CHECK(streamed[i].position.line == (*parsed)[i].position.line);
    DRAPLANE_CHECK(streamed[i].value == (*parsed)[i].value);
  }
  return 0;
}
