// OpenAPI v3 documents of the served API (kube-apiserver's /openapi/v3), and strict field
// validation driven by the same schemas.
//
// kubectl needs the documents: before `create` / `apply` it checks in /openapi/v3 that the
// server understands `fieldValidation` for the kind (a PATCH operation tagged with the kind's
// x-kubernetes-group-version-kind that lists the parameter), and `kubectl explain` reads the
// component schemas. The schemas are generated at build time from the object model's schema
// (gen_openapi_schemas.py); the paths are built from the registry.
//
// PATCH operations advertise JSON patch, merge patch and server-side apply but not strategic
// merge patch, so
// `kubectl apply` computes its patches from its own built-in types (strategic merge patch for
// core kinds, JSON merge patch for kinds it does not know) rather than from these schemas; the
// server applies all three formats (api/patch/patch.h).
//
// Strict field validation (`fieldValidation=Strict|Warn`): a field the schema does not declare
// is unknown. Fields the object model keeps without modelling (upstream_fields.yaml) are
// declared with `x-kubernetes-preserve-unknown-fields`, so nothing below them is checked.
//
// Thread-safety: pure functions over immutable data built on first use.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/handlers/registry.h"

namespace draplane::server::openapi {

// A component schema compiled for walking objects (strict field validation, server-side apply's
// field sets), with `$ref`s resolved: one node per schema, made once.
struct SchemaNode {
  // Nothing below is described: the schema does not resolve, or it preserves unknown fields.
  bool untyped = false;
  // `properties` is an object: a struct whose members it names. Values are the members'
  // schemas, nullptr for a property whose schema is not an object (known, not walked).
  bool has_properties = false;
  std::unordered_map<std::string_view, const SchemaNode*> properties;
  // Without `properties`: the schema of every member (`additionalProperties`), or nullptr.
  const SchemaNode* additional = nullptr;
  // The schema of array items, or nullptr.
  const SchemaNode* items = nullptr;
};

// The compiled schema of a served kind, or nullptr when none is generated.
const SchemaNode* KindSchema(std::string_view group, std::string_view version,
                             std::string_view kind);

// The component schemas, keyed by upstream name (io.k8s.api.core.v1.Pod, ...).
const boost::json::object& ComponentSchemas();

// The schema name of a served kind, or std::nullopt when none is generated.
std::optional<std::string> SchemaNameOf(std::string_view group, std::string_view version,
                                        std::string_view kind);

// The body of /openapi/v3: every group version's path and serverRelativeURL (with a content
// hash, as upstream serves them).
std::string V3Index(const handlers::Registry& registry);

// The document of one group version, addressed as in the index ("api/v1",
// "apis/resource.k8s.io/v1"); std::nullopt when not served.
std::optional<std::string> V3Document(const handlers::Registry& registry,
                                      std::string_view group_version_path);

// /openapi/v2 without paths or definitions: the Swagger 2.0 header alone, as JSON or (when the
// Accept header asks for it, as kubectl and client-go do) as gnostic's OpenAPIv2 protobuf
// Document. kubectl reads it only for a kind /openapi/v3 lacks (a kind this server does not
// serve, a Deployment in a file of claims); finding no schema there it skips its client-side
// check, so the user gets the mapping error "no matches for kind" instead of "the server could
// not find the requested resource". Every served kind is described in /openapi/v3.
struct V2Document {
  std::string body;
  std::string content_type;
};
V2Document V2(std::string_view accept, std::string_view version);

// The fields of `object` (a `kind` of group/version) that its schema does not declare, as
// paths in upstream's form ("spec.devices.requests[0].foo"); when `prune` is set they are
// removed from `object` as well (what a typed decoder does with unknown fields).
std::vector<std::string> UnknownFields(std::string_view group, std::string_view version,
                                       std::string_view kind, boost::json::object& object,
                                       bool prune);

}  // namespace draplane::server::openapi
