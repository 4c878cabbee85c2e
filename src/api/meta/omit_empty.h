// ObjectMeta's `omitempty` lists and maps, which every store applies alike (the API server's REST
// handlers and the in-memory API): upstream's Go types never serialize an empty `finalizers`,
// `ownerReferences`, `labels` or `annotations`, so a writer that removes the last finalizer
// leaves no `finalizers: []` behind for clients to tell apart from an absent one. This is the
// rule on JSON objects; the typed codec has it for the same fields (`omit_empty` in
// src/api/schema/meta_v1.yaml, and a ResourceClaim's status.reservedFor and status.devices).
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/object.hpp>
#include <string_view>

namespace draplane::api {

// Removes the empty omitempty lists and maps of `object`'s metadata.
inline void OmitEmptyMetadata(boost::json::object& object) {
  boost::json::value* meta_value = object.if_contains("metadata");
  if (meta_value == nullptr || !meta_value->is_object()) return;
  boost::json::object& meta = meta_value->get_object();
  for (std::string_view key : {"finalizers", "ownerReferences", "labels", "annotations"}) {
    auto it = meta.find(key);
    if (it == meta.end()) continue;
    const boost::json::value& v = it->value();
    if ((v.is_array() && v.get_array().empty()) || (v.is_object() && v.get_object().empty())) {
      meta.erase(it);
    }
  }
}

}  // namespace draplane::api
