// Reading and editing manifests as JSON, for the simulator's loaders (private to sim).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// What a Pod manifest's `spec.resourceClaims[index]` names: a ResourceClaimTemplate
// (`field` resourceClaimTemplateName) or a ResourceClaim (resourceClaimName).
struct PodClaimSource {
  size_t index = 0;
  std::string_view field;
  std::string_view kind;
  std::string name;
};
inline std::vector<PodClaimSource> PodClaimSources(const boost::json::object& pod) {
  std::vector<PodClaimSource> out;
  const boost::json::object* spec = Obj(pod, "spec");
  const boost::json::array* entries = spec != nullptr ? Arr(*spec, "resourceClaims") : nullptr;
  if (entries == nullptr) return out;
  for (size_t i = 0; i < entries->size(); ++i) {
    if (!(*entries)[i].is_object()) continue;
    const boost::json::object& entry = (*entries)[i].as_object();
    for (const auto& [field, kind] :
         {std::pair<std::string_view, std::string_view>{"resourceClaimTemplateName",
                                                        "ResourceClaimTemplate"},
          std::pair<std::string_view, std::string_view>{"resourceClaimName", "ResourceClaim"}}) {
      if (std::string name = Str(entry, field); !name.empty()) {
        out.push_back({i, field, kind, std::move(name)});
      }
    }
  }
  return out;
}

}  // namespace draplane::sim::internal
