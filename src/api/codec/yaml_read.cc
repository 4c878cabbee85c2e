// Reading YAML (yaml.h's ParseYaml): input checks before yaml-cpp runs, then yaml-cpp's events
// turned into JSON values with go-yaml v2's scalar resolution (internal/yaml_scalar.h).
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <optional>
#include <streambuf>

#include "api/codec/internal/yaml_scalar.h"
#include "api/codec/yaml.h"
#include "api/meta/codec_support.h"

namespace draplane::api::codec {
namespace {

using internal::FormatFloat32G;
using internal::Resolved;
using internal::ResolvedToJson;
using internal::ResolvePlain;

// ---------------------------------------------------------------------------------------------
// Input checks before yaml-cpp runs.

// Validates UTF-8 and go-yaml's reader rule "control characters are not allowed". Returns the
// offset of the first bad byte, or npos.
size_t FindBadCharacter(std::string_view text, const char** problem) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    uint32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    } else {
      *problem = "invalid UTF-8";
      return i;
    }
    if (i + len > n) {
      *problem = "invalid UTF-8";
      return i;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *problem = "invalid UTF-8";
        return i;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *problem = "invalid UTF-8";
      return i;
    }
    const bool allowed = cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) ||
                         cp == 0x85 || (cp >= 0xA0 && cp <= 0xD7FF) ||
                         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!allowed) {
      *problem = "control characters are not allowed";
      return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// An upper bound of the nesting depth yaml-cpp will recurse to, from a single pass over the
// text: block collections are counted by distinct indentation levels (each worth two levels,
// since a sequence may sit at its key's indentation) plus compact `- ` / `? ` indicators, flow
// collections by their brackets. Quoted scalars, block scalars and comments are skipped.
// Returns the maximum and the 0-based line where it was reached; `*open_quote_line` is the
// 0-based line of a quoted scalar still open at the end of the input, or -1.
size_t EstimateDepth(std::string_view text, int* deepest_document, int* deepest_line,
                     int* open_quote_line) {
  std::vector<size_t> indents;
  int document = 1;  // counted as ParseYaml counts them: every `---` after the first content
  bool content = false;
  size_t flow = 0;
  size_t best = 0;
  char quote = 0;
  bool block_scalar = false;
  size_t block_scalar_parent = 0;
  int line_no = 0;
  int quote_line = 0;
  *deepest_document = 1;
  *deepest_line = 0;
  *open_quote_line = -1;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t indent = i;
    const bool blank = i == line.size() || line[i] == '#';
    if (line.substr(0, 3) == "---" || line.substr(0, 3) == "...") {
      if (line.size() == 3 || line[3] == ' ' || line[3] == '\t') {
        if (line[0] == '-' && content) ++document;
        indents.clear();
        flow = 0;
        quote = 0;
        block_scalar = false;
        i = 3;
      }
    }
    if (!blank) content = true;
    if (block_scalar) {
      if (blank || indent > block_scalar_parent) {
        pos = end + 1;
        ++line_no;
        continue;
      }
      block_scalar = false;
    }
    bool value_start = true;
    if (quote == 0 && flow == 0 && !blank) {
      while (!indents.empty() && indents.back() > indent) indents.pop_back();
      if (indents.empty() || indents.back() < indent) indents.push_back(indent);
    }
    while (i < line.size()) {
      const char c = line[i];
      if (quote != 0) {
        if (quote == '"' && c == '\\') {
          i += 2;
          continue;
        }
        if (c == quote) {
          if (quote == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
            i += 2;
            continue;
          }
          quote = 0;
          value_start = false;
        }
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t') {
        ++i;
        continue;
      }
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) break;
      const bool followed_by_space =
          i + 1 >= line.size() || line[i + 1] == ' ' || line[i + 1] == '\t';
      if (flow == 0 && value_start && (c == '-' || c == '?') && followed_by_space) {
        if (indents.empty() || indents.back() < i + 2) indents.push_back(i + 2);
        i += 1;
        continue;
      }
      if (c == ':' && followed_by_space) {
        value_start = true;
        ++i;
        continue;
      }
      if (value_start && (c == '"' || c == '\'')) {
        quote = c;
        quote_line = line_no;
        ++i;
        continue;
      }
      if (flow == 0 && value_start && (c == '|' || c == '>')) {
        block_scalar = true;
        block_scalar_parent = indent;
        break;
      }
      if ((c == '[' || c == '{') && (flow > 0 || value_start)) {
        ++flow;
        if (2 * indents.size() + flow > best) {
          best = 2 * indents.size() + flow;
          *deepest_document = document;
          *deepest_line = line_no;
        }
        value_start = true;
        ++i;
        continue;
      }
      if ((c == ']' || c == '}') && flow > 0) {
        --flow;
        value_start = false;
        ++i;
        continue;
      }
      if (c == ',' && flow > 0) {
        value_start = true;
        ++i;
        continue;
      }
      value_start = false;
      ++i;
    }
    const size_t depth = 2 * indents.size() + flow;
    if (depth > best) {
      best = depth;
      *deepest_document = document;
      *deepest_line = line_no;
    }
    pos = end + 1;
    ++line_no;
  }
  if (quote != 0) *open_quote_line = quote_line;
  return best;
}

