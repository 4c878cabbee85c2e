// JSON pointers (RFC 6901), as the API server reads them in JSON patches (evanphx/json-patch,
// which kube-apiserver applies): "" is the whole document, otherwise '/'-separated tokens in
// which "~1" stands for '/' and "~0" for '~'. An array index is a decimal without a leading zero.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace draplane::api::patch {

// The unescaped tokens of `pointer`. InvalidArgument when a non-empty pointer does not start with
// '/' (`invalid JSON pointer "a": must start with '/'`).
StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// The array index `token` names when it is at most `max_index`, else nullopt.
std::optional<size_t> ParseArrayIndex(std::string_view token, size_t max_index);

// The value at `tokens` below `root`, or nullptr when there is none.
boost::json::value* ResolveJsonPointer(boost::json::value& root,
                                       const std::vector<std::string>& tokens);

}  // namespace draplane::api::patch
