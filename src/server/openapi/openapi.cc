#include "server/openapi/openapi.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "server/handlers/discovery.h"

namespace draplane::server::openapi {
namespace internal {
extern const char kComponentSchemasJson[];
}  // namespace internal

namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

const object* Resolve(const object* schema) {
  for (int depth = 0; schema != nullptr && depth < 8; ++depth) {
    const value* r = schema->if_contains("$ref");
    if (r == nullptr) {
      const value* all = schema->if_contains("allOf");
      if (all != nullptr && all->is_array() && all->get_array().size() == 1 &&
          all->get_array()[0].is_object()) {
        schema = &all->get_array()[0].get_object();
        continue;
      }
      return schema;
    }
    std::string_view name = r->get_string();
    constexpr std::string_view kPrefix = "#/components/schemas/";
    if (name.rfind(kPrefix, 0) != 0) return nullptr;
    const value* target = ComponentSchemas().if_contains(name.substr(kPrefix.size()));
    schema = target != nullptr && target->is_object() ? &target->get_object() : nullptr;
  }
  return schema;
}

class WalkSchemas {
 public:
  // The compiled schema of a served kind, or nullptr when none is generated.
  const SchemaNode* Root(std::string_view group, std::string_view version,
                         std::string_view kind) const {
    for (const Root_& r : roots_) {
      if (r.kind == kind && r.version == version && r.group == group) return r.node;
    }
    return nullptr;
  }

  static const WalkSchemas& Get() {
    static const WalkSchemas* schemas = new WalkSchemas();  // never destroyed
    return *schemas;
  }

 private:
  struct Root_ {
    std::string group, version, kind;
    const SchemaNode* node;
  };

  WalkSchemas() {
    for (const auto& member : ComponentSchemas()) {
      if (!member.value().is_object()) continue;
      const value* gvks =
          member.value().get_object().if_contains("x-kubernetes-group-version-kind");
      if (gvks == nullptr || !gvks->is_array()) continue;
      for (const value& gvk : gvks->get_array()) {
        const object& g = gvk.get_object();
        Root_ root{std::string(g.at("group").get_string()),
                   std::string(g.at("version").get_string()),
                   std::string(g.at("kind").get_string()), Compile(&member.value().get_object())};
        // As SchemaNameOf: a kind named by two schemas gets the later one.
        auto same = std::find_if(roots_.begin(), roots_.end(), [&](const Root_& r) {
          return r.group == root.group && r.version == root.version && r.kind == root.kind;
        });
        if (same != roots_.end()) {
          *same = std::move(root);
        } else {
          roots_.push_back(std::move(root));
        }
      }
    }
  }

  // The node of `schema` (before resolving its `$ref` / single `allOf`), made once per schema
  // object; a schema that refers back to itself gets the node being built.
  const SchemaNode* Compile(const object* schema) {
    auto [it, inserted] = compiled_.try_emplace(schema, nullptr);
    if (!inserted) return it->second;
    nodes_.push_back(std::make_unique<SchemaNode>());
    SchemaNode* node = nodes_.back().get();
    it->second = node;
    const object* resolved = Resolve(schema);
    if (resolved == nullptr) {
      node->untyped = true;
      return node;
    }
    if (const value* preserve = resolved->if_contains("x-kubernetes-preserve-unknown-fields");
        preserve != nullptr && preserve->is_bool() && preserve->get_bool()) {
      node->untyped = true;
      return node;
    }
    const value* properties = resolved->if_contains("properties");
    const value* additional = resolved->if_contains("additionalProperties");
    if (properties != nullptr && properties->is_object()) {
      node->has_properties = true;
      for (const auto& property : properties->get_object()) {
        node->properties.emplace(
            std::string_view(property.key()),
            property.value().is_object() ? Compile(&property.value().get_object()) : nullptr);
      }
    } else if (additional != nullptr && additional->is_object()) {
      node->additional = Compile(&additional->get_object());
    }
    const value* items = resolved->if_contains("items");
    if (items != nullptr && items->is_object()) node->items = Compile(&items->get_object());
    return node;
  }

