// Typed reads of a JSON object's members, for the rules that work on objects as JSON (a Pod's
// defaults and validation): the member when it has the type asked for, else nothing (internal).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <string_view>

namespace draplane::api::validation::internal {

inline const boost::json::object* FindObject(const boost::json::object& obj, std::string_view key) {
  const boost::json::value* v = obj.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

inline const boost::json::array* FindArray(const boost::json::object& obj, std::string_view key) {
  const boost::json::value* v = obj.if_contains(key);
  return v != nullptr && v->is_array() ? &v->get_array() : nullptr;
}

inline std::string_view GetString(const boost::json::object& obj, std::string_view key) {
  const boost::json::value* v = obj.if_contains(key);
  if (v == nullptr || !v->is_string()) return {};
  return std::string_view(v->get_string().data(), v->get_string().size());
}

}  // namespace draplane::api::validation::internal
