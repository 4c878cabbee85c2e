// Object references given on the command line (`NAMESPACE/NAME`, `NAME`, a node or namespace
// name), checked with the API server's name rules before anything is read or looked up: a
// reference such as `team-a/` or `a/b/c` is a usage error naming the flag, not a lookup of an
// empty or impossible name that then reports a result for nothing.
//
// Thread-safety: pure functions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace draplane::cli {

struct NamespacedName {
  std::string ns;
  std::string name;
};

// Parses `NAMESPACE/NAME`, or `NAME` in `default_namespace`. `what` names the argument in the
// message (e.g. "pod"). InvalidArgument when a part is empty, there is more than one '/', the
// namespace is not a DNS label or the name not a DNS subdomain.
StatusOr<NamespacedName> ParseNamespacedName(std::string_view text,
                                             std::string_view default_namespace,
                                             std::string_view what);

// A cluster-scoped object's name (a node, ...): a DNS subdomain. InvalidArgument otherwise.
Status ValidateObjectName(std::string_view name, std::string_view what);

// A namespace name: a DNS label. InvalidArgument otherwise.
Status ValidateNamespaceName(std::string_view name, std::string_view what);

// The checks above as CLI11 validators (`add_option(...)->check(...)`), so that a bad reference
// is a usage error (exit code 2) reported before the command runs. `what` names the argument.
CLI::Validator NamespacedNameCheck(std::string what);
CLI::Validator ObjectNameCheck(std::string what);
CLI::Validator NamespaceNameCheck(std::string what);

}  // namespace draplane::cli
