// Rendering of bad values the way Kubernetes' field errors print them (internal to the
// validation of api/).
//
// Go's field.Error prints strings quoted, numbers and booleans bare, and any other value as its
// JSON encoding (`null` for nil slices and pointers). Composite values of the object model are
// rendered through the generated codecs, i.e. as their v1 JSON.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"

namespace draplane::api::validation::internal {

// The compact JSON text of `value`.
inline std::string RenderJson(const boost::json::value& value) {
  return boost::json::serialize(value);
}

// A list of strings as JSON; `null` when the list is absent (`present` false) and empty.
inline std::string RenderStringList(const std::vector<std::string>& values, bool present) {
  if (values.empty() && !present) return "null";
  boost::json::array out;
  for (const std::string& v : values) out.emplace_back(v);
  return boost::json::serialize(out);
}

// A quantity as upstream passes it: its canonical String(), quoted.
std::string RenderQuantity(const Quantity& q);

inline constexpr std::string_view kNull = "null";

}  // namespace draplane::api::validation::internal
