#include "client/memory_api.h"

#include <array>
#include <atomic>
#include <boost/json.hpp>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "api/codec/json.h"
#include "api/deletion.h"
#include "api/gen/core_v1_codec.h"
#include "api/labels/field_selector.h"
#include "api/labels/selector.h"
#include "api/meta/omit_empty.h"
#include "api/meta/resource_version.h"
#include "api/meta/time.h"
#include "api/patch/patch.h"
#include "api/pods.h"
#include "client/memory_quota.h"
#include "common/check.h"
#include "common/mutex.h"
#include "common/saturating.h"
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

  // Whether only the namespace (if any) decides: no JSON is needed to match.
  bool NamespaceOnly() const { return labels.Empty() && fields.empty(); }

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
  bool typed_events = false;
  std::deque<WatchEvent> queue DRAPLANE_GUARDED_BY(*mu);
  bool closed DRAPLANE_GUARDED_BY(*mu) = false;
  bool cancelled DRAPLANE_GUARDED_BY(*mu) = false;
  CondVar cv;
  // False only while the queue is empty and the watch open (set under `mu`, read without it):
  // Poll, asked of every informer each time one event is delivered, answers "nothing" without
  // taking the API's mutex.
  std::atomic<bool> ready{false};

  // After queueing an event or closing the watch.
  void Wake() DRAPLANE_REQUIRES(*mu) {
    ready.store(true, std::memory_order_release);
    cv.NotifyAll();
  }
};

// A stored version of an object: its JSON, or the typed object of a typed write (DoTyped), or
// both. Whichever is missing is made from the other on first use, under the API's mutex, and kept
// (the only change a version sees): what the version says never changes, so the watch log, the
// bucket and every watcher share it instead of copying it.
struct Version {
  mutable std::shared_ptr<const json::value> json;
  mutable std::shared_ptr<const void> typed;
  mutable const TypedKind* kind = nullptr;  // of `typed`
};
using Stored = std::shared_ptr<const Version>;

Stored StoredJson(json::value object) {
  auto v = std::make_shared<Version>();
  v->json = std::make_shared<const json::value>(std::move(object));
  return v;
}

Stored StoredTyped(std::shared_ptr<const void> object, const TypedKind& kind) {
  auto v = std::make_shared<Version>();
  v->typed = std::move(object);
  v->kind = &kind;
  return v;
}

// The version's JSON, encoded from its typed object on first use.
const std::shared_ptr<const json::value>& JsonOf(const Version& v) {
  if (v.json == nullptr) {
    v.json = std::make_shared<const json::value>(v.kind->encode(v.typed.get()));
  }
  return v.json;
}
const json::value& J(const Stored& v) { return *JsonOf(*v); }

// The version as a `kind` object, decoded on first use; null when its JSON is not one.
const void* TypedOf(const Version& v, const TypedKind& kind) {
  if (v.typed != nullptr && v.kind == &kind) return v.typed.get();
  if (v.typed != nullptr) return nullptr;
  StatusOr<std::shared_ptr<void>> decoded = kind.decode(*v.json);
  if (!decoded.ok()) return nullptr;
  v.typed = std::move(*decoded);
  v.kind = &kind;
  return v.typed.get();
}

// `object` as a Pod when `kind` is the Pod's; else null.
api::corev1::Pod* AsPod(const TypedKind& kind, void* object) {
  return &kind == &TypedKindOf<api::corev1::Pod>() ? static_cast<api::corev1::Pod*>(object)
                                                   : nullptr;
}
const api::corev1::Pod* AsPod(const Version& v) {
  return v.typed != nullptr ? AsPod(*v.kind, const_cast<void*>(v.typed.get())) : nullptr;
}

// Metadata facts of a version, read from whichever form it has.
std::string ResourceVersionOf(const Version& v) {
  if (v.typed != nullptr) return MetadataOf(*v.kind, v.typed.get()).resource_version;
  return MetaString(*v.json, "resourceVersion");
}

bool Matches(const Filter& filter, const Version& v) {
  if (filter.NamespaceOnly()) {
    if (filter.namespace_.empty()) return true;
    if (v.typed != nullptr) {
      return MetadataOf(*v.kind, v.typed.get()).namespace_ == filter.namespace_;
    }
  }
  return filter.Matches(*JsonOf(v));
}

// The event a watcher gets for `v`: its typed object where it has one, and its JSON unless the
// watcher takes typed events.
WatchEvent EventOf(const Watcher& w, std::string type, const Version& v) {
  WatchEvent event{std::move(type)};
  event.object = w.typed_events && v.typed != nullptr ? v.json : JsonOf(v);
  event.typed = v.typed;
  event.typed_kind = v.kind;
  return event;
}

