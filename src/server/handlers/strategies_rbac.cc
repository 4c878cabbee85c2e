// The strategy of rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding and
// ClusterRoleBinding (strategy.h).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "api/validation/meta_validation.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

using api::FieldErrorList;
using api::FieldPath;
namespace validation = api::validation;

// RBAC names: path segment names (rbac validation.ValidateRBACName).
std::vector<std::string> PathSegmentName(std::string_view name, bool prefix) {
  std::vector<std::string> out;
  if (!prefix && (name == "." || name == "..")) {
    out.push_back("may not be '" + std::string(name) + "'");
  }
  for (std::string_view bad : {"/", "%"}) {
    if (name.find(bad) != std::string_view::npos) {
      out.push_back("may not contain '" + std::string(bad) + "'");
    }
  }
  return out;
}

bool JsonEqual(const JsonObject& a, const JsonObject& b, std::string_view key) {
  auto ia = a.find(key);
  auto ib = b.find(key);
  if (ia == a.end() || ib == b.end()) return (ia == a.end()) == (ib == b.end());
  return ia->value() == ib->value();
}

// rbac.authorization.k8s.io: the four kinds share one validation; the kind is read from the
// object (validation.ValidateRole & co., for the parts the authorizer relies on). Roles and
// ClusterRoles print as upstream's generic table (Name, Created At); bindings add their role
// and subjects (below).
class RbacStrategyImpl : public Strategy {
 public:
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &r.decode_errors);
    if (!r.decode_errors.empty()) return r;
    std::string kind(GetString(obj, "kind"));
    bool namespaced = kind == "Role" || kind == "RoleBinding";
    r.errors =
        validation::ValidateObjectMeta(meta, namespaced, PathSegmentName, FieldPath("metadata"));
    if (kind == "Role" || kind == "ClusterRole") {
      ValidateRules(obj, &r);
    } else {
      ValidateBinding(obj, namespaced, &r);
    }
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = Check(obj);
    FieldErrorList ignored;
    api::metav1::ObjectMeta meta = DecodeMeta(obj, &ignored);
    api::metav1::ObjectMeta old_meta = DecodeMeta(old, &ignored);
    Append(r.errors, validation::ValidateObjectMetaUpdate(meta, old_meta, FieldPath("metadata")));
    std::string kind(GetString(obj, "kind"));
    if ((kind == "RoleBinding" || kind == "ClusterRoleBinding") &&
        !JsonEqual(obj, old, "roleRef")) {
      r.errors.push_back(api::Invalid(FieldPath("roleRef"), "", "cannot change roleRef"));
    }
    return r;
  }

 private:
  static void ValidateRules(const JsonObject& obj, CheckResult* r) {
    auto it = obj.find("rules");
    if (it == obj.end() || it->value().is_null()) return;
    if (!it->value().is_array()) {
      r->decode_errors.push_back(api::TypeInvalid(FieldPath("rules"), "", "must be an array"));
      return;
    }
    const boost::json::array& rules = it->value().get_array();
    for (size_t i = 0; i < rules.size(); ++i) {
      FieldPath path = FieldPath("rules").Index(static_cast<int64_t>(i));
      if (!rules[i].is_object()) {
        r->decode_errors.push_back(api::TypeInvalid(path, "", "must be an object"));
        continue;
      }
      const JsonObject& rule = rules[i].get_object();
      const boost::json::array* verbs = FindArray(rule, "verbs");
      if (verbs == nullptr || verbs->empty()) {
        r->errors.push_back(
            api::Required(path.Child("verbs"), "verbs must contain at least one value"));
      }
      const boost::json::array* urls = FindArray(rule, "nonResourceURLs");
      bool has_urls = urls != nullptr && !urls->empty();
      const boost::json::array* groups = FindArray(rule, "apiGroups");
      const boost::json::array* resources = FindArray(rule, "resources");
      if (!has_urls && (groups == nullptr || groups->empty())) {
        r->errors.push_back(api::Required(path.Child("apiGroups"),
                                          "resource rules must supply at least one api group"));
      }
      if (!has_urls && (resources == nullptr || resources->empty())) {
        r->errors.push_back(api::Required(path.Child("resources"),
                                          "resource rules must supply at least one resource"));
      }
    }
  }
  static void ValidateBinding(const JsonObject& obj, bool namespaced, CheckResult* r) {
    const JsonObject* ref = FindObject(obj, "roleRef");
    if (ref == nullptr) {
      r->errors.push_back(api::Required(FieldPath("roleRef"), ""));
      return;
    }
    std::string_view kind = GetString(*ref, "kind");
    if (GetString(*ref, "apiGroup") != "rbac.authorization.k8s.io") {
      r->errors.push_back(api::NotSupported(FieldPath("roleRef").Child("apiGroup"),
                                            api::RenderValue(GetString(*ref, "apiGroup")),
                                            {"rbac.authorization.k8s.io"}));
    }
    std::vector<std::string> kinds = {"ClusterRole"};
    if (namespaced) kinds = {"Role", "ClusterRole"};
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      r->errors.push_back(
          api::NotSupported(FieldPath("roleRef").Child("kind"), api::RenderValue(kind), kinds));
    }
    if (GetString(*ref, "name").empty()) {
      r->errors.push_back(api::Required(FieldPath("roleRef").Child("name"), ""));
    }
    if (const boost::json::array* subjects = FindArray(obj, "subjects")) {
      for (size_t i = 0; i < subjects->size(); ++i) {
        FieldPath path = FieldPath("subjects").Index(static_cast<int64_t>(i));
        if (!(*subjects)[i].is_object()) continue;
        const JsonObject& s = (*subjects)[i].get_object();
        std::string_view skind = GetString(s, "kind");
        if (skind != "User" && skind != "Group" && skind != "ServiceAccount") {
          r->errors.push_back(api::NotSupported(path.Child("kind"), api::RenderValue(skind),
                                                {"ServiceAccount", "User", "Group"}));
        }
        if (GetString(s, "name").empty())
          r->errors.push_back(api::Required(path.Child("name"), ""));
      }
    }
  }
};

}  // namespace

