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

std::string Truncate(std::string message) {
  if (message.size() <= kMaxMessageBytes) return message;
  size_t cut = kMaxMessageBytes;
  // Back up to the start of a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  return message;
}

}  // namespace

EventRecorder::EventRecorder(ApiClient& api, const Clock& clock, EventRecorderOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {
  if (!options_.synchronous) {
    worker_ = std::thread([this] {
      SetCurrentThreadName("event-recorder");
      Run();
    });
  }
}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Record(const api::corev1::ObjectReference& object, std::string_view type,
                           std::string_view reason, std::string message) {
  Pending event{object, std::string(type), std::string(reason), Truncate(std::move(message))};
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
    busy_ = true;
    lock.Unlock();
    {
      MutexLock write_lock(write_mu_);
      Write(event);
    }
    lock.Lock();
    busy_ = false;
    cv_.NotifyAll();
  }
  cv_.NotifyAll();
}

void EventRecorder::Write(const Pending& event) {
  const api::corev1::ObjectReference& ref = event.object;
  std::string key = ref.kind + "\x1f" + ref.namespace_ + "\x1f" + ref.name + "\x1f" + ref.uid +
                    "\x1f" + event.type + "\x1f" + event.reason + "\x1f" + event.message;
  std::string now = api::Time::FromTimestamp(clock_.Now()).text();

  auto found = correlated_.find(key);
  if (found != correlated_.end()) {
    Correlated& c = found->second;
    lru_.erase(c.lru);
    lru_.push_front(key);
    c.lru = lru_.begin();
    boost::json::object patch{{"count", c.count + 1}, {"lastTimestamp", now}};
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

  api::corev1::Event out;
  out.metadata.namespace_ = ref.namespace_.empty() ? "default" : ref.namespace_;
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx",
                static_cast<unsigned long long>(clock_.Now().time_since_epoch().count()) +
                    static_cast<unsigned long long>(sequence_++));
  out.metadata.name = ref.name + suffix;
  out.involved_object = ref;
  out.reason = event.reason;
  out.message = event.message;
  out.type = event.type;
  out.source.component = options_.component;
  out.source.host = options_.host;
  out.reporting_component = options_.component;
  out.reporting_instance = options_.host;
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

}  // namespace draplane::client
