#include "sim/cluster.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>

#include "agent/agent.h"
#include "agent/drivers/profile/profile_driver.h"
#include "agent/profile.h"
#include "agent/simulated.h"
#include "agent/slice_plan.h"
#include "api/codec/field_reader.h"
#include "api/codec/files.h"
#include "api/codec/manifest.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/labels/selector.h"
#include "api/validation/meta_validation.h"
#include "api/validation/node_validation.h"
#include "api/validation/object_validation.h"
#include "client/resource.h"
#include "common/status_macros.h"
#include "sim/internal/json.h"
#include "sim/trace.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;
using internal::Arr;
using internal::EnsureObject;
using internal::MetaField;
using internal::Obj;
using internal::Str;
namespace rv1 = api::resourcev1;
using api::codec::FieldReader;

// Creation order: what others refer to first.
int KindRank(std::string_view kind) {
  if (kind == "Namespace") return 0;
  if (kind == "Node") return 1;
  if (kind == "DeviceClass") return 2;
  if (kind == "ResourceSlice") return 3;
  if (kind == "ResourceClaimTemplate") return 5;
  if (kind == "Pod") return 6;
  if (kind == "ResourceClaim") return 7;
  // Last: the dump's objects exist already; a quota created after them counts them, as the quota
  // controller counts a cluster's objects, where one created first would refuse them.
  if (kind == "ResourceQuota") return 8;
  return 4;  // DeviceTaintRules, policies
}

void SortByKind(Cluster* cluster) {
  std::stable_sort(cluster->objects.begin(), cluster->objects.end(),
                   [](const json::object& a, const json::object& b) {
                     return KindRank(Str(a, "kind")) < KindRank(Str(b, "kind"));
                   });
}

// The Node and slices of every node of a profile, as the node agents register and publish them.
void AddProfileNodes(const std::vector<agent::ProfileNode>& nodes, std::vector<json::object>* out) {
  for (const agent::ProfileNode& node : nodes) {
    agent::AgentOptions options;
    options.node_name = node.name;
    agent::ApplyNodeTemplate(*node.node, &options);
    out->push_back(api::corev1::Encode(agent::RegisteredNode(options, StartTime())).as_object());
    for (const agent::Inventory& inventory :
         agent::BuildProfileInventories(node.name, *node.node)) {
      for (const rv1::ResourceSlice& slice : agent::BuildPoolSlices(node.name, inventory, 1)) {
        out->push_back(rv1::Encode(slice).as_object());
      }
    }
  }
}

bool IsProfile(const json::object& o) {
  return Str(o, "apiVersion") == agent::kProfileApiVersion &&
         (Str(o, "kind") == "ClusterProfile" || Str(o, "kind") == "NodeProfile");
}

// The nodes a `nodes` selection names, in name order.
StatusOr<std::vector<std::string>> SelectNodes(const json::value* value, const std::string& path,
                                               const Cluster& cluster) {
  if (value == nullptr) return InvalidArgumentError(path + ": Required value");
  FieldReader r(*value, path);
  std::vector<std::string> names = r.StringList("names");
  std::optional<std::string> selector_text = r.String("selector");
  std::optional<int64_t> count = r.Int("count");
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  if (names.empty() && !selector_text) {
    return InvalidArgumentError(path + ": names or selector: Required value");
  }
  if (count && *count < 0) return InvalidArgumentError(path + ".count: must not be negative");
  std::map<std::string, std::map<std::string, std::string>> nodes;  // name -> labels
  for (const json::object& o : cluster.objects) {
    if (Str(o, "kind") != "Node") continue;
    std::map<std::string, std::string> labels;
    if (const json::object* meta = Obj(o, "metadata")) {
      if (const json::object* l = Obj(*meta, "labels")) {
        for (const auto& [k, v] : *l) {
          if (v.is_string()) labels[std::string(k)] = std::string(v.as_string());
        }
      }
    }
    nodes[MetaField(o, "name")] = std::move(labels);
  }
  std::set<std::string> chosen;
  for (const std::string& name : names) {
    if (!nodes.contains(name)) {
      return InvalidArgumentError(path + ".names: Not found: \"" + name + "\"");
    }
    chosen.insert(name);
  }
  if (selector_text) {
    StatusOr<api::labels::Selector> selector = api::labels::Parse(*selector_text);
    if (!selector.ok()) return selector.status().WithPrefix(path + ".selector");
    bool matched = false;
    for (const auto& [name, labels] : nodes) {
      if (!selector->Matches(labels)) continue;
      chosen.insert(name);
      matched = true;
    }
    // A selector that matches nothing is a typo more often than a plan: a change that silently
    // changes nothing would compare as "no impact".
    if (!matched) {
      return InvalidArgumentError(path + ".selector: Invalid value: \"" + *selector_text +
                                  "\": matches no node of the cluster");
    }
  }
  std::vector<std::string> out(chosen.begin(), chosen.end());
  if (count && out.size() > static_cast<size_t>(*count)) out.resize(static_cast<size_t>(*count));
  return out;
}

