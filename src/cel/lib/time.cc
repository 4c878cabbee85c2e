// Timestamps and durations of the standard library (cel-go common/types/timestamp.go,
// duration.go, and the getters in common/stdlib), rewritten. Durations are Go
// `time.Duration`s (int64 nanoseconds); timestamps span years 0001 to 9999 (UTC). Time zones
// are fixed offsets ("+05:30", "-08:00", "02:00") or IANA names read from the system zoneinfo
// database (TZif files under /usr/share/zoneinfo).
#include "cel/lib/time.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/meta/duration.h"
#include "cel/lib/helpers.h"
#include "cel/runtime/time_format.h"
#include "common/mutex.h"

namespace draplane::cel {
namespace internal {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;

__extension__ typedef __int128 I128;

// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (cel-go minUnixTime / maxUnixTime).
constexpr int64_t kMinUnix = -62135596800;
constexpr int64_t kMaxUnix = 253402300799;

bool InRange(int64_t seconds) { return seconds >= kMinUnix && seconds <= kMaxUnix; }

Value MakeTimestamp(EvalContext& ctx, int64_t seconds, int64_t nanos) {
  // Normalise nanos into [0, 1e9).
  seconds += nanos / 1000000000;
  nanos %= 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    seconds -= 1;
  }
  if (!InRange(seconds)) return Error(ctx, "timestamp out of range");
  return Value::Timestamp(seconds, static_cast<int32_t>(nanos));
}

int Digits(std::string_view s, size_t pos, size_t n, bool* ok) {
  int v = 0;
  if (pos + n > s.size()) {
    *ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      *ok = false;
      return 0;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Go time.Parse(time.RFC3339, s).
bool ParseRfc3339(std::string_view s, int64_t* seconds, int32_t* nanos) {
  bool ok = true;
  int year = Digits(s, 0, 4, &ok);
  if (!ok || s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':') {
    return false;
  }
  int month = Digits(s, 5, 2, &ok);
  int day = Digits(s, 8, 2, &ok);
  int hour = Digits(s, 11, 2, &ok);
  int minute = Digits(s, 14, 2, &ok);
  int second = Digits(s, 17, 2, &ok);
  if (!ok || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  size_t pos = 19;
  int64_t frac = 0;
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    size_t start = pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (s[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (pos == start) return false;
    for (; digits < 9; ++digits) frac *= 10;
  }
  if (pos >= s.size()) return false;
  int64_t offset = 0;
  if (s[pos] == 'Z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int sign = s[pos] == '-' ? -1 : 1;
    int oh = Digits(s, pos + 1, 2, &ok);
    if (!ok || pos + 3 >= s.size() || s[pos + 3] != ':') return false;
    int om = Digits(s, pos + 4, 2, &ok);
    if (!ok || oh > 23 || om > 59) return false;
    offset = sign * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return false;
  }
  if (pos != s.size()) return false;
  int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  *seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  *nanos = static_cast<int32_t>(frac);
  return true;
}

// --- time zones ----------------------------------------------------------------------------

struct Zone {
  std::vector<int64_t> transitions;  // unix seconds, ascending
  std::vector<uint8_t> type_of;      // type index per transition
  std::vector<int32_t> offsets;      // UTC offset per type
  int32_t initial_offset = 0;

  int32_t OffsetAt(int64_t unix) const {
    if (transitions.empty() || unix < transitions.front()) return initial_offset;
    size_t lo = 0, hi = transitions.size();
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (transitions[mid] <= unix) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return offsets[type_of[lo]];
  }
};

int64_t ReadBE(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

// Parses a TZif file (RFC 8536), preferring the 64-bit (version 2+) data block.
std::optional<Zone> ParseTzif(const std::string& data) {
  auto parse_block = [&](size_t off, int time_size, size_t* end) -> std::optional<Zone> {
    if (data.size() < off + 44 || data.compare(off, 4, "TZif") != 0) return std::nullopt;
    const auto* h = reinterpret_cast<const unsigned char*>(data.data() + off + 20);
    int64_t isutcnt = ReadBE(h, 4), isstdcnt = ReadBE(h + 4, 4), leapcnt = ReadBE(h + 8, 4),
            timecnt = ReadBE(h + 12, 4), typecnt = ReadBE(h + 16, 4), charcnt = ReadBE(h + 20, 4);
    if (timecnt < 0 || typecnt <= 0 || typecnt > 256 || timecnt > 100000) return std::nullopt;
    size_t p = off + 44;
    size_t need = static_cast<size_t>(timecnt) * (time_size + 1) +
                  static_cast<size_t>(typecnt) * 6 + static_cast<size_t>(charcnt) +
                  static_cast<size_t>(leapcnt) * (time_size + 4) + static_cast<size_t>(isstdcnt) +
                  static_cast<size_t>(isutcnt);
    if (data.size() < p + need) return std::nullopt;
    const auto* b = reinterpret_cast<const unsigned char*>(data.data());
    Zone z;
    for (int64_t i = 0; i < timecnt; ++i)
      z.transitions.push_back(ReadBE(b + p + i * time_size, time_size));
    p += static_cast<size_t>(timecnt) * time_size;
    for (int64_t i = 0; i < timecnt; ++i) {
      uint8_t t = b[p + i];
      if (t >= typecnt) return std::nullopt;
      z.type_of.push_back(t);
    }
    p += static_cast<size_t>(timecnt);
    bool found_std = false;
    for (int64_t i = 0; i < typecnt; ++i) {
      int32_t utoff = static_cast<int32_t>(ReadBE(b + p + i * 6, 4));
      bool isdst = b[p + i * 6 + 4] != 0;
      z.offsets.push_back(utoff);
      if (!isdst && !found_std) {
        z.initial_offset = utoff;
        found_std = true;
      }
    }
    if (!found_std) z.initial_offset = z.offsets[0];
    *end = p + need - static_cast<size_t>(timecnt) * (time_size + 1);
    return z;
  };
  size_t end = 0;
  std::optional<Zone> v1 = parse_block(0, 4, &end);
  if (!v1) return std::nullopt;
  if (data.size() > 4 && data[4] >= '2') {
    size_t end2 = 0;
    if (auto v2 = parse_block(end, 8, &end2)) return v2;
  }
  return v1;
}

bool ValidZoneName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '/' || name.find("..") != std::string::npos) {
    return false;
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

const Zone* LoadZone(std::string_view name) {
  static Mutex mu;
  static auto* cache = new std::map<std::string, std::unique_ptr<Zone>, std::less<>>();
  MutexLock lock(mu);
  auto it = cache->find(name);
  if (it != cache->end()) return it->second.get();
  std::unique_ptr<Zone> zone;
  if (ValidZoneName(name)) {
    std::ifstream in("/usr/share/zoneinfo/" + std::string(name), std::ios::binary);
    if (in) {
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (auto z = ParseTzif(data)) zone = std::make_unique<Zone>(std::move(*z));
    }
  }
  if (cache->size() < 1024) {
    const Zone* result = zone.get();
    (*cache)[std::string(name)] = std::move(zone);
    return result;
  }
  return nullptr;
}

// The UTC offset of zone `tz` at `unix`, or false for an unknown zone (cel-go accepts "UTC",
// IANA names, and "[+-]HH:MM" offsets).
bool ZoneOffset(std::string_view tz, int64_t unix, int32_t* offset) {
  if (tz == "UTC" || tz.empty()) {
    *offset = 0;
    return true;
  }
  size_t colon = tz.find(':');
  if (colon != std::string_view::npos) {
    std::string_view hh = tz.substr(0, colon), mm = tz.substr(colon + 1);
    int sign = 1;
    if (!hh.empty() && (hh[0] == '+' || hh[0] == '-')) {
      sign = hh[0] == '-' ? -1 : 1;
      hh.remove_prefix(1);
    }
    bool ok = true;
    int h = Digits(hh, 0, hh.size(), &ok);
    int m = Digits(mm, 0, mm.size(), &ok);
    if (!ok || hh.empty() || mm.empty()) return false;
    *offset = sign * (h * 3600 + m * 60);
    return true;
  }
  const Zone* z = LoadZone(tz);
  if (z == nullptr) return false;
  *offset = z->OffsetAt(unix);
  return true;
}

struct Civil {
  int64_t year;
  unsigned month, day;
  int64_t hour, minute, second;
  int64_t day_of_year, day_of_week;
};

Civil ToCivil(int64_t local) {
  Civil c;
  int64_t days = local >= 0 ? local / 86400 : (local - 86399) / 86400;
  int64_t secs = local - days * 86400;
  CivilFromDays(days, &c.year, &c.month, &c.day);
  c.hour = secs / 3600;
  c.minute = secs / 60 % 60;
  c.second = secs % 60;
  c.day_of_year = days - DaysFromCivil(c.year, 1, 1);
  c.day_of_week = ((days % 7) + 11) % 7;  // 1970-01-01 was a Thursday (4)
  return c;
}

enum class Field {
  kYear,
  kMonth,
  kDayOfYear,
  kDayOfMonth0,
  kDayOfMonth1,
  kDayOfWeek,
  kHours,
  kMinutes,
  kSeconds,
  kMillis
};

Value GetField(EvalContext& ctx, const Value& ts, std::string_view tz, Field f) {
  int32_t offset = 0;
  if (!ZoneOffset(tz, ts.seconds(), &offset)) {
    return Error(ctx, "unknown time zone " + std::string(tz));
  }
  Civil c = ToCivil(ts.seconds() + offset);
  switch (f) {
    case Field::kYear:
      return Value::Int(c.year);
    case Field::kMonth:
      return Value::Int(c.month - 1);
    case Field::kDayOfYear:
      return Value::Int(c.day_of_year);
    case Field::kDayOfMonth0:
      return Value::Int(c.day - 1);
    case Field::kDayOfMonth1:
      return Value::Int(c.day);
    case Field::kDayOfWeek:
      return Value::Int(c.day_of_week);
    case Field::kHours:
      return Value::Int(c.hour);
    case Field::kMinutes:
      return Value::Int(c.minute);
    case Field::kSeconds:
      return Value::Int(c.second);
    case Field::kMillis:
      return Value::Int(ts.nanos() / 1000000);
  }
  return NoSuchOverload();
}

template <Field F>
Value TsGet(EvalContext& ctx, const Value* a) {
  return GetField(ctx, a[0], "UTC", F);
}
template <Field F>
Value TsGetTz(EvalContext& ctx, const Value* a) {
  return GetField(ctx, a[0], a[1].string_value(), F);
}

Value StringToTimestamp(EvalContext& ctx, const Value* a) {
  int64_t s;
  int32_t n;
  if (!ParseRfc3339(a[0].string_value(), &s, &n)) {
    return Error(ctx, "timestamp(\"" + std::string(a[0].string_value()) +
                          "\"): invalid timestamp (not RFC 3339) or out of range");
  }
  return MakeTimestamp(ctx, s, n);
}
Value IntToTimestamp(EvalContext& ctx, const Value* a) {
  return MakeTimestamp(ctx, a[0].int_value(), 0);
}
Value TimestampToInt(EvalContext&, const Value* a) { return Value::Int(a[0].seconds()); }
Value TimestampToString(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, FormatTimestamp(a[0].seconds(), a[0].nanos()));
}
Value StringToDuration(EvalContext& ctx, const Value* a) {
  StatusOr<Duration> d = api::ParseDuration(a[0].string_value());
  if (!d.ok()) return Error(ctx, std::string(d.status().message()));
  return Value::Duration(d->count());
}
Value IntToDuration(EvalContext&, const Value* a) { return Value::Duration(a[0].int_value()); }
Value DurationToInt(EvalContext&, const Value* a) { return Value::Int(a[0].duration_nanos()); }
Value DurationToString(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, FormatDuration(a[0].duration_nanos()));
}
Value Identity(EvalContext&, const Value* a) { return a[0]; }

Value IntOverflow(EvalContext& ctx) { return Error(ctx, "integer overflow"); }

Value AddTsDur(EvalContext& ctx, const Value& ts, int64_t dur) {
  int64_t secs = dur / 1000000000, nanos = dur % 1000000000;
  return MakeTimestamp(ctx, ts.seconds() + secs, ts.nanos() + nanos);
}
Value AddTimestampDuration(EvalContext& ctx, const Value* a) {
  return AddTsDur(ctx, a[0], a[1].duration_nanos());
}
Value AddDurationTimestamp(EvalContext& ctx, const Value* a) {
  return AddTsDur(ctx, a[1], a[0].duration_nanos());
}
Value SubTimestampDuration(EvalContext& ctx, const Value* a) {
  if (a[1].duration_nanos() == std::numeric_limits<int64_t>::min()) return IntOverflow(ctx);
  return AddTsDur(ctx, a[0], -a[1].duration_nanos());
}
Value AddDurationDuration(EvalContext& ctx, const Value* a) {
  int64_t r;
  if (__builtin_add_overflow(a[0].duration_nanos(), a[1].duration_nanos(), &r)) {
    return IntOverflow(ctx);
  }
  return Value::Duration(r);
}
Value SubDurationDuration(EvalContext& ctx, const Value* a) {
  int64_t r;
  if (__builtin_sub_overflow(a[0].duration_nanos(), a[1].duration_nanos(), &r)) {
    return IntOverflow(ctx);
  }
  return Value::Duration(r);
}
Value SubTimestampTimestamp(EvalContext& ctx, const Value* a) {
  I128 ns = (static_cast<I128>(a[0].seconds()) - a[1].seconds()) * 1000000000 +
            (a[0].nanos() - a[1].nanos());
  if (ns > std::numeric_limits<int64_t>::max() || ns < std::numeric_limits<int64_t>::min()) {
    return IntOverflow(ctx);
  }
  return Value::Duration(static_cast<int64_t>(ns));
}

Value DurHours(EvalContext&, const Value* a) {
  return Value::Int(a[0].duration_nanos() / 3600000000000LL);
}
Value DurMinutes(EvalContext&, const Value* a) {
  return Value::Int(a[0].duration_nanos() / 60000000000LL);
}
Value DurSeconds(EvalContext&, const Value* a) {
  return Value::Int(a[0].duration_nanos() / 1000000000LL);
}
Value DurMillis(EvalContext&, const Value* a) {
  return Value::Int(a[0].duration_nanos() / 1000000LL);
}

}  // namespace

void RegisterTimeFunctions(FunctionRegistry& r) {
  const Type kTs = Type::Timestamp(), kDur = Type::Duration(), kInt = Type::Int(),
             kString = Type::String();
  Global(r, "timestamp", "timestamp_to_timestamp", {kTs}, kTs, Identity);
  Global(r, "timestamp", "int64_to_timestamp", {kInt}, kTs, IntToTimestamp);
  Global(r, "timestamp", "string_to_timestamp", {kString}, kTs, StringToTimestamp);
  Global(r, "duration", "duration_to_duration", {kDur}, kDur, Identity);
  Global(r, "duration", "int64_to_duration", {kInt}, kDur, IntToDuration);
  Global(r, "duration", "string_to_duration", {kString}, kDur, StringToDuration);
  Global(r, "int", "timestamp_to_int64", {kTs}, kInt, TimestampToInt);
  Global(r, "int", "duration_to_int64", {kDur}, kInt, DurationToInt);
  Global(r, "string", "timestamp_to_string", {kTs}, kString, TimestampToString);
  Global(r, "string", "duration_to_string", {kDur}, kString, DurationToString);

  Global(r, "_+_", "add_duration_duration", {kDur, kDur}, kDur, AddDurationDuration);
  Global(r, "_+_", "add_duration_timestamp", {kDur, kTs}, kTs, AddDurationTimestamp);
  Global(r, "_+_", "add_timestamp_duration", {kTs, kDur}, kTs, AddTimestampDuration);
  Global(r, "_-_", "subtract_duration_duration", {kDur, kDur}, kDur, SubDurationDuration);
  Global(r, "_-_", "subtract_timestamp_duration", {kTs, kDur}, kTs, SubTimestampDuration);
  Global(r, "_-_", "subtract_timestamp_timestamp", {kTs, kTs}, kDur, SubTimestampTimestamp);

  struct Getter {
    const char* fn;
    const char* id;
    FunctionImpl utc;
    FunctionImpl tz;
  };
  const Getter getters[] = {
      {"getFullYear", "timestamp_to_year", TsGet<Field::kYear>, TsGetTz<Field::kYear>},
      {"getMonth", "timestamp_to_month", TsGet<Field::kMonth>, TsGetTz<Field::kMonth>},
      {"getDayOfYear", "timestamp_to_day_of_year", TsGet<Field::kDayOfYear>,
       TsGetTz<Field::kDayOfYear>},
      {"getDayOfMonth", "timestamp_to_day_of_month", TsGet<Field::kDayOfMonth0>,
       TsGetTz<Field::kDayOfMonth0>},
      {"getDate", "timestamp_to_day_of_month_1_based", TsGet<Field::kDayOfMonth1>,
       TsGetTz<Field::kDayOfMonth1>},
      {"getDayOfWeek", "timestamp_to_day_of_week", TsGet<Field::kDayOfWeek>,
       TsGetTz<Field::kDayOfWeek>},
      {"getHours", "timestamp_to_hours", TsGet<Field::kHours>, TsGetTz<Field::kHours>},
      {"getMinutes", "timestamp_to_minutes", TsGet<Field::kMinutes>, TsGetTz<Field::kMinutes>},
      {"getSeconds", "timestamp_to_seconds", TsGet<Field::kSeconds>, TsGetTz<Field::kSeconds>},
      {"getMilliseconds", "timestamp_to_milliseconds", TsGet<Field::kMillis>,
       TsGetTz<Field::kMillis>},
  };
  for (const Getter& g : getters) {
    Member(r, g.fn, g.id, {kTs}, kInt, g.utc);
    Member(r, g.fn, std::string(g.id) + "_with_tz", {kTs, kString}, kInt, g.tz);
  }
  Member(r, "getHours", "duration_to_hours", {kDur}, kInt, DurHours);
  Member(r, "getMinutes", "duration_to_minutes", {kDur}, kInt, DurMinutes);
  Member(r, "getSeconds", "duration_to_seconds", {kDur}, kInt, DurSeconds);
  Member(r, "getMilliseconds", "duration_to_milliseconds", {kDur}, kInt, DurMillis);
}

}  // namespace internal
}  // namespace draplane::cel
