// The `omitempty` lists and maps upstream's Go types never serialize empty, which every store
// applies alike (the API server's REST handlers and the in-memory API): ObjectMeta's
// `finalizers`, `ownerReferences`, `labels` and `annotations`, and a ResourceClaim's
// `status.reservedFor` and `status.devices`. A writer that removes the last finalizer or
// consumer thus leaves no `finalizers: []` behind for clients to tell apart from an absent one.
// This is the rule on JSON objects; the typed codec has it for the same fields (`omit_empty` in
// src/api/schema/meta_v1.yaml and resource_v1.yaml).
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/object.hpp>
#include <initializer_list>
#include <string_view>

namespace draplane::api {

// Removes the empty omitempty lists and maps above from `object` (one object, not a List's items).
inline void OmitEmptyFields(boost::json::object& object) {
  auto omit = [](boost::json::value* parent, std::initializer_list<std::string_view> keys) {
    if (parent == nullptr || !parent->is_object()) return;
    boost::json::object& o = parent->get_object();
    for (std::string_view key : keys) {
      auto it = o.find(key);
      if (it == o.end()) continue;
      const boost::json::value& v = it->value();
      if ((v.is_array() && v.get_array().empty()) || (v.is_object() && v.get_object().empty())) {
        o.erase(it);
      }
    }
  };
  omit(object.if_contains("metadata"), {"finalizers", "ownerReferences", "labels", "annotations"});
  const boost::json::value* kind = object.if_contains("kind");
  if (kind != nullptr && kind->is_string() && kind->get_string() == "ResourceClaim") {
    omit(object.if_contains("status"), {"reservedFor", "devices"});
  }
}

}  // namespace draplane::api
