#include "controllers/devicetaint/evaluator.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "api/device_taints.h"
#include "api/labels/taints.h"

namespace draplane::controllers::devicetaint {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;

namespace {

struct PoolKey {
  std::string driver;
  std::string pool;
  friend auto operator<=>(const PoolKey&, const PoolKey&) = default;
};

struct DeviceKey {
  std::string driver;
  std::string pool;
  std::string device;
  friend auto operator<=>(const DeviceKey&, const DeviceKey&) = default;
};

// A NoExecute taint on a device with its origin and start time.
struct ActiveTaint {
  rv1::DeviceTaint taint;
  TaintReason reason;
  Timestamp added{};
};

// Current slices (step 1), indexed by device.
std::map<DeviceKey, std::vector<std::pair<const rv1::ResourceSlice*, const rv1::Device*>>>
CurrentDevices(const Snapshot& snapshot) {
  std::map<PoolKey, int64_t> max_generation;
  for (const rv1::ResourceSlice* slice : snapshot.slices) {
    PoolKey key{slice->spec.driver, slice->spec.pool.name};
    auto [it, inserted] = max_generation.emplace(key, slice->spec.pool.generation);
    if (!inserted) it->second = std::max(it->second, slice->spec.pool.generation);
  }
  std::map<DeviceKey, std::vector<std::pair<const rv1::ResourceSlice*, const rv1::Device*>>> out;
  for (const rv1::ResourceSlice* slice : snapshot.slices) {
    if (slice->spec.pool.generation !=
        max_generation[{slice->spec.driver, slice->spec.pool.name}]) {
      continue;
    }
    for (const rv1::Device& device : slice->spec.devices) {
      out[{slice->spec.driver, slice->spec.pool.name, device.name}].emplace_back(slice, &device);
    }
  }
  return out;
}

Timestamp SeenOr(const Snapshot& snapshot, const std::string& key, const api::Time& fallback) {
  auto it = snapshot.taint_seen.find(key);
  if (it != snapshot.taint_seen.end()) return it->second;
  return fallback.ToTimestamp();
}

// Step 2: the NoExecute taints of one device.
std::vector<ActiveTaint> TaintsOf(
    const Snapshot& snapshot,
    const std::map<DeviceKey,
                   std::vector<std::pair<const rv1::ResourceSlice*, const rv1::Device*>>>& devices,
    const DeviceKey& key, const rv1::DeviceTaintRule* simulate) {
  std::vector<ActiveTaint> out;
  if (simulate == nullptr) {
    if (auto it = devices.find(key); it != devices.end()) {
      for (const auto& [slice, device] : it->second) {
        for (const rv1::DeviceTaint& taint : device->taints) {
          if (taint.effect != rv1::kDeviceTaintEffectNoExecute) continue;
          ActiveTaint t;
          t.taint = taint;
          t.reason = TaintReason{.rule = "",
                                 .rule_uid = "",
                                 .slice = slice->metadata.name,
                                 .driver = key.driver,
                                 .pool = key.pool,
                                 .device = key.device,
                                 .key = taint.key,
                                 .value = taint.value};
          t.added =
              taint.time_added
                  ? taint.time_added->ToTimestamp()
                  : SeenOr(snapshot, SliceTaintKey(key.driver, key.pool, key.device, taint.key),
                           slice->metadata.creation_timestamp);
          out.push_back(std::move(t));
        }
      }
    }
  }
  auto add_rule = [&](const rv1::DeviceTaintRule& rule) {
    if (!api::RuleSelectsDevice(rule, key.driver, key.pool, key.device)) return;
    ActiveTaint t;
    t.taint = rule.spec.taint;
    t.taint.effect = std::string(rv1::kDeviceTaintEffectNoExecute);
    t.reason = TaintReason{.rule = rule.metadata.name,
                           .rule_uid = rule.metadata.uid,
                           .slice = "",
                           .driver = key.driver,
                           .pool = key.pool,
                           .device = key.device,
                           .key = rule.spec.taint.key,
                           .value = rule.spec.taint.value};
    t.added = rule.spec.taint.time_added
                  ? rule.spec.taint.time_added->ToTimestamp()
                  : SeenOr(snapshot, RuleTaintKey(rule), rule.metadata.creation_timestamp);
    out.push_back(std::move(t));
  };
  if (simulate != nullptr) {
    add_rule(*simulate);
  } else {
    for (const rv1::DeviceTaintRule* rule : snapshot.rules) {
      if (rule->spec.taint.effect == rv1::kDeviceTaintEffectNoExecute) add_rule(*rule);
    }
  }
  return out;
}

// Step 3: when `taint` evicts a user of a result with `tolerations`; nullopt: never.
std::optional<Timestamp> EvictionTime(const ActiveTaint& taint,
                                      const std::vector<rv1::DeviceToleration>& tolerations) {
  std::optional<int64_t> min_seconds;
  bool tolerated = false;
  for (const rv1::DeviceToleration& toleration : tolerations) {
    if (!api::labels::ToleratesTaint(toleration, taint.taint)) continue;
    tolerated = true;
    if (!toleration.toleration_seconds) return std::nullopt;  // tolerated for ever
    const int64_t seconds = std::max<int64_t>(0, *toleration.toleration_seconds);
    min_seconds = min_seconds ? std::min(*min_seconds, seconds) : seconds;
  }
  if (!tolerated) return taint.added;
  return api::labels::AfterTolerationSeconds(taint.added, *min_seconds);
}

struct ClaimEviction {
  Timestamp when{};
  std::vector<TaintReason> reasons;
};

}  // namespace

std::string TaintReason::ToString() const {
  if (!rule.empty()) return "DeviceTaintRule " + rule;
  return "ResourceSlice " + slice + " " + driver + "/" + pool + "/" + device + " taint " + key;
}

std::string RuleTaintKey(const rv1::DeviceTaintRule& rule) {
  return "rule/" + rule.metadata.uid + "/" + rule.spec.taint.effect;
}

std::string SliceTaintKey(std::string_view driver, std::string_view pool, std::string_view device,
                          std::string_view key) {
  return "slice/" + std::string(driver) + "/" + std::string(pool) + "/" + std::string(device) +
         "/" + std::string(key);
}

std::vector<PodEviction> Evaluate(const Snapshot& snapshot, const rv1::DeviceTaintRule* simulate) {
  const auto devices = CurrentDevices(snapshot);
  // Step 4a: claims.
  std::map<std::string, ClaimEviction> by_pod_uid;  // merged per consumer uid
  for (const rv1::ResourceClaim* claim : snapshot.claims) {
    if (!claim->status.allocation || claim->status.reserved_for.empty()) continue;
    std::optional<ClaimEviction> eviction;
    for (const rv1::DeviceRequestAllocationResult& result :
         claim->status.allocation->devices.results) {
      for (const ActiveTaint& taint :
           TaintsOf(snapshot, devices, {result.driver, result.pool, result.device}, simulate)) {
        std::optional<Timestamp> when = EvictionTime(taint, result.tolerations);
        if (!when) continue;
        if (!eviction) {
          eviction = ClaimEviction{.when = *when, .reasons = {}};
        } else {
          eviction->when = std::min(eviction->when, *when);
        }
        eviction->reasons.push_back(taint.reason);
      }
    }
    if (!eviction) continue;
    for (const rv1::ResourceClaimConsumerReference& ref : claim->status.reserved_for) {
      if (ref.resource != "pods" || !ref.api_group.empty()) continue;
      auto [it, inserted] = by_pod_uid.emplace(ref.uid, *eviction);
      if (!inserted) {
        it->second.when = std::min(it->second.when, eviction->when);
        it->second.reasons.insert(it->second.reasons.end(), eviction->reasons.begin(),
                                  eviction->reasons.end());
      }
    }
  }
  // Step 4b: pods.
  std::vector<PodEviction> out;
  for (const cv1::Pod* pod : snapshot.pods) {
    if (pod->spec.node_name.empty() || pod->metadata.deletion_timestamp) continue;
    auto it = by_pod_uid.find(pod->metadata.uid);
    if (it == by_pod_uid.end()) continue;
    PodEviction e;
    e.namespace_ = pod->metadata.namespace_;
    e.name = pod->metadata.name;
    e.uid = pod->metadata.uid;
    e.priority = pod->spec.priority.value_or(0);
    e.when = it->second.when;
    e.reasons = it->second.reasons;
    std::sort(e.reasons.begin(), e.reasons.end());
    e.reasons.erase(std::unique(e.reasons.begin(), e.reasons.end()), e.reasons.end());
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const PodEviction& a, const PodEviction& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  });
  return out;
}

