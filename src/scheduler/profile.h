// The default scheduling profile: the plugins the draplane scheduler runs, in upstream's order,
// shared by the scheduler loop and by `draplane explain`.
//
//   PreEnqueue  SchedulingGates, DynamicResources
//   Filter      NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeResourcesFit,
//               DynamicResources
//   Score       DynamicResources (prioritized-list rank)
//   Bind        DefaultBinder (when an ApiClient is given)
//
// Thread-safety: build once, then as framework.h.
#pragma once

#include "client/api_client.h"
#include "scheduler/cluster_state.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/dynamic_resources.h"

namespace draplane::scheduler {

// Adds the default plugins to `framework`. `deps.cluster` and `deps.clock` must be set; `binder`
// may be null (no Bind plugin: explanations only).
void AddDefaultPlugins(Framework& framework, DynamicResourcesDeps deps,
                       DynamicResourcesOptions options, client::ApiClient* binder);

}  // namespace draplane::scheduler
