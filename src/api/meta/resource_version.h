// resourceVersion as numbers: draplane's stores (memory, SQLite, etcd) version objects with one
// global revision, written as a decimal string, so a resourceVersion is also a number that
// orders writes (the scheduler compares versions of its own claim writes; etcd3's
// APIObjectVersioner.ParseResourceVersion reads them the same way). Clients still treat it as an
// opaque string except for this parser.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace draplane::api {

// "" → 0 (unset); otherwise a decimal number from 0 to 2^63-1 without sign or spaces.
// InvalidArgument (`invalid resource version "x"`) for anything else, a value that overflows
// included (the API server answers such input with 400).
StatusOr<int64_t> ParseResourceVersion(std::string_view text);

}  // namespace draplane::api