RuleReport ReportRule(const Snapshot& snapshot, const rv1::DeviceTaintRule& rule) {
  RuleReport report;
  for (const auto& [key, entries] : CurrentDevices(snapshot)) {
    if (api::RuleSelectsDevice(rule, key.driver, key.pool, key.device)) {
      report.published_devices += static_cast<int64_t>(entries.size());
    }
  }
  for (const rv1::ResourceClaim* claim : snapshot.claims) {
    if (!claim->status.allocation) continue;
    for (const auto& result : claim->status.allocation->devices.results) {
      if (api::RuleSelectsDevice(rule, result.driver, result.pool, result.device)) {
        ++report.allocated_devices;
      }
    }
  }
  const bool simulate = rule.spec.taint.effect == rv1::kDeviceTaintEffectNone;
  for (PodEviction& e : Evaluate(snapshot, simulate ? &rule : nullptr)) {
    bool from_rule = false;
    for (const TaintReason& r : e.reasons) from_rule = from_rule || r.rule_uid == rule.metadata.uid;
    if (!from_rule) continue;
    report.namespaces.insert(e.namespace_);
    report.pods.push_back(std::move(e));
  }
  return report;
}

api::metav1::Condition RuleCondition(const rv1::DeviceTaintRule& rule, const RuleReport& report,
                                     int64_t evicted_since_start, size_t max_pods) {
  api::metav1::Condition c;
  c.type = std::string(kEvictionInProgress);
  c.status = "False";
  c.observed_generation = rule.metadata.generation;
  const int64_t pods = static_cast<int64_t>(report.pods.size());
  const int64_t namespaces = static_cast<int64_t>(report.namespaces.size());
  auto plural = [](int64_t n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
  };
  const std::string& effect = rule.spec.taint.effect;
  if (effect == rv1::kDeviceTaintEffectNoExecute) {
    if (pods > 0) {
      c.status = "True";
      c.reason = "PodsPendingEviction";
      c.message = (pods == 1 ? std::string("1 pod needs") : std::to_string(pods) + " pods need") +
                  " to be evicted in " +
                  (namespaces == 1 ? std::string("1 namespace.")
                                   : std::to_string(namespaces) + " different namespaces.");
    } else if (evicted_since_start > 0) {
      c.reason = "Completed";
    } else {
      c.reason = "NotStarted";
    }
  } else if (effect == rv1::kDeviceTaintEffectNone) {
    c.reason = "NoEffect";
    c.message = plural(report.published_devices, "published device", "published devices") +
                " selected. " +
                plural(report.allocated_devices, "allocated device", "allocated devices") +
                " selected. " + plural(pods, "pod", "pods") + " would be evicted in " +
                (namespaces == 1 ? std::string("1 namespace")
                                 : std::to_string(namespaces) + " different namespaces") +
                " if the effect was NoExecute.";
    if (pods > 0) {
      // draplane: who exactly, with priorities, and which tenants.
      c.message += " Pods:";
      for (size_t i = 0; i < report.pods.size() && i < max_pods; ++i) {
        const PodEviction& p = report.pods[i];
        c.message += (i == 0 ? " " : ", ") + p.namespace_ + "/" + p.name + " (priority " +
                     std::to_string(p.priority) + ")";
      }
      if (report.pods.size() > max_pods) {
        c.message += " and " + std::to_string(report.pods.size() - max_pods) + " more";
      }
      c.message += ". Tenants affected:";
      bool first = true;
      for (const std::string& ns : report.namespaces) {
        c.message += (first ? " " : ", ") + ns;
        first = false;
      }
      c.message += ".";
    }
    c.message +=
        " This information will not be updated again. Recreate the DeviceTaintRule to trigger "
        "an update.";
  } else {
    c.reason = "OtherEffect";
    c.message = "Eviction only happens for the NoExecute effect.";
  }
  if (evicted_since_start > 0) {
    if (!c.message.empty()) c.message += " ";
    c.message +=
        plural(evicted_since_start, "pod", "pods") + " evicted since starting the controller.";
  }
  return c;
}

}  // namespace draplane::controllers::devicetaint