std::string SliceNode(const json::object& slice) {
  const json::object* spec = Obj(slice, "spec");
  return spec == nullptr ? "" : Str(*spec, "nodeName");
}

// Removes the slices of `nodes`, the Pods bound to them and the claims allocated from those
// slices' pools or reserved for those Pods (a drain evicts them), and the Nodes themselves with
// `remove_nodes`.
void DrainNodes(const std::set<std::string>& nodes, Cluster* cluster, bool remove_nodes) {
  std::set<std::string> pools;  // driver/pool
  std::set<std::string> pod_uids;
  for (const json::object& o : cluster->objects) {
    std::string kind = Str(o, "kind");
    if (kind == "ResourceSlice" && nodes.contains(SliceNode(o))) {
      const json::object* spec = Obj(o, "spec");
      const json::object* pool = spec ? Obj(*spec, "pool") : nullptr;
      pools.insert(Str(*spec, "driver") + "/" + (pool ? Str(*pool, "name") : ""));
    } else if (kind == "Pod") {
      const json::object* spec = Obj(o, "spec");
      if (spec != nullptr && nodes.contains(Str(*spec, "nodeName"))) {
        pod_uids.insert(MetaField(o, "uid"));
      }
    }
  }
  auto claim_affected = [&](const json::object& claim) {
    const json::object* status = Obj(claim, "status");
    if (status == nullptr) return false;
    if (const json::value* reserved = status->if_contains("reservedFor");
        reserved != nullptr && reserved->is_array()) {
      for (const json::value& r : reserved->as_array()) {
        if (r.is_object() && pod_uids.contains(Str(r.as_object(), "uid"))) return true;
      }
    }
    const json::object* allocation = Obj(*status, "allocation");
    const json::object* devices = allocation ? Obj(*allocation, "devices") : nullptr;
    const json::value* results = devices ? devices->if_contains("results") : nullptr;
    if (results == nullptr || !results->is_array()) return false;
    for (const json::value& r : results->as_array()) {
      if (!r.is_object()) continue;
      if (pools.contains(Str(r.as_object(), "driver") + "/" + Str(r.as_object(), "pool"))) {
        return true;
      }
    }
    return false;
  };
  std::erase_if(cluster->objects, [&](const json::object& o) {
    std::string kind = Str(o, "kind");
    if (kind == "ResourceSlice") return nodes.contains(SliceNode(o));
    if (kind == "Pod") return pod_uids.contains(MetaField(o, "uid"));
    if (kind == "ResourceClaim") return claim_affected(o);
    if (kind == "Node") return remove_nodes && nodes.contains(MetaField(o, "name"));
    return false;
  });
}