// ---------------------------------------------------------------------------------------------
// yaml-cpp events -> JSON.

class ViewStreambuf : public std::streambuf {
 public:
  explicit ViewStreambuf(std::string_view text) {
    char* p = const_cast<char*>(text.data());
    setg(p, p, p + text.size());
  }
};

// Counts the JSON values in `v` (itself included).
size_t CountNodes(const boost::json::value& v) {
  size_t n = 1;
  if (const boost::json::array* a = v.if_array()) {
    for (const boost::json::value& x : *a) n += CountNodes(x);
  } else if (const boost::json::object* o = v.if_object()) {
    for (const boost::json::key_value_pair& kv : *o) n += CountNodes(kv.value());
  }
  return n;
}

size_t Depth(const boost::json::value& v) {
  size_t d = 0;
  if (const boost::json::array* a = v.if_array()) {
    for (const boost::json::value& x : *a) d = std::max(d, Depth(x));
    return d + 1;
  }
  if (const boost::json::object* o = v.if_object()) {
    for (const boost::json::key_value_pair& kv : *o) d = std::max(d, Depth(kv.value()));
    return d + 1;
  }
  return 0;
}

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// Builds one JSON value per document. Errors do not throw: the first one is recorded and every
// later event of the document is ignored.
class JsonBuilder : public YAML::EventHandler {
 public:
  JsonBuilder(const ParseLimits& limits, size_t node_budget, boost::json::storage_ptr sp)
      : limits_(limits), node_budget_(node_budget), sp_(std::move(sp)) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  int error_line() const { return error_line_; }
  int document_line() const { return document_line_; }
  size_t document_offset() const { return document_offset_; }
  boost::json::value TakeDocument() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    stack_.clear();
    anchors_.clear();
    root_ = boost::json::value(nullptr, sp_);
    nodes_ = 0;
    document_line_ = mark.line + 1;
    document_offset_ = mark.pos < 0 ? 0 : static_cast<size_t>(mark.pos);
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    Complete(mark, boost::json::value(nullptr, sp_), anchor, /*null_key=*/true);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    auto it = std::find_if(anchors_.begin(), anchors_.end(),
                           [&](const Anchor& a) { return a.id == anchor; });
    if (it == anchors_.end()) {
      Fail(mark, "unknown anchor");
      return;
    }
    nodes_ += it->nodes;
    if (nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return;
    }
    if (stack_.size() + it->depth > limits_.max_depth) {
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    Complete(mark, boost::json::value(it->value, sp_), 0, /*null_key=*/false);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (failed()) return;
    const bool key_position = !stack_.empty() && stack_.back().is_map && !stack_.back().have_key;
    if (key_position) {
      std::optional<std::string> key = KeyString(mark, tag, value);
      if (!key) return;
      Frame& f = stack_.back();
      f.key = std::move(*key);
      f.have_key = true;
      f.merge = tag == "?" && value == "<<";
      ++nodes_;
      if (anchor != 0) {
        Remember(anchor, boost::json::value(boost::json::string_view(f.key), sp_));
      }
      return;
    }
    boost::json::value v;
    if (!ScalarValue(mark, tag, value, &v)) return;
    Complete(mark, std::move(v), anchor, /*null_key=*/false);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/false, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/true, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool is_map = false;
    boost::json::value value;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    bool have_key = false;
    bool merge = false;
    std::string key;
  };
  struct Anchor {
    YAML::anchor_t id;
    boost::json::value value;
    size_t nodes;
    size_t depth;
  };

