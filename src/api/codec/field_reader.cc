#include "api/codec/field_reader.h"

#include <cstdint>
#include <cstdlib>
#include <utility>

namespace draplane::api::codec {

FieldReader::FieldReader(const boost::json::value& value, std::string path)
    : path_(std::move(path)) {
  object_ = value.if_object();
  if (object_ == nullptr) {
    status_ = InvalidArgumentError((path_.empty() ? std::string("document") : path_) +
                                   ": must be an object");
  }
}

std::string FieldReader::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

const boost::json::value* FieldReader::Raw(std::string_view key) {
  if (object_ == nullptr) return nullptr;
  read_.insert(std::string(key));
  const boost::json::value* v = object_->if_contains(key);
  if (v != nullptr && v->is_null()) return nullptr;
  return v;
}

void FieldReader::Fail(std::string_view key, std::string_view problem) {
  if (!status_.ok()) return;
  status_ = InvalidArgumentError(PathOf(key) + ": " + std::string(problem));
}

void FieldReader::Merge(const Status& status) {
  if (status_.ok() && !status.ok()) status_ = status;
}

std::optional<std::string> FieldReader::String(std::string_view key) {
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return std::string(v->as_string());
  // YAML turns `9.0` or `2` into numbers; profiles mean the text.
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  if (v->is_double()) {
    Fail(key, "must be a string (quote numbers with a fraction, e.g. \"9.0\")");
    return std::nullopt;
  }
  Fail(key, "must be a string");
  return std::nullopt;
}

std::optional<int64_t> FieldReader::Int(std::string_view key) {
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->as_uint64());
  }
  if (v->is_string()) {
    const std::string text(v->as_string());
    char* end = nullptr;
    long long parsed = std::strtoll(text.c_str(), &end, 10);
    if (!text.empty() && end == text.c_str() + text.size()) return parsed;
  }
  Fail(key, "must be an integer");
  return std::nullopt;
}

std::optional<bool> FieldReader::Bool(std::string_view key) {
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_bool()) return v->as_bool();
  Fail(key, "must be true or false");
  return std::nullopt;
}

namespace {

StatusOr<api::Quantity> QuantityOf(const boost::json::value& v) {
  if (v.is_string()) return api::Quantity::Parse(std::string_view(v.as_string()));
  if (v.is_int64()) return api::Quantity::Parse(std::to_string(v.as_int64()));
  if (v.is_uint64()) return api::Quantity::Parse(std::to_string(v.as_uint64()));
  return InvalidArgumentError("must be a quantity (e.g. 80Gi, 100G, \"108\")");
}

}  // namespace

std::optional<api::Quantity> FieldReader::Quantity(std::string_view key) {
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return std::nullopt;
  StatusOr<api::Quantity> q = QuantityOf(*v);
  if (!q.ok()) {
    Fail(key, q.status().message());
    return std::nullopt;
  }
  return *q;
}

std::map<std::string, std::string> FieldReader::StringMap(std::string_view key) {
  std::map<std::string, std::string> out;
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return out;
  if (!v->is_object()) {
    Fail(key, "must be a map of strings");
    return out;
  }
  for (const auto& [k, item] : v->as_object()) {
    if (item.is_string()) {
      out[std::string(k)] = std::string(item.as_string());
    } else if (item.is_int64() || item.is_bool()) {
      Fail(std::string(key) + "." + std::string(k), "must be a string (quote it)");
    } else {
      Fail(std::string(key) + "." + std::string(k), "must be a string");
    }
  }
  return out;
}

std::map<std::string, api::Quantity> FieldReader::QuantityMap(std::string_view key) {
  std::map<std::string, api::Quantity> out;
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return out;
  if (!v->is_object()) {
    Fail(key, "must be a map of quantities");
    return out;
  }
  for (const auto& [k, item] : v->as_object()) {
    StatusOr<api::Quantity> q = QuantityOf(item);
    if (!q.ok()) {
      Fail(std::string(key) + "." + std::string(k), q.status().message());
      continue;
    }
    out[std::string(k)] = *q;
  }
  return out;
}

std::vector<std::string> FieldReader::StringList(std::string_view key) {
  std::vector<std::string> out;
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    Fail(key, "must be a list of strings");
    return out;
  }
  for (const boost::json::value& item : v->as_array()) {
    if (!item.is_string()) {
      Fail(key, "must be a list of strings");
      return out;
    }
    out.emplace_back(item.as_string());
  }
  return out;
}

std::vector<int64_t> FieldReader::IntList(std::string_view key) {
  std::vector<int64_t> out;
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    Fail(key, "must be a list of integers");
    return out;
  }
  for (const boost::json::value& item : v->as_array()) {
    if (!item.is_int64()) {
      Fail(key, "must be a list of integers");
      return out;
    }
    out.push_back(item.as_int64());
  }
  return out;
}

std::vector<std::pair<const boost::json::value*, std::string>> FieldReader::ObjectList(
    std::string_view key) {
  std::vector<std::pair<const boost::json::value*, std::string>> out;
  const boost::json::value* v = Raw(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    Fail(key, "must be a list");
    return out;
  }
  const boost::json::array& array = v->as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    out.emplace_back(&array[i], PathOf(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

Status FieldReader::Finish() {
  if (status_.ok() && object_ != nullptr) {
    for (const auto& [k, v] : *object_) {
      if (read_.find(std::string_view(k)) == read_.end()) {
        status_ = InvalidArgumentError(PathOf(k) + ": unknown field");
        break;
      }
    }
  }
  return status_;
}

}  // namespace draplane::api::codec
