#include "server/handlers/api_handler.h"

#include <algorithm>
#include <initializer_list>

#include "common/log.h"
#include "common/metrics.h"
#include "server/authz/node.h"
#include "server/dashboard/dashboard.h"
#include "server/handlers/discovery.h"
#include "server/handlers/errors.h"
#include "server/handlers/impersonation.h"
#include "server/handlers/json_util.h"
#include "server/openapi/openapi.h"

namespace draplane::server::handlers {
namespace {

const metrics::CounterFamily& RequestCounter() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "apiserver_request_total",
      "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
      "resource, scope, component, and HTTP response code.",
      {"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component",
       "code"});
  return family;
}

// Upstream's buckets of the request latency histograms, which the SIG Scalability SLOs (1 s for
// a single object, 5 s and 30 s for lists) and the usual recording rules read by their `le`.
const std::vector<double>& RequestDurationBuckets() {
  static const std::vector<double> buckets = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                              1.0,   1.25,  1.5,  2,   3,   4,   5,   6,
                                              8,     10,    15,   20,  30,  45,  60};
  return buckets;
}

const metrics::HistogramFamily& RequestDuration() {
  static const metrics::HistogramFamily family = metrics::NewHistogramFamily(
      "apiserver_request_duration_seconds",
      "Response latency distribution in seconds for each verb, dry run value, group, version, "
      "resource, subresource, scope and component.",
      {"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"},
      RequestDurationBuckets());
  return family;
}

const metrics::HistogramFamily& RequestSliDuration() {
  static const metrics::HistogramFamily family = metrics::NewHistogramFamily(
      "apiserver_request_sli_duration_seconds",
      "Response latency distribution (not counting webhook duration and priority & fairness "
      "queue wait times) in seconds for each verb, group, version, resource, subresource, scope "
      "and component.",
      {"verb", "group", "version", "resource", "subresource", "scope", "component"},
      // Upstream's SLI buckets: the same from 50 ms on.
      std::vector<double>(RequestDurationBuckets().begin() + 2, RequestDurationBuckets().end()));
  return family;
}

const metrics::GaugeFamily& Inflight() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "apiserver_current_inflight_requests",
      "Number of requests being executed, by kind (readOnly or mutating).", {"request_kind"});
  return family;
}

// The verb label as upstream's request metrics write it (CanonicalVerb, CleanVerb): the HTTP
// method in capitals, except LIST for a read of a collection, WATCH for a watch and APPLY for a
// server-side apply patch; "other" for a method the server does not know, so that a client
// cannot grow the series count.
std::string_view VerbLabel(const RequestInfo& info, const http::Request& request) {
  if (info.verb == "list") return "LIST";
  if (info.verb == "watch") return "WATCH";
  if (info.verb == "deletecollection") return "DELETECOLLECTION";  // upstream canonicalVerb
  if (info.verb == "patch" &&
      std::string_view(request.header("Content-Type")).starts_with("application/apply-patch")) {
    return "APPLY";
  }
  if (request.method == "HEAD") return "GET";
  static constexpr std::string_view kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  for (std::string_view method : kMethods) {
    if (request.method == method) return method;
  }
  return "other";
}

http::Response Json(int status, std::string body, std::string content_type = "application/json") {
  http::Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", std::move(content_type)});
  r.body = std::move(body);
  return r;
}

