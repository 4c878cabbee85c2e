#include "server/lifecycle/event_expiry.h"

#include <algorithm>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "server/handlers/json_util.h"
#include "server/handlers/registry.h"

namespace draplane::server::lifecycle {
namespace {

// The Events' storage: core/v1's, which keeps events.k8s.io/v1 Events too (api/events.h).
const std::vector<std::string>& EventResources() {
  static const std::vector<std::string> resources = {
      handlers::Registry::Default().Find("", "v1", "events")->StoreResource()};
  return resources;
}

const metrics::CounterFamily& Expired() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "draplane_events_expired_total", "Events deleted because their TTL passed (--event-ttl).",
      {"resource"});
  return family;
}

}  // namespace

EventExpiry::EventExpiry(store::Store* store, const Clock* clock, Duration ttl)
    : store_(store), clock_(clock), ttl_(ttl) {}

EventExpiry::~EventExpiry() { Stop(); }

std::optional<Timestamp> EventExpiry::LastRecordedTime(std::string_view value) {
  StatusOr<handlers::JsonObject> event = handlers::ParseObject(value);
  if (!event.ok()) return std::nullopt;
  std::optional<Timestamp> newest;
  auto consider = [&](std::string_view text) {
    if (text.empty()) return;
    std::optional<Timestamp> time = handlers::ParseTime(text);
    if (time && (!newest || *time > *newest)) newest = time;
  };
  consider(handlers::MetaString(*event, "creationTimestamp"));
  // Stored in core/v1's form, whichever API wrote it.
  for (std::string_view field : {"firstTimestamp", "lastTimestamp", "eventTime"}) {
    consider(handlers::GetString(*event, field));
  }
  consider(handlers::GetPathString(*event, {"series", "lastObservedTime"}));
  return newest;
}

void EventExpiry::Index(const store::WatchEvent& event, Timestamp expiry) {
  if (event.object == nullptr) return;
  const store::Key& key = event.object->key;
  auto it = events_.find(key);
  if (it != events_.end()) {
    by_expiry_.erase({it->second.expiry, key});
    if (event.type == store::WatchEvent::Type::kDeleted) {
      events_.erase(it);
      return;
    }
    it->second = Entry{event.object->revision, expiry};
  } else {
    if (event.type == store::WatchEvent::Type::kDeleted) return;
    events_.emplace(key, Entry{event.object->revision, expiry});
  }
  by_expiry_.emplace(expiry, key);
}

StatusOr<int64_t> EventExpiry::Load() {
  events_.clear();
  by_expiry_.clear();
  DRAPLANE_ASSIGN_OR_RETURN(store::Revision current, store_->CurrentRevision());
  const Timestamp now = clock_->Now();
  int64_t loaded = 0;
  for (const std::string& resource : EventResources()) {
    store::ListOptions options;
    options.revision = current;
    options.limit = 1000;
    while (true) {
      DRAPLANE_ASSIGN_OR_RETURN(store::ListResult page, store_->List(resource, options));
      for (const store::ObjectPtr& object : page.objects) {
        store::WatchEvent event;
        event.type = store::WatchEvent::Type::kAdded;
        event.object = object;
        Timestamp written = std::min(now, LastRecordedTime(object->value).value_or(now));
        Index(event, written + ttl_);
        ++loaded;
      }
      if (page.continue_token.empty()) break;
      options.continue_token = page.continue_token;
    }
  }
  watching_ = false;
  DRAPLANE_RETURN_IF_ERROR(
      watches_.Open(store_, EventResources(), current, [this] { worker_.Notify(); }));
  watching_ = true;
  return loaded;
}

bool EventExpiry::Drain() {
  // A write seen now renews the Event's lease from now (the watch delivers within moments of
  // the write; upstream's lease starts at the write itself).
  const Timestamp expiry = clock_->Now() + ttl_;
  // The callback runs inside Drain, on this thread, under the caller's sweep_mu_.
  watching_ = watching_ && watches_.Drain([&](size_t, const store::WatchEvent& e)
                                              DRAPLANE_REQUIRES(sweep_mu_) { Index(e, expiry); });
  return watching_;
}

Status EventExpiry::Follow() {
  if (Drain()) return Status::Ok();
  return Load().status();
}

int64_t EventExpiry::ExpireDue() {
  const Timestamp now = clock_->Now();
  int64_t removed = 0;
  for (auto it = by_expiry_.begin(); it != by_expiry_.end() && std::get<0>(*it) <= now;) {
    const store::Key& key = std::get<1>(*it);
    const Entry& entry = events_.at(key);
    StatusOr<store::ObjectPtr> deleted = store_->Delete(key, store::Preconditions{entry.revision});
    if (deleted.ok()) {
      ++removed;
      Expired().WithLabels({key.resource}).Increment();
    }
    if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound &&
        deleted.status().code() != StatusCode::kConflict) {
      log::Warning("event expiry: cannot delete {}: {}", store::KeyToString(key),
                   deleted.status().ToString());
      ++it;  // tried again at the next sweep
      continue;
    }
    // Gone, or written meanwhile: the watch brings the DELETED or the renewed Event; until then
    // it is not looked at again.
    events_.erase(key);
    it = by_expiry_.erase(it);
  }
  return removed;
}

Status EventExpiry::Start() {
  {
    MutexLock lock(sweep_mu_);
    DRAPLANE_RETURN_IF_ERROR(Load().status());
  }
  DRAPLANE_RETURN_IF_ERROR(SweepNow().status());
  worker_.Start("event-ttl", [this] { Run(); });
  return Status::Ok();
}

void EventExpiry::Stop() { worker_.Stop(); }

void EventExpiry::Tick() { worker_.Tick(); }

StatusOr<int64_t> EventExpiry::SweepNow() {
  MutexLock lock(sweep_mu_);
  DRAPLANE_RETURN_IF_ERROR(Follow());
  int64_t removed = ExpireDue();
  DRAPLANE_RETURN_IF_ERROR(Follow());
  return removed;
}

void EventExpiry::Run() {
  while (std::optional<bool> tick = worker_.Wait()) {
    MutexLock lock(sweep_mu_);
    if (Status followed = Follow(); !followed.ok()) {
      log::Warning("event expiry: reload failed: {}", followed.ToString());
      if (!worker_.Pause(std::chrono::seconds(1))) return;
      worker_.Notify();  // try again
      continue;
    }
    if (*tick) ExpireDue();
  }
}

}  // namespace draplane::server::lifecycle
