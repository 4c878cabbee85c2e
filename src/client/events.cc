#include "client/events.h"

#include <boost/json.hpp>
#include <cstdio>

#include "api/meta/time.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace draplane::client {
namespace {

constexpr size_t kMaxMessageBytes = 1024;
// client-go tools/events: refreshExistingEventSeries and finishSeries periods; a series quiet
// for kFinishTime is over.
constexpr Duration kRefreshTime = std::chrono::minutes(30);
constexpr Duration kFinishTime = std::chrono::minutes(6);
// client-go EventAggregator's defaults (maxEvents, maxIntervalInSeconds).
constexpr size_t kMaxSimilarMessages = 10;
constexpr Duration kSimilarWindow = std::chrono::minutes(10);

// As kube-scheduler's truncateMessage: a message over the limit ends in " ..." so that readers
// see it was cut.
std::string Truncate(std::string message) {
  if (message.size() <= kMaxMessageBytes) return message;
  constexpr std::string_view kCutMarker = " ...";
  size_t cut = kMaxMessageBytes - kCutMarker.size();
  // Back up to the start of a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  message += kCutMarker;
  return message;
}

}  // namespace

EventRecorder::EventRecorder(ApiClient& api, const Clock& clock, EventRecorderOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {
  {
    MutexLock write_lock(write_mu_);
    // Upstream runs both timers once at start (a no-op: nothing is cached), then every period.
    next_refresh_ = clock_.MonotonicNow() + kRefreshTime;
    next_finish_ = clock_.MonotonicNow() + kFinishTime;
    next_due_ = std::min(next_refresh_, next_finish_).count();
  }
  if (!options_.synchronous) {
    worker_ = std::thread([this] {
      SetCurrentThreadName("event-recorder");
      Run();
    });
  }
}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Record(const api::corev1::ObjectReference& object, std::string_view type,
                           std::string_view reason, std::string message, std::string_view action) {
  Pending event{object, std::string(type), std::string(reason), Truncate(std::move(message)),
                std::string(action)};
  if (options_.synchronous) {
    {
      MutexLock lock(mu_);
      if (stopping_) {
        ++dropped_;
        return;
      }
    }
    MutexLock write_lock(write_mu_);
    Write(event);
    return;
  }
  {
    MutexLock lock(mu_);
    if (stopping_ || queue_.size() >= options_.queue_limit) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(event));
  }
  cv_.NotifyAll();
}

void EventRecorder::Tick() {
  if (!options_.series || clock_.MonotonicNow().count() < next_due_.load()) return;
  if (options_.synchronous) {
    MutexLock write_lock(write_mu_);
    RunTimers();
    return;
  }
  {
    MutexLock lock(mu_);
    if (stopping_ || tick_queued_) return;
    tick_queued_ = true;
    Pending tick;
    tick.tick = true;
    queue_.push_back(std::move(tick));
  }
  cv_.NotifyAll();
}

void EventRecorder::Flush() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return queue_.empty() && !busy_; });
}

void EventRecorder::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.NotifyAll();
  }
  if (worker_.joinable()) worker_.join();
}

int64_t EventRecorder::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

void EventRecorder::Run() {
  MutexLock lock(mu_);
  while (true) {
    cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
    if (queue_.empty() && stopping_) break;
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    if (event.tick) tick_queued_ = false;
    busy_ = true;
    lock.Unlock();
    {
      MutexLock write_lock(write_mu_);
      if (event.tick) {
        RunTimers();
      } else {
        Write(event);
      }
    }
    lock.Lock();
    busy_ = false;
    cv_.NotifyAll();
  }
  cv_.NotifyAll();
}

api::corev1::Event EventRecorder::NewEvent(const Pending& event, Timestamp now) {
  const api::corev1::ObjectReference& ref = event.object;
  api::corev1::Event out;
  out.metadata.namespace_ = ref.namespace_.empty() ? "default" : ref.namespace_;
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx",
                static_cast<unsigned long long>(now.time_since_epoch().count()) +
                    static_cast<unsigned long long>(sequence_++));
  out.metadata.name = ref.name + suffix;
  out.involved_object = ref;
  out.reason = event.reason;
  out.message = event.message;
  out.type = event.type;
  out.reporting_component = options_.component;
  out.reporting_instance = options_.host;
  return out;
}

