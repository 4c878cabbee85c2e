#include "server/handlers/api_handler.h"

#include "common/log.h"
#include "common/metrics.h"
#include "server/authz/node.h"
#include "server/handlers/discovery.h"
#include "server/handlers/errors.h"
#include "server/openapi/openapi.h"

namespace draplane::server::handlers {
namespace {

const metrics::CounterFamily& RequestCounter() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "apiserver_request_total",
      "Counter of apiserver requests broken out for each verb, group, resource and HTTP "
      "response code.",
      {"verb", "group", "resource", "subresource", "code"});
  return family;
}

const metrics::HistogramFamily& RequestDuration() {
  static const metrics::HistogramFamily family = metrics::NewHistogramFamily(
      "apiserver_request_duration_seconds",
      "Response latency distribution in seconds for each verb, group and resource.",
      {"verb", "group", "resource"}, metrics::LatencyBuckets());
  return family;
}

http::Response Text(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.body = std::move(body);
  return r;
}

http::Response Json(int status, std::string body, std::string content_type = "application/json") {
  http::Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", std::move(content_type)});
  r.body = std::move(body);
  return r;
}

boost::json::array Strings(const std::vector<std::string>& values) {
  boost::json::array out;
  for (const std::string& v : values) out.emplace_back(v);
  return out;
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

// Decision → SubjectAccessReviewStatus.
boost::json::object ReviewStatus(const authz::Result& result) {
  boost::json::object status;
  status["allowed"] = result.decision == authz::Decision::kAllow;
  if (result.decision == authz::Decision::kDeny) status["denied"] = true;
  if (!result.reason.empty()) status["reason"] = result.reason;
  return status;
}

}  // namespace

ApiHandler::ApiHandler(ApiHandlerOptions options, ApiHandlerDependencies deps)
    : options_(std::move(options)), deps_(deps) {}

void ApiHandler::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  auto shared = std::make_shared<http::Request>(std::move(request));
  bool posted =
      deps_.pool->Post([this, shared, exchange]() mutable { Serve(*shared, std::move(exchange)); });
  if (!posted) exchange->Respond(ToResponse(NewServiceUnavailable("the server is shutting down")));
}

void ApiHandler::Serve(const http::Request& request, std::shared_ptr<http::Exchange> exchange) {
  Duration start = deps_.clock->MonotonicNow();
  std::optional<std::vector<std::pair<std::string, std::string>>> query =
      http::ParseQuery(request.query);
  RequestInfo info;
  int code = 0;
  auto finish = [&](http::Response response) {
    code = response.status;
    exchange->Respond(std::move(response));
  };
  auto record = [&] {
    std::string verb = info.verb.empty() ? request.method : info.verb;
    RequestCounter()
        .WithLabels({verb, info.api_group, info.resource, info.subresource, std::to_string(code)})
        .Increment();
    RequestDuration()
        .WithLabels({verb, info.api_group, info.resource})
        .Observe(std::chrono::duration<double>(deps_.clock->MonotonicNow() - start).count());
    log::Debug("{} {} {} -> {}", request.remote_address, request.method, request.target, code);
  };
  if (!query) {
    finish(ToResponse(NewBadRequest("malformed query string")));
    record();
    return;
  }
  info = ParseRequestInfo(request.method, request.path, *query);

  std::optional<auth::UserInfo> user = deps_.authenticator->Authenticate(
      request.header("Authorization"), request.client_certificate);
  if (!user) {
    finish(ToResponse(NewUnauthorized()));
    record();
    return;
  }

  authz::Attributes attributes = AttributesOf(*user, info, *query);
  authz::Result decision = deps_.authorizer->Authorize(attributes);
  if (decision.decision != authz::Decision::kAllow) {
    std::string reason = authz::ForbiddenMessage(attributes);
    if (!decision.reason.empty()) reason += ": " + decision.reason;
    if (info.is_resource_request) {
      finish(ToResponse(
          NewForbidden(GroupResource{info.api_group, info.resource}, info.name, reason)));
    } else {
      finish(ToResponse(NewForbiddenPath(reason)));
    }
    record();
    return;
  }

  if (!info.is_resource_request) {
    finish(NonResource(request, info));
    record();
    return;
  }
  const ResourceInfo* resource =
      deps_.registry->Find(info.api_group, info.api_version, info.resource);
  if (resource == nullptr || (!resource->namespaced && !info.namespace_.empty() &&
                              !(resource->resource == "namespaces"))) {
    finish(ToResponse(NewNotFoundPath()));
    record();
    return;
  }
  Scope scope;
  scope.request = &request;
  scope.info = &info;
  scope.resource = resource;
  scope.user = &*user;
  scope.query = std::move(*query);
  if (resource->virtual_resource) {
    finish(Review(scope, *user));
    record();
    return;
  }
  if (info.verb == "watch") {
    code = 200;
    record();
    deps_.rest->Watch(scope, std::move(exchange));
    return;
  }
  finish(deps_.rest->Handle(scope));
  record();
}

