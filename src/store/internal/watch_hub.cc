#include "store/internal/watch_hub.h"

#include <algorithm>
#include <utility>

#include "common/check.h"
#include "common/mutex.h"

namespace draplane::store {

std::string_view WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

namespace internal {

namespace {

struct HubMetrics {
  metrics::GaugeFamily watchers = metrics::NewGaugeFamily(
      "draplane_store_watchers", "Open store watches.", {"backend", "resource"});
  metrics::CounterFamily events = metrics::NewCounterFamily(
      "draplane_store_watch_events_total", "Events queued to store watches.", {"backend"});
  metrics::CounterFamily terminations = metrics::NewCounterFamily(
      "draplane_store_watch_terminations_total",
      "Store watches ended by the store (not by their consumer), by reason.",
      {"backend", "reason"});
};

const HubMetrics& Metrics() {
  static const HubMetrics* metrics = new HubMetrics();
  return *metrics;
}

}  // namespace

class HubCore {
 public:
  explicit HubCore(const WatchHubOptions& options)
      : options_(options),
        current_(options.start_revision),
        window_start_(options.start_revision),
        events_counter_(Metrics().events.WithLabels({options.backend})) {}

  NotifyList Publish(const std::vector<WatchEvent>& events) {
    NotifyList notify;
    MutexLock lock(mu_);
    for (const WatchEvent& event : events) {
      // Revisions never go back. etcd may report several events at one revision when another
      // client wrote several keys under the prefix in one transaction.
      DRAPLANE_CHECK(event.revision >= current_ && event.object != nullptr);
      current_ = event.revision;
      if (event.revision > window_start_) {
        ring_.push_back(event);
        ring_bytes_ += EventBytes(event);
      }
      auto it = watchers_.find(event.object->key.resource);
      if (it == watchers_.end()) continue;
      auto& by_id = it->second;
      for (auto w = by_id.begin(); w != by_id.end();) {
        WatchState& state = *w->second;
        if (!state.Matches(*event.object)) {
          ++w;
          continue;
        }
        const bool wake = state.Push(event, /*bounded=*/true);
        events_counter_.Increment();
        if (wake) notify.push_back(w->second);
        if (state.ended()) {
          Metrics().terminations.WithLabels({options_.backend, "too_slow"}).Increment();
          WatcherGauge(it->first).Decrement();
          w = by_id.erase(w);
        } else {
          ++w;
        }
      }
    }
    TrimLocked();
    return notify;
  }

  void AdvanceTo(Revision revision) {
    MutexLock lock(mu_);
    current_ = std::max(current_, revision);
  }

  // Registers `state` from revision `from` if the ring covers it; otherwise returns the
  // ring's window start (the caller backfills up to it and retries).
  std::optional<Revision> TryRegister(const std::shared_ptr<WatchState>& state, Revision from,
                                      const std::shared_ptr<HubCore>& self) {
    MutexLock lock(mu_);
    if (from < window_start_) return window_start_;
    auto first =
        std::upper_bound(ring_.begin(), ring_.end(), from,
                         [](Revision r, const WatchEvent& event) { return r < event.revision; });
    for (auto it = first; it != ring_.end(); ++it) {
      if (it->object->key.resource == state->resource() && state->Matches(*it->object)) {
        state->Push(*it, /*bounded=*/false);
      }
    }
    const uint64_t id = ++next_id_;
    state->Attach(self, id);
    watchers_[state->resource()].emplace(id, state);
    WatcherGauge(state->resource()).Increment();
    return std::nullopt;
  }

  Revision CurrentLocked() const DRAPLANE_REQUIRES(mu_) { return current_; }

  void Remove(const std::string& resource, uint64_t id) {
    MutexLock lock(mu_);
    auto it = watchers_.find(resource);
    if (it == watchers_.end()) return;
    if (it->second.erase(id) > 0) WatcherGauge(resource).Decrement();
    if (it->second.empty()) watchers_.erase(it);
  }

  // Queues a bookmark for watcher `id` at the newest revision it has fully seen.
  void Bookmark(const std::string& resource, uint64_t id) {
    std::shared_ptr<WatchState> state;
    bool wake = false;
    {
      MutexLock lock(mu_);
      auto it = watchers_.find(resource);
      if (it == watchers_.end()) return;
      auto w = it->second.find(id);
      if (w == it->second.end()) return;
      state = w->second;
      WatchEvent bookmark;
      bookmark.type = WatchEvent::Type::kBookmark;
      bookmark.revision = std::max(current_, state->last_revision());
      // A bookmark never ends a watch: Push drops it while the queue is full.
      wake = state->Push(bookmark, /*bounded=*/true);
    }
    if (wake) state->Notify();
  }

  void Compact(Revision revision) {
    MutexLock lock(mu_);
    // The window may move past current_ when the publisher lags behind the backend (etcd):
    // events still arriving at or before `revision` go to live watchers but not into the ring.
    while (!ring_.empty() && ring_.front().revision <= revision) {
      ring_bytes_ -= EventBytes(ring_.front());
      ring_.pop_front();
    }
    window_start_ = std::max(window_start_, revision);
  }