  std::vector<Root_> roots_;
  std::unordered_map<const object*, const SchemaNode*> compiled_;
  std::vector<std::unique_ptr<SchemaNode>> nodes_;
};

// Appends the unknown fields below `v` (at `path`, a buffer restored before returning) in
// document order, and removes them when `prune` is set. Field paths are upstream's
// ("spec.devices.requests[0].foo"); they are only built for unknown fields.
void Walk(value& v, const SchemaNode* node, std::string& path, bool prune,
          std::vector<std::string>* unknown) {
  if (node == nullptr || node->untyped) return;
  const size_t length = path.size();
  if (v.is_object()) {
    object& o = v.get_object();
    if (node->has_properties) {
      std::vector<std::string> drop;
      for (auto& member : o) {
        std::string_view key = member.key();
        auto property = node->properties.find(key);
        if (property == node->properties.end()) {
          std::string child = path;
          if (!child.empty()) child.push_back('.');
          child.append(key);
          unknown->push_back(std::move(child));
          if (prune) drop.emplace_back(key);
          continue;
        }
        const SchemaNode* child = property->second;
        if (child == nullptr || child->untyped) continue;
        if (!path.empty()) path.push_back('.');
        path.append(key);
        Walk(member.value(), child, path, prune, unknown);
        path.resize(length);
      }
      for (const std::string& key : drop) o.erase(key);
    } else if (node->additional != nullptr && !node->additional->untyped) {
      for (auto& member : o) {
        path.push_back('.');
        path.append(member.key());
        Walk(member.value(), node->additional, path, prune, unknown);
        path.resize(length);
      }
    }
    return;
  }
  if (v.is_array()) {
    if (node->items == nullptr || node->items->untyped) return;
    array& a = v.get_array();
    char index[24];
    for (size_t i = 0; i < a.size(); ++i) {
      int n = std::snprintf(index, sizeof index, "[%zu]", i);
      path.append(index, static_cast<size_t>(n));
      Walk(a[i], node->items, path, prune, unknown);
      path.resize(length);
    }
  }
}

// FNV-1a, printed in upper-case hex like upstream's document hashes.
std::string Hash(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (int i = 15; i >= 0; --i) out.push_back(kHex[(h >> (i * 4)) & 0xf]);
  return out;
}

object Param(std::string_view name, std::string_view in, std::string_view description,
             bool required = false) {
  object p;
  p["name"] = name;
  p["in"] = in;
  p["description"] = description;
  if (required) p["required"] = true;
  object schema;
  schema["type"] = "string";
  schema["uniqueItems"] = true;
  p["schema"] = std::move(schema);
  return p;
}

object Gvk(const handlers::ResourceInfo& r) {
  object g;
  g["group"] = r.group;
  g["kind"] = r.kind;
  g["version"] = r.version;
  return g;
}

object JsonContent(const std::optional<std::string>& schema_name) {
  object content;
  object media;
  if (schema_name) media["schema"] = object{{"$ref", "#/components/schemas/" + *schema_name}};
  content["application/json"] = media;
  content["application/yaml"] = media;
  return content;
}

object Operation(const handlers::ResourceInfo& r, std::string_view action,
                 std::string_view operation_id, const std::optional<std::string>& schema_name,
                 array parameters, std::optional<object> request_content) {
  object op;
  op["description"] = std::string(action) + " " + r.kind;
  op["operationId"] = operation_id;
  op["tags"] = array{r.group.empty() ? std::string("core_v1") : r.group + "_" + r.version};
  if (!parameters.empty()) op["parameters"] = std::move(parameters);
  if (request_content) {
    object body;
    body["content"] = std::move(*request_content);
    body["required"] = true;
    op["requestBody"] = std::move(body);
  }
  object responses;
  object ok;
  ok["description"] = "OK";
  ok["content"] = JsonContent(schema_name);
  responses[action == "post" ? "201" : "200"] = std::move(ok);
  responses["401"] = object{{"description", "Unauthorized"}};
  op["responses"] = std::move(responses);
  op["x-kubernetes-action"] = action;
  op["x-kubernetes-group-version-kind"] = Gvk(r);
  return op;
}

array WriteParams() {
  return array{
      Param("dryRun", "query",
            "When present, indicates that modifications should not be persisted. Valid value: "
            "All"),
      Param("fieldManager", "query", "A name associated with the actor making these changes."),
      Param("fieldValidation", "query",
            "Ignore, Warn (the default) or Strict: what to do with unknown or duplicate fields "
            "in the request."),
  };
}

array ListParams() {
  return array{Param("allowWatchBookmarks", "query", "Request watch bookmarks."),
               Param("continue", "query", "The continue token of the previous page."),
               Param("fieldSelector", "query", "Restrict the list by fields."),
               Param("labelSelector", "query", "Restrict the list by labels."),
               Param("limit", "query", "The maximum number of objects in one page."),
               Param("resourceVersion", "query", "The resourceVersion to list or watch from."),
               Param("resourceVersionMatch", "query", "Exact or NotOlderThan."),
               Param("sendInitialEvents", "query", "Watch-list: send the current state first."),
               Param("timeoutSeconds", "query", "How long a list or watch may take."),
               Param("watch", "query", "Watch for changes instead of listing.")};
}

// Paths of one resource (and its status subresource), as upstream names them.
void AddResourcePaths(const handlers::ResourceInfo& r, object& paths) {
  std::string base = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  std::string collection =
      r.namespaced ? base + "/namespaces/{namespace}/" + r.resource : base + "/" + r.resource;
  std::string item = collection + "/{name}";
  std::optional<std::string> schema = SchemaNameOf(r.group, r.version, r.kind);
  std::optional<std::string> list_schema = SchemaNameOf(r.group, r.version, r.kind + "List");
  std::string id_kind = r.kind;
  std::string id_group = r.group.empty() ? "CoreV1" : "";
  if (!r.group.empty()) {
    // resource.k8s.io -> ResourceV1: the first label capitalised, upstream's operationId style.
    std::string first = r.group.substr(0, r.group.find('.'));
    first[0] = static_cast<char>(std::toupper(first[0]));
    id_group = first + "V1";
  }
  std::string ns_part = r.namespaced ? "Namespaced" : "";
  auto with_namespace = [&](array params) {
    if (r.namespaced) {
      params.push_back(Param("namespace", "path", "object name and auth scope", true));
    }
    return params;
  };
  object patch_content;
  patch_content["application/json-patch+json"] = object{{"schema", object{{"type", "object"}}}};
  patch_content["application/merge-patch+json"] = object{{"schema", object{{"type", "object"}}}};
  patch_content["application/apply-patch+yaml"] = object{{"schema", object{{"type", "object"}}}};

  object collection_ops;
  if (r.HasVerb("list")) {
    collection_ops["get"] = Operation(r, "list", "list" + id_group + ns_part + id_kind, list_schema,
                                      with_namespace(ListParams()), std::nullopt);
  }
  if (r.HasVerb("create")) {
    collection_ops["post"] = Operation(r, "post", "create" + id_group + ns_part + id_kind, schema,
                                       with_namespace(WriteParams()), JsonContent(schema));
  }
  if (r.HasVerb("deletecollection")) {
    collection_ops["delete"] =
        Operation(r, "deletecollection", "deleteCollection" + id_group + ns_part + id_kind,
                  std::nullopt, with_namespace(ListParams()), std::nullopt);
  }
  if (!collection_ops.empty()) paths[collection] = std::move(collection_ops);

  if (r.virtual_resource) return;
  array item_params = with_namespace(array{Param("name", "path", "name of the object", true)});
  object item_ops;
  item_ops["get"] =
      Operation(r, "get", "read" + id_group + ns_part + id_kind, schema, item_params, std::nullopt);
  array write = WriteParams();
  for (value& p : item_params) write.push_back(p);
  item_ops["put"] = Operation(r, "put", "replace" + id_group + ns_part + id_kind, schema, write,
                              JsonContent(schema));
  array patch_params = write;
  patch_params.push_back(Param("force", "query",
                               "Apply patches only: take over the fields the configuration sets "
                               "that other managers own."));
  item_ops["patch"] = Operation(r, "patch", "patch" + id_group + ns_part + id_kind, schema,
                                patch_params, patch_content);
  item_ops["delete"] = Operation(r, "delete", "delete" + id_group + ns_part + id_kind, std::nullopt,
                                 item_params, std::nullopt);
  paths[item] = std::move(item_ops);
  if (r.namespaced && r.HasVerb("list")) {
    object all;
    all["get"] = Operation(r, "list", "list" + id_group + id_kind + "ForAllNamespaces", list_schema,
                           ListParams(), std::nullopt);
    paths[base + "/" + r.resource] = std::move(all);
  }
  if (r.FindSubresource("status") != nullptr) {
    object status_ops;
    status_ops["get"] = Operation(r, "get", "read" + id_group + ns_part + id_kind + "Status",
                                  schema, item_params, std::nullopt);
    status_ops["put"] = Operation(r, "put", "replace" + id_group + ns_part + id_kind + "Status",
                                  schema, write, JsonContent(schema));
    status_ops["patch"] = Operation(r, "patch", "patch" + id_group + ns_part + id_kind + "Status",
                                    schema, patch_params, patch_content);
    paths[item + "/status"] = std::move(status_ops);
  }
}

struct Documents {
  std::map<std::string, std::string> by_path;  // "apis/resource.k8s.io/v1" -> document
  std::string index;
};

const Documents& BuildDocuments(const handlers::Registry& registry) {
  static std::once_flag once;
  static Documents* documents = nullptr;
  std::call_once(once, [&] {
    documents = new Documents();  // never destroyed
    object index_paths;
    for (const handlers::GroupVersionInfo& gv : registry.group_versions()) {
      std::string key =
          gv.group.empty() ? "api/" + gv.version : "apis/" + gv.group + "/" + gv.version;
      object doc;
      doc["openapi"] = "3.0.0";
      doc["info"] = object{{"title", "Kubernetes"},
                           {"version", std::string(handlers::kServedKubernetesGitVersion)}};
      object paths;
      for (const handlers::ResourceInfo* r : gv.resources) AddResourcePaths(*r, paths);
      doc["paths"] = std::move(paths);
      object components;
      components["schemas"] = ComponentSchemas();
      doc["components"] = std::move(components);
      std::string text = boost::json::serialize(doc);
      index_paths[key] =
          object{{"serverRelativeURL", "/openapi/v3/" + key + "?hash=" + Hash(text)}};
      documents->by_path[key] = std::move(text);
    }
    object index;
    index["paths"] = std::move(index_paths);
    documents->index = boost::json::serialize(index);
  });
  return *documents;
}

}  // namespace

