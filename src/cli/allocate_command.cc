// `draplane allocate`: allocate claims against a cluster dump with the allocator and print the
// AllocationResults, or the explanation of why they do not fit.
//
// Steps:
//   1. Read the cluster (--cluster, e.g. `kubectl get deviceclasses,resourceslices,
//      devicetaintrules,nodes,resourceclaims -A -o yaml`): DeviceClasses and ResourceSlices go
//      into a Snapshot, each slice carrying the taints of the DeviceTaintRules that select its
//      devices (as the scheduler sees them), Nodes are remembered, ResourceClaims with an
//      allocation (and those of --allocated) make up the allocated state, as the scheduler
//      counts them. Other kinds are ignored.
//   2. Read the claims to allocate (--claim): ResourceClaims, or ResourceClaimTemplates (a claim
//      named after the template). Every object read is defaulted and validated as the API server
//      would on create; an invalid one is an error (exit 2) naming it, the field and the reason.
//   3. Choose the nodes: --node, every node with --all-nodes (Node objects plus the nodes slices
//      name), or the only node there is.
//   4. Allocate on each node and print the outcome: `-o text` (default), `yaml` or `json`.
// Exit code: 0 when the claims fit (on some node with --all-nodes), 1 when they do not or the
// allocation failed, 2 for usage errors and unreadable files.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "allocator/allocator.h"
#include "api/codec/files.h"
#include "api/codec/json.h"
#include "api/codec/manifest.h"
#include "api/codec/stream.h"
#include "api/codec/yaml.h"
#include "api/device_taints.h"
#include "api/gen/resource_v1_codec.h"
#include "api/object.h"
#include "api/validation/validation.h"
#include "cli/commands.h"
#include "cli/manifest_validation.h"
#include "cli/object_ref.h"
#include "common/random.h"
#include "common/status_macros.h"

