#include "api/validation/pod_validation.h"

#include <boost/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"
#include "api/validation/internal/common.h"
#include "api/validation/internal/json_access.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using internal::Append;

using internal::FindArray;
using internal::FindObject;

std::string StringAt(const boost::json::object& o, std::string_view key) {
  return std::string(internal::GetString(o, key));
}

// A container's resources.claims (upstream validateResourceClaimNames).
void ValidateContainerClaims(const boost::json::object& container, const FieldPath& path,
                             const std::set<std::string>& pod_claims, FieldErrorList* errors) {
  const boost::json::object* resources = FindObject(container, "resources");
  const boost::json::array* claims = resources ? FindArray(*resources, "claims") : nullptr;
  if (claims == nullptr) return;
  FieldPath claims_path = path.Child("resources").Child("claims");
  std::set<std::string> seen;
  for (size_t i = 0; i < claims->size(); ++i) {
    if (!(*claims)[i].is_object()) continue;
    FieldPath p = claims_path.Index(static_cast<int64_t>(i));
    const boost::json::object& claim = (*claims)[i].get_object();
    std::string name = StringAt(claim, "name");
    if (name.empty()) {
      errors->push_back(Required(p));
      continue;
    }
    std::string key = name;
    if (std::string request = StringAt(claim, "request"); !request.empty()) key += "/" + request;
    if (!seen.insert(key).second) errors->push_back(Duplicate(p, RenderValue(name)));
    if (pod_claims.count(name) == 0) {
      FieldError e = NotFound(p, RenderValue(name));
      std::string names;
      for (const std::string& n : pod_claims) names += (names.empty() ? "" : ", ") + n;
      e.detail = "must be one of the names in pod.spec.resourceClaims" +
                 (names.empty() ? std::string(" which is empty") : ": " + names);
      errors->push_back(std::move(e));
    }
  }
}

// Upstream helper.IsOvercommitAllowed: native resources but huge pages may be requested below
// their limit; extended resources must request exactly their limit.
constexpr int64_t kMaxInt32 = 2147483647;

bool OvercommitAllowed(std::string_view resource) {
  bool native = resource.find('/') == std::string_view::npos ||
                resource.find("kubernetes.io/") != std::string_view::npos;
  return native && !resource.starts_with("hugepages-");
}

// upstream helper.IsStandardContainerResourceName: the resources a container may name without a
// domain.
bool StandardContainerResource(std::string_view resource) {
  return resource == "cpu" || resource == "memory" || resource == "ephemeral-storage" ||
         resource.starts_with("hugepages-");
}

// A container's requests and limits (upstream ValidateResourceRequirements): each name (one
// without a domain is a standard container resource, one with a domain outside kubernetes.io an
// extended resource name), each quantity's value, then a request is at most its limit, and
// equal to it for resources that cannot be overcommitted, which must have a limit. Malformed
// quantities are the typed decoding's to report.
void ValidateContainerResources(const boost::json::object& container, const FieldPath& path,
                                FieldErrorList* errors) {
  const boost::json::object* resources = FindObject(container, "resources");
  const boost::json::object* requests = resources ? FindObject(*resources, "requests") : nullptr;
  const boost::json::object* limits = resources ? FindObject(*resources, "limits") : nullptr;
  auto text = [](const boost::json::value& v) -> std::string {
    if (v.is_string()) return std::string(v.get_string());
    return v.is_number() ? boost::json::serialize(v) : std::string();
  };
  // ValidateResourceQuantityValue: no quantity below zero (a JSON number as well as a string),
  // and whole ones for extended resources (`example.com/gpu: 0.5` asks for half a device).
  for (const auto& [list, list_name] : {std::pair{limits, "limits"}, {requests, "requests"}}) {
    if (list == nullptr) continue;
    const FieldPath list_path = path.Child("resources").Child(list_name);
    for (const auto& [name, value] : *list) {
      StatusOr<Quantity> quantity = Quantity::Parse(text(value));
      if (!quantity.ok()) continue;
      const FieldPath at = list_path.Key(name);
      // upstream validateContainerResourceName: `gpu` for `nvidia.com/gpu` (a typo easily made
      // rewriting device-plugin manifests) would wait for ever as "Insufficient gpu".
      if (name.find('/') == std::string_view::npos) {
        if (!StandardContainerResource(name)) {
          errors->push_back(Invalid(at, RenderValue(std::string(name)),
                                    "must be a standard resource for containers"));
        }
      } else if (name.find("kubernetes.io/") == std::string_view::npos &&
                 !IsExtendedResourceName(name)) {
        errors->push_back(Invalid(at, RenderValue(std::string(name)),
                                  "doesn't follow extended resource name standard"));
      }
      if (quantity->Sign() < 0) {
        errors->push_back(
            Invalid(at, RenderValue(quantity->ToString()), "must be greater than or equal to 0"));
      }
      if (IsExtendedResourceName(name) && !quantity->IsInteger()) {
        errors->push_back(Invalid(at, RenderValue(quantity->ToString()), "must be an integer"));
      }
    }
  }
  if (requests == nullptr) return;
  FieldPath requests_path = path.Child("resources").Child("requests");
  for (const auto& [name, value] : *requests) {
    const boost::json::value* limit_value = limits ? limits->if_contains(name) : nullptr;
    if (limit_value == nullptr) {
      // An extended resource cannot be overcommitted: a request without its limit (defaulting
      // copies limits into missing requests, not the other way) is refused, as upstream.
      if (!OvercommitAllowed(name)) {
        errors->push_back(Required(path.Child("resources").Child("limits"),
                                   "Limit must be set for non overcommitable resources"));
      }
      continue;
    }
    StatusOr<Quantity> request = Quantity::Parse(text(value));
    StatusOr<Quantity> limit = Quantity::Parse(text(*limit_value));
    if (!request.ok() || !limit.ok()) continue;
    const int cmp = request->Compare(*limit);
    if (cmp != 0 && !OvercommitAllowed(name)) {
      errors->push_back(
          Invalid(requests_path, RenderValue(request->ToString()),
                  "must be equal to " + std::string(name) + " limit of " + limit->ToString()));
    } else if (cmp > 0) {
      errors->push_back(Invalid(
          requests_path, RenderValue(request->ToString()),
          "must be less than or equal to " + std::string(name) + " limit of " + limit->ToString()));
    }
  }
}

