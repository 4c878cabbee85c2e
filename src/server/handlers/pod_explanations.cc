#include "server/handlers/pod_explanations.h"

#include <boost/json.hpp>
#include <utility>

#include "server/handlers/errors.h"
#include "server/handlers/registry.h"
#include "server/handlers/request_info.h"

namespace draplane::server::handlers {

void PodExplanations::SetExplainer(PodExplainer explainer) {
  MutexLock lock(mu_);
  explainer_ = std::move(explainer);
}

http::Response PodExplanations::Handle(const Scope& scope, const authz::Authorizer& authorizer) {
  const ResourceInfo& r = *scope.resource;
  const RequestInfo& info = *scope.info;
  if (info.verb != "get") return ToResponse(NewMethodNotSupported(r.Gr(), info.verb));

  // The Pod itself must be readable by the viewer: RBAC on podexplanations is not enough.
  authz::Attributes pod_get;
  pod_get.user = *scope.user;
  pod_get.verb = "get";
  pod_get.resource_request = true;
  pod_get.api_version = "v1";
  pod_get.resource = "pods";
  pod_get.namespace_ = info.namespace_;
  pod_get.name = info.name;
  authz::Result allowed = authorizer.Authorize(pod_get);
  if (allowed.decision != authz::Decision::kAllow) {
    return ToResponse(
        NewForbidden(r.Gr(), info.name, authz::ForbiddenMessage(pod_get) + " (the Pod itself)"));
  }

  PodExplainer explainer;
  {
    MutexLock lock(mu_);
    if (!explainer_) {
      return ToResponse(NewServiceUnavailable("pod explanations are not served by this server"));
    }
    if (in_flight_ >= max_in_flight_) {
      ApiError e = NewTooManyRequests("too many pod explanations in flight (limit " +
                                      std::to_string(max_in_flight_) + "), please try again");
      e.retry_after_seconds = 1;
      return ToResponse(e);
    }
    ++in_flight_;
    explainer = explainer_;
  }
  StatusOr<std::string> explanation = explainer(info.namespace_, info.name);
  {
    MutexLock lock(mu_);
    --in_flight_;
  }
  if (!explanation.ok()) {
    if (explanation.status().code() == StatusCode::kNotFound) {
      return ToResponse(NewNotFound(GroupResource{"", "pods"}, info.name));
    }
    return ToResponse(FromStatus(explanation.status(),
                                 ErrorContext{.gr = r.Gr(), .name = info.name, .group_kind = ""}));
  }
  boost::system::error_code ec;
  boost::json::value status = boost::json::parse(*explanation, ec);
  if (ec) return ToResponse(NewInternalError("the pod explanation is not JSON: " + ec.message()));

  boost::json::object obj;
  obj["apiVersion"] = r.ApiVersion();
  obj["kind"] = r.kind;
  boost::json::object meta;
  meta["name"] = info.name;
  meta["namespace"] = info.namespace_;
  meta["creationTimestamp"] = nullptr;
  obj["metadata"] = std::move(meta);
  obj["status"] = std::move(status);
  http::Response response;
  response.status = 200;
  response.headers.push_back({"Content-Type", "application/json"});
  response.body = boost::json::serialize(obj);
  return response;
}

}  // namespace draplane::server::handlers
