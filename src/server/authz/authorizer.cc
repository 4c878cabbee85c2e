#include "server/authz/authorizer.h"

namespace draplane::server::authz {

Result UnionAuthorizer::Authorize(const Attributes& attributes) const {
  std::string reasons;
  for (const Authorizer* authorizer : authorizers_) {
    Result r = authorizer->Authorize(attributes);
    if (r.decision != Decision::kNoOpinion) return r;
    if (!r.reason.empty()) reasons += (reasons.empty() ? "" : ", ") + r.reason;
  }
  return Result{Decision::kNoOpinion, reasons};
}

std::string ForbiddenMessage(const Attributes& a) {
  std::string user = "\"" + a.user.name + "\"";
  if (!a.resource_request) {
    return "User " + user + " cannot " + a.verb + " path \"" + a.path + "\"";
  }
  std::string resource = a.resource;
  if (!a.subresource.empty()) resource += "/" + a.subresource;
  if (!a.namespace_.empty()) {
    return "User " + user + " cannot " + a.verb + " resource \"" + resource + "\" in API group \"" +
           a.api_group + "\" in the namespace \"" + a.namespace_ + "\"";
  }
  return "User " + user + " cannot " + a.verb + " resource \"" + resource + "\" in API group \"" +
         a.api_group + "\" at the cluster scope";
}

}  // namespace draplane::server::authz
