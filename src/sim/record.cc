#include "sim/record.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <tuple>

#include "api/meta/time.h"
#include "api/priority.h"
#include "client/resource.h"
#include "client/resource_scheduling_v1.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "sim/internal/json.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;
using internal::Arr;
using internal::EnsureObject;
using internal::MetaField;
using internal::Obj;
using internal::Str;

std::optional<Timestamp> ParseTime(const std::string& text) {
  if (text.empty()) return std::nullopt;
  StatusOr<api::Time> t = api::Time::Parse(text);
  if (!t.ok()) return std::nullopt;
  return t->ToTimestamp();
}

// Every object of a resource (paged).
StatusOr<std::vector<json::object>> ListAll(client::ApiClient& api,
                                            const client::ResourceType& type) {
  std::vector<json::object> out;
  std::string token;
  do {
    client::ApiRequest request;
    request.verb = client::Verb::kList;
    request.resource = &type;
    request.list.limit = 500;
    request.list.continue_token = token;
    DRAPLANE_ASSIGN_OR_RETURN(json::value page, api.Do(request));
    token.clear();
    if (!page.is_object())
      return InternalError("list of " + std::string(type.resource) + ": not an object");
    if (const json::object* meta = Obj(page.as_object(), "metadata"))
      token = Str(*meta, "continue");
    if (const json::array* items = Arr(page.as_object(), "items")) {
      for (const json::value& item : *items) {
        if (item.is_object()) out.push_back(item.as_object());
      }
    }
  } while (!token.empty());
  return out;
}

// A manifest as a user would write it: name, namespace, labels and annotations, no status.
json::object Clean(const json::object& object, bool keep_spec_node) {
  json::object out;
  out["apiVersion"] = Str(object, "apiVersion");
  out["kind"] = Str(object, "kind");
  json::object meta;
  if (const json::object* m = Obj(object, "metadata")) {
    for (std::string_view key : {"name", "namespace", "labels", "annotations"}) {
      if (const json::value* v = m->if_contains(key)) meta[key] = *v;
    }
  }
  out["metadata"] = std::move(meta);
  if (const json::object* spec = Obj(object, "spec")) {
    json::object s = *spec;
    if (!keep_spec_node) s.erase("nodeName");
    out["spec"] = std::move(s);
  }
  return out;
}

}  // namespace

