// A fake kubelet (`draplane fakekubelet`): the kubelet's side of the DRA plugin APIs, without
// containers, for testing kubelet plugins — draplane's agent (`draplane agent --kubelet-plugin`)
// or any other DRA driver — against a real API server. It reports what it saw.
//
// What it does, as the kubelet does (pkg/kubelet/pluginmanager, pkg/kubelet/cm/dra;
// docs/design/kubelet-plugin.md lists each rule and the test that checks it):
//   1. Node: registers the Node (labels, capacity, Ready) and renews its Lease
//      (agent/node_registration.h), so the scheduler places Pods on it; the annotation
//      `draplane.dev/agent` keeps the controllers' kubelet simulator off the node.
//   2. Slices: wipes the node's ResourceSlices when it starts (no driver has registered yet),
//      and a driver's slices `slice_wipe_delay` after its last plugin deregistered, unless a
//      plugin of that driver registers again first.
//   3. Plugin discovery: watches `registry_dir` (inotify, plus a rescan every
//      `registry_poll_interval`) for Unix sockets whose names do not start with "."; a new one
//      gets GetInfo, validation (type "DRAPlugin", a name, an endpoint not already registered
//      for the driver, a DRA service this kubelet speaks — the first of the plugin's
//      `supported_versions` among v1.DRAPlugin and v1beta1.DRAPlugin, or those of `services`),
//      then
//      NotifyRegistrationStatus(true), or (false, the reason). A socket that disappears
//      deregisters its plugin. Several plugins of one driver (rolling updates) are kept in
//      registration order; calls go to the newest that answers.
//   4. Health: for a plugin advertising a health service this kubelet speaks (v1 preferred
//      over v1beta1 over v1alpha1 DRAResourceHealth), NodeWatchResources is kept open (re-opened
//      every `health_retry_interval` when it ends); each device whose health changes is reported.
//   5. Pods bound to the node (an informer on spec.nodeName), per Pod:
//      - running a Pod: resolve its claims (agent::PodClaimNames), GET each, require it to be
//        reserved for the Pod, remember the Pod in the claim's entry (the kubelet's claim info
//        cache); claims not yet prepared are batched per driver of their allocation results and
//        NodePrepareResources is called per driver with a `call_timeout` deadline. Any RPC
//        error, a claim left out, a claim the request did not name, or a per-claim error fails
//        the sync; so does a CDI device ID that no spec in `cdi_dirs` defines (the container
//        runtime's job). Only when every claim is prepared does the Pod become Running (one
//        running container per container, with the CDI device IDs of the claims it uses in the
//        report). A failed sync is a Warning Event FailedPrepareDynamicResources on the Pod and
//        a retry after the kubelet's 10 s (`retry`).
//      - a Pod that is deleted, Succeeded or Failed (its containers are stopped): claims other
//        live Pods still use only lose this Pod's reference; the rest get NodeUnprepareResources
//        per driver (errors retry). A deleted Pod is finished (grace period 0) only after its
//        claims were unprepared — the kubelet's order; a Pod that vanished from the API gets
//        its claims unprepared the same way.
//   6. Report: every registration, call, answer, health change, Pod start and stop as one JSON
//      object per line in `report_path` (and the log).
//
// Thread-safety: Start/Stop from the owner; internally one registry watcher thread, one Pod
// worker thread and one thread per health stream. Ownership: the ApiClient and Clock must
// outlive it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/quantity.h"
#include "client/api_client.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::fakekubelet {

struct FakeKubeletOptions {
  std::string node_name;
  std::string registry_dir;
  // Where the container runtime looks for CDI specs; empty: CDI device IDs are not resolved.
  std::vector<std::string> cdi_dirs{};
  // The Node's labels and capacity (cpu, memory and pods get defaults when absent).
  std::map<std::string, std::string> labels{};
  std::map<std::string, api::Quantity> capacity{};
  // Deadline of each call to a plugin (the kubelet's defaultClientCallTimeout).
  Duration call_timeout = std::chrono::seconds(45);
  Duration registry_poll_interval = std::chrono::seconds(1);
  Duration heartbeat_interval = std::chrono::seconds(10);
  Duration health_retry_interval = std::chrono::seconds(5);
  // The kubelet's wipingDelay; negative: never wipe on deregistration.
  Duration slice_wipe_delay = std::chrono::seconds(30);
  bool wipe_slices_on_start = true;
  // Drivers whose registration this kubelet refuses (negative tests of NotifyRegistrationStatus).
  std::set<std::string> refuse_drivers{};
  // The plugin services this kubelet speaks: DRA (agent::kDraServiceV1, kDraServiceV1beta1) and
  // health (kHealthService*). Empty: all of them, as a current kubelet. A kubelet older than
  // 1.34 speaks only v1beta1.DRAPlugin of these (no v1 API, no health stream).
  std::set<std::string> services{};
  // Backoff of failed Pod syncs: the kubelet's pod workers retry after backOffPeriod, 10 s
  // (jittered by half; here without jitter). Tests shorten it; base < max backs off
  // exponentially.
  client::RateLimiterOptions retry{.base_delay = std::chrono::seconds(10),
                                   .max_delay = std::chrono::seconds(10),
                                   .qps = 0,
                                   .burst = 0};
  // JSON lines of what it saw; empty: the log only.
  std::string report_path{};
  std::string field_manager = "draplane-fakekubelet";
};

class FakeKubelet {
 public:
  // InvalidArgument without a node name or registry dir, or when the report cannot be opened.
  static StatusOr<std::unique_ptr<FakeKubelet>> Create(client::ApiClient& api,
                                                       FakeKubeletOptions options,
                                                       const Clock& clock);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Registers the Node, wipes slices when configured, starts the threads.
  Status Start();
  // Stops every thread and closes the plugin connections; idempotent. Prepared claims stay
  // prepared (a kubelet restart does not unprepare).
  void Stop();

  // The report lines so far (what report_path receives), oldest first.
  std::vector<std::string> Report() const;
  // The drivers with at least one registered plugin.
  std::vector<std::string> RegisteredDrivers() const;

 private:
  struct State;
  explicit FakeKubelet(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace draplane::fakekubelet
