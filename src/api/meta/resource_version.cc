#include "api/meta/resource_version.h"

#include <charconv>
#include <string>

namespace draplane::api {

StatusOr<int64_t> ParseResourceVersion(std::string_view text) {
  if (text.empty()) return int64_t{0};
  int64_t version = 0;
  // from_chars reports values beyond int64_t as result_out_of_range; it accepts a leading '-',
  // which the sign check refuses.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size() || version < 0) {
    return InvalidArgumentError("invalid resource version \"" + std::string(text) + "\"");
  }
  return version;
}

}  // namespace draplane::api
