// Simulated nodes: an Agent whose devices come from a profile (profile.h) through the profile
// driver, with the node's labels and capacity from the same profile. Used by
// `draplane agent --profile`, `draplane serve --simulate-nodes` and the simulator.
//
// Thread-safety: a factory function.
#pragma once

#include <memory>
#include <string>

#include "agent/agent.h"
#include "agent/profile.h"
#include "client/api_client.h"
#include "common/clock.h"

namespace draplane::agent {

struct SimulatedAgentOptions {
  std::string profile_path;
  std::string node_name;
  std::string state_dir;
  // See ProfileDriverOptions::crash_exits_process.
  bool crash_exits_process = false;
  // Timing and behaviour; node_name, state_dir, labels and capacity are filled in.
  AgentOptions agent;
};

// The agent for `node_name` of the profile (not yet Init()ed). NotFound when the profile has no
// such node; the profile's parse errors otherwise.
StatusOr<std::unique_ptr<Agent>> NewSimulatedAgent(client::ApiClient& api,
                                                   SimulatedAgentOptions options,
                                                   const Clock& clock);

// The agent options a profile node implies: its labels, and capacity = the profile's capacity
// plus its extended resources.
void ApplyNodeTemplate(const NodeTemplate& node, AgentOptions* options);

}  // namespace draplane::agent
