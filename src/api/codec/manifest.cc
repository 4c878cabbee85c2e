#include "api/codec/manifest.h"

#include <boost/json.hpp>

#include "api/codec/internal/documents.h"
#include "api/codec/json.h"
#include "api/codec/yaml.h"
#include "api/meta/codec_support.h"
#include "common/status_macros.h"

namespace draplane::api::codec {
namespace {

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

}  // namespace

namespace internal {

Status EmitDocument(boost::json::value value, int document, int line,
                    const ManifestOptions& options,
                    const std::function<Status(ManifestObject& object)>& sink) {
  if (value.is_null()) return Status::Ok();  // an empty document
  boost::json::object* obj = value.if_object();
  if (obj == nullptr) {
    return InvalidArgumentError(std::to_string(document) + ": expected an object, got " +
                                std::string(api::internal::JsonTypeName(value)));
  }
  const boost::json::value* kind = obj->if_contains("kind");
  const bool is_list =
      options.flatten_lists && kind != nullptr && kind->is_string() &&
      IsListKind(std::string_view(kind->get_string().data(), kind->get_string().size())) &&
      obj->contains("items");
  if (!is_list) {
    ManifestObject out{SourcePosition{document, line, -1}, std::move(value)};
    return sink(out);
  }
  boost::json::value& items = (*obj)["items"];
  if (items.is_null()) return Status::Ok();
  boost::json::array* arr = items.if_array();
  if (arr == nullptr) {
    return InvalidArgumentError(std::to_string(document) + ": items: expected an array, got " +
                                std::string(api::internal::JsonTypeName(items)));
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    if (!(*arr)[i].is_object()) {
      return InvalidArgumentError(std::to_string(document) + ": items[" + std::to_string(i) +
                                  "]: expected an object, got " +
                                  std::string(api::internal::JsonTypeName((*arr)[i])));
    }
    ManifestObject out{SourcePosition{document, line, static_cast<int>(i)}, std::move((*arr)[i])};
    DRAPLANE_RETURN_IF_ERROR(sink(out));
  }
  return Status::Ok();
}

}  // namespace internal

std::string SourcePosition::Label() const {
  std::string out = std::to_string(document);
  if (item >= 0) out += ":items[" + std::to_string(item) + "]";
  return out;
}

bool IsListKind(std::string_view kind) {
  return kind.size() >= 4 && kind.substr(kind.size() - 4) == "List";
}

StatusOr<std::vector<ManifestObject>> ParseManifest(std::string_view text,
                                                    const ManifestOptions& options,
                                                    boost::json::storage_ptr sp) {
  std::vector<ManifestObject> out;
  const auto collect = [&out](ManifestObject& object) {
    out.push_back(std::move(object));
    return Status::Ok();
  };
  int document = 0;
  if (LooksLikeJson(text)) {
    DRAPLANE_ASSIGN_OR_RETURN(std::vector<JsonDocument> docs,
                              ParseJsonStream(text, options.limits, sp));
    for (JsonDocument& doc : docs) {
      DRAPLANE_RETURN_IF_ERROR(
          internal::EmitDocument(std::move(doc.value), ++document, doc.line, options, collect));
    }
    return out;
  }
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<YamlDocument> docs, ParseYaml(text, options.limits, sp));
  for (YamlDocument& doc : docs) {
    DRAPLANE_RETURN_IF_ERROR(
        internal::EmitDocument(std::move(doc.value), ++document, doc.line, options, collect));
  }
  return out;
}

}  // namespace draplane::api::codec
