#include "cli/manifest_validation.h"

#include <optional>
#include <variant>

#include "api/validation/disabled_fields.h"
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
  // The fields of gates that are off go, as the server's strategies drop them before validating.
  if (auto* slice = std::get_if<api::resourcev1::ResourceSlice>(&object)) {
    api::validation::DropDisabledFields(*slice, nullptr, features);
  } else if (auto* claim = std::get_if<api::resourcev1::ResourceClaim>(&object)) {
    api::validation::DropDisabledFields(claim->spec, nullptr, features);
  } else if (auto* tmpl = std::get_if<api::resourcev1::ResourceClaimTemplate>(&object)) {
    api::validation::DropDisabledFields(tmpl->spec.spec, nullptr, features);
  }
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
