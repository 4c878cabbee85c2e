#include "cli/manifest_validation.h"

#include <optional>
#include <variant>

#include "api/validation/object_validation.h"
#include "server/handlers/registry.h"

namespace draplane::cli {
namespace {

// Whether the API server serves the object's kind in namespaces; nullopt for a kind it does not
// serve.
std::optional<bool> ServedNamespaced(const api::Object& object) {
  const std::string api_version = api::ObjectApiVersion(object);
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const server::handlers::ResourceInfo* info =
      server::handlers::Registry::Default().FindKind(group, api::ObjectKind(object));
  if (info == nullptr) return std::nullopt;
  return info->namespaced;
}

}  // namespace

void DefaultNamespace(api::Object& object, const std::string& ns) {
  const std::optional<bool> namespaced = ServedNamespaced(object);
  std::visit(
      [&](auto& o) {
        if constexpr (requires { o.metadata.namespace_; }) {
          if (namespaced == true && o.metadata.namespace_.empty()) o.metadata.namespace_ = ns;
          if (namespaced == false) o.metadata.namespace_.clear();
        }
      },
      object);
}

Status ValidateAsCreated(api::Object& object, const std::string& where,
                         const std::string& default_namespace,
                         const api::validation::Features& features) {
  DefaultNamespace(object, default_namespace);
  api::FieldErrorList errors;
  api::validation::ValidateObject(object, nullptr, features, &errors);
  if (errors.empty()) return Status::Ok();
  std::string message = where + ": " + api::ObjectKind(object) + "/" + api::ObjectName(object) +
                        ": " + errors.front().ToString();
  if (errors.size() > 1) {
    message += " (and " + std::to_string(errors.size() - 1) + " more problem" +
               (errors.size() > 2 ? "s" : "") + ": `draplane lint` lists them all)";
  }
  return InvalidArgumentError(std::move(message));
}

}  // namespace draplane::cli
