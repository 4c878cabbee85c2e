#include "agent/simulated.h"

#include "agent/drivers/profile/profile_driver.h"
#include "common/status_macros.h"

namespace draplane::agent {

void ApplyNodeTemplate(const NodeTemplate& node, AgentOptions* options) {
  for (const auto& [k, v] : node.labels) options->labels[k] = v;
  for (const auto& [k, v] : node.capacity) options->capacity[k] = v;
  for (const auto& [k, v] : node.extended_resources) options->capacity[k] = v;
}

StatusOr<std::unique_ptr<Agent>> NewSimulatedAgent(client::ApiClient& api,
                                                   SimulatedAgentOptions options,
                                                   const Clock& clock) {
  DRAPLANE_ASSIGN_OR_RETURN(ClusterProfile profile, LoadProfile(options.profile_path));
  DRAPLANE_ASSIGN_OR_RETURN(ProfileNode node, FindNode(profile, options.node_name));
  DRAPLANE_ASSIGN_OR_RETURN(
      std::unique_ptr<ProfileDriver> driver,
      ProfileDriver::Create({.node_name = node.name,
                             .profile_path = options.profile_path,
                             .node = {},
                             .clock = &clock,
                             .state_dir = options.state_dir,
                             .crash_exits_process = options.crash_exits_process}));
  AgentOptions agent = std::move(options.agent);
  agent.node_name = node.name;
  agent.state_dir = options.state_dir;
  ApplyNodeTemplate(*node.node, &agent);
  std::vector<std::unique_ptr<Driver>> drivers;
  drivers.push_back(std::move(driver));
  return Agent::Create(api, std::move(drivers), std::move(agent), clock);
}

}  // namespace draplane::agent
