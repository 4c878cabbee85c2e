// The object store: revisioned, watchable, durable key-value storage with Kubernetes semantics
// (docs/design/store.md).
//
// Every object lives under a `Key` (resource, namespace, name) and holds opaque bytes (the API
// server's JSON encoding). One global revision counter orders every write: each successful
// Create, Update or Delete gets a revision strictly greater than every earlier one, and the
// object's `revision` is its Kubernetes `resourceVersion`. Reads are linearizable: a read that
// starts after a write was acknowledged sees it. Watches deliver every change after a start
// revision exactly once, in revision order.
//
// Three backends implement the interface and pass one conformance suite (tests/store/):
//   memory://              MVCC map with bounded history; tests and the simulator.
//   sqlite:///path/to/db   the embedded default; durable on acknowledgement, group commit.
//   etcd://host:port[,...] a real etcd v3 cluster through its JSON gateway.
//
// Thread-safety: a Store is safe for concurrent use by any number of threads; so is a Watcher.
// Ownership: OpenStore hands the caller the Store. Objects are immutable and shared
// (`ObjectPtr`). A Watcher may outlive its Store; it then ends with kCancelled.
//
// Errors (the closed set of common/status.h), by operation:
//   InvalidArgument     a malformed key, resource, continue token, URL or option; a value over
//                       StoreOptions::max_value_bytes (with a `FieldValueTooLong` cause).
//   NotFound            Get/Update/Delete of an absent object.
//   AlreadyExists       Create of a present object.
//   Conflict            a revision precondition does not hold.
//   Expired             a revision older than the store retains (compacted) was asked for:
//                       List/continue token at a compacted revision, Watch from one. The API
//                       server maps it to 410 Gone.
//   DeadlineExceeded    a List at a revision newer than the store's current one (kube-apiserver:
//                       "Too large resource version", 504 with Retry-After).
//   ResourceExhausted   a Watcher whose consumer fell more than its queue limit behind.
//   Unavailable         the backend cannot be reached (etcd down, I/O error).
//   FailedPrecondition  a SQLite file with another schema version, or not a draplane store.
//   Cancelled           a Watcher after Cancel() or after its Store closed.
//   Internal            a backend answered something that breaks its contract.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::store {

// A position in the store's history. Revisions start at 1; 0 means "none" or "now" where an
// option says so.
using Revision = int64_t;

// Where an object lives.
//   resource  "<group>/<plural>", lower case letters, digits, '.' and '-', exactly one '/';
//             the legacy core group is spelled "core" ("core/pods",
//             "resource.k8s.io/resourceclaims").
//   ns        the namespace; empty for cluster-scoped objects. No '/' and no NUL.
//   name      non-empty; no '/' and no NUL.
// The store checks only what keeps keys unambiguous; name rules are the API server's.
struct Key {
  std::string resource;
  std::string ns;
  std::string name;

  friend auto operator<=>(const Key&, const Key&) = default;
};

// For hash maps keyed by Key (lookups on hot paths: one hash instead of a tree walk that compares
// the shared resource and namespace prefixes at every level).
struct KeyHash {
  size_t operator()(const Key& key) const {
    std::hash<std::string_view> h;
    size_t seed = h(key.resource);
    seed ^= h(key.ns) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    seed ^= h(key.name) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    return seed;
  }
};

// "resource/ns/name" (or "resource/name" when cluster-scoped), for messages.
std::string KeyToString(const Key& key);

// A stored object. `value` is exactly the bytes last written; the store never rewrites them (the
// metadata helpers in store/object_meta.h stamp `resourceVersion` and friends when asked).
struct Object {
  Key key;
  std::string value;
  // The revision of the last write to the object: its resourceVersion. In the result of Delete
  // and in a DELETED watch event it is the revision of the delete itself, as in kube-apiserver.
  Revision revision = 0;
  // The revision of the write that created the object.
  Revision create_revision = 0;
};
using ObjectPtr = std::shared_ptr<const Object>;

// A write precondition: when `revision` is not 0 the stored object's revision must equal it,
// else the write fails with Conflict (kube-apiserver: Preconditions.ResourceVersion).
struct Preconditions {
  Revision revision = 0;
};

struct ListOptions {
  // Only objects in this namespace; empty lists every namespace (and cluster-scoped objects).
  std::string ns{};
  // At most this many objects per page; 0 means no limit.
  int64_t limit = 0;
  // The token a previous page returned; continues that list at the same snapshot revision. The
  // token must come from a list of the same resource and namespace.
  std::string continue_token{};
  // 0 lists the latest state; otherwise the state exactly at this revision (a snapshot read).
  // Ignored when `continue_token` is set (the token carries its snapshot revision).
  Revision revision = 0;
};