Status ConvertNodes(const json::value& value, const std::string& path, Cluster* cluster) {
  FieldReader r(value, path);
  const json::value* nodes_value = r.Raw("nodes");
  const json::value* to = r.Raw("to");
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                            SelectNodes(nodes_value, path + ".nodes", *cluster));
  if (to == nullptr) return InvalidArgumentError(path + ".to: Required value");
  DRAPLANE_ASSIGN_OR_RETURN(agent::NodeTemplate tmpl, agent::ParseNodeTemplate(*to, path + ".to"));
  std::set<std::string> selected(names.begin(), names.end());
  DrainNodes(selected, cluster, /*remove_nodes=*/false);
  for (json::object& o : cluster->objects) {
    if (Str(o, "kind") != "Node" || !selected.contains(MetaField(o, "name"))) continue;
    json::object& labels = EnsureObject(EnsureObject(o, "metadata"), "labels");
    for (const auto& [k, v] : tmpl.labels) labels[k] = v;
    json::object& status = EnsureObject(o, "status");
    for (const char* field : {"capacity", "allocatable"}) {
      json::object& list = EnsureObject(status, field);
      for (const auto& [k, q] : tmpl.capacity) list[k] = q.ToString();
      for (const auto& [k, q] : tmpl.extended_resources) list[k] = q.ToString();
    }
  }
  for (const std::string& name : names) {
    for (const agent::Inventory& inventory : agent::BuildProfileInventories(name, tmpl)) {
      for (const rv1::ResourceSlice& slice : agent::BuildPoolSlices(name, inventory, 1)) {
        cluster->objects.push_back(rv1::Encode(slice).as_object());
      }
    }
  }
  return Status::Ok();
}

Status SetNodeField(const json::value& value, const std::string& path, std::string_view field,
                    Cluster* cluster) {
  FieldReader r(value, path);
  const json::value* nodes_value = r.Raw("nodes");
  const json::value* payload = r.Raw(field);
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                            SelectNodes(nodes_value, path + ".nodes", *cluster));
  if (payload == nullptr) {
    return InvalidArgumentError(path + "." + std::string(field) + ": Required value");
  }
  std::set<std::string> selected(names.begin(), names.end());
  if (field == "labels") {
    if (!payload->is_object()) return InvalidArgumentError(path + ".labels: must be a map");
    std::map<std::string, std::string, std::less<>> set;
    for (const auto& [k, v] : payload->as_object()) {
      if (!v.is_string() && !v.is_null()) {
        return InvalidArgumentError(path + ".labels." + std::string(k) +
                                    ": must be a string or null");
      }
      if (v.is_string()) set.emplace(std::string(k), std::string(v.as_string()));
    }
    // The label rules the API server holds a Node to.
    api::FieldErrorList errors = api::validation::ValidateLabels(set, api::FieldPath("labels"));
    if (!errors.empty()) return InvalidArgumentError(path + "." + errors.front().ToString());
  } else {
    // Decoded as a Node spec's taints, so a malformed taint fails here with its field path, then
    // validated as the API server validates a Node's taints.
    api::corev1::Node probe;
    api::FieldErrorList errors;
    api::corev1::Decode(json::value{{"spec", json::object{{"taints", *payload}}}}, &probe, &errors);
    if (errors.empty()) {
      errors = api::validation::ValidateNodeTaints(probe.spec.taints, api::FieldPath("taints"));
    }
    if (!errors.empty()) return InvalidArgumentError(path + "." + errors.front().ToString());
  }
  for (json::object& o : cluster->objects) {
    if (Str(o, "kind") != "Node" || !selected.contains(MetaField(o, "name"))) continue;
    if (field == "labels") {
      json::object& labels = EnsureObject(EnsureObject(o, "metadata"), "labels");
      for (const auto& [k, v] : payload->as_object()) {
        if (v.is_null()) {
          labels.erase(k);
        } else {
          labels[k] = v;
        }
      }
    } else {
      EnsureObject(o, "spec")["taints"] = *payload;
    }
  }
  return Status::Ok();
}

