// Bounded retention of decision records (draplane.dev/v1alpha1 AllocationDecision,
// docs/design/decisions.md): the API server deletes records older than `max_age` (by
// creationTimestamp, against the injected clock) and, per namespace, the oldest records beyond
// `max_per_namespace` (oldest = created first, by the store's create revision, which is strictly
// ordered). Records carrying finalizers are left alone (someone asked to keep them) and do not
// count against the cap.
//
// Defaults: 7 days and 10,000 records per namespace (a record is 0.5-4 KiB, so at most ~40 MiB
// per namespace). `draplane serve --decision-max-age` / `--decision-max-per-namespace` change
// them.
//
// The worker thread keeps an index of the records per namespace, oldest first, from a full list
// at start and a store watch after that; it trims a namespace as soon as it goes over its cap,
// and removes expired records every `sweep_interval` of the injected clock (the server's
// once-a-second Tick wakes it to look). Both walk the index from the oldest record, so their cost
// is the number of records removed, not the number stored. Deletes are conditional on the
// revision indexed. Pruned records are counted in
// `draplane_decisions_pruned_total{reason="age"|"count"}`.
//
// Thread-safety: Start/Stop/Tick/SweepNow may be called from any thread.
#pragma once

#include <map>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/internal/watch_worker.h"
#include "store/store.h"

namespace draplane::server::lifecycle {

struct DecisionRetentionOptions {
  Duration max_age = std::chrono::hours(24 * 7);
  int64_t max_per_namespace = 10'000;
  Duration sweep_interval = std::chrono::minutes(1);
};

class DecisionRetention {
 public:
  DecisionRetention(store::Store* store, const Clock* clock, DecisionRetentionOptions options);
  ~DecisionRetention();

  // Counts the stored records, enforces both bounds once, then starts the worker.
  Status Start();
  void Stop();
  // Wakes the worker to look at the clock.
  void Tick();
  // Enforces both bounds now, on the caller's thread. Returns how many records were deleted.
  StatusOr<int64_t> SweepNow();

 private:
  void Run();

  store::Store* store_;
  const Clock* clock_;
  DecisionRetentionOptions options_;

  internal::WatchWorker worker_;

  struct Record {
    std::string name;
    store::Revision revision = 0;  // the revision indexed (delete precondition)
    Timestamp created{};
    bool finalizers = false;
  };
  // Applies one watch event (or listed object) to the index.
  void Index(const store::WatchEvent& event) DRAPLANE_REQUIRES(sweep_mu_);
  // Deletes one indexed record; true when it is gone.
  bool Delete(const std::string& ns, const Record& record) DRAPLANE_REQUIRES(sweep_mu_);
  StatusOr<int64_t> Load() DRAPLANE_REQUIRES(sweep_mu_);
  int64_t TrimAll() DRAPLANE_REQUIRES(sweep_mu_);
  int64_t ExpireAll() DRAPLANE_REQUIRES(sweep_mu_);
  // Drains the watch into the index; false when it ended.
  bool Drain() DRAPLANE_REQUIRES(sweep_mu_);

  // Serialises sweeps between the worker and SweepNow.
  Mutex sweep_mu_;
  internal::ResourceWatches watches_ DRAPLANE_GUARDED_BY(sweep_mu_);
  bool watching_ DRAPLANE_GUARDED_BY(sweep_mu_) = false;
  // namespace -> create revision -> record: oldest first.
  std::map<std::string, std::map<store::Revision, Record>> index_ DRAPLANE_GUARDED_BY(sweep_mu_);
  // store name -> create revision, to find a record from a MODIFIED/DELETED event.
  std::map<std::pair<std::string, std::string>, store::Revision> by_name_
      DRAPLANE_GUARDED_BY(sweep_mu_);
  Timestamp next_sweep_ DRAPLANE_GUARDED_BY(sweep_mu_) = {};
};

}  // namespace draplane::server::lifecycle
