// Kubernetes semver library (apiserver pkg/cel/library/semverlib.go, pkg/cel/semver.go) over a
// rewrite of blang/semver v4 parsing and precedence.
#include "cel/lib/semver.h"

#include <limits>
#include <vector>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::cel {

namespace internal {
namespace {

bool OnlyDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
bool OnlyAlnum(std::string_view s) {
  for (char c : s) {
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
    if (!ok) return false;
  }
  return true;
}
bool LeadingZeroes(std::string_view s) { return s.size() > 1 && s[0] == '0'; }
std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// strconv.ParseUint(s, 10, 64).
bool ParseUint(std::string_view s, uint64_t* out, std::string* error) {
  if (s.empty()) {
    *error = "strconv.ParseUint: parsing \"\": invalid syntax";
    return false;
  }
  uint64_t v = 0;
  for (char c : s) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) {
      *error = "strconv.ParseUint: parsing " + Quoted(s) + ": value out of range";
      return false;
    }
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::vector<std::string_view> SplitDots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

bool ParseNumber(std::string_view part, const char* name, const char* cap, uint64_t* out,
                 std::string* error) {
  if (!OnlyDigits(part)) {
    *error = std::string("Invalid character(s) found in ") + name + " number " + Quoted(part);
    return false;
  }
  if (LeadingZeroes(part)) {
    *error = std::string(cap) + " number must not contain leading zeroes " + Quoted(part);
    return false;
  }
  return ParseUint(part, out, error);
}

std::string TrimLeadingZeros(std::string_view s) {
  size_t i = 0;
  while (i + 1 < s.size() && s[i] == '0' && s[i + 1] >= '0' && s[i + 1] <= '9') ++i;
  return std::string(s.substr(i));
}

}  // namespace

bool ParseSemver(std::string_view s, SemverValue* out, std::string* error) {
  if (s.empty()) {
    *error = "Version string empty";
    return false;
  }
  size_t d1 = s.find('.');
  size_t d2 = d1 == std::string_view::npos ? d1 : s.find('.', d1 + 1);
  if (d2 == std::string_view::npos) {
    *error = "No Major.Minor.Patch elements found";
    return false;
  }
  SemverValue v;
  if (!ParseNumber(s.substr(0, d1), "major", "Major", &v.major, error)) return false;
  if (!ParseNumber(s.substr(d1 + 1, d2 - d1 - 1), "minor", "Minor", &v.minor, error)) {
    return false;
  }
  std::string_view patch = s.substr(d2 + 1);
  std::string_view build, pre;
  bool has_build = false, has_pre = false;
  if (size_t plus = patch.find('+'); plus != std::string_view::npos) {
    build = patch.substr(plus + 1);
    patch = patch.substr(0, plus);
    has_build = true;
  }
  if (size_t dash = patch.find('-'); dash != std::string_view::npos) {
    pre = patch.substr(dash + 1);
    patch = patch.substr(0, dash);
    has_pre = true;
  }
  if (!ParseNumber(patch, "patch", "Patch", &v.patch, error)) return false;
  if (has_pre) {
    for (std::string_view p : SplitDots(pre)) {
      SemverValue::PreRelease pr;
      if (p.empty()) {
        *error = "Prerelease is empty";
        return false;
      }
      if (OnlyDigits(p)) {
        if (LeadingZeroes(p)) {
          *error = "Numeric PreRelease version must not contain leading zeroes " + Quoted(p);
          return false;
        }
        if (!ParseUint(p, &pr.num, error)) return false;
        pr.is_num = true;
      } else if (OnlyAlnum(p)) {
        pr.str = std::string(p);
      } else {
        *error = "Invalid character(s) found in prerelease " + Quoted(p);
        return false;
      }
      v.pre.push_back(std::move(pr));
    }
  }
  if (has_build) {
    for (std::string_view b : SplitDots(build)) {
      if (b.empty()) {
        *error = "Build meta data is empty";
        return false;
      }
      if (!OnlyAlnum(b)) {
        *error = "Invalid character(s) found in build meta data " + Quoted(b);
        return false;
      }
      v.build.emplace_back(b);
    }
  }
  *out = std::move(v);
  return true;
}

bool ParseSemverNormalized(std::string_view s, SemverValue* out, std::string* error) {
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  std::vector<std::string> parts;
  size_t d1 = s.find('.');
  if (d1 == std::string_view::npos) {
    parts.emplace_back(s);
  } else {
    size_t d2 = s.find('.', d1 + 1);
    parts.emplace_back(s.substr(0, d1));
    if (d2 == std::string_view::npos) {
      parts.emplace_back(s.substr(d1 + 1));
    } else {
      parts.emplace_back(s.substr(d1 + 1, d2 - d1 - 1));
      parts.emplace_back(s.substr(d2 + 1));
    }
  }
  if (parts.size() < 3) {
    const std::string& last = parts.back();
    if (last.find('+') != std::string::npos || last.find('-') != std::string::npos) {
      *error = "short version cannot contain PreRelease/Build meta data";
      return false;
    }
    while (parts.size() < 3) parts.emplace_back("0");
  }
  parts[0] = TrimLeadingZeros(parts[0]);
  parts[1] = TrimLeadingZeros(parts[1]);
  size_t meta = parts[2].find_first_of("-+");
  parts[2] = TrimLeadingZeros(parts[2].substr(0, meta)) +
             (meta == std::string::npos ? "" : parts[2].substr(meta));
  return ParseSemver(parts[0] + "." + parts[1] + "." + parts[2], out, error);
}

}  // namespace internal

