// YAML text <-> boost::json::value, resolving scalars the way kubectl does.
//
// Kubernetes reads YAML through sigs.k8s.io/yaml: go-yaml v2 (YAML 1.1 resolution) to a generic
// value, then JSON. ParseYaml reproduces that on top of yaml-cpp's event parser:
//   - quoted and block scalars are strings; plain scalars resolve as go-yaml v2's `resolve`:
//     `~`, `null`, `Null`, `NULL` and the empty scalar are null; `true/True/TRUE`, `yes`, `on`,
//     `y` (and the upper / title-case forms) are true, their opposites false; integers in
//     decimal, `0x` hex, `0o` or leading-`0` octal and `0b` binary with optional sign and `_`
//     separators; floats matching `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`;
//     timestamps stay strings. `.inf` and `.nan` are errors (JSON cannot hold them), floats with
//     an integral value become JSON integers (as Go's json.Marshal prints them).
//   - non-string mapping keys become strings (`1: a` -> `"1"`, `yes: a` -> `"true"`); null and
//     collection keys are errors; a repeated key keeps its last value; `<<` merge keys merge.
//   - anchors and aliases are expanded, within ParseLimits::max_alias_expansion.
//   - explicit tags `!!str`, `!!int`, `!!float`, `!!bool`, `!!null` are honoured; `!!binary` is
//     rejected; other tags are ignored.
// Before yaml-cpp sees the text, its size, UTF-8 validity, control characters and an upper bound
// of its nesting depth are checked against ParseLimits, because yaml-cpp's parser recurses per
// nesting level. Nesting deeper than kMaxYamlDepth (limits.h) is an error naming the document
// and line (`nesting deeper than 400 levels`), never yaml-cpp's bare "bad file".
//
// WriteYaml writes what `kubectl get -o yaml` writes (go-yaml v2's emitter): block style, two
// spaces, sequences not indented under their key, keys in go-yaml's order (digit runs compare
// numerically), strings double-quoted when plain text would read back as another type,
// single-quoted when they contain YAML indicators, literal blocks (`|`) for multi-line strings.
// Unlike go-yaml it never folds long lines.
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

struct YamlDocument {
  // JSON null for an empty document.
  boost::json::value value;
  // 1-based line on which the document starts (its `---` marker, if it has one).
  int line = 1;
};

// Parses every document of a YAML stream (separated by `---`). InvalidArgument on malformed
// input, worded `<document>: line <line>: <problem>` (both 1-based), e.g.
// `2: line 7: did not find expected key`; problems found before parsing (size, encoding, depth)
// are reported against document 1.
StatusOr<std::vector<YamlDocument>> ParseYaml(std::string_view text, const ParseLimits& limits = {},
                                              boost::json::storage_ptr sp = {});

// The JSON value a plain (unquoted) YAML scalar resolves to; InvalidArgument for `.inf`/`.nan`.
StatusOr<boost::json::value> ResolvePlainScalar(std::string_view text);

// Writes one document (no `---` marker), ending in a newline.
std::string WriteYaml(const boost::json::value& value);
// Appends one document to `*out`.
void AppendYaml(const boost::json::value& value, std::string* out);

// go-yaml v2's mapping key order: true when key `a` sorts before key `b`.
bool YamlKeyLess(std::string_view a, std::string_view b);

}  // namespace draplane::api::codec
