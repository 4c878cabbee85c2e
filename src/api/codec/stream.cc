#include "api/codec/stream.h"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <vector>

#include "api/codec/internal/documents.h"
#include "api/codec/internal/json_space.h"
#include "api/meta/codec_support.h"
#include "common/status_macros.h"

namespace draplane::api::codec {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

// basic_parser handler that keeps only the top-level members of the current document and the
// current `items` element; each finished element goes straight to the sink.
//
// Depth 0 is between documents, 1 the top-level object, 2 its member values (the `items`
// array when streaming), 3 the elements of `items`. Values that are kept (members, elements) are
// built with a value_stack, as boost::json::parser does.
class StreamHandler {
 public:
  static constexpr size_t max_object_size = boost::json::object::max_size();
  static constexpr size_t max_array_size = boost::json::array::max_size();
  static constexpr size_t max_key_size = boost::json::string::max_size();
  static constexpr size_t max_string_size = boost::json::string::max_size();

  StreamHandler(const ManifestOptions* options, const ManifestSink* sink)
      : options_(options), sink_(sink) {}

  void StartDocument(int document, int line) {
    document_ = document;
    line_ = line;
    depth_ = 0;
    building_ = false;
    in_string_ = false;
    in_items_ = false;
    streamed_ = false;
    kind_.reset();
    key_.clear();
    number_.clear();
    item_index_ = 0;
    item_error_.reset();
    skip_ = false;
    top_ = boost::json::object();
  }
  // The first problem found (or the sink's error); OK while parsing may go on.
  const Status& status() const { return status_; }

  bool on_document_begin(boost::json::error_code&) { return true; }
  bool on_document_end(boost::json::error_code&) { return true; }

  bool on_object_begin(boost::json::error_code& ec) { return BeginContainer(true, ec); }
  bool on_array_begin(boost::json::error_code& ec) { return BeginContainer(false, ec); }
  bool on_object_end(size_t n, boost::json::error_code& ec) { return EndContainer(true, n, ec); }
  bool on_array_end(size_t n, boost::json::error_code& ec) { return EndContainer(false, n, ec); }

  bool on_key_part(boost::json::string_view s, size_t, boost::json::error_code&) {
    if (building_) {
      stack_.push_chars(s);
    } else {
      key_.append(s.data(), s.size());
    }
    return true;
  }
  bool on_key(boost::json::string_view s, size_t, boost::json::error_code&) {
    if (building_) {
      stack_.push_key(s);
    } else {
      key_.append(s.data(), s.size());
    }
    return true;
  }

  bool on_string_part(boost::json::string_view s, size_t, boost::json::error_code& ec) {
    if (!in_string_) {
      if (!BeginScalar("string", ec)) return false;
      in_string_ = true;
    }
    stack_.push_chars(s);
    return true;
  }
  bool on_string(boost::json::string_view s, size_t, boost::json::error_code& ec) {
    if (!in_string_ && !BeginScalar("string", ec)) return false;
    in_string_ = false;
    stack_.push_string(s);
    return EndScalar(ec);
  }
  bool on_number_part(boost::json::string_view s, boost::json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, boost::json::string_view, boost::json::error_code& ec) {
    number_.clear();
    if (!BeginScalar("number", ec)) return false;
    stack_.push_int64(i);
    return EndScalar(ec);
  }
  bool on_uint64(uint64_t u, boost::json::string_view, boost::json::error_code& ec) {
    number_.clear();
    if (!BeginScalar("number", ec)) return false;
    stack_.push_uint64(u);
    return EndScalar(ec);
  }
  bool on_double(double d, boost::json::string_view s, boost::json::error_code& ec) {
    // Correctly rounded, as api/codec/json.cc does (Boost 1.81's conversion is not).
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
      ec = boost::json::error::exponent_overflow;
      return false;
    }
    if (!BeginScalar("number", ec)) return false;
    stack_.push_double(r.ec == std::errc() && r.ptr == end ? exact : d);
    return EndScalar(ec);
  }
  bool on_bool(bool b, boost::json::error_code& ec) {
    if (!BeginScalar("boolean", ec)) return false;
    stack_.push_bool(b);
    return EndScalar(ec);
  }
  bool on_null(boost::json::error_code& ec) {
    if (!BeginScalar("null", ec)) return false;
    stack_.push_null();
    return EndScalar(ec);
  }
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

