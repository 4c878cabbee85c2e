// Reading and editing manifests as JSON, for the simulator's loaders (private to sim).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

namespace draplane::sim::internal {

// The string at `key`, or "" when absent or not a string.
inline std::string Str(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

// The object or array at `key`, or null.
inline const boost::json::object* Obj(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}
inline const boost::json::array* Arr(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? &v->as_array() : nullptr;
}

// `metadata.<key>` as a string.
inline std::string MetaField(const boost::json::object& o, std::string_view key) {
  const boost::json::object* meta = Obj(o, "metadata");
  return meta == nullptr ? "" : Str(*meta, key);
}

// The object at `key`, created (replacing a non-object) when needed.
inline boost::json::object& EnsureObject(boost::json::object& o, std::string_view key) {
  boost::json::value& v = o[key];
  if (!v.is_object()) v = boost::json::object();
  return v.as_object();
}

}  // namespace draplane::sim::internal
