// Streaming manifest reader for large inputs such as a 10,000-node `kubectl get resourceslices
// -o json` dump.
//
// StreamManifest delivers the same objects, in the same order and with the same positions, as
// ParseManifest, but for JSON input it never holds the whole text or the whole document: it
// reads the input in 1 MiB chunks and hands each element of a List's `items` to the sink as soon
// as the parser reaches its end, so peak memory is one item plus the chunk. A top-level `items`
// array is streamed unless the document's `kind` was already seen and is not a List kind; when
// the kind only shows up after the items (kubectl writes keys sorted: apiVersion, items, kind)
// and is not a List kind, that is an error, since the items are already delivered.
// YAML input is read whole and parsed as ParseManifest does (yaml-cpp needs the whole text).
//
// Errors: InvalidArgument worded like ParseManifest's (`<document>: line <line>: <problem>`), or
// the first non-OK status the sink returns (which stops the stream).
//
// Thread-safety: reads `in` from the calling thread; the sink runs on that thread.
#pragma once

#include <functional>
#include <istream>
#include <string>

#include "api/codec/manifest.h"
#include "common/status.h"

namespace draplane::api::codec {

// Receives each object; its value may be moved from. A non-OK status stops the stream.
using ManifestSink = std::function<Status(ManifestObject& object)>;

Status StreamManifest(std::istream& in, const ManifestOptions& options, const ManifestSink& sink);

// Opens `path` (`-` reads standard input) and streams it. NotFound / InvalidArgument (naming the
// path) when it cannot be read.
Status StreamManifestFile(const std::string& path, const ManifestOptions& options,
                          const ManifestSink& sink);

}  // namespace draplane::api::codec