int CompareSemver(const SemverValue& a, const SemverValue& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.pre.empty() && b.pre.empty()) return 0;
  if (a.pre.empty()) return 1;
  if (b.pre.empty()) return -1;
  size_t i = 0;
  for (; i < a.pre.size() && i < b.pre.size(); ++i) {
    const auto& x = a.pre[i];
    const auto& y = b.pre[i];
    if (x.is_num && y.is_num) {
      if (x.num != y.num) return x.num < y.num ? -1 : 1;
    } else if (x.is_num != y.is_num) {
      return x.is_num ? -1 : 1;
    } else if (x.str != y.str) {
      return x.str < y.str ? -1 : 1;
    }
  }
  if (i == a.pre.size() && i == b.pre.size()) return 0;
  return i == a.pre.size() ? -1 : 1;
}

std::string FormatSemver(const SemverValue& v) {
  std::string out =
      std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
  for (size_t i = 0; i < v.pre.size(); ++i) {
    out += i == 0 ? "-" : ".";
    out += v.pre[i].is_num ? std::to_string(v.pre[i].num) : v.pre[i].str;
  }
  for (size_t i = 0; i < v.build.size(); ++i) {
    out += i == 0 ? "+" : ".";
    out += v.build[i];
  }
  return out;
}

namespace {

using internal::Error;
using internal::Global;
using internal::Member;

Value NewSemver(EvalContext& ctx, SemverValue v) {
  auto* p = ctx.arena->New<SemverValue>(std::move(v));
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::Semver(p);
}
Value StringToSemver(EvalContext& ctx, const Value* a) {
  SemverValue v;
  std::string error;
  if (!internal::ParseSemver(a[0].string_value(), &v, &error)) return Error(ctx, error);
  return NewSemver(ctx, std::move(v));
}
Value StringToSemverNormalize(EvalContext& ctx, const Value* a) {
  SemverValue v;
  std::string error;
  bool ok = a[1].bool_value() ? internal::ParseSemverNormalized(a[0].string_value(), &v, &error)
                              : internal::ParseSemver(a[0].string_value(), &v, &error);
  if (!ok) return Error(ctx, error);
  return NewSemver(ctx, std::move(v));
}
Value IsSemver(EvalContext&, const Value* a) {
  SemverValue v;
  std::string error;
  return Value::Bool(internal::ParseSemver(a[0].string_value(), &v, &error));
}
Value IsSemverNormalize(EvalContext&, const Value* a) {
  SemverValue v;
  std::string error;
  bool ok = a[1].bool_value() ? internal::ParseSemverNormalized(a[0].string_value(), &v, &error)
                              : internal::ParseSemver(a[0].string_value(), &v, &error);
  return Value::Bool(ok);
}
Value Major(EvalContext&, const Value* a) {
  return Value::Int(static_cast<int64_t>(a[0].semver().major));
}
Value Minor(EvalContext&, const Value* a) {
  return Value::Int(static_cast<int64_t>(a[0].semver().minor));
}
Value Patch(EvalContext&, const Value* a) {
  return Value::Int(static_cast<int64_t>(a[0].semver().patch));
}
Value IsGreaterThan(EvalContext&, const Value* a) {
  return Value::Bool(CompareSemver(a[0].semver(), a[1].semver()) == 1);
}
Value IsLessThan(EvalContext&, const Value* a) {
  return Value::Bool(CompareSemver(a[0].semver(), a[1].semver()) == -1);
}
Value CompareTo(EvalContext&, const Value* a) {
  return Value::Int(CompareSemver(a[0].semver(), a[1].semver()));
}

}  // namespace

void RegisterSemverLibrary(FunctionRegistry& r) {
  const Type V = Type::Opaque("kubernetes.Semver");
  const Type S = Type::String(), B = Type::Bool(), I = Type::Int();
  using internal::CostTraverseArg0;
  Global(r, "semver", "string_to_semver", {S}, V, StringToSemver, CostTraverseArg0);
  Global(r, "semver", "string_bool_to_semver", {S, B}, V, StringToSemverNormalize,
         CostTraverseArg0);
  Global(r, "isSemver", "is_semver_string", {S}, B, IsSemver, CostTraverseArg0);
  Global(r, "isSemver", "is_semver_string_bool", {S, B}, B, IsSemverNormalize, CostTraverseArg0);
  Member(r, "isGreaterThan", "semver_is_greater_than", {V, V}, B, IsGreaterThan);
  Member(r, "isLessThan", "semver_is_less_than", {V, V}, B, IsLessThan);
  Member(r, "compareTo", "semver_compare_to", {V, V}, I, CompareTo);
  Member(r, "major", "semver_major", {V}, I, Major);
  Member(r, "minor", "semver_minor", {V}, I, Minor);
  Member(r, "patch", "semver_patch", {V}, I, Patch);
}

}  // namespace draplane::cel
