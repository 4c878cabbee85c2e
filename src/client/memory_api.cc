#include "client/memory_api.h"

#include <array>
#include <atomic>
#include <boost/json.hpp>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "api/codec/json.h"
#include "api/gen/core_v1_codec.h"
#include "api/labels/field_selector.h"
#include "api/labels/selector.h"
#include "api/meta/resource_version.h"
#include "api/meta/time.h"
#include "api/patch/patch.h"
#include "client/memory_quota.h"
#include "common/check.h"
#include "common/mutex.h"
#include "common/sorted_string_map.h"
#include "common/status_macros.h"

namespace draplane::client {
namespace {

namespace json = boost::json;

api::patch::PatchFormat PatchFormatOf(PatchType type) {
  switch (type) {
    case PatchType::kJson:
      return api::patch::PatchFormat::kJson;
    case PatchType::kMerge:
      return api::patch::PatchFormat::kMerge;
    case PatchType::kStrategicMerge:
      return api::patch::PatchFormat::kStrategicMerge;
  }
  return api::patch::PatchFormat::kMerge;
}

std::string Qualified(const ResourceType& type) {
  if (type.group.empty()) return std::string(type.resource);
  return std::string(type.resource) + "." + std::string(type.group);
}

json::object& EnsureObject(json::value& v) {
  if (!v.is_object()) v = json::object();
  return v.as_object();
}

json::object& Meta(json::value& object) { return EnsureObject(EnsureObject(object)["metadata"]); }

const json::object* MetaOf(const json::value& object) {
  if (!object.is_object()) return nullptr;
  const json::value* meta = object.as_object().if_contains("metadata");
  return meta != nullptr && meta->is_object() ? &meta->as_object() : nullptr;
}

std::string Str(const json::object* object, std::string_view key) {
  if (object == nullptr) return "";
  const json::value* v = object->if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string MetaString(const json::value& object, std::string_view key) {
  return Str(MetaOf(object), key);
}

bool HasNonEmptyArray(const json::object* object, std::string_view key) {
  if (object == nullptr) return false;
  const json::value* v = object->if_contains(key);
  return v != nullptr && v->is_array() && !v->as_array().empty();
}

// What a write that keeps the old version's `key` stores there: the body's value when it is
// the same (moved out of the body), else a copy of `old`. Writers mostly send back what they
// read, and comparing costs less than copying the old value and freeing the body's.
json::value KeepOrCopy(json::object& body, std::string_view key, const json::value& old) {
  json::value* mine = body.if_contains(key);
  if (mine != nullptr && api::codec::JsonIdentical(*mine, old)) return std::move(*mine);
  return old;
}

const json::object* Child(const json::value& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const json::value* v = object.as_object().if_contains(key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

struct Filter {
  const ResourceType* type = nullptr;
  std::string namespace_;
  api::labels::Selector labels;
  api::labels::FieldSelector fields;

  bool Matches(const json::value& object) const {
    if (!namespace_.empty() && MetaString(object, "namespace") != namespace_) return false;
    if (!labels.Empty()) {
      api::labels::LabelMap map;
      if (const json::object* meta = MetaOf(object)) {
        if (const json::value* l = meta->if_contains("labels"); l != nullptr && l->is_object()) {
          for (const auto& [k, v] : l->as_object()) {
            if (v.is_string()) map.emplace(std::string(k), std::string(v.as_string()));
          }
        }
      }
      if (!labels.Matches(map)) return false;
    }
    if (fields.empty()) return true;
    if (!object.is_object()) return false;
    return fields.Matches(
        api::labels::SelectableFields(type->group, type->kind, object.as_object()));
  }
};

StatusOr<Filter> MakeFilter(const ApiRequest& request) {
  Filter filter;
  filter.type = request.resource;
  filter.namespace_ = request.resource->namespaced ? request.namespace_ : "";
  if (!request.list.label_selector.empty()) {
    StatusOr<api::labels::Selector> s = api::labels::Parse(request.list.label_selector);
    // As the server answers: the message, without field causes.
    if (!s.ok()) return InvalidArgumentError(std::string(s.status().message()));
    filter.labels = std::move(*s);
  }
  StatusOr<api::labels::FieldSelector> fields =
      api::labels::FieldSelector::Parse(request.list.field_selector);
  if (!fields.ok()) return fields.status();
  DRAPLANE_RETURN_IF_ERROR(
      api::labels::CheckSelectableFields(*fields, request.resource->group, request.resource->kind));
  filter.fields = std::move(*fields);
  return filter;
}

}  // namespace

// One watch. What it selects is set before it is published; what changes is guarded by the
// API's mutex, which `mu` points to.
struct Watcher {
  explicit Watcher(Mutex* api_mu) : mu(api_mu) {}

  Mutex* const mu;
  const ResourceType* resource = nullptr;
  Filter filter;
  bool bookmarks = false;
  std::deque<WatchEvent> queue DRAPLANE_GUARDED_BY(*mu);
  bool closed DRAPLANE_GUARDED_BY(*mu) = false;
  bool cancelled DRAPLANE_GUARDED_BY(*mu) = false;
  CondVar cv;
};

struct LogEntry {
  uint64_t rv = 0;
  const ResourceType* resource = nullptr;
  std::string type;
  // Shared with the object's bucket while it is the stored version: never modified.
  std::shared_ptr<const json::value> object;
  std::shared_ptr<const json::value> old;  // MODIFIED only
};

// A stored object. Immutable once stored: a write stores a new value, so the watch log can share
// it with the bucket instead of copying it.
using Stored = std::shared_ptr<const json::value>;
// One resource's stored objects by "namespace/name" (or name), listed in that order.
using Bucket = SortedStringMap<Stored>;

namespace {

// Whether a request of `verb` stores its body (and so may keep the caller's).
bool StoresBody(Verb verb) { return verb == Verb::kCreate || verb == Verb::kUpdate; }

}  // namespace

struct MemoryApi::State {
  State(const Clock& c, Random& r, MemoryApiOptions o) : clock(c), random(r), options(o) {}

  const Clock& clock;
  Random& random;
  // Events take their uids from a stream of their own: how many Events a recorder writes (its
  // aggregation) must not shift the uids and generated names of the objects decisions order by.
  std::unique_ptr<Random> event_random = NewSeededRandom(0x6576656e7473);
  const MemoryApiOptions options;
  // Events to expire: (monotonic expiry, resource, key), in creation order.
  // An Event's lease: every write of an Event gives it a new one (kube-apiserver's event storage
  // returns the TTL for creates and updates alike), so only the newest version's expiry removes
  // it.
  struct Expiry {
    Duration at;
    const ResourceType* type;
    std::string key;
    std::string resource_version;
  };
  mutable Mutex mu;
  std::deque<Expiry> event_expiry DRAPLANE_GUARDED_BY(mu);
  uint64_t rv DRAPLANE_GUARDED_BY(mu) = 1;
  std::map<const ResourceType*, Bucket> objects DRAPLANE_GUARDED_BY(mu);
  std::deque<LogEntry> log DRAPLANE_GUARDED_BY(mu);
  // Watches from rv >= log_floor - 1 can be served from the log.
  uint64_t log_floor DRAPLANE_GUARDED_BY(mu) = 1;
  std::vector<std::shared_ptr<Watcher>> watchers DRAPLANE_GUARDED_BY(mu);
  Interceptor interceptor DRAPLANE_GUARDED_BY(mu);
  // Quota admission and status (memory_quota.h); called with `mu` held.
  MemoryQuotas quotas DRAPLANE_GUARDED_BY(mu){
      clock, [this](std::string_view ns, const MemoryQuotas::ObjectVisitor& visit)
                 DRAPLANE_REQUIRES(mu) { ForEachObjectIn(ns, visit); }};
  std::array<std::atomic<int64_t>, 6> counts{};

  // The current time as written into objects; formatted once per instant (the simulator's
  // clock stands still while it writes many objects).
  const std::string& Now() DRAPLANE_REQUIRES(mu) {
    const Timestamp now = clock.Now();
    if (now_text.empty() || now != now_at) {
      now_at = now;
      now_text = api::Time::FromTimestamp(now).text();
    }
    return now_text;
  }
  Timestamp now_at DRAPLANE_GUARDED_BY(mu){};
  std::string now_text DRAPLANE_GUARDED_BY(mu);

  std::string NewName(std::string prefix) {
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    if (prefix.size() > 58) prefix.resize(58);
    for (int i = 0; i < 5; ++i) prefix.push_back(kAlphabet[random.Uniform(sizeof kAlphabet - 1)]);
    return prefix;
  }

  Status NotFound(const ResourceType& type, std::string_view name) const {
    return NotFoundError(Qualified(type) + " \"" + std::string(name) + "\" not found");
  }

  // Records an event and hands it to matching watchers.
  void Emit(const ResourceType* type, std::string event_type, Stored object, Stored old)
      DRAPLANE_REQUIRES(mu) {
    LogEntry entry;
    entry.rv = rv;
    entry.resource = type;
    entry.type = std::move(event_type);
    entry.object = std::move(object);
    entry.old = std::move(old);
    std::erase_if(watchers, [this](const std::shared_ptr<Watcher>& w) DRAPLANE_REQUIRES(mu) {
      AssertGuards(*w);
      return w->closed;
    });
    for (const std::shared_ptr<Watcher>& w : watchers) Deliver(*w, entry);
    log.push_back(std::move(entry));
    if (log.size() > options.event_log_capacity) {
      log_floor = log.front().rv + 1;
      log.pop_front();
    }
  }

  // Every watcher's mutex is this API's `mu`: holding one is holding the other.
  void AssertGuards(const Watcher& w) const DRAPLANE_REQUIRES(mu)
      DRAPLANE_ASSERT_CAPABILITY(*w.mu) {
    DRAPLANE_DCHECK(w.mu == &mu);
  }

  void Deliver(Watcher& w, const LogEntry& entry) DRAPLANE_REQUIRES(mu) {
    AssertGuards(w);
    if (w.closed || w.resource != entry.resource) return;
    std::string type = entry.type;
    if (entry.type == "MODIFIED") {
      bool now = w.filter.Matches(*entry.object);
      bool before = w.filter.Matches(*entry.old);
      if (!now && !before) return;
      if (now && !before) type = "ADDED";
      if (!now && before) type = "DELETED";
    } else if (!w.filter.Matches(*entry.object)) {
      return;
    }
    w.queue.push_back(WatchEvent{std::move(type), entry.object});
    w.cv.NotifyAll();
  }

  void SetRv(json::value& object) DRAPLANE_REQUIRES(mu) {
    Meta(object)["resourceVersion"] = std::to_string(rv);
  }

  // Stores `next` as the new version of the object at `it` and emits MODIFIED with the previous
  // version as it was; then the quota writes that follow from it. Returns the stored value.
  Stored Replace(const ResourceType& type, Bucket::iterator it, json::value next)
      DRAPLANE_REQUIRES(mu) {
    Stored previous =
        std::exchange(it->second, std::make_shared<const json::value>(std::move(next)));
    Stored stored = it->second;
    Emit(&type, "MODIFIED", stored, previous);
    if (options.event_ttl > Duration::zero() && IsEvent(type)) RenewLease(type, it->first, *stored);
    if (&type == &ResourceOf<api::corev1::ResourceQuota>()) {
      WriteQuotas(quotas.QuotaStored(*stored, previous.get()));
    } else if (std::string_view ns = NamespaceOfKey(type, it->first); quotas.Tracks(ns)) {
      WriteQuotas(quotas.Replaced(type, std::string(ns), it->first, *previous, *stored));
    }
    return stored;
  }

  // Erases the object at `it` and emits DELETED with `removed`, its last version; then the
  // quotas take back what it used.
  Stored Erase(const ResourceType& type, Bucket& bucket, Bucket::iterator it, json::value removed)
      DRAPLANE_REQUIRES(mu) {
    std::string key = it->first;
    bucket.erase(it);
    auto last = std::make_shared<const json::value>(std::move(removed));
    Emit(&type, "DELETED", last, nullptr);
    if (&type == &ResourceOf<api::corev1::ResourceQuota>()) quotas.QuotaRemoved(key);
    if (std::string_view ns = NamespaceOfKey(type, key); quotas.Tracks(ns)) {
      WriteQuotas(quotas.Removed(type, std::string(ns), key, *last));
    }
    return last;
  }

  static bool IsEvent(const ResourceType& type) {
    return &type == &ResourceOf<api::corev1::Event>() ||
           &type == &ResourceOf<api::eventsv1::Event>();
  }
  // The Event stored at `key` (version `object`) expires one TTL from now (Expiry).
  void RenewLease(const ResourceType& type, const std::string& key, const json::value& object)
      DRAPLANE_REQUIRES(mu) {
    event_expiry.push_back({clock.MonotonicNow() + options.event_ttl, &type, key,
                            MetaString(object, "resourceVersion")});
  }

  // The namespace part of a stored object's key ("" for a cluster-scoped resource).
  static std::string_view NamespaceOfKey(const ResourceType& type, std::string_view key) {
    return type.namespaced ? key.substr(0, key.find('/')) : std::string_view();
  }

  // Writes quota statuses (memory_quota.h), each as a new version of its quota.
  void WriteQuotas(std::vector<MemoryQuotas::StatusWrite> writes) DRAPLANE_REQUIRES(mu) {
    const ResourceType& type = ResourceOf<api::corev1::ResourceQuota>();
    for (MemoryQuotas::StatusWrite& w : writes) {
      auto& bucket = objects[&type];
      auto it = bucket.find(ObjectKey(w.namespace_, w.name));
      if (it == bucket.end()) continue;
      json::value next = *it->second;
      next.as_object()["status"] = api::corev1::Encode(w.status);
      ++rv;
      SetRv(next);
      Replace(type, it, std::move(next));
    }
  }

  // Every stored object of namespace `ns` (the quotas' recounts).
  void ForEachObjectIn(std::string_view ns, const MemoryQuotas::ObjectVisitor& visit)
      DRAPLANE_REQUIRES(mu) {
    std::string prefix = std::string(ns) + "/";
    for (auto& [type, bucket] : objects) {
      if (!type->namespaced) continue;
      for (auto it = bucket.lower_bound(prefix);
           it != bucket.end() && std::string_view(it->first).starts_with(prefix); ++it) {
        visit(*type, it->first, *it->second);
      }
    }
  }

  // The writes answer with the stored object (shared: Do copies it out only for a caller that
  // reads the answer). Create and Update read the body from `body`, which they may keep.
  StatusOr<Stored> Create(const ApiRequest& request, json::value body) DRAPLANE_REQUIRES(mu);
  StatusOr<Stored> Bind(const ApiRequest& request, const json::value& body) DRAPLANE_REQUIRES(mu);
  StatusOr<Stored> Update(const ApiRequest& request, json::value body) DRAPLANE_REQUIRES(mu);
  StatusOr<Stored> Patch(const ApiRequest& request) DRAPLANE_REQUIRES(mu);
  StatusOr<Stored> Delete(const ApiRequest& request) DRAPLANE_REQUIRES(mu);
  // Create, Update, Patch or Delete, by the request's verb.
  StatusOr<Stored> Write(const ApiRequest& request, json::value body) DRAPLANE_REQUIRES(mu) {
    switch (request.verb) {
      case Verb::kCreate:
        return Create(request, std::move(body));
      case Verb::kUpdate:
        return Update(request, std::move(body));
      case Verb::kPatch:
        return Patch(request);
      case Verb::kDelete:
        return Delete(request);
      case Verb::kGet:
      case Verb::kList:
        break;
    }
    return InternalError("not a write");
  }
  StatusOr<json::value> List(const ApiRequest& request) DRAPLANE_REQUIRES(mu);
  // Deletes Events whose TTL passed.
  void ExpireEvents() DRAPLANE_REQUIRES(mu);
  // `candidate`: the whole object, or for a subresource at least its metadata and that part.
  StatusOr<Stored> Commit(const ResourceType& type, const std::string& key, json::value candidate,
                          const std::string& subresource, bool check_rv) DRAPLANE_REQUIRES(mu);
  bool NamespaceTerminating(std::string_view ns) const DRAPLANE_REQUIRES(mu);
};

bool MemoryApi::State::NamespaceTerminating(std::string_view ns) const {
  auto it = objects.find(&ResourceOf<api::corev1::Namespace>());
  if (it == objects.end()) return false;
  auto found = it->second.find(std::string(ns));
  return found != it->second.end() && MetaOf(*found->second) != nullptr &&
         MetaOf(*found->second)->if_contains("deletionTimestamp") != nullptr;
}

StatusOr<Stored> MemoryApi::State::Create(const ApiRequest& request, json::value body) {
  const ResourceType& type = *request.resource;
  if (!request.subresource.empty()) {
    if (&type == &ResourceOf<api::corev1::Pod>() && request.subresource == "binding") {
      return Bind(request, body);
    }
    return InvalidArgumentError("create on subresource " + request.subresource +
                                " is not supported");
  }
  if (!body.is_object()) return InvalidArgumentError("the body must be a JSON object");
  json::value object = std::move(body);
  // The type fields first: adding keys to the root may move its members, `meta` among them.
  object.as_object()["apiVersion"] = type.ApiVersion();
  object.as_object()["kind"] = type.kind;
  json::object& meta = Meta(object);
  std::string ns = Str(&meta, "namespace");
  if (type.namespaced) {
    if (!request.namespace_.empty() && !ns.empty() && ns != request.namespace_) {
      return InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    if (ns.empty()) ns = request.namespace_;
    if (ns.empty()) return InvalidArgumentError("metadata.namespace: Required value");
    meta["namespace"] = ns;
    if (NamespaceTerminating(ns)) {
      return FailedPreconditionError("unable to create new content in namespace " + ns +
                                     " because it is being terminated");
    }
  } else {
    meta.erase("namespace");
    ns.clear();
  }
  std::string name = Str(&meta, "name");
  if (name.empty()) {
    std::string prefix = Str(&meta, "generateName");
    if (prefix.empty()) {
      return InvalidArgumentError(
          "metadata.name: Required value: name or generateName is required");
    }
    name = NewName(prefix);
    meta["name"] = name;
  }
  std::string key = ObjectKey(ns, name);
  auto& bucket = objects[&type];
  if (bucket.contains(key)) {
    return AlreadyExistsError(Qualified(type) + " \"" + name + "\" already exists");
  }
  json::object& root = object.as_object();
  const bool event = IsEvent(type);
  meta["uid"] = event ? event_random->NewUuid() : random.NewUuid();
  meta["creationTimestamp"] = Now();
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (!event && &type != &ResourceOf<api::coordinationv1::Lease>()) {
    meta["generation"] = 1;
  }
  if (&type == &ResourceOf<api::corev1::Pod>()) {
    json::object& status = EnsureObject(root["status"]);
    if (Str(&status, "phase").empty()) status["phase"] = "Pending";
  } else if (&type == &ResourceOf<api::resourcev1::ResourceClaim>() ||
             &type == &ResourceOf<api::resourcev1::DeviceTaintRule>() ||
             &type == &ResourceOf<api::corev1::ResourceQuota>()) {
    // (A quota's status is then synced from the objects here, not taken from a dump.)
    root.erase("status");
  } else if (&type == &ResourceOf<api::corev1::Namespace>()) {
    json::object& spec = EnsureObject(root["spec"]);
    if (!HasNonEmptyArray(&spec, "finalizers")) spec["finalizers"] = json::array{"kubernetes"};
    EnsureObject(root["status"])["phase"] = "Active";
  }
  if (type.namespaced && quotas.Tracks(ns)) {
    StatusOr<std::vector<MemoryQuotas::StatusWrite>> charges = quotas.Admit(type, ns, name, object);
    if (!charges.ok()) {
      return FailedPreconditionError(Qualified(type) + " \"" + name +
                                     "\" is forbidden: " + std::string(charges.status().message()));
    }
    WriteQuotas(std::move(*charges));
  }
  ++rv;
  SetRv(object);
  if (options.event_ttl > Duration::zero() && event) RenewLease(type, key, object);
  auto [it, inserted] =
      bucket.try_emplace(key, std::make_shared<const json::value>(std::move(object)));
  Stored stored = it->second;
  Emit(&type, "ADDED", stored, nullptr);
  if (&type == &ResourceOf<api::corev1::ResourceQuota>()) {
    WriteQuotas(quotas.QuotaStored(*stored, nullptr));
  }
  return stored;
}

void MemoryApi::State::ExpireEvents() {
  Duration now = clock.MonotonicNow();
  while (!event_expiry.empty() && event_expiry.front().at <= now) {
    Expiry e = std::move(event_expiry.front());
    event_expiry.pop_front();
    auto& bucket = objects[e.type];
    auto it = bucket.find(e.key);
    if (it == bucket.end() || MetaString(*it->second, "resourceVersion") != e.resource_version) {
      continue;  // gone, or written since: a later lease decides
    }
    ++rv;
    json::value removed = *it->second;
    SetRv(removed);
    Erase(*e.type, bucket, it, std::move(removed));
  }
}

StatusOr<Stored> MemoryApi::State::Bind(const ApiRequest& request, const json::value& body) {
  const ResourceType& type = *request.resource;
  auto& bucket = objects[&type];
  auto it = bucket.find(ObjectKey(request.namespace_, request.name));
  if (it == bucket.end()) return NotFound(type, request.name);
  const json::value& stored = *it->second;
  std::string binding_uid = MetaString(body, "uid");
  std::string pod_name = request.namespace_ + "/" + request.name;
  if (!binding_uid.empty() && binding_uid != MetaString(stored, "uid")) {
    return ConflictError("Operation cannot be fulfilled on pods/binding \"" + request.name +
                         "\": Precondition failed: UID in precondition: " + binding_uid +
                         ", UID in object meta: " + MetaString(stored, "uid"));
  }
  if (MetaOf(stored)->if_contains("deletionTimestamp") != nullptr) {
    return ConflictError("Operation cannot be fulfilled on pods/binding \"" + request.name +
                         "\": pod " + request.name +
                         " is being deleted, cannot be assigned to a host");
  }
  const json::object* target = Child(body, "target");
  std::string node = Str(target, "name");
  if (node.empty()) return InvalidArgumentError("target.name: Required value");
  std::string current = Str(Child(stored, "spec"), "nodeName");
  if (!current.empty()) {
    return ConflictError("Operation cannot be fulfilled on pods/binding \"" + request.name +
                         "\": pod " + request.name + " is already assigned to node \"" + current +
                         "\"");
  }
  json::value pod = stored;
  EnsureObject(pod.as_object()["spec"])["nodeName"] = node;
  json::object& status = EnsureObject(pod.as_object()["status"]);
  json::value& condition_list = status["conditions"];
  if (!condition_list.is_array()) condition_list = json::array();
  json::array& conditions = condition_list.as_array();
  json::object scheduled{{"type", "PodScheduled"},
                         {"status", "True"},
                         {"lastProbeTime", nullptr},
                         {"lastTransitionTime", Now()}};
  bool replaced = false;
  for (json::value& c : conditions) {
    if (c.is_object() && Str(&c.as_object(), "type") == "PodScheduled") {
      c = scheduled;
      replaced = true;
    }
  }
  if (!replaced) conditions.push_back(scheduled);
  ++rv;
  SetRv(pod);
  Replace(type, it, std::move(pod));
  return std::make_shared<const json::value>(
      json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}});
}

StatusOr<Stored> MemoryApi::State::Commit(const ResourceType& type, const std::string& key,
                                          json::value candidate, const std::string& subresource,
                                          bool check_rv) {
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  const json::value& old = *it->second;
  std::string name = MetaString(old, "name");
  if (!candidate.is_object()) return InvalidArgumentError("the body must be a JSON object");
  std::string body_rv = MetaString(candidate, "resourceVersion");
  if (check_rv && !body_rv.empty() && body_rv != MetaString(old, "resourceVersion")) {
    return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" + name +
                         "\": the object has been modified; please apply your changes to the "
                         "latest version and try again");
  }
  std::string body_uid = MetaString(candidate, "uid");
  if (!body_uid.empty() && body_uid != MetaString(old, "uid")) {
    return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" + name +
                         "\": Precondition failed: UID in precondition: " + body_uid +
                         ", UID in object meta: " + MetaString(old, "uid"));
  }
  json::value next;
  if (subresource == "status") {
    json::object& body = candidate.as_object();
    json::value* status = body.if_contains("status");
    if (status != nullptr && old.is_object()) {
      // The old object but its status, which is replaced in place (as `next["status"] = ...`
      // would, without copying the old status first).
      const json::object& old_root = old.as_object();
      json::object root(old_root.storage());
      root.reserve(old_root.size() + 1);
      bool replaced = false;
      for (const json::key_value_pair& member : old_root) {
        if (member.key() == "status") {
          root.emplace(member.key(), std::move(*status));
          replaced = true;
        } else {
          root.emplace(member.key(), KeepOrCopy(body, member.key(), member.value()));
        }
      }
      if (!replaced) root.emplace("status", std::move(*status));
      next = std::move(root);
    } else {
      next = old;
      next.as_object().erase("status");
    }
  } else if (subresource == "finalize") {
    next = old;
    const json::object* spec = Child(candidate, "spec");
    json::object& next_spec = EnsureObject(next.as_object()["spec"]);
    if (spec != nullptr && spec->if_contains("finalizers") != nullptr) {
      next_spec["finalizers"] = spec->at("finalizers");
    } else {
      next_spec.erase("finalizers");
    }
  } else if (subresource.empty()) {
    next = std::move(candidate);
    json::object& root = next.as_object();
    root["apiVersion"] = type.ApiVersion();
    root["kind"] = type.kind;
    if (type.has_status) {
      if (const json::value* s = old.as_object().if_contains("status")) {
        json::value* mine = root.if_contains("status");
        if (mine == nullptr || !api::codec::JsonIdentical(*mine, *s)) root["status"] = *s;
      } else {
        root.erase("status");
      }
    }
    json::object& meta = Meta(next);
    const json::object* old_meta = MetaOf(old);
    for (std::string_view field :
         {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
          "deletionGracePeriodSeconds", "generation"}) {
      if (const json::value* v = old_meta->if_contains(field)) {
        meta[field] = *v;
      } else {
        meta.erase(field);
      }
    }
    const json::value* old_spec = old.as_object().if_contains("spec");
    const json::value* new_spec = root.if_contains("spec");
    bool spec_changed = (old_spec == nullptr) != (new_spec == nullptr) ||
                        (old_spec != nullptr && !api::codec::JsonEqual(*old_spec, *new_spec));
    if (spec_changed && meta.if_contains("generation") != nullptr &&
        meta["generation"].is_int64()) {
      meta["generation"] = meta["generation"].as_int64() + 1;
    }
  } else {
    return InvalidArgumentError("update of subresource " + subresource + " is not supported");
  }
  // A no-op write leaves the object (and its resourceVersion) alone, as the API server does.
  Meta(next)["resourceVersion"] = MetaString(old, "resourceVersion");
  if (api::codec::JsonEqual(next, old)) return it->second;

