// Informers: a local, watch-maintained cache of one resource with change notifications
// (client-go's Reflector + Indexer + SharedInformer, reduced to what draplane needs).
//
// Algorithm (one thread per informer):
//   1. List the collection (paged, `page_size` per page) and replace the cache: objects that
//      disappeared are announced as deleted, new ones as added, and every other one as updated
//      (as client-go's Replace does, so a relist repairs anything a broken watch missed). The
//      informer has synced after the first successful list.
//   2. Watch from the list's resourceVersion with bookmarks on and a server-side timeout. ADDED /
//      MODIFIED upsert, DELETED removes, BOOKMARK only advances the resourceVersion.
//   3. When the stream ends normally, watch again from the last resourceVersion seen (resume).
//      410 Gone (Expired) — on starting the watch or as an ERROR event — goes back to step 1
//      (relist). Other failures back off exponentially (`initial_backoff` doubling up to
//      `max_backoff`) and retry the step that failed.
//   4. With `resync_period` > 0, every cached object is re-announced as an update (old == new)
//      that often, so level-triggered consumers can repair missed work.
// Handlers run on the informer's threads, one at a time (never concurrently with each other), and
// after the cache already reflects the change. A handler must not block for long.
// Handlers may be added and removed at any time, so that several components can share one
// informer (shared_informers.h): a handler added to a running informer first gets an add for
// every cached object, in key order, on the adding thread, then every later change exactly once
// (client-go's AddEventHandler); once RemoveHandlers returns, the handler is never called again.
//
// Manual mode (`InformerOptions::manual`, for the simulator): no threads. Start() lists and opens
// the watch on the calling thread, and events reach the cache and the handlers only when the owner
// asks: PeekManual() says the resourceVersion of the next ready event (polling the stream without
// blocking; a stream that ended is watched again, and relisted on 410; the event is decoded there,
// once, and one that cannot be decoded is skipped), DeliverManual() applies it on the calling
// thread. SharedInformers::DeliverPending() merges several manual informers in
// resourceVersion order, the order in which the API committed the changes. Resync is not run.
// The API's watch streams must support Poll() (the in-memory API does).
//
// Indexes: `AddIndex(name, fn)`, at any time (a late index is built from the cache);
// `ByIndex(name, value)` returns the cached objects whose `fn` produced `value`, in key order.
//
// Thread-safety: Get / List / ByIndex / HasSynced / AddHandlers / RemoveHandlers / AddIndex are
// safe from any thread. Start and Stop are called by the owner.
// Ownership: the informer keeps a reference to the ApiClient, which must outlive it. Cached
// objects are immutable and shared (`std::shared_ptr<const T>`). Watches ask for typed events: a
// client that keeps objects typed (the in-memory API) hands over its `T` itself, which the cache
// keeps instead of decoding the JSON. Cached objects have no metadata.managedFields
// (api::DecodeOptions::drop_managed_fields, as kube-scheduler's informers strip them).
#pragma once

#include <atomic>
#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/api_client.h"
#include "client/resource.h"
#include "client/typed.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/sorted_string_map.h"
#include "common/status.h"
#include "common/string_hash.h"

namespace draplane::client {

struct InformerOptions {
  std::string namespace_{};  // empty: every namespace
  std::string label_selector{};
  std::string field_selector{};
  Duration resync_period{0};
  int64_t page_size = 500;
  int64_t watch_timeout_seconds = 300;
  Duration initial_backoff = std::chrono::milliseconds(100);
  Duration max_backoff = std::chrono::seconds(30);
  // No threads: the owner delivers events (see the file comment).
  bool manual = false;
};

// The untyped machinery; use Informer<T>.
class InformerBase {
 public:
  using Entry = std::shared_ptr<const void>;
  using HandlerId = uint64_t;
  struct RawHandlers {
    std::function<void(const Entry&)> on_add;
    std::function<void(const Entry& old_object, const Entry& new_object)> on_update;
    std::function<void(const Entry&)> on_delete;
  };

  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;
  virtual ~InformerBase();

  // Starts the list/watch thread (and the resync thread); in manual mode lists and opens the watch
  // on the calling thread instead. Idempotent.
  void Start();
  // Stops and joins the threads; the cache stays readable. Idempotent.
  void Stop();
  // Blocks until the first list has been applied (true) or the informer was stopped (false).
  bool WaitForSync();
  bool HasSynced() const { return synced_.load(); }
  // The resourceVersion the cache reflects ("" before the first list).
  std::string resource_version() const;
  // Counters for tests and metrics: completed lists and started watches.
  int64_t list_count() const { return list_count_.load(); }
  int64_t watch_count() const { return watch_count_.load(); }
  size_t size() const;
  // Unregisters handlers added by AddHandlers; a no-op for an unknown id.
  void RemoveHandlers(HandlerId id);