  NotifyList TerminateAll(const Status& status, Revision restart_revision,
                          std::string_view reason) {
    NotifyList notify;
    MutexLock lock(mu_);
    for (auto& [resource, by_id] : watchers_) {
      for (auto& [id, state] : by_id) {
        if (state->End(status)) {
          notify.push_back(state);
          Metrics().terminations.WithLabels({options_.backend, reason}).Increment();
        }
        WatcherGauge(resource).Decrement();
      }
    }
    watchers_.clear();
    ring_.clear();
    ring_bytes_ = 0;
    current_ = std::max(current_, restart_revision);
    window_start_ = current_;
    return notify;
  }

  Revision current() const {
    MutexLock lock(mu_);
    return current_;
  }
  Revision window_start() const {
    MutexLock lock(mu_);
    return window_start_;
  }
  size_t watcher_count() const {
    MutexLock lock(mu_);
    size_t n = 0;
    for (const auto& [resource, by_id] : watchers_) n += by_id.size();
    return n;
  }
  size_t default_queue_limit() const { return options_.default_queue_limit; }

 private:
  // The bytes an event in the ring keeps alive: its object's value (the previous version is the
  // object of an earlier event, or the store's latest state, and counted there).
  static size_t EventBytes(const WatchEvent& event) {
    return event.object != nullptr ? event.object->value.size() : 0;
  }

  void TrimLocked() DRAPLANE_REQUIRES(mu_) {
    if (options_.ring_limit == 0) return;
    while (!ring_.empty() && (ring_.size() > options_.ring_limit ||
                              (options_.ring_byte_limit > 0 &&
                               ring_bytes_ > options_.ring_byte_limit && ring_.size() > 1))) {
      window_start_ = ring_.front().revision;
      ring_bytes_ -= EventBytes(ring_.front());
      ring_.pop_front();
    }
  }

  metrics::Gauge WatcherGauge(const std::string& resource) DRAPLANE_REQUIRES(mu_) {
    auto it = gauges_.find(resource);
    if (it == gauges_.end()) {
      it = gauges_.emplace(resource, Metrics().watchers.WithLabels({options_.backend, resource}))
               .first;
    }
    return it->second;
  }

  const WatchHubOptions options_;
  mutable Mutex mu_;
  std::deque<WatchEvent> ring_ DRAPLANE_GUARDED_BY(mu_);
  size_t ring_bytes_ DRAPLANE_GUARDED_BY(mu_) = 0;  // EventBytes of ring_'s events
  Revision current_ DRAPLANE_GUARDED_BY(mu_);
  Revision window_start_ DRAPLANE_GUARDED_BY(mu_);
  uint64_t next_id_ DRAPLANE_GUARDED_BY(mu_) = 0;
  // resource → watcher id → state.
  std::map<std::string, std::map<uint64_t, std::shared_ptr<WatchState>>, std::less<>> watchers_
      DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, metrics::Gauge, std::less<>> gauges_ DRAPLANE_GUARDED_BY(mu_);
  metrics::Counter events_counter_;
};

// ---------------------------------------------------------------------------------------------
// WatchState

WatchState::WatchState(std::string resource, const WatchOptions& options, size_t queue_limit)
    : resource_(std::move(resource)),
      ns_(options.ns),
      name_(options.name),
      queue_limit_(queue_limit),
      notify_(options.notify) {}

bool WatchState::Matches(const Object& object) const {
  return object.key.resource == resource_ && (ns_.empty() || object.key.ns == ns_) &&
         (name_.empty() || object.key.name == name_);
}

void WatchState::SetStartRevision(Revision revision) {
  MutexLock lock(mu_);
  start_revision_ = revision;
  last_revision_ = revision;
}

Revision WatchState::last_revision() const {
  MutexLock lock(mu_);
  return last_revision_;
}

bool WatchState::Push(const WatchEvent& event, bool bounded) {
  MutexLock lock(mu_);
  if (ended_) return false;
  if (event.type == WatchEvent::Type::kBookmark ? event.revision < last_revision_
                                                : event.revision <= start_revision_) {
    return false;
  }
  if (bounded && queue_.size() >= queue_limit_) {
    if (event.type == WatchEvent::Type::kBookmark) return false;
    ended_ = true;
    end_ = ResourceExhaustedError(
        "watch of " + resource_ + " closed: the consumer fell more than " +
        std::to_string(queue_limit_) + " events behind; resume from revision " +
        std::to_string(last_revision_));
    cv_.NotifyAll();
    return true;
  }
  const bool was_empty = queue_.empty();
  queue_.push_back(event);
  last_revision_ = event.revision;
  if (was_empty) cv_.NotifyAll();
  return was_empty;
}

bool WatchState::End(Status status) {
  MutexLock lock(mu_);
  if (ended_) return false;
  ended_ = true;
  end_ = std::move(status);
  cv_.NotifyAll();
  return true;
}

bool WatchState::ended() const {
  MutexLock lock(mu_);
  return ended_;
}

void WatchState::Notify() {
  if (!notify_) return;
  RecursiveMutexLock lock(notify_mu_);
  if (!cancelled_) notify_();
}

void WatchState::Attach(std::weak_ptr<HubCore> hub, uint64_t id) {
  MutexLock lock(mu_);
  hub_ = std::move(hub);
  id_ = id;
}

Status WatchState::Poll(std::vector<WatchEvent>* out, size_t max_events) {
  MutexLock lock(mu_);
  if (queue_.empty()) return ended_ ? end_ : Status::Ok();
  size_t n = std::min(max_events, queue_.size());
  for (size_t i = 0; i < n; ++i) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return Status::Ok();
}

StatusOr<WatchEvent> WatchState::Next() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [this]() DRAPLANE_REQUIRES(mu_) { return !queue_.empty() || ended_; });
  if (queue_.empty()) return end_;
  WatchEvent event = std::move(queue_.front());
  queue_.pop_front();
  return event;
}