  ++rv;
  SetRv(next);
  const json::object* meta = MetaOf(next);
  bool deleting = meta->if_contains("deletionTimestamp") != nullptr;
  bool finalizers = HasNonEmptyArray(meta, "finalizers");
  if (&type == &ResourceOf<api::corev1::Namespace>()) {
    finalizers = finalizers || HasNonEmptyArray(Child(next, "spec"), "finalizers");
  }
  if (deleting && !finalizers) return Erase(type, bucket, it, std::move(next));
  return Replace(type, it, std::move(next));
}

StatusOr<Stored> MemoryApi::State::Update(const ApiRequest& request, json::value body) {
  const ResourceType& type = *request.resource;
  std::string key = ObjectKey(type.namespaced ? request.namespace_ : "", request.name);
  auto& bucket = objects[&type];
  if (!bucket.contains(key)) return NotFound(type, request.name);
  return Commit(type, key, std::move(body), request.subresource, /*check_rv=*/true);
}

StatusOr<Stored> MemoryApi::State::Patch(const ApiRequest& request) {
  const ResourceType& type = *request.resource;
  const api::patch::PatchFormat format = PatchFormatOf(request.patch_type);
  // As the server: the patch's shape is checked before the object is looked up.
  DRAPLANE_RETURN_IF_ERROR(api::patch::CheckPatchShape(request.body, format));
  std::string key = ObjectKey(type.namespaced ? request.namespace_ : "", request.name);
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  if (it == bucket.end()) return NotFound(type, request.name);
  std::string old_rv = MetaString(*it->second, "resourceVersion");
  StatusOr<json::value> patched =
      api::patch::ApplyPatch(*it->second, request.body, format, type.kind);
  if (!patched.ok()) return api::patch::AsClientError(patched.status());
  json::value candidate = std::move(*patched);
  // A resourceVersion in the patch is a precondition; otherwise the patch applies to the
  // current object.
  bool check = MetaString(candidate, "resourceVersion") != old_rv;
  return Commit(type, key, std::move(candidate), request.subresource, check);
}

StatusOr<Stored> MemoryApi::State::Delete(const ApiRequest& request) {
  const ResourceType& type = *request.resource;
  std::string key = ObjectKey(type.namespaced ? request.namespace_ : "", request.name);
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  if (it == bucket.end()) return NotFound(type, request.name);
  const json::value& object = *it->second;
  const DeleteOptions& options = request.delete_options;
  if (!options.precondition_uid.empty() && options.precondition_uid != MetaString(object, "uid")) {
    return ConflictError(
        "Operation cannot be fulfilled on " + Qualified(type) + " \"" + request.name +
        "\": Precondition failed: UID in precondition: " + options.precondition_uid +
        ", UID in object meta: " + MetaString(object, "uid"));
  }
  if (!options.precondition_resource_version.empty() &&
      options.precondition_resource_version != MetaString(object, "resourceVersion")) {
    return ConflictError(
        "Operation cannot be fulfilled on " + Qualified(type) + " \"" + request.name +
        "\": Precondition failed: ResourceVersion in precondition: " +
        options.precondition_resource_version +
        ", ResourceVersion in object meta: " + MetaString(object, "resourceVersion"));
  }
  const json::object* meta = MetaOf(object);
  bool already_deleting = meta->if_contains("deletionTimestamp") != nullptr;
  bool finalizers = HasNonEmptyArray(meta, "finalizers");
  // Pods bound to a node end gracefully unless terminal or the grace period is 0
  // (podStrategy.CheckGracefulDelete); the kubelet finishes the deletion.
  bool graceful = false;
  int64_t grace = 0;
  if (&type == &ResourceOf<api::corev1::Namespace>()) {
    finalizers = finalizers || HasNonEmptyArray(Child(object, "spec"), "finalizers");
  } else if (&type == &ResourceOf<api::corev1::Pod>()) {
    const json::object* spec = Child(object, "spec");
    std::string phase = Str(Child(object, "status"), "phase");
    bool bound = !Str(spec, "nodeName").empty();
    if (options.grace_period_seconds) {
      grace = *options.grace_period_seconds;
    } else if (spec != nullptr && spec->if_contains("terminationGracePeriodSeconds") != nullptr &&
               spec->at("terminationGracePeriodSeconds").is_int64()) {
      grace = spec->at("terminationGracePeriodSeconds").as_int64();
    } else {
      grace = 30;
    }
    graceful = bound && phase != "Succeeded" && phase != "Failed" && grace > 0;
  }
  if (finalizers || graceful) {
    if (already_deleting) return it->second;
    json::value next = object;
    json::object& m = Meta(next);
    m["deletionTimestamp"] =
        api::Time::FromTimestamp(clock.Now() + std::chrono::seconds(grace)).text();
    m["deletionGracePeriodSeconds"] = grace;
    if (&type == &ResourceOf<api::corev1::Namespace>()) {
      EnsureObject(next.as_object()["status"])["phase"] = "Terminating";
    }
    ++rv;
    SetRv(next);
    return Replace(type, it, std::move(next));
  }
  ++rv;
  json::value removed = object;
  SetRv(removed);
  return Erase(type, bucket, it, std::move(removed));
}

StatusOr<json::value> MemoryApi::State::List(const ApiRequest& request) {
  const ResourceType& type = *request.resource;
  StatusOr<Filter> filter = MakeFilter(request);
  if (!filter.ok()) return filter.status();
  json::array items;
  std::string next;
  std::string last_key;
  auto& bucket = objects[&type];
  auto it = request.list.continue_token.empty() ? bucket.begin()
                                                : bucket.upper_bound(request.list.continue_token);
  for (; it != bucket.end(); ++it) {
    if (!filter->Matches(*it->second)) continue;
    if (request.list.limit > 0 && static_cast<int64_t>(items.size()) >= request.list.limit) {
      next = last_key;
      break;
    }
    items.push_back(*it->second);
    last_key = it->first;
  }
  json::object meta{{"resourceVersion", std::to_string(rv)}};
  if (!next.empty()) meta["continue"] = next;
  return json::value(json::object{{"kind", std::string(type.kind) + "List"},
                                  {"apiVersion", type.ApiVersion()},
                                  {"metadata", std::move(meta)},
                                  {"items", std::move(items)}});
}

namespace {

class MemoryWatchStream final : public WatchStream {
 public:
  // `keep_alive` keeps the API's state (and the mutex the watcher points to) alive.
  MemoryWatchStream(std::shared_ptr<void> keep_alive, std::shared_ptr<Watcher> watcher)
      : keep_alive_(std::move(keep_alive)), watcher_(std::move(watcher)) {}
  ~MemoryWatchStream() override { Cancel(); }