 private:
  bool Fail(Status status, boost::json::error_code& ec) {
    if (status_.ok()) status_ = std::move(status);
    ec = boost::json::error::exception;
    return false;
  }

  std::string Prefix() const { return std::to_string(document_) + ": "; }

  bool StreamItems() const {
    return options_->flatten_lists && key_ == "items" && !(kind_ && !IsListKind(*kind_));
  }

  // A value starts at depth 0, 1 or 2 (outside any value being built).
  bool BeginValue(bool container, bool object, std::string_view type, boost::json::error_code& ec) {
    if (depth_ == 0) {
      if (object) return true;  // the document
      return Fail(InvalidArgumentError(Prefix() + "expected an object, got " + std::string(type)),
                  ec);
    }
    if (depth_ == 1) {
      if (container && !object && StreamItems()) {
        in_items_ = true;
        streamed_ = true;
        return true;
      }
      building_ = true;
      item_ = false;
      build_depth_ = 2;
      stack_.reset(top_.storage());
      return true;
    }
    // depth_ == 2 inside the streamed `items`.
    if (!object || item_error_) {
      Status error = InvalidArgumentError(Prefix() + "items[" + std::to_string(item_index_) +
                                          "]: expected an object, got " + std::string(type));
      if (kind_) return Fail(std::move(error), ec);
      // Without a kind yet the document may turn out not to be a List, where ParseManifest
      // takes `items` as an ordinary field: decide at the end of the document, deliver no more.
      if (!item_error_) item_error_ = std::move(error);
      building_ = true;
      item_ = true;
      skip_ = true;
      build_depth_ = 3;
      stack_.reset();
      return true;
    }
    building_ = true;
    item_ = true;
    build_depth_ = 3;
    stack_.reset();
    return true;
  }

  bool BeginContainer(bool object, boost::json::error_code& ec) {
    if (!building_ && !BeginValue(true, object, object ? "object" : "array", ec)) return false;
    ++depth_;
    return true;
  }

  bool EndContainer(bool object, size_t n, boost::json::error_code& ec) {
    --depth_;
    if (building_) {
      if (object) {
        stack_.push_object(n);
      } else {
        stack_.push_array(n);
      }
      return depth_ < build_depth_ ? FinishValue(ec) : true;
    }
    if (in_items_ && depth_ == 1) {  // the end of `items`
      in_items_ = false;
      key_.clear();
      return true;
    }
    if (depth_ == 0) return FinishDocument(ec);
    return true;
  }

  bool BeginScalar(std::string_view type, boost::json::error_code& ec) {
    return building_ || BeginValue(false, false, type, ec);
  }
  bool EndScalar(boost::json::error_code& ec) {
    return depth_ < build_depth_ ? FinishValue(ec) : true;
  }

  bool FinishValue(boost::json::error_code& ec) {
    building_ = false;
    boost::json::value value = stack_.release();
    if (skip_) {
      skip_ = false;
      ++item_index_;
      return true;
    }
    if (!item_) {
      if (key_ == "kind" && value.is_string()) {
        kind_ = std::string(value.get_string().data(), value.get_string().size());
      }
      top_[key_] = std::move(value);
      key_.clear();
      return true;
    }
    ManifestObject object{SourcePosition{document_, line_, item_index_++}, std::move(value)};
    Status status = (*sink_)(object);
    if (!status.ok()) return Fail(std::move(status), ec);
    return true;
  }

  bool FinishDocument(boost::json::error_code& ec) {
    if (streamed_) {
      if (item_error_ && kind_ && IsListKind(*kind_)) return Fail(std::move(*item_error_), ec);
      if (!kind_ || !IsListKind(*kind_)) {
        return Fail(
            InvalidArgumentError(Prefix() + "a top-level items array needs a List kind, got " +
                                 (kind_ ? api::internal::RenderJsonValue(boost::json::value(*kind_))
                                        : std::string("no kind"))),
            ec);
      }
      return true;
    }
    Status status = internal::EmitDocument(boost::json::value(std::move(top_)), document_, line_,
                                           *options_, *sink_);
    top_ = boost::json::object();
    if (!status.ok()) return Fail(std::move(status), ec);
    return true;
  }

