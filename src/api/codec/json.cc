#include "api/codec/json.h"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "api/codec/internal/json_space.h"
#include "api/meta/codec_support.h"
#include "common/status_macros.h"

namespace draplane::api::codec {
namespace {

using internal::IsJsonSpace;

Status ParseError(std::string_view text, size_t offset, const boost::json::error_code& ec,
                  const ParseLimits& limits) {
  int line = 0, column = 0;
  LineColumn(text, offset, &line, &column);
  std::string what = ec == boost::json::error::too_deep
                         ? "nesting deeper than " + std::to_string(limits.max_depth) + " levels"
                     : ec == boost::json::error::exponent_overflow ? "number out of range"
                                                                   : ec.message();
  return InvalidArgumentError("line " + std::to_string(line) + " column " + std::to_string(column) +
                              ": " + what);
}

Status CheckSize(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return InvalidArgumentError("input of " + std::to_string(text.size()) +
                                " bytes is larger than the limit of " +
                                std::to_string(limits.max_bytes) + " bytes");
  }
  return Status::Ok();
}

boost::json::parse_options Options(const ParseLimits& limits) {
  boost::json::parse_options opts;
  opts.max_depth = limits.max_depth;
  return opts;
}

// Builds a DOM like boost::json::parser, except that doubles are converted from their text with
// std::from_chars: Boost 1.81's own conversion is not correctly rounded (about a third of all
// 17-digit doubles come out one unit in the last place off), which would break round trips.
class DomHandler {
 public:
  static constexpr size_t max_object_size = boost::json::object::max_size();
  static constexpr size_t max_array_size = boost::json::array::max_size();
  static constexpr size_t max_key_size = boost::json::string::max_size();
  static constexpr size_t max_string_size = boost::json::string::max_size();

  void Reset(const boost::json::storage_ptr& sp) {
    stack_.reset(sp);
    number_.clear();
  }
  boost::json::value Release() { return stack_.release(); }

  bool on_document_begin(boost::json::error_code&) { return true; }
  bool on_document_end(boost::json::error_code&) { return true; }
  bool on_object_begin(boost::json::error_code&) { return true; }
  bool on_object_end(size_t n, boost::json::error_code&) {
    stack_.push_object(n);
    return true;
  }
  bool on_array_begin(boost::json::error_code&) { return true; }
  bool on_array_end(size_t n, boost::json::error_code&) {
    stack_.push_array(n);
    return true;
  }
  bool on_key_part(boost::json::string_view s, size_t, boost::json::error_code&) {
    stack_.push_chars(s);
    return true;
  }
  bool on_key(boost::json::string_view s, size_t, boost::json::error_code&) {
    stack_.push_key(s);
    return true;
  }
  bool on_string_part(boost::json::string_view s, size_t, boost::json::error_code&) {
    stack_.push_chars(s);
    return true;
  }
  bool on_string(boost::json::string_view s, size_t, boost::json::error_code&) {
    stack_.push_string(s);
    return true;
  }
  bool on_number_part(boost::json::string_view s, boost::json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, boost::json::string_view, boost::json::error_code&) {
    number_.clear();
    stack_.push_int64(i);
    return true;
  }
  bool on_uint64(uint64_t u, boost::json::string_view, boost::json::error_code&) {
    number_.clear();
    stack_.push_uint64(u);
    return true;
  }
  bool on_double(double d, boost::json::string_view s, boost::json::error_code& ec) {
    number_.append(s.data(), s.size());
    double exact = d;
    const char* end = number_.data() + number_.size();
    auto r = std::from_chars(number_.data(), end, exact);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow reads as (nearly) zero, as in Go; overflow is an error below.
      exact = std::strtod(number_.c_str(), nullptr);
      r.ec = std::errc();
    }
    number_.clear();
    if (!std::isfinite(exact)) {
      // Go's encoding/json rejects numbers a float64 cannot hold; so do we.
      ec = boost::json::error::exponent_overflow;
      return false;
    }
    stack_.push_double(r.ec == std::errc() && r.ptr == end ? exact : d);
    return true;
  }
  bool on_bool(bool b, boost::json::error_code&) {
    stack_.push_bool(b);
    return true;
  }
  bool on_null(boost::json::error_code&) {
    stack_.push_null();
    return true;
  }
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

 private:
  boost::json::value_stack stack_;
  std::string number_;
};

using Parser = boost::json::basic_parser<DomHandler>;

// Parses the value starting at `*pos` (after whitespace); advances `*pos` past it.
StatusOr<boost::json::value> ParseOne(std::string_view text, size_t* pos, Parser& parser,
                                      const boost::json::storage_ptr& sp,
                                      const ParseLimits& limits) {
  parser.reset();
  parser.handler().Reset(sp);
  boost::json::error_code ec;
  size_t used = parser.write_some(false, text.data() + *pos, text.size() - *pos, ec);
  if (!ec && !parser.done()) ec = boost::json::error::incomplete;
  if (ec) return ParseError(text, *pos + used, ec, limits);
  *pos += used;
  return parser.handler().Release();
}

