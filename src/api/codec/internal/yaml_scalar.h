// go-yaml v2's scalar resolution (resolve.go, as sigs.k8s.io/yaml uses it), shared by the YAML
// reader (yaml_read.cc: plain scalars and map keys to JSON) and the writer (yaml_write.cc:
// strings that would read back as another type are quoted).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace draplane::api::codec::internal {

// A plain scalar as go-yaml v2 resolves it.
struct Resolved {
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kBigInt, kString };
  Kind kind = Kind::kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;            // also the approximate value of kBigInt
  bool timestamp = false;  // a kString that go-yaml resolves as a timestamp
};

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// go-yaml v2 resolve("", in) for a plain scalar.
Resolved ResolvePlain(std::string_view in);

// Returns the JSON for a resolved scalar, or an error message.
std::optional<std::string> ResolvedToJson(const Resolved& r, std::string_view text,
                                          const boost::json::storage_ptr& sp,
                                          boost::json::value* out);

// strconv.FormatFloat(f, 'g', -1, 32), as sigs.k8s.io/yaml formats float map keys.
std::string FormatFloat32G(double value);

}  // namespace draplane::api::codec::internal