  StatusOr<std::optional<WatchEvent>> Next() override {
    MutexLock lock(*watcher_->mu);
    watcher_->cv.Wait(lock, [&]() DRAPLANE_REQUIRES(*watcher_->mu) {
      return watcher_->cancelled || watcher_->closed || !watcher_->queue.empty();
    });
    if (watcher_->cancelled) return CancelledError("watch cancelled");
    if (!watcher_->queue.empty()) {
      WatchEvent event = std::move(watcher_->queue.front());
      watcher_->queue.pop_front();
      return std::optional<WatchEvent>(std::move(event));
    }
    return std::optional<WatchEvent>();
  }

  StatusOr<std::optional<WatchEvent>> Poll() override {
    MutexLock lock(*watcher_->mu);
    if (watcher_->cancelled) return CancelledError("watch cancelled");
    if (!watcher_->queue.empty()) {
      WatchEvent event = std::move(watcher_->queue.front());
      watcher_->queue.pop_front();
      return std::optional<WatchEvent>(std::move(event));
    }
    if (watcher_->closed) return UnavailableError("watch ended");
    return std::optional<WatchEvent>();
  }

  void Cancel() override {
    MutexLock lock(*watcher_->mu);
    watcher_->cancelled = true;
    watcher_->closed = true;
    watcher_->cv.NotifyAll();
  }