  const ManifestOptions* options_;
  const ManifestSink* sink_;
  Status status_;
  boost::json::value_stack stack_;
  boost::json::object top_;
  std::optional<std::string> kind_;
  std::optional<Status> item_error_;  // the first bad item seen while the kind was unknown
  std::string key_;
  std::string number_;
  int document_ = 0;
  int line_ = 1;
  int depth_ = 0;
  int build_depth_ = 0;
  int item_index_ = 0;
  bool building_ = false;
  bool item_ = false;
  bool in_string_ = false;
  bool in_items_ = false;
  bool streamed_ = false;
  bool skip_ = false;  // building a value only to discard it
};

using internal::IsJsonSpace;

// Tracks the line and column of the next byte to be consumed.
struct Cursor {
  int line = 1;
  int column = 1;
  void Advance(const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (p[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
  }
};

Status StreamJson(std::istream& in, std::vector<char> first, const ManifestOptions& options,
                  const ManifestSink& sink) {
  boost::json::parse_options parse_options;
  parse_options.max_depth = options.limits.max_depth;
  boost::json::basic_parser<StreamHandler> parser(parse_options, &options, &sink);
  std::vector<char> buf = std::move(first);
  Cursor cursor;
  size_t total = 0;
  int document = 0;
  bool in_document = false;
  auto parse_error = [&](const boost::json::error_code& ec, const Cursor& at) {
    if (!parser.handler().status().ok()) return parser.handler().status();
    const std::string what =
        ec == boost::json::error::too_deep
            ? "nesting deeper than " + std::to_string(options.limits.max_depth) + " levels"
        : ec == boost::json::error::exponent_overflow ? "number out of range"
                                                      : ec.message();
    return InvalidArgumentError(std::to_string(document) + ": line " + std::to_string(at.line) +
                                " column " + std::to_string(at.column) + ": " + what);
  };
  while (true) {
    const size_t n = buf.size();
    total += n;
    if (total > options.limits.max_bytes) {
      return InvalidArgumentError("input is larger than the limit of " +
                                  std::to_string(options.limits.max_bytes) + " bytes");
    }
    size_t pos = 0;
    while (pos < n) {
      if (!in_document) {
        while (pos < n && IsJsonSpace(buf[pos])) cursor.Advance(&buf[pos++], 1);
        if (pos == n) break;
        parser.reset();
        parser.handler().StartDocument(++document, cursor.line);
        in_document = true;
      }
      boost::json::error_code ec;
      const size_t used = parser.write_some(true, buf.data() + pos, n - pos, ec);
      Cursor at = cursor;
      at.Advance(buf.data() + pos, used);
      if (ec) return parse_error(ec, at);
      cursor = at;
      pos += used;
      if (parser.done()) in_document = false;
    }
    if (n == 0) break;
    buf.resize(kChunkBytes);
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.resize(static_cast<size_t>(in.gcount()));
    if (in.bad()) return InvalidArgumentError("read error");
  }
  if (in_document) {
    boost::json::error_code ec;
    parser.write_some(false, nullptr, 0, ec);
    if (!ec && !parser.done()) ec = boost::json::error::incomplete;
    if (ec) return parse_error(ec, cursor);
  }
  return parser.handler().status();
}

}  // namespace

Status StreamManifest(std::istream& in, const ManifestOptions& options, const ManifestSink& sink) {
  // Read until the first non-space character to tell JSON from YAML, as ParseManifest does.
  std::vector<char> first;
  bool json = true;  // an input of only whitespace holds no documents either way
  size_t scanned = 0;
  while (true) {
    const size_t old = first.size();
    first.resize(old + kChunkBytes);
    in.read(first.data() + old, static_cast<std::streamsize>(kChunkBytes));
    first.resize(old + static_cast<size_t>(in.gcount()));
    if (in.bad()) return InvalidArgumentError("read error");
    while (scanned < first.size() && IsJsonSpace(first[scanned])) ++scanned;
    if (scanned < first.size()) {
      json = first[scanned] == '{' || first[scanned] == '[';
      break;
    }
    if (static_cast<size_t>(in.gcount()) == 0) break;
  }
  if (json) return StreamJson(in, std::move(first), options, sink);
  std::string text(first.begin(), first.end());
  text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<ManifestObject> objects, ParseManifest(text, options));
  for (ManifestObject& object : objects) DRAPLANE_RETURN_IF_ERROR(sink(object));
  return Status::Ok();
}

Status StreamManifestFile(const std::string& path, const ManifestOptions& options,
                          const ManifestSink& sink) {
  if (path == "-") return StreamManifest(std::cin, options, sink);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open file");
  return StreamManifest(in, options, sink);
}

}  // namespace draplane::api::codec