http::Response MethodNotAllowed() {
  ApiError e;
  e.code = 405;
  e.reason = "MethodNotAllowed";
  e.message = "the server does not allow this method on the requested resource";
  return ToResponse(e);
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

// One request on its way through the pipeline.
struct ApiHandler::Call {
  const http::Request* request = nullptr;
  std::shared_ptr<http::Request> owned;  // Handle: the request outlives the I/O thread's call
  Duration start{};
  // When a seat was granted and the request began to execute (zero: it never did); the SLI
  // latency leaves out the wait before it.
  Duration executing_since{};
  // The query; the REST handlers take it over (moved into their Scope).
  std::vector<std::pair<std::string, std::string>> query;
  // Upstream's cleanDryRun over the one valid value: the dry_run label is "All" when asked for.
  bool dry_run = false;
  RequestInfo info;
  auth::UserInfo user;
  // Group, resource and subresource label a request only once the registry resolved them: an
  // unknown path (or one refused before the lookup) counts with empty labels, so the series
  // count stays bounded by what the server serves.
  const ResourceInfo* resolved = nullptr;
  std::string_view resolved_subresource;
};

ApiHandler::ApiHandler(ApiHandlerOptions options, ApiHandlerDependencies deps)
    : options_(std::move(options)), deps_(deps) {}

void ApiHandler::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  auto call = std::make_shared<Call>();
  call->owned = std::make_shared<http::Request>(std::move(request));
  call->request = call->owned.get();
  call->start = deps_.clock->MonotonicNow();
  if (!Admit(*call, *exchange)) return;
  deps_.flowcontrol->Submit(
      Classify(*call),
      [this, call, exchange](flowcontrol::SeatPtr seat) mutable {
        // The seat is held until the task (and with it this copy of the pointer) is destroyed.
        bool posted = deps_.pool->Post(
            [this, call, exchange, seat]() mutable { Execute(*call, std::move(exchange)); });
        if (!posted) {
          exchange->Respond(ToResponse(NewServiceUnavailable("the server is shutting down")));
        }
      },
      [this, call, exchange](flowcontrol::RejectReason reason) {
        Reject(*call, *exchange, reason);
      });
}

void ApiHandler::Serve(const http::Request& request, std::shared_ptr<http::Exchange> exchange) {
  Call call;
  call.request = &request;
  call.start = deps_.clock->MonotonicNow();
  if (!Admit(call, *exchange)) return;
  StatusOr<flowcontrol::SeatPtr> seat = deps_.flowcontrol->Wait(Classify(call));
  if (!seat.ok()) {
    Reject(call, *exchange,
           seat.status().code() == StatusCode::kUnavailable
               ? flowcontrol::RejectReason::kShutdown
               : flowcontrol::RejectReason::kQueueFull);
    return;
  }
  Execute(call, std::move(exchange));
}

void ApiHandler::Record(const Call& call, int code) const {
  const RequestInfo& info = call.info;
  std::string_view verb = VerbLabel(info, *call.request);
  std::string_view group = call.resolved != nullptr ? std::string_view(call.resolved->group) : "";
  std::string_view version =
      call.resolved != nullptr ? std::string_view(call.resolved->version) : "";
  std::string_view resource =
      call.resolved != nullptr ? std::string_view(call.resolved->resource) : "";
  // Upstream's CleanScope: one object (or a create), a namespace's, the cluster's, or none.
  std::string_view scope = !info.name.empty() || info.verb == "create" ? "resource"
                           : !info.namespace_.empty()                  ? "namespace"
                           : call.resolved != nullptr                  ? "cluster"
                                                                       : "";
  std::string_view dry_run = call.dry_run ? "All" : "";
  RequestCounter()
      .WithLabels({verb, dry_run, group, version, resource, call.resolved_subresource, scope,
                   "apiserver", std::to_string(code)})
      .Increment();
  const Duration now = deps_.clock->MonotonicNow();
  RequestDuration()
      .WithLabels(
          {verb, dry_run, group, version, resource, call.resolved_subresource, scope, "apiserver"})
      .Observe(std::chrono::duration<double>(now - call.start).count());
  const Duration sli_start = call.executing_since != Duration{} ? call.executing_since : call.start;
  RequestSliDuration()
      .WithLabels({verb, group, version, resource, call.resolved_subresource, scope, "apiserver"})
      .Observe(std::chrono::duration<double>(now - sli_start).count());
  log::Debug("{} {} {} -> {}", call.request->remote_address, call.request->method,
             call.request->target, code);
}

