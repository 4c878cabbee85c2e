// A Store decorator that records, per backend, resource and operation, the number of calls by
// result code (`draplane_store_requests_total`) and their latency
// (`draplane_store_request_duration_seconds`), and refuses a Create or Update whose value is over
// `max_value_bytes` (0: no limit) with InvalidArgument carrying a `FieldValueTooLong` cause.
// OpenStore wraps every backend in one.
//
// Thread-safety: as the wrapped store.
#pragma once

#include <memory>

#include "common/clock.h"
#include "store/store.h"

namespace draplane::store::internal {

std::unique_ptr<Store> NewInstrumentedStore(std::unique_ptr<Store> inner, Clock& clock,
                                            size_t max_value_bytes);

}  // namespace draplane::store::internal
