// The cluster a simulation starts from, and changes to it (docs/design/sim.md).
//
// Input (`--cluster`, files or directories, any mix):
//   - a kubectl dump: a List or multi-document YAML/JSON of Nodes, DeviceClasses,
//     ResourceSlices, ResourceClaims, ResourceClaimTemplates, Pods, Namespaces, DeviceTaintRules
//     and any other kind the in-memory API serves (e.g. `kubectl get nodes,deviceclasses,
//     resourceslices,resourceclaims,pods -A -o yaml`); Events, Leases and kinds the simulator
//     does not serve are counted and left out;
//   - a ClusterProfile or NodeProfile (agent/profile.h): each profile node becomes the Node its
//     simulated agent registers (agent::RegisteredNode) and the ResourceSlices the agent
//     publishes (agent::BuildProfileInventories, agent::BuildPoolSlices).
//
// A `ClusterChange` (`draplane.dev/v1alpha1`) edits the loaded cluster before the run, for
// migration plans and what-if variants:
//
//   apiVersion: draplane.dev/v1alpha1
//   kind: ClusterChange
//   metadata: {name: a100-to-mig}
//   changes:
//   - convertNodes:                 # re-equip nodes: their slices become those of a profile
//       nodes: {names: [...], selector: "accelerator=a100", count: 4}   # node template
//       to: {labels: {...}, devices: {gpus: [...]}}   # a profile node template (devices,
//                                                   # labels merged, extendedResources)
//   - setLabels:                    # e.g. node ownership
//       nodes: {selector: "pool=legacy"}
//       labels: {team: vision}      # a null value removes the label
//   - setTaints: {nodes: {...}, taints: [{key, value, effect}]}   # replaces the node taints
//   - removeNodes: {nodes: {...}}   # the nodes, their slices and the Pods bound to them
//   - addNodes: {pool: {name, count, labels, capacity, devices}}   # a profile node pool
//   - apply: [manifests]            # create or replace objects (DeviceClasses, policies, ...)
//   - delete: [{kind, apiVersion, name, namespace}]
//
// `nodes` selects in node name order: `names` (each must exist), a label `selector`
// (label-selector syntax), or both (union); `count` keeps the first N.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <map>
#include <string>
#include <vector>

#include "client/resource.h"
#include "common/status.h"
#include "sim/trace.h"

namespace draplane::sim {

inline constexpr std::string_view kClusterChangeKind = "ClusterChange";

// Objects in creation order: Namespaces, Nodes, DeviceClasses, ResourceSlices, other served
// kinds (DeviceTaintRules, policies), ResourceClaimTemplates, Pods, ResourceClaims.
struct Cluster {
  std::vector<boost::json::object> objects;
  // Kinds left out, with their counts ("Event" -> 12).
  std::map<std::string, int64_t> ignored;
};

// Reads `paths` (files or directories). InvalidArgument with `FILE:DOC: ...` for malformed
// manifests or profiles, and for two objects with the same kind, namespace and name.
StatusOr<Cluster> LoadCluster(const std::vector<std::string>& paths);

struct ClusterChange {
  std::string name;
  std::string source;                       // file, for messages
  std::vector<boost::json::value> changes;  // validated entries of `changes`
};

// A policy object of a configuration file, with where it was written ("quota.yaml:3"), which
// its errors name.
struct PolicyObject {
  boost::json::object object;
  std::string source;
};

// Configuration files (`sim run --change/--policy`, `sim compare --a/--b`): ClusterChange
// documents and policy objects (anything else).
struct Configuration {
  std::vector<ClusterChange> changes;
  std::vector<PolicyObject> policies;
};
// Reads configuration files; InvalidArgument naming file, document and field for a malformed
// ClusterChange.
// `options.unknown_fields` checks the policy objects (trace.h).
StatusOr<Configuration> LoadConfiguration(const std::vector<std::string>& paths,
                                          const ParseOptions& options = {});
// One ClusterChange document (`source` prefixes messages); its steps are checked when applied.
StatusOr<ClusterChange> ParseClusterChange(const boost::json::value& value,
                                           const std::string& source);

// Applies a change in place; InvalidArgument naming `changes[i]...` when a named node does not
// exist, a profile template is invalid or a deleted object is missing.
Status ApplyClusterChange(const ClusterChange& change, Cluster* cluster);

// Adds objects, replacing those with the same kind, namespace and name (apply).
void ApplyObjects(const std::vector<boost::json::object>& objects, Cluster* cluster);

// "kind/namespace/name" of a manifest (namespace empty for cluster-scoped kinds).
std::string ObjectIdentity(const boost::json::object& object);

// The API server's validation of `object` (a manifest of `type`) on create; kinds draplane does
// not validate pass. A namespaced object without a namespace is checked in "default" (the
// simulation gives it its namespaces later). InvalidArgument "WHERE: IDENTITY: FIELD: REASON".
Status ValidateAsCreated(const boost::json::object& object, const client::ResourceType& type,
                         const std::string& where);

}  // namespace draplane::sim