bool ApiHandler::Admit(Call& call, http::Exchange& exchange) const {
  const http::Request& request = *call.request;
  std::optional<std::vector<std::pair<std::string, std::string>>> query =
      http::ParseQuery(request.query);
  if (!query) {
    http::Response response = ToResponse(NewBadRequest("malformed query string"));
    Record(call, response.status);
    exchange.Respond(std::move(response));
    return false;
  }
  call.query = std::move(*query);
  call.info = ParseRequestInfo(request.method, request.path, call.query);
  for (const auto& [key, value] : call.query) {
    if (key == "dryRun" && value == "All") call.dry_run = true;
  }
  // The dashboard's static files carry no data and are served to anyone; what the page then
  // reads goes through authentication and RBAC like every other request.
  if (std::optional<http::Response> page = dashboard::Serve(request.method, request.path)) {
    Record(call, page->status);
    exchange.Respond(std::move(*page));
    return false;
  }
  std::optional<auth::UserInfo> user =
      deps_.authenticator->Authenticate(request.header("Authorization"), request.client_certificate,
                                        request.client_certificate_rejected);
  if (!user) {
    http::Response response = ToResponse(NewUnauthorized());
    Record(call, response.status);
    exchange.Respond(std::move(response));
    return false;
  }
  call.user = std::move(*user);
  // Impersonation (kubectl --as): from here on the request acts as the impersonated user,
  // including for flow control and authorization, as upstream's filter chain orders them.
  auto impersonated = Impersonate(call.user, request, *deps_.authorizer);
  if (auto* e = std::get_if<ApiError>(&impersonated)) {
    http::Response response = ToResponse(*e);
    Record(call, response.status);
    exchange.Respond(std::move(response));
    return false;
  }
  if (auto& acting = std::get<std::optional<auth::UserInfo>>(impersonated)) {
    call.user = std::move(*acting);
  }
  // A method no API verb answers is 405, not a request for an empty verb to authorize (which
  // would be 403).
  static constexpr std::string_view kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
  if (std::find(std::begin(kMethods), std::end(kMethods), request.method) == std::end(kMethods)) {
    http::Response response = MethodNotAllowed();
    Record(call, response.status);
    exchange.Respond(std::move(response));
    return false;
  }
  return true;
}

flowcontrol::Classification ApiHandler::Classify(const Call& call) const {
  const RequestInfo& info = call.info;
  return flowcontrol::Classify(
      flowcontrol::RequestDigest{.user = &call.user,
                                 .resource_request = info.is_resource_request,
                                 .verb = info.verb,
                                 .api_group = info.api_group,
                                 .resource = info.resource,
                                 .subresource = info.subresource,
                                 .namespace_ = info.namespace_,
                                 .path = info.path});
}

void ApiHandler::Reject(Call& call, http::Exchange& exchange,
                        flowcontrol::RejectReason reason) const {
  ApiError e = reason == flowcontrol::RejectReason::kShutdown
                   ? NewServiceUnavailable("the server is shutting down")
                   : NewTooManyRequests("Too many requests, please try again later.");
  if (reason != flowcontrol::RejectReason::kShutdown) e.retry_after_seconds = 1;
  http::Response response = ToResponse(e);
  Record(call, response.status);
  exchange.Respond(std::move(response));
}

void ApiHandler::Execute(Call& call, std::shared_ptr<http::Exchange> exchange) {
  call.executing_since = deps_.clock->MonotonicNow();
  const http::Request& request = *call.request;
  const RequestInfo& info = call.info;
  const bool mutating =
      request.method != "GET" && request.method != "HEAD" && request.method != "OPTIONS";
  struct Executing {
    metrics::Gauge gauge;
    ~Executing() { gauge.Decrement(); }
  } executing{Inflight().WithLabels({mutating ? "mutating" : "readOnly"})};
  executing.gauge.Increment();
  auto finish = [&](http::Response response) {
    Record(call, response.status);
    exchange->Respond(std::move(response));
  };

  authz::Attributes attributes = AttributesOf(call.user, info, call.query);
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
    return;
  }

  if (!info.is_resource_request) {
    finish(NonResource(request, info));
    return;
  }
  const ResourceInfo* resource =
      deps_.registry->Find(info.api_group, info.api_version, info.resource);
  // At most resource, name and subresource: upstream has no route for more segments
  // (".../claims/c1/status/extra" is 404, not the status).
  if (resource == nullptr ||
      (!resource->namespaced && !info.namespace_.empty() &&
       !(resource->resource == "namespaces")) ||
      (info.verb != "proxy" && info.parts.size() > 3)) {
    finish(ToResponse(NewNotFoundPath()));
    return;
  }
  call.resolved = resource;
  if (const SubresourceInfo* sub = resource->FindSubresource(info.subresource)) {
    call.resolved_subresource = sub->name;
  }
  Scope scope;
  scope.request = &request;
  scope.info = &info;
  scope.resource = resource;
  scope.user = &call.user;
  scope.query = std::move(call.query);
  if (resource->computed) {
    finish(deps_.pod_explanations != nullptr
               ? deps_.pod_explanations->Handle(scope, *deps_.authorizer)
               : ToResponse(NewServiceUnavailable("pod explanations are not served here")));
    return;
  }
  // Virtual resources are the reviews, answered here, and core bindings, which bind a Pod (Rest).
  if (resource->virtual_resource &&
      !(resource->group.empty() && resource->resource == "bindings")) {
    finish(Review(scope, call.user));
    return;
  }
  if (info.verb == "watch") {
    Record(call, 200);
    deps_.rest->Watch(scope, std::move(exchange));
    return;
  }
  finish(deps_.rest->Handle(scope));
}

