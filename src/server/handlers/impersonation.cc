#include "server/handlers/impersonation.h"

#include <string>
#include <vector>

namespace draplane::server::handlers {
namespace {

constexpr std::string_view kUserHeader = "impersonate-user";
constexpr std::string_view kGroupHeader = "impersonate-group";
constexpr std::string_view kUidHeader = "impersonate-uid";
constexpr std::string_view kExtraPrefix = "impersonate-extra-";
constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::variant<std::optional<auth::UserInfo>, ApiError> Impersonate(const auth::UserInfo& requester,
                                                                  const http::Request& request,
                                                                  const authz::Authorizer& authz) {
  std::optional<std::string> user;
  std::optional<std::string> uid;
  std::vector<std::string> groups;
  std::vector<std::pair<std::string, std::string>> extras;  // key, value
  for (const http::Header& h : request.headers) {
    const std::string name = Lower(h.name);
    if (name == kUserHeader) {
      user = h.value;
    } else if (name == kGroupHeader) {
      groups.push_back(h.value);
    } else if (name == kUidHeader) {
      uid = h.value;
    } else if (name.starts_with(kExtraPrefix)) {
      // The key is percent-encoded in the header name; lowercase, as upstream reads it.
      extras.emplace_back(http::PercentDecode(name.substr(kExtraPrefix.size()), false).value_or(""),
                          h.value);
    }
  }
  if (!user) {
    if (!groups.empty() || uid || !extras.empty()) {
      return NewBadRequest(
          "requested impersonation of groups, uid or extra without a user "
          "(Impersonate-User)");
    }
    return std::optional<auth::UserInfo>();
  }

  // Each value the requester asks to act as, authorized as upstream authorizes it.
  auto allowed = [&](std::string resource, std::string group, std::string ns, std::string name,
                     std::string subresource) -> std::optional<ApiError> {
    authz::Attributes a;
    a.user = requester;
    a.verb = "impersonate";
    a.resource_request = true;
    a.api_group = std::move(group);
    a.resource = std::move(resource);
    a.subresource = std::move(subresource);
    a.namespace_ = std::move(ns);
    a.name = std::move(name);
    if (authz.Authorize(a).decision == authz::Decision::kAllow) return std::nullopt;
    std::string what = a.resource;
    if (!a.subresource.empty()) what += "/" + a.subresource;
    return NewForbidden(GroupResource{a.api_group, what}, a.name, authz::ForbiddenMessage(a));
  };

  auth::UserInfo acting;
  acting.name = *user;
  const bool groups_given = !groups.empty();
  if (user->starts_with(kServiceAccountPrefix)) {
    std::string_view rest = std::string_view(*user).substr(kServiceAccountPrefix.size());
    size_t colon = rest.find(':');
    std::string ns(rest.substr(0, colon));
    std::string sa(colon == std::string_view::npos ? "" : rest.substr(colon + 1));
    if (auto e = allowed("serviceaccounts", "", ns, sa, "")) return *e;
    if (!groups_given) groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
  } else if (auto e = allowed("users", "", "", *user, "")) {
    return *e;
  }
  if (groups_given) {
    for (const std::string& g : groups) {
      if (auto e = allowed("groups", "", "", g, "")) return *e;
    }
  }
  if (uid) {
    if (auto e = allowed("uids", "authentication.k8s.io", "", *uid, "")) return *e;
    acting.uid = *uid;
  }
  for (const auto& [key, value] : extras) {
    if (auto e = allowed("userextras", "authentication.k8s.io", "", value, key)) return *e;
  }
  bool named = false;
  for (const std::string& g : groups) {
    named = named || g == auth::kAuthenticatedGroup || g == auth::kUnauthenticatedGroup;
  }
  if (!named) {
    groups.push_back(std::string(acting.name == auth::kAnonymousUser ? auth::kUnauthenticatedGroup
                                                                     : auth::kAuthenticatedGroup));
  }
  acting.groups = std::move(groups);
  return std::optional<auth::UserInfo>(std::move(acting));
}

}  // namespace draplane::server::handlers