http::Response ApiHandler::NonResource(const http::Request& request, const RequestInfo& info) {
  const std::string& path = request.path;
  if (request.method != "GET" && request.method != "HEAD") {
    ApiError e;
    e.code = 405;
    e.reason = "MethodNotAllowed";
    e.message = "the server does not allow this method on the requested resource";
    return ToResponse(e);
  }
  if (path == "/healthz" || path == "/livez" || path.rfind("/healthz/", 0) == 0 ||
      path.rfind("/livez/", 0) == 0) {
    return Text(200, "ok");
  }
  if (path == "/readyz" || path.rfind("/readyz/", 0) == 0) {
    if (!ready_.load()) return Text(500, "[-]bootstrap failed: not finished\nreadyz check failed");
    if (request.query.find("verbose") != std::string::npos) {
      return Text(200,
                  "[+]ping ok\n[+]etcd ok\n[+]poststarthook/rbac/bootstrap-roles ok\n"
                  "readyz check passed\n");
    }
    return Text(200, "ok");
  }
  if (path == "/version" || path == "/version/") {
    return Json(200, VersionJson(options_.draplane_version));
  }
  if (path == "/metrics") {
    http::Response r;
    r.status = 200;
    r.headers.push_back({"Content-Type", std::string(metrics::kTextContentType)});
    r.body = metrics::RenderText();
    return r;
  }
  if (path == "/openapi/v3" || path == "/openapi/v3/") {
    return Json(200, openapi::V3Index(*deps_.registry));
  }
  if (path.rfind("/openapi/v3/", 0) == 0) {
    if (auto doc = openapi::V3Document(*deps_.registry, path.substr(12))) {
      http::Response r = Json(200, *doc);
      r.headers.push_back({"Cache-Control", "public, immutable"});
      return r;
    }
  }
  std::optional<std::string> aggregated = AggregatedVersion(request.header("Accept"));
  if (path == "/api" || path == "/api/") {
    DiscoveryDocument doc =
        CoreGroupDiscovery(*deps_.registry, aggregated, options_.server_address);
    return Json(200, std::move(doc.body), std::move(doc.content_type));
  }
  if (path == "/apis" || path == "/apis/") {
    DiscoveryDocument doc = GroupsDiscovery(*deps_.registry, aggregated);
    return Json(200, std::move(doc.body), std::move(doc.content_type));
  }
  if (path == "/api/v1" || path == "/api/v1/") {
    if (auto body = ResourceListDiscovery(*deps_.registry, "", "v1")) return Json(200, *body);
  }
  if (path.rfind("/apis/", 0) == 0) {
    std::string rest = path.substr(6);
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    size_t slash = rest.find('/');
    if (slash == std::string::npos) {
      if (auto body = GroupDiscovery(*deps_.registry, rest)) return Json(200, *body);
    } else if (rest.find('/', slash + 1) == std::string::npos) {
      if (auto body = ResourceListDiscovery(*deps_.registry, rest.substr(0, slash),
                                            rest.substr(slash + 1))) {
        return Json(200, *body);
      }
    }
  }
  (void)info;
  return ToResponse(NewNotFoundPath());
}

