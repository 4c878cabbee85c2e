#include "server/handlers/json_util.h"

#include <cstdio>
#include <ctime>
#include <type_traits>

#include "api/codec/json.h"
#include "common/saturating.h"

namespace draplane::server::handlers {

const JsonObject* FindObject(const JsonObject& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->value().is_object()) return nullptr;
  return &it->value().get_object();
}

JsonObject* FindObject(JsonObject& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->value().is_object()) return nullptr;
  return &it->value().get_object();
}

const boost::json::array* FindArray(const JsonObject& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->value().is_array()) return nullptr;
  return &it->value().get_array();
}

boost::json::array* FindArray(JsonObject& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->value().is_array()) return nullptr;
  return &it->value().get_array();
}

std::string_view GetString(const JsonObject& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->value().is_string()) return {};
  const boost::json::string& s = it->value().get_string();
  return std::string_view(s.data(), s.size());
}

std::string_view GetPathString(const JsonObject& obj,
                               std::initializer_list<std::string_view> path) {
  const JsonObject* current = &obj;
  size_t i = 0;
  for (std::string_view key : path) {
    if (++i == path.size()) return GetString(*current, key);
    current = FindObject(*current, key);
    if (current == nullptr) return {};
  }
  return {};
}

JsonObject& EnsureObject(JsonObject& obj, std::string_view key) {
  boost::json::value& v = obj[key];
  if (!v.is_object()) v = JsonObject();
  return v.get_object();
}

boost::json::array StringArray(const std::vector<std::string>& values) {
  boost::json::array out;
  for (const std::string& v : values) out.emplace_back(v);
  return out;
}

std::string_view MetaString(const JsonObject& obj, std::string_view field) {
  const JsonObject* meta = FindObject(obj, "metadata");
  return meta == nullptr ? std::string_view() : GetString(*meta, field);
}

StringMap MetaStringMap(const JsonObject& obj, std::string_view field) {
  StringMap out;
  const JsonObject* meta = FindObject(obj, "metadata");
  if (meta == nullptr) return out;
  const JsonObject* map = FindObject(*meta, field);
  if (map == nullptr) return out;
  for (const auto& member : *map) {
    if (member.value().is_string()) {
      out.emplace(std::string(member.key()), std::string(member.value().get_string()));
    }
  }
  return out;
}

std::vector<std::string> Finalizers(const JsonObject& obj) {
  std::vector<std::string> out;
  const JsonObject* meta = FindObject(obj, "metadata");
  if (meta == nullptr) return out;
  const boost::json::array* list = FindArray(*meta, "finalizers");
  if (list == nullptr) return out;
  for (const boost::json::value& v : *list) {
    if (v.is_string()) out.emplace_back(v.get_string());
  }
  return out;
}

void SetFinalizers(JsonObject& obj, const std::vector<std::string>& finalizers) {
  JsonObject& meta = EnsureObject(obj, "metadata");
  if (finalizers.empty()) {
    meta.erase("finalizers");
    return;
  }
  boost::json::array list;
  for (const std::string& f : finalizers) list.emplace_back(f);
  meta["finalizers"] = std::move(list);
}

namespace {

// `obj`'s members in stored order, copied or moved (`Object` is const or not).
template <typename Object>
std::string StoredJson(Object& obj) {
  auto take = [](auto& value) -> decltype(auto) {
    if constexpr (std::is_const_v<Object>) {
      return value;
    } else {
      return std::move(value);
    }
  };
  // Built inside a value: AppendJson takes a value, and passing it an object would copy it.
  boost::json::value stored(boost::json::object_kind);
  JsonObject& ordered = stored.get_object();
  ordered.reserve(obj.size());
  for (std::string_view key : {"apiVersion", "kind", "metadata"}) {
    auto it = obj.find(key);
    if (it != obj.end()) ordered.emplace(key, take(it->value()));
  }
  if (boost::json::value* meta = ordered.if_contains("metadata"); meta && meta->is_object()) {
    meta->get_object().erase("resourceVersion");
  }
  for (auto& member : obj) {
    if (member.key() == "apiVersion" || member.key() == "kind" || member.key() == "metadata") {
      continue;
    }
    ordered.emplace(member.key(), take(member.value()));
  }
  std::string out;
  api::codec::AppendJson(stored, api::codec::JsonWriteOptions{.indent = 0}, &out);
  return out;
}

}  // namespace

std::string ToStoredJson(const JsonObject& obj) { return StoredJson(obj); }

std::string ToStoredJson(JsonObject&& obj) { return StoredJson(obj); }