const object& ComponentSchemas() {
  static const object* schemas = [] {
    boost::system::error_code ec;
    value v = boost::json::parse(internal::kComponentSchemasJson, ec);
    return new object(ec || !v.is_object() ? object() : std::move(v.get_object()));
  }();
  return *schemas;
}

std::optional<std::string> SchemaNameOf(std::string_view group, std::string_view version,
                                        std::string_view kind) {
  static const std::map<std::string, std::string>* index = [] {
    auto* out = new std::map<std::string, std::string>();
    for (const auto& member : ComponentSchemas()) {
      const value* gvks =
          member.value().get_object().if_contains("x-kubernetes-group-version-kind");
      if (gvks == nullptr || !gvks->is_array()) continue;
      for (const value& gvk : gvks->get_array()) {
        const object& g = gvk.get_object();
        std::string key = std::string(g.at("group").get_string()) + "/" +
                          std::string(g.at("version").get_string()) + "/" +
                          std::string(g.at("kind").get_string());
        (*out)[key] = std::string(member.key());
      }
    }
    return out;
  }();
  auto it = index->find(std::string(group) + "/" + std::string(version) + "/" + std::string(kind));
  if (it == index->end()) return std::nullopt;
  return it->second;
}

std::string V3Index(const handlers::Registry& registry) { return BuildDocuments(registry).index; }