void AppendString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the current run of bytes that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xf]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void Newline(int indent, int depth, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(indent) * depth, ' ');
}

void Append(const boost::json::value& value, int indent, int depth, std::string* out) {
  switch (value.kind()) {
    case boost::json::kind::null:
      out->append("null");
      return;
    case boost::json::kind::bool_:
      out->append(value.get_bool() ? "true" : "false");
      return;
    case boost::json::kind::int64:
      out->append(std::to_string(value.get_int64()));
      return;
    case boost::json::kind::uint64:
      out->append(std::to_string(value.get_uint64()));
      return;
    case boost::json::kind::double_:
      out->append(api::internal::FormatJsonDouble(value.get_double()));
      return;
    case boost::json::kind::string: {
      const boost::json::string& s = value.get_string();
      AppendString(std::string_view(s.data(), s.size()), out);
      return;
    }
    case boost::json::kind::array: {
      const boost::json::array& arr = value.get_array();
      if (arr.empty()) {
        out->append("[]");
        return;
      }
      out->push_back('[');
      bool first = true;
      for (const boost::json::value& item : arr) {
        if (!first) out->push_back(',');
        first = false;
        if (indent > 0) Newline(indent, depth + 1, out);
        Append(item, indent, depth + 1, out);
      }
      if (indent > 0) Newline(indent, depth, out);
      out->push_back(']');
      return;
    }
    case boost::json::kind::object: {
      const boost::json::object& obj = value.get_object();
      if (obj.empty()) {
        out->append("{}");
        return;
      }
      out->push_back('{');
      bool first = true;
      for (const boost::json::key_value_pair& kv : obj) {
        if (!first) out->push_back(',');
        first = false;
        if (indent > 0) Newline(indent, depth + 1, out);
        AppendString(std::string_view(kv.key().data(), kv.key().size()), out);
        out->append(indent > 0 ? ": " : ":");
        Append(kv.value(), indent, depth + 1, out);
      }
      if (indent > 0) Newline(indent, depth, out);
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

bool JsonEqual(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_object() && b.is_object()) {
    const boost::json::object& x = a.get_object();
    const boost::json::object& y = b.get_object();
    if (x.size() != y.size()) return false;
    auto yi = y.begin();
    for (auto xi = x.begin(); xi != x.end(); ++xi, ++yi) {
      if (xi->key() != yi->key()) return x == y;  // another order
      if (!JsonEqual(xi->value(), yi->value())) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    const boost::json::array& x = a.get_array();
    const boost::json::array& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!JsonEqual(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool JsonIdentical(const boost::json::value& a, const boost::json::value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const boost::json::object& x = a.get_object();
    const boost::json::object& y = b.get_object();
    if (x.size() != y.size()) return false;
    auto yi = y.begin();
    for (auto xi = x.begin(); xi != x.end(); ++xi, ++yi) {
      if (xi->key() != yi->key() || !JsonIdentical(xi->value(), yi->value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const boost::json::array& x = a.get_array();
    const boost::json::array& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!JsonIdentical(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

void LineColumn(std::string_view text, size_t offset, int* line, int* column) {
  *line = 1;
  *column = 1;
  const size_t end = std::min(offset, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++*line;
      *column = 1;
    } else {
      ++*column;
    }
  }
}

StatusOr<boost::json::value> ParseJson(std::string_view text, const ParseLimits& limits,
                                       boost::json::storage_ptr sp) {
  DRAPLANE_RETURN_IF_ERROR(CheckSize(text, limits));
  Parser parser(Options(limits));
  size_t pos = 0;
  StatusOr<boost::json::value> value = ParseOne(text, &pos, parser, sp, limits);
  if (!value.ok()) return value.status();
  while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
  if (pos != text.size()) {
    return ParseError(text, pos, boost::json::error::extra_data, limits);
  }
  return value;
}

StatusOr<std::vector<JsonDocument>> ParseJsonStream(std::string_view text,
                                                    const ParseLimits& limits,
                                                    boost::json::storage_ptr sp) {
  DRAPLANE_RETURN_IF_ERROR(CheckSize(text, limits));
  Parser parser(Options(limits));
  std::vector<JsonDocument> docs;
  size_t pos = 0;
  size_t counted = 0;  // lines are counted up to here
  int line = 1;
  while (true) {
    while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
    if (pos == text.size()) break;
    for (; counted < pos; ++counted) line += text[counted] == '\n' ? 1 : 0;
    StatusOr<boost::json::value> value = ParseOne(text, &pos, parser, sp, limits);
    if (!value.ok()) {
      return InvalidArgumentError(std::to_string(docs.size() + 1) + ": " +
                                  std::string(value.status().message()));
    }
    docs.push_back(JsonDocument{std::move(value).value(), line});
  }
  return docs;
}

void AppendJson(const boost::json::value& value, const JsonWriteOptions& options,
                std::string* out) {
  Append(value, options.indent, 0, out);
}

std::string WriteJson(const boost::json::value& value, const JsonWriteOptions& options) {
  std::string out;
  AppendJson(value, options, &out);
  if (options.indent > 0) out.push_back('\n');
  return out;
}

}  // namespace draplane::api::codec
