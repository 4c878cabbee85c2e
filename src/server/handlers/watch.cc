#include "server/handlers/watch.h"

#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "server/handlers/errors.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

constexpr size_t kCacheCapacity = 8192;
// A line needs to live only until every watcher of its event has taken it (usually within a
// drain); a larger cache would keep a copy of every recently written object.
constexpr size_t kCacheBytes = 16 * 1024 * 1024;
constexpr size_t kPollBatch = 256;

const metrics::GaugeFamily& WatchersGauge() {
  static const metrics::GaugeFamily family =
      metrics::NewGaugeFamily("apiserver_registered_watchers",
                              "Number of currently registered watchers.", {"group", "resource"});
  return family;
}

const metrics::CounterFamily& WatchEventsCounter() {
  static const metrics::CounterFamily family =
      metrics::NewCounterFamily("apiserver_watch_events_total",
                                "Number of events sent in watch clients.", {"group", "resource"});
  return family;
}

std::string_view TypeName(char type) {
  switch (type) {
    case 'A':
      return "ADDED";
    case 'M':
      return "MODIFIED";
    case 'D':
      return "DELETED";
    case 'B':
      return "BOOKMARK";
    default:
      return "ERROR";
  }
}

std::string EventLine(char type, std::string_view object) {
  std::string out;
  out.reserve(object.size() + 32);
  out += "{\"type\":\"";
  out += TypeName(type);
  out += "\",\"object\":";
  out += object;
  out += "}\n";
  return out;
}

// Distinguishes the renderings of one event in the line cache: JSON is 0.
uint8_t FormatVariant(const OutputFormat& format) {
  if (format.kind == OutputKind::kJson) return 0;
  uint8_t variant = format.kind == OutputKind::kTable ? 1 : 2;
  if (format.meta_version != "v1") variant |= 4;
  if (format.include_object == "None") variant |= 8;
  if (format.include_object == "Object") variant |= 16;
  return variant;
}

std::string BookmarkObject(const ResourceInfo& resource, store::Revision revision,
                           bool initial_events_end) {
  std::string out = "{\"kind\":\"" + resource.kind + "\",\"apiVersion\":\"" +
                    resource.ApiVersion() + "\",\"metadata\":{\"resourceVersion\":\"" +
                    std::to_string(revision) + "\",\"creationTimestamp\":null";
  if (initial_events_end) out += ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}";
  out += "}}";
  return out;
}

}  // namespace

namespace {

StringMap FieldsOf(const ResourceInfo& resource, const JsonObject& object) {
  return api::labels::SelectableFields(resource.group, resource.kind, object);
}

}  // namespace

bool WatchManager::Matches(const WatchSpec& spec, const JsonObject& object) {
  if (!spec.labels.Empty()) {
    if (!spec.labels.Matches(MetaStringMap(object, "labels"))) return false;
  }
  if (!spec.fields.empty()) {
    if (!spec.fields.Matches(FieldsOf(*spec.resource, object))) return false;
  }
  return true;
}

bool WatchManager::Matches(const WatchSpec& spec, const Selectable& selectable) {
  if (!selectable.parsed) return false;
  if (!spec.labels.Empty() && !spec.labels.Matches(selectable.labels)) return false;
  return spec.fields.empty() || spec.fields.Matches(selectable.fields);
}

class WatchManager::Slot {
 public:
  Slot(std::shared_ptr<Counts> counts, std::string user)
      : counts_(std::move(counts)), user_(std::move(user)) {}
  ~Slot() {
    MutexLock lock(counts_->mu);
    --counts_->total;
    auto it = counts_->per_user.find(user_);
    if (--it->second == 0) counts_->per_user.erase(it);
  }

 private:
  std::shared_ptr<Counts> counts_;
  std::string user_;
};

