#include "server/lifecycle/decision_retention.h"

#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "server/handlers/json_util.h"
#include "server/lifecycle/stored_metadata.h"

namespace draplane::server::lifecycle {
namespace {

constexpr std::string_view kResource = "draplane.dev/allocationdecisions";

const metrics::CounterFamily& Pruned() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "draplane_decisions_pruned_total",
      "AllocationDecision records deleted by the retention bounds.", {"reason"});
  return family;
}

}  // namespace

DecisionRetention::DecisionRetention(store::Store* store, const Clock* clock,
                                     DecisionRetentionOptions options)
    : store_(store), clock_(clock), options_(options) {}

DecisionRetention::~DecisionRetention() { Stop(); }

void DecisionRetention::Index(const store::WatchEvent& event) {
  if (event.object == nullptr) return;
  const store::Key& key = event.object->key;
  auto named = by_name_.find({key.ns, key.name});
  if (named != by_name_.end()) {
    auto ns = index_.find(key.ns);
    if (ns != index_.end()) {
      ns->second.erase(named->second);
      if (ns->second.empty()) index_.erase(ns);
    }
    by_name_.erase(named);
  }
  if (event.type == store::WatchEvent::Type::kDeleted) return;
  Record record;
  record.name = key.name;
  record.revision = event.object->revision;
  // Every record written passes here: its metadata alone, without a DOM.
  StoredMetadata meta;
  if (ReadStoredMetadata(event.object->value, &meta)) {
    std::optional<Timestamp> created = handlers::ParseTime(meta.creation_timestamp);
    if (created) record.created = *created;
    record.finalizers = !meta.finalizers.empty();
  }
  index_[key.ns][event.object->create_revision] = record;
  by_name_[{key.ns, key.name}] = event.object->create_revision;
}

StatusOr<int64_t> DecisionRetention::Load() {
  index_.clear();
  by_name_.clear();
  DRAPLANE_ASSIGN_OR_RETURN(store::Revision current, store_->CurrentRevision());
  store::ListOptions options;
  options.revision = current;
  options.limit = 1000;
  int64_t records = 0;
  while (true) {
    DRAPLANE_ASSIGN_OR_RETURN(store::ListResult page, store_->List(kResource, options));
    for (const store::ObjectPtr& object : page.objects) {
      store::WatchEvent event;
      event.type = store::WatchEvent::Type::kAdded;
      event.object = object;
      Index(event);
      ++records;
    }
    if (page.continue_token.empty()) break;
    options.continue_token = page.continue_token;
  }
  watching_ = false;
  DRAPLANE_RETURN_IF_ERROR(
      watches_.Open(store_, {std::string(kResource)}, current, [this] { worker_.Notify(); }));
  watching_ = true;
  return records;
}

bool DecisionRetention::Drain() {
  // The callback runs inside Drain, on this thread, under the caller's sweep_mu_.
  watching_ = watching_ && watches_.Drain([this](size_t, const store::WatchEvent& e)
                                              DRAPLANE_REQUIRES(sweep_mu_) { Index(e); });
  return watching_;
}

bool DecisionRetention::Delete(const std::string& ns, const Record& record) {
  StatusOr<store::ObjectPtr> deleted = store_->Delete(
      store::Key{std::string(kResource), ns, record.name}, store::Preconditions{record.revision});
  if (deleted.ok() || deleted.status().code() == StatusCode::kNotFound) return true;
  if (deleted.status().code() != StatusCode::kConflict) {
    log::Warning("decision retention: cannot delete {}/{}: {}", ns, record.name,
                 deleted.status().ToString());
  }
  return false;
}

int64_t DecisionRetention::TrimAll() {
  int64_t removed = 0;
  for (auto& [ns, records] : index_) {
    int64_t excess = -options_.max_per_namespace;
    for (const auto& [revision, record] : records) excess += record.finalizers ? 0 : 1;
    for (auto it = records.begin(); excess > 0 && it != records.end(); ++it) {
      if (it->second.finalizers) continue;
      if (Delete(ns, it->second)) {
        --excess;
        ++removed;
      }
    }
  }
  if (removed > 0) Pruned().WithLabels({"count"}).Increment(static_cast<double>(removed));
  return removed;
}

int64_t DecisionRetention::ExpireAll() {
  const Timestamp cutoff = clock_->Now() - options_.max_age;
  int64_t removed = 0;
  for (auto& [ns, records] : index_) {
    // Oldest first by creation; creationTimestamp follows the create order (one server clock),
    // except across servers or a clock step: look a little past the first young record.
    int young = 0;
    for (auto it = records.begin(); it != records.end() && young < 64; ++it) {
      if (it->second.created > cutoff) {
        ++young;
        continue;
      }
      if (!it->second.finalizers && Delete(ns, it->second)) ++removed;
    }
  }
  if (removed > 0) Pruned().WithLabels({"age"}).Increment(static_cast<double>(removed));
  return removed;
}

Status DecisionRetention::Start() {
  {
    MutexLock lock(sweep_mu_);
    DRAPLANE_RETURN_IF_ERROR(Load().status());
    next_sweep_ = clock_->Now() + options_.sweep_interval;
  }
  DRAPLANE_RETURN_IF_ERROR(SweepNow().status());
  worker_.Start("decision-gc", [this] { Run(); });
  return Status::Ok();
}

void DecisionRetention::Stop() { worker_.Stop(); }

void DecisionRetention::Tick() { worker_.Tick(); }

StatusOr<int64_t> DecisionRetention::SweepNow() {
  MutexLock lock(sweep_mu_);
  if (!Drain()) {
    DRAPLANE_RETURN_IF_ERROR(Load().status());
  }
  int64_t removed = ExpireAll();
  // Our own deletes reach the index before the cap is counted, and before anyone looks again.
  if (!Drain()) DRAPLANE_RETURN_IF_ERROR(Load().status());
  removed += TrimAll();
  if (!Drain()) DRAPLANE_RETURN_IF_ERROR(Load().status());
  return removed;
}

void DecisionRetention::Run() {
  while (std::optional<bool> tick = worker_.Wait()) {
    MutexLock lock(sweep_mu_);
    if (!Drain()) {
      log::Warning("decision retention: watch ended; reloading");
      if (StatusOr<int64_t> loaded = Load(); !loaded.ok()) {
        log::Warning("decision retention: reload failed: {}", loaded.status().ToString());
        if (!worker_.Pause(std::chrono::seconds(1))) return;
        worker_.Notify();  // try again
        continue;
      }
    }
    if (*tick && clock_->Now() >= next_sweep_) {
      next_sweep_ = clock_->Now() + options_.sweep_interval;
      if (ExpireAll() > 0 && !Drain()) continue;
    }
    bool over = false;
    for (const auto& [ns, records] : index_) {
      over = over || static_cast<int64_t>(records.size()) > options_.max_per_namespace;
    }
    if (over) TrimAll();
  }
}

}  // namespace draplane::server::lifecycle
