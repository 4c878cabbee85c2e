// Building blocks of the generated JSON codecs (src/api/gen/*_codec.cc).
//
// Not an interface for other modules: decode and encode objects through the generated
// `Decode` / `Encode` functions or api/object.h. This header is shared by the generated files
// of every API group, so it lives with the hand-written model support in api/meta.
//
// Decoding walks a boost::json::value DOM. A field path is a chain of stack-allocated `Path`
// nodes that is rendered into a FieldPath only when an error is reported, so a successful
// decode builds no path strings. Errors are collected in a DecodeContext, capped at
// kMaxDecodeErrors (then one final "too many errors" entry).
//
// Thread-safety: a DecodeContext belongs to one decode call.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/json/storage_ptr.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/field_error.h"
#include "api/meta/decode_options.h"
#include "api/meta/raw_json.h"
#include "api/meta/time.h"
#include "api/quantity.h"

namespace draplane::api::internal {

inline constexpr size_t kMaxDecodeErrors = 100;

// One step of a field path: a struct field, a list index or a map key.
struct Path {
  enum class Kind : uint8_t { kRoot, kField, kIndex, kKey };
  const Path* parent = nullptr;
  Kind kind = Kind::kRoot;
  std::string_view name;
  size_t index = 0;

  // Renders the path the Kubernetes way: `spec.devices[0].attributes[gpu.example.com/model]`.
  FieldPath ToFieldPath() const;
};

class DecodeContext {
 public:
  // Appends errors to `*errors` (which must outlive the context); nullptr discards them.
  explicit DecodeContext(FieldErrorList* errors, DecodeOptions options = {})
      : errors_(errors), options_(options) {}

  const DecodeOptions& options() const { return options_; }

  // Reports that the value at `path` has the wrong JSON type; `expected` is e.g. "string".
  void TypeError(const Path& path, const boost::json::value& value, std::string_view expected);
  // Reports an Invalid value at `path`.
  void Invalid(const Path& path, std::string rendered_value, std::string detail);
  size_t error_count() const { return count_; }

 private:
  void Add(FieldError error);

  FieldErrorList* errors_;
  DecodeOptions options_;
  size_t count_ = 0;
};

// The object / array at `json`, or nullptr after reporting a type error.
const boost::json::object* AsObject(const boost::json::value& json, const Path& path,
                                    DecodeContext& ctx);
const boost::json::array* AsArray(const boost::json::value& json, const Path& path,
                                  DecodeContext& ctx);

void DecodeString(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                  std::string* out);
void DecodeBool(const boost::json::value& json, const Path& path, DecodeContext& ctx, bool* out);
void DecodeInt32(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                 int32_t* out);
void DecodeInt64(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                 int64_t* out);
// A string (`"1Gi"`) or a number (`4`, remembered via Quantity::from_number()).
void DecodeQuantity(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                    Quantity* out);
void DecodeTime(const boost::json::value& json, const Path& path, DecodeContext& ctx, Time* out);
void DecodeRawJson(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                   RawJson* out);

boost::json::value EncodeString(const std::string& in, const boost::json::storage_ptr& sp);
boost::json::value EncodeBool(bool in, const boost::json::storage_ptr& sp);
boost::json::value EncodeInt(int64_t in, const boost::json::storage_ptr& sp);
// The original text (or canonical form), as a JSON number when it was read from one.
boost::json::value EncodeQuantity(const Quantity& in, const boost::json::storage_ptr& sp);
boost::json::value EncodeTime(const Time& in, const boost::json::storage_ptr& sp);
boost::json::value EncodeRawJson(const RawJson& in, const boost::json::storage_ptr& sp);
// Adds every unknown field to `out` whose key `out` does not already hold (a modelled field
// that was set after decoding wins over a recorded explicit null).
void EncodeUnknown(const UnknownFields& unknown, boost::json::object& out);

// A short rendering of a JSON value for error messages: strings quoted, containers elided.
std::string RenderJsonValue(const boost::json::value& value);
// "string", "number", "boolean", "null", "object" or "array".
std::string_view JsonTypeName(const boost::json::value& value);

}  // namespace draplane::api::internal

namespace draplane::api::internal {

// Formats a double the way Go's encoding/json does (`1.5`, `100`, `1e+21`, `1e-7`).
std::string FormatJsonDouble(double value);
// Formats a double the way Go's strconv.FormatFloat(v, 'g', -1, 64) does (go-yaml's float
// output): `1.5`, `123456`, `1e+06`, `1e-05`.
std::string FormatGoG(double value);

}  // namespace draplane::api::internal
