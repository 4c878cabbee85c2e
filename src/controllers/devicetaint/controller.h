// The device taint eviction controller (upstream pkg/controller/devicetainteviction): Pods using
// a device with an untolerated NoExecute taint — from a ResourceSlice (a node agent reporting an
// unhealthy device) or from a DeviceTaintRule — are evicted once their toleration seconds have
// passed, and each DeviceTaintRule reports in its status what it does or would do.
//
// Work (keys of one queue):
//   "evict"        recompute every Pod's eviction time (evaluator.h) from the informer caches;
//                  evict the due ones: Event DeviceTaintManagerEviction ("Marking for
//                  deletion"), Pod condition DisruptionTarget=True (reason
//                  DeletionByDeviceTaintManager), then delete the Pod with a uid precondition;
//                  requeue for the next due time. Any change of a slice, rule, claim or Pod
//                  queues it.
//   "rule:<name>"  the EvictionInProgress condition of a rule (evaluator.h RuleCondition):
//                  written when it changes, at most every `rule_status_period` for the same
//                  generation (upstream ruleStatusPeriod, 10 s), and re-checked after that period
//                  while evictions are pending. Effect None is a dry run: the status says how many
//                  devices the rule selects and which Pods (namespaces, priorities) NoExecute
//                  would evict, and nothing is evicted.
// Taints without timeAdded count from when the controller first saw them.
//
// Thread-safety: Start/Stop from the owner; syncs run on one worker thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "client/api_client.h"
#include "client/events.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "controllers/devicetaint/evaluator.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct DeviceTaintControllerOptions {
  Duration rule_status_period = std::chrono::seconds(10);
  std::string field_manager = "device-taint-eviction-controller";
  client::RateLimiterOptions rate_limits{};
};

class DeviceTaintController {
 public:
  // Registers its informers and handlers with `informers` (before informers.Start()).
  DeviceTaintController(client::ApiClient& api, client::SharedInformers& informers,
                        const Clock& clock, DeviceTaintControllerOptions options = {});
  ~DeviceTaintController();

  void Start();
  void Stop();

  // One sync of a queue key ("evict" or "rule:<name>") on the calling thread (tests).
  Status Sync(const std::string& key);

  // Pods evicted since start, in total and because of one rule (by uid).
  int64_t evicted() const;
  int64_t evicted_by_rule(const std::string& rule_uid) const;

 private:
  devicetaint::Snapshot TakeSnapshot(std::vector<std::shared_ptr<const void>>* keep);
  Status SyncEvictions();
  Status SyncRule(const std::string& name);
  Status Evict(const devicetaint::PodEviction& eviction);
  void NoteTaints();

  client::ApiClient& api_;
  const Clock& clock_;
  const DeviceTaintControllerOptions options_;
  client::Informer<api::resourcev1::ResourceSlice>& slices_;
  client::Informer<api::resourcev1::DeviceTaintRule>& rules_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::corev1::Pod>& pods_;
  client::EventRecorder events_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;

  void NoteSlice(const api::resourcev1::ResourceSlice& slice, bool deleted);
  void NoteRule(const api::resourcev1::DeviceTaintRule& rule, bool deleted);
  bool AnyNoExecuteTaint() const;

  mutable Mutex mu_;
  std::map<std::string, Timestamp> taint_seen_ DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, int64_t> evicted_by_rule_ DRAPLANE_GUARDED_BY(mu_);
  // Slices with a NoExecute device taint and NoExecute rules, by name: while both are empty no
  // pod can be evicted, so claim and pod changes need no evaluation.
  std::set<std::string> noexecute_slices_ DRAPLANE_GUARDED_BY(mu_);
  std::set<std::string> noexecute_rules_ DRAPLANE_GUARDED_BY(mu_);
  int64_t evicted_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

}  // namespace draplane::controllers
