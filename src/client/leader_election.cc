#include "client/leader_election.h"

#include "client/typed.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"

namespace draplane::client {

using api::coordinationv1::Lease;

namespace {

metrics::Gauge MasterStatus(const std::string& lease_name) {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "leader_election_master_status",
      "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
      "indicates master. 'name' is the string used to identify the lease. Please make sure to "
      "group by name.",
      {"name"});
  return family.WithLabels({lease_name});
}

}  // namespace

StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(ApiClient& api, const Clock& clock,
                                                               LeaderElectionConfig config) {
  if (config.lease_name.empty() || config.lease_namespace.empty()) {
    return InvalidArgumentError("leader election needs a lease name and namespace");
  }
  if (config.identity.empty()) return InvalidArgumentError("leader election needs an identity");
  if (!(config.lease_duration > config.renew_deadline &&
        config.renew_deadline > config.retry_period && config.retry_period > Duration::zero())) {
    return InvalidArgumentError(
        "leader election needs leaseDuration > renewDeadline > retryPeriod > 0");
  }
  return std::unique_ptr<LeaderElector>(new LeaderElector(api, clock, std::move(config)));
}

LeaderElector::LeaderElector(ApiClient& api, const Clock& clock, LeaderElectionConfig config)
    : api_(api), clock_(clock), config_(std::move(config)) {
  MasterStatus(config_.lease_name).Set(0);
}

void LeaderElector::SetLeader(bool leading) {
  if (leading) renewed_at_ns_.store(clock_.MonotonicNow().count());
  leader_.store(leading);
  MasterStatus(config_.lease_name).Set(leading ? 1 : 0);
}

Status LeaderElector::Check(Duration tolerance) const {
  if (!leader_.load()) return Status::Ok();
  const Duration since = clock_.MonotonicNow() - Duration(renewed_at_ns_.load());
  if (since > config_.lease_duration + tolerance) {
    return UnavailableError("failed election to renew leadership on lease " + config_.lease_name);
  }
  return Status::Ok();
}

StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  api::Time now = api::Time::MicroFromTimestamp(clock_.Now());
  int32_t duration_seconds = static_cast<int32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());

  StatusOr<Lease> current = Get<Lease>(api_, config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (current.status().code() != StatusCode::kNotFound) return current.status();
    Lease lease;
    lease.metadata.name = config_.lease_name;
    lease.metadata.namespace_ = config_.lease_namespace;
    lease.spec.holder_identity = config_.identity;
    lease.spec.lease_duration_seconds = duration_seconds;
    lease.spec.acquire_time = now;
    lease.spec.renew_time = now;
    lease.spec.lease_transitions = 0;
    StatusOr<Lease> created = client::Create(api_, lease);
    if (!created.ok()) {
      if (created.status().code() == StatusCode::kAlreadyExists ||
          created.status().code() == StatusCode::kConflict) {
        SetLeader(false);
        return false;
      }
      return created.status();
    }
    observed_ = created->spec;
    observed_rv_ = created->metadata.resource_version;
    observed_at_ = clock_.MonotonicNow();
    SetLeader(true);
    return true;
  }

  const api::coordinationv1::LeaseSpec& spec = current->spec;
  if (!observed_ || !(*observed_ == spec) || observed_rv_ != current->metadata.resource_version) {
    observed_ = spec;
    observed_rv_ = current->metadata.resource_version;
    observed_at_ = clock_.MonotonicNow();
  }
  std::string holder = spec.holder_identity.value_or("");
  Duration held_for = std::chrono::seconds(spec.lease_duration_seconds.value_or(0));
  bool expired = observed_at_ + held_for <= clock_.MonotonicNow();
  bool mine = holder == config_.identity;
  if (!holder.empty() && !mine && !expired) {
    SetLeader(false);
    return false;
  }

  Lease next = *current;
  next.spec.holder_identity = config_.identity;
  next.spec.lease_duration_seconds = duration_seconds;
  next.spec.renew_time = now;
  if (!mine) {
    next.spec.acquire_time = now;
    next.spec.lease_transitions = spec.lease_transitions.value_or(0) + 1;
  }
  StatusOr<Lease> updated = Update(api_, next);
  if (!updated.ok()) {
    if (updated.status().code() == StatusCode::kConflict) {
      SetLeader(false);
      return false;
    }
    return updated.status();
  }
  observed_ = updated->spec;
  observed_rv_ = updated->metadata.resource_version;
  observed_at_ = clock_.MonotonicNow();
  SetLeader(true);
  return true;
}

Status LeaderElector::Release() {
  if (!leader_.load()) return Status::Ok();
  StatusOr<Lease> current = Get<Lease>(api_, config_.lease_namespace, config_.lease_name);
  if (!current.ok()) return current.status();
  if (current->spec.holder_identity.value_or("") != config_.identity) {
    SetLeader(false);
    return Status::Ok();
  }
  Lease next = *current;
  next.spec.holder_identity = std::string();
  next.spec.lease_duration_seconds = 1;
  next.spec.renew_time = api::Time::MicroFromTimestamp(clock_.Now());
  StatusOr<Lease> updated = Update(api_, next);
  SetLeader(false);
  return updated.status();
}

bool LeaderElector::Wait(Duration d) {
  MutexLock lock(mu_);
  // Pacing only: decisions read clock_.
  cv_.WaitFor(lock, d, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_; });
  return !stopping_;
}

void LeaderElector::Run() {
  // Acquire.
  while (true) {
    StatusOr<bool> got = TryAcquireOrRenew();
    if (!got.ok()) {
      log::Warning("leader election {}: {}", config_.lease_name, got.status().ToString());
    } else if (*got) {
      break;
    }
    if (!Wait(config_.retry_period)) return;
  }
  log::Info("leader election {}: {} became the leader", config_.lease_name, config_.identity);
  if (config_.on_started_leading) config_.on_started_leading();
  // Renew.
  Duration last_renew = clock_.MonotonicNow();
  bool stopped = false;
  while (true) {
    if (!Wait(config_.retry_period)) {
      stopped = true;
      break;
    }
    StatusOr<bool> renewed = TryAcquireOrRenew();
    if (renewed.ok() && *renewed) {
      last_renew = clock_.MonotonicNow();
      continue;
    }
    if (renewed.ok() && !*renewed) break;  // someone else holds it now
    log::Warning("leader election {}: renewing the lease: {}", config_.lease_name,
                 renewed.status().ToString());
    if (clock_.MonotonicNow() - last_renew >= config_.renew_deadline) break;
  }
  if (stopped) Release().IgnoreError();  // best effort: the lease expires anyway
  SetLeader(false);
  log::Info("leader election {}: {} stopped leading", config_.lease_name, config_.identity);
  if (config_.on_stopped_leading) config_.on_stopped_leading();
}

void LeaderElector::Stop() {
  MutexLock lock(mu_);
  stopping_ = true;
  cv_.NotifyAll();
}

}  // namespace draplane::client
