#include "api/meta/codec_support.h"

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace draplane::api::internal {

FieldPath Path::ToFieldPath() const {
  std::vector<const Path*> chain;
  for (const Path* p = this; p != nullptr && p->kind != Kind::kRoot; p = p->parent) {
    chain.push_back(p);
  }
  FieldPath out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Path* p = *it;
    switch (p->kind) {
      case Kind::kField:
        out = out.Child(p->name);
        break;
      case Kind::kIndex:
        out = out.Index(static_cast<int64_t>(p->index));
        break;
      case Kind::kKey:
        out = out.Key(p->name);
        break;
      case Kind::kRoot:
        break;
    }
  }
  return out;
}

void DecodeContext::Add(FieldError error) {
  ++count_;
  if (errors_ == nullptr) return;
  if (count_ < kMaxDecodeErrors) {
    errors_->push_back(std::move(error));
  } else if (count_ == kMaxDecodeErrors) {
    errors_->push_back(FieldError{FieldErrorType::kInternal, error.field, "",
                                  "too many errors; the rest are not reported"});
  }
}

void DecodeContext::TypeError(const Path& path, const boost::json::value& value,
                              std::string_view expected) {
  std::string detail = "expected ";
  detail += expected;
  detail += ", got ";
  detail += JsonTypeName(value);
  Add(FieldError{FieldErrorType::kTypeInvalid, path.ToFieldPath().String(), RenderJsonValue(value),
                 std::move(detail)});
}

void DecodeContext::Invalid(const Path& path, std::string rendered_value, std::string detail) {
  Add(FieldError{FieldErrorType::kInvalid, path.ToFieldPath().String(), std::move(rendered_value),
                 std::move(detail)});
}

const boost::json::object* AsObject(const boost::json::value& json, const Path& path,
                                    DecodeContext& ctx) {
  if (const boost::json::object* obj = json.if_object()) return obj;
  ctx.TypeError(path, json, "object");
  return nullptr;
}

const boost::json::array* AsArray(const boost::json::value& json, const Path& path,
                                  DecodeContext& ctx) {
  if (const boost::json::array* arr = json.if_array()) return arr;
  ctx.TypeError(path, json, "array");
  return nullptr;
}

void DecodeString(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                  std::string* out) {
  if (const boost::json::string* s = json.if_string()) {
    out->assign(s->data(), s->size());
  } else {
    ctx.TypeError(path, json, "string");
  }
}

void DecodeBool(const boost::json::value& json, const Path& path, DecodeContext& ctx, bool* out) {
  if (const bool* b = json.if_bool()) {
    *out = *b;
  } else {
    ctx.TypeError(path, json, "boolean");
  }
}

namespace {

// Go's encoding/json accepts only integral JSON numbers for integer fields.
bool IntegerValue(const boost::json::value& json, int64_t min, int64_t max, int64_t* out) {
  if (const int64_t* i = json.if_int64()) {
    if (*i < min || *i > max) return false;
    *out = *i;
    return true;
  }
  if (const uint64_t* u = json.if_uint64()) {
    if (*u > static_cast<uint64_t>(max)) return false;
    *out = static_cast<int64_t>(*u);
    return true;
  }
  return false;
}

}  // namespace

void DecodeInt32(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                 int32_t* out) {
  int64_t v = 0;
  if (IntegerValue(json, INT32_MIN, INT32_MAX, &v)) {
    *out = static_cast<int32_t>(v);
  } else {
    ctx.TypeError(path, json, "32-bit integer");
  }
}

void DecodeInt64(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                 int64_t* out) {
  int64_t v = 0;
  if (IntegerValue(json, INT64_MIN, INT64_MAX, &v)) {
    *out = v;
  } else {
    ctx.TypeError(path, json, "64-bit integer");
  }
}

void DecodeQuantity(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                    Quantity* out) {
  std::string text;
  bool from_number = true;
  if (const boost::json::string* s = json.if_string()) {
    text.assign(s->data(), s->size());
    from_number = false;
  } else if (const int64_t* i = json.if_int64()) {
    text = std::to_string(*i);
  } else if (const uint64_t* u = json.if_uint64()) {
    text = std::to_string(*u);
  } else if (const double* d = json.if_double()) {
    text = FormatJsonDouble(*d);
    // Keep the number a JSON double when it is written back (1.0 must not become 1).
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
  } else {
    ctx.TypeError(path, json, "quantity (string or number)");
    return;
  }
  StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) {
    ctx.Invalid(path, from_number ? text : RenderValue(text), std::string(q.status().message()));
    return;
  }
  *out = std::move(q).value();
  if (ctx.options().canonical_quantities) {
    out->ForgetWrittenForm();
  } else {
    out->set_from_number(from_number);
  }
}