class WatchManager::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(WatchManager* manager, uint64_t id, WatchSpec spec, Duration deadline,
          std::unique_ptr<Slot> slot)
      : manager_(manager),
        id_(id),
        spec_(std::move(spec)),
        deadline_(deadline),
        slot_(std::move(slot)),
        next_bookmark_(manager_->clock_.MonotonicNow() + manager_->options_.bookmark_interval),
        gauge_(WatchersGauge().WithLabels({spec_.resource->group, spec_.resource->resource})),
        events_(
            WatchEventsCounter().WithLabels({spec_.resource->group, spec_.resource->resource})) {}

  uint64_t id() const { return id_; }
  const WatchSpec& spec() const { return spec_; }

  // Connects the session to its stream and store watcher and sends the initial lines, holding
  // the drain lock so that no change can overtake them.
  void Attach(std::shared_ptr<http::ResponseStream> stream, std::unique_ptr<store::Watcher> watcher,
              std::vector<std::string> initial) {
    MutexLock drain_lock(drain_mu_);
    {
      MutexLock lock(mu_);
      stream_ = stream;
      watcher_ = std::move(watcher);
      gauge_.Increment();
    }
    drain_on_notify_.store(stream->in_process() && !NeedsParse(), std::memory_order_release);
    for (std::string& line : initial) {
      Write(std::make_shared<const std::string>(std::move(line)));
    }
    Flush(*stream);
  }

  // An in-process reader of unfiltered JSON costs a few copies per event to serve: that is done
  // on the notifying thread (the store's writer), which saves handing each commit to a worker
  // and waking it. Any other stream, or a drain already running, goes through the worker pool.
  void Notify() {
    if (drain_on_notify_.load(std::memory_order_acquire)) {
      if (drain_mu_.TryLock()) {
        DrainLocked();
        drain_mu_.Unlock();
        return;
      }
    }
    if (scheduled_.exchange(true)) return;
    std::weak_ptr<Session> weak = weak_from_this();
    if (!manager_->pool_->Post([weak] {
          if (auto self = weak.lock()) self->Drain();
        })) {
      scheduled_.store(false);
    }
  }

  // A worker's turn (see Notify).
  void Drain() {
    scheduled_.store(false);
    MutexLock drain_lock(drain_mu_);
    DrainLocked();
  }

  // Polls the store watcher and forwards what passes the selectors. Callers hold drain_mu_.
  void DrainLocked() DRAPLANE_REQUIRES(drain_mu_) {
    std::shared_ptr<http::ResponseStream> stream;
    std::shared_ptr<store::Watcher> watcher;  // shared: Closed() may run meanwhile
    {
      MutexLock lock(mu_);
      stream = stream_;
      watcher = watcher_;
    }
    if (stream == nullptr || watcher == nullptr) return;
    std::vector<store::WatchEvent> events;
    while (true) {
      events.clear();
      Status status = watcher->Poll(&events, kPollBatch);
      for (const store::WatchEvent& event : events) Forward(event);
      if (!Flush(*stream)) return;
      if (!status.ok()) {
        End(status, *stream);
        return;
      }
      if (events.empty()) return;
    }
  }

  // Called by Tick.
  void Tick(Duration now) {
    std::shared_ptr<http::ResponseStream> stream;
    std::shared_ptr<store::Watcher> watcher;
    {
      MutexLock lock(mu_);
      stream = stream_;
      watcher = watcher_;
    }
    if (stream == nullptr) return;
    if (now >= deadline_) {
      stream->Close();
      return;
    }
    if (spec_.bookmarks && watcher != nullptr && now >= next_bookmark_) {
      next_bookmark_ = now + manager_->options_.bookmark_interval;
      watcher->RequestBookmark();
    }
  }

  // A bookmark now, as if the interval had passed, written to the stream before this returns.
  void BookmarkNow() {
    if (!spec_.bookmarks) return;
    std::shared_ptr<store::Watcher> watcher;
    {
      MutexLock lock(mu_);
      watcher = watcher_;
    }
    if (watcher == nullptr) return;
    watcher->RequestBookmark();
    MutexLock drain_lock(drain_mu_);
    DrainLocked();
  }

  void Close() {
    std::shared_ptr<http::ResponseStream> stream;
    {
      MutexLock lock(mu_);
      stream = stream_;
    }
    if (stream) stream->Close();
  }

  // The stream ended: release the store watcher (a Drain or Tick still holding it finishes on a
  // cancelled watcher; on_closed may run on any thread while they do).
  void Closed() {
    std::shared_ptr<store::Watcher> watcher;
    {
      MutexLock lock(mu_);
      watcher = std::move(watcher_);
      if (stream_ != nullptr) gauge_.Decrement();
      stream_.reset();
    }
    if (watcher) watcher->Cancel();
  }

  // Queues the line of one event, if it passes the selectors (Flush sends them). The served JSON
  // of an object at a revision, parsed when selectors or tables need it.
  void Forward(const store::WatchEvent& event) DRAPLANE_REQUIRES(drain_mu_) {
    const ResourceInfo* resource = spec_.resource;
    if (event.type == store::WatchEvent::Type::kBookmark) {
      if (!spec_.bookmarks) return;
      Write(manager_->CachedLine(resource, event.revision, 'B', [&] {
        return EventLine('B', BookmarkObject(*resource, event.revision, false));
      }));
      return;
    }
    if (event.object == nullptr) return;
    char type = event.type == store::WatchEvent::Type::kAdded      ? 'A'
                : event.type == store::WatchEvent::Type::kModified ? 'M'
                                                                   : 'D';
    const std::string& value = event.object->value;
    if (!NeedsParse()) {
      Write(manager_->CachedLine(resource, event.revision, type, [&] {
        return EventLine(type, resource->Served(value, event.revision));
      }));
      return;
    }
    // Selectors are judged on the shared parsed views; the line (JSON, Table or
    // PartialObjectMetadata) is rendered once per event and format and shared by every watcher
    // that sends it.
    std::shared_ptr<const Selectable> current = manager_->CachedSelectable(resource, *event.object);
    if (!current->parsed) return;
    const bool current_matches = Matches(spec_, *current);
    const store::Object* sent = event.object.get();
    if (type == 'M') {
      const bool previous_matches =
          event.prev_object != nullptr &&
          Matches(spec_, *manager_->CachedSelectable(resource, *event.prev_object));
      if (current_matches && !previous_matches) {
        type = 'A';
      } else if (!current_matches && previous_matches) {
        type = 'D';
        sent = event.prev_object.get();
      } else if (!current_matches) {
        return;
      }
    } else if (!current_matches) {
      return;
    }
    if (spec_.format.kind == OutputKind::kJson) {
      Write(manager_->CachedLine(resource, event.revision, type, [&] {
        return EventLine(type, resource->Served(sent->value, event.revision));
      }));
      return;
    }
    http::Chunk line = manager_->CachedLine(
        resource, event.revision, type,
        [&]() -> std::string {
          StatusOr<JsonObject> parsed = ParseObject(resource->Served(sent->value, event.revision));
          if (!parsed.ok()) return "";
          std::string object_text;
          if (spec_.format.kind == OutputKind::kTable) {
            object_text = boost::json::serialize(RenderTable(*resource, {&*parsed}, spec_.format,
                                                             std::to_string(event.revision),
                                                             manager_->clock_.Now()));
          } else {
            boost::json::object partial;
            partial["kind"] = "PartialObjectMetadata";
            partial["apiVersion"] = "meta.k8s.io/" + spec_.format.meta_version;
            if (const JsonObject* meta = FindObject(*parsed, "metadata")) {
              partial["metadata"] = *meta;
            }
            object_text = boost::json::serialize(partial);
          }
          return EventLine(type, object_text);
        },
        FormatVariant(spec_.format));
    if (!line->empty()) Write(std::move(line));
  }

 private:
  // Whether events must be parsed to be judged or rendered (selectors, tables, metadata only).
  bool NeedsParse() const {
    return !spec_.labels.Empty() || !spec_.fields.empty() || spec_.format.kind != OutputKind::kJson;
  }

  // Lines are queued and sent together: one write (one chunk over HTTP, one wake-up of an
  // in-process reader) per batch of events instead of one per event. Callers hold drain_mu_.
  void Write(http::Chunk line) DRAPLANE_REQUIRES(drain_mu_) {
    queued_bytes_ += line->size();
    queued_.push_back(std::move(line));
    events_.Increment();
  }
  // Sends the queued lines; false when the stream no longer takes writes.
  bool Flush(http::ResponseStream& stream) DRAPLANE_REQUIRES(drain_mu_) {
    if (queued_.empty()) return true;
    http::Chunk chunk;
    if (queued_.size() == 1) {
      chunk = std::move(queued_.front());
    } else {
      auto joined = std::make_shared<std::string>();
      joined->reserve(queued_bytes_);
      for (const http::Chunk& line : queued_) joined->append(*line);
      chunk = std::move(joined);
    }
    queued_.clear();
    queued_bytes_ = 0;
    return stream.Write(std::move(chunk));
  }

  void End(const Status& status, http::ResponseStream& stream) {
    if (status.code() == StatusCode::kExpired) {
      ApiError e = NewResourceExpired(std::string(status.message()));
      stream.Write(std::make_shared<const std::string>(EventLine('E', StatusJson(e))));
    } else if (status.code() != StatusCode::kCancelled &&
               status.code() != StatusCode::kResourceExhausted) {
      ApiError e = FromStatus(status, {spec_.resource->Gr(), "", spec_.resource->GroupKind()});
      stream.Write(std::make_shared<const std::string>(EventLine('E', StatusJson(e))));
    }
    stream.Close();
  }

  WatchManager* manager_;
  const uint64_t id_;
  const WatchSpec spec_;
  const Duration deadline_;
  std::unique_ptr<Slot> slot_;  // this stream's place in the watch limits
  Duration next_bookmark_;
  metrics::Gauge gauge_;
  metrics::Counter events_;
  std::atomic<bool> scheduled_{false};
  std::atomic<bool> drain_on_notify_{false};  // set by Attach
  Mutex drain_mu_;
  std::vector<http::Chunk> queued_ DRAPLANE_GUARDED_BY(drain_mu_);
  size_t queued_bytes_ DRAPLANE_GUARDED_BY(drain_mu_) = 0;
  Mutex mu_;
  std::shared_ptr<http::ResponseStream> stream_ DRAPLANE_GUARDED_BY(mu_);
  std::shared_ptr<store::Watcher> watcher_ DRAPLANE_GUARDED_BY(mu_);
};

