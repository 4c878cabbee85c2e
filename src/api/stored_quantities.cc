#include "api/stored_quantities.h"

#include <boost/json.hpp>
#include <initializer_list>
#include <string_view>

#include "api/meta/codec_support.h"
#include "api/quantity.h"

namespace draplane::api {

namespace {

boost::json::object* ObjectAt(boost::json::object& parent, std::string_view key) {
  auto it = parent.find(key);
  return it != parent.end() ? it->value().if_object() : nullptr;
}

void CanonicalizeValue(boost::json::value& value) {
  if (!value.is_string() && !value.is_number()) return;
  Quantity q;
  internal::DecodeContext ctx(nullptr, DecodeOptions{.canonical_quantities = true});
  internal::DecodeQuantity(value, internal::Path{}, ctx, &q);
  if (ctx.error_count() == 0) value = internal::EncodeQuantity(q, value.storage());
}

void CanonicalizeMap(boost::json::object& parent, std::string_view key) {
  boost::json::object* map = ObjectAt(parent, key);
  if (map == nullptr) return;
  for (auto& kv : *map) CanonicalizeValue(kv.value());
}

// A ResourceRequirements: limits and requests.
void CanonicalizeRequirements(boost::json::object& parent, std::string_view key) {
  boost::json::object* requirements = ObjectAt(parent, key);
  if (requirements == nullptr) return;
  CanonicalizeMap(*requirements, "limits");
  CanonicalizeMap(*requirements, "requests");
}

template <typename Each>
void ForEachObjectIn(boost::json::object& parent, std::string_view key, Each each) {
  auto it = parent.find(key);
  if (it == parent.end() || !it->value().is_array()) return;
  for (boost::json::value& item : it->value().get_array()) {
    if (boost::json::object* o = item.if_object()) each(*o);
  }
}

// A resourceFieldRef's divisor, under `parent` (an env var's valueFrom, a downward API item).
void CanonicalizeDivisor(boost::json::object& parent) {
  boost::json::object* ref = ObjectAt(parent, "resourceFieldRef");
  if (ref == nullptr) return;
  if (auto it = ref->find("divisor"); it != ref->end()) CanonicalizeValue(it->value());
}

void CanonicalizeDownwardApi(boost::json::object& parent) {
  boost::json::object* downward = ObjectAt(parent, "downwardAPI");
  if (downward == nullptr) return;
  ForEachObjectIn(*downward, "items", CanonicalizeDivisor);
}

}  // namespace

void CanonicalizePodSpecQuantities(boost::json::object& spec) {
  for (std::string_view list : {"containers", "initContainers", "ephemeralContainers"}) {
    ForEachObjectIn(spec, list, [](boost::json::object& c) {
      CanonicalizeRequirements(c, "resources");
      ForEachObjectIn(c, "env", [](boost::json::object& env) {
        if (boost::json::object* from = ObjectAt(env, "valueFrom")) CanonicalizeDivisor(*from);
      });
    });
  }
  CanonicalizeMap(spec, "overhead");
  CanonicalizeRequirements(spec, "resources");
  ForEachObjectIn(spec, "volumes", [](boost::json::object& volume) {
    if (boost::json::object* empty_dir = ObjectAt(volume, "emptyDir")) {
      if (auto it = empty_dir->find("sizeLimit"); it != empty_dir->end()) {
        CanonicalizeValue(it->value());
      }
    }
    CanonicalizeDownwardApi(volume);
    if (boost::json::object* projected = ObjectAt(volume, "projected")) {
      ForEachObjectIn(*projected, "sources", CanonicalizeDownwardApi);
    }
    boost::json::object* ephemeral = ObjectAt(volume, "ephemeral");
    boost::json::object* claim = ephemeral ? ObjectAt(*ephemeral, "volumeClaimTemplate") : nullptr;
    boost::json::object* claim_spec = claim ? ObjectAt(*claim, "spec") : nullptr;
    if (claim_spec != nullptr) CanonicalizeRequirements(*claim_spec, "resources");
  });
}

void CanonicalizePodQuantities(boost::json::object& pod) {
  if (boost::json::object* spec = ObjectAt(pod, "spec")) CanonicalizePodSpecQuantities(*spec);
  boost::json::object* status = ObjectAt(pod, "status");
  if (status == nullptr) return;
  for (std::string_view list :
       {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
    ForEachObjectIn(*status, list, [](boost::json::object& s) {
      CanonicalizeMap(s, "allocatedResources");
      CanonicalizeRequirements(s, "resources");
    });
  }
}

void CanonicalizeNodeQuantities(boost::json::object& node) {
  boost::json::object* status = ObjectAt(node, "status");
  if (status == nullptr) return;
  CanonicalizeMap(*status, "capacity");
  CanonicalizeMap(*status, "allocatable");
}

}  // namespace draplane::api