Status AddNodes(const json::value& value, const std::string& path, Cluster* cluster) {
  FieldReader r(value, path);
  const json::value* pool = r.Raw("pool");
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  if (pool == nullptr) return InvalidArgumentError(path + ".pool: Required value");
  // A ClusterProfile of that one pool, parsed by the profile code itself.
  json::object profile{{"apiVersion", agent::kProfileApiVersion},
                       {"kind", "ClusterProfile"},
                       {"nodePools", json::array{*pool}}};
  StatusOr<agent::ClusterProfile> parsed = agent::ParseProfileJson(profile);
  if (!parsed.ok()) return parsed.status().WithPrefix(path);
  StatusOr<std::vector<agent::ProfileNode>> nodes = agent::ExpandNodes(*parsed);
  if (!nodes.ok()) return nodes.status().WithPrefix(path);
  std::set<std::string> existing;
  for (const json::object& o : cluster->objects) {
    if (Str(o, "kind") == "Node") existing.insert(MetaField(o, "name"));
  }
  for (const agent::ProfileNode& node : *nodes) {
    if (existing.contains(node.name)) {
      return InvalidArgumentError(path + ".pool: node " + node.name + " already exists");
    }
  }
  AddProfileNodes(*nodes, &cluster->objects);
  return Status::Ok();
}

Status DeleteObjects(const json::value& value, const std::string& path, Cluster* cluster) {
  if (!value.is_array()) return InvalidArgumentError(path + ": must be a list");
  for (size_t i = 0; i < value.as_array().size(); ++i) {
    std::string item_path = path + "[" + std::to_string(i) + "]";
    FieldReader r(value.as_array()[i], item_path);
    std::string kind = r.String("kind").value_or("");
    r.String("apiVersion");
    std::string name = r.String("name").value_or("");
    std::string ns = r.String("namespace").value_or("");
    DRAPLANE_RETURN_IF_ERROR(r.Finish());
    if (kind.empty() || name.empty()) {
      return InvalidArgumentError(item_path + ": kind and name: Required value");
    }
    size_t before = cluster->objects.size();
    std::erase_if(cluster->objects, [&](const json::object& o) {
      return Str(o, "kind") == kind && MetaField(o, "name") == name &&
             MetaField(o, "namespace") == ns;
    });
    if (cluster->objects.size() == before) {
      return InvalidArgumentError(item_path + ": Not found: " + kind + " " +
                                  (ns.empty() ? name : ns + "/" + name));
    }
  }
  return Status::Ok();
}

// The step of one `changes` entry: exactly one key.
Status ApplyStep(const json::value& step, const std::string& path, Cluster* cluster) {
  if (!step.is_object() || step.as_object().size() != 1) {
    return InvalidArgumentError(
        path +
        ": must have exactly one of convertNodes, setLabels, setTaints, removeNodes, "
        "addNodes, apply, delete");
  }
  const auto& [key, value] = *step.as_object().begin();
  std::string child = path + "." + std::string(key);
  if (key == "convertNodes") return ConvertNodes(value, child, cluster);
  if (key == "setLabels") return SetNodeField(value, child, "labels", cluster);
  if (key == "setTaints") return SetNodeField(value, child, "taints", cluster);
  if (key == "removeNodes") {
    FieldReader r(value, child);
    const json::value* nodes_value = r.Raw("nodes");
    DRAPLANE_RETURN_IF_ERROR(r.Finish());
    DRAPLANE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                              SelectNodes(nodes_value, child + ".nodes", *cluster));
    DrainNodes(std::set<std::string>(names.begin(), names.end()), cluster, true);
    return Status::Ok();
  }
  if (key == "addNodes") return AddNodes(value, child, cluster);
  if (key == "apply") {
    if (!value.is_array()) return InvalidArgumentError(child + ": must be a list of manifests");
    std::vector<json::object> objects;
    for (size_t i = 0; i < value.as_array().size(); ++i) {
      const json::value& o = value.as_array()[i];
      if (!o.is_object() || Str(o.as_object(), "kind").empty() ||
          Str(o.as_object(), "apiVersion").empty()) {
        return InvalidArgumentError(child + "[" + std::to_string(i) +
                                    "]: must be a manifest with apiVersion and kind");
      }
      objects.push_back(o.as_object());
    }
    ApplyObjects(objects, cluster);
    return Status::Ok();
  }
  if (key == "delete") return DeleteObjects(value, child, cluster);
  return InvalidArgumentError(child +
                              ": Unsupported value: supported values: convertNodes, "
                              "setLabels, setTaints, removeNodes, addNodes, apply, delete");
}