namespace {

// The offset just after the top-level `"metadata":{`, or npos when `text` is not in stored form.
size_t MetadataBodyOffset(std::string_view text) {
  // Stored form starts with {"apiVersion":"...","kind":"...","metadata":{ ; the values before
  // metadata are strings, whose unescaped quotes end them, so the first `"metadata":{` outside
  // them is the top-level one. Verify the prefix shape cheaply.
  if (text.rfind("{\"apiVersion\":\"", 0) != 0) return std::string_view::npos;
  size_t pos = text.find("\",\"kind\":\"");
  if (pos == std::string_view::npos) return std::string_view::npos;
  pos = text.find("\",\"metadata\":{", pos + 10);
  if (pos == std::string_view::npos) return std::string_view::npos;
  return pos + 14;
}

}  // namespace

std::string WithResourceVersion(std::string_view stored, int64_t revision) {
  size_t offset = MetadataBodyOffset(stored);
  std::string rv = std::to_string(revision);
  if (offset != std::string_view::npos && offset < stored.size()) {
    std::string out;
    out.reserve(stored.size() + rv.size() + 24);
    out.append(stored.substr(0, offset));
    out.append("\"resourceVersion\":\"");
    out.append(rv);
    out.append(stored[offset] == '}' ? "\"" : "\",");
    out.append(stored.substr(offset));
    return out;
  }
  StatusOr<JsonObject> parsed = ParseObject(stored);
  if (!parsed.ok()) return std::string(stored);
  EnsureObject(*parsed, "metadata")["resourceVersion"] = rv;
  return boost::json::serialize(*parsed);
}

StatusOr<JsonObject> ParseObject(std::string_view text) {
  StatusOr<boost::json::value> value = api::codec::ParseJson(text);
  if (!value.ok()) return value.status();
  if (!value->is_object()) return InvalidArgumentError("expected a JSON object");
  return std::move(value->get_object());
}

std::string FormatTime(Timestamp time) {
  // Every create stamps a time: the date is computed here (days to civil date, Howard Hinnant's
  // `civil_from_days`) instead of through gmtime_r and snprintf, with the same text. A Timestamp
  // (int64 nanoseconds) spans the years 1677-2262, so the year always has four digits.
  const int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
  int64_t days = seconds / 86400;
  int64_t second_of_day = seconds % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --days;
  }
  days += 719468;  // days from 0000-03-01 to 1970-01-01
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t day_of_era = days - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t month_index = (5 * day_of_year + 2) / 153;  // March = 0
  const int64_t day = day_of_year - (153 * month_index + 2) / 5 + 1;
  const int64_t month = month_index < 10 ? month_index + 3 : month_index - 9;
  const int64_t year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
  char buf[20];
  auto put = [&buf](int at, int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) {
      buf[at + i] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  put(0, year, 4);
  buf[4] = '-';
  put(5, month, 2);
  buf[7] = '-';
  put(8, day, 2);
  buf[10] = 'T';
  put(11, second_of_day / 3600, 2);
  buf[13] = ':';
  put(14, second_of_day / 60 % 60, 2);
  buf[16] = ':';
  put(17, second_of_day % 60, 2);
  buf[19] = 'Z';
  return std::string(buf, sizeof(buf));
}

std::optional<Timestamp> ParseTime(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (text.size() < 20) return std::nullopt;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &year, &month, &day, &hour, &minute,
                  &second) != 6) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t epoch = static_cast<int64_t>(timegm(&tm));
  // Fractional seconds and zone offsets: accept "Z" or "+hh:mm"/"-hh:mm" after optional ".fff".
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    int64_t scale = 100'000'000;
    ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      nanos += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
  }
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-') && pos + 6 <= s.size()) {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    int64_t offset = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    epoch -= offset;
  } else if (pos >= s.size() || s[pos] != 'Z') {
    return std::nullopt;
  }
  // Saturated at Timestamp's range (years 1678-2262).
  return AddSeconds(Timestamp(std::chrono::nanoseconds(nanos)), epoch);
}

std::string HumanDuration(Duration d) {
  int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    if (s == 0) return std::to_string(minutes) + "m";
    return std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  int64_t hours = seconds / 3600;
  if (hours < 8) {
    int64_t m = minutes % 60;
    if (m == 0) return std::to_string(hours) + "h";
    return std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    if (h == 0) return std::to_string(hours / 24) + "d";
    return std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    if (dy == 0) return std::to_string(hours / 24 / 365) + "y";
    return std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

int64_t PodDeletionGracePeriod(const JsonObject& pod) {
  if (GetPathString(pod, {"spec", "nodeName"}).empty()) return 0;
  std::string_view phase = GetPathString(pod, {"status", "phase"});
  if (phase == "Succeeded" || phase == "Failed") return 0;
  if (const JsonObject* spec = FindObject(pod, "spec")) {
    if (const boost::json::value* g = spec->if_contains("terminationGracePeriodSeconds");
        g != nullptr && g->is_int64()) {
      return g->get_int64();
    }
  }
  return 30;
}

}  // namespace draplane::server::handlers
