// JSON values the object model holds without modelling them.
//
// `RawJson` is an opaque JSON value: runtime.RawExtension (`parameters`), FieldsV1, device status
// `data`. `UnknownFields` is the per-struct bag of fields the schema does not model (plus known
// fields that were an explicit JSON null), kept in input order so a decode -> encode round trip
// writes them back verbatim (docs/design/api.md).
//
// Both hold their JSON behind a pointer so that an absent value costs one null pointer and so
// that headers of the object model need only <boost/json/fwd.hpp>; code that reads the content
// includes <boost/json.hpp>. Copies of a RawJson are deep. Copies of UnknownFields share the
// fields until one of them is changed (copy on write): every object a decoder makes carries the
// upstream-defaulted fields the model lacks (a Pod's containers, its spec), and typed writes copy
// those objects several times per version, where the fields are only read.
//
// Thread-safety: plain values (fields shared by copies are never changed in place).
#pragma once

#include <boost/json/fwd.hpp>
#include <memory>
#include <string_view>

namespace draplane::api {

class RawJson {
 public:
  // No value (the field is absent).
  RawJson();
  explicit RawJson(const boost::json::value& value);
  explicit RawJson(boost::json::value&& value);
  RawJson(const RawJson& other);
  RawJson& operator=(const RawJson& other);
  RawJson(RawJson&&) noexcept;
  RawJson& operator=(RawJson&&) noexcept;
  ~RawJson();

  bool has_value() const { return value_ != nullptr; }
  // The value. Precondition: has_value().
  const boost::json::value& value() const;
  // The value, created as JSON null when absent.
  boost::json::value& mutable_value();
  void reset();

  // Equal when both are absent or both hold equal JSON values.
  friend bool operator==(const RawJson& a, const RawJson& b);

 private:
  std::unique_ptr<boost::json::value> value_;
};

class UnknownFields {
 public:
  UnknownFields();
  UnknownFields(const UnknownFields& other);
  UnknownFields& operator=(const UnknownFields& other);
  UnknownFields(UnknownFields&&) noexcept;
  UnknownFields& operator=(UnknownFields&&) noexcept;
  ~UnknownFields();

  bool empty() const;
  // The fields, or nullptr when there are none.
  const boost::json::object* fields() const { return fields_.get(); }
  // The fields, created empty when there are none.
  boost::json::object& mutable_fields();
  // Sets `key` to a deep copy of `value` (replacing an earlier entry with the same key).
  void Add(std::string_view key, const boost::json::value& value);
  void clear();

  // Unknown fields do not take part in the semantic equality of the model: always true.
  friend bool operator==(const UnknownFields&, const UnknownFields&) { return true; }

 private:
  // Shared by copies; changed in place only while this is its one owner.
  std::shared_ptr<boost::json::object> fields_;
};

}  // namespace draplane::api