// RoleBindings and ClusterRoleBindings print their role and subjects (upstream
// printRoleBinding).
class RbacBindingStrategyImpl final : public RbacStrategyImpl {
 public:
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Role", "string", "",
             "RoleRef can reference a Role in the current namespace or a "
             "ClusterRole in the global namespace.",
             0},
            AgeColumn(),
            {"Users", "string", "", "Users in the roleBinding", 1},
            {"Groups", "string", "", "Groups in the roleBinding", 1},
            {"ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", 1}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    std::string users, groups, accounts;
    if (const boost::json::array* subjects = FindArray(obj, "subjects")) {
      for (const boost::json::value& s : *subjects) {
        if (!s.is_object()) continue;
        std::string_view kind = GetString(s.get_object(), "kind");
        std::string name(GetString(s.get_object(), "name"));
        std::string* target = kind == "User" ? &users : kind == "Group" ? &groups : &accounts;
        if (kind == "ServiceAccount") {
          name = std::string(GetString(s.get_object(), "namespace")) + "/" + name;
        }
        *target += (target->empty() ? "" : ", ") + name;
      }
    }
    return {MetaString(obj, "name"),
            std::string(GetPathString(obj, {"roleRef", "kind"})) + "/" +
                std::string(GetPathString(obj, {"roleRef", "name"})),
            AgeCell(obj, now),
            users,
            groups,
            accounts};
  }
};

const Strategy& RbacStrategy() { return StrategyInstance<RbacStrategyImpl>(); }
const Strategy& RbacBindingStrategy() { return StrategyInstance<RbacBindingStrategyImpl>(); }

}  // namespace draplane::server::handlers
