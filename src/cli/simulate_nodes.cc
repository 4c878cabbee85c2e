// `draplane serve --simulate-nodes PROFILE`: one in-process node agent per node of a cluster
// profile, each an embedded component of the server (server/server.h) with its own node identity
// `system:node:<name>`, so the node authorizer and NodeRestriction treat it exactly like a remote
// agent. State (checkpoint, CDI specs, profile device state) lives in <data-dir>/agents/<node>.
#include <memory>
#include <string>

#include "agent/profile.h"
#include "agent/simulated.h"
#include "cli/commands.h"
#include "cli/in_process_transport.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/server.h"

namespace draplane::cli {
namespace {

// One simulated node's agent inside `draplane serve`.
class SimulatedNode final : public server::EmbeddedComponent {
 public:
  SimulatedNode(std::string profile, std::string node, std::string state_dir)
      : profile_(std::move(profile)), node_(std::move(node)), state_dir_(std::move(state_dir)) {}

  std::string name() const override { return "agent/" + node_; }

  Status Start(const server::ClientCredentials& credentials) override {
    DRAPLANE_ASSIGN_OR_RETURN(api_, NewEmbeddedClient(credentials, "draplane-agent/" + node_));
    DRAPLANE_ASSIGN_OR_RETURN(agent_, agent::NewSimulatedAgent(*api_,
                                                               {.profile_path = profile_,
                                                                .node_name = node_,
                                                                .state_dir = state_dir_,
                                                                .crash_exits_process = false,
                                                                .agent = {}},
                                                               RealClock()));
    DRAPLANE_RETURN_IF_ERROR(agent_->Init());
    return agent_->Start();
  }

  void Stop() override {
    if (agent_) agent_->Stop();
  }

 private:
  std::string profile_;
  std::string node_;
  std::string state_dir_;
  std::unique_ptr<client::ApiClient> api_;
  std::unique_ptr<agent::Agent> agent_;
};

}  // namespace

Status EmbedSimulatedNodes(server::Server& server, const std::string& profile_path,
                           const std::string& data_dir) {
  DRAPLANE_ASSIGN_OR_RETURN(agent::ClusterProfile profile, agent::LoadProfile(profile_path));
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<agent::ProfileNode> nodes, agent::ExpandNodes(profile));
  for (const agent::ProfileNode& node : nodes) {
    DRAPLANE_RETURN_IF_ERROR(server.Embed(
        std::make_unique<SimulatedNode>(profile_path, node.name, data_dir + "/agents/" + node.name),
        "system:node:" + node.name, {"system:nodes"}));
  }
  log::Info("serve: {} simulated nodes from {}", nodes.size(), profile_path);
  return Status::Ok();
}

}  // namespace draplane::cli