void WatchState::RequestBookmark() {
  std::shared_ptr<HubCore> hub;
  uint64_t id;
  {
    MutexLock lock(mu_);
    if (ended_) return;
    hub = hub_.lock();
    id = id_;
  }
  if (hub) hub->Bookmark(resource_, id);
}

void WatchState::Cancel() {
  {
    RecursiveMutexLock lock(notify_mu_);
    cancelled_ = true;
  }
  std::shared_ptr<HubCore> hub;
  uint64_t id;
  {
    MutexLock lock(mu_);
    queue_.clear();
    if (!ended_) {
      ended_ = true;
      end_ = CancelledError("watch of " + resource_ + " cancelled");
    } else if (end_.code() != StatusCode::kCancelled) {
      end_ = CancelledError("watch of " + resource_ + " cancelled");
    }
    cv_.NotifyAll();
    hub = hub_.lock();
    id = id_;
    hub_.reset();
  }
  if (hub) hub->Remove(resource_, id);
}

Status WatchState::status() const {
  MutexLock lock(mu_);
  return ended_ ? end_ : Status::Ok();
}

void RunNotifies(const NotifyList& list) {
  for (const std::shared_ptr<WatchState>& state : list) state->Notify();
}

// ---------------------------------------------------------------------------------------------
// WatchHub

WatchHub::WatchHub(const WatchHubOptions& options) : core_(std::make_shared<HubCore>(options)) {}

WatchHub::~WatchHub() {
  RunNotifies(core_->TerminateAll(CancelledError("store closed"), 0, "store_closed"));
}

NotifyList WatchHub::Publish(const std::vector<WatchEvent>& events) {
  return core_->Publish(events);
}

void WatchHub::AdvanceTo(Revision revision) { core_->AdvanceTo(revision); }

StatusOr<std::unique_ptr<Watcher>> WatchHub::Subscribe(std::string_view resource,
                                                       const WatchOptions& options,
                                                       const Backfill& backfill) {
  const size_t limit = options.queue_limit > 0 ? options.queue_limit : core_->default_queue_limit();
  auto state = std::make_shared<WatchState>(std::string(resource), options, limit);
  Revision from = options.revision > 0 ? options.revision : core_->current();
  state->SetStartRevision(from);
  while (true) {
    std::optional<Revision> window_start = core_->TryRegister(state, from, core_);
    if (!window_start.has_value()) break;
    if (!backfill) {
      return ExpiredError("too old resource version: " + std::to_string(from) + " (" +
                          std::to_string(*window_start) + ")");
    }
    StatusOr<std::vector<WatchEvent>> events = backfill(resource, from, *window_start);
    if (!events.ok()) return events.status();
    for (const WatchEvent& event : *events) {
      if (state->Matches(*event.object)) state->Push(event, /*bounded=*/false);
    }
    from = *window_start;
  }
  return std::make_unique<Watcher>(std::move(state));
}

void WatchHub::Compact(Revision revision) { core_->Compact(revision); }

NotifyList WatchHub::TerminateAll(const Status& status, Revision restart_revision) {
  return core_->TerminateAll(status, restart_revision, "backend_lost");
}

Revision WatchHub::current() const { return core_->current(); }
Revision WatchHub::window_start() const { return core_->window_start(); }
size_t WatchHub::watcher_count() const { return core_->watcher_count(); }

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Watcher (store.h)

Watcher::Watcher(std::shared_ptr<internal::WatchState> state) : state_(std::move(state)) {}
Watcher::~Watcher() { state_->Cancel(); }
Status Watcher::Poll(std::vector<WatchEvent>* out, size_t max_events) {
  return state_->Poll(out, max_events);
}
StatusOr<WatchEvent> Watcher::Next() { return state_->Next(); }
void Watcher::RequestBookmark() { state_->RequestBookmark(); }
void Watcher::Cancel() { state_->Cancel(); }
Status Watcher::status() const { return state_->status(); }

}  // namespace draplane::store
