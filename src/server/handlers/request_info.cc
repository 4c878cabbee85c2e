#include "server/handlers/request_info.h"

#include <algorithm>
#include <cctype>

#include "api/labels/field_selector.h"

namespace draplane::server::handlers {
namespace {

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin < path.size() && path[begin] == '/') ++begin;
  size_t end = path.size();
  while (end > begin && path[end - 1] == '/') --end;
  path = path.substr(begin, end - begin);
  if (path.empty()) return parts;
  while (true) {
    size_t slash = path.find('/');
    parts.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path = path.substr(slash + 1);
  }
  return parts;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// path.IsValidPathSegmentName: not "." or "..", no '/' or '%'.
bool IsValidPathSegmentName(std::string_view name) {
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('%') == std::string_view::npos;
}

}  // namespace

bool QueryFlag(std::string_view value) {
  return value != "0" && Lower(std::string(value)) != "false";
}

RequestInfo ParseRequestInfo(const std::string& method, const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& query) {
  RequestInfo info;
  info.path = path;
  info.verb = Lower(method);

  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() < 3) return info;
  if (parts[0] != "api" && parts[0] != "apis") return info;
  info.api_prefix = parts[0];
  parts.erase(parts.begin());
  if (info.api_prefix == "apis") {
    if (parts.size() < 3) return info;
    info.api_group = parts[0];
    parts.erase(parts.begin());
  }
  info.is_resource_request = true;
  info.api_version = parts[0];
  parts.erase(parts.begin());

  if (parts[0] == "watch" || parts[0] == "proxy") {
    if (parts.size() < 2) return info;
    info.verb = parts[0];
    parts.erase(parts.begin());
  } else if (method == "POST") {
    info.verb = "create";
  } else if (method == "GET" || method == "HEAD") {
    info.verb = "get";
  } else if (method == "PUT") {
    info.verb = "update";
  } else if (method == "PATCH") {
    info.verb = "patch";
  } else if (method == "DELETE") {
    info.verb = "delete";
  } else {
    info.verb = "";
  }

  if (parts[0] == "namespaces") {
    if (parts.size() > 1) {
      info.namespace_ = parts[1];
      if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize") {
        parts.erase(parts.begin(), parts.begin() + 2);
      }
    }
  }
  info.parts = parts;

  if (parts.size() >= 3 && info.verb != "proxy") info.subresource = parts[2];
  if (parts.size() >= 2) info.name = parts[1];
  if (!parts.empty()) info.resource = parts[0];

  if (info.name.empty() && info.verb == "get") {
    info.verb = "list";
    for (const auto& [key, value] : query) {
      if (key == "watch") {
        info.verb = QueryFlag(value) ? "watch" : "list";
        break;
      }
    }
    for (const auto& [key, value] : query) {
      if (key != "fieldSelector") continue;
      StatusOr<api::labels::FieldSelector> selector = api::labels::FieldSelector::Parse(value);
      if (!selector.ok()) break;
      if (std::optional<std::string> name = selector->RequiresExactMatch("metadata.name")) {
        if (IsValidPathSegmentName(*name)) info.name = *name;
      }
      break;
    }
  }
  if (info.name.empty() && info.verb == "delete") info.verb = "deletecollection";
  return info;
}

authz::Attributes AttributesOf(const auth::UserInfo& user, const RequestInfo& info,
                               const std::vector<std::pair<std::string, std::string>>& query) {
  authz::Attributes a;
  a.user = user;
  a.verb = info.verb;
  a.resource_request = info.is_resource_request;
  a.path = info.path;
  a.api_group = info.api_group;
  a.api_version = info.api_version;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.namespace_ = info.namespace_;
  a.name = info.name;
  if (info.verb == "list" || info.verb == "watch" || info.verb == "deletecollection") {
    for (const auto& [k, v] : query) {
      if (k != "fieldSelector") continue;
      StatusOr<api::labels::FieldSelector> selector = api::labels::FieldSelector::Parse(v);
      if (!selector.ok()) break;
      for (const api::labels::FieldRequirement& r : selector->requirements()) {
        if (r.equals) a.field_requirements.emplace_back(r.field, r.value);
      }
      break;
    }
  }
  return a;
}

}  // namespace draplane::server::handlers