namespace {

// A length-delimited protobuf field (wire type 2) whose number is below 16 and whose length is
// below 128, which is all the v2 header needs.
void AppendProtoBytes(std::string& out, int field, std::string_view bytes) {
  out.push_back(static_cast<char>((field << 3) | 2));
  out.push_back(static_cast<char>(bytes.size()));
  out.append(bytes);
}

}  // namespace

V2Document V2(std::string_view accept, std::string_view version) {
  constexpr std::string_view kTitle = "Kubernetes";
  constexpr std::string_view kProtobuf = "application/com.github.proto-openapi.spec.v2";
  if (accept.find(kProtobuf) != std::string_view::npos) {
    // gnostic openapi_v2.Document: swagger = 1, info = 2 (Info: title = 1, version = 2),
    // paths = 8 (empty).
    std::string info;
    AppendProtoBytes(info, 1, kTitle);
    AppendProtoBytes(info, 2, version.substr(0, 100));
    std::string doc;
    AppendProtoBytes(doc, 1, "2.0");
    AppendProtoBytes(doc, 2, info);
    AppendProtoBytes(doc, 8, "");
    return {std::move(doc), "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"};
  }
  boost::json::object doc{{"swagger", "2.0"},
                          {"info", boost::json::object{{"title", kTitle}, {"version", version}}},
                          {"paths", boost::json::object()},
                          {"definitions", boost::json::object()}};
  return {boost::json::serialize(doc), "application/json"};
}

std::optional<std::string> V3Document(const handlers::Registry& registry,
                                      std::string_view group_version_path) {
  const Documents& docs = BuildDocuments(registry);
  auto it = docs.by_path.find(std::string(group_version_path));
  if (it == docs.by_path.end()) return std::nullopt;
  return it->second;
}

const SchemaNode* KindSchema(std::string_view group, std::string_view version,
                             std::string_view kind) {
  return WalkSchemas::Get().Root(group, version, kind);
}

std::vector<std::string> UnknownFields(std::string_view group, std::string_view version,
                                       std::string_view kind, object& obj, bool prune) {
  std::vector<std::string> unknown;
  const SchemaNode* root = WalkSchemas::Get().Root(group, version, kind);
  if (root == nullptr) return unknown;
  std::string path;
  value v(std::move(obj));
  Walk(v, root, path, prune, &unknown);
  obj = std::move(v.get_object());
  return unknown;
}

}  // namespace draplane::server::openapi
