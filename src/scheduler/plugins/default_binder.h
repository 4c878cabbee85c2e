// DefaultBinder: binds the pod to the chosen node through the pods/binding subresource
// (upstream pkg/scheduler/framework/plugins/defaultbinder). The binding carries the pod's uid so
// a replaced pod of the same name is never bound by mistake.
//
// Thread-safety: Bind runs on binder threads; the ApiClient is thread-safe.
#pragma once

#include <memory>

#include "client/api_client.h"
#include "scheduler/framework/plugin.h"

namespace draplane::scheduler {

std::shared_ptr<Plugin> NewDefaultBinderPlugin(client::ApiClient& api);

}  // namespace draplane::scheduler