struct ListResult {
  // Sorted by key bytes: namespace, then name.
  std::vector<ObjectPtr> objects;
  // The snapshot revision this page reflects (the list's resourceVersion).
  Revision revision = 0;
  // Non-empty when more objects follow; pass it back in ListOptions::continue_token.
  std::string continue_token;
};

// The continue token that resumes `token`'s list where it stopped, at the newest revision: what
// a list whose token's revision was compacted away offers (upstream's token with rv -1). Empty
// when `token` is malformed.
std::string ContinueTokenAtNewest(std::string_view token);

// Called by GuaranteedUpdate with the current object (nullptr when it does not exist and
// `allow_create` is set). Returns the new value (the current value, unchanged, to skip the
// write) or an error to stop, which GuaranteedUpdate returns as is.
using UpdateFunction = std::function<StatusOr<std::string>(const Object* current)>;

struct GuaranteedUpdateOptions {
  // Checked against the current object on every attempt; a mismatch returns Conflict.
  Preconditions preconditions{};
  // When the object is absent, call the function with nullptr and create it, instead of
  // returning NotFound (kube-apiserver: ignoreNotFound / AllowCreateOnUpdate).
  bool allow_create = false;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kBookmark;
  // The revision of the write; for a bookmark, a revision up to which every event matching the
  // watch has been delivered (resume from it).
  Revision revision = 0;
  // kAdded/kModified: the new state. kDeleted: the last state, with `revision` set to the
  // delete's revision. kBookmark: nullptr.
  ObjectPtr object;
  // kModified: the state before the write. kDeleted: the last state as it was stored (its own
  // revision). Otherwise nullptr. The API server needs it to turn an update that stops matching
  // a selector into a DELETED event for that watcher.
  ObjectPtr prev_object;
};

std::string_view WatchEventTypeName(WatchEvent::Type type);  // "ADDED", ... "BOOKMARK"

struct WatchOptions {
  // Only objects in this namespace; empty watches every namespace.
  std::string ns{};
  // Only the object with this name; empty watches every name (fieldSelector metadata.name).
  std::string name{};
  // Deliver the events with a revision greater than this one. 0 means "from now": the store's
  // current revision at the time of the call. A revision the store no longer retains → Expired.
  Revision revision = 0;
  // How many undelivered events may queue up before the watch is ended with ResourceExhausted
  // (kube-apiserver closes watchers that cannot keep up; the client resumes from the last
  // revision it saw). 0 means StoreOptions::watch_queue_limit. The backlog replayed when the
  // watch starts is not counted against the limit.
  size_t queue_limit = 0;
  // Called when the queue turns from empty to non-empty and when the store ends the watch. It
  // runs on a store thread with no store lock held: it must be quick and must not block (post to
  // your event loop). It may call any method of the Watcher. No call starts after Cancel()
  // returns.
  std::function<void()> notify{};
};

namespace internal {
class WatchState;
}  // namespace internal

// One watch: a stream of events for one resource. Destroying it cancels it.
//
// Usage from an event loop (no thread per watch):
//   options.notify = [loop, id] { loop->Post([id] { Drain(id); }); };
//   ... Drain: `while (true) { events.clear(); Status s = watch->Poll(&events, 256);
//               if (!s.ok()) { end the stream with s; break; }
//               if (events.empty()) break; send(events); }`
// Usage from a plain thread: `for (;;) { auto event = watch->Next(); if (!event.ok()) ...; }`.
class Watcher {
 public:
  explicit Watcher(std::shared_ptr<internal::WatchState> state);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Appends up to `max_events` queued events to `*out` without blocking. Returns OK while the
  // watch is open or events remain. Once the watch has ended and every queued event has been
  // handed out, appends nothing and returns the reason it ended: Cancelled (Cancel() or store
  // closed), ResourceExhausted (consumer too slow), Expired (the backend lost history the watch
  // needed, e.g. etcd compacted while the store was disconnected; while etcd is merely
  // unreachable the store reconnects and the watch stays open). After a notify, poll until
  // nothing is appended: the next notify comes only when the queue turns non-empty again.
  Status Poll(std::vector<WatchEvent>* out, size_t max_events = SIZE_MAX);

  // Blocks until an event is queued or the watch has ended with nothing left to deliver; returns
  // the event or, then, the reason it ended (as Poll).
  StatusOr<WatchEvent> Next();

  // Queues a bookmark carrying the newest revision up to which this watch has seen every event,
  // in order with the events. Does nothing once the watch has ended or while its queue is full.
  void RequestBookmark();

  // Ends the watch: queued events are dropped and Poll/Next return Cancelled. Idempotent; safe
  // from any thread, including while another thread is blocked in Next().
  void Cancel();

  // OK while the watch is open, else the reason it ended (events may still be queued).
  Status status() const;

 private:
  std::shared_ptr<internal::WatchState> state_;
};

class Store {
 public:
  virtual ~Store() = default;

  // "memory", "sqlite" or "etcd".
  virtual std::string_view backend() const = 0;