void DecodeTime(const boost::json::value& json, const Path& path, DecodeContext& ctx, Time* out) {
  const boost::json::string* s = json.if_string();
  if (s == nullptr) {
    ctx.TypeError(path, json, "RFC 3339 timestamp string");
    return;
  }
  StatusOr<Time> t = Time::Parse(std::string_view(s->data(), s->size()));
  if (!t.ok()) {
    ctx.Invalid(path, RenderValue(std::string_view(s->data(), s->size())),
                std::string(t.status().message()));
    return;
  }
  *out = std::move(t).value();
}

void DecodeRawJson(const boost::json::value& json, const Path& path, DecodeContext& ctx,
                   RawJson* out) {
  (void)path;
  (void)ctx;
  *out = RawJson(json);
}

boost::json::value EncodeString(const std::string& in, const boost::json::storage_ptr& sp) {
  return boost::json::value(boost::json::string_view(in.data(), in.size()), sp);
}

boost::json::value EncodeBool(bool in, const boost::json::storage_ptr& sp) {
  return boost::json::value(in, sp);
}

boost::json::value EncodeInt(int64_t in, const boost::json::storage_ptr& sp) {
  return boost::json::value(in, sp);
}

boost::json::value EncodeQuantity(const Quantity& in, const boost::json::storage_ptr& sp) {
  std::string text = in.SerializedText();
  if (in.from_number()) {
    const char* begin = text.data();
    const char* end = begin + text.size();
    int64_t i = 0;
    if (auto r = std::from_chars(begin, end, i); r.ec == std::errc() && r.ptr == end) {
      return boost::json::value(i, sp);
    }
    uint64_t u = 0;
    if (auto r = std::from_chars(begin, end, u); r.ec == std::errc() && r.ptr == end) {
      return boost::json::value(u, sp);
    }
    char* parse_end = nullptr;
    double d = std::strtod(text.c_str(), &parse_end);
    if (parse_end == text.c_str() + text.size() && std::isfinite(d)) {
      return boost::json::value(d, sp);
    }
    // Not a JSON number (a computed quantity such as "1Gi"): fall back to the string form.
  }
  return boost::json::value(boost::json::string_view(text.data(), text.size()), sp);
}

boost::json::value EncodeTime(const Time& in, const boost::json::storage_ptr& sp) {
  if (in.empty()) return boost::json::value(nullptr, sp);
  return boost::json::value(boost::json::string_view(in.text().data(), in.text().size()), sp);
}

boost::json::value EncodeRawJson(const RawJson& in, const boost::json::storage_ptr& sp) {
  if (!in.has_value()) return boost::json::value(nullptr, sp);
  return boost::json::value(in.value(), sp);
}

void EncodeUnknown(const UnknownFields& unknown, boost::json::object& out) {
  const boost::json::object* fields = unknown.fields();
  if (fields == nullptr) return;
  for (const boost::json::key_value_pair& kv : *fields) {
    if (!out.contains(kv.key())) out.emplace(kv.key(), kv.value());
  }
}

std::string_view JsonTypeName(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
      return "number";
    case boost::json::kind::string:
      return "string";
    case boost::json::kind::array:
      return "array";
    case boost::json::kind::object:
      return "object";
  }
  return "value";
}

std::string RenderJsonValue(const boost::json::value& value) {
  constexpr size_t kMaxShown = 64;
  switch (value.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return value.get_bool() ? "true" : "false";
    case boost::json::kind::int64:
      return std::to_string(value.get_int64());
    case boost::json::kind::uint64:
      return std::to_string(value.get_uint64());
    case boost::json::kind::double_:
      return FormatJsonDouble(value.get_double());
    case boost::json::kind::string: {
      const boost::json::string& s = value.get_string();
      std::string_view view(s.data(), s.size());
      if (view.size() > kMaxShown) {
        return RenderValue(view.substr(0, kMaxShown)) + "...";
      }
      return RenderValue(view);
    }
    case boost::json::kind::array:
      return value.get_array().empty() ? "[]" : "[...]";
    case boost::json::kind::object:
      return value.get_object().empty() ? "{}" : "{...}";
  }
  return "";
}

namespace {

// Shortest round-trip digits of `value` in scientific form, e.g. "1.5e+00".
std::string Scientific(double value) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  return std::string(buf, r.ptr);
}

std::string Fixed(double value) {
  char buf[512];
  auto r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

int DecimalExponent(const std::string& scientific) {
  size_t e = scientific.find('e');
  return std::atoi(scientific.c_str() + e + 1);
}

}  // namespace

std::string FormatJsonDouble(double value) {
  if (!std::isfinite(value)) return "null";
  const double abs = std::fabs(value);
  if (abs == 0 || (abs >= 1e-6 && abs < 1e21)) return Fixed(value);
  std::string s = Scientific(value);
  // Go writes "1e-7" where printf-style formatting writes "1e-07".
  const size_t n = s.size();
  if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
  return s;
}

std::string FormatGoG(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return std::signbit(value) ? "-0" : "0";
  std::string s = Scientific(value);
  const int exp = DecimalExponent(s);
  if (exp < -4 || exp >= 6) return s;  // strconv: precision 6 decides for shortest output
  return Fixed(value);
}

}  // namespace draplane::api::internal
