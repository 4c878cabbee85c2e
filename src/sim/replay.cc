#include "sim/replay.h"

#include <algorithm>
#include <boost/json.hpp>
#include <deque>
#include <queue>
#include <set>
#include <thread>
#include <unordered_map>

#include "client/informer.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "controllers/resourceclaim/controller.h"
#include "sim/internal/json.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;
using api::corev1::Pod;
using internal::Arr;
using internal::EnsureObject;
using internal::MetaField;
using internal::Obj;
using internal::Str;

// Creates `object`, or replaces the object of that name.
Status Apply(client::ApiClient& api, json::object object) {
  const client::ResourceType* type =
      client::FindResourceByKind(Str(object, "apiVersion"), Str(object, "kind"));
  if (type == nullptr) {
    return InvalidArgumentError(Str(object, "kind") + " " + MetaField(object, "name") +
                                ": not a kind this client knows");
  }
  client::ApiRequest create;
  create.verb = client::Verb::kCreate;
  create.resource = type;
  create.namespace_ = type->namespaced ? MetaField(object, "namespace") : "";
  create.body = object;
  StatusOr<json::value> created = api.Do(create);
  if (created.ok() || created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  client::ApiRequest get = create;
  get.verb = client::Verb::kGet;
  get.name = MetaField(object, "name");
  DRAPLANE_ASSIGN_OR_RETURN(json::value current, api.Do(get));
  object["metadata"].as_object()["resourceVersion"] =
      MetaField(current.as_object(), "resourceVersion");
  client::ApiRequest update = get;
  update.verb = client::Verb::kUpdate;
  update.body = std::move(object);
  return api.Do(update).status();
}

struct Tracked {
  size_t arrival = 0;
  std::string uid;
  std::string ns;
  std::string name;
  bool bound = false;
  bool placed = false;  // placement recorded
  bool done = false;
};

}  // namespace