  void Fail(const YAML::Mark& mark, std::string message) {
    if (failed()) return;
    error_ = std::move(message);
    error_line_ = mark.line + 1;
  }

  void Open(const YAML::Mark& mark, bool is_map, YAML::anchor_t anchor) {
    if (failed()) return;
    if (!stack_.empty() && stack_.back().is_map && !stack_.back().have_key) {
      Fail(mark, "mapping keys must be scalars");
      return;
    }
    if (stack_.size() >= limits_.max_depth) {
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    if (++nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return;
    }
    Frame f;
    f.is_map = is_map;
    f.value = is_map ? boost::json::value(boost::json::object(sp_))
                     : boost::json::value(boost::json::array(sp_));
    f.anchor = anchor;
    f.mark = mark;
    stack_.push_back(std::move(f));
  }

  void Close() {
    if (failed() || stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Complete(f.mark, std::move(f.value), f.anchor, /*null_key=*/false);
  }

  void Remember(YAML::anchor_t anchor, const boost::json::value& v) {
    Anchor a{anchor, boost::json::value(v, sp_), CountNodes(v), Depth(v)};
    for (Anchor& existing : anchors_) {
      if (existing.id == anchor) {
        existing = std::move(a);
        return;
      }
    }
    anchors_.push_back(std::move(a));
  }

  // Adds a finished value to its parent (or makes it the document).
  void Complete(const YAML::Mark& mark, boost::json::value v, YAML::anchor_t anchor,
                bool null_key) {
    if (anchor != 0) Remember(anchor, v);
    if (stack_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (!top.is_map) {
      top.value.get_array().push_back(std::move(v));
      return;
    }
    if (!top.have_key) {
      // A key that is not a scalar event: an empty node (null) or an alias.
      if (null_key || v.is_null()) {
        Fail(mark, "mapping keys must not be null");
        return;
      }
      std::optional<std::string> key = KeyFromJson(mark, v);
      if (!key) return;
      top.key = std::move(*key);
      top.have_key = true;
      top.merge = false;
      return;
    }
    top.have_key = false;
    boost::json::object& obj = top.value.get_object();
    if (top.merge) {
      Merge(mark, v, obj);
      return;
    }
    obj[top.key] = std::move(v);
  }

  // `<<: map` or `<<: [map, ...]`: go-yaml v2 merges in place; earlier maps of a list win.
  void Merge(const YAML::Mark& mark, const boost::json::value& v, boost::json::object& obj) {
    if (const boost::json::object* src = v.if_object()) {
      for (const boost::json::key_value_pair& kv : *src) obj[kv.key()] = kv.value();
      return;
    }
    if (const boost::json::array* list = v.if_array()) {
      for (auto it = list->rbegin(); it != list->rend(); ++it) {
        const boost::json::object* src = it->if_object();
        if (src == nullptr) {
          Fail(mark, "map merge requires map or sequence of maps as the value");
          return;
        }
        for (const boost::json::key_value_pair& kv : *src) obj[kv.key()] = kv.value();
      }
      return;
    }
    Fail(mark, "map merge requires map or sequence of maps as the value");
  }

  std::optional<std::string> KeyFromJson(const YAML::Mark& mark, const boost::json::value& v) {
    if (const boost::json::string* s = v.if_string()) return std::string(s->data(), s->size());
    if (const bool* b = v.if_bool()) return std::string(*b ? "true" : "false");
    if (const int64_t* i = v.if_int64()) return std::to_string(*i);
    if (const uint64_t* u = v.if_uint64()) return std::to_string(*u);
    if (const double* d = v.if_double()) return FormatFloat32G(*d);
    Fail(mark, "mapping keys must be scalars");
    return std::nullopt;
  }

  // The JSON key for a scalar in key position (sigs.k8s.io/yaml converts non-string keys).
  std::optional<std::string> KeyString(const YAML::Mark& mark, const std::string& tag,
                                       const std::string& value) {
    if (tag != "?") {
      boost::json::value v;
      if (!ScalarValue(mark, tag, value, &v)) return std::nullopt;
      if (v.is_null()) {
        Fail(mark, "mapping keys must not be null");
        return std::nullopt;
      }
      return KeyFromJson(mark, v);
    }
    const Resolved r = ResolvePlain(value);
    switch (r.kind) {
      case Resolved::Kind::kNull:
        Fail(mark, "mapping keys must not be null");
        return std::nullopt;
      case Resolved::Kind::kBool:
        return std::string(r.b ? "true" : "false");
      case Resolved::Kind::kInt:
        return std::to_string(r.i);
      case Resolved::Kind::kUint:
        return std::to_string(r.u);
      case Resolved::Kind::kFloat:
        return FormatFloat32G(r.f);
      case Resolved::Kind::kBigInt:
        Fail(mark, "unsupported map key " + value);
        return std::nullopt;
      case Resolved::Kind::kString:
        return value;
    }
    return value;
  }

  bool ScalarValue(const YAML::Mark& mark, const std::string& tag, const std::string& value,
                   boost::json::value* out) {
    if (++nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return false;
    }
    std::string_view t = tag;
    if (t == "?") {
      std::optional<std::string> error = ResolvedToJson(ResolvePlain(value), value, sp_, out);
      if (error) {
        Fail(mark, *error);
        return false;
      }
      return true;
    }
    if (t.substr(0, kTagPrefix.size()) == kTagPrefix) {
      t.remove_prefix(kTagPrefix.size());
      if (t == "binary") {
        Fail(mark, "!!binary scalars are not supported");
        return false;
      }
      if (t == "null" || t == "bool" || t == "int" || t == "float") {
        Resolved r = ResolvePlain(value);
        using K = Resolved::Kind;
        if (t == "float" && r.kind == K::kInt) {
          r.kind = K::kFloat;
          r.f = static_cast<double>(r.i);
        } else if (t == "float" && r.kind == K::kUint) {
          r.kind = K::kFloat;
          r.f = static_cast<double>(r.u);
        }
        const bool match =
            (t == "null" && r.kind == K::kNull) || (t == "bool" && r.kind == K::kBool) ||
            (t == "int" && (r.kind == K::kInt || r.kind == K::kUint || r.kind == K::kBigInt)) ||
            (t == "float" && (r.kind == K::kFloat || r.kind == K::kBigInt));
        if (!match) {
          Fail(mark, "cannot decode `" + value + "` as a !!" + std::string(t));
          return false;
        }
        std::optional<std::string> error = ResolvedToJson(r, value, sp_, out);
        if (error) {
          Fail(mark, *error);
          return false;
        }
        return true;
      }
    }
    // Quoted and block scalars, `!!str`, `!!timestamp` and application tags: strings.
    *out = boost::json::value(boost::json::string_view(value.data(), value.size()), sp_);
    return true;
  }

  const ParseLimits& limits_;
  const size_t node_budget_;
  boost::json::storage_ptr sp_;
  std::vector<Frame> stack_;
  std::vector<Anchor> anchors_;
  boost::json::value root_;
  size_t nodes_ = 0;
  std::string error_;
  int error_line_ = 0;
  int document_line_ = 1;
  size_t document_offset_ = 0;
};

Status DocumentError(size_t document, int line, std::string_view message) {
  return InvalidArgumentError(std::to_string(document) + ": line " + std::to_string(line) + ": " +
                              std::string(message));
}

}  // namespace

StatusOr<std::vector<YamlDocument>> ParseYaml(std::string_view text, const ParseLimits& limits,
                                              boost::json::storage_ptr sp) {
  if (text.size() > limits.max_bytes) {
    return InvalidArgumentError("input of " + std::to_string(text.size()) +
                                " bytes is larger than the limit of " +
                                std::to_string(limits.max_bytes) + " bytes");
  }
  // YAML, and go-yaml under kubectl, read a lone carriage return as a line break; yaml-cpp reads
  // it as content. Rewriting it to LF keeps every offset, so lines count as go-yaml counts them.
  std::string with_line_feeds;
  for (size_t cr = text.find('\r'); cr != std::string_view::npos; cr = text.find('\r', cr + 1)) {
    if (cr + 1 < text.size() && text[cr + 1] == '\n') continue;
    if (with_line_feeds.empty()) with_line_feeds.assign(text);
    with_line_feeds[cr] = '\n';
  }
  if (!with_line_feeds.empty()) text = with_line_feeds;
  const char* problem = nullptr;
  if (size_t bad = FindBadCharacter(text, &problem); bad != std::string_view::npos) {
    int line = 1;
    for (size_t i = 0; i < bad; ++i) line += text[i] == '\n' ? 1 : 0;
    return InvalidArgumentError("1: line " + std::to_string(line) + ": " + problem);
  }
  // yaml-cpp 0.7 gives up at 500 nested nodes (scalars count) with a bare "bad file". YAML is
  // held to kMaxYamlDepth collections, counted exactly by the builder, which fails before yaml-cpp
  // recurses that far. The estimate (at most twice the real depth, plus one indented line) only
  // turns hostile input away early, so it never rejects a document the builder would accept.
  ParseLimits yaml_limits = limits;
  yaml_limits.max_depth = std::min(limits.max_depth, kMaxYamlDepth);
  const std::string too_deep =
      "nesting deeper than " + std::to_string(yaml_limits.max_depth) + " levels";
  int deepest_document = 1;
  int deepest_line = 0;
  int open_quote_line = -1;
  if (EstimateDepth(text, &deepest_document, &deepest_line, &open_quote_line) >
      2 * yaml_limits.max_depth + 2) {
    return DocumentError(static_cast<size_t>(deepest_document), deepest_line + 1, too_deep);
  }
  // yaml-cpp ends an unterminated quoted scalar at the end of the input without complaint.
  if (open_quote_line >= 0) {
    return InvalidArgumentError("1: line " + std::to_string(open_quote_line + 1) +
                                ": found unexpected end of stream while scanning a quoted scalar");
  }

  ViewStreambuf buf(text);
  std::istream in(&buf);
  std::vector<YamlDocument> docs;
  // Every JSON value of a document needs at least one byte of input, except alias expansions.
  JsonBuilder builder(yaml_limits, text.size() + limits.max_alias_expansion, sp);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.failed()) {
        return DocumentError(docs.size() + 1, builder.error_line(), builder.error());
      }
      // yaml-cpp starts a new document wherever a block collection ends (`- a` then `b: c`);
      // YAML (and go-yaml) require `---` before every document but the first.
      const size_t start = builder.document_offset();
      if (!docs.empty() && text.substr(std::min(start, text.size()), 3) != "---") {
        return DocumentError(docs.size() + 1, builder.document_line(),
                             "did not find expected <document start>");
      }
      docs.push_back(YamlDocument{builder.TakeDocument(), builder.document_line()});
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp reached its own limit inside a document the builder already failed.
    return DocumentError(docs.size() + 1, e.mark.line + 1, too_deep);
  } catch (const YAML::Exception& e) {
    return DocumentError(docs.size() + 1, e.mark.line + 1, e.msg);
  } catch (const std::exception& e) {
    return DocumentError(docs.size() + 1, 0, e.what());
  }
  return docs;
}

}  // namespace draplane::api::codec
