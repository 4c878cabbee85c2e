// JSON text <-> boost::json::value, with limits and kubectl-like output.
//
// Parsing accepts one value (ParseJson) or a stream of whitespace-separated values
// (ParseJsonStream, as kubectl's YAML-or-JSON decoder accepts), rejects invalid UTF-8, nesting
// deeper than ParseLimits::max_depth and inputs larger than ParseLimits::max_bytes. Duplicate
// object keys keep the last value (as Go's encoding/json does). Errors are InvalidArgument with
// the line and column: `line 3 column 7: syntax error`.
//
// Writing formats numbers as Go's encoding/json does (`1.5`, `100`, `1e+21`) and escapes only
// what JSON requires (`"`, `\`, control characters); `<`, `>` and `&` are written as is. With
// indentation it matches `kubectl get -o json` (4 spaces, `"key": value`).
//
// Thread-safety: stateless functions.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec/limits.h"
#include "common/status.h"

namespace draplane::api::codec {

// Parses exactly one JSON value (surrounding whitespace allowed). Values are allocated from `sp`
// (the default heap when null); pass a monotonic resource for large read-once documents.
StatusOr<boost::json::value> ParseJson(std::string_view text, const ParseLimits& limits = {},
                                       boost::json::storage_ptr sp = {});

struct JsonDocument {
  boost::json::value value;
  // 1-based line on which the value starts.
  int line = 1;
};

// Parses zero or more whitespace-separated JSON values. InvalidArgument worded
// `<document>: line <line> column <column>: <problem>`, positions in the whole input.
StatusOr<std::vector<JsonDocument>> ParseJsonStream(std::string_view text,
                                                    const ParseLimits& limits = {},
                                                    boost::json::storage_ptr sp = {});

struct JsonWriteOptions {
  // Spaces per level; 0 writes compact JSON on one line.
  int indent = 4;
};

// Serialises `value`; with indentation the text ends with a newline.
std::string WriteJson(const boost::json::value& value, const JsonWriteOptions& options = {});
// Appends the serialisation of `value` to `*out` (no trailing newline).
void AppendJson(const boost::json::value& value, const JsonWriteOptions& options, std::string* out);

// `a == b` (objects equal whatever the order of their members), faster for the usual case of two
// versions of one object written by one codec: members in the same order are compared pairwise,
// and only an object whose keys differ in order falls back to looking each member up. Stops at
// the first difference.
bool JsonEqual(const boost::json::value& a, const boost::json::value& b);
// Whether `a` and `b` serialise to the same text: JsonEqual with members in the same order and
// numbers of the same kind (1, 1u and 1.0 are JsonEqual, not identical). A writer that may keep
// either of two values asks this one, so that what it stores does not depend on its choice.
bool JsonIdentical(const boost::json::value& a, const boost::json::value& b);

// Line and column (both 1-based) of byte `offset` of `text`.
void LineColumn(std::string_view text, size_t offset, int* line, int* column);

}  // namespace draplane::api::codec
