// The taint eviction controller (upstream pkg/controller/tainteviction): Pods bound to a node
// with NoExecute taints are deleted once no toleration keeps them there.
//
// For each Pod on a node with NoExecute taints (the rule: api/labels/taints.h
// NoExecuteEvictionTime):
//   - a taint no toleration of the Pod tolerates (api/labels/taints.h) evicts it now;
//   - otherwise it is evicted at the earliest, over the taints and the tolerations of them that
//     have tolerationSeconds (negative counts as 0), of the seconds after the later of the
//     taint's timeAdded and the Pod's arrival on the node (its PodScheduled condition's
//     lastTransitionTime, else its creation); never when none has seconds. Upstream's taint
//     manager counts from when it sees the Pod on the tainted node, which is the same instant
//     but lost when the controller restarts; a taint without timeAdded counts from when this
//     controller first saw it. A Pod scheduled onto a node whose NoExecute taint it tolerates
//     (a node coming back, before the taint is lifted) therefore gets its full toleration.
// Eviction: Event TaintManagerEviction ("Marking for deletion Pod <ns>/<name>"), the condition
// DisruptionTarget=True (DeletionByTaintManager), a delete with the Pod's uid as precondition
// (internal/evict_pod.h). Metrics under upstream's names:
// taint_eviction_controller_pod_deletions_total and ..._pod_deletion_duration_seconds (from when
// the eviction became due).
//
// Work: one key per node ("<name>"), queued by the node's taint changes and by Pods bound to it,
// and again at the next due time.
//
// Thread-safety: Start/Stop from the owner; syncs run on one worker thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "client/events.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct TaintEvictionOptions {
  std::string field_manager = "taint-eviction-controller";
};

class TaintEvictionController {
 public:
  // Registers its informers and handlers with `informers` (before informers.Start()).
  TaintEvictionController(client::ApiClient& api, client::SharedInformers& informers,
                          const Clock& clock, TaintEvictionOptions options = {});
  ~TaintEvictionController();
  TaintEvictionController(const TaintEvictionController&) = delete;
  TaintEvictionController& operator=(const TaintEvictionController&) = delete;

  void Start();
  void Stop();

  // Evicts the due Pods of one node on the calling thread (tests).
  Status Sync(const std::string& node);

 private:
  Timestamp FirstSeen(const std::string& node, const api::corev1::Taint& taint);

  client::ApiClient& api_;
  const Clock& clock_;
  const TaintEvictionOptions options_;
  client::Informer<api::corev1::Node>& nodes_;
  client::Informer<api::corev1::Pod>& pods_;
  client::EventRecorder events_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
  // (node, key, value) -> when a NoExecute taint without timeAdded was first seen; the
  // worker's alone.
  std::map<std::tuple<std::string, std::string, std::string>, Timestamp> first_seen_;
};

}  // namespace draplane::controllers
