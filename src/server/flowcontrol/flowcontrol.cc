#include "server/flowcontrol/flowcontrol.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "common/metrics.h"
#include "common/mutex.h"

namespace draplane::server::flowcontrol {
namespace {

constexpr std::string_view kExempt = "exempt";

const metrics::CounterFamily& RejectedRequests() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "apiserver_flowcontrol_rejected_requests_total",
      "Number of requests rejected by API Priority and Fairness subsystem",
      {"priority_level", "flow_schema", "reason"});
  return family;
}

const metrics::CounterFamily& DispatchedRequests() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "apiserver_flowcontrol_dispatched_requests_total",
      "Number of requests executed by API Priority and Fairness subsystem",
      {"priority_level", "flow_schema"});
  return family;
}

const metrics::GaugeFamily& NominalLimitSeats() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "apiserver_flowcontrol_nominal_limit_seats",
      "Nominal number of execution seats configured for each priority level", {"priority_level"});
  return family;
}

const metrics::GaugeFamily& CurrentInqueueRequests() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "apiserver_flowcontrol_current_inqueue_requests",
      "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
      {"priority_level"});
  return family;
}

const metrics::GaugeFamily& CurrentExecutingRequests() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "apiserver_flowcontrol_current_executing_requests",
      "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in "
      "the API Priority and Fairness subsystem",
      {"priority_level"});
  return family;
}

// FNV-1a, 64 bits: a fixed hash, so a flow's hand of queues is the same in every run.
uint64_t HashFlow(std::string_view schema, std::string_view distinguisher) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto mix = [&](std::string_view text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 0x100000001b3ULL;
    }
    hash ^= 0xff;  // separates the two parts
    hash *= 0x100000001b3ULL;
  };
  mix(schema);
  mix(distinguisher);
  return hash;
}

// Deals `hand_size` distinct queues out of `queues` from the hash's digits (upstream's
// shufflesharding.Dealer deals the same way: each digit picks among the cards left).
std::vector<int> DealHand(uint64_t hash, int queues, int hand_size) {
  std::vector<int> deck(static_cast<size_t>(queues));
  for (int i = 0; i < queues; ++i) deck[static_cast<size_t>(i)] = i;
  std::vector<int> hand;
  hand.reserve(static_cast<size_t>(hand_size));
  for (int i = 0; i < hand_size && i < queues; ++i) {
    uint64_t left = static_cast<uint64_t>(queues - i);
    size_t pick = static_cast<size_t>(i) + static_cast<size_t>(hash % left);
    hash /= left;
    std::swap(deck[static_cast<size_t>(i)], deck[pick]);
    hand.push_back(deck[static_cast<size_t>(i)]);
  }
  return hand;
}

bool IsUser(const auth::UserInfo& user, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), user.name) != names.end();
}

bool IsProbe(std::string_view path) {
  for (std::string_view probe : {"/healthz", "/livez", "/readyz"}) {
    if (path == probe) return true;
    if (path.size() > probe.size() && path.substr(0, probe.size()) == probe &&
        path[probe.size()] == '/') {
      return true;
    }
  }
  return false;
}

size_t LevelIndex(std::string_view name) {
  const std::vector<PriorityLevelConfig>& levels = DefaultPriorityLevels();
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].name == name) return i;
  }
  return levels.size() - 1;
}

}  // namespace

const std::vector<PriorityLevelConfig>& DefaultPriorityLevels() {
  static const std::vector<PriorityLevelConfig> levels = {
      {.name = std::string(kExempt), .exempt = true},
      {.name = "system",
       .nominal_concurrency_shares = 30,
       .queues = 64,
       .hand_size = 6,
       .queue_length_limit = 50},
      {.name = "node-high",
       .nominal_concurrency_shares = 40,
       .queues = 64,
       .hand_size = 6,
       .queue_length_limit = 50},
      {.name = "leader-election",
       .nominal_concurrency_shares = 10,
       .queues = 16,
       .hand_size = 4,
       .queue_length_limit = 50},
      {.name = "workload-high",
       .nominal_concurrency_shares = 40,
       .queues = 128,
       .hand_size = 6,
       .queue_length_limit = 50},
      {.name = "global-default",
       .nominal_concurrency_shares = 20,
       .queues = 128,
       .hand_size = 6,
       .queue_length_limit = 50},
  };
  return levels;
}

