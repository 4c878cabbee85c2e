#include "server/authz/node.h"

#include <boost/json.hpp>

namespace draplane::server::authz {
namespace {

bool IsRead(std::string_view verb) { return verb == "get" || verb == "list" || verb == "watch"; }

bool IsWrite(std::string_view verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
}

std::optional<std::string> FieldValue(const Attributes& a, std::string_view field) {
  for (const auto& [name, value] : a.field_requirements) {
    if (name == field) return value;
  }
  return std::nullopt;
}

Result Allow() { return {Decision::kAllow, ""}; }
Result NoOpinion() { return {Decision::kNoOpinion, ""}; }
Result Deny(std::string reason) { return {Decision::kDeny, std::move(reason)}; }

// obj[part][key] when it is a string, else "".
std::string_view StringAt(const boost::json::object& obj, std::string_view part,
                          std::string_view key) {
  const boost::json::value* p = obj.if_contains(part);
  if (p == nullptr || !p->is_object()) return {};
  p = p->get_object().if_contains(key);
  return p != nullptr && p->is_string() ? std::string_view(p->get_string()) : std::string_view();
}

}  // namespace

StatusOr<boost::json::object> NodeAuthorizer::ReadStored(const store::Key& key) const {
  StatusOr<store::ObjectPtr> stored = store_->Get(key);
  if (!stored.ok()) return stored.status();
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse((*stored)->value, ec);
  if (ec || !v.is_object()) return InternalError("stored object is not a JSON object");
  return std::move(v.get_object());
}

std::string NodeNameOf(const auth::UserInfo& user) {
  if (!user.InGroup(kNodesGroup)) return "";
  if (user.name.rfind(kNodeUserPrefix, 0) != 0) return "";
  return user.name.substr(kNodeUserPrefix.size());
}

bool NodeAuthorizer::PodBoundTo(const std::string& ns, const std::string& name,
                                const std::string& node, bool or_nominated) const {
  StatusOr<boost::json::object> pod = ReadStored(store::Key{"core/pods", ns, name});
  if (!pod.ok()) return false;
  return StringAt(*pod, "spec", "nodeName") == node ||
         (or_nominated && StringAt(*pod, "status", "nominatedNodeName") == node);
}

bool NodeAuthorizer::SliceOf(const std::string& name, const std::string& node) const {
  StatusOr<boost::json::object> slice =
      ReadStored(store::Key{"resource.k8s.io/resourceslices", "", name});
  if (!slice.ok()) return slice.status().code() == StatusCode::kNotFound;
  return StringAt(*slice, "spec", "nodeName") == node;
}

bool NodeAuthorizer::ClaimUsedBy(const std::string& ns, const std::string& name,
                                 const std::string& node) const {
  StatusOr<boost::json::object> claim =
      ReadStored(store::Key{"resource.k8s.io/resourceclaims", ns, name});
  if (!claim.ok()) return false;
  const boost::json::value* status = claim->if_contains("status");
  if (status == nullptr || !status->is_object()) return false;
  const boost::json::value* reserved = status->get_object().if_contains("reservedFor");
  if (reserved == nullptr || !reserved->is_array()) return false;
  for (const boost::json::value& consumer : reserved->get_array()) {
    if (!consumer.is_object()) continue;
    const boost::json::object& c = consumer.get_object();
    const boost::json::value* resource = c.if_contains("resource");
    const boost::json::value* pod_name = c.if_contains("name");
    if (resource == nullptr || !resource->is_string() || resource->get_string() != "pods") continue;
    if (pod_name == nullptr || !pod_name->is_string()) continue;
    // A pod nominated to the node is one whose binding waits for its devices to be attached
    // there (KEP-5007 binding conditions, KEP-5278): the node's driver reports the attach.
    if (PodBoundTo(ns, std::string(pod_name->get_string()), node, /*or_nominated=*/true)) {
      return true;
    }
  }
  return false;
}

Result NodeAuthorizer::Authorize(const Attributes& a) const {
  std::string node = NodeNameOf(a.user);
  if (node.empty() || !a.resource_request) return NoOpinion();
  const std::string& r = a.resource;
  const std::string& g = a.api_group;

  if (g.empty() && r == "nodes") {
    if (IsRead(a.verb) && (a.subresource.empty() || a.subresource == "status")) return Allow();
    if (a.verb == "create" && a.subresource.empty()) return Allow();  // admission checks the name
    if (IsWrite(a.verb) && (a.subresource.empty() || a.subresource == "status")) {
      if (a.name == node) return Allow();
      return Deny("node '" + node + "' cannot modify node '" + a.name + "'");
    }
    return NoOpinion();
  }
  if (g == "resource.k8s.io" && r == "resourceslices") {
    // Upstream's graph has an edge from a slice to its node only: another node's slice, or one
    // for several nodes, is not the node's to read. One that does not exist yet answers 404
    // (upstream: 403), so that `kubectl apply` of a node's first slice works.
    if (a.verb == "get") {
      if (SliceOf(a.name, node)) return Allow();
      return Deny("no relationship found between node '" + node + "' and this object");
    }
    if (a.verb == "list" || a.verb == "watch" || a.verb == "deletecollection") {
      if (FieldValue(a, "spec.nodeName") == node) return Allow();
      return Deny("can only " + a.verb +
                  " ResourceSlices with the field selector spec.nodeName=" + node);
    }
    if (IsWrite(a.verb)) return Allow();  // admission checks spec.nodeName
    return NoOpinion();
  }
  if (g == "resource.k8s.io" && r == "deviceclasses") {
    return IsRead(a.verb) ? Allow() : NoOpinion();
  }
  if (g.empty() && r == "pods") {
    if (a.verb == "list" || a.verb == "watch") {
      if (FieldValue(a, "spec.nodeName") == node) return Allow();
      if (FieldValue(a, "status.nominatedNodeName") == node) return Allow();
      return Deny("can only " + a.verb + " pods with the field selector spec.nodeName=" + node +
                  " or status.nominatedNodeName=" + node);
    }
    bool allowed_verb =
        (a.subresource.empty() && (a.verb == "get" || a.verb == "delete")) ||
        (a.subresource == "status" && (a.verb == "get" || a.verb == "update" || a.verb == "patch"));
    if (!allowed_verb) return NoOpinion();
    if (PodBoundTo(a.namespace_, a.name, node, /*or_nominated=*/false)) return Allow();
    return Deny("no relationship found between node '" + node + "' and this object");
  }
  if (g == "resource.k8s.io" && r == "resourceclaims") {
    bool allowed_verb =
        (a.subresource.empty() && a.verb == "get") ||
        (a.subresource == "status" && (a.verb == "get" || a.verb == "update" || a.verb == "patch"));
    if (!allowed_verb) return NoOpinion();
    if (ClaimUsedBy(a.namespace_, a.name, node)) return Allow();
    return Deny("no relationship found between node '" + node + "' and this object");
  }
  if ((g.empty() || g == "events.k8s.io") && r == "events") {
    return (a.verb == "create" || a.verb == "update" || a.verb == "patch") ? Allow() : NoOpinion();
  }
  if (g == "coordination.k8s.io" && r == "leases" && a.namespace_ == "kube-node-lease") {
    if (a.verb == "create" || (a.name == node && (IsRead(a.verb) || IsWrite(a.verb)))) {
      return Allow();
    }
    return NoOpinion();
  }
  return NoOpinion();
}

}  // namespace draplane::server::authz