StatusOr<Trace> RecordTrace(client::ApiClient& api, const Clock& clock,
                            const RecordOptions& options) {
  std::set<std::string> wanted(options.namespaces.begin(), options.namespaces.end());
  auto recorded = [&](const std::string& ns) {
    if (!wanted.empty()) return wanted.contains(ns);
    return ns != "kube-system" && ns != "kube-public" && ns != "kube-node-lease";
  };
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<json::object> pods,
                            ListAll(api, client::ResourceOf<api::corev1::Pod>()));
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<json::object> events,
                            ListAll(api, client::ResourceOf<api::corev1::Event>()));
  DRAPLANE_ASSIGN_OR_RETURN(
      std::vector<json::object> templates,
      ListAll(api, client::ResourceOf<api::resourcev1::ResourceClaimTemplate>()));
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<json::object> claims,
                            ListAll(api, client::ResourceOf<api::resourcev1::ResourceClaim>()));
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<json::object> priority_classes,
                            ListAll(api, client::ResourceOf<api::schedulingv1::PriorityClass>()));

  // When each Pod was bound, from its Scheduled Event (by uid), and when the scheduler first
  // tried it (its first Scheduled or FailedScheduling Event, to the microsecond).
  std::map<std::string, Timestamp> scheduled_at;
  std::map<std::string, Timestamp> first_tried;
  for (const json::object& e : events) {
    const std::string reason = Str(e, "reason");
    if (reason != "Scheduled" && reason != "FailedScheduling") continue;
    const json::object* involved = Obj(e, "involvedObject");
    if (involved == nullptr || Str(*involved, "kind") != "Pod") continue;
    const std::string uid = Str(*involved, "uid");
    std::optional<Timestamp> seconds = ParseTime(Str(e, "firstTimestamp"));
    std::optional<Timestamp> micros = ParseTime(Str(e, "eventTime"));
    if (reason == "Scheduled") {
      if (std::optional<Timestamp> t = seconds ? seconds : micros) scheduled_at.emplace(uid, *t);
    }
    if (std::optional<Timestamp> t = micros ? micros : seconds) {
      auto [it, added] = first_tried.emplace(uid, *t);
      if (!added && *t < it->second) it->second = *t;
    }
  }

  struct Recorded {
    Timestamp created;
    Timestamp tried;  // first tried; max() when never
    const json::object* pod;
  };
  std::vector<Recorded> chosen;
  for (const json::object& pod : pods) {
    std::string ns = MetaField(pod, "namespace");
    if (!recorded(ns)) continue;
    std::optional<Timestamp> created = ParseTime(MetaField(pod, "creationTimestamp"));
    if (!created) continue;
    auto tried = first_tried.find(MetaField(pod, "uid"));
    chosen.push_back(
        {*created, tried == first_tried.end() ? Timestamp::max() : tried->second, &pod});
  }
  // creationTimestamp has whole seconds: Pods created within one second are ordered by when the
  // scheduler first tried them (its queue is first in, first out), not by name, which would
  // replay a Pod the cluster kept waiting ahead of those it placed.
  std::stable_sort(chosen.begin(), chosen.end(), [](const Recorded& a, const Recorded& b) {
    return std::tie(a.created, a.tried) < std::tie(b.created, b.tried);
  });

  Trace trace;
  trace.name = "recorded";
  if (chosen.empty()) return trace;
  const Timestamp t0 = chosen.front().created;
  const Timestamp now = clock.Now();
  trace.horizon = std::chrono::duration_cast<std::chrono::milliseconds>(now - t0);
  if (*trace.horizon <= Duration::zero()) trace.horizon = std::chrono::seconds(1);

  std::set<std::string> priority_class_names;
  // "kind ns/name" of the templates and claims the cluster has, and of those recorded Pods name.
  auto key = [](std::string_view kind, const std::string& ns, const std::string& name) {
    return std::string(kind) + " " + ns + "/" + name;
  };
  std::set<std::string> existing;
  for (const json::object& t : templates) {
    existing.insert(key("ResourceClaimTemplate", MetaField(t, "namespace"), MetaField(t, "name")));
  }
  for (const json::object& c : claims) {
    existing.insert(key("ResourceClaim", MetaField(c, "namespace"), MetaField(c, "name")));
  }
  std::set<std::string> used;
  for (const Recorded& r : chosen) {
    const json::object& pod = *r.pod;
    std::string ns = MetaField(pod, "namespace");
    // A Pod whose template or claim the cluster no longer has (a finished Pod's template removed
    // with its release) cannot be replayed as it ran: left out, and said so.
    const std::vector<internal::PodClaimSource> sources = internal::PodClaimSources(pod);
    auto missing = std::find_if(sources.begin(), sources.end(), [&](const auto& source) {
      return !existing.contains(key(source.kind, ns, source.name));
    });
    if (missing != sources.end()) {
      log::Warning("sim record: left out Pod {}/{}: its {} no longer exists", ns,
                   MetaField(pod, "name"), key(missing->kind, ns, missing->name));
      continue;
    }
    for (const internal::PodClaimSource& source : sources) {
      used.insert(key(source.kind, ns, source.name));
    }
    Arrival arrival;
    arrival.path = "arrivals[" + std::to_string(trace.arrivals.size()) + "]";
    arrival.at = std::chrono::duration_cast<std::chrono::milliseconds>(r.created - t0);
    arrival.namespace_ = ns;
    arrival.pod = Clean(pod, false);
    // Its duration as observed.
    const json::object* status = Obj(pod, "status");
    std::string phase = status ? Str(*status, "phase") : "";
    std::optional<Timestamp> started = status ? ParseTime(Str(*status, "startTime")) : std::nullopt;
    if (!started) {
      auto s = scheduled_at.find(MetaField(pod, "uid"));
      if (s != scheduled_at.end()) started = s->second;
    }
    if (started && (phase == "Succeeded" || phase == "Failed")) {
      std::optional<Timestamp> finished;
      if (const json::array* statuses = status ? Arr(*status, "containerStatuses") : nullptr) {
        for (const json::value& c : *statuses) {
          if (!c.is_object()) continue;
          const json::object* state = Obj(c.as_object(), "state");
          const json::object* terminated = state ? Obj(*state, "terminated") : nullptr;
          std::optional<Timestamp> t =
              terminated ? ParseTime(Str(*terminated, "finishedAt")) : std::nullopt;
          if (t && (!finished || *t > *finished)) finished = t;
        }
      }
      if (finished && *finished >= *started) {
        arrival.duration =
            std::chrono::duration_cast<std::chrono::milliseconds>(*finished - *started);
      }
    } else if (started && phase == "Running") {
      arrival.duration = std::chrono::duration_cast<std::chrono::milliseconds>(now - *started);
    }
    if (const json::object* spec = Obj(pod, "spec")) {
      if (std::string pc = Str(*spec, "priorityClassName"); !pc.empty()) {
        priority_class_names.insert(pc);
      }
    }
    trace.arrivals.push_back(std::move(arrival));
  }
  for (const json::object& t : templates) {
    if (used.contains(
            key("ResourceClaimTemplate", MetaField(t, "namespace"), MetaField(t, "name")))) {
      trace.claim_templates.push_back(Clean(t, true));
    }
  }
  for (const json::object& c : claims) {
    if (used.contains(key("ResourceClaim", MetaField(c, "namespace"), MetaField(c, "name")))) {
      trace.claims.push_back(Clean(c, true));
    }
  }
  // The PriorityClasses the Pods name, and the cluster's default one: without them the API
  // server's Priority admission refuses the Pods (a run creates the system classes itself).
  std::set<std::string> system;
  for (const api::schedulingv1::PriorityClass& pc : api::SystemPriorityClasses()) {
    system.insert(pc.metadata.name);
  }
  for (const json::object& pc : priority_classes) {
    const std::string name = MetaField(pc, "name");
    const json::value* global_default = pc.if_contains("globalDefault");
    const bool is_default =
        global_default != nullptr && global_default->is_bool() && global_default->as_bool();
    if (system.contains(name) || !(priority_class_names.contains(name) || is_default)) continue;
    json::object out = Clean(pc, true);
    for (std::string_view key : {"value", "globalDefault", "description", "preemptionPolicy"}) {
      if (const json::value* v = pc.if_contains(key)) out[key] = *v;
    }
    trace.policies.push_back(std::move(out));
  }
  return trace;
}

}  // namespace draplane::sim