http::Response ApiHandler::Review(const Scope& scope, const auth::UserInfo& user) {
  const ResourceInfo& r = *scope.resource;
  if (scope.info->verb != "create")
    return ToResponse(NewMethodNotSupported(r.Gr(), scope.info->verb));
  auto decoded = Rest::DecodeBody(*scope.request);
  if (auto* e = std::get_if<ApiError>(&decoded)) return ToResponse(*e);
  JsonObject obj = std::move(std::get<JsonObject>(decoded));
  obj["apiVersion"] = r.ApiVersion();
  obj["kind"] = r.kind;
  EnsureObject(obj, "metadata")["creationTimestamp"] = nullptr;
  JsonObject& spec = EnsureObject(obj, "spec");

  if (r.resource == "selfsubjectreviews") {
    boost::json::object info;
    info["username"] = user.name;
    if (!user.uid.empty()) info["uid"] = user.uid;
    info["groups"] = Strings(user.groups);
    boost::json::object status;
    status["userInfo"] = std::move(info);
    obj["status"] = std::move(status);
    return Json(201, boost::json::serialize(obj));
  }
  if (r.resource == "tokenreviews") {
    std::string token(GetString(spec, "token"));
    std::optional<auth::UserInfo> who =
        token.empty() ? std::nullopt
                      : deps_.authenticator->Authenticate("Bearer " + token, std::nullopt);
    boost::json::object status;
    status["authenticated"] = who.has_value();
    if (who) {
      boost::json::object u;
      u["username"] = who->name;
      u["uid"] = who->uid;
      u["groups"] = Strings(who->groups);
      status["user"] = std::move(u);
    }
    obj["status"] = std::move(status);
    return Json(201, boost::json::serialize(obj));
  }

  // Access reviews: whose access, to what.
  auth::UserInfo subject = user;
  if (r.resource == "subjectaccessreviews" || r.resource == "localsubjectaccessreviews") {
    subject = auth::UserInfo{
        std::string(GetString(spec, "user")), std::string(GetString(spec, "uid")), {}};
    if (const boost::json::array* groups = FindArray(spec, "groups")) {
      for (const boost::json::value& g : *groups) {
        if (g.is_string()) subject.groups.emplace_back(g.get_string());
      }
    }
    if (subject.name.empty() && subject.groups.empty()) {
      return ToResponse(NewInvalid(r.GroupKind(), "",
                                   {api::Invalid(api::FieldPath("spec").Child("user"), "\"\"",
                                                 "at least one of user or group must be "
                                                 "specified")}));
    }
  }
  if (r.resource == "selfsubjectrulesreviews") {
    std::string ns(GetString(spec, "namespace"));
    boost::json::array resource_rules;
    boost::json::array non_resource_rules;
    for (const authz::PolicyRule& rule : deps_.rbac->RulesFor(subject, ns)) {
      if (!rule.non_resource_urls.empty()) {
        boost::json::object nr;
        nr["verbs"] = Strings(rule.verbs);
        nr["nonResourceURLs"] = Strings(rule.non_resource_urls);
        non_resource_rules.push_back(std::move(nr));
      }
      if (!rule.resources.empty()) {
        boost::json::object rr;
        rr["verbs"] = Strings(rule.verbs);
        rr["apiGroups"] = Strings(rule.api_groups);
        rr["resources"] = Strings(rule.resources);
        if (!rule.resource_names.empty()) rr["resourceNames"] = Strings(rule.resource_names);
        resource_rules.push_back(std::move(rr));
      }
    }
    boost::json::object status;
    status["resourceRules"] = std::move(resource_rules);
    status["nonResourceRules"] = std::move(non_resource_rules);
    // The node authorizer's rules are not enumerable.
    status["incomplete"] = !authz::NodeNameOf(subject).empty();
    obj["status"] = std::move(status);
    return Json(201, boost::json::serialize(obj));
  }
  authz::Attributes attributes;
  attributes.user = subject;
  if (const JsonObject* ra = FindObject(spec, "resourceAttributes")) {
    attributes.resource_request = true;
    attributes.verb = std::string(GetString(*ra, "verb"));
    attributes.api_group = std::string(GetString(*ra, "group"));
    attributes.api_version = std::string(GetString(*ra, "version"));
    attributes.resource = std::string(GetString(*ra, "resource"));
    attributes.subresource = std::string(GetString(*ra, "subresource"));
    attributes.namespace_ = std::string(GetString(*ra, "namespace"));
    attributes.name = std::string(GetString(*ra, "name"));
    if (r.resource == "localsubjectaccessreviews") {
      if (attributes.namespace_.empty()) attributes.namespace_ = scope.info->namespace_;
      if (attributes.namespace_ != scope.info->namespace_) {
        return ToResponse(
            NewBadRequest("spec.resourceAttributes.namespace must match metadata.namespace"));
      }
    }
  } else if (const JsonObject* nra = FindObject(spec, "nonResourceAttributes")) {
    attributes.resource_request = false;
    attributes.verb = std::string(GetString(*nra, "verb"));
    attributes.path = std::string(GetString(*nra, "path"));
  } else {
    return ToResponse(NewInvalid(
        r.GroupKind(), "",
        {api::Invalid(api::FieldPath("spec").Child("resourceAttributes"), "",
                      "exactly one of nonResourceAttributes or resourceAttributes must be "
                      "specified")}));
  }
  obj["status"] = ReviewStatus(deps_.authorizer->Authorize(attributes));
  return Json(201, boost::json::serialize(obj));
}

}  // namespace draplane::server::handlers