 private:
  std::shared_ptr<void> keep_alive_;
  std::shared_ptr<Watcher> watcher_;
};

}  // namespace

MemoryApi::MemoryApi(const Clock& clock, Random& random, MemoryApiOptions options)
    : state_(std::make_shared<State>(clock, random, options)) {}

MemoryApi::~MemoryApi() { CloseWatches(); }

Status MemoryApi::Admit(const ApiRequest& request) const {
  if (request.resource == nullptr) return InvalidArgumentError("request without a resource");
  Interceptor interceptor;
  {
    MutexLock lock(state_->mu);
    interceptor = state_->interceptor;
  }
  if (interceptor) {
    if (std::optional<Status> failure = interceptor(request)) return *failure;
  }
  return Status::Ok();
}

StatusOr<MemoryApi::Answer> MemoryApi::Execute(const ApiRequest& request, json::value body) {
  state_->counts[static_cast<size_t>(request.verb)].fetch_add(1);
  MutexLock lock(state_->mu);
  if (!state_->event_expiry.empty()) state_->ExpireEvents();
  const ResourceType& type = *request.resource;
  if (type.namespaced && request.namespace_.empty() && request.verb != Verb::kList &&
      request.verb != Verb::kCreate) {
    return InvalidArgumentError("a namespace is required for " + Qualified(type));
  }
  if (request.verb == Verb::kGet) {
    auto& bucket = state_->objects[&type];
    auto it = bucket.find(ObjectKey(type.namespaced ? request.namespace_ : "", request.name));
    if (it == bucket.end()) return state_->NotFound(type, request.name);
    return Answer{.stored = it->second};
  }
  if (request.verb == Verb::kList) {
    StatusOr<json::value> list = state_->List(request);
    if (!list.ok()) return list.status();
    return Answer{.list = std::move(*list)};
  }
  StatusOr<Stored> stored = state_->Write(request, std::move(body));
  if (!stored.ok()) return stored.status();
  // A caller that reads only whether the write succeeded gets no object.
  if (request.discard_response) return Answer{};
  return Answer{.stored = std::move(*stored)};
}

StatusOr<json::value> MemoryApi::Do(const ApiRequest& request) {
  DRAPLANE_RETURN_IF_ERROR(Admit(request));
  StatusOr<Answer> answer =
      Execute(request, StoresBody(request.verb) ? request.body : json::value());
  if (!answer.ok()) return answer.status();
  if (answer->stored == nullptr) return std::move(answer->list);
  return *answer->stored;
}

StatusOr<Stored> MemoryApi::DoShared(ApiRequest request) {
  DRAPLANE_RETURN_IF_ERROR(Admit(request));  // an interceptor may read the body: not taken yet
  json::value body;
  if (StoresBody(request.verb)) body = std::move(request.body);
  StatusOr<Answer> answer = Execute(request, std::move(body));
  if (!answer.ok()) return answer.status();
  if (answer->stored == nullptr && request.verb == Verb::kList) {
    return std::make_shared<const json::value>(std::move(answer->list));
  }
  return std::move(answer->stored);
}

StatusOr<std::unique_ptr<WatchStream>> MemoryApi::Watch(const ApiRequest& request) {
  if (request.resource == nullptr) return InvalidArgumentError("request without a resource");
  Interceptor interceptor;
  {
    MutexLock lock(state_->mu);
    interceptor = state_->interceptor;
  }
  if (interceptor) {
    if (std::optional<Status> failure = interceptor(request)) return *failure;
  }
  StatusOr<Filter> filter = MakeFilter(request);
  if (!filter.ok()) return filter.status();
  auto watcher = std::make_shared<Watcher>(&state_->mu);
  watcher->resource = request.resource;
  watcher->filter = std::move(*filter);
  watcher->bookmarks = request.list.allow_watch_bookmarks;
  MutexLock lock(state_->mu);
  state_->AssertGuards(*watcher);
  const std::string& from = request.list.resource_version;
  if (from.empty() || from == "0") {
    for (const auto& [key, object] : state_->objects[request.resource]) {
      if (watcher->filter.Matches(*object)) watcher->queue.push_back(WatchEvent{"ADDED", object});
    }
  } else {
    StatusOr<int64_t> parsed = api::ParseResourceVersion(from);
    if (!parsed.ok()) return parsed.status();
    const uint64_t start = static_cast<uint64_t>(*parsed);
    if (start + 1 < state_->log_floor) {
      return ExpiredError("too old resource version: " + from + " (" +
                          std::to_string(state_->log_floor - 1) + ")");
    }
    for (const LogEntry& entry : state_->log) {
      if (entry.rv > start) state_->Deliver(*watcher, entry);
    }
  }
  state_->watchers.push_back(watcher);
  return std::unique_ptr<WatchStream>(
      std::make_unique<MemoryWatchStream>(state_, std::move(watcher)));
}

void MemoryApi::SetInterceptor(Interceptor interceptor) {
  MutexLock lock(state_->mu);
  state_->interceptor = std::move(interceptor);
}

void MemoryApi::SendBookmarks() {
  MutexLock lock(state_->mu);
  for (const std::shared_ptr<Watcher>& w : state_->watchers) {
    state_->AssertGuards(*w);
    if (!w->bookmarks || w->closed) continue;
    json::object object{
        {"kind", w->resource->kind},
        {"apiVersion", w->resource->ApiVersion()},
        {"metadata", json::object{{"resourceVersion", std::to_string(state_->rv)}}}};
    w->queue.push_back(
        WatchEvent{"BOOKMARK", std::make_shared<const json::value>(std::move(object))});
    w->cv.NotifyAll();
  }
}

void MemoryApi::CloseWatches() {
  MutexLock lock(state_->mu);
  for (const std::shared_ptr<Watcher>& w : state_->watchers) {
    state_->AssertGuards(*w);
    w->closed = true;
    w->cv.NotifyAll();
  }
  state_->watchers.clear();
}

void MemoryApi::CompactLog() {
  MutexLock lock(state_->mu);
  state_->log.clear();
  state_->log_floor = state_->rv + 1;
}

int64_t MemoryApi::RequestCount(Verb verb) const {
  return state_->counts[static_cast<size_t>(verb)].load();
}

uint64_t MemoryApi::resource_version() const {
  MutexLock lock(state_->mu);
  return state_->rv;
}

}  // namespace draplane::client
