// Shared by manifest.cc and stream.cc: turning one parsed document into manifest objects.
#pragma once

#include <boost/json/value.hpp>
#include <functional>

#include "api/codec/manifest.h"
#include "common/status.h"

namespace draplane::api::codec::internal {

// Delivers `value` (document number `document`, starting on `line`) to `sink`: nothing for an
// empty (null) document, its items for a List / *List when `options.flatten_lists`, else the
// document itself. InvalidArgument when the document is not an object or a List's `items` is not
// an array of objects; otherwise the sink's status.
Status EmitDocument(boost::json::value value, int document, int line,
                    const ManifestOptions& options,
                    const std::function<Status(ManifestObject& object)>& sink);

}  // namespace draplane::api::codec::internal
