#include "controllers/namespace/namespace_controller.h"

#include <boost/json.hpp>

#include "client/typed.h"

namespace draplane::controllers {

using api::corev1::Namespace;

namespace {

// The namespaced resources draplane serves, in deletion order (pods first so claims are
// released).
std::vector<const client::ResourceType*> NamespacedResources() {
  return {&client::ResourceOf<api::corev1::Pod>(),
          &client::ResourceOf<api::resourcev1::ResourceClaim>(),
          &client::ResourceOf<api::resourcev1::ResourceClaimTemplate>(),
          &client::ResourceOf<api::corev1::Event>(),
          &client::ResourceOf<api::eventsv1::Event>(),
          &client::ResourceOf<api::coordinationv1::Lease>()};
}

}  // namespace

NamespaceController::NamespaceController(client::ApiClient& api, client::SharedInformers& informers,
                                         const Clock& clock, NamespaceControllerOptions options)
    : api_(api),
      options_(std::move(options)),
      namespaces_(informers.Get<Namespace>()),
      queue_(clock, options_.rate_limits, "namespace"),
      workers_("namespace-controller", queue_,
               [this](const std::string& key) { return Sync(key); }) {
  auto enqueue = [this](const Namespace& ns) {
    if (ns.metadata.deletion_timestamp.has_value()) queue_.Add(ns.metadata.name);
  };
  namespaces_.AddHandlers({.on_add = [enqueue](const auto& n) { enqueue(*n); },
                           .on_update = [enqueue](const auto&, const auto& n) { enqueue(*n); }});
}

NamespaceController::~NamespaceController() { Stop(); }

void NamespaceController::Start() { workers_.Start(options_.workers); }

void NamespaceController::Stop() { workers_.Stop(); }

Status NamespaceController::Sync(const std::string& name) {
  auto ns = namespaces_.Get("", name);
  if (ns == nullptr || !ns->metadata.deletion_timestamp.has_value()) return Status::Ok();
  size_t remaining = 0;
  for (const client::ResourceType* type : NamespacedResources()) {
    client::ApiRequest list;
    list.verb = client::Verb::kList;
    list.resource = type;
    list.namespace_ = name;
    StatusOr<boost::json::value> items = api_.Do(list);
    if (!items.ok()) {
      if (items.status().code() == StatusCode::kNotFound) continue;  // resource not served
      return items.status();
    }
    const boost::json::value* array = items->as_object().if_contains("items");
    if (array == nullptr || !array->is_array()) continue;
    for (const boost::json::value& item : array->as_array()) {
      ++remaining;
      const boost::json::object& meta = item.at("metadata").as_object();
      if (meta.if_contains("deletionTimestamp") != nullptr) continue;  // on its way
      client::ApiRequest del;
      del.verb = client::Verb::kDelete;
      del.resource = type;
      del.namespace_ = name;
      del.name = std::string(meta.at("name").as_string());
      if (const boost::json::value* uid = meta.if_contains("uid"); uid && uid->is_string()) {
        del.delete_options.precondition_uid = std::string(uid->as_string());
      }
      StatusOr<boost::json::value> deleted = api_.Do(del);
      if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound &&
          deleted.status().code() != StatusCode::kConflict) {
        return deleted.status();
      }
    }
  }
  if (remaining > 0) {
    queue_.AddAfter(name, options_.recheck_interval);
    return Status::Ok();
  }
  Namespace next = *ns;
  std::erase(next.spec.finalizers, std::string("kubernetes"));
  client::ApiRequest finalize;
  finalize.verb = client::Verb::kUpdate;
  finalize.resource = &client::ResourceOf<Namespace>();
  finalize.name = name;
  finalize.subresource = "finalize";
  finalize.body = client::ToJson(next);
  StatusOr<boost::json::value> done = api_.Do(finalize);
  if (!done.ok() && done.status().code() != StatusCode::kNotFound) return done.status();
  return Status::Ok();
}

}  // namespace draplane::controllers
