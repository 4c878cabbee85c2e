#include "api/codec/json.h"

#include <boost/json.hpp>

#include "api/meta/codec_support.h"
#include "common/status_macros.h"

namespace draplane::api::codec {
namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

Status ParseError(std::string_view text, size_t offset, const boost::json::error_code& ec,
                  const ParseLimits& limits) {
  int line = 0, column = 0;
  LineColumn(text, offset, &line, &column);
  std::string what = ec == boost::json::error::too_deep
                         ? "nesting deeper than " + std::to_string(limits.max_depth) + " levels"
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

// Parses the value starting at `*pos` (after whitespace); advances `*pos` past it.
StatusOr<boost::json::value> ParseOne(std::string_view text, size_t* pos,
                                      boost::json::stream_parser& parser,
                                      const boost::json::storage_ptr& sp,
                                      const ParseLimits& limits) {
  parser.reset(sp);
  boost::json::error_code ec;
  size_t used = parser.write_some(text.data() + *pos, text.size() - *pos, ec);
  if (!ec && !parser.done()) parser.finish(ec);
  if (ec) return ParseError(text, *pos + used, ec, limits);
  *pos += used;
  return parser.release();
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
  boost::json::stream_parser parser({}, Options(limits));
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
  boost::json::stream_parser parser({}, Options(limits));
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