  // Manual mode only (see the file comment). The resourceVersion of the next event ready to be
  // delivered, nullopt when none is ready; an error when the watch cannot be re-opened.
  StatusOr<std::optional<uint64_t>> PeekManual();
  // Applies the event PeekManual announced to the cache and the handlers; a no-op when none.
  void DeliverManual();
  // Without polling: true when PeekManual would answer "none ready" now (nothing fetched, the
  // watch open and idle). Inline, as a delivery round asks every informer.
  bool ManualIdle() const {
    return !manual_next_.has_value() && manual_stream_ != nullptr && manual_stream_->Idle() &&
           !Stopping();
  }

 protected:
  struct Decoded {
    Entry entry;
    std::string key;
    std::string resource_version;
  };

  InformerBase(ApiClient& api, const ResourceType& type, InformerOptions options);
  virtual StatusOr<Decoded> DecodeEntry(const boost::json::value& json) const = 0;
  // The entry for an event's typed object (WatchEvent::typed); nullopt when it is not a `T`.
  virtual std::optional<Decoded> TypedEntry(const WatchEvent& event) const = 0;

  HandlerId AddRawHandlers(RawHandlers handlers);
  void AddRawIndex(std::string name, std::function<std::vector<std::string>(const Entry&)> fn);
  Entry GetEntry(const std::string& key) const;
  std::vector<Entry> ListEntries() const;
  std::vector<Entry> EntriesByIndex(const std::string& name, const std::string& value) const;

 private:
  struct Index {
    std::function<std::vector<std::string>(const Entry&)> fn;
    // value -> key -> entry; only looked up by value (an object's keys are listed in order).
    std::unordered_map<std::string, SortedStringMap<Entry>, StringHash, std::equal_to<>> values;
  };
  // Where an index lists a cached object: the value, and the object's entry under it (stable:
  // map nodes do not move while they exist).
  struct Listing {
    std::string value;
    Entry* slot = nullptr;
  };
  // A cached object and its listings, per index in indexes_ order: an update that keeps an
  // index's values (most do: a status change) replaces the listed entries in place, without
  // computing the old version's values again or looking the values up.
  struct Cached {
    Entry entry;
    std::vector<std::vector<Listing>> listings;
  };

  void Run();
  void RunResync();
  Status ListAndReplace();
  StatusOr<std::unique_ptr<WatchStream>> OpenWatch();
  Status WatchOnce();
  // Applies one ADDED / MODIFIED / DELETED / BOOKMARK event; an ERROR event's status otherwise.
  Status ApplyEvent(WatchEvent& event);
  // ApplyEvent's two steps: the entry an ADDED, MODIFIED or DELETED event carries (none when it
  // cannot be decoded: logged and skipped), and applying it to the cache and the handlers.
  std::optional<Decoded> DecodeEvent(const WatchEvent& event);
  void ApplyDecoded(bool deleted, const Decoded& decoded);
  // Manual mode: (re)lists when needed and opens the watch.
  Status ReopenManual();
  // Sleeps for the current backoff (or until stopped) and doubles it.
  void Backoff();
  void ResetBackoff();
  // Cache mutations; each returns the previous entry (null when there was none). Callers hold
  // handler_mu_ from the mutation to its notification, so that a handler added meanwhile sees
  // either the old cache and the notification or the new cache and not the notification.
  Entry Upsert(const std::string& key, const Entry& entry) DRAPLANE_REQUIRES(handler_mu_)
      DRAPLANE_EXCLUDES(mu_);
  Entry Remove(const std::string& key) DRAPLANE_REQUIRES(handler_mu_) DRAPLANE_EXCLUDES(mu_);
  // Lists `cached` (its entry set, its listings empty) in every index.
  void IndexInsert(const std::string& key, Cached& cached) DRAPLANE_REQUIRES(mu_);
  void IndexErase(const std::string& key, const Cached& cached) DRAPLANE_REQUIRES(mu_);
  void NotifyAdd(const Entry& entry) DRAPLANE_REQUIRES(handler_mu_);
  void NotifyUpdate(const Entry& old_entry, const Entry& new_entry) DRAPLANE_REQUIRES(handler_mu_);
  void NotifyDelete(const Entry& entry) DRAPLANE_REQUIRES(handler_mu_);
  bool Stopping() const { return stopping_.load(); }

