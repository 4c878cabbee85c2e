// Watch streams: `?watch=true` requests served as a chunked stream of JSON lines
// `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}`, one per store event that
// passes the request's selectors, with kube-apiserver's semantics
// (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go):
//
//   resourceVersion unset or "0"  synthetic ADDED events for every current object first, then
//                                 changes after that state;
//   resourceVersion "N"           every change after N; N older than the store's history →
//                                 an ERROR event carrying a 410 Expired Status (as the watch
//                                 cache sends it), then the end of the stream;
//   sendInitialEvents=true        (watch-list) the synthetic ADDED events, then a BOOKMARK whose
//                                 metadata carries the annotation `k8s.io/initial-events-end`;
//   allowWatchBookmarks=true      a BOOKMARK with the newest revision every `bookmark_interval`;
//   label / field selectors       a change that makes an object stop matching is sent as
//                                 DELETED (with the previous content), one that makes it start
//                                 matching as ADDED;
//   timeoutSeconds                the stream ends after it (default: a random 30-60 minutes).
//
// No thread per watch: each stream is a store Watcher whose notifications schedule a drain on
// the server's worker pool; a drain serializes the events once (shared between watchers of the
// same format - JSON, Table or PartialObjectMetadata - through a small cache bounded in entries
// and bytes) and queues them on the HTTP stream. A watcher that falls
// too far behind is ended; the client resumes from the last revision it saw.
//
// Thread-safety: all methods are safe for concurrent use.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <variant>

#include "api/labels/field_selector.h"
#include "api/labels/selector.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/random.h"
#include "server/handlers/errors.h"
#include "server/handlers/output.h"
#include "server/handlers/registry.h"
#include "server/http/http.h"
#include "server/internal/thread_pool.h"
#include "store/store.h"

namespace draplane::server::handlers {

struct WatchSpec {
  const ResourceInfo* resource = nullptr;
  std::string namespace_;
  std::string name;  // from fieldSelector metadata.name
  store::Revision start_revision = 0;
  bool initial_events = false;
  bool initial_events_end_bookmark = false;
  bool bookmarks = false;
  api::labels::Selector labels;
  api::labels::FieldSelector fields;
  OutputFormat format;
  // timeoutSeconds: absent or zero, the default range; negative ends the stream at once (as
  // upstream's timer does).
  std::optional<Duration> timeout;
  std::string user;          // who watches, for the per-user limit
  bool user_exempt = false;  // system:masters: only the total limit applies
};

struct WatchManagerOptions {
  Duration bookmark_interval = std::chrono::seconds(30);
  Duration min_timeout = std::chrono::minutes(30);  // default timeout is in [min, 2 * min)
  // Streams open at once, per user and in all; more are answered 429 (0: no limit).
  size_t max_watches_per_user = 0;
  size_t max_watches = 0;
};

class WatchManager {
 public:
  WatchManager(store::Store* store, internal::ThreadPool* pool, const Clock& clock,
               WatchManagerOptions options);
  ~WatchManager();

  // Starts a stream on `exchange`. Runs on a worker thread (it may list the initial state).
  void Serve(WatchSpec spec, std::shared_ptr<http::Exchange> exchange);

  // Requests due bookmarks and ends timed-out streams; the server calls it about once a second.
  void Tick();

  // Sends a bookmark to every stream that allows them, as if each one's interval had passed; it is
  // on the stream when this returns.
  void BookmarkNow();
  // Ends every stream as its timeout would; clients resume from the last revision they saw.
  void EndStreams();

  // Ends every stream and refuses new ones.
  void Shutdown();

  size_t active() const;

  // Whether an object passes the selectors (labels; fields as the kind extracts them).
  static bool Matches(const WatchSpec& spec, const JsonObject& object);

 private:
  class Session;
  friend class Session;

  // A served event line, shared by all watchers of the same resource and format (`variant`:
  // JSON, or one Table / PartialObjectMetadata rendering). Bounded in entries and bytes.
  http::Chunk CachedLine(const ResourceInfo* resource, store::Revision revision, char type,
                         const std::function<std::string()>& render, uint8_t variant = 0);

  // What selectors look at in one stored version of an object (its labels, and its fields as
  // the kind extracts them), parsed once and shared by every watch with selectors: one kubelet
  // per node watches Pods with spec.nodeName=<node>.
  struct Selectable {
    bool parsed = false;
    StringMap labels;
    StringMap fields;
  };
  std::shared_ptr<const Selectable> CachedSelectable(const ResourceInfo* resource,
                                                     const store::Object& object);
  static bool Matches(const WatchSpec& spec, const Selectable& selectable);

  void Remove(uint64_t id);
  std::vector<std::shared_ptr<Session>> Sessions() const;

  // How many streams are open, in all and per user. Shared with the slots, which may be released
  // after the manager has shut down.
  struct Counts {
    Mutex mu;
    size_t total DRAPLANE_GUARDED_BY(mu) = 0;
    std::map<std::string, size_t, std::less<>> per_user DRAPLANE_GUARDED_BY(mu);
  };
  // One open stream's place in Counts, returned when destroyed.
  class Slot;
  // A slot for `user` (`exempt`: from the per-user limit), or the 429 that says why there is none.
  std::variant<std::unique_ptr<Slot>, ApiError> TakeSlot(const std::string& user, bool exempt);
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();

  store::Store* store_;
  internal::ThreadPool* pool_;
  const Clock& clock_;
  WatchManagerOptions options_;

  mutable Mutex mu_;
  std::unique_ptr<Random> random_ DRAPLANE_PT_GUARDED_BY(mu_);  // timeouts' jitter
  std::map<uint64_t, std::shared_ptr<Session>> sessions_ DRAPLANE_GUARDED_BY(mu_);
  uint64_t next_id_ DRAPLANE_GUARDED_BY(mu_) = 1;
  bool shut_down_ DRAPLANE_GUARDED_BY(mu_) = false;

  struct CacheKey {
    const ResourceInfo* resource;
    store::Revision revision;
    char type;
    uint8_t variant = 0;
    bool operator==(const CacheKey&) const = default;
  };
  struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const {
      return std::hash<const void*>()(k.resource) ^ (std::hash<int64_t>()(k.revision) * 31) ^
             static_cast<size_t>(k.type) ^ (static_cast<size_t>(k.variant) << 8);
    }
  };
  Mutex cache_mu_;
  std::unordered_map<CacheKey, http::Chunk, CacheKeyHash> cache_ DRAPLANE_GUARDED_BY(cache_mu_);
  std::deque<CacheKey> cache_order_ DRAPLANE_GUARDED_BY(cache_mu_);
  size_t cache_bytes_ DRAPLANE_GUARDED_BY(cache_mu_) = 0;
  // By resource and the object version's own revision (type 0).
  std::unordered_map<CacheKey, std::shared_ptr<const Selectable>, CacheKeyHash> selectables_
      DRAPLANE_GUARDED_BY(cache_mu_);
  std::deque<CacheKey> selectables_order_ DRAPLANE_GUARDED_BY(cache_mu_);
};

}  // namespace draplane::server::handlers
