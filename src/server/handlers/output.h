// Response encodings a client can ask for with its Accept header, as kube-apiserver negotiates
// them (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation):
//   application/json (or */*)                              the object / list as stored
//   application/yaml                                       the same, as YAML
//   application/json;as=Table;v=v1;g=meta.k8s.io           a metav1 Table (`kubectl get`)
//   application/json;as=PartialObjectMetadata[List];v=v1;g=meta.k8s.io   metadata only
// v1beta1 of Table / PartialObjectMetadata is accepted too. `includeObject` (None, Metadata,
// Object) chooses what each table row embeds; `kubectl get -o wide` shows the columns of
// priority 1, which the server always sends.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/handlers/registry.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {

enum class OutputKind { kJson, kYaml, kTable, kPartialMetadata };

struct OutputFormat {
  OutputKind kind = OutputKind::kJson;
  std::string meta_version = "v1";          // Table / PartialObjectMetadata version asked for
  std::string include_object = "Metadata";  // tables: None, Metadata, Object
  std::string ContentType() const;
};

// Negotiates the encoding; std::nullopt when nothing in `accept` is served (406).
std::optional<OutputFormat> NegotiateOutput(std::string_view accept,
                                            std::string_view include_object);

struct ListPage {
  std::vector<std::string> items;  // served JSON of each object (resourceVersion stamped)
  std::string resource_version;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
};

// The body of a GET of one object (`served` is its JSON with resourceVersion).
StatusOr<std::string> RenderObject(const ResourceInfo& resource, const std::string& served,
                                   const OutputFormat& format, Timestamp now);
// The body of a list.
StatusOr<std::string> RenderList(const ResourceInfo& resource, const ListPage& page,
                                 const OutputFormat& format, Timestamp now);
// A Table holding the rows of `objects` (parsed served objects), without list metadata beyond
// `resource_version`.
boost::json::object RenderTable(const ResourceInfo& resource,
                                const std::vector<const JsonObject*>& objects,
                                const OutputFormat& format, std::string_view resource_version,
                                Timestamp now);

}  // namespace draplane::server::handlers