Classification Classify(const RequestDigest& request) {
  const auth::UserInfo& user = *request.user;
  auto make = [&](std::string_view level, std::string_view schema, std::string_view flow) {
    return Classification{LevelIndex(level), std::string(schema), std::string(flow)};
  };
  if (user.InGroup(auth::kMastersGroup)) return make(kExempt, "exempt", "");
  if (!request.resource_request && request.verb == "get" && IsProbe(request.path)) {
    return make(kExempt, "probes", "");
  }
  bool leases = request.api_group == "coordination.k8s.io" && request.resource == "leases";
  if (IsUser(user, {"system:kube-controller-manager", "system:kube-scheduler"}) && leases &&
      (request.verb == "get" || request.verb == "create" || request.verb == "update")) {
    return make("leader-election", "system-leader-election", user.name);
  }
  if (user.InGroup("system:nodes")) {
    bool nodes = request.api_group.empty() && request.resource == "nodes";
    if (request.resource_request && (nodes || leases)) {
      return make("node-high", "system-node-high", user.name);
    }
    return make("system", "system-nodes", user.name);
  }
  if (IsUser(user, {"system:kube-controller-manager"})) {
    return make("workload-high", "kube-controller-manager", request.namespace_);
  }
  if (IsUser(user, {"system:kube-scheduler"})) {
    return make("workload-high", "kube-scheduler", request.namespace_);
  }
  return make("global-default", "global-default", user.name);
}

std::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kQueueFull:
      return "queue-full";
    case RejectReason::kTimeOut:
      return "time-out";
    case RejectReason::kShutdown:
      return "cancelled";
  }
  return "";
}

namespace internal {

struct Waiter {
  Duration enqueued;
  int64_t start_tag;  // start-time fair queuing (see Level)
  std::string flow_schema;
  std::function<void(SeatPtr)> run;
  std::function<void(RejectReason)> reject;
};

struct Queue {
  std::deque<Waiter> waiting;
  int executing = 0;
  int64_t last_finish = 0;  // the finish tag of the queue's last request
};

// Start-time fair queuing among a level's queues: a request's start tag is the later of the
// level's virtual time and the finish tag of its queue's previous request (start + 1: every
// request counts as one unit of service); a free seat goes to the waiting head with the smallest
// start tag, ties in turn, and the virtual time becomes that tag. A queue that had nothing to send
// starts at the current virtual time, not at zero: it is not owed the service it did not ask for.
struct Level {
  PriorityLevelConfig config;
  int seats = 0;
  int executing = 0;
  int waiting = 0;
  int64_t virtual_time = 0;
  size_t next_turn = 0;  // where the round among tied queues continues
  std::vector<Queue> queues;
};

// What a call decided under the lock, carried out after it is released.
struct Actions {
  std::vector<std::pair<std::function<void(SeatPtr)>, SeatPtr>> runs;
  std::vector<std::pair<std::function<void(RejectReason)>, RejectReason>> rejects;

  void Run() {
    for (auto& [reject, reason] : rejects) reject(reason);
    for (auto& [run, seat] : runs) run(std::move(seat));
  }
};

struct State : std::enable_shared_from_this<State> {
  ControllerOptions options;
  const Clock* clock = nullptr;
  mutable Mutex mu;
  std::vector<Level> levels DRAPLANE_GUARDED_BY(mu);
  bool shut_down DRAPLANE_GUARDED_BY(mu) = false;

  void UpdateGauges(const Level& level) {
    CurrentInqueueRequests().WithLabels({level.config.name}).Set(level.waiting);
    CurrentExecutingRequests().WithLabels({level.config.name}).Set(level.executing);
  }

