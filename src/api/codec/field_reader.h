// A strict reader of JSON objects that users or programs write by hand (agent profiles and
// checkpoints, simulator traces and cluster changes).
//
// `FieldReader` wraps one JSON object and a field path; its getters read optional fields with
// type checks, and `Finish()` rejects fields nobody asked for (a typo in a profile should fail
// loudly, not be ignored). The first problem wins and is reported as InvalidArgument
// `<path>.<field>: <problem>`.
//
// Thread-safety: a value used by one thread.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"
#include "common/status.h"

namespace draplane::api::codec {

class FieldReader {
 public:
  // `value` must outlive the reader. A non-object value is an error reported by status().
  FieldReader(const boost::json::value& value, std::string path);

  // The path of field `key` ("a.b" or "b" at the root).
  std::string PathOf(std::string_view key) const;
  // The raw value of `key`, or nullptr when absent (marks the key as read).
  const boost::json::value* Raw(std::string_view key);

  std::optional<std::string> String(std::string_view key);
  std::optional<int64_t> Int(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  // A quantity written as a string or a number.
  std::optional<api::Quantity> Quantity(std::string_view key);
  // A map of strings (label values, annotations).
  std::map<std::string, std::string> StringMap(std::string_view key);
  std::map<std::string, api::Quantity> QuantityMap(std::string_view key);
  std::vector<std::string> StringList(std::string_view key);
  std::vector<int64_t> IntList(std::string_view key);
  // The elements of a list of objects, each with its path (`key[i]`).
  std::vector<std::pair<const boost::json::value*, std::string>> ObjectList(std::string_view key);

  // Records a problem with field `key` (the first one wins).
  void Fail(std::string_view key, std::string_view problem);
  // Records a problem found by a nested reader or a caller.
  void Merge(const Status& status);

  // Rejects unread fields; returns the first problem.
  Status Finish();
  const Status& status() const { return status_; }

 private:
  const boost::json::object* object_ = nullptr;
  std::string path_;
  std::set<std::string, std::less<>> read_;
  Status status_;
};

}  // namespace draplane::api::codec