namespace draplane::cli {
namespace {

namespace rv1 = api::resourcev1;
namespace json = boost::json;
using allocator::Outcome;

struct AllocateOptions {
  std::vector<std::string> cluster;
  std::vector<std::string> claims;
  std::vector<std::string> allocated;
  std::string node;
  bool all_nodes = false;
  std::string feature_gates;
  std::string kubernetes_version = "1.36";
  bool explain = false;
  std::string output = "text";
  int64_t seed = -1;
  std::string default_namespace = "default";
  int64_t step_limit = allocator::kDefaultSearchStepLimit;
};

constexpr char kAllocateFooter[] = R"(
--cluster takes files or directories with the cluster's objects, as `kubectl get
deviceclasses,resourceslices,devicetaintrules,nodes,resourceclaims -A -o yaml` writes them:
DeviceClasses and ResourceSlices are what the allocator searches (with the taints of the
DeviceTaintRules that select their devices), Nodes give node names and labels, and
ResourceClaims that carry an allocation (plus those of --allocated) are the devices already in
use. --claim names the ResourceClaims (or ResourceClaimTemplates) of one Pod to allocate
together; they are defaulted as the API server would.

Feature gates follow --kubernetes-version (1.34, 1.35, 1.36, 1.37) and --feature-gates
(DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
DRADeviceBindingConditions, DRAResourceClaimDeviceStatus, DRAConsumableCapacity,
DRAListTypeAttributes), so "what would my 1.35 cluster do?" is one flag away.

With --explain the output says, per claim and request, which devices were candidates, which
one was chosen, and the first reason each other device was rejected.
Exit code: 0 when the claims fit (on at least one node with --all-nodes), 1 when they do not or
the allocation failed, 2 for usage errors and unreadable files.)";

int Fail(const std::string& message) {
  std::fprintf(stderr, "draplane allocate: %s\n", message.c_str());
  return 2;
}

struct Loaded {
  allocator::Snapshot snapshot;
  std::map<std::string, api::corev1::Node> nodes;
  std::set<std::string> slice_nodes;
  allocator::AllocatedState allocated;
  std::vector<rv1::ResourceClaim> claims;
};

// How the objects read are checked: as the API server checks them on create.
struct ManifestChecks {
  std::string default_namespace;
  api::validation::Features features;
};

// Decodes one object, checks it and hands it to `fn`; `value` is released first. An object no
// API server would hold (a claim asking for -2 devices, a slice listing a device twice) is an
// error naming it, never an allocation computed from it.
template <typename Fn>
Status DecodeAndCall(const std::string& file, const api::codec::SourcePosition& position,
                     json::value& value, const ManifestChecks& checks, Fn& fn) {
  api::FieldErrorList errors;
  api::Object object = api::DecodeObject(value, &errors);
  value = nullptr;
  const std::string where = file + ":" + position.Label();
  if (!errors.empty()) return InvalidArgumentError(where + ": " + errors.front().ToString());
  DRAPLANE_RETURN_IF_ERROR(
      ValidateAsCreated(object, where, checks.default_namespace, checks.features));
  return fn(file, position, std::move(object));
}

// Calls `fn(file, position, object)` for every object of every manifest under `paths`
// (directories expanded as kubectl does). api::codec::StreamManifestFile hands over each item of a
// JSON List as soon as it is parsed and each object's JSON is released once decoded, so a
// 10,000-node dump never sits in memory whole, as text or as a document.
template <typename Fn>
Status ForEachObject(const std::vector<std::string>& paths, const ManifestChecks& checks, Fn fn) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<std::string> files, api::codec::ExpandManifestPaths(paths));
  for (const std::string& path : files) {
    const std::string name = path == "-" ? "<stdin>" : path;
    Status rejected;  // what `fn` said; it names the file already
    Status streamed = api::codec::StreamManifestFile(
        path, api::codec::ManifestOptions{}, [&](api::codec::ManifestObject& object) {
          rejected = DecodeAndCall(name, object.position, object.value, checks, fn);
          return rejected;
        });
    if (!rejected.ok()) return rejected;
    if (streamed.code() == StatusCode::kInvalidArgument) {
      return InvalidArgumentError(name + ":" + std::string(streamed.message()));
    }
    DRAPLANE_RETURN_IF_ERROR(streamed);
  }
  return Status::Ok();
}

Status LoadCluster(const AllocateOptions& options, const ManifestChecks& checks, Loaded& loaded) {
  // Slices wait for the rules, which a dump may list after them; rules apply in name order, as
  // the scheduler's cluster state applies them.
  std::vector<rv1::ResourceSlice> slices;
  std::map<std::string, rv1::DeviceTaintRule> taint_rules;
  auto add = [&](const std::string&, const api::codec::SourcePosition&,
                 api::Object object) -> Status {
    if (auto* c = std::get_if<rv1::DeviceClass>(&object)) {
      loaded.snapshot.SetClass(std::move(*c));
    } else if (auto* s = std::get_if<rv1::ResourceSlice>(&object)) {
      if (s->spec.node_name.has_value()) loaded.slice_nodes.insert(*s->spec.node_name);
      slices.push_back(std::move(*s));
    } else if (auto* r = std::get_if<rv1::DeviceTaintRule>(&object)) {
      std::string name = r->metadata.name;
      taint_rules[name] = std::move(*r);
    } else if (auto* n = std::get_if<api::corev1::Node>(&object)) {
      std::string name = n->metadata.name;
      loaded.nodes[name] = std::move(*n);
    } else if (auto* claim = std::get_if<rv1::ResourceClaim>(&object)) {
      if (claim->status.allocation.has_value()) {
        loaded.allocated.AddAllocation(*claim->status.allocation);
      }
    }
    return Status::Ok();
  };
  DRAPLANE_RETURN_IF_ERROR(ForEachObject(options.cluster, checks, add));
  std::vector<const rv1::DeviceTaintRule*> rules;
  for (const auto& [name, rule] : taint_rules) rules.push_back(&rule);
  for (rv1::ResourceSlice& slice : slices) {
    std::optional<rv1::ResourceSlice> tainted = api::WithRuleTaints(slice, rules);
    loaded.snapshot.AddSlice(tainted.has_value() ? std::move(*tainted) : std::move(slice));
  }
  auto add_allocated = [&](const std::string& file, const api::codec::SourcePosition& position,
                           api::Object object) -> Status {
    auto* claim = std::get_if<rv1::ResourceClaim>(&object);
    if (claim == nullptr || !claim->status.allocation.has_value()) {
      return InvalidArgumentError(file + ":" + position.Label() +
                                  ": --allocated takes ResourceClaims with status.allocation");
    }
    loaded.allocated.AddAllocation(*claim->status.allocation);
    return Status::Ok();
  };
  return ForEachObject(options.allocated, checks, add_allocated);
}

Status LoadClaims(const AllocateOptions& options, const ManifestChecks& checks, Loaded& loaded) {
  auto add = [&](const std::string& file, const api::codec::SourcePosition& position,
                 api::Object object) -> Status {
    rv1::ResourceClaim claim;
    if (auto* c = std::get_if<rv1::ResourceClaim>(&object)) {
      claim = std::move(*c);
    } else if (auto* t = std::get_if<rv1::ResourceClaimTemplate>(&object)) {
      claim.metadata.name = t->metadata.name;
      claim.metadata.namespace_ = t->metadata.namespace_;
      claim.spec = t->spec.spec;
    } else {
      return InvalidArgumentError(file + ":" + position.Label() + ": a " + api::ObjectKind(object) +
                                  " is neither a ResourceClaim nor a ResourceClaimTemplate");
    }
    if (claim.status.allocation.has_value()) {
      return InvalidArgumentError(file + ":" + position.Label() + ": claim " + claim.metadata.name +
                                  " is already allocated");
    }
    loaded.claims.push_back(std::move(claim));
    return Status::Ok();
  };
  DRAPLANE_RETURN_IF_ERROR(ForEachObject(options.claims, checks, add));
  if (loaded.claims.empty()) return InvalidArgumentError("no claims to allocate in --claim");
  return Status::Ok();
}

std::string ClaimRef(const rv1::ResourceClaim& c) {
  return c.metadata.namespace_.empty() ? c.metadata.name
                                       : c.metadata.namespace_ + "/" + c.metadata.name;
}

std::string OutcomeName(const StatusOr<Outcome>& o) {
  if (!o.ok()) return "error";
  switch (o->kind) {
    case Outcome::Kind::kAllocated:
      return "allocated";
    case Outcome::Kind::kUnsatisfiable:
      return "unsatisfiable";
    case Outcome::Kind::kNodeError:
      return "node-error";
  }
  return "error";
}

json::object NodeJson(const std::string& node, const StatusOr<Outcome>& o,
                      const std::vector<rv1::ResourceClaim>& claims) {
  json::object out;
  out["node"] = node;
  out["outcome"] = OutcomeName(o);
  if (!o.ok()) {
    out["error"] = std::string(o.status().message());
    return out;
  }
  if (!o->message.empty()) out["message"] = o->message;
  if (o->kind == Outcome::Kind::kAllocated) {
    json::array list;
    for (size_t c = 0; c < claims.size(); ++c) {
      json::object entry;
      entry["claim"] = ClaimRef(claims[c]);
      entry["allocation"] = rv1::Encode((*o->results)[c]);
      list.push_back(std::move(entry));
    }
    out["claims"] = std::move(list);
  }
  if (o->explanation != nullptr) {
    out["explanation"] = json::parse(o->explanation->ToJson(0));
  }
  return out;
}

void PrintText(const std::string& node, const StatusOr<Outcome>& o,
               const std::vector<rv1::ResourceClaim>& claims, bool detail) {
  if (!o.ok()) {
    std::printf("node %s: error: %s\n", node.c_str(), std::string(o.status().message()).c_str());
    return;
  }
  if (o->explanation != nullptr) {
    std::printf("%s", o->explanation->ToText().c_str());
    return;
  }
  switch (o->kind) {
    case Outcome::Kind::kAllocated:
      std::printf("node %s: allocated\n", node.c_str());
      if (!detail) return;
      for (size_t c = 0; c < claims.size(); ++c) {
        std::printf("  claim %s:\n", ClaimRef(claims[c]).c_str());
        for (const auto& r : (*o->results)[c].devices.results) {
          std::printf("    %s: %s/%s/%s%s\n", r.request.c_str(), r.driver.c_str(), r.pool.c_str(),
                      r.device.c_str(),
                      r.share_id.has_value() ? (" (share " + *r.share_id + ")").c_str() : "");
        }
      }
      return;
    case Outcome::Kind::kUnsatisfiable:
      std::printf("node %s: unsatisfiable\n", node.c_str());
      return;
    case Outcome::Kind::kNodeError:
      std::printf("node %s: %s\n", node.c_str(), o->message.c_str());
      return;
  }
}

void PrintDocument(const json::value& v, const std::string& format) {
  if (format == "json") {
    std::printf("%s", api::codec::WriteJson(v).c_str());
  } else {
    std::printf("%s", api::codec::WriteYaml(v).c_str());
  }
}

int RunAllocate(const AllocateOptions& options) {
  if (options.output != "text" && options.output != "yaml" && options.output != "json") {
    return Fail("-o must be text, yaml or json");
  }
  if (options.all_nodes && !options.node.empty())
    return Fail("--node and --all-nodes exclude each other");
  StatusOr<allocator::Features> features = allocator::DefaultFeatures(options.kubernetes_version);
  if (!features.ok()) return Fail(std::string(features.status().message()));
  features = allocator::ApplyFeatureGates(options.feature_gates, *features);
  if (!features.ok()) return Fail(std::string(features.status().message()));

  const ManifestChecks checks{options.default_namespace, allocator::ValidationFeatures(*features)};
  Loaded loaded;
  if (Status st = LoadCluster(options, checks, loaded); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  if (Status st = LoadClaims(options, checks, loaded); !st.ok()) {
    return Fail(std::string(st.message()));
  }

  // The nodes to try, in name order. A node known only from a slice has no labels.
  std::vector<api::corev1::Node> nodes;
  auto node_named = [&](const std::string& name) {
    auto it = loaded.nodes.find(name);
    if (it != loaded.nodes.end()) return it->second;
    api::corev1::Node n;
    n.metadata.name = name;
    return n;
  };
  if (!options.node.empty()) {
    // A node the dump does not know is most often a typo, which would otherwise read as "no
    // driver publishes devices here". Without any Node in the dump (slices only), the name
    // stands: devices of allNodes or nodeSelector slices may still serve it.
    if (!loaded.nodes.empty() && !loaded.nodes.contains(options.node) &&
        !loaded.slice_nodes.contains(options.node)) {
      return Fail("--node: node \"" + options.node +
                  "\" is not in the cluster: no Node of that name and no ResourceSlice names it");
    }
    nodes.push_back(node_named(options.node));
  } else {
    std::set<std::string> names(loaded.slice_nodes.begin(), loaded.slice_nodes.end());
    for (const auto& [name, node] : loaded.nodes) names.insert(name);
    if (!options.all_nodes && names.size() != 1) {
      return Fail(names.empty() ? "no node in the cluster: name one with --node"
                                : "the cluster has several nodes: choose one with --node or try "
                                  "them all with --all-nodes");
    }
    for (const std::string& name : names) nodes.push_back(node_named(name));
  }

  std::unique_ptr<Random> seeded;
  if (options.seed >= 0) seeded = NewSeededRandom(static_cast<uint64_t>(options.seed));
  std::vector<const rv1::ResourceClaim*> claims;
  for (const rv1::ResourceClaim& c : loaded.claims) claims.push_back(&c);
  std::unique_ptr<allocator::Allocator> alloc =
      allocator::NewAllocator(loaded.snapshot, claims, *features);
  allocator::Options alloc_options;
  alloc_options.explain = options.explain;
  alloc_options.random = seeded.get();
  alloc_options.max_search_steps = options.step_limit;

  int fits = 0;
  json::array node_results;
  for (const api::corev1::Node& node : nodes) {
    StatusOr<Outcome> o = alloc->Allocate(node, loaded.allocated, alloc_options);
    if (o.ok() && o->kind == Outcome::Kind::kAllocated) ++fits;
    if (options.output == "text") {
      PrintText(node.metadata.name, o, loaded.claims, !options.all_nodes || options.explain);
    } else {
      node_results.push_back(NodeJson(node.metadata.name, o, loaded.claims));
    }
    // A fatal error aborts the Pod's attempt: no other node is tried, as in the scheduler.
    if (!o.ok()) break;
  }
  if (options.output != "text") {
    if (options.all_nodes) {
      json::object doc;
      doc["nodes"] = std::move(node_results);
      PrintDocument(doc, options.output);
    } else {
      PrintDocument(node_results.at(0), options.output);
    }
  } else if (options.all_nodes) {
    std::printf("%d of %zu node(s) fit\n", fits, nodes.size());
  }
  return fits > 0 ? 0 : 1;
}

}  // namespace

void AddAllocateCommand(CLI::App& app) {
  auto options = std::make_shared<AllocateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "allocate", "Allocate claims against a cluster dump and show the result or why it fails");
  cmd->add_option("--cluster", options->cluster,
                  "Files or directories with DeviceClasses, ResourceSlices, Nodes and allocated "
                  "ResourceClaims")
      ->required();
  cmd->add_option("--claim", options->claims,
                  "Files with the ResourceClaims (or templates) of one Pod")
      ->required();
  cmd->add_option("--node", options->node, "The node to allocate on")
      ->check(ObjectNameCheck("--node"));
  cmd->add_flag("--all-nodes", options->all_nodes, "Try every node and report which fit");
  cmd->add_option("--allocated", options->allocated,
                  "More files with allocated ResourceClaims (devices in use)");
  cmd->add_option("--feature-gates", options->feature_gates,
                  "Gates on top of the version's defaults, e.g. DRAListTypeAttributes=true");
  cmd->add_option("--kubernetes-version", options->kubernetes_version,
                  "The release whose default feature gates apply: 1.34, 1.35, 1.36 or 1.37")
      ->capture_default_str();
  cmd->add_flag("--explain", options->explain,
                "Explain the decision: candidates, chosen devices, rejection reasons");
  cmd->add_option("-o,--output", options->output, "text, yaml or json")->capture_default_str();
  cmd->add_option("--seed", options->seed,
                  "Seed for share IDs of multi-allocatable devices (default: random)");
  cmd->add_option("--step-limit", options->step_limit,
                  "Search steps per node after which allocation stops with an error, as in the "
                  "scheduler (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--namespace", options->default_namespace,
                  "Namespace for claims that do not name one")
      ->capture_default_str()
      ->check(NamespaceNameCheck("--namespace"));
  cmd->footer(kAllocateFooter);
  cmd->callback([options] {
    const int code = RunAllocate(*options);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