  // Gives free seats of `level` to waiting requests (see the file comment, step 4).
  void Dispatch(size_t level_index, Actions& actions) DRAPLANE_REQUIRES(mu) {
    Level& level = levels[level_index];
    size_t count = level.queues.size();
    while (level.executing < level.seats && level.waiting > 0) {
      int best = -1;
      for (size_t k = 0; k < count; ++k) {
        size_t q = (level.next_turn + k) % count;
        const Queue& queue = level.queues[q];
        if (queue.waiting.empty()) continue;
        if (best < 0 || queue.waiting.front().start_tag <
                            level.queues[static_cast<size_t>(best)].waiting.front().start_tag) {
          best = static_cast<int>(q);
        }
      }
      Queue& queue = level.queues[static_cast<size_t>(best)];
      Waiter waiter = std::move(queue.waiting.front());
      queue.waiting.pop_front();
      level.virtual_time = std::max(level.virtual_time, waiter.start_tag);
      ++queue.executing;
      ++level.executing;
      --level.waiting;
      level.next_turn = (static_cast<size_t>(best) + 1) % count;
      DispatchedRequests().WithLabels({level.config.name, waiter.flow_schema}).Increment();
      actions.runs.emplace_back(std::move(waiter.run),
                                std::make_shared<Seat>(shared_from_this(), level_index, best));
    }
    UpdateGauges(level);
  }

  void Release(size_t level_index, int queue) {
    Actions actions;
    {
      MutexLock lock(mu);
      Level& level = levels[level_index];
      --level.queues[static_cast<size_t>(queue)].executing;
      --level.executing;
      Dispatch(level_index, actions);
    }
    actions.Run();
  }
};

}  // namespace internal

Seat::Seat(std::shared_ptr<internal::State> state, size_t level, int queue)
    : state_(std::move(state)), level_(level), queue_(queue) {}

Seat::~Seat() {
  if (queue_ >= 0) state_->Release(level_, queue_);
}

Controller::Controller(ControllerOptions options, const Clock& clock)
    : state_(std::make_shared<internal::State>()) {
  state_->options = options;
  state_->clock = &clock;
  const std::vector<PriorityLevelConfig>& configs = DefaultPriorityLevels();
  int total_shares = 0;
  for (const PriorityLevelConfig& config : configs)
    total_shares += config.nominal_concurrency_shares;
  for (const PriorityLevelConfig& config : configs) {
    internal::Level level;
    level.config = config;
    if (!config.exempt) {
      // NominalCL = ceil(ServerCL * shares / sum of shares), at least one seat.
      int64_t product = int64_t{std::max(1, options.server_concurrency_limit)} *
                        config.nominal_concurrency_shares;
      level.seats =
          static_cast<int>(std::max<int64_t>(1, (product + total_shares - 1) / total_shares));
      level.queues.resize(static_cast<size_t>(config.queues));
      NominalLimitSeats().WithLabels({config.name}).Set(level.seats);
    }
    MutexLock lock(state_->mu);  // uncontended: nothing else has the state yet
    state_->levels.push_back(std::move(level));
  }
}

Controller::~Controller() { Shutdown(); }