  ApiClient& api_;
  const ResourceType& type_;
  const InformerOptions options_;
  // Serialises handler calls, cache mutations with their notifications, and registration. Taken
  // before mu_ when both are held.
  Mutex handler_mu_ DRAPLANE_ACQUIRED_BEFORE(mu_);
  std::vector<std::pair<HandlerId, RawHandlers>> handlers_ DRAPLANE_GUARDED_BY(handler_mu_);
  HandlerId next_handler_id_ DRAPLANE_GUARDED_BY(handler_mu_) = 1;

  mutable Mutex mu_;
  CondVar cv_;
  SortedStringMap<Cached> cache_ DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, Index> indexes_ DRAPLANE_GUARDED_BY(mu_);
  std::string resource_version_ DRAPLANE_GUARDED_BY(mu_);
  std::unique_ptr<WatchStream> watch_ DRAPLANE_GUARDED_BY(mu_);  // the stream to cancel on Stop
  Duration backoff_{0};
  // Manual mode, owner thread: the stream (watch_, which only the owner thread replaces in this
  // mode, so it is read without mu_), the event PeekManual fetched (decoded; whether it is a
  // deletion), its resourceVersion, and whether the next re-open must list first.
  WatchStream* manual_stream_ = nullptr;
  std::optional<Decoded> manual_next_;
  bool manual_next_deleted_ = false;
  uint64_t manual_next_rv_ = 0;
  bool manual_needs_list_ = true;

  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::atomic<int64_t> list_count_{0};
  std::atomic<int64_t> watch_count_{0};
  std::thread thread_;
  std::thread resync_thread_;
};

template <typename T>
class Informer final : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add{};
    std::function<void(const Ptr& old_object, const Ptr& new_object)> on_update{};
    std::function<void(const Ptr&)> on_delete{};
  };

  Informer(ApiClient& api, InformerOptions options = {})
      : InformerBase(api, ResourceOf<T>(), std::move(options)) {}
  ~Informer() override { Stop(); }

  // Registers handlers (see the file comment for a running informer); returns the id that
  // RemoveHandlers takes.
  HandlerId AddHandlers(Handlers handlers) {
    RawHandlers raw;
    if (handlers.on_add) {
      raw.on_add = [f = handlers.on_add](const Entry& e) { f(Cast(e)); };
    }
    if (handlers.on_update) {
      raw.on_update = [f = handlers.on_update](const Entry& o, const Entry& n) {
        f(Cast(o), Cast(n));
      };
    }
    if (handlers.on_delete) {
      raw.on_delete = [f = handlers.on_delete](const Entry& e) { f(Cast(e)); };
    }
    return AddRawHandlers(std::move(raw));
  }

  // Registers an index (built from the cache when the informer already runs).
  void AddIndex(std::string name, std::function<std::vector<std::string>(const T&)> fn) {
    AddRawIndex(std::move(name), [f = std::move(fn)](const Entry& e) { return f(*Cast(e)); });
  }

  // The cached object, or null.
  Ptr Get(std::string_view namespace_, std::string_view name) const {
    return Cast(GetEntry(ObjectKey(namespace_, name)));
  }
  Ptr GetByKey(const std::string& key) const { return Cast(GetEntry(key)); }
  // Every cached object, in key order.
  std::vector<Ptr> List() const { return CastAll(ListEntries()); }
  std::vector<Ptr> ByIndex(const std::string& name, const std::string& value) const {
    return CastAll(EntriesByIndex(name, value));
  }

 private:
  static Ptr Cast(const Entry& e) { return std::static_pointer_cast<const T>(e); }
  static std::vector<Ptr> CastAll(const std::vector<Entry>& entries) {
    std::vector<Ptr> out;
    out.reserve(entries.size());
    for (const Entry& e : entries) out.push_back(Cast(e));
    return out;
  }

  std::optional<Decoded> TypedEntry(const WatchEvent& event) const override {
    if (event.typed == nullptr || event.typed_kind != &TypedKindOf<T>()) return std::nullopt;
    Ptr object = std::static_pointer_cast<const T>(event.typed);
    Decoded out;
    out.key = ObjectKey(object->metadata.namespace_, object->metadata.name);
    out.resource_version = object->metadata.resource_version;
    out.entry = std::move(object);
    return out;
  }

  StatusOr<Decoded> DecodeEntry(const boost::json::value& json) const override {
    StatusOr<std::shared_ptr<T>> object =
        DecodeShared<T>(json, api::DecodeOptions{.drop_managed_fields = true});
    if (!object.ok()) return object.status();
    Decoded out;
    out.key = ObjectKey((*object)->metadata.namespace_, (*object)->metadata.name);
    out.resource_version = (*object)->metadata.resource_version;
    out.entry = std::move(*object);
    return out;
  }
};

}  // namespace draplane::client