WatchManager::WatchManager(store::Store* store, internal::ThreadPool* pool, const Clock& clock,
                           WatchManagerOptions options)
    : store_(store),
      pool_(pool),
      clock_(clock),
      options_(options),
      random_(NewSeededRandom(SecureRandom().Next64())) {}

WatchManager::~WatchManager() { Shutdown(); }

http::Chunk WatchManager::CachedLine(const ResourceInfo* resource, store::Revision revision,
                                     char type, const std::function<std::string()>& render,
                                     uint8_t variant) {
  CacheKey key{resource, revision, type, variant};
  {
    MutexLock lock(cache_mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  auto line = std::make_shared<const std::string>(render());
  MutexLock lock(cache_mu_);
  if (cache_.emplace(key, line).second) {
    cache_order_.push_back(key);
    cache_bytes_ += line->size();
    // Bounded in entries and in bytes (lines of large objects).
    while (cache_order_.size() > kCacheCapacity ||
           (cache_bytes_ > kCacheBytes && cache_order_.size() > 1)) {
      auto evicted = cache_.find(cache_order_.front());
      cache_bytes_ -= evicted->second->size();
      cache_.erase(evicted);
      cache_order_.pop_front();
    }
  }
  return line;
}

std::shared_ptr<const WatchManager::Selectable> WatchManager::CachedSelectable(
    const ResourceInfo* resource, const store::Object& object) {
  CacheKey key{resource, object.revision, 0};
  {
    MutexLock lock(cache_mu_);
    auto it = selectables_.find(key);
    if (it != selectables_.end()) return it->second;
  }
  auto selectable = std::make_shared<Selectable>();
  if (StatusOr<JsonObject> parsed = ParseObject(object.value); parsed.ok()) {
    resource->ToServed(*parsed);
    selectable->parsed = true;
    selectable->labels = MetaStringMap(*parsed, "labels");
    selectable->fields = FieldsOf(*resource, *parsed);
  }
  MutexLock lock(cache_mu_);
  auto [it, inserted] = selectables_.emplace(key, std::move(selectable));
  if (inserted) {
    selectables_order_.push_back(key);
    if (selectables_order_.size() > kCacheCapacity) {
      selectables_.erase(selectables_order_.front());
      selectables_order_.pop_front();
    }
  }
  return it->second;
}

std::variant<std::unique_ptr<WatchManager::Slot>, ApiError> WatchManager::TakeSlot(
    const std::string& user, bool exempt) {
  MutexLock lock(counts_->mu);
  size_t& mine = counts_->per_user[user];
  if (options_.max_watches > 0 && counts_->total >= options_.max_watches) {
    if (mine == 0) counts_->per_user.erase(user);
    ApiError e = NewTooManyRequests("too many watches open on this server (limit " +
                                    std::to_string(options_.max_watches) + ")");
    e.retry_after_seconds = 1;
    return e;
  }
  // system:masters is exempt from the per-user bound, as API Priority and Fairness exempts it.
  if (options_.max_watches_per_user > 0 && mine >= options_.max_watches_per_user && !exempt) {
    ApiError e =
        NewTooManyRequests("too many watches: user \"" + user + "\" has " + std::to_string(mine) +
                           " open (limit " + std::to_string(options_.max_watches_per_user) + ")");
    e.retry_after_seconds = 1;
    return e;
  }
  ++mine;
  ++counts_->total;
  return std::make_unique<Slot>(counts_, user);
}

void WatchManager::Serve(WatchSpec spec, std::shared_ptr<http::Exchange> exchange) {
  const ResourceInfo* resource = spec.resource;
  // Before any work: a user at its limit costs nothing more.
  auto slot = TakeSlot(spec.user, spec.user_exempt);
  if (auto* e = std::get_if<ApiError>(&slot)) {
    exchange->Respond(ToResponse(*e));
    return;
  }
  std::string store_resource = resource->StoreResource();
  std::vector<std::string> initial;
  store::Revision from = spec.start_revision;
  if (spec.initial_events) {
    store::ListOptions options;
    options.ns = spec.namespace_;
    options.limit = 500;
    while (true) {
      StatusOr<store::ListResult> page = store_->List(store_resource, options);
      if (!page.ok()) {
        exchange->Respond(ToResponse(FromStatus(page.status(), {resource->Gr(), "", ""})));
        return;
      }
      from = page->revision;
      for (const store::ObjectPtr& obj : page->objects) {
        if (!spec.name.empty() && obj->key.name != spec.name) continue;
        std::string served = resource->Served(obj->value, obj->revision);
        if (!spec.labels.Empty() || !spec.fields.empty() || spec.format.kind != OutputKind::kJson) {
          StatusOr<JsonObject> parsed = ParseObject(served);
          if (!parsed.ok() || !Matches(spec, *parsed)) continue;
          if (spec.format.kind == OutputKind::kTable) {
            served = boost::json::serialize(RenderTable(
                *resource, {&*parsed}, spec.format, std::to_string(obj->revision), clock_.Now()));
          }
        }
        initial.push_back(EventLine('A', served));
      }
      if (page->continue_token.empty()) break;
      options.continue_token = page->continue_token;
    }
  }

  Duration timeout = spec.timeout.value_or(Duration(0));
  std::shared_ptr<Session> session;
  {
    MutexLock lock(mu_);
    if (shut_down_) {
      exchange->Respond(ToResponse(NewServiceUnavailable("the server is shutting down")));
      return;
    }
    if (timeout.count() == 0) {
      int64_t min = options_.min_timeout.count();
      timeout = Duration(min + static_cast<int64_t>(random_->Uniform(static_cast<uint64_t>(min))));
    }
    session = std::make_shared<Session>(this, next_id_++, std::move(spec),
                                        clock_.MonotonicNow() + std::max(timeout, Duration(0)),
                                        std::move(std::get<std::unique_ptr<Slot>>(slot)));
  }

  store::WatchOptions options;
  options.ns = session->spec().namespace_;
  options.name = session->spec().name;
  options.revision = from;
  std::weak_ptr<Session> weak = session;
  options.notify = [weak] {
    if (auto s = weak.lock()) s->Notify();
  };
  StatusOr<std::unique_ptr<store::Watcher>> watcher = store_->Watch(store_resource, options);

  std::vector<http::Header> headers = {{"Content-Type", session->spec().format.ContentType()},
                                       {"Cache-Control", "no-cache, private"}};
  std::shared_ptr<http::ResponseStream> stream = exchange->StartStream(200, std::move(headers));
  if (!watcher.ok()) {
    // The watch cache's behaviour: the error travels as an event of a 200 stream.
    // The store says "too old resource version: <asked> (<oldest>)", upstream's text.
    ApiError e = watcher.status().code() == StatusCode::kExpired
                     ? NewResourceExpired(std::string(watcher.status().message()))
                     : FromStatus(watcher.status(), {resource->Gr(), "", ""});
    stream->Write(std::make_shared<const std::string>(EventLine('E', StatusJson(e))));
    stream->Close();
    return;
  }
  if (session->spec().initial_events_end_bookmark) {
    initial.push_back(EventLine('B', BookmarkObject(*resource, from, true)));
  }
  session->Attach(stream, std::move(watcher).value(), std::move(initial));
  {
    MutexLock lock(mu_);
    sessions_[session->id()] = session;
  }
  uint64_t id = session->id();
  stream->SetOnClosed([this, weak, id] {
    if (auto s = weak.lock()) s->Closed();
    Remove(id);
  });
  session->Notify();
}

void WatchManager::Remove(uint64_t id) {
  std::shared_ptr<Session> session;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
}

void WatchManager::Tick() {
  Duration now = clock_.MonotonicNow();
  for (const std::shared_ptr<Session>& s : Sessions()) s->Tick(now);
}

void WatchManager::BookmarkNow() {
  for (const std::shared_ptr<Session>& s : Sessions()) s->BookmarkNow();
}

void WatchManager::EndStreams() {
  for (const std::shared_ptr<Session>& s : Sessions()) s->Close();
}

std::vector<std::shared_ptr<WatchManager::Session>> WatchManager::Sessions() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<Session>> sessions;
  sessions.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) sessions.push_back(s);
  return sessions;
}

void WatchManager::Shutdown() {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    MutexLock lock(mu_);
    shut_down_ = true;
    for (auto& [id, s] : sessions_) sessions.push_back(s);
  }
  for (auto& s : sessions) {
    s->Close();
    s->Closed();
  }
  MutexLock lock(mu_);
  sessions_.clear();
}

size_t WatchManager::active() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

}  // namespace draplane::server::handlers