void Controller::Submit(const Classification& classification, std::function<void(SeatPtr)> run,
                        std::function<void(RejectReason)> reject) {
  internal::Actions actions;
  {
    MutexLock lock(state_->mu);
    internal::Level& level = state_->levels[classification.level];
    if (state_->shut_down) {
      actions.rejects.emplace_back(std::move(reject), RejectReason::kShutdown);
    } else if (level.config.exempt) {
      DispatchedRequests().WithLabels({level.config.name, classification.flow_schema}).Increment();
      actions.runs.emplace_back(std::move(run),
                                std::make_shared<Seat>(state_, classification.level, -1));
    } else {
      // Shuffle sharding: the shortest queue of the flow's hand.
      std::vector<int> hand = DealHand(HashFlow(classification.flow_schema, classification.flow),
                                       level.config.queues, level.config.hand_size);
      int chosen = hand.front();
      auto length = [&](int q) {
        const internal::Queue& queue = level.queues[static_cast<size_t>(q)];
        return queue.waiting.size() + static_cast<size_t>(queue.executing);
      };
      for (int q : hand) {
        if (length(q) < length(chosen)) chosen = q;
      }
      internal::Queue& queue = level.queues[static_cast<size_t>(chosen)];
      if (queue.waiting.size() >= static_cast<size_t>(level.config.queue_length_limit)) {
        actions.rejects.emplace_back(std::move(reject), RejectReason::kQueueFull);
      } else {
        int64_t start_tag = std::max(level.virtual_time, queue.last_finish);
        queue.last_finish = start_tag + 1;
        queue.waiting.push_back(internal::Waiter{state_->clock->MonotonicNow(), start_tag,
                                                 classification.flow_schema, std::move(run),
                                                 std::move(reject)});
        ++level.waiting;
        state_->Dispatch(classification.level, actions);
      }
    }
    if (!actions.rejects.empty()) {
      RejectedRequests()
          .WithLabels({level.config.name, classification.flow_schema,
                       RejectReasonName(actions.rejects.front().second)})
          .Increment();
    }
  }
  actions.Run();
}

StatusOr<SeatPtr> Controller::Wait(const Classification& classification) {
  struct Result {
    Mutex mu;
    CondVar cv;
    bool done = false;
    SeatPtr seat;
    RejectReason reason = RejectReason::kQueueFull;
  };
  auto result = std::make_shared<Result>();
  Submit(
      classification,
      [result](SeatPtr seat) {
        MutexLock lock(result->mu);
        result->seat = std::move(seat);
        result->done = true;
        result->cv.NotifyAll();
      },
      [result](RejectReason reason) {
        MutexLock lock(result->mu);
        result->reason = reason;
        result->done = true;
        result->cv.NotifyAll();
      });
  MutexLock lock(result->mu);
  result->cv.Wait(lock, [&] { return result->done; });
  if (result->seat != nullptr) return std::move(result->seat);
  if (result->reason == RejectReason::kShutdown) {
    return UnavailableError("the server is shutting down");
  }
  return ResourceExhaustedError("Too many requests, please try again later.");
}

void Controller::Tick() {
  internal::Actions actions;
  {
    MutexLock lock(state_->mu);
    Duration now = state_->clock->MonotonicNow();
    for (internal::Level& level : state_->levels) {
      for (internal::Queue& queue : level.queues) {
        // Each queue is in arrival order: the expired requests are at its front.
        while (!queue.waiting.empty() &&
               now - queue.waiting.front().enqueued >= state_->options.queue_wait_limit) {
          internal::Waiter& waiter = queue.waiting.front();
          RejectedRequests()
              .WithLabels(
                  {level.config.name, waiter.flow_schema, RejectReasonName(RejectReason::kTimeOut)})
              .Increment();
          actions.rejects.emplace_back(std::move(waiter.reject), RejectReason::kTimeOut);
          queue.waiting.pop_front();
          --level.waiting;
        }
      }
      state_->UpdateGauges(level);
    }
  }
  actions.Run();
}

void Controller::Shutdown() {
  internal::Actions actions;
  {
    MutexLock lock(state_->mu);
    state_->shut_down = true;
    for (internal::Level& level : state_->levels) {
      for (internal::Queue& queue : level.queues) {
        for (internal::Waiter& waiter : queue.waiting) {
          actions.rejects.emplace_back(std::move(waiter.reject), RejectReason::kShutdown);
        }
        queue.waiting.clear();
      }
      level.waiting = 0;
    }
  }
  actions.Run();
}

int Controller::seats(size_t level) const {
  MutexLock lock(state_->mu);
  return state_->levels[level].seats;
}

int Controller::executing(size_t level) const {
  MutexLock lock(state_->mu);
  return state_->levels[level].executing;
}

int Controller::waiting(size_t level) const {
  MutexLock lock(state_->mu);
  return state_->levels[level].waiting;
}

}  // namespace draplane::server::flowcontrol
