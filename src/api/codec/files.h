// Reading manifest files named on a command line.
//
// CollectManifestFiles expands each path the way `kubectl apply -f` does: a file is read as is,
// a directory is searched recursively for `*.yaml`, `*.yml` and `*.json` (in lexical path order,
// so output is deterministic), and `-` reads standard input (named `<stdin>`).
//
// Thread-safety: reads the file system and standard input; call from one thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace draplane::api::codec {

struct ManifestFile {
  // The path as given (or found under a directory); `<stdin>` for `-`.
  std::string name;
  std::string text;
};

// NotFound when a path does not exist, InvalidArgument for other read failures (both name the
// path).
StatusOr<std::vector<ManifestFile>> CollectManifestFiles(const std::vector<std::string>& paths);

// The files CollectManifestFiles would read, without reading them: directories expanded, `-`
// kept as is (for StreamManifestFile). Same errors, except read failures.
StatusOr<std::vector<std::string>> ExpandManifestPaths(const std::vector<std::string>& paths);

}  // namespace draplane::api::codec
