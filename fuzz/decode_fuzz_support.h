// Shared checks of the JSON and YAML decode fuzz targets (json_decode_fuzz.cc,
// yaml_decode_fuzz.cc). Every violation aborts through DRAPLANE_CHECK so libFuzzer records the
// input.
#pragma once

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstddef>
#include <string>

#include "api/codec/json.h"
#include "api/codec/yaml.h"
#include "api/meta/omit_empty.h"
#include "api/object.h"
#include "common/check.h"

namespace draplane::fuzz {

// JSON equality where numbers compare by value: text round trips turn integral doubles into
// integers (1500.0 -> "1500"), as Go's encoders do.
inline bool SameJson(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_double() || b.is_double()) {
      return a.to_number<double>() == b.to_number<double>();
    }
    if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
    if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
    return false;  // int64 vs uint64: Boost keeps non-negative int64 values as int64
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_array()) {
    const auto& x = a.get_array();
    const auto& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!SameJson(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    const auto& x = a.get_object();
    const auto& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& kv : x) {
      const boost::json::value* other = y.if_contains(kv.key());
      if (other == nullptr || !SameJson(kv.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

// Nesting depth of arrays / objects, as ParseLimits counts it (a scalar is 0, `[]` is 1).
inline size_t Depth(const boost::json::value& v) {
  size_t deepest = 0;
  if (v.is_array()) {
    for (const boost::json::value& e : v.get_array()) deepest = std::max(deepest, Depth(e));
    return deepest + 1;
  }
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) deepest = std::max(deepest, Depth(kv.value()));
    return deepest + 1;
  }
  return 0;
}

// `doc` as the object model writes it back: the empty omitempty lists and maps upstream never
// writes are gone (api/meta/omit_empty.h), in the document and in a List's items.
inline boost::json::value WithoutOmittedEmpties(boost::json::value doc) {
  if (!doc.is_object()) return doc;
  api::OmitEmptyFields(doc.get_object());
  if (boost::json::value* items = doc.get_object().if_contains("items");
      items && items->is_array()) {
    for (boost::json::value& item : items->get_array()) {
      if (item.is_object()) api::OmitEmptyFields(item.get_object());
    }
  }
  return doc;
}

// Decodes one document through the object model and checks:
//   1. decode -> encode is the identity when decoding reported no field error, but for the empty
//      omitempty lists and maps it drops;
//   2. the encoded value survives JSON text -> JSON and YAML text -> JSON unchanged (YAML holds
//      at most api::codec::kMaxYamlDepth levels; deeper values must fail with that message);
//   3. the encoding of a typed object decodes without errors, to an equal object when the
//      first decode was clean.
inline void CheckDocument(const boost::json::value& doc) {
  api::FieldErrorList errors;
  const api::Object object = api::DecodeObject(doc, &errors);
  const boost::json::value encoded = api::EncodeObject(object);
  if (errors.empty()) DRAPLANE_CHECK(encoded == WithoutOmittedEmpties(doc));

  const StatusOr<boost::json::value> from_json =
      api::codec::ParseJson(api::codec::WriteJson(encoded));
  DRAPLANE_CHECK(from_json.ok());
  DRAPLANE_CHECK(SameJson(*from_json, encoded));

  const std::string yaml = api::codec::WriteYaml(encoded);
  const StatusOr<std::vector<api::codec::YamlDocument>> from_yaml = api::codec::ParseYaml(yaml);
  if (Depth(encoded) > api::codec::kMaxYamlDepth) {
    DRAPLANE_CHECK(!from_yaml.ok());
    DRAPLANE_CHECK(from_yaml.status().message().find("nesting deeper than") != std::string::npos);
  } else {
    DRAPLANE_CHECK_MSG(from_yaml.ok(),
                       (std::string(from_yaml.status().message()) + "\n" + yaml).c_str());
    DRAPLANE_CHECK(from_yaml->size() == 1);
    DRAPLANE_CHECK_MSG(SameJson((*from_yaml)[0].value, encoded), yaml.c_str());
  }

  if (std::holds_alternative<api::Unstructured>(object)) return;
  api::FieldErrorList again_errors;
  const api::Object again = api::DecodeObject(encoded, &again_errors);
  DRAPLANE_CHECK_MSG(again_errors.empty(), again_errors[0].ToString().c_str());
  if (errors.empty()) DRAPLANE_CHECK(again == object);
}

}  // namespace draplane::fuzz
