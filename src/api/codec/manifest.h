// Manifest files as users bring them: one or more Kubernetes objects in YAML or JSON.
//
// ParseManifest accepts what `kubectl apply -f` accepts: a YAML stream (documents separated by
// `---`) or JSON (one value or several whitespace-separated values), detected as kubectl's
// YAMLOrJSONDecoder does (JSON when the first non-space character is `{` or `[`). Empty
// documents are skipped. With `flatten_lists`, a document of kind `List` or `*List` (e.g.
// `ResourceSliceList`, as `kubectl get -o yaml` writes them) stands for its `items`, each
// remembering the document and its index. Every object keeps the document number and line it
// came from, so callers can print `FILE:DOC: ...` messages.
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

// Where an object came from in its file.
struct SourcePosition {
  // 1-based number of the document (YAML `---` section or JSON value) in the file.
  int document = 1;
  // 1-based line on which that document starts (its `---` marker, if it has one).
  int line = 1;
  // Index in the `items` of the List document the object was flattened from; -1 if none.
  int item = -1;

  // The DOC part of `FILE:DOC:` messages: "3", or "3:items[2]" for a flattened list item.
  std::string Label() const;
};

struct ManifestObject {
  SourcePosition position;
  boost::json::value value;
};

struct ManifestOptions {
  ParseLimits limits;
  bool flatten_lists = true;
};

// True for `List` and any kind ending in `List`.
bool IsListKind(std::string_view kind);

// Parses `text`; values are allocated from `sp` (see ParseJson). InvalidArgument worded
// `<document>: line <line>: <problem>` for malformed text (see ParseYaml / ParseJsonStream) and
// `<document>: <problem>` when a document is not an object or a List's `items` is not a list of
// objects.
StatusOr<std::vector<ManifestObject>> ParseManifest(std::string_view text,
                                                    const ManifestOptions& options = {},
                                                    boost::json::storage_ptr sp = {});

}  // namespace draplane::api::codec
