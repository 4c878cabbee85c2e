#include "controllers/poolstatus/controller.h"

#include <memory>
#include <utility>
#include <vector>

#include "client/typed.h"
#include "common/log.h"
#include "controllers/poolstatus/pool_status.h"

namespace draplane::controllers {

namespace rv1 = api::resourcev1;
namespace ra3 = api::resourcev1alpha3;

namespace {

// Not a valid object name (a DNS subdomain has no ':'), so it cannot collide with a request.
constexpr std::string_view kCleanupKey = ":cleanup";

}  // namespace

PoolStatusController::PoolStatusController(client::ApiClient& api,
                                           client::SharedInformers& informers, const Clock& clock,
                                           PoolStatusControllerOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      requests_(informers.Get<ra3::ResourcePoolStatusRequest>()),
      slices_(informers.Get<rv1::ResourceSlice>()),
      claims_(informers.Get<rv1::ResourceClaim>()),
      rules_(informers.Get<rv1::DeviceTaintRule>()),
      queue_(clock, options_.rate_limits, "resource_pool_status_request"),
      workers_("resourcepoolstatusrequest", queue_,
               [this](const std::string& key) { return Sync(key); }) {
  // Only new, unanswered requests matter: slice, claim and rule churn triggers nothing.
  auto add = [this](const auto& r) {
    if (!r->status) queue_.Add(r->metadata.name);
  };
  requests_.AddHandlers(
      {.on_add = add, .on_update = [add](const auto&, const auto& r) { add(r); }});
}

PoolStatusController::~PoolStatusController() { Stop(); }

void PoolStatusController::Start() {
  for (const auto& r : requests_.List()) {
    if (!r->status) queue_.Add(r->metadata.name);
  }
  queue_.Add(std::string(kCleanupKey));
  workers_.Start(1);
}

void PoolStatusController::Stop() { workers_.Stop(); }

Status PoolStatusController::Sync(const std::string& key) {
  if (key == kCleanupKey) return Cleanup();
  return SyncRequest(key);
}

Status PoolStatusController::SyncRequest(const std::string& name) {
  auto cached = requests_.Get("", name);
  if (cached == nullptr || cached->status) return Status::Ok();
  std::vector<std::shared_ptr<const void>> keep;
  poolstatus::Inputs inputs;
  for (const auto& o : slices_.List()) {
    inputs.slices.push_back(o.get());
    keep.push_back(o);
  }
  for (const auto& o : claims_.List()) {
    inputs.claims.push_back(o.get());
    keep.push_back(o);
  }
  for (const auto& o : rules_.List()) {
    inputs.rules.push_back(o.get());
    keep.push_back(o);
  }
  poolstatus::Result result = poolstatus::Compute(cached->spec, inputs);
  if (result.incomplete > 0) {
    // Give the drivers time to publish the rest; after max_retries the request stays pending
    // until the pending TTL removes it (upstream writes nothing either).
    if (queue_.NumRequeues(name) + 1 >= options_.max_retries) {
      log::Info(
          "resourcepoolstatusrequest: {}: {} pool(s) still incomplete after {} tries, giving "
          "up",
          name, result.incomplete, options_.max_retries);
      queue_.Forget(name);
      return Status::Ok();
    }
    return UnavailableError(std::to_string(result.incomplete) + " pool(s) of driver " +
                            cached->spec.driver + " are incomplete");
  }
  api::metav1::Condition complete;
  complete.type = std::string(ra3::kResourcePoolStatusRequestConditionTypeComplete);
  complete.status = "True";
  complete.reason = "CalculationComplete";
  complete.message = poolstatus::CompleteMessage(result);  // before the status moves out
  ra3::ResourcePoolStatusRequest updated = *cached;
  updated.status = std::move(result.status);
  complete.last_transition_time = api::Time::FromTimestamp(clock_.Now());
  updated.status->conditions.push_back(std::move(complete));
  StatusOr<ra3::ResourcePoolStatusRequest> written =
      client::UpdateStatus(api_, updated, options_.field_manager);
  if (!written.ok()) {
    if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
    return written.status();  // Conflict: retried with the newer object
  }
  log::Info("resourcepoolstatusrequest: {}: {}", name, complete.message);
  return Status::Ok();
}

Status PoolStatusController::Cleanup() {
  const Timestamp now = clock_.Now();
  Status first;
  for (const auto& r : requests_.List()) {
    std::optional<Timestamp> since;
    Duration ttl = options_.pending_ttl;
    if (r->status) {
      ttl = options_.completed_ttl;
      for (const api::metav1::Condition& c : r->status->conditions) {
        if (c.status == "True") since = c.last_transition_time.ToTimestamp();
      }
    }
    if (!since) since = r->metadata.creation_timestamp.ToTimestamp();
    if (now - *since < ttl) continue;
    client::DeleteOptions options;
    options.precondition_uid = r->metadata.uid;
    Status deleted =
        client::Delete<ra3::ResourcePoolStatusRequest>(api_, "", r->metadata.name, options);
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound && first.ok()) first = deleted;
  }
  queue_.AddAfter(std::string(kCleanupKey), options_.cleanup_period);
  return first;
}

}  // namespace draplane::controllers