http::Response ApiHandler::NonResource(const http::Request& request, const RequestInfo& info) {
  const std::string& path = request.path;
  if (request.method != "GET" && request.method != "HEAD") return MethodNotAllowed();
  for (std::string_view endpoint : {"/healthz", "/livez", "/readyz"}) {
    if (path == endpoint || (path.rfind(endpoint, 0) == 0 && path[endpoint.size()] == '/')) {
      return deps_.health->Answer(path, request.query);
    }
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
  if (path == "/openapi/v2" || path == "/openapi/v2/") {
    openapi::V2Document doc = openapi::V2(request.header("Accept"), kServedKubernetesGitVersion);
    http::Response r;
    r.status = 200;
    r.headers.push_back({"Content-Type", std::move(doc.content_type)});
    r.body = std::move(doc.body);
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
  // The self reviews' specs have no subject: members they do not have are dropped, as decoding
  // drops unknown fields, so the answer never echoes a user or groups the review did not use.
  auto keep_only = [&spec](std::initializer_list<std::string_view> members) {
    for (auto it = spec.begin(); it != spec.end();) {
      bool known = std::find(members.begin(), members.end(), it->key()) != members.end();
      it = known ? std::next(it) : spec.erase(it);
    }
  };
  if (r.resource == "selfsubjectaccessreviews") {
    keep_only({"resourceAttributes", "nonResourceAttributes"});
  } else if (r.resource == "selfsubjectrulesreviews") {
    keep_only({"namespace"});
  }

  if (r.resource == "selfsubjectreviews") {
    boost::json::object info;
    info["username"] = user.name;
    if (!user.uid.empty()) info["uid"] = user.uid;
    info["groups"] = StringArray(user.groups);
    boost::json::object status;
    status["userInfo"] = std::move(info);
    obj["status"] = std::move(status);
    return Json(201, boost::json::serialize(obj));
  }
  if (r.resource == "tokenreviews") {
    std::string token(GetString(spec, "token"));
    if (token.empty()) {
      return ToResponse(NewBadRequest("token is required for TokenReview in authentication"));
    }
    std::optional<auth::UserInfo> who =
        token.empty() ? std::nullopt
                      : deps_.authenticator->Authenticate("Bearer " + token, std::nullopt);
    boost::json::object status;
    status["authenticated"] = who.has_value();
    if (who) {
      boost::json::object u;
      u["username"] = who->name;
      u["uid"] = who->uid;
      u["groups"] = StringArray(who->groups);
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
        nr["verbs"] = StringArray(rule.verbs);
        nr["nonResourceURLs"] = StringArray(rule.non_resource_urls);
        non_resource_rules.push_back(std::move(nr));
      }
      if (!rule.resources.empty()) {
        boost::json::object rr;
        rr["verbs"] = StringArray(rule.verbs);
        rr["apiGroups"] = StringArray(rule.api_groups);
        rr["resources"] = StringArray(rule.resources);
        if (!rule.resource_names.empty()) rr["resourceNames"] = StringArray(rule.resource_names);
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