StatusOr<ReplayResult> ReplayTrace(client::ApiClient& api, const Clock& clock, const Trace& trace,
                                   const ReplayOptions& options) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<PodArrival> arrivals, ExpandTrace(trace, options.seed));
  const Duration started = clock.MonotonicNow();
  std::set<std::string> namespaces;
  for (const PodArrival& a : arrivals) namespaces.insert(a.namespace_);
  for (const auto* list : {&trace.claim_templates, &trace.claims, &trace.policies}) {
    for (const json::object& o : *list) {
      if (!MetaField(o, "namespace").empty()) namespaces.insert(MetaField(o, "namespace"));
    }
  }
  for (const std::string& ns : namespaces) {
    api::corev1::Namespace object;
    object.metadata.name = ns;
    StatusOr<api::corev1::Namespace> created = client::Create(api, object);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status().WithPrefix("namespace " + ns);
    }
  }
  for (const json::object& t : trace.claim_templates) {
    if (!MetaField(t, "namespace").empty()) {
      DRAPLANE_RETURN_IF_ERROR(Apply(api, t));
      continue;
    }
    for (const std::string& ns : namespaces) {
      json::object copy = t;
      copy["metadata"].as_object()["namespace"] = ns;
      DRAPLANE_RETURN_IF_ERROR(Apply(api, std::move(copy)));
    }
  }
  for (const json::object& c : trace.claims) DRAPLANE_RETURN_IF_ERROR(Apply(api, c));
  for (const json::object& p : trace.policies) DRAPLANE_RETURN_IF_ERROR(Apply(api, p));

  // Bindings and conditions, as the watch reports them.
  Mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const Pod>> seen;  // uid -> newest
  Duration last_change = clock.MonotonicNow();
  client::Informer<Pod> informer(api);
  auto observe = [&](const std::shared_ptr<const Pod>& pod) {
    MutexLock lock(mu);
    seen[pod->metadata.uid] = pod;
    last_change = clock.MonotonicNow();
  };
  informer.AddHandlers(
      {.on_add = observe, .on_update = [&](const auto&, const auto& pod) { observe(pod); }});
  informer.Start();
  if (!informer.WaitForSync()) return UnavailableError("the Pod watch did not start");

  auto real = [&](Duration virtual_time) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::nano>(
        static_cast<double>(virtual_time.count()) / options.speed));
  };
  std::vector<Tracked> tracked;
  std::unordered_map<std::string, size_t> by_uid;
  using Due = std::pair<Duration, size_t>;  // real time since start, tracked index
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> completions;
  ReplayResult result;
  result.placements.resize(arrivals.size());
  size_t next = 0;
  while (true) {
    Duration now = clock.MonotonicNow() - started;
    if (now > options.timeout) {
      informer.Stop();
      return DeadlineExceededError("replay did not finish within " +
                                   FormatDuration(options.timeout));
    }
    while (next < arrivals.size() && real(arrivals[next].at) <= now) {
      const PodArrival& a = arrivals[next];
      client::ApiRequest create;
      create.verb = client::Verb::kCreate;
      create.resource = &client::ResourceOf<Pod>();
      create.namespace_ = a.namespace_;
      create.body = a.Manifest();
      StatusOr<json::value> created = api.Do(create);
      Placement& p = result.placements[next];
      p.arrived = std::chrono::duration<double>(a.at).count();
      p.pod =
          a.namespace_ + "/" + (created.ok() ? MetaField(created->as_object(), "name") : a.name);
      if (created.ok()) {
        Tracked t{.arrival = next,
                  .uid = MetaField(created->as_object(), "uid"),
                  .ns = a.namespace_,
                  .name = MetaField(created->as_object(), "name")};
        by_uid[t.uid] = tracked.size();
        tracked.push_back(std::move(t));
      } else {
        p.reason = std::string(kRejectedByApi) + ": " + created.status().ToString();
      }
      ++next;
    }
    // Newly bound Pods: their devices, and when they complete.
    std::vector<std::shared_ptr<const Pod>> bound;
    {
      MutexLock lock(mu);
      for (const auto& [uid, pod] : seen) {
        auto it = by_uid.find(uid);
        if (it == by_uid.end() || tracked[it->second].bound || pod->spec.node_name.empty()) {
          continue;
        }
        bound.push_back(pod);
      }
    }
    for (const auto& pod : bound) {
      Tracked& t = tracked[by_uid[pod->metadata.uid]];
      t.bound = true;
      Placement& p = result.placements[t.arrival];
      p.node = pod->spec.node_name;
      p.bound = std::chrono::duration<double>(now).count() * options.speed;
      for (const std::string& name : controllers::PodClaimNames(*pod)) {
        StatusOr<api::resourcev1::ResourceClaim> claim =
            client::Get<api::resourcev1::ResourceClaim>(api, t.ns, name);
        if (!claim.ok() || !claim->status.allocation) continue;
        std::set<std::string> requests;
        for (const auto& r : claim->status.allocation->devices.results) {
          p.devices.push_back(r.driver + "/" + r.pool + "/" + r.device);
          size_t slash = r.request.find('/');
          if (slash != std::string::npos && requests.insert(r.request.substr(0, slash)).second) {
            p.tiers.push_back(r.request.substr(0, slash) + " -> " + r.request.substr(slash + 1));
          }
        }
      }
      completions.push({now + real(arrivals[t.arrival].duration), by_uid[pod->metadata.uid]});
    }
    while (!completions.empty() && completions.top().first <= now) {
      Tracked& t = tracked[completions.top().second];
      completions.pop();
      client::DeleteOptions options_delete{.grace_period_seconds = 0, .precondition_uid = t.uid};
      Status s = client::Delete<Pod>(api, t.ns, t.name, options_delete);
      if (!s.ok() && s.code() != StatusCode::kNotFound) log::Warning("replay: {}", s.ToString());
      t.done = true;
    }
    bool all_arrived = next == arrivals.size();
    bool waiting_only = completions.empty();
    Duration quiet;
    {
      MutexLock lock(mu);
      quiet = clock.MonotonicNow() - last_change;
    }
    if (all_arrived && waiting_only) {
      bool all_done =
          std::all_of(tracked.begin(), tracked.end(), [](const Tracked& t) { return t.done; });
      if (all_done || quiet >= options.settle) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // pacing only
  }
  informer.Stop();
  // The outcome of every Pod.
  for (const Tracked& t : tracked) {
    Placement& p = result.placements[t.arrival];
    TenantReport& tenant = result.tenants[t.ns];
    ++tenant.submitted;
    if (t.bound) {
      ++tenant.scheduled;
      continue;
    }
    MutexLock lock(mu);
    auto it = seen.find(t.uid);
    p.reason = "NeverAttempted";
    if (it != seen.end()) {
      for (const auto& c : it->second->status.conditions) {
        if (c.type == "PodScheduled" && c.status == "False") p.reason = c.reason + ": " + c.message;
      }
    }
  }
  for (const Placement& p : result.placements) {
    ++result.submitted;
    if (p.bound >= 0) {
      ++result.scheduled;
    } else {
      ++result.unscheduled;
    }
  }
  result.wall_seconds = std::chrono::duration<double>(clock.MonotonicNow() - started).count();
  return result;
}

std::string ReplaySummary(const ReplayResult& r) {
  std::string out = "replayed " + std::to_string(r.submitted) +
                    " pods: " + std::to_string(r.scheduled) + " scheduled, " +
                    std::to_string(r.unscheduled) + " unscheduled in " +
                    std::to_string(static_cast<int64_t>(r.wall_seconds)) + " s\n";
  for (const auto& [ns, t] : r.tenants) {
    out += "  " + ns + ": " + std::to_string(t.submitted) + " submitted, " +
           std::to_string(t.scheduled) + " scheduled\n";
  }
  // Pods the API server refused to create never reached the scheduler: said, with the first
  // reason, since they make the replay say nothing about scheduling.
  const int64_t rejected = RejectedByApi(r);
  if (rejected > 0) {
    for (const Placement& p : r.placements) {
      if (p.reason.rfind(kRejectedByApi, 0) != 0) continue;
      out += "  " + std::to_string(rejected) + " not created (" + p.reason + " for " + p.pod +
             (rejected > 1 ? ", ..." : "") + ")\n";
      break;
    }
  }
  return out;
}

int64_t RejectedByApi(const ReplayResult& r) {
  int64_t n = 0;
  for (const Placement& p : r.placements) n += p.reason.rfind(kRejectedByApi, 0) == 0 ? 1 : 0;
  return n;
}

json::value ReplayPlacementsJson(const ReplayResult& r) {
  json::array out;
  for (const Placement& p : r.placements) out.push_back(PlacementJson(p));
  return out;
}

}  // namespace draplane::sim
