#include "api/meta/raw_json.h"

#include <boost/json.hpp>

#include "common/check.h"

namespace draplane::api {

RawJson::RawJson() = default;

RawJson::RawJson(const boost::json::value& value)
    : value_(std::make_unique<boost::json::value>(value, boost::json::storage_ptr())) {}

RawJson::RawJson(boost::json::value&& value)
    : value_(std::make_unique<boost::json::value>(std::move(value), boost::json::storage_ptr())) {}

RawJson::RawJson(const RawJson& other)
    : value_(other.value_ ? std::make_unique<boost::json::value>(*other.value_) : nullptr) {}

RawJson& RawJson::operator=(const RawJson& other) {
  if (this != &other) {
    value_ = other.value_ ? std::make_unique<boost::json::value>(*other.value_) : nullptr;
  }
  return *this;
}

RawJson::RawJson(RawJson&&) noexcept = default;
RawJson& RawJson::operator=(RawJson&&) noexcept = default;
RawJson::~RawJson() = default;

const boost::json::value& RawJson::value() const {
  DRAPLANE_CHECK(value_ != nullptr);
  return *value_;
}

boost::json::value& RawJson::mutable_value() {
  if (!value_) value_ = std::make_unique<boost::json::value>();
  return *value_;
}

void RawJson::reset() { value_.reset(); }

bool operator==(const RawJson& a, const RawJson& b) {
  if (!a.value_ || !b.value_) return a.value_ == b.value_;
  return *a.value_ == *b.value_;
}

UnknownFields::UnknownFields() = default;

UnknownFields::UnknownFields(const UnknownFields& other) = default;
UnknownFields& UnknownFields::operator=(const UnknownFields& other) = default;

UnknownFields::UnknownFields(UnknownFields&&) noexcept = default;
UnknownFields& UnknownFields::operator=(UnknownFields&&) noexcept = default;
UnknownFields::~UnknownFields() = default;

bool UnknownFields::empty() const { return !fields_ || fields_->empty(); }

boost::json::object& UnknownFields::mutable_fields() {
  if (!fields_) {
    fields_ = std::make_shared<boost::json::object>();
  } else if (fields_.use_count() > 1) {
    // Shared with a copy: this one gets its own. A count that drops to 1 concurrently (the
    // other owner going away) only costs an unneeded copy; it cannot rise, since only this
    // owner could give the fields to a new copy.
    fields_ = std::make_shared<boost::json::object>(*fields_);
  }
  return *fields_;
}

void UnknownFields::clear() { fields_.reset(); }

void UnknownFields::Add(std::string_view key, const boost::json::value& value) {
  // Copied into the object's resource, the default one: the source may live in a parser's
  // monotonic arena. In place, not as a temporary assigned over a null (decoders add a Pod's
  // upstream-defaulted fields this model lacks for every Pod version an informer decodes).
  mutable_fields().insert_or_assign(key, value);
}

}  // namespace draplane::api
