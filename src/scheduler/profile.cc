#include "scheduler/profile.h"

#include "scheduler/plugins/default_binder.h"
#include "scheduler/plugins/node_plugins.h"

namespace draplane::scheduler {

void AddDefaultPlugins(Framework& framework, DynamicResourcesDeps deps,
                       DynamicResourcesOptions options, client::ApiClient* binder) {
  const ClusterState& cluster = *deps.cluster;
  framework.AddPlugin(NewSchedulingGatesPlugin());
  // Filters in upstream's default order.
  framework.AddPlugin(NewNodeUnschedulablePlugin());
  framework.AddPlugin(NewNodeNamePlugin());
  framework.AddPlugin(NewTaintTolerationPlugin(*deps.clock));
  framework.AddPlugin(NewNodeAffinityPlugin());
  framework.AddPlugin(NewNodeResourcesFitPlugin(cluster));
  framework.AddPlugin(NewDynamicResourcesPlugin(std::move(deps), std::move(options)));
  if (binder != nullptr) framework.AddPlugin(NewDefaultBinderPlugin(*binder));
}

}  // namespace draplane::scheduler