// What a dump must hold for the simulation to start from the cluster it shows: every claim a
// running Pod uses (without it the Pod's devices would count as free), every allocated device in
// a ResourceSlice, and no device allocated twice. A dump that breaks one is an input error, named
// as such, never a simulation result.
Status CheckClusterInput(const Cluster& cluster) {
  std::set<std::string> claims;                        // "ns/name"
  std::map<std::string, std::set<std::string>> pools;  // "driver/pool" -> device names
  for (const json::object& o : cluster.objects) {
    const std::string kind = Str(o, "kind");
    if (kind == "ResourceClaim") {
      claims.insert(MetaField(o, "namespace") + "/" + MetaField(o, "name"));
    }
    if (kind != "ResourceSlice") continue;
    const json::object* spec = Obj(o, "spec");
    if (spec == nullptr) continue;
    const json::object* pool = Obj(*spec, "pool");
    std::set<std::string>& devices =
        pools[Str(*spec, "driver") + "/" + (pool != nullptr ? Str(*pool, "name") : "")];
    if (const json::array* list = Arr(*spec, "devices")) {
      for (const json::value& d : *list) {
        if (d.is_object()) devices.insert(Str(d.as_object(), "name"));
      }
    }
  }
  std::map<std::string, std::string> holder;  // "driver/pool/device" -> claim holding it whole
  for (const json::object& o : cluster.objects) {
    const std::string kind = Str(o, "kind");
    const std::string id = kind + " " + MetaField(o, "namespace") + "/" + MetaField(o, "name");
    if (kind == "Pod") {
      const json::object* spec = Obj(o, "spec");
      const json::object* status = Obj(o, "status");
      const std::string phase = status != nullptr ? Str(*status, "phase") : "";
      if (spec == nullptr || Str(*spec, "nodeName").empty() || phase == "Succeeded" ||
          phase == "Failed") {
        continue;
      }
      // The claims it uses: named in the spec, or generated from a template (its status).
      std::vector<std::pair<std::string, std::string>> used;  // field path, claim name
      if (const json::array* entries = Arr(*spec, "resourceClaims")) {
        for (size_t i = 0; i < entries->size(); ++i) {
          if (!(*entries)[i].is_object()) continue;
          std::string name = Str((*entries)[i].as_object(), "resourceClaimName");
          if (!name.empty()) {
            used.emplace_back("spec.resourceClaims[" + std::to_string(i) + "]", name);
          }
        }
      }
      if (const json::array* entries =
              status != nullptr ? Arr(*status, "resourceClaimStatuses") : nullptr) {
        for (size_t i = 0; i < entries->size(); ++i) {
          if (!(*entries)[i].is_object()) continue;
          std::string name = Str((*entries)[i].as_object(), "resourceClaimName");
          if (!name.empty()) {
            used.emplace_back("status.resourceClaimStatuses[" + std::to_string(i) + "]", name);
          }
        }
      }
      for (const auto& [path, name] : used) {
        const std::string key = MetaField(o, "namespace") + "/" + name;
        if (!claims.contains(key)) {
          return InvalidArgumentError(
              id + ": " + path + ": the running Pod uses ResourceClaim " + key +
              ", which the cluster input does not hold (dump resourceclaims with the Pods, or "
              "its devices count as free)");
        }
      }
      continue;
    }
    if (kind != "ResourceClaim") continue;
    const json::object* status = Obj(o, "status");
    const json::object* allocation = status != nullptr ? Obj(*status, "allocation") : nullptr;
    const json::object* devices = allocation != nullptr ? Obj(*allocation, "devices") : nullptr;
    const json::array* results = devices != nullptr ? Arr(*devices, "results") : nullptr;
    if (results == nullptr) continue;
    for (size_t i = 0; i < results->size(); ++i) {
      if (!(*results)[i].is_object()) continue;
      const json::object& r = (*results)[i].as_object();
      const std::string pool = Str(r, "driver") + "/" + Str(r, "pool");
      const std::string device = pool + "/" + Str(r, "device");
      const std::string path = "status.allocation.devices.results[" + std::to_string(i) + "]";
      auto known = pools.find(pool);
      if (known == pools.end() || !known->second.contains(Str(r, "device"))) {
        return InvalidArgumentError(id + ": " + path + ": device " + device +
                                    " is in no ResourceSlice of the cluster input");
      }
      const json::value* admin = r.if_contains("adminAccess");
      if (!Str(r, "shareID").empty() ||
          (admin != nullptr && admin->is_bool() && admin->as_bool())) {
        continue;  // a share of a multi-allocatable device, or admin access: not exclusive
      }
      auto [it, first] = holder.emplace(device, id);
      if (!first && it->second != id) {
        return InvalidArgumentError(id + ": " + path + ": device " + device + " is allocated to " +
                                    it->second + " too");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ObjectIdentity(const json::object& object) {
  return Str(object, "kind") + "/" + MetaField(object, "namespace") + "/" +
         MetaField(object, "name");
}

// The API server's validation of `object` on create (kinds draplane does not validate pass): the
// simulation never starts from a cluster no API server could hold, such as a slice listing a
// device twice or a claim asking for -2 devices.
Status ValidateAsCreated(const json::object& object, const client::ResourceType& type,
                         const std::string& where) {
  json::value checked = object;
  if (type.namespaced && MetaField(object, "namespace").empty()) {
    EnsureObject(checked.as_object(), "metadata")["namespace"] = "default";  // checked only
  }
  api::FieldErrorList errors;
  api::Object typed = api::DecodeObject(checked, &errors);
  if (errors.empty()) api::validation::ValidateObject(typed, nullptr, {}, &errors);
  if (errors.empty()) return Status::Ok();
  return InvalidArgumentError(where + ": " + ObjectIdentity(object) + ": " +
                              errors.front().ToString());
}

StatusOr<Cluster> LoadCluster(const std::vector<std::string>& paths) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<api::codec::ManifestFile> files,
                            api::codec::CollectManifestFiles(paths));
  Cluster cluster;
  std::set<std::string> seen;
  for (api::codec::ManifestFile& file : files) {
    StatusOr<std::vector<api::codec::ManifestObject>> objects =
        api::codec::ParseManifest(file.text);
    if (!objects.ok()) return objects.status().WithPrefix(file.name);
    std::string().swap(file.text);
    for (api::codec::ManifestObject& o : *objects) {
      std::string where = file.name + ":" + o.position.Label();
      if (!o.value.is_object()) return InvalidArgumentError(where + ": not an object");
      json::object& object = o.value.as_object();
      if (IsProfile(object)) {
        StatusOr<agent::ClusterProfile> profile = agent::ParseProfileJson(o.value);
        if (!profile.ok()) return profile.status().WithPrefix(where);
        StatusOr<std::vector<agent::ProfileNode>> nodes = agent::ExpandNodes(*profile);
        if (!nodes.ok()) return nodes.status().WithPrefix(where);
        std::vector<json::object> expanded;
        AddProfileNodes(*nodes, &expanded);
        for (json::object& e : expanded) {
          if (!seen.insert(ObjectIdentity(e)).second) {
            return InvalidArgumentError(where + ": " + ObjectIdentity(e) + " defined twice");
          }
          cluster.objects.push_back(std::move(e));
        }
        continue;
      }
      std::string kind = Str(object, "kind");
      const client::ResourceType* type =
          client::FindResourceByKind(Str(object, "apiVersion"), kind);
      if (type == nullptr || kind == "Event" || kind == "Lease") {
        ++cluster.ignored[kind.empty() ? std::string("(no kind)") : kind];
        continue;
      }
      if (MetaField(object, "name").empty()) {
        return InvalidArgumentError(where + ": metadata.name: Required value");
      }
      if (!seen.insert(ObjectIdentity(object)).second) {
        return InvalidArgumentError(where + ": " + ObjectIdentity(object) + " defined twice");
      }
      DRAPLANE_RETURN_IF_ERROR(ValidateAsCreated(object, *type, where));
      cluster.objects.push_back(std::move(object));
    }
  }
  DRAPLANE_RETURN_IF_ERROR(CheckClusterInput(cluster));
  SortByKind(&cluster);
  return cluster;
}

StatusOr<ClusterChange> ParseClusterChange(const json::value& value, const std::string& source) {
  FieldReader r(value, "");
  if (r.String("apiVersion").value_or("") != kApiVersion) {
    return InvalidArgumentError(source + ": apiVersion: must be " + std::string(kApiVersion));
  }
  r.String("kind");
  ClusterChange change;
  change.source = source;
  if (const json::value* meta = r.Raw("metadata")) {
    FieldReader m(*meta, "metadata");
    change.name = m.String("name").value_or("");
    m.StringMap("labels");
    m.StringMap("annotations");
    r.Merge(m.Finish());
  }
  const json::value* changes = r.Raw("changes");
  if (changes == nullptr || !changes->is_array() || changes->as_array().empty()) {
    r.Fail("changes", "Required value: a list of at least one change");
  } else {
    change.changes.assign(changes->as_array().begin(), changes->as_array().end());
  }
  Status s = r.Finish();
  if (!s.ok()) return source.empty() ? s : s.WithPrefix(source);
  return change;
}

StatusOr<Configuration> LoadConfiguration(const std::vector<std::string>& paths,
                                          const ParseOptions& options) {
  Configuration out;
  if (paths.empty()) return out;
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<api::codec::ManifestFile> files,
                            api::codec::CollectManifestFiles(paths));
  for (const api::codec::ManifestFile& file : files) {
    StatusOr<std::vector<api::codec::ManifestObject>> objects =
        api::codec::ParseManifest(file.text);
    if (!objects.ok()) return objects.status().WithPrefix(file.name);
    for (api::codec::ManifestObject& o : *objects) {
      std::string where = file.name + ":" + o.position.Label();
      if (!o.value.is_object()) return InvalidArgumentError(where + ": not an object");
      const json::object& object = o.value.as_object();
      if (Str(object, "kind") != kClusterChangeKind) {
        if (Str(object, "apiVersion").empty() || Str(object, "kind").empty()) {
          return InvalidArgumentError(where + ": apiVersion and kind: Required value");
        }
        if (options.unknown_fields) {
          std::vector<std::string> unknown = options.unknown_fields(object);
          if (!unknown.empty()) {
            return InvalidArgumentError(where + ": " + ObjectIdentity(object) +
                                        ": unknown field \"" + unknown.front() + "\"");
          }
        }
        out.policies.push_back(PolicyObject{object, where});
        continue;
      }
      DRAPLANE_ASSIGN_OR_RETURN(ClusterChange change, ParseClusterChange(o.value, where));
      out.changes.push_back(std::move(change));
    }
  }
  return out;
}

Status ApplyClusterChange(const ClusterChange& change, Cluster* cluster) {
  for (size_t i = 0; i < change.changes.size(); ++i) {
    Status s = ApplyStep(change.changes[i], "changes[" + std::to_string(i) + "]", cluster);
    if (!s.ok()) return s.WithPrefix(change.source);
  }
  SortByKind(cluster);
  return Status::Ok();
}

void ApplyObjects(const std::vector<json::object>& objects, Cluster* cluster) {
  for (const json::object& object : objects) {
    std::string id = ObjectIdentity(object);
    auto it = std::find_if(cluster->objects.begin(), cluster->objects.end(),
                           [&](const json::object& o) { return ObjectIdentity(o) == id; });
    if (it != cluster->objects.end()) {
      *it = object;
    } else {
      cluster->objects.push_back(object);
    }
  }
  SortByKind(cluster);
}

}  // namespace draplane::sim
