#include "scheduler/plugins/default_binder.h"

#include "client/typed.h"

namespace draplane::scheduler {
namespace {

class DefaultBinder final : public BindPlugin {
 public:
  explicit DefaultBinder(client::ApiClient& api) : api_(api) {}
  std::string_view name() const override { return "DefaultBinder"; }
  PluginStatus Bind(CycleState&, const PodInfo& pod, const std::string& node) override {
    const auto& meta = pod.pod->metadata;
    Status s = client::BindPod(api_, meta.namespace_, meta.name, meta.uid, node);
    if (!s.ok()) return PluginStatus::Error(s.WithPrefix("binding rejected"));
    return PluginStatus::Success();
  }

 private:
  client::ApiClient& api_;
};

}  // namespace

std::shared_ptr<Plugin> NewDefaultBinderPlugin(client::ApiClient& api) {
  return std::make_shared<DefaultBinder>(api);
}

}  // namespace draplane::scheduler
