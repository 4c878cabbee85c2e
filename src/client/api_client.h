// The Kubernetes API as every draplane component sees it: requests on resources, answered with
// JSON objects, and watch streams of change events.
//
// `ApiClient` is the seam between components (scheduler, controllers, node agent, CLI) and the
// API server. `RestClient` (rest_client.h) implements it over HTTP against `draplane serve` or any
// Kubernetes API server (or in-process, cli/in_process_transport.h); `MemoryApi` (memory_api.h)
// implements it in memory for the simulator. The typed helpers (typed.h) and informers (informer.h)
// sit on top.
//
// Errors map Kubernetes status reasons onto draplane codes (rest_client.h lists the mapping):
// NotFound, AlreadyExists, Conflict (resourceVersion mismatch), Expired (410 Gone: the requested
// resourceVersion is too old), InvalidArgument (422 with field causes), FailedPrecondition
// (401/403), ResourceExhausted (429), Unavailable (unreachable, 503), Internal.
//
// Thread-safety: implementations are safe for concurrent use. A WatchStream is read from one
// thread; Cancel() may be called from any thread.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "client/resource.h"
#include "client/typed_kind.h"
#include "common/status.h"

namespace draplane::client {

enum class Verb { kGet, kList, kCreate, kUpdate, kPatch, kDelete };

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json
  kJson,            // application/json-patch+json (RFC 6902)
};

struct ListOptions {
  std::string label_selector{};
  std::string field_selector{};
  // "" (most recent), "0" (any), or a resourceVersion to list / watch from.
  std::string resource_version{};
  int64_t limit = 0;  // 0: no paging
  std::string continue_token{};
  // Watches: ask the server to end the stream after this many seconds (0: server default).
  int64_t timeout_seconds = 0;
  bool allow_watch_bookmarks = false;
  // Watches: the caller takes events whose object is typed (WatchEvent::typed) without its JSON.
  bool typed_events = false;
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds{};
  std::string precondition_uid{};
  std::string precondition_resource_version{};
  std::string propagation_policy{};  // "", "Background", "Foreground", "Orphan"
};

struct ApiRequest {
  Verb verb = Verb::kGet;
  const ResourceType* resource = nullptr;
  std::string namespace_{};  // empty: cluster-scoped, or every namespace for kList / Watch
  std::string name{};
  std::string subresource{};  // "status", "binding"
  ListOptions list{};         // kList and Watch
  DeleteOptions delete_options{};
  PatchType patch_type = PatchType::kMerge;
  std::string field_manager{};
  // The object (kCreate, kUpdate) or the patch document (kPatch).
  boost::json::value body{};
  // The caller reads only whether the request succeeded: a client may return null instead of the
  // object, and skip parsing the answer (a record writer's creates).
  bool discard_response = false;
};

struct WatchEvent {
  // "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR" (object: a metav1.Status).
  std::string type{};
  // Never null in an event a stream returns. Immutable and shared: the in-memory API hands every
  // watcher the stored version itself rather than a copy per watcher.
  // Null in an event a stream returns only when it sets `typed` and the watch asked for typed
  // events (ListOptions::typed_events).
  std::shared_ptr<const boost::json::value> object{};
  // The object as the watched kind's `T` (TypedKindOf<T>()), where the client keeps it typed (the
  // in-memory API); then it is the object `object` encodes. Immutable and shared.
  std::shared_ptr<const void> typed{};
  const TypedKind* typed_kind = nullptr;  // set with `typed`
};

class WatchStream {
 public:
  virtual ~WatchStream() = default;
  // Blocks for the next event. nullopt when the server ended the stream (a normal watch
  // timeout); Cancelled after Cancel(); Unavailable when the connection broke; InvalidArgument
  // for an undecodable event.
  virtual StatusOr<std::optional<WatchEvent>> Next() = 0;
  // Without blocking: the next event when one is ready, nullopt when none is ready yet.
  // Unavailable once the server ended the stream (the caller watches again); Cancelled after
  // Cancel(). Streams that can only block (REST) return Unimplemented.
  virtual StatusOr<std::optional<WatchEvent>> Poll() = 0;
  // Without blocking or locking: true only when Poll would answer nullopt now. Lets a caller
  // that polls many streams in turn skip the idle ones cheaply; false means "ask Poll".
  virtual bool Idle() const { return false; }
  // Ends the stream; a blocked Next() returns. Thread-safe, idempotent.
  virtual void Cancel() = 0;
};

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  // Executes a get / list / create / update / patch / delete. Returns the object (for kList, the
  // list object with `items` and `metadata.resourceVersion`; for kDelete, the deleted object or
  // the object now carrying a deletionTimestamp, or a Status).
  virtual StatusOr<boost::json::value> Do(const ApiRequest& request) = 0;
  // As Do, for a caller that gives the request away and only reads the answer: the client may
  // take the body (the in-memory API stores it without a copy) and answers with a shared,
  // immutable object (the in-memory API's stored version itself; null where Do answers null
  // for `discard_response`). The typed helpers (typed.h) write through it.
  virtual StatusOr<std::shared_ptr<const boost::json::value>> DoShared(ApiRequest&& request);
  // As DoShared for a create or update whose body is `object`, a `T` of `kind` (given away, in
  // place of `request.body`), answered with the stored object as a `T` (null where DoShared
  // answers null). By default the object is encoded and the answer decoded; the in-memory API
  // stores and answers it typed (JSON is made only for a caller that asks for it).
  virtual StatusOr<std::shared_ptr<const void>> DoTyped(ApiRequest&& request,
                                                        std::shared_ptr<void> object,
                                                        const TypedKind& kind);
  // Starts a watch on the collection (`request.verb` is ignored). Expired when
  // `list.resource_version` is too old (410 Gone).
  virtual StatusOr<std::unique_ptr<WatchStream>> Watch(const ApiRequest& request) = 0;
};

// The draplane Status for a Kubernetes error response: `http_code` and the body (a metav1.Status
// when the server sent one; anything else is quoted in the message).
Status StatusFromApiError(int http_code, const boost::json::value& body);
// The same for an ERROR watch event's object.
Status StatusFromWatchError(const boost::json::value& object);

}  // namespace draplane::client
