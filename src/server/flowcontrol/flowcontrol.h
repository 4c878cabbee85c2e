// API Priority and Fairness for the API server (KEP 1040, kube-apiserver's
// `k8s.io/apiserver/pkg/util/flowcontrol`): every request is classified into a priority level and
// a flow (a user, or a namespace), waits in a fair queue of its level until one of the level's
// seats is free, and holds that seat while it executes. One tenant flooding the server fills only
// its own queues and its level's seats; others keep being served; the flood is answered 429 with
// Retry-After once its queues are full or it waited too long.
//
// What is mirrored from upstream:
//  1. The levels and their shares are upstream's defaults (apiserver flowcontrol bootstrap
//     `default.go`): exempt, system 30, node-high 40, leader-election 10, workload-high 40,
//     global-default 20 (nominal concurrency shares; queues / hand size / queue length 64/6/50,
//     64/6/50, 16/4/50, 128/6/50, 128/6/50). A level's seats are its share of the server's
//     concurrency limit (`--max-requests-inflight` + `--max-mutating-requests-inflight`, 600 by
//     default): NominalCL = ceil(ServerCL * shares / sum of shares).
//  2. The flow schemas, in matching precedence: `exempt` (group system:masters) and `probes`
//     (/healthz, /livez, /readyz) run at once without a seat; `system-leader-election` (the
//     scheduler's and controller manager's get/create/update of Leases; flows by user);
//     `system-node-high` (nodes' requests on Nodes and Leases) and `system-nodes` (their other
//     requests); `kube-controller-manager` and `kube-scheduler` (workload-high, flows by
//     namespace); `global-default` (everyone else - tenants - with a flow per user).
//  3. Shuffle sharding: a flow is dealt a hand of `hand_size` of its level's queues from a hash
//     of (schema, distinguisher) and joins the hand's shortest queue (waiting plus executing); a
//     full queue (`queue_length_limit` waiting) rejects the request ("queue-full").
//  4. Dispatch: fair queuing among the level's queues (start-time fair queuing with every request
//     one unit of service; upstream's virtual finish times with service-time estimates reduce to
//     the same order when every request takes one seat and an equal estimate): a free seat goes
//     to the waiting head with the smallest start tag, ties in turn. Every queue with requests
//     waiting gets one turn per round; a flow fills at most `hand_size` queues, so a flooder
//     holds at most that many turns of a round and another flow is served within one round.
//  5. A request that waited `queue_wait_limit` (a quarter of the request timeout, as upstream's
//     request wait limit) is rejected ("time-out").
// Not mirrored: the FlowSchema / PriorityLevelConfiguration API objects (the configuration is
// fixed), borrowing between levels, seats wider than one for large lists, and the catch-all
// level (global-default matches every authenticated and unauthenticated user, so catch-all
// could not be reached).
//
// Thread-safety: all methods are safe for concurrent use. Seats may be released on any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "server/auth/authenticator.h"

namespace draplane::server::flowcontrol {

struct PriorityLevelConfig {
  std::string name;
  bool exempt = false;
  int nominal_concurrency_shares = 0;
  int queues = 0;
  int hand_size = 0;
  int queue_length_limit = 0;
};

// Upstream's default levels (see the file comment), exempt first.
const std::vector<PriorityLevelConfig>& DefaultPriorityLevels();

// What classification looks at (the RequestInfo and the authenticated user).
struct RequestDigest {
  const auth::UserInfo* user = nullptr;
  bool resource_request = false;
  std::string_view verb{};
  std::string_view api_group{};
  std::string_view resource{};
  std::string_view subresource{};
  std::string_view namespace_{};
  std::string_view path{};  // non-resource requests
};

struct Classification {
  size_t level = 0;         // index into DefaultPriorityLevels()
  std::string flow_schema;  // the matching schema's name
  std::string flow;         // the distinguisher: user name or namespace
};

// The flow schemas of the file comment, first match wins.
Classification Classify(const RequestDigest& request);

struct ControllerOptions {
  // The server's concurrency limit (ServerCL), shared by the non-exempt levels.
  int server_concurrency_limit = 600;
  // How long a request may wait in a queue before it is rejected.
  Duration queue_wait_limit = std::chrono::seconds(15);
};

// Why a request was not admitted (the `reason` label of
// apiserver_flowcontrol_rejected_requests_total).
enum class RejectReason { kQueueFull, kTimeOut, kShutdown };
std::string_view RejectReasonName(RejectReason reason);

namespace internal {
struct State;
}  // namespace internal

// A seat held by an executing request; released when the last reference goes.
class Seat {
 public:
  Seat(std::shared_ptr<internal::State> state, size_t level, int queue);
  ~Seat();
  Seat(const Seat&) = delete;
  Seat& operator=(const Seat&) = delete;

 private:
  std::shared_ptr<internal::State> state_;
  size_t level_;
  int queue_;  // -1 for exempt requests
};
using SeatPtr = std::shared_ptr<Seat>;

class Controller {
 public:
  Controller(ControllerOptions options, const Clock& clock);
  ~Controller();

  // Admits a request: exactly one of `run` (with its seat; now on this thread, or later on the
  // thread that frees a seat or calls Tick) and `reject` (now when the queue is full, later when
  // it waited too long or at Shutdown) is called. Both must be quick (post the work elsewhere).
  void Submit(const Classification& classification, std::function<void(SeatPtr)> run,
              std::function<void(RejectReason)> reject);

  // Blocks until the request holds a seat. ResourceExhausted when it was rejected (queue full or
  // waited too long), Unavailable after Shutdown.
  StatusOr<SeatPtr> Wait(const Classification& classification);

  // Rejects requests that waited longer than the queue wait limit. Call about once a second.
  void Tick();

  // Rejects every waiting request and every later one. Seats held stay valid.
  void Shutdown();

  // For metrics and tests: the level's seats, and its requests executing and waiting.
  int seats(size_t level) const;
  int executing(size_t level) const;
  int waiting(size_t level) const;

 private:
  std::shared_ptr<internal::State> state_;
};

}  // namespace draplane::server::flowcontrol
