#include "scheduler/queue_view.h"

#include <algorithm>
#include <map>
#include <memory>

#include "api/pods.h"
#include "common/saturating.h"
#include "scheduler/device_ledger.h"
#include "scheduler/plugins/dynamic_resources.h"
#include "scheduler/queue_order.h"
#include "scheduler/requested_classes.h"
#include "scheduler/starvation_holds.h"

namespace draplane::scheduler {
namespace {

namespace rv1 = api::resourcev1;

// When the Pod started waiting: its PodScheduled=False transition, else its creation.
Timestamp WaitingSince(const api::corev1::Pod& pod) {
  for (const api::corev1::PodCondition& c : pod.status.conditions) {
    if (c.type == "PodScheduled" && c.status == "False") {
      return c.last_transition_time.ToTimestamp();
    }
  }
  return pod.metadata.creation_timestamp.ToTimestamp();
}

}  // namespace

bool IsPendingForScheduler(const api::corev1::Pod& pod,
                           const std::vector<std::string>& scheduler_names) {
  if (!pod.spec.node_name.empty() || pod.metadata.deletion_timestamp.has_value() ||
      api::IsPodTerminal(pod)) {
    return false;
  }
  std::string_view name = pod.spec.scheduler_name;
  if (name.empty()) name = "default-scheduler";
  if (scheduler_names.empty()) return name == "default-scheduler";
  return std::find(scheduler_names.begin(), scheduler_names.end(), name) != scheduler_names.end();
}

QueueView ComputeQueueView(const QueueViewInputs& inputs) {
  QueueView view;
  // The model's clock stands still at `now`: monotonic zero is `now`, earlier instants are
  // negative readings.
  ManualClock clock(inputs.now);
  auto monotonic = [&](Timestamp t) { return Duration(t - inputs.now); };

  DeviceLedger ledger;
  for (const rv1::DeviceClass& c : inputs.classes) {
    ledger.SetClass(std::make_shared<const rv1::DeviceClass>(c));
  }
  for (const rv1::ResourceSlice& s : inputs.slices) {
    ledger.SetSlice(std::make_shared<const rv1::ResourceSlice>(s));
  }
  std::map<std::pair<std::string, std::string>, const rv1::ResourceClaim*> claims;
  for (const rv1::ResourceClaim& c : inputs.claims) {
    claims[{c.metadata.namespace_, c.metadata.name}] = &c;
    if (c.status.allocation.has_value())
      ledger.Commit(std::make_shared<const rv1::ResourceClaim>(c));
  }

  std::unique_ptr<FairShareModel> model;
  if (inputs.policy.has_value()) {
    StatusOr<FairShareConfig> config = CompileSharingPolicy(*inputs.policy);
    if (config.ok()) {
      view.policy = inputs.policy->metadata.name;
      model = std::make_unique<FairShareModel>(*std::move(config), ledger, clock);
      if (inputs.policy->status) model->RestoreHistory(*inputs.policy->status);
      for (const api::corev1::Namespace& ns : inputs.namespaces) {
        model->SetNamespaceLabels(ns.metadata.name, ns.metadata.labels);
      }
    } else {
      view.policy_error = config.status().message();
    }
  }

  // The classes a Pod's claims request (as the scheduler reads them, from the listed claims).
  auto classes_of = [&](const api::corev1::Pod& pod) {
    return ClassesOfPod(pod, [&](std::string_view name) -> const rv1::ResourceClaim* {
      auto claim = claims.find({pod.metadata.namespace_, std::string(name)});
      return claim == claims.end() ? nullptr : claim->second;
    });
  };
  std::unique_ptr<ActiveOrder> order;
  FairShareOrder* fair_order = nullptr;
  if (model != nullptr) {
    auto fair = std::make_unique<FairShareOrder>(*model, classes_of);
    fair_order = fair.get();
    order = std::move(fair);
  } else {
    order = std::make_unique<PrioritySortOrder>();
  }

  // Pending Pods by (waiting since, namespace, name): the sequence stands for arrival.
  std::vector<const api::corev1::Pod*> pending;
  for (const api::corev1::Pod& pod : inputs.pods) {
    if (IsPendingForScheduler(pod, inputs.scheduler_names)) pending.push_back(&pod);
  }
  std::sort(pending.begin(), pending.end(), [](const auto* a, const auto* b) {
    return std::tuple(WaitingSince(*a), a->metadata.namespace_, a->metadata.name) <
           std::tuple(WaitingSince(*b), b->metadata.namespace_, b->metadata.name);
  });
  std::map<std::string, ActiveOrder::Entry> entries;
  for (size_t i = 0; i < pending.size(); ++i) {
    const api::corev1::Pod& pod = *pending[i];
    ActiveOrder::Entry entry{.uid = pod.metadata.uid,
                             .pod = pod,
                             .enqueued_at = monotonic(WaitingSince(pod)),
                             .sequence = i,
                             .indebted = false};
    order->Add(entry);
    entries.emplace(pod.metadata.uid, entry);
  }

  // What each Pod is shown with: every pending Pod counted as waiting (as the order has them
  // now; the pops below take them out one by one).
  std::map<std::string, QueuedPodView> shown;
  std::vector<PendingShare> waiting;
  for (const auto& [uid, entry] : entries) {
    const api::corev1::Pod& pod = entry.pod;
    QueuedPodView& out = shown[uid];
    out.namespace_ = pod.metadata.namespace_;
    out.name = pod.metadata.name;
    out.priority = pod.spec.priority.value_or(0);
    out.waiting_since = WaitingSince(pod);
    if (auto held = pod.metadata.annotations.find(std::string(kHeldDevicesAnnotation));
        held != pod.metadata.annotations.end()) {
      // One the scheduler could not have written is not shown (the scheduler ignores it too).
      if (StatusOr<StarvationHold> hold = StarvationHolds::ParseAnnotation(held->second);
          hold.ok()) {
        QueuedHold& h = out.hold.emplace();
        h.node = hold->node;
        h.since = hold->since;
        h.devices = hold->devices;
        for (const HoldNeed& need : hold->needs) {
          h.needed = SaturatingAdd(h.needed, need.count == HoldNeed::kAllDevices
                                                 ? ledger.Devices(need.device_class, hold->node)
                                                 : need.count);
        }
      }
    }
    if (model == nullptr) continue;
    std::vector<int> domains = model->DomainsOf(classes_of(pod).all);
    const FairShareConfig& config = model->config();
    for (int d : domains) {
      out.domains.push_back(config.domains[static_cast<size_t>(d)].name);
      double share = model->EffectiveShare(out.namespace_, d);
      if (out.domains.size() == 1 || share > out.share) {
        out.share = share;
        out.fair = model->FairShare(out.namespace_, d);
      }
    }
    out.weight = model->Weight(out.namespace_);
    out.credit = fair_order->Credit(entry.enqueued_at, Duration(0));
    bool starving = -entry.enqueued_at >= config.starvation_threshold;
    if (starving) out.starving_since = out.waiting_since + config.starvation_threshold;
    waiting.push_back(
        {.namespace_ = out.namespace_, .domains = std::move(domains), .starving = starving});
  }
  if (model != nullptr) view.shares = ComputeShares(*model, waiting);

  while (std::optional<std::string> uid = order->Peek(Duration(0))) {
    QueuedPodView& out = view.pods.emplace_back(std::move(shown.at(*uid)));
    out.position = static_cast<int64_t>(view.pods.size());
    order->Remove(entries.at(*uid));
  }
  return view;
}

}  // namespace draplane::scheduler
