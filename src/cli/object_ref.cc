#include "cli/object_ref.h"

#include <fmt/core.h>

#include <functional>
#include <utility>
#include <vector>

#include "api/validation/names.h"

namespace draplane::cli {
namespace {

Status Invalid(std::string_view what, std::string_view value, const std::string& why) {
  return InvalidArgumentError(fmt::format("{} \"{}\": {}", what, value, why));
}

// The name checks of the API server (apimachinery ValidateObjectMeta), joined.
Status Check(std::string_view what, std::string_view value, const std::vector<std::string>& msgs) {
  if (msgs.empty()) return Status::Ok();
  std::string why;
  for (const std::string& m : msgs) {
    if (!why.empty()) why += "; ";
    why += m;
  }
  return Invalid(what, value, why);
}

}  // namespace

Status ValidateObjectName(std::string_view name, std::string_view what) {
  if (name.empty()) return Invalid(what, name, "name must not be empty");
  return Check(what, name, api::validation::NameIsDNSSubdomain(name, /*prefix=*/false));
}

Status ValidateNamespaceName(std::string_view name, std::string_view what) {
  if (name.empty()) return Invalid(what, name, "namespace must not be empty");
  return Check(what, name, api::validation::NameIsDNSLabel(name, /*prefix=*/false));
}

StatusOr<NamespacedName> ParseNamespacedName(std::string_view text,
                                             std::string_view default_namespace,
                                             std::string_view what) {
  NamespacedName out;
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    out.ns = std::string(default_namespace);
    out.name = std::string(text);
  } else {
    if (text.find('/', slash + 1) != std::string_view::npos) {
      return Invalid(what, text, "expected NAMESPACE/NAME or NAME");
    }
    out.ns = std::string(text.substr(0, slash));
    out.name = std::string(text.substr(slash + 1));
    if (out.ns.empty()) return Invalid(what, text, "the namespace before '/' is empty");
    if (out.name.empty()) return Invalid(what, text, "the name after '/' is empty");
  }
  if (out.name.empty()) return Invalid(what, text, "name must not be empty");
  Status ns = ValidateNamespaceName(out.ns, std::string(what) + " namespace");
  if (!ns.ok()) return ns;
  Status name = Check(what, text, api::validation::NameIsDNSSubdomain(out.name, false));
  if (!name.ok()) return name;
  return out;
}

namespace {

CLI::Validator Checker(std::function<Status(const std::string&)> check, std::string name) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) -> std::string {
        Status s = check(value);
        return s.ok() ? std::string() : std::string(s.message());
      },
      "", std::move(name));
}

}  // namespace

CLI::Validator NamespacedNameCheck(std::string what) {
  return Checker(
      [what](const std::string& v) { return ParseNamespacedName(v, "default", what).status(); },
      "NAMESPACE/NAME");
}

CLI::Validator ObjectNameCheck(std::string what) {
  return Checker([what](const std::string& v) { return ValidateObjectName(v, what); }, "NAME");
}

CLI::Validator NamespaceNameCheck(std::string what) {
  return Checker([what](const std::string& v) { return ValidateNamespaceName(v, what); },
                 "NAMESPACE");
}

}  // namespace draplane::cli
