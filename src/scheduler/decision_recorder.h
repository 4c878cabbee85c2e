// Decision records (docs/design/holdings.md, "Decision records"): one `AllocationDecision`
// (draplane.dev/v1alpha1, in the Pod's namespace) per allocation the scheduler commits, saying
// for which Pod, which claims, on which node, per request the subrequest chosen and its
// devices, the tiers not taken and why (on the chosen node, capped), what the quotas were
// charged, the policy inputs with their resourceVersions (`policyVersion`), who decided and
// when.
//
// Writing is off the scheduling path: the loop thread only builds the object and queues it; a
// writer thread creates queued records in batches (one wake-up per batch). Creating a record
// costs about as much CPU as a binding's writes, and in a burst of bindings it took that CPU
// from them (about 5 % of the scheduler_perf template workload), so the writer runs as
// background work (common/thread_priority.h: CPU nobody else wants) while it keeps up, and
// competes normally once a quarter of the queue is full. The queue is bounded:
// when it is full, records are dropped and counted (draplane_decisions_dropped_total) rather
// than slowing scheduling down; a record that fails to write is dropped and counted too.
//
// Thread-safety: Record may be called from any thread; Start/Stop from the owner.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/draplane_v1alpha1_types.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "scheduler/plugins/dynamic_resources.h"

namespace draplane::scheduler {

// One policy object the decision depended on.
struct PolicyInputRef {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string resource_version;
  std::string mode;  // quotas: "Allocation" or "Admission"
};

struct DecisionContext {
  const api::corev1::Pod* pod = nullptr;
  const DeviceDecision* decision = nullptr;
  std::vector<PolicyInputRef> inputs;  // sorted by the caller (kind, namespace, name)
  std::string scheduler_name;
  std::string instance;
  Timestamp time;
  int nodes_evaluated = 0;
  int nodes_feasible = 0;
};

// The record for a committed allocation. Its name is `<pod>-<first 8 of the pod uid>` (a Pod is
// bound once), cut to fit; `policyVersion.digest` is a hash of the inputs. Pure.
api::draplanev1alpha1::AllocationDecision MakeAllocationDecision(const DecisionContext& context);

struct DecisionRecorderOptions {
  size_t queue_limit = 10'000;
  size_t batch = 256;
  // Write on the calling thread (tests, simulator).
  bool synchronous = false;
};

class DecisionRecorder {
 public:
  DecisionRecorder(client::ApiClient& api, DecisionRecorderOptions options,
                   metrics::Counter written, metrics::Counter dropped);
  ~DecisionRecorder();
  DecisionRecorder(const DecisionRecorder&) = delete;
  DecisionRecorder& operator=(const DecisionRecorder&) = delete;

  // Queues a record (drops it when the queue is full).
  void Record(api::draplanev1alpha1::AllocationDecision decision);
  // Writes what is queued, then stops the writer.
  void Stop();

 private:
  void Loop();
  void Write(const api::draplanev1alpha1::AllocationDecision& decision);

  client::ApiClient& api_;
  const DecisionRecorderOptions options_;
  metrics::Counter written_;
  metrics::Counter dropped_;
  Mutex mu_;
  CondVar cv_;
  std::deque<api::draplanev1alpha1::AllocationDecision> queue_ DRAPLANE_GUARDED_BY(mu_);
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace draplane::scheduler
