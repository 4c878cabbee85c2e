#include "controllers/gc/garbage_collector.h"

#include "client/typed.h"

namespace draplane::controllers {

namespace rv1 = api::resourcev1;
using api::corev1::Node;
using api::corev1::Pod;

namespace {

constexpr char kOwnerIndex[] = "gc-owner";

template <typename T>
std::vector<std::string> OwnerUids(const T& object) {
  std::vector<std::string> out;
  for (const auto& owner : object.metadata.owner_references) out.push_back(owner.uid);
  return out;
}

bool Covered(const api::metav1::OwnerReference& owner) {
  return owner.api_version == "v1" && (owner.kind == "Pod" || owner.kind == "Node");
}

}  // namespace

GarbageCollector::GarbageCollector(client::ApiClient& api, client::SharedInformers& informers,
                                   const Clock& clock, GarbageCollectorOptions options)
    : api_(api),
      options_(std::move(options)),
      pods_(informers.Get<Pod>()),
      nodes_(informers.Get<Node>()),
      claims_(informers.Get<rv1::ResourceClaim>()),
      slices_(informers.Get<rv1::ResourceSlice>()),
      queue_(clock, options_.rate_limits, "garbage_collector"),
      workers_("garbage-collector", queue_, [this](const std::string& key) { return Sync(key); }) {
  Watch(pods_, "pods");
  Watch(claims_, "resourceclaims");
  Watch(slices_, "resourceslices");
  auto owner_gone = [this](const std::string& uid) {
    for (const auto& p : pods_.ByIndex(kOwnerIndex, uid)) {
      queue_.Add("pods:" + client::ObjectKey(p->metadata.namespace_, p->metadata.name));
    }
    for (const auto& c : claims_.ByIndex(kOwnerIndex, uid)) {
      queue_.Add("resourceclaims:" + client::ObjectKey(c->metadata.namespace_, c->metadata.name));
    }
    for (const auto& s : slices_.ByIndex(kOwnerIndex, uid)) {
      queue_.Add("resourceslices:" + s->metadata.name);
    }
  };
  pods_.AddHandlers({.on_delete = [owner_gone](const auto& p) { owner_gone(p->metadata.uid); }});
  nodes_.AddHandlers({.on_delete = [owner_gone](const auto& n) { owner_gone(n->metadata.uid); }});
}

GarbageCollector::~GarbageCollector() { Stop(); }

template <typename T>
void GarbageCollector::Watch(client::Informer<T>& informer, const std::string& resource) {
  informer.AddIndex(kOwnerIndex, [](const T& o) { return OwnerUids(o); });
  auto enqueue = [this, resource](const T& o) {
    if (o.metadata.owner_references.empty()) return;
    queue_.Add(resource + ":" + client::ObjectKey(o.metadata.namespace_, o.metadata.name));
  };
  informer.AddHandlers({.on_add = [enqueue](const auto& o) { enqueue(*o); },
                        .on_update = [enqueue](const auto&, const auto& o) { enqueue(*o); }});
}

void GarbageCollector::Start() { workers_.Start(options_.workers); }

void GarbageCollector::Stop() { workers_.Stop(); }

StatusOr<bool> GarbageCollector::OwnerExists(const std::string& ns,
                                             const api::metav1::OwnerReference& owner) {
  if (owner.kind == "Pod") {
    if (auto p = pods_.Get(ns, owner.name)) return p->metadata.uid == owner.uid;
    StatusOr<Pod> p = client::Get<Pod>(api_, ns, owner.name);
    if (!p.ok()) {
      if (p.status().code() == StatusCode::kNotFound) return false;
      return p.status();
    }
    return p->metadata.uid == owner.uid;
  }
  if (auto n = nodes_.Get("", owner.name)) return n->metadata.uid == owner.uid;
  StatusOr<Node> n = client::Get<Node>(api_, "", owner.name);
  if (!n.ok()) {
    if (n.status().code() == StatusCode::kNotFound) return false;
    return n.status();
  }
  return n->metadata.uid == owner.uid;
}

template <typename T>
Status GarbageCollector::Collect(client::Informer<T>& informer, const std::string& ns,
                                 const std::string& name) {
  auto object = informer.Get(ns, name);
  if (object == nullptr || object->metadata.owner_references.empty() ||
      object->metadata.deletion_timestamp.has_value()) {
    return Status::Ok();
  }
  for (const api::metav1::OwnerReference& owner : object->metadata.owner_references) {
    if (!Covered(owner)) return Status::Ok();
    StatusOr<bool> exists = OwnerExists(object->metadata.namespace_, owner);
    if (!exists.ok()) return exists.status();
    if (*exists) return Status::Ok();
  }
  client::DeleteOptions options;
  options.precondition_uid = object->metadata.uid;
  options.propagation_policy = "Background";
  Status s = client::Delete<T>(api_, ns, name, options);
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) return Status::Ok();
  return s;
}

Status GarbageCollector::Sync(const std::string& key) {
  size_t colon = key.find(':');
  if (colon == std::string::npos) return InvalidArgumentError("bad key " + key);
  std::string resource = key.substr(0, colon);
  std::string ns;
  std::string name;
  client::SplitObjectKey(std::string_view(key).substr(colon + 1), &ns, &name);
  if (resource == "pods") return Collect(pods_, ns, name);
  if (resource == "resourceclaims") return Collect(claims_, ns, name);
  if (resource == "resourceslices") return Collect(slices_, ns, name);
  return InvalidArgumentError("bad key " + key);
}

}  // namespace draplane::controllers