void EventRecorder::Write(const Pending& event) {
  if (options_.series) {
    WriteSeriesEvent(event);
    return;
  }
  const api::corev1::ObjectReference& ref = event.object;
  // client-go EventAggregator: from the tenth distinct message of one (object, type, reason)
  // within ten minutes, one aggregate event counts them all.
  const std::string similar_key = ref.kind + "\x1f" + ref.namespace_ + "\x1f" + ref.name + "\x1f" +
                                  ref.uid + "\x1f" + event.type + "\x1f" + event.reason;
  const Timestamp at = clock_.Now();
  Similar& similar = similar_[similar_key];
  if (at - similar.last > kSimilarWindow) similar.messages.clear();
  similar.last = at;
  similar.messages.insert(event.message);
  const bool aggregated = similar.messages.size() >= kMaxSimilarMessages;
  // As client-go's PopAny: the set stays below the maximum, so it never grows with a stuck
  // object's retries, and a message still in it goes back to its own event.
  if (aggregated) similar.messages.erase(similar.messages.begin());
  if (similar_.size() > options_.cache_size) {
    std::erase_if(similar_,
                  [&](const auto& entry) { return at - entry.second.last > kSimilarWindow; });
    if (similar_.size() > options_.cache_size) similar_.clear();  // bounded, at worst forgotten
  }
  std::string key = aggregated ? similar_key : similar_key + "\x1f" + event.message;
  std::string message =
      aggregated ? Truncate(std::string(kCombinedEventPrefix) + event.message) : event.message;
  std::string now = api::Time::FromTimestamp(at).text();

  auto found = correlated_.find(key);
  if (found != correlated_.end()) {
    Correlated& c = found->second;
    lru_.erase(c.lru);
    lru_.push_front(key);
    c.lru = lru_.begin();
    boost::json::object patch{{"count", c.count + 1}, {"lastTimestamp", now}};
    if (aggregated) patch["message"] = message;
    StatusOr<api::corev1::Event> patched =
        Patch<api::corev1::Event>(api_, c.namespace_, c.name, PatchType::kMerge, std::move(patch));
    if (patched.ok()) {
      c.count = patched->count;
      return;
    }
    if (patched.status().code() != StatusCode::kNotFound) {
      log::Debug("event {}: {}", c.name, patched.status().ToString());
      return;
    }
    // The event is gone (expired): record a new one below.
    lru_.erase(c.lru);
    correlated_.erase(found);
  }

  api::corev1::Event out = NewEvent(event, at);
  out.message = std::move(message);
  out.source.component = options_.component;
  out.source.host = options_.host;
  out.count = 1;
  StatusOr<api::Time> t = api::Time::Parse(now);
  if (t.ok()) {
    out.first_timestamp = *t;
    out.last_timestamp = *t;
  }
  StatusOr<api::corev1::Event> created = Create(api_, out);
  if (!created.ok()) {
    log::Debug("event for {}/{}: {}", ref.namespace_, ref.name, created.status().ToString());
    return;
  }
  lru_.push_front(key);
  correlated_[key] =
      Correlated{created->metadata.namespace_, created->metadata.name, 1, now, lru_.begin()};
  while (correlated_.size() > options_.cache_size && !lru_.empty()) {
    correlated_.erase(lru_.back());
    lru_.pop_back();
  }
}

// client-go tools/events recordToSink: the first of its kind is created, the second starts the
// series and writes it, later ones only count.
void EventRecorder::WriteSeriesEvent(const Pending& event) {
  const api::corev1::ObjectReference& ref = event.object;
  // getKey: type, action, reason, reporting controller and instance (this recorder's own), the
  // regarding reference whole; no related object is ever recorded.
  std::string key;
  for (const std::string* part :
       {&event.type, &event.action, &event.reason, &ref.kind, &ref.api_version, &ref.namespace_,
        &ref.name, &ref.uid, &ref.resource_version, &ref.field_path}) {
    key += *part;
    key += '\x1f';
  }
  Timestamp now = clock_.Now();
  auto [found, added] = isomorphic_.try_emplace(std::move(key));
  Isomorphic& entry = found->second;
  if (!added) {
    entry.last_observed = now;
    if (entry.count > 0) {
      ++entry.count;
      return;
    }
    entry.count = 2;
    WriteSeries(entry);
    return;
  }
  api::corev1::Event out = NewEvent(event, now);
  out.action = event.action;
  out.event_time = api::Time::MicroFromTimestamp(now);
  // Cached before the write, as upstream does: a failed create is not retried by a repeat.
  entry.event = out;
  entry.last_observed = now;
  Status created = CreateOnly(api_, std::move(out));
  if (!created.ok()) {
    log::Debug("event for {}/{}: {}", ref.namespace_, ref.name, created.ToString());
  }
}

bool EventRecorder::WriteSeries(const Isomorphic& entry) {
  const api::corev1::Event& event = entry.event;
  api::Time observed = api::Time::MicroFromTimestamp(entry.last_observed);
  boost::json::object patch{{"series", boost::json::object{{"count", entry.count},
                                                           {"lastObservedTime", observed.text()}}}};
  Status patched = PatchOnly<api::corev1::Event>(
      api_, event.metadata.namespace_, event.metadata.name, PatchType::kMerge, std::move(patch));
  if (patched.ok()) return true;
  if (patched.code() == StatusCode::kNotFound) {
    // Expired (the API's event TTL): created again, series and all.
    api::corev1::Event again = event;
    api::corev1::EventSeries& series = again.series.emplace();
    series.count = entry.count;
    series.last_observed_time = observed;
    Status created = CreateOnly(api_, again);
    if (created.ok()) return true;
    patched = created;
  }
  log::Debug("event {}: {}", event.metadata.name, patched.ToString());
  // As recordEvent: worth retrying only when the API could not be reached.
  StatusCode code = patched.code();
  return code != StatusCode::kUnavailable && code != StatusCode::kDeadlineExceeded;
}

void EventRecorder::RunTimers() {
  Duration monotonic = clock_.MonotonicNow();
  Timestamp now = clock_.Now();
  if (monotonic >= next_refresh_) {
    // refreshExistingEventSeries: every open series' count, which keeps the Event from expiring.
    for (auto& [key, entry] : isomorphic_) {
      if (entry.count > 0) WriteSeries(entry);
    }
    next_refresh_ = monotonic + kRefreshTime;
  }
  if (monotonic >= next_finish_) {
    // finishSeries: a series quiet for kFinishTime is written a last time and forgotten (kept
    // for the next round when the API could not be reached); a singleton that old is forgotten.
    for (auto it = isomorphic_.begin(); it != isomorphic_.end();) {
      const Isomorphic& entry = it->second;
      bool over = entry.count > 0 ? entry.last_observed < now - kFinishTime && WriteSeries(entry)
                                  : entry.event.event_time.ToTimestamp() < now - kFinishTime;
      it = over ? isomorphic_.erase(it) : std::next(it);
    }
    next_finish_ = monotonic + kFinishTime;
  }
  next_due_ = std::min(next_refresh_, next_finish_).count();
}

}  // namespace draplane::client