  // The current object. NotFound when absent.
  virtual StatusOr<ObjectPtr> Get(const Key& key) = 0;

  // The objects of `resource` (optionally one namespace), sorted by key, at the latest revision
  // or at a snapshot revision, one page at a time (see ListOptions). Every page of one list
  // reflects the same snapshot, whatever is written between pages. Expired when the snapshot
  // revision was compacted; DeadlineExceeded when it is newer than the current revision.
  virtual StatusOr<ListResult> List(std::string_view resource, const ListOptions& options) = 0;

  // Creates the object. AlreadyExists when present. Returns it with its new revision.
  virtual StatusOr<ObjectPtr> Create(const Key& key, std::string value) = 0;

  // Replaces the value of an existing object (unconditionally unless `preconditions` says).
  // NotFound when absent; Conflict when the precondition does not hold. Returns the new state.
  virtual StatusOr<ObjectPtr> Update(const Key& key, std::string value,
                                     const Preconditions& preconditions = {}) = 0;

  // Deletes the object. NotFound when absent; Conflict when the precondition does not hold.
  // Returns its last state with `revision` set to the delete's revision.
  virtual StatusOr<ObjectPtr> Delete(const Key& key, const Preconditions& preconditions = {}) = 0;

  // A read-modify-write loop (kube-apiserver: GuaranteedUpdate): reads the object, calls
  // `update` with it, writes the result conditioned on the revision it read, and on a
  // concurrent change repeats with the newer state. `update` may run several times. Returns the
  // written state, or the current one when `update` returned the same bytes.
  // NotFound when absent (unless `allow_create`); Conflict when `preconditions` fail; otherwise
  // whatever `update` or the store returned.
  StatusOr<ObjectPtr> GuaranteedUpdate(const Key& key, const UpdateFunction& update,
                                       const GuaranteedUpdateOptions& options = {});

  // Starts a watch of `resource`: every event with a revision after `options.revision`, in
  // revision order, exactly once. Expired when that revision is no longer retained.
  virtual StatusOr<std::unique_ptr<Watcher>> Watch(std::string_view resource,
                                                   WatchOptions options) = 0;

  // The newest revision the store has assigned (for etcd: the cluster's revision).
  virtual StatusOr<Revision> CurrentRevision() = 0;

  // Discards history at and before `revision`: snapshot reads and watches from earlier
  // revisions then fail with Expired. The state at `revision` itself stays readable. A revision
  // at or below an earlier compaction is a no-op; InvalidArgument when it is in the future.
  // Backends also compact on their own (StoreOptions::retained_revisions).
  virtual Status Compact(Revision revision) = 0;
};

struct EtcdOptions {
  // Every key lives under this prefix, which must start and end with '/'.
  std::string prefix = "/draplane/";
  // TLS: set `ca_file` to talk https; `cert_file` + `key_file` add a client certificate.
  std::string ca_file{};
  std::string cert_file{};
  std::string key_file{};
  // Per-request timeout of unary calls.
  Duration request_timeout = std::chrono::seconds(30);
};

struct StoreOptions {
  // Measures operation latency for metrics. Defaults to RealClock().
  Clock* clock = nullptr;
  // Default WatchOptions::queue_limit.
  size_t watch_queue_limit = 10'000;
  // How many recent revisions of history the store keeps for snapshot reads and watch resumes
  // before compacting older ones on its own; 0 picks the backend's default (memory 10,000,
  // SQLite 100,000). etcd compacts by its own flags (--auto-compaction-*), and its watch cache
  // holds this many events (default 10,000).
  int64_t retained_revisions = 0;
  // History is also compacted by size (memory and SQLite): when the values written since the
  // last compaction pass this many bytes, the store compacts to the revision that leaves half of
  // them. 0: no size bound. (etcd bounds its database with its own --quota-backend-bytes.)
  int64_t max_history_bytes = 256 * 1024 * 1024;
  // The largest value Create and Update accept, for every backend: etcd's default
  // --max-request-bytes (1.5 MiB). 0: no limit.
  size_t max_value_bytes = 1536 * 1024;
  EtcdOptions etcd{};
};

// Opens a store by URL:
//   "memory://"                        a fresh in-memory store.
//   "sqlite://PATH"                    e.g. "sqlite:///var/lib/draplane/store.db" (absolute) or
//                                      "sqlite://data/store.db" (relative); created if absent.
//   "etcd://HOST:PORT[,HOST:PORT...]"  with optional query parameters `prefix=/p/`,
//                                      `cacert=FILE`, `cert=FILE`, `key=FILE` that override
//                                      `options.etcd` (names as etcdctl's flags).
// InvalidArgument for a malformed URL or unknown scheme; FailedPrecondition for an SQLite file of
// another schema version; Unavailable when etcd cannot be reached.
StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options = {});

}  // namespace draplane::store