struct LogEntry {
  uint64_t rv = 0;
  const ResourceType* resource = nullptr;
  std::string type;
  // Shared with the object's bucket while it is the stored version.
  Stored object;
  Stored old;  // MODIFIED only
};
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
  const api::Time& Now() DRAPLANE_REQUIRES(mu) {
    const Timestamp now = clock.Now();
    if (now_time.empty() || now != now_at) {
      now_at = now;
      now_time = api::Time::FromTimestamp(now);
    }
    return now_time;
  }
  Timestamp now_at DRAPLANE_GUARDED_BY(mu){};
  api::Time now_time DRAPLANE_GUARDED_BY(mu);

  std::string NewName(std::string prefix) {
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    if (prefix.size() > 58) prefix.resize(58);
    for (int i = 0; i < 5; ++i) prefix.push_back(kAlphabet[random.Uniform(sizeof kAlphabet - 1)]);
    return prefix;
  }

  Status NotFound(const ResourceType& type, std::string_view name) const {
    return NotFoundError(Qualified(type) + " \"" + std::string(name) + "\" not found");
  }

  // Create's rules for where and under which name an object goes, shared by the JSON and the
  // typed path. The namespace: the object's `ns` or the request's for a namespaced kind ("" for
  // others); an error when they differ, there is none, or it is being deleted.
  StatusOr<std::string> CreateNamespace(const ResourceType& type, const ApiRequest& request,
                                        std::string ns) const DRAPLANE_REQUIRES(mu) {
    if (!type.namespaced) return std::string();
    if (!request.namespace_.empty() && !ns.empty() && ns != request.namespace_) {
      return InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    if (ns.empty()) ns = request.namespace_;
    if (ns.empty()) return InvalidArgumentError("metadata.namespace: Required value");
    if (NamespaceTerminating(ns)) {
      return FailedPreconditionError("unable to create new content in namespace " + ns +
                                     " because it is being terminated");
    }
    return ns;
  }
  // The name: `name`, or one generated from `generate_name`.
  StatusOr<std::string> CreateName(std::string name, const std::string& generate_name) {
    if (!name.empty()) return name;
    if (generate_name.empty()) {
      return InvalidArgumentError(
          "metadata.name: Required value: name or generateName is required");
    }
    return NewName(generate_name);
  }

  // Update's preconditions on the body's resourceVersion and uid, shared by both paths.
  static Status CheckPreconditions(const ResourceType& type, const std::string& name,
                                   std::string_view body_rv, std::string_view old_rv,
                                   std::string_view body_uid, std::string_view old_uid) {
    if (!body_rv.empty() && body_rv != old_rv) {
      return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" + name +
                           "\": the object has been modified; please apply your changes to the "
                           "latest version and try again");
    }
    if (!body_uid.empty() && body_uid != old_uid) {
      return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" + name +
                           "\": Precondition failed: UID in precondition: " +
                           std::string(body_uid) + ", UID in object meta: " + std::string(old_uid));
    }
    return Status::Ok();
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
      bool now = Matches(w.filter, *entry.object);
      bool before = Matches(w.filter, *entry.old);
      if (!now && !before) return;
      if (now && !before) type = "ADDED";
      if (!now && before) type = "DELETED";
    } else if (!Matches(w.filter, *entry.object)) {
      return;
    }
    w.queue.push_back(EventOf(w, std::move(type), *entry.object));
    w.Wake();
  }

  void SetRv(json::value& object) DRAPLANE_REQUIRES(mu) {
    Meta(object)["resourceVersion"] = std::to_string(rv);
  }

  // Stores `next` as the new version of the object at `it` and emits MODIFIED with the previous
  // version as it was; then the quota writes that follow from it. Returns the stored value.
  Stored Replace(const ResourceType& type, Bucket::iterator it, json::value next)
      DRAPLANE_REQUIRES(mu) {
    return Replace(type, it, StoredJson(std::move(next)));
  }
  Stored Replace(const ResourceType& type, Bucket::iterator it, Stored next) DRAPLANE_REQUIRES(mu) {
    Stored previous = std::exchange(it->second, std::move(next));
    Stored stored = it->second;
    Emit(&type, "MODIFIED", stored, previous);
    if (options.event_ttl > Duration::zero() && IsEvent(type)) {
      RenewLease(type, it->first, ResourceVersionOf(*stored));
    }
    if (&type == &ResourceOf<api::corev1::ResourceQuota>()) {
      WriteQuotas(quotas.QuotaStored(J(stored), &J(previous)));
    } else if (std::string_view ns = NamespaceOfKey(type, it->first); quotas.Tracks(ns)) {
      WriteQuotas(quotas.Replaced(type, std::string(ns), it->first, J(previous), J(stored)));
    }
    return stored;
  }

  // Erases the object at `it` and emits DELETED with `removed`, its last version; then the
  // quotas take back what it used.
  Stored Erase(const ResourceType& type, Bucket& bucket, Bucket::iterator it, Stored last)
      DRAPLANE_REQUIRES(mu) {
    std::string key = it->first;
    bucket.erase(it);
    Emit(&type, "DELETED", last, nullptr);
    if (&type == &ResourceOf<api::corev1::ResourceQuota>()) quotas.QuotaRemoved(key);
    if (std::string_view ns = NamespaceOfKey(type, key); quotas.Tracks(ns)) {
      WriteQuotas(quotas.Removed(type, std::string(ns), key, J(last)));
    }
    return last;
  }

  // A copy of `v` at the current resourceVersion, in the form `v` has (typed when it is).
  Stored AtCurrentVersion(const Version& v) DRAPLANE_REQUIRES(mu) {
    if (v.typed != nullptr) {
      std::shared_ptr<void> copy = v.kind->copy(v.typed.get());
      v.kind->metadata(copy.get()).resource_version = std::to_string(rv);
      return StoredTyped(std::move(copy), *v.kind);
    }
    json::value copy = *v.json;
    SetRv(copy);
    return StoredJson(std::move(copy));
  }

  static bool IsEvent(const ResourceType& type) {
    return &type == &ResourceOf<api::corev1::Event>() ||
           &type == &ResourceOf<api::eventsv1::Event>();
  }
  // Create's rules by kind, for both paths: which kinds start at generation 1, and which drop the
  // status a create brings (a quota's is then synced from the objects here, not taken from a
  // dump).
  static bool HasGeneration(const ResourceType& type) {
    return !IsEvent(type) && &type != &ResourceOf<api::coordinationv1::Lease>();
  }
  static bool DropsStatusOnCreate(const ResourceType& type) {
    return &type == &ResourceOf<api::resourcev1::ResourceClaim>() ||
           &type == &ResourceOf<api::resourcev1::DeviceTaintRule>() ||
           &type == &ResourceOf<api::corev1::ResourceQuota>();
  }
  // The Event stored at `key` (version `object`) expires one TTL from now (Expiry).
  void RenewLease(const ResourceType& type, const std::string& key, std::string resource_version)
      DRAPLANE_REQUIRES(mu) {
    event_expiry.push_back(
        {clock.MonotonicNow() + options.event_ttl, &type, key, std::move(resource_version)});
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
      json::value next = J(it->second);
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
        visit(*type, it->first, J(it->second));
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
  // Create and Update (main resource or status) of a typed object (DoTyped), stored typed; in the
  // cases with rules of their own (kinds, quotas) through the JSON path.
  StatusOr<Stored> CreateTyped(const ApiRequest& request, std::shared_ptr<void> object,
                               const TypedKind& kind) DRAPLANE_REQUIRES(mu);
  StatusOr<Stored> UpdateTyped(const ApiRequest& request, std::shared_ptr<void> object,
                               const TypedKind& kind) DRAPLANE_REQUIRES(mu);
  // Commit's rules on typed objects: `body` (the whole object, or for `status` at least its
  // metadata and status) as the next version of `old`, the `kind` object stored at `it`.
  StatusOr<Stored> CommitTyped(const ResourceType& type, Bucket& bucket, Bucket::iterator it,
                               const void* old, std::shared_ptr<void> body, const TypedKind& kind,
                               const std::string& subresource, bool check_rv) DRAPLANE_REQUIRES(mu);
  // The end of a typed commit: `next`, the next version of `old` (the `kind` object stored at
  // `it`), stored unless it equals `old`, and the object removed when it is being deleted and
  // has no finalizers left.
  StatusOr<Stored> StoreTyped(const ResourceType& type, Bucket& bucket, Bucket::iterator it,
                              const void* old, std::shared_ptr<void> next, const TypedKind& kind)
      DRAPLANE_REQUIRES(mu);
  // A merge patch of the object at `it`, whose stored version is typed, applied to the typed
  // object (TypedKind::merge_patch_member); nullopt where only the JSON path can apply it.
  std::optional<StatusOr<Stored>> PatchTyped(const ApiRequest& request, Bucket& bucket,
                                             Bucket::iterator it) DRAPLANE_REQUIRES(mu);
  // Whether a typed write of `type` in namespace `ns` has rules beyond the generic ones (and
  // Create's, Delete's and Bind's for Pods, which the typed path has too).
  bool NeedsJsonPath(const ResourceType& type, std::string_view ns) DRAPLANE_REQUIRES(mu) {
    return &type == &ResourceOf<api::corev1::Namespace>() ||
           &type == &ResourceOf<api::corev1::ResourceQuota>() ||
           (type.namespaced && quotas.Tracks(ns));
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
  return found != it->second.end() && MetaOf(J(found->second)) != nullptr &&
         MetaOf(J(found->second))->if_contains("deletionTimestamp") != nullptr;
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
  StatusOr<std::string> created_ns = CreateNamespace(type, request, Str(&meta, "namespace"));
  if (!created_ns.ok()) return created_ns.status();
  const std::string& ns = *created_ns;
  if (type.namespaced) {
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  StatusOr<std::string> created_name = CreateName(Str(&meta, "name"), Str(&meta, "generateName"));
  if (!created_name.ok()) return created_name.status();
  const std::string& name = *created_name;
  meta["name"] = name;
  std::string key = ObjectKey(ns, name);
  auto& bucket = objects[&type];
  if (bucket.contains(key)) {
    return AlreadyExistsError(Qualified(type) + " \"" + name + "\" already exists");
  }
  json::object& root = object.as_object();
  api::OmitEmptyFields(root);
  const bool event = IsEvent(type);
  meta["uid"] = event ? event_random->NewUuid() : random.NewUuid();
  meta["creationTimestamp"] = Now().text();
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (HasGeneration(type)) {
    meta["generation"] = 1;
  }
  if (&type == &ResourceOf<api::corev1::Pod>()) {
    json::object& status = EnsureObject(root["status"]);
    if (Str(&status, "phase").empty()) status["phase"] = "Pending";
  } else if (DropsStatusOnCreate(type)) {
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
  if (options.event_ttl > Duration::zero() && event) RenewLease(type, key, std::to_string(rv));
  auto [it, inserted] = bucket.try_emplace(key, StoredJson(std::move(object)));
  Stored stored = it->second;
  Emit(&type, "ADDED", stored, nullptr);
  if (&type == &ResourceOf<api::corev1::ResourceQuota>()) {
    WriteQuotas(quotas.QuotaStored(J(stored), nullptr));
  }
  return stored;
}

StatusOr<Stored> MemoryApi::State::CreateTyped(const ApiRequest& request,
                                               std::shared_ptr<void> object,
                                               const TypedKind& kind) {
  const ResourceType& type = *request.resource;
  api::metav1::ObjectMeta& meta = kind.metadata(object.get());
  if (!request.subresource.empty() ||
      NeedsJsonPath(type, meta.namespace_.empty() ? request.namespace_ : meta.namespace_)) {
    return Create(request, kind.encode(object.get()));
  }
  // Create's rules, on the typed object.
  kind.set_type_fields(object.get());
  StatusOr<std::string> ns = CreateNamespace(type, request, meta.namespace_);
  if (!ns.ok()) return ns.status();
  meta.namespace_ = *ns;
  StatusOr<std::string> name = CreateName(meta.name, meta.generate_name);
  if (!name.ok()) return name.status();
  meta.name = std::move(*name);
  std::string key = ObjectKey(*ns, meta.name);
  auto& bucket = objects[&type];
  if (bucket.contains(key)) {
    return AlreadyExistsError(Qualified(type) + " \"" + meta.name + "\" already exists");
  }
  const bool event = IsEvent(type);
  meta.uid = event ? event_random->NewUuid() : random.NewUuid();
  meta.creation_timestamp = Now();
  meta.deletion_timestamp.reset();
  meta.deletion_grace_period_seconds.reset();
  if (HasGeneration(type)) meta.generation = 1;
  if (DropsStatusOnCreate(type)) kind.clear_status(object.get());
  if (api::corev1::Pod* pod = AsPod(kind, object.get());
      pod != nullptr && pod->status.phase.empty()) {
    pod->status.phase = "Pending";
  }
  ++rv;
  meta.resource_version = std::to_string(rv);
  if (options.event_ttl > Duration::zero() && event) RenewLease(type, key, meta.resource_version);
  auto [it, inserted] = bucket.try_emplace(key, StoredTyped(std::move(object), kind));
  Stored stored = it->second;
  Emit(&type, "ADDED", stored, nullptr);
  return stored;
}

StatusOr<Stored> MemoryApi::State::UpdateTyped(const ApiRequest& request,
                                               std::shared_ptr<void> object,
                                               const TypedKind& kind) {
  const ResourceType& type = *request.resource;
  std::string key = ObjectKey(type.namespaced ? request.namespace_ : "", request.name);
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  if (it == bucket.end()) return NotFound(type, request.name);
  const std::string& subresource = request.subresource;
  const void* old = (subresource.empty() || (subresource == "status" && kind.has_status)) &&
                            !NeedsJsonPath(type, request.namespace_)
                        ? TypedOf(*it->second, kind)
                        : nullptr;
  if (old == nullptr) {
    return Commit(type, key, kind.encode(object.get()), subresource, /*check_rv=*/true);
  }
  return CommitTyped(type, bucket, it, old, std::move(object), kind, subresource,
                     /*check_rv=*/true);
}

StatusOr<Stored> MemoryApi::State::CommitTyped(const ResourceType& type, Bucket& bucket,
                                               Bucket::iterator it, const void* old,
                                               std::shared_ptr<void> object, const TypedKind& kind,
                                               const std::string& subresource, bool check_rv) {
  const api::metav1::ObjectMeta& old_meta = MetadataOf(kind, old);
  api::metav1::ObjectMeta& body_meta = kind.metadata(object.get());
  DRAPLANE_RETURN_IF_ERROR(
      CheckPreconditions(type, old_meta.name, check_rv ? body_meta.resource_version : std::string(),
                         old_meta.resource_version, body_meta.uid, old_meta.uid));
  std::shared_ptr<void> next;
  if (subresource == "status") {
    // The old object but its status: the body's.
    next = std::move(object);
    kind.copy_all_but_status(next.get(), old);
  } else {
    next = std::move(object);
    kind.set_type_fields(next.get());
    if (type.has_status && kind.has_status) kind.copy_status(next.get(), old);
    api::metav1::ObjectMeta& meta = kind.metadata(next.get());
    meta.name = old_meta.name;
    meta.namespace_ = old_meta.namespace_;
    meta.uid = old_meta.uid;
    meta.creation_timestamp = old_meta.creation_timestamp;
    meta.deletion_timestamp = old_meta.deletion_timestamp;
    meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
    meta.generation = old_meta.generation;
    if (meta.generation != 0 && !kind.spec_equal(old, next.get())) ++meta.generation;
  }
  return StoreTyped(type, bucket, it, old, std::move(next), kind);
}

StatusOr<Stored> MemoryApi::State::StoreTyped(const ResourceType& type, Bucket& bucket,
                                              Bucket::iterator it, const void* old,
                                              std::shared_ptr<void> next, const TypedKind& kind) {
  api::metav1::ObjectMeta& meta = kind.metadata(next.get());
  // A no-op write leaves the object (and its resourceVersion) alone, as the API server does.
  meta.resource_version = MetadataOf(kind, old).resource_version;
  if (kind.status_equal(next.get(), old) && kind.equal(next.get(), old)) return it->second;

  ++rv;
  meta.resource_version = std::to_string(rv);
  Stored stored = StoredTyped(std::move(next), kind);
  const api::metav1::ObjectMeta& old_meta = MetadataOf(kind, old);
  if (api::DeletesDuringUpdate(old_meta.deletion_timestamp.has_value(),
                               old_meta.deletion_grace_period_seconds, !meta.finalizers.empty())) {
    return Erase(type, bucket, it, std::move(stored));
  }
  return Replace(type, it, std::move(stored));
}

void MemoryApi::State::ExpireEvents() {
  Duration now = clock.MonotonicNow();
  while (!event_expiry.empty() && event_expiry.front().at <= now) {
    Expiry e = std::move(event_expiry.front());
    event_expiry.pop_front();
    auto& bucket = objects[e.type];
    auto it = bucket.find(e.key);
    if (it == bucket.end() || ResourceVersionOf(*it->second) != e.resource_version) {
      continue;  // gone, or written since: a later lease decides
    }
    ++rv;
    Stored removed = AtCurrentVersion(*it->second);
    Erase(*e.type, bucket, it, std::move(removed));
  }
}

StatusOr<Stored> MemoryApi::State::Bind(const ApiRequest& request, const json::value& body) {
  const ResourceType& type = *request.resource;
  auto& bucket = objects[&type];
  auto it = bucket.find(ObjectKey(request.namespace_, request.name));
  if (it == bucket.end()) return NotFound(type, request.name);
  // The Pod typed, as the typed writes have it (decoded once where it is JSON), unless an
  // interceptor sends every write through the JSON path.
  const TypedKind& pod_kind = TypedKindOf<api::corev1::Pod>();
  const auto* typed =
      interceptor ? nullptr : static_cast<const api::corev1::Pod*>(TypedOf(*it->second, pod_kind));
  const std::string uid = typed != nullptr ? typed->metadata.uid : MetaString(J(it->second), "uid");
  const bool deleting = typed != nullptr
                            ? typed->metadata.deletion_timestamp.has_value()
                            : MetaOf(J(it->second))->if_contains("deletionTimestamp") != nullptr;
  const std::string current =
      typed != nullptr ? typed->spec.node_name : Str(Child(J(it->second), "spec"), "nodeName");
  std::string binding_uid = MetaString(body, "uid");
  if (!binding_uid.empty() && binding_uid != uid) {
    return ConflictError("Operation cannot be fulfilled on pods \"" + request.name +
                         "\": Precondition failed: UID in precondition: " + binding_uid +
                         ", UID in object meta: " + uid);
  }
  std::string binding_rv = MetaString(body, "resourceVersion");
  if (const std::string rv = ResourceVersionOf(*it->second);
      !binding_rv.empty() && binding_rv != rv) {
    return ConflictError("Operation cannot be fulfilled on pods \"" + request.name +
                         "\": Precondition failed: ResourceVersion in precondition: " + binding_rv +
                         ", ResourceVersion in object meta: " + rv);
  }
  if (deleting) {
    return ConflictError("Operation cannot be fulfilled on pods/binding \"" + request.name +
                         "\": pod " + request.name +
                         " is being deleted, cannot be assigned to a host");
  }
  const json::object* target = Child(body, "target");
  std::string node = Str(target, "name");
  if (node.empty()) return InvalidArgumentError("target.name: Required value");
  if (!current.empty()) {
    return ConflictError("Operation cannot be fulfilled on pods/binding \"" + request.name +
                         "\": pod " + request.name + " is already assigned to node \"" + current +
                         "\"");
  }
  // The Binding's string annotations go onto the Pod, as upstream's BindingREST sets them.
  std::vector<std::pair<std::string, std::string>> annotations;
  if (const json::object* meta = MetaOf(body)) {
    if (const json::value* a = meta->if_contains("annotations"); a != nullptr && a->is_object()) {
      for (const auto& [key, value] : a->as_object()) {
        if (value.is_string()) annotations.emplace_back(key, value.as_string());
      }
    }
  }
  ++rv;
  if (typed != nullptr) {
    std::shared_ptr<void> copy = pod_kind.copy(typed);
    auto& pod = *static_cast<api::corev1::Pod*>(copy.get());
    pod.spec.node_name = node;
    for (auto& [key, value] : annotations) pod.metadata.annotations[key] = std::move(value);
    api::corev1::PodCondition scheduled;
    scheduled.type = "PodScheduled";
    scheduled.status = "True";
    scheduled.unknown.Add("lastProbeTime", nullptr);  // as the JSON path writes it: null
    scheduled.last_transition_time = Now();
    bool replaced = false;
    for (api::corev1::PodCondition& c : pod.status.conditions) {
      if (c.type == "PodScheduled") {
        c = scheduled;
        replaced = true;
      }
    }
    if (!replaced) pod.status.conditions.push_back(std::move(scheduled));
    pod.metadata.resource_version = std::to_string(rv);
    Replace(type, it, StoredTyped(std::move(copy), pod_kind));
  } else {
    json::value pod = J(it->second);
    EnsureObject(pod.as_object()["spec"])["nodeName"] = node;
    for (auto& [key, value] : annotations) {
      EnsureObject(Meta(pod)["annotations"])[key] = std::move(value);
    }
    api::SetPodScheduledByBinding(EnsureObject(pod.as_object()["status"]), Now().text());
    SetRv(pod);
    Replace(type, it, std::move(pod));
  }
  return StoredJson(
      json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}});
}

StatusOr<Stored> MemoryApi::State::Commit(const ResourceType& type, const std::string& key,
                                          json::value candidate, const std::string& subresource,
                                          bool check_rv) {
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  const json::value& old = J(it->second);
  if (!candidate.is_object()) return InvalidArgumentError("the body must be a JSON object");
  DRAPLANE_RETURN_IF_ERROR(CheckPreconditions(
      type, MetaString(old, "name"),
      check_rv ? MetaString(candidate, "resourceVersion") : std::string(),
      MetaString(old, "resourceVersion"), MetaString(candidate, "uid"), MetaString(old, "uid")));
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
  api::OmitEmptyFields(next.as_object());
  // A no-op write leaves the object (and its resourceVersion) alone, as the API server does.
  Meta(next)["resourceVersion"] = MetaString(old, "resourceVersion");
  if (api::codec::JsonEqual(next, old)) return it->second;

  ++rv;
  SetRv(next);
  bool finalizers = HasNonEmptyArray(MetaOf(next), "finalizers");
  if (&type == &ResourceOf<api::corev1::Namespace>()) {
    finalizers = finalizers || HasNonEmptyArray(Child(next, "spec"), "finalizers");
  }
  if (api::DeletesDuringUpdate(old.as_object(), finalizers)) {
    return Erase(type, bucket, it, StoredJson(std::move(next)));
  }
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
  if (format == api::patch::PatchFormat::kMerge) {
    if (std::optional<StatusOr<Stored>> typed = PatchTyped(request, bucket, it)) {
      return std::move(*typed);
    }
  }
  std::string old_rv = ResourceVersionOf(*it->second);
  StatusOr<json::value> patched =
      api::patch::ApplyPatch(J(it->second), request.body, format, type.kind);
  if (!patched.ok()) return api::patch::AsClientError(patched.status());
  json::value candidate = std::move(*patched);
  // A resourceVersion in the patch is a precondition; otherwise the patch applies to the
  // current object.
  bool check = MetaString(candidate, "resourceVersion") != old_rv;
  return Commit(type, key, std::move(candidate), request.subresource, check);
}

std::optional<StatusOr<Stored>> MemoryApi::State::PatchTyped(const ApiRequest& request,
                                                             Bucket& bucket, Bucket::iterator it) {
  const ResourceType& type = *request.resource;
  const Version& version = *it->second;
  const std::string& subresource = request.subresource;
  // An interceptor sends every write through the JSON path (as DoTyped does).
  if (interceptor || version.typed == nullptr || !request.body.is_object() ||
      NeedsJsonPath(type, request.namespace_) ||
      !(subresource.empty() || (subresource == "status" && version.kind->has_status))) {
    return std::nullopt;
  }
  const TypedKind& kind = *version.kind;
  const void* old = version.typed.get();
  const api::metav1::ObjectMeta& old_meta = MetadataOf(kind, old);
  const json::object& patch = request.body.as_object();
  if (subresource == "status") {
    // Commit keeps all of the old object but its status, so the patched status goes into a copy
    // of it, and the patched metadata only gives the preconditions.
    api::metav1::ObjectMeta patched_meta;
    const api::metav1::ObjectMeta* body_meta = &old_meta;
    if (const json::value* metadata = patch.if_contains("metadata")) {
      patched_meta = old_meta;
      if (!MergePatchMetadata(patched_meta, *metadata)) return std::nullopt;
      body_meta = &patched_meta;
    }
    std::shared_ptr<void> next = kind.copy(old);
    if (const json::value* status = patch.if_contains("status");
        status != nullptr && !kind.merge_patch_member(next.get(), "status", *status)) {
      return std::nullopt;
    }
    // A resourceVersion in the patch is a precondition; otherwise the patch applies to the
    // current object.
    const bool check = body_meta->resource_version != old_meta.resource_version;
    DRAPLANE_RETURN_IF_ERROR(
        CheckPreconditions(type, old_meta.name, check ? body_meta->resource_version : std::string(),
                           old_meta.resource_version, body_meta->uid, old_meta.uid));
    return StoreTyped(type, bucket, it, old, std::move(next), kind);
  }
  // The patched object, of whose members Commit reads all but the status and the type fields it
  // sets.
  std::shared_ptr<void> candidate = kind.copy(old);
  for (const json::key_value_pair& member : patch) {
    const std::string_view name = member.key();
    if (name == "apiVersion" || name == "kind" || (name == "status" && type.has_status)) continue;
    if (!kind.merge_patch_member(candidate.get(), name, member.value())) return std::nullopt;
  }
  const bool check =
      MetadataOf(kind, candidate.get()).resource_version != old_meta.resource_version;
  // `version` stays alive in `it` until the commit replaces it, which keeps it as the previous
  // version.
  return CommitTyped(type, bucket, it, old, std::move(candidate), kind, subresource, check);
}

StatusOr<Stored> MemoryApi::State::Delete(const ApiRequest& request) {
  const ResourceType& type = *request.resource;
  std::string key = ObjectKey(type.namespaced ? request.namespace_ : "", request.name);
  auto& bucket = objects[&type];
  auto it = bucket.find(key);
  if (it == bucket.end()) return NotFound(type, request.name);
  const Version& version = *it->second;
  // The metadata this needs, from the typed object where the version has one (kinds whose
  // deletion reads more than metadata use the JSON).
  const bool typed = version.typed != nullptr && &type != &ResourceOf<api::corev1::Namespace>();
  std::string uid, resource_version;
  bool already_deleting = false;
  bool finalizers = false;
  if (typed) {
    const api::metav1::ObjectMeta& meta = MetadataOf(*version.kind, version.typed.get());
    uid = meta.uid;
    resource_version = meta.resource_version;
    already_deleting = meta.deletion_timestamp.has_value();
    finalizers = !meta.finalizers.empty();
  } else {
    const json::object* meta = MetaOf(J(it->second));
    uid = Str(meta, "uid");
    resource_version = Str(meta, "resourceVersion");
    already_deleting = meta->if_contains("deletionTimestamp") != nullptr;
    finalizers = HasNonEmptyArray(meta, "finalizers");
  }
  const DeleteOptions& options = request.delete_options;
  if (!options.precondition_uid.empty() && options.precondition_uid != uid) {
    return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" +
                         request.name + "\": Precondition failed: UID in precondition: " +
                         options.precondition_uid + ", UID in object meta: " + uid);
  }
  if (!options.precondition_resource_version.empty() &&
      options.precondition_resource_version != resource_version) {
    return ConflictError("Operation cannot be fulfilled on " + Qualified(type) + " \"" +
                         request.name +
                         "\": Precondition failed: ResourceVersion in precondition: " +
                         options.precondition_resource_version +
                         ", ResourceVersion in object meta: " + resource_version);
  }
  // Pods bound to a node end gracefully unless terminal or the grace period is 0
  // (podStrategy.CheckGracefulDelete); the kubelet finishes the deletion.
  bool graceful = false;
  int64_t grace = 0;
  if (&type == &ResourceOf<api::corev1::Namespace>()) {
    finalizers = finalizers || HasNonEmptyArray(Child(J(it->second), "spec"), "finalizers");
  } else if (const api::corev1::Pod* pod = typed ? AsPod(version) : nullptr) {
    grace = options.grace_period_seconds.value_or(
        pod->spec.termination_grace_period_seconds.value_or(30));
    graceful = !pod->spec.node_name.empty() && pod->status.phase != "Succeeded" &&
               pod->status.phase != "Failed" && grace > 0;
  } else if (&type == &ResourceOf<api::corev1::Pod>()) {
    const json::value& object = J(it->second);
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
    const api::Time deletion = api::Time::FromTimestamp(AddSeconds(clock.Now(), grace));
    if (typed) {
      std::shared_ptr<void> next = version.kind->copy(version.typed.get());
      api::metav1::ObjectMeta& m = version.kind->metadata(next.get());
      m.deletion_timestamp = deletion;
      m.deletion_grace_period_seconds = grace;
      ++rv;
      m.resource_version = std::to_string(rv);
      return Replace(type, it, StoredTyped(std::move(next), *version.kind));
    }
    json::value next = J(it->second);
    json::object& m = Meta(next);
    m["deletionTimestamp"] = deletion.text();
    m["deletionGracePeriodSeconds"] = grace;
    if (&type == &ResourceOf<api::corev1::Namespace>()) {
      EnsureObject(next.as_object()["status"])["phase"] = "Terminating";
    }
    ++rv;
    SetRv(next);
    return Replace(type, it, std::move(next));
  }
  ++rv;
  Stored removed = AtCurrentVersion(version);
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
    if (!Matches(*filter, *it->second)) continue;
    if (request.list.limit > 0 && static_cast<int64_t>(items.size()) >= request.list.limit) {
      next = last_key;
      break;
    }
    items.push_back(J(it->second));
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
    if (!watcher_->ready.load(std::memory_order_acquire)) return std::optional<WatchEvent>();
    MutexLock lock(*watcher_->mu);
    if (watcher_->cancelled) return CancelledError("watch cancelled");
    if (!watcher_->queue.empty()) {
      WatchEvent event = std::move(watcher_->queue.front());
      watcher_->queue.pop_front();
      return std::optional<WatchEvent>(std::move(event));
    }
    if (watcher_->closed) return UnavailableError("watch ended");
    watcher_->ready.store(false, std::memory_order_relaxed);
    return std::optional<WatchEvent>();
  }

  bool Idle() const override { return !watcher_->ready.load(std::memory_order_acquire); }

  void Cancel() override {
    MutexLock lock(*watcher_->mu);
    watcher_->cancelled = true;
    watcher_->closed = true;
    watcher_->Wake();
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

StatusOr<MemoryApi::Answer> MemoryApi::Execute(const ApiRequest& request, json::value body,
                                               std::shared_ptr<void> typed_body,
                                               const TypedKind* kind) {
  state_->counts[static_cast<size_t>(request.verb)].fetch_add(1);
  MutexLock lock(state_->mu);
  if (!state_->event_expiry.empty()) state_->ExpireEvents();
  const ResourceType& type = *request.resource;
  if (type.namespaced && request.namespace_.empty() && request.verb != Verb::kList &&
      request.verb != Verb::kCreate) {
    return InvalidArgumentError("a namespace is required for " + Qualified(type));
  }
  // The answer in the form the caller reads: typed for DoTyped, else JSON.
  auto answer = [&](const Stored& stored) DRAPLANE_REQUIRES(state_->mu) {
    if (kind == nullptr) return Answer{.stored = JsonOf(*stored)};
    if (TypedOf(*stored, *kind) == nullptr) return Answer{};
    return Answer{.typed = stored->typed};
  };
  if (request.verb == Verb::kGet) {
    auto& bucket = state_->objects[&type];
    auto it = bucket.find(ObjectKey(type.namespaced ? request.namespace_ : "", request.name));
    if (it == bucket.end()) return state_->NotFound(type, request.name);
    return answer(it->second);
  }
  if (request.verb == Verb::kList) {
    StatusOr<json::value> list = state_->List(request);
    if (!list.ok()) return list.status();
    return Answer{.list = std::move(*list)};
  }
  StatusOr<Stored> stored = typed_body == nullptr ? state_->Write(request, std::move(body))
                            : request.verb == Verb::kCreate
                                ? state_->CreateTyped(request, std::move(typed_body), *kind)
                                : state_->UpdateTyped(request, std::move(typed_body), *kind);
  if (!stored.ok()) return stored.status();
  // A caller that reads only whether the write succeeded gets no object.
  if (request.discard_response) return Answer{};
  return answer(*stored);
}

StatusOr<json::value> MemoryApi::Do(const ApiRequest& request) {
  DRAPLANE_RETURN_IF_ERROR(Admit(request));
  StatusOr<Answer> answer =
      Execute(request, StoresBody(request.verb) ? request.body : json::value());
  if (!answer.ok()) return answer.status();
  if (answer->stored == nullptr) return std::move(answer->list);
  return *answer->stored;
}

StatusOr<std::shared_ptr<const json::value>> MemoryApi::DoShared(ApiRequest&& request) {
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

StatusOr<std::shared_ptr<const void>> MemoryApi::DoTyped(ApiRequest&& request,
                                                         std::shared_ptr<void> object,
                                                         const TypedKind& kind) {
  if (request.verb != Verb::kCreate && request.verb != Verb::kUpdate) {
    return InvalidArgumentError("a typed body is only for a create or an update");
  }
  bool intercepted;
  {
    MutexLock lock(state_->mu);
    intercepted = static_cast<bool>(state_->interceptor);
  }
  // An interceptor may read the body: it gets the JSON.
  if (intercepted) return ApiClient::DoTyped(std::move(request), std::move(object), kind);
  if (request.resource == nullptr) return InvalidArgumentError("request without a resource");
  StatusOr<Answer> answer = Execute(request, json::value(), std::move(object), &kind);
  if (!answer.ok()) return answer.status();
  return std::move(answer->typed);
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
  watcher->typed_events = request.list.typed_events;
  MutexLock lock(state_->mu);
  state_->AssertGuards(*watcher);
  const std::string& from = request.list.resource_version;
  if (from.empty() || from == "0") {
    for (const auto& [key, object] : state_->objects[request.resource]) {
      if (Matches(watcher->filter, *object)) {
        watcher->queue.push_back(EventOf(*watcher, "ADDED", *object));
      }
    }
    if (!watcher->queue.empty()) watcher->Wake();
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
    w->Wake();
  }
}

void MemoryApi::CloseWatches() {
  MutexLock lock(state_->mu);
  for (const std::shared_ptr<Watcher>& w : state_->watchers) {
    state_->AssertGuards(*w);
    w->closed = true;
    w->Wake();
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
