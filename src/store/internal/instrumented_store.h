// A Store decorator that records, per backend, resource and operation, the number of calls by
// result code (`draplane_store_requests_total`) and their latency
// (`draplane_store_request_duration_seconds`). OpenStore wraps every backend in one.
//
// Thread-safety: as the wrapped store.
#pragma once

#include <memory>

#include "common/clock.h"
#include "store/store.h"

namespace draplane::store::internal {

std::unique_ptr<Store> NewInstrumentedStore(std::unique_ptr<Store> inner, Clock& clock);

}  // namespace draplane::store::internal
