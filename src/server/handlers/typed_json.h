// Decoding a request's JSON object through the generated codec of a kind and writing the typed
// (defaulted) object back, shared by the strategies of every typed kind (TypedStrategy,
// strategies_internal.h).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <utility>

#include "api/field_error.h"
#include "api/meta/decode_options.h"
#include "server/handlers/json_util.h"

namespace draplane::server::handlers {

// Decodes `obj` through the generated codec of T (found by argument-dependent lookup). The codec
// reads a boost::json::value: a mutable object is moved into one and back (constant time, same
// storage) instead of being copied.
// Quantities are decoded as kube-apiserver keeps them unless `options` say otherwise
// (DecodeOptions::canonical_quantities), so a re-encoded object stores "500m" for a written 0.5.
template <typename T>
T DecodeAs(JsonObject& obj, api::FieldErrorList* decode_errors,
           const api::DecodeOptions& options = {.canonical_quantities = true}) {
  T out;
  boost::json::value v(std::move(obj));
  Decode(v, &out, decode_errors, options);
  obj = std::move(v.get_object());
  return out;
}
template <typename T>
T DecodeAs(const JsonObject& obj, api::FieldErrorList* decode_errors,
           const api::DecodeOptions& options = {.canonical_quantities = true}) {
  T out;
  Decode(boost::json::value(obj), &out, decode_errors, options);
  return out;
}

// Replaces `obj` by the encoding of `typed`.
template <typename T>
void EncodeInto(const T& typed, JsonObject& obj) {
  boost::json::value v = Encode(typed);
  if (v.is_object()) obj = std::move(v.get_object());
}

}  // namespace draplane::server::handlers
