#include "scheduler/decision_recorder.h"

#include <fmt/core.h>

#include "api/validation/decision_validation.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"
#include "common/thread_priority.h"

namespace draplane::scheduler {

namespace dv1 = api::draplanev1alpha1;
namespace kv = api::validation;

namespace {

// FNV-1a, 64 bits: a stable digest of the policy inputs.
uint64_t Fnv1a(std::string_view text, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// `text` cut to the record's limit on free text.
std::string Capped(std::string text, bool& truncated) {
  if (text.size() > kv::kDecisionMaxMessageLength) {
    text.resize(kv::kDecisionMaxMessageLength);
    truncated = true;
  }
  return text;
}

}  // namespace

dv1::AllocationDecision MakeAllocationDecision(const DecisionContext& c) {
  const api::corev1::Pod& pod = *c.pod;
  const DeviceDecision& d = *c.decision;
  bool truncated = false;
  dv1::AllocationDecision out;
  std::string prefix = pod.metadata.name.substr(0, 200);
  out.metadata.name = prefix + "-" + pod.metadata.uid.substr(0, 8);
  out.metadata.namespace_ = pod.metadata.namespace_;
  out.metadata.labels["draplane.dev/pod-uid"] = pod.metadata.uid;
  dv1::AllocationDecisionSpec& spec = out.spec;
  spec.schema_version = kv::kAllocationDecisionSchemaVersion;
  spec.time = api::Time::MicroFromTimestamp(c.time);
  spec.scheduler.name = c.scheduler_name;
  spec.scheduler.instance = c.instance;
  spec.pod.name = pod.metadata.name;
  spec.pod.uid = pod.metadata.uid;
  spec.outcome = "Allocated";
  spec.node_name = d.node;
  spec.nodes_evaluated = c.nodes_evaluated;
  spec.nodes_feasible = c.nodes_feasible;
  std::string message;
  if (!d.quota_fallback.empty()) message = "QuotaFallback: " + d.quota_fallback;
  if (!d.fair_share_fallback.empty()) {
    message +=
        (message.empty() ? "" : "; ") + std::string("FairShareFallback: ") + d.fair_share_fallback;
  }
  if (!message.empty()) spec.message = Capped(message, truncated);
  for (const DeviceDecision::Claim& claim : d.claims) {
    if (spec.claims.size() == kv::kDecisionMaxClaims) {
      truncated = true;
      break;
    }
    dv1::DecisionClaim dc;
    dc.name = claim.name;
    dc.uid = claim.uid;
    for (const auto& [key, q] : claim.charges) {
      if (dc.charges.size() == kv::kDecisionMaxCharges) {
        truncated = true;
        break;
      }
      dc.charges.emplace(key, q);
    }
    for (const DeviceDecision::Request& r : claim.requests) {
      if (dc.requests.size() == kv::kDecisionMaxRequests) {
        truncated = true;
        break;
      }
      dv1::DecisionRequest dr;
      dr.name = r.name;
      dr.subrequest = r.subrequest;
      dr.device_class_name = r.device_class;
      for (const auto& result : r.devices) {
        if (dr.devices.size() == kv::kDecisionMaxDevices) {
          truncated = true;
          break;
        }
        dv1::DecisionDevice dd;
        dd.driver = result.driver;
        dd.pool = result.pool;
        dd.device = result.device;
        dd.share_id = result.share_id;
        if (result.admin_access.value_or(false)) dd.admin_access = true;
        dr.devices.push_back(std::move(dd));
      }
      for (const DeviceDecision::Tier& tier : r.tiers_not_taken) {
        if (dr.tiers_not_taken.size() == kv::kDecisionMaxTiers) {
          truncated = true;
          break;
        }
        dv1::DecisionTier dt;
        dt.subrequest = tier.subrequest;
        for (const DeviceDecision::Reason& reason : tier.reasons) {
          if (dt.reasons.size() == kv::kDecisionMaxReasonsPerTier) {
            truncated = true;
            break;
          }
          dv1::DecisionReason reason_out;
          reason_out.reason = reason.reason;
          reason_out.message = Capped(fmt::format("{} device{}: {}", reason.devices,
                                                  reason.devices == 1 ? "" : "s", reason.message),
                                      truncated);
          for (const std::string& node : reason.nodes) {
            if (reason_out.nodes.size() == kv::kDecisionMaxNodesPerReason) break;
            reason_out.nodes.push_back(node);
          }
          reason_out.node_count = reason.node_count;
          dt.reasons.push_back(std::move(reason_out));
        }
        dr.tiers_not_taken.push_back(std::move(dt));
      }
      dc.requests.push_back(std::move(dr));
    }
    spec.claims.push_back(std::move(dc));
  }
  uint64_t digest = 0xcbf29ce484222325ULL;
  for (const PolicyInputRef& in : c.inputs) {
    if (spec.policy_version.inputs.size() == kv::kDecisionMaxPolicyInputs) {
      truncated = true;
      break;
    }
    dv1::PolicyInput pi;
    pi.api_version = in.api_version;
    pi.kind = in.kind;
    pi.namespace_ = in.namespace_;
    pi.name = in.name;
    pi.resource_version = in.resource_version;
    pi.mode = in.mode;
    spec.policy_version.inputs.push_back(std::move(pi));
    digest = Fnv1a(fmt::format("{}|{}|{}|{}|{}|{}\n", in.api_version, in.kind, in.namespace_,
                               in.name, in.resource_version, in.mode),
                   digest);
  }
  spec.policy_version.digest = fmt::format("{:016x}", digest);
  spec.truncated = truncated;
  return out;
}

DecisionRecorder::DecisionRecorder(client::ApiClient& api, DecisionRecorderOptions options,
                                   metrics::Counter written, metrics::Counter dropped)
    : api_(api), options_(options), written_(std::move(written)), dropped_(std::move(dropped)) {
  if (!options_.synchronous) {
    writer_ = std::thread([this] {
      SetCurrentThreadName("sched-decisions");
      Loop();
    });
  }
}

DecisionRecorder::~DecisionRecorder() { Stop(); }

void DecisionRecorder::Record(dv1::AllocationDecision decision) {
  if (options_.synchronous) {
    Write(decision);
    return;
  }
  {
    MutexLock lock(mu_);
    if (stopping_ || queue_.size() >= options_.queue_limit) {
      dropped_.Increment();
      return;
    }
    queue_.push_back(std::move(decision));
    // Wake the writer only for the first record of a batch: later ones ride along.
    if (queue_.size() != 1) return;
  }
  cv_.NotifyOne();
}

void DecisionRecorder::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (writer_.joinable()) writer_.join();
}

void DecisionRecorder::Loop() {
  bool background = false;
  while (true) {
    std::vector<dv1::AllocationDecision> batch;
    bool keeping_up = false;
    {
      MutexLock lock(mu_);
      cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      keeping_up = !stopping_ && queue_.size() < options_.queue_limit / 4;
      while (!queue_.empty() && batch.size() < options_.batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    // Background work while the writer keeps up; once records pile up (or at Stop) it competes
    // normally, so a machine that is never idle delays records but does not drop them.
    if (keeping_up != background &&
        SetCurrentThreadPriority(keeping_up ? ThreadPriority::kBackground
                                            : ThreadPriority::kNormal)) {
      background = keeping_up;
    }
    for (const dv1::AllocationDecision& d : batch) Write(d);
  }
}

void DecisionRecorder::Write(const dv1::AllocationDecision& decision) {
  // The record as stored is of no use here.
  Status s = client::CreateOnly(api_, decision, "draplane-scheduler");
  if (s.ok() || s.code() == StatusCode::kAlreadyExists) {
    written_.Increment();
    return;
  }
  dropped_.Increment();
  log::Debug("scheduler: decision record {}/{}: {}", decision.metadata.namespace_,
             decision.metadata.name, s.ToString());
}

}  // namespace draplane::scheduler