// spec.tolerations (upstream validateTolerations; the Lt / Gt operators' gate is off).
void ValidateTolerations(const boost::json::object& spec, const FieldPath& spec_path,
                         FieldErrorList* errors) {
  const boost::json::array* tolerations = FindArray(spec, "tolerations");
  for (size_t i = 0; tolerations != nullptr && i < tolerations->size(); ++i) {
    if (!(*tolerations)[i].is_object()) continue;
    const boost::json::object& t = (*tolerations)[i].get_object();
    const FieldPath path = spec_path.Child("tolerations").Index(static_cast<int64_t>(i));
    const std::string key = StringAt(t, "key");
    const std::string op = StringAt(t, "operator");
    const std::string value = StringAt(t, "value");
    const std::string effect = StringAt(t, "effect");
    if (!key.empty()) Append(*errors, ValidateLabelName(key, path.Child("key")));
    if (key.empty() && op != "Exists") {
      errors->push_back(Invalid(path.Child("operator"), RenderValue(op),
                                "operator must be Exists when `key` is empty, which means "
                                "\"match all values and all keys\""));
    }
    const boost::json::value* seconds = t.if_contains("tolerationSeconds");
    if (seconds != nullptr && !seconds->is_null() && effect != "NoExecute") {
      errors->push_back(Invalid(path.Child("effect"), RenderValue(effect),
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (op.empty() || op == "Equal") {
      if (std::vector<std::string> bad = IsLabelValue(value); !bad.empty()) {
        std::string joined;
        for (const std::string& msg : bad) joined += (joined.empty() ? "" : ";") + msg;
        errors->push_back(Invalid(path.Child("operator"), RenderValue(value), joined));
      }
    } else if (op == "Exists") {
      if (!value.empty()) {
        errors->push_back(Invalid(path.Child("operator"), RenderValue(value),
                                  "value must be empty when `operator` is 'Exists'"));
      }
    } else {
      errors->push_back(NotSupported(path.Child("operator"), RenderValue(op), {"Equal", "Exists"}));
    }
    if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
        effect != "NoExecute") {
      errors->push_back(NotSupported(path.Child("effect"), RenderValue(effect),
                                     {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
  }
}

}  // namespace

FieldErrorList ValidatePodSpec(const boost::json::object& pod) {
  FieldErrorList errors;
  const boost::json::object* spec = FindObject(pod, "spec");
  FieldPath spec_path("spec");
  if (spec != nullptr && !StringAt(*spec, "priorityClassName").empty()) {
    Append(errors, ValidateDNS1123Subdomain(StringAt(*spec, "priorityClassName"),
                                            spec_path.Child("priorityClassName")));
  }
  if (spec != nullptr) ValidateTolerations(*spec, spec_path, &errors);
  if (const boost::json::value* deadline =
          spec ? spec->if_contains("activeDeadlineSeconds") : nullptr;
      deadline != nullptr && deadline->is_int64() &&
      (deadline->get_int64() < 1 || deadline->get_int64() > kMaxInt32)) {
    errors.push_back(Invalid(spec_path.Child("activeDeadlineSeconds"),
                             std::to_string(deadline->get_int64()),
                             "must be between 1 and 2147483647, inclusive"));
  }
  const boost::json::array* containers = spec ? FindArray(*spec, "containers") : nullptr;
  if (containers == nullptr || containers->empty()) {
    errors.push_back(Required(spec_path.Child("containers")));
    return errors;
  }
  // The claim entries' names, which containers' resources.claims must name (upstream
  // gatherPodResourceClaimNames); the entries are validated after the containers, as upstream.
  const boost::json::array* claims = FindArray(*spec, "resourceClaims");
  std::set<std::string> pod_claims;
  for (size_t i = 0; claims != nullptr && i < claims->size(); ++i) {
    if ((*claims)[i].is_object()) {
      std::string name = StringAt((*claims)[i].get_object(), "name");
      if (!name.empty()) pod_claims.insert(name);
    }
  }
  std::set<std::string> names;
  for (std::string_view list_name : {"initContainers", "containers"}) {
    const boost::json::array* list = FindArray(*spec, list_name);
    if (list == nullptr) continue;
    for (size_t i = 0; i < list->size(); ++i) {
      if (!(*list)[i].is_object()) continue;
      const boost::json::object& container = (*list)[i].get_object();
      FieldPath path = spec_path.Child(list_name).Index(static_cast<int64_t>(i));
      std::string name = StringAt(container, "name");
      if (name.empty()) {
        errors.push_back(Required(path.Child("name")));
      } else {
        Append(errors, ValidateDNS1123Label(name, path.Child("name")));
        if (!names.insert(name).second) {
          errors.push_back(Duplicate(path.Child("name"), RenderValue(name)));
        }
      }
      if (StringAt(container, "image").empty()) errors.push_back(Required(path.Child("image")));
      ValidateContainerClaims(container, path, pod_claims, &errors);
      ValidateContainerResources(container, path, &errors);
    }
  }
  std::set<std::string> claim_names;
  for (size_t i = 0; claims != nullptr && i < claims->size(); ++i) {
    if (!(*claims)[i].is_object()) continue;
    const boost::json::object& c = (*claims)[i].get_object();
    FieldPath path = spec_path.Child("resourceClaims").Index(static_cast<int64_t>(i));
    std::string name = StringAt(c, "name");
    if (name.empty()) {
      errors.push_back(Required(path.Child("name")));
    } else {
      Append(errors, ValidateDNS1123Label(name, path.Child("name")));
      if (!claim_names.insert(name).second) {
        errors.push_back(Duplicate(path.Child("name"), RenderValue(name)));
      }
    }
    bool by_name = !StringAt(c, "resourceClaimName").empty();
    bool by_template = !StringAt(c, "resourceClaimTemplateName").empty();
    if (!by_name && !by_template) {
      errors.push_back(Invalid(
          path, "", "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"));
    } else if (by_name && by_template) {
      errors.push_back(Invalid(
          path, "",
          "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"));
    }
  }
  return errors;
}

FieldErrorList ValidatePodActiveDeadlineUpdate(const boost::json::object& pod,
                                               const boost::json::object& old) {
  auto deadline = [](const boost::json::object& p) -> std::optional<int64_t> {
    const boost::json::object* spec = FindObject(p, "spec");
    const boost::json::value* v = spec ? spec->if_contains("activeDeadlineSeconds") : nullptr;
    if (v == nullptr || !v->is_int64()) return std::nullopt;
    return v->get_int64();
  };
  const std::optional<int64_t> now = deadline(pod);
  const std::optional<int64_t> before = deadline(old);
  const FieldPath path = FieldPath("spec").Child("activeDeadlineSeconds");
  if (!now) {
    if (before) {
      return {Invalid(path, "null", "must not update from a positive integer to nil value")};
    }
    return {};
  }
  if (*now < 0 || *now > kMaxInt32) {
    return {Invalid(path, std::to_string(*now), "must be between 0 and 2147483647, inclusive")};
  }
  if (before && *before < *now) {
    return {Invalid(path, std::to_string(*now), "must be less than or equal to previous value")};
  }
  return {};
}

FieldErrorList ValidatePodResourceClaimStatuses(const boost::json::object& pod) {
  FieldErrorList errors;
  const boost::json::object* status = FindObject(pod, "status");
  const boost::json::array* statuses =
      status ? FindArray(*status, "resourceClaimStatuses") : nullptr;
  if (statuses == nullptr) return errors;
  const boost::json::object* spec = FindObject(pod, "spec");
  const boost::json::array* claims = spec ? FindArray(*spec, "resourceClaims") : nullptr;
  std::set<std::string> pod_claims;
  for (size_t i = 0; claims != nullptr && i < claims->size(); ++i) {
    if ((*claims)[i].is_object()) pod_claims.insert(StringAt((*claims)[i].get_object(), "name"));
  }
  FieldPath list_path = FieldPath("status").Child("resourceClaimStatuses");
  std::set<std::string> seen;
  for (size_t i = 0; i < statuses->size(); ++i) {
    if (!(*statuses)[i].is_object()) continue;
    const boost::json::object& entry = (*statuses)[i].get_object();
    FieldPath name_path = list_path.Index(static_cast<int64_t>(i)).Child("name");
    std::string name = StringAt(entry, "name");
    if (!pod_claims.contains(name)) {
      errors.push_back(Invalid(name_path, RenderValue(name),
                               "must match the name of an entry in `spec.resourceClaims`"));
    }
    if (!seen.insert(name).second) errors.push_back(Duplicate(name_path, RenderValue(name)));
    // Upstream reports an invalid claim name on the entry's name, too.
    if (const boost::json::value* claim = entry.if_contains("resourceClaimName");
        claim != nullptr && claim->is_string()) {
      Append(errors, ValidateDNS1123Subdomain(std::string(claim->get_string()), name_path));
    }
  }
  return errors;
}

}  // namespace draplane::api::validation
