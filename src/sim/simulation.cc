#include "sim/simulation.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/gen/scheduling_v1_codec.h"
#include "api/object.h"
#include "api/priority.h"
#include "api/validation/object_validation.h"
#include "api/validation/pod_defaults.h"
#include "api/validation/validation.h"
#include "cel/selector_lint.h"
#include "client/events.h"
#include "client/memory_api.h"
#include "client/resource.h"
#include "client/resource_scheduling_v1.h"
#include "client/shared_informers.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "controllers/gc/garbage_collector.h"
#include "controllers/resourceclaim/controller.h"
#include "scheduler/scheduler.h"
#include "sim/internal/collector.h"
#include "sim/internal/json.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;
using internal::Arr;
using internal::EnsureObject;
using internal::MetaField;
using internal::Obj;
using internal::Str;
namespace rv1 = api::resourcev1;
using api::corev1::Pod;

// What the API server would not let a client set on create.
void StripServerFields(json::object& o) {
  json::object& meta = EnsureObject(o, "metadata");
  for (std::string_view key :
       {"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp",
        "deletionGracePeriodSeconds", "managedFields"}) {
    meta.erase(key);
  }
}

bool Terminal(const json::object& pod) {
  const json::value* status = pod.if_contains("status");
  if (status == nullptr || !status->is_object()) return false;
  std::string phase = Str(status->as_object(), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

std::string NodeName(const json::object& pod) {
  const json::value* spec = pod.if_contains("spec");
  return spec != nullptr && spec->is_object() ? Str(spec->as_object(), "nodeName") : "";
}

Duration Millis(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); }

constexpr Duration kQuietLimit = std::chrono::hours(1);

class Simulation {
 public:
  Simulation(const Trace& trace, const RunOptions& options, uint64_t seed)
      : trace_(trace),
        options_(options),
        seed_(seed),
        api_random_(NewSeededRandom(DeriveSeed(seed, 1))),
        // Informers here never resume a watch from an old resourceVersion, so the event log
        // stays short; Events expire after an hour, as kube-apiserver's --event-ttl default.
        api_(clock_, *api_random_,
             client::MemoryApiOptions{.event_log_capacity = 1024,
                                      .event_ttl = std::chrono::hours(1)}),
        informers_(api_, client::InformerOptions{.manual = true}) {}

  ~Simulation() {
    if (scheduler_) scheduler_->Stop();
    if (claims_) claims_->Stop();
    if (garbage_collector_) garbage_collector_->Stop();
    informers_.Stop();
  }

  Status Load(Cluster cluster, Report* report);
  Status Run(Report* report);

 private:
  // A field path of the trace ("arrivals[2]") in messages, after the trace's file name.
  std::string InTrace(std::string_view path) const {
    return trace_.source.empty() ? std::string(path) : trace_.source + ": " + std::string(path);
  }

  enum class EventKind { kArrive, kComplete, kGiveUp };
  struct Event {
    Duration at;
    uint64_t sequence;
    EventKind kind;
    size_t arrival = 0;  // kArrive
    std::string uid{};   // kComplete, kGiveUp
    std::string namespace_{};
    std::string name{};
    bool operator>(const Event& other) const {
      return at != other.at ? at > other.at : sequence > other.sequence;
    }
  };

  void Push(Event event) {
    event.sequence = next_sequence_++;
    events_.push(std::move(event));
  }
  // `created` (optional): the stored object.
  Status Create(const client::ResourceType& type, json::object object,
                std::shared_ptr<const json::value>* created);
  Status CreateOrReplace(const json::object& object, const std::string& what);
  Status Settle();
  // A trace manifest after the priority admission, decoded once for all its copies: the
  // admission reads only the manifest and the PriorityClasses, which are fixed once loaded.
  struct AdmittedManifest {
    std::optional<std::string> refused;  // the admission's refusal
    std::optional<Pod> pod;              // else the decoded Pod
    std::string decode_error;            // else why it does not decode
  };
  const AdmittedManifest& Admitted(const PodArrival& arrival);
  // Creates the arrival's Pod (PodArrival::Manifest decoded): its manifest admitted and decoded
  // once, the copy's own metadata decoded alone (PodArrival::Named).
  void Arrive(const PodArrival& arrival);
  void Complete(const Event& event);
  // The kubelet's status write for a Pod whose containers finished: phase Succeeded.
  Status ReportSucceeded(const Event& event);
  void GiveUp(const Event& event);
  std::optional<Duration> NextInstant() const;
  Duration Now() const { return Millis(clock_.MonotonicNow()); }

  const Trace& trace_;
  const RunOptions& options_;
  const uint64_t seed_;
  ManualClock clock_{StartTime()};
  std::unique_ptr<Random> api_random_;
  client::MemoryApi api_;
  client::SharedInformers informers_;
  std::unique_ptr<internal::Collector> collector_;
  std::unique_ptr<controllers::ResourceClaimController> claims_;
  std::unique_ptr<controllers::GarbageCollector> garbage_collector_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;

  std::vector<PodArrival> arrivals_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t next_sequence_ = 0;
  // Trace Pods not bound yet: uid -> how long they run once bound.
  std::unordered_map<std::string, Duration> run_for_;
  // Pods a cluster dump holds pending: submitted at time zero (uid, duration).
  std::vector<std::pair<std::string, Duration>> collector_pending_;
  std::vector<api::schedulingv1::PriorityClass> priority_classes_;
  std::map<const json::object*, AdmittedManifest> admitted_;  // by PodArrival::manifest
  int64_t decisions_ = 0;
  bool last_settle_wrote_ = false;
  int64_t bound_ = 0;  // the scheduler's bindings so far
  Duration last_binding_{0};
  Duration window_{0};
};

Status Simulation::Create(const client::ResourceType& type, json::object object,
                          std::shared_ptr<const json::value>* created) {
  client::ApiRequest request;
  request.verb = client::Verb::kCreate;
  request.resource = &type;
  request.namespace_ = type.namespaced ? MetaField(object, "namespace") : "";
  request.body = std::move(object);
  request.discard_response = created == nullptr;
  StatusOr<std::shared_ptr<const json::value>> result = api_.DoShared(std::move(request));
  if (!result.ok()) return result.status();
  if (created != nullptr) *created = std::move(*result);
  return Status::Ok();
}

// A policy or configuration object: created, or replacing the object of that name.
Status Simulation::CreateOrReplace(const json::object& object, const std::string& what) {
  std::string api_version = Str(object, "apiVersion");
  std::string kind = Str(object, "kind");
  const client::ResourceType* type = client::FindResourceByKind(api_version, kind);
  if (type == nullptr) {
    return InvalidArgumentError(what + ": " + kind + " (" + api_version +
                                ") is not a kind the simulated API serves, so no simulated "
                                "component could apply it");
  }
  json::object body = object;
  StripServerFields(body);
  if (type->namespaced && MetaField(body, "namespace").empty()) {
    EnsureObject(body, "metadata")["namespace"] = "default";
  }
  if (kind == "ResourceClaimTemplate" || kind == "ResourceClaim") {
    // Defaulted as the API server does on create.
    api::FieldErrorList errors;
    if (kind == "ResourceClaimTemplate") {
      rv1::ResourceClaimTemplate typed;
      rv1::Decode(json::value(body), &typed, &errors);
      api::validation::SetDefaults(&typed);
      if (errors.empty()) body = rv1::Encode(typed).as_object();
    } else {
      rv1::ResourceClaim typed;
      rv1::Decode(json::value(body), &typed, &errors);
      api::validation::SetDefaults(&typed);
      if (errors.empty()) body = rv1::Encode(typed).as_object();
    }
    if (!errors.empty()) return InvalidArgumentError(what + ": " + errors.front().ToString());
  }
  if (kind == "DeviceClass" || kind == "ResourceClaimTemplate" || kind == "ResourceClaim") {
    // CEL selectors compiled as the API server compiles them on create: one that does not
    // compile is refused here, not left to fail every scheduling attempt of its Pods.
    api::FieldErrorList errors;
    api::Object typed = api::DecodeObject(json::value(body), &errors);
    if (errors.empty()) {
      cel::SelectorLintOptions lint;
      lint.consumable_capacity = options_.features.consumable_capacity;
      lint.list_type_attributes = options_.features.list_type_attributes;
      lint.list_attributes = options_.features.list_attributes;
      errors = cel::LintCelSelectors(typed, lint);
    }
    if (!errors.empty()) {
      return InvalidArgumentError(what + ": " + ObjectIdentity(body) + ": " +
                                  errors.front().ToString());
    }
  }
  Status s = Create(*type, body, nullptr);
  if (s.code() != StatusCode::kAlreadyExists) {
    return s.ok() ? s : s.WithPrefix(what);
  }
  client::ApiRequest update;
  update.verb = client::Verb::kUpdate;
  update.resource = type;
  update.namespace_ = type->namespaced ? MetaField(body, "namespace") : "";
  update.name = MetaField(body, "name");
  update.body = std::move(body);
  StatusOr<json::value> replaced = api_.Do(update);
  return replaced.ok() ? Status::Ok() : replaced.status().WithPrefix(what);
}

Status Simulation::Load(Cluster cluster, Report* report) {
  for (const ClusterChange& change : options_.changes) {
    DRAPLANE_RETURN_IF_ERROR(ApplyClusterChange(change, &cluster));
    report->configuration.push_back("ClusterChange " + change.name + " (" + change.source + ")");
  }
  // Pods arriving after the run stops are never submitted: they are not expanded either.
  DRAPLANE_ASSIGN_OR_RETURN(
      arrivals_, ExpandTrace(trace_, seed_, options_.until ? options_.until : trace_.horizon));
  // A Pod of the trace named as one of the cluster's would be refused by the API at its arrival
  // (a recording of this very cluster replayed on its dump): an input error, not a result.
  std::set<std::string> cluster_pods;
  for (const json::object& o : cluster.objects) {
    if (Str(o, "kind") == "Pod")
      cluster_pods.insert(MetaField(o, "namespace") + "/" + MetaField(o, "name"));
  }
  for (const PodArrival& a : arrivals_) {
    if (!a.name.empty() && cluster_pods.contains(a.namespace_ + "/" + a.name)) {
      return InvalidArgumentError(InTrace(a.source) + ": Pod " + a.namespace_ + "/" + a.name +
                                  " arrives in the trace but the cluster input holds it already "
                                  "(names must be unique in a namespace)");
    }
  }

  // Namespaces: those the cluster defines, then every other one in use.
  std::set<std::string> namespaces;
  std::set<std::string> defined;
  for (const json::object& o : cluster.objects) {
    if (Str(o, "kind") == "Namespace") defined.insert(MetaField(o, "name"));
    std::string ns = MetaField(o, "namespace");
    if (!ns.empty()) namespaces.insert(ns);
  }
  std::set<std::string> trace_namespaces;
  for (const PodArrival& a : arrivals_) trace_namespaces.insert(a.namespace_);
  namespaces.insert(trace_namespaces.begin(), trace_namespaces.end());
  for (const auto* list : {&trace_.claim_templates, &trace_.claims, &trace_.policies}) {
    for (const json::object& o : *list) {
      if (!MetaField(o, "namespace").empty()) namespaces.insert(MetaField(o, "namespace"));
    }
  }
  // A weight for a namespace where no Pod runs weighs nothing: most likely a misspelled tenant,
  // whose real namespace would silently get weight 1.
  std::set<std::string> pod_namespaces;  // declared, whether or not a Pod arrives in this run
  for (const Arrival& a : trace_.arrivals) pod_namespaces.insert(a.namespace_);
  for (const Generator& g : trace_.generators) pod_namespaces.insert(g.namespace_);
  for (const json::object& o : cluster.objects) {
    if (Str(o, "kind") == "Pod") pod_namespaces.insert(MetaField(o, "namespace"));
  }
  for (size_t i = 0; i < trace_.tenants.size(); ++i) {
    if (!pod_namespaces.contains(trace_.tenants[i].namespace_)) {
      return InvalidArgumentError(InTrace("tenants[" + std::to_string(i) + "].namespace") +
                                  ": Not found: no Pod of the trace or the cluster input is in "
                                  "namespace " +
                                  trace_.tenants[i].namespace_);
    }
  }
  for (const std::string& ns : namespaces) {
    if (defined.contains(ns)) continue;
    json::object object{
        {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", json::object{{"name", ns}}}};
    DRAPLANE_RETURN_IF_ERROR(Create(client::ResourceOf<api::corev1::Namespace>(), object, nullptr));
  }

  // The cluster. Objects get new uids here, so what refers to them by uid follows: claims to
  // Pods, and owner references (a kubelet plugin's slices are owned by their Node, which the
  // garbage collector would otherwise find gone and delete them with). Nodes go first, so that
  // their slices, wherever the dump lists them, find them.
  std::stable_partition(cluster.objects.begin(), cluster.objects.end(),
                        [](const json::object& o) { return Str(o, "kind") == "Node"; });
  std::unordered_map<std::string, std::string> pod_uids;   // dump uid -> uid here
  std::unordered_map<std::string, std::string> node_uids;  // dump uid -> uid here
  auto follow_owners = [&](json::object& object) {
    json::value* owners = EnsureObject(object, "metadata").if_contains("ownerReferences");
    if (owners == nullptr || !owners->is_array()) return;
    for (json::value& owner : owners->as_array()) {
      if (!owner.is_object()) continue;
      json::object& ref = owner.as_object();
      const auto& uids = Str(ref, "kind") == "Node" ? node_uids : pod_uids;
      if (auto it = uids.find(Str(ref, "uid")); it != uids.end()) ref["uid"] = it->second;
    }
  };
  std::map<std::string, Duration> remaining;  // running Pods, by ns/name
  for (const RunningPod& p : trace_.running) remaining[p.namespace_ + "/" + p.name] = p.remaining;
  for (json::object& object : cluster.objects) {
    std::string kind = Str(object, "kind");
    std::string what = ObjectIdentity(object);
    const client::ResourceType* type = client::FindResourceByKind(Str(object, "apiVersion"), kind);
    if (type == nullptr) {
      return InvalidArgumentError(what + ": not a kind the simulated API serves");
    }
    if (kind == "Node") ++report->nodes;
    if (kind == "Pod") {
      if (Terminal(object)) continue;  // holds nothing any more
      std::string old_uid = MetaField(object, "uid");
      StripServerFields(object);
      follow_owners(object);  // a static Pod is owned by its Node
      api::validation::SetPodDefaults(object);
      std::shared_ptr<const json::value> created;
      Status s = Create(*type, std::move(object), &created);
      if (!s.ok()) return s.WithPrefix(what);
      const json::object& pod = created->as_object();
      std::string uid = MetaField(pod, "uid");
      if (!old_uid.empty()) pod_uids[old_uid] = uid;
      std::string key = MetaField(pod, "namespace") + "/" + MetaField(pod, "name");
      if (!NodeName(pod).empty()) {
        auto r = remaining.find(key);
        const Duration left = r != remaining.end() ? r->second : trace_.default_remaining;
        if (r != remaining.end()) remaining.erase(r);
        Push({.at = left,
              .sequence = 0,
              .kind = EventKind::kComplete,
              .uid = uid,
              .namespace_ = MetaField(pod, "namespace"),
              .name = MetaField(pod, "name")});
      } else {
        // Pending in the snapshot: part of the workload, submitted at time zero.
        collector_pending_.push_back({uid, trace_.default_duration});
      }
      continue;
    }
    if (kind == "ResourceClaim") {
      rv1::ResourceClaim claim;
      api::FieldErrorList errors;
      rv1::Decode(json::value(object), &claim, &errors);
      if (!errors.empty()) return InvalidArgumentError(what + ": " + errors.front().ToString());
      api::validation::SetDefaults(&claim);
      for (api::metav1::OwnerReference& owner : claim.metadata.owner_references) {
        if (auto it = pod_uids.find(owner.uid); it != pod_uids.end()) owner.uid = it->second;
      }
      std::vector<rv1::ResourceClaimConsumerReference> reserved;
      for (rv1::ResourceClaimConsumerReference r : claim.status.reserved_for) {
        auto it = pod_uids.find(r.uid);
        if (r.resource == "pods" && it == pod_uids.end()) continue;  // a Pod not in the dump
        if (it != pod_uids.end()) r.uid = it->second;
        reserved.push_back(std::move(r));
      }
      claim.status.reserved_for = std::move(reserved);
      rv1::ResourceClaimStatus status = claim.status;
      json::object body = rv1::Encode(claim).as_object();
      StripServerFields(body);
      std::shared_ptr<const json::value> created;
      Status s = Create(*type, std::move(body), &created);
      if (!s.ok()) return s.WithPrefix(what);
      if (status.allocation.has_value() || !status.reserved_for.empty()) {
        StatusOr<rv1::ResourceClaim> written = client::DecodeAs<rv1::ResourceClaim>(*created);
        if (!written.ok()) return written.status().WithPrefix(what);
        written->status = std::move(status);
        StatusOr<rv1::ResourceClaim> updated = client::UpdateStatus(api_, *written);
        if (!updated.ok()) return updated.status().WithPrefix(what);
      }
      continue;
    }
    if (kind == "Namespace") {
      StripServerFields(object);
      DRAPLANE_RETURN_IF_ERROR(Create(*type, std::move(object), nullptr).WithPrefix(what));
      continue;
    }
    follow_owners(object);
    const std::string old_uid = MetaField(object, "uid");
    DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(object, what));
    if (kind == "Node" && !old_uid.empty()) {
      StatusOr<api::corev1::Node> node =
          client::Get<api::corev1::Node>(api_, "", MetaField(object, "name"));
      if (!node.ok()) return node.status().WithPrefix(what);
      node_uids[old_uid] = node->metadata.uid;
    }
  }

  // A `running` entry is for a running Pod of the dump: one that names none is a mistake (a
  // misspelled name would leave the Pod on defaultRemaining unnoticed).
  for (size_t i = 0; i < trace_.running.size(); ++i) {
    const RunningPod& p = trace_.running[i];
    if (remaining.count(p.namespace_ + "/" + p.name) > 0) {
      return InvalidArgumentError(InTrace("running[" + std::to_string(i) + "]") +
                                  ": Not found: no running Pod " + p.namespace_ + "/" + p.name +
                                  " in the cluster");
    }
  }
  if (report->nodes == 0) {
    return InvalidArgumentError(
        "the cluster has no nodes (a kubectl dump with Nodes, or a ClusterProfile, is needed)");
  }

  // The trace's templates (one per namespace in use when they name none), claims and policies,
  // then the configuration's policies.
  for (size_t i = 0; i < trace_.claim_templates.size(); ++i) {
    const json::object& t = trace_.claim_templates[i];
    std::string what = InTrace("claimTemplates[" + std::to_string(i) + "]");
    if (!MetaField(t, "namespace").empty()) {
      DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(t, what));
      continue;
    }
    for (const std::string& ns : trace_namespaces) {
      json::object copy = t;
      EnsureObject(copy, "metadata")["namespace"] = ns;
      DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(copy, what));
    }
  }
  for (size_t i = 0; i < trace_.claims.size(); ++i) {
    DRAPLANE_RETURN_IF_ERROR(
        CreateOrReplace(trace_.claims[i], InTrace("claims[" + std::to_string(i) + "]")));
  }
  // The system PriorityClasses every API server creates at start; the trace's own classes come
  // with its policies.
  for (const api::schedulingv1::PriorityClass& pc : api::SystemPriorityClasses()) {
    DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(api::schedulingv1::Encode(pc).as_object(),
                                             "PriorityClass " + pc.metadata.name));
  }
  auto policy = [&](const json::object& o, const std::string& what) -> Status {
    const client::ResourceType* type =
        client::FindResourceByKind(Str(o, "apiVersion"), Str(o, "kind"));
    // Validated as the API server would on create (the in-memory API stores what it is given).
    if (type != nullptr) DRAPLANE_RETURN_IF_ERROR(ValidateAsCreated(o, *type, what));
    // A namespaced object without a namespace applies to every namespace of the trace.
    if (type != nullptr && type->namespaced && MetaField(o, "namespace").empty()) {
      for (const std::string& ns : trace_namespaces) {
        json::object copy = o;
        EnsureObject(copy, "metadata")["namespace"] = ns;
        DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(copy, what));
      }
    } else {
      DRAPLANE_RETURN_IF_ERROR(CreateOrReplace(o, what));
    }
    ++report->policy_kinds[Str(o, "kind")];
    report->configuration.push_back(Str(o, "kind") + " " +
                                    (MetaField(o, "namespace").empty()
                                         ? MetaField(o, "name")
                                         : MetaField(o, "namespace") + "/" + MetaField(o, "name")));
    return Status::Ok();
  };
  for (size_t i = 0; i < trace_.policies.size(); ++i) {
    DRAPLANE_RETURN_IF_ERROR(
        policy(trace_.policies[i], InTrace("policies[" + std::to_string(i) + "]")));
  }
  for (const PolicyObject& p : options_.policies) {
    DRAPLANE_RETURN_IF_ERROR(policy(p.object, p.source));
  }

  // Every claim and template a trace Pod names exists now (nothing creates them later): one
  // missing is a mistake in the input, named as such, not Pods that silently never run.
  auto check_claims = [&](const std::string& path, const json::object& pod) -> Status {
    const std::string ns = MetaField(pod, "namespace");
    // Templates without a namespace are created only in the namespaces where Pods arrive in this
    // run (--until, the seed): others' Pods never come.
    if (!trace_namespaces.contains(ns)) return Status::Ok();
    for (const internal::PodClaimSource& source : internal::PodClaimSources(pod)) {
      const bool is_template = source.kind == "ResourceClaimTemplate";
      Status found = is_template
                         ? client::Get<rv1::ResourceClaimTemplate>(api_, ns, source.name).status()
                         : client::Get<rv1::ResourceClaim>(api_, ns, source.name).status();
      if (found.code() == StatusCode::kNotFound) {
        return InvalidArgumentError(
            InTrace(path + ".pod.spec.resourceClaims[" + std::to_string(source.index) + "]." +
                    std::string(source.field)) +
            ": Not found: " + std::string(source.kind) + " " + ns + "/" + source.name +
            (is_template ? " is in neither the trace's claimTemplates or policies nor the "
                           "cluster input"
                         : " is in neither the trace's claims nor the cluster input"));
      }
      DRAPLANE_RETURN_IF_ERROR(found);
    }
    return Status::Ok();
  };
  for (const Arrival& a : trace_.arrivals) DRAPLANE_RETURN_IF_ERROR(check_claims(a.path, a.pod));
  for (const Generator& g : trace_.generators) {
    DRAPLANE_RETURN_IF_ERROR(check_claims(g.path, g.pod));
  }

  // The classes trace Pods resolve their priority through (the API server's Priority admission).
  StatusOr<client::ObjectList<api::schedulingv1::PriorityClass>> classes =
      client::List<api::schedulingv1::PriorityClass>(api_, "");
  if (!classes.ok()) return classes.status();
  priority_classes_ = std::move(classes->items);

  // The window: the horizon, else the end of the last arrival, else when the last Pod would end
  // if it ran at once.
  if (options_.until) {
    window_ = Millis(*options_.until);
  } else if (trace_.horizon) {
    window_ = *trace_.horizon;
  } else {
    window_ = ArrivalsEnd(trace_);
    if (window_ == Duration::zero()) {
      for (const PodArrival& a : arrivals_) window_ = std::max(window_, a.at + a.duration);
      if (!events_.empty()) window_ = std::max(window_, events_.top().at);
      for (const RunningPod& p : trace_.running) window_ = std::max(window_, p.remaining);
    }
  }
  if (window_ <= Duration::zero()) window_ = std::chrono::seconds(1);
  Duration step = options_.sample_step;
  if (step <= Duration::zero()) {
    step = std::min<Duration>(std::chrono::seconds(60), Millis(window_ / 1440));
  }
  step = std::max<Duration>(step, std::chrono::milliseconds(1));

  std::map<std::string, double> weights;
  for (const Tenant& t : trace_.tenants) weights[t.namespace_] = t.weight;
  collector_ = std::make_unique<internal::Collector>(
      clock_, internal::CollectorOptions{.window = window_,
                                         .sample_step = step,
                                         .placements = options_.placements,
                                         .tenant_weights = std::move(weights)});
  collector_->Attach(informers_);
  for (const auto& [uid, duration] : collector_pending_) {
    collector_->Submitted(uid, Duration::zero(), duration);
    run_for_[uid] = duration;
  }
  // The kubelet's part: a trace Pod runs for its duration once bound.
  auto bound = [this](const std::shared_ptr<const Pod>& p) {
    if (p->spec.node_name.empty()) return;
    auto it = run_for_.find(p->metadata.uid);
    if (it == run_for_.end()) return;
    Push({.at = Now() + it->second,
          .sequence = 0,
          .kind = EventKind::kComplete,
          .uid = p->metadata.uid,
          .namespace_ = p->metadata.namespace_,
          .name = p->metadata.name});
    run_for_.erase(it);
  };
  informers_.Get<Pod>().AddHandlers(
      {.on_add = bound, .on_update = [bound](const auto&, const auto& p) { bound(p); }});
  claims_ = std::make_unique<controllers::ResourceClaimController>(
      api_, informers_, clock_, controllers::ResourceClaimControllerOptions{.workers = 0});
  scheduler::SchedulerOptions sched;
  sched.features = options_.features;
  sched.synchronous = true;
  sched.random_seed = DeriveSeed(seed_, 2) | 1;  // nonzero: 0 would draw from the secure source
  sched.informers = &informers_;
  sched.identity = "draplane-sim";
  // Decision records are the server's audit trail: written after a binding, read by nothing
  // that decides, and kept by the server only as long as their claims (decisions.md,
  // "Retention"). The simulator's report is its own record; writing them here cost 3-4 % of a
  // run and, with nobody collecting them, 40 MB per virtual hour of the benchmark day.
  sched.decision_records = false;
  scheduler_ = std::make_unique<scheduler::Scheduler>(api_, clock_, std::move(sched));
  DRAPLANE_RETURN_IF_ERROR(scheduler_->Start());
  claims_->Start();
  // Generated claims outlive their Pod unless the garbage collector deletes them, as it does in
  // a cluster: the claim controller leaves a claim whose Pod is already gone to it (upstream
  // does the same), and the simulator's kubelet deletes a Pod as soon as it completes.
  garbage_collector_ = std::make_unique<controllers::GarbageCollector>(
      api_, informers_, clock_, controllers::GarbageCollectorOptions{.workers = 0});
  garbage_collector_->Start();
  for (size_t i = 0; i < arrivals_.size(); ++i) {
    Push({.at = arrivals_[i].at, .sequence = 0, .kind = EventKind::kArrive, .arrival = i});
  }
  return Status::Ok();
}

const Simulation::AdmittedManifest& Simulation::Admitted(const PodArrival& arrival) {
  auto [it, added] = admitted_.try_emplace(arrival.manifest.get());
  if (!added) return it->second;
  json::object pod = *arrival.manifest;
  it->second.refused = api::AdmitPodPriority(pod, priority_classes_);
  if (it->second.refused) return it->second;
  StatusOr<Pod> typed = client::DecodeAs<Pod>(json::value(std::move(pod)));
  if (typed.ok()) {
    it->second.pod = std::move(*typed);
  } else {
    it->second.decode_error = std::string(typed.status().message());
  }
  return it->second;
}

void Simulation::Arrive(const PodArrival& arrival) {
  const AdmittedManifest& admitted = Admitted(arrival);
  if (const std::optional<std::string>& refused = admitted.refused) {
    collector_->Rejected(
        arrival.namespace_ + "/" + arrival.name, arrival.at,
        "pods \"" +
            (arrival.name.empty() ? MetaField(*arrival.manifest, "generateName") : arrival.name) +
            "\" is forbidden: " + *refused);
    return;
  }
  // Created typed (the trace checked that its manifests decode), so that the API keeps the Pod
  // typed through every write the components make and the informers take it as it is stored.
  StatusOr<Pod> typed = admitted.pod ? arrival.Named(*admitted.pod)
                                     : StatusOr<Pod>(InvalidArgumentError(admitted.decode_error));
  if (!typed.ok()) {
    collector_->Rejected(arrival.namespace_ + "/" + arrival.name, arrival.at,
                         std::string(typed.status().message()));
    return;
  }
  client::ApiRequest request = client::TypedRequest(client::Verb::kCreate, *typed, "", "");
  StatusOr<std::shared_ptr<const Pod>> created =
      client::WriteAndShare(api_, std::move(request), std::move(*typed));
  if (!created.ok()) {
    // The API's message, as the Priority admission's above ("pods \"x\" is forbidden: ...").
    collector_->Rejected(arrival.namespace_ + "/" + arrival.name, arrival.at,
                         std::string(created.status().message()));
    return;
  }
  const std::string& uid = (*created)->metadata.uid;
  collector_->Submitted(uid, arrival.at, arrival.duration);
  run_for_[uid] = arrival.duration;
  if (arrival.delete_after) {
    Push({.at = arrival.at + *arrival.delete_after,
          .sequence = 0,
          .kind = EventKind::kGiveUp,
          .uid = uid,
          .namespace_ = arrival.namespace_,
          .name = (*created)->metadata.name});
  }
}

void Simulation::Complete(const Event& event) {
  // The kubelet reports the containers finished, then the Pod is removed (a Job's pod garbage
  // collector, or its owner).
  if (!ReportSucceeded(event).ok()) return;  // deleted or replaced meanwhile
  client::DeleteOptions options{.grace_period_seconds = 0, .precondition_uid = event.uid};
  client::Delete<Pod>(api_, event.namespace_, event.name, options).IgnoreError();
}

Status Simulation::ReportSucceeded(const Event& event) {
  constexpr std::string_view kKubelet = "draplane-sim-kubelet";
  // The informer's copy is current here (Settle delivered every write, and nothing else writes
  // this Pod within the instant): its status updated typed, where a merge patch would encode,
  // patch and decode the whole status. A copy that is stale after all (Conflict) or missing
  // leaves it to the patch, which the Pod's uid guards as the copy's does.
  std::shared_ptr<const Pod> cached = informers_.Get<Pod>().Get(event.namespace_, event.name);
  if (cached != nullptr && cached->metadata.uid == event.uid) {
    Pod pod = *cached;
    pod.status.phase = "Succeeded";
    Status updated = client::UpdateStatusOnly(api_, std::move(pod), kKubelet);
    if (updated.code() != StatusCode::kConflict) return updated;
  }
  json::object patch{{"metadata", json::object{{"uid", event.uid}}},
                     {"status", json::object{{"phase", "Succeeded"}}}};
  return client::PatchOnly<Pod>(api_, event.namespace_, event.name, client::PatchType::kMerge,
                                std::move(patch), "status", kKubelet);
}

void Simulation::GiveUp(const Event& event) {
  collector_->GaveUp(event.uid);
  run_for_.erase(event.uid);
  client::DeleteOptions options{.grace_period_seconds = 0, .precondition_uid = event.uid};
  client::Delete<Pod>(api_, event.namespace_, event.name, options).IgnoreError();
}

Status Simulation::Settle() {
  uint64_t before = api_.resource_version();
  while (true) {
    DRAPLANE_ASSIGN_OR_RETURN(size_t delivered, informers_.DeliverPending());
    int synced = claims_->ProcessReady() + garbage_collector_->ProcessReady();
    if (synced > 0) continue;  // let the controllers see their own writes first
    int attempts = scheduler_->RunUntilIdle();
    decisions_ += attempts;
    if (delivered == 0 && attempts == 0) break;
  }
  last_settle_wrote_ = api_.resource_version() != before;
  int64_t bound = scheduler_->stats().scheduled;
  if (bound != bound_) {
    bound_ = bound;
    last_binding_ = Now();
  }
  return Status::Ok();
}

std::optional<Duration> Simulation::NextInstant() const {
  // Once the trace is over, timed work that binds nothing for an hour (Pods failing with errors
  // again and again) does not keep the run going.
  if (events_.empty() && Now() - last_binding_ > kQuietLimit) return std::nullopt;
  std::optional<Duration> next;
  auto consider = [&](std::optional<Duration> t) {
    if (t && (!next || *t < *next)) next = *t;
  };
  if (!events_.empty()) consider(events_.top().at);
  scheduler::Scheduler::Stats stats = scheduler_->stats();
  // With trace events left, the unschedulable pool's periodic flush is timed work too; without,
  // only backoffs are (a flush would retry Pods against a cluster that no longer changes).
  if (!events_.empty() || stats.backoff > 0 || stats.active > 0) {
    consider(scheduler_->NextWakeup());
  }
  // Controller retries, unless the last settle changed nothing (a retry that keeps failing
  // against a cluster that no longer changes would keep the run going for ever).
  if (!events_.empty() || last_settle_wrote_) {
    consider(claims_->NextRetry());
    consider(garbage_collector_->NextRetry());
  }
  return next;
}

Status Simulation::Run(Report* report) {
  DRAPLANE_RETURN_IF_ERROR(Settle());
  std::optional<Duration> stop = options_.until ? options_.until : trace_.horizon;
  Duration now = Now();
  while (true) {
    std::optional<Duration> next = NextInstant();
    if (!next) break;
    Duration at = std::max(Millis(*next), now);
    if (stop && at > *stop) break;
    collector_->Advance(now, at);
    clock_.Advance(at - now);
    now = at;
    while (!events_.empty() && events_.top().at <= now) {
      Event event = events_.top();
      events_.pop();
      switch (event.kind) {
        case EventKind::kArrive:
          Arrive(arrivals_[event.arrival]);
          break;
        case EventKind::kComplete:
          Complete(event);
          break;
        case EventKind::kGiveUp:
          GiveUp(event);
          break;
      }
    }
    DRAPLANE_RETURN_IF_ERROR(Settle());
  }
  // Pods still waiting for claims that could not be made say why: the resourceclaim
  // controller's Events, the latest of each Pod last (listed only when a Pod waits: a list of the
  // hour's Events costs what a few hundred writes do).
  if (collector_->pending() > 0) {
    StatusOr<client::ObjectList<api::corev1::Event>> failures = client::List<api::corev1::Event>(
        api_, "", {.field_selector = "reason=FailedResourceClaimCreation"});
    if (!failures.ok()) return failures.status();
    std::stable_sort(failures->items.begin(), failures->items.end(),
                     [](const api::corev1::Event& a, const api::corev1::Event& b) {
                       return a.last_timestamp < b.last_timestamp;
                     });
    for (api::corev1::Event& e : failures->items) {
      // The recorder aggregates a Pod's retries (client-go's EventAggregator): the reason is the
      // message itself.
      if (e.message.starts_with(client::kCombinedEventPrefix)) {
        e.message.erase(0, client::kCombinedEventPrefix.size());
      }
      collector_->ClaimNotCreated(e.involved_object.uid, std::move(e.message));
    }
  }
  Duration end = stop ? std::max(*stop, now) : now;
  collector_->Advance(now, std::max(end, window_));
  collector_->Finish(end, report);
  scheduler::Scheduler::Stats stats = scheduler_->stats();
  report->virtual_seconds = std::chrono::duration<double>(end).count();
  report->window_seconds = std::chrono::duration<double>(window_).count();
  report->decisions = decisions_;
  report->attempts_scheduled = stats.scheduled;
  report->attempts_unschedulable = stats.unschedulable;
  report->attempts_error = stats.errors;
  report->starving_overtakes = stats.overtakes;
  report->held_device_seconds = stats.held_device_seconds;
  report->api_writes = static_cast<int64_t>(api_.resource_version());
  return Status::Ok();
}

}  // namespace

StatusOr<Report> RunSimulation(const Cluster& cluster, const Trace& trace,
                               const RunOptions& options) {
  Duration started = RealClock().MonotonicNow();  // measures this machine, decides nothing
  uint64_t seed = options.seed.value_or(trace.seed.value_or(1));
  Report report;
  report.trace = trace.name;
  report.seed = seed;
  Simulation simulation(trace, options, seed);
  DRAPLANE_RETURN_IF_ERROR(simulation.Load(cluster, &report));
  DRAPLANE_RETURN_IF_ERROR(simulation.Run(&report));
  report.wall_seconds = std::chrono::duration<double>(RealClock().MonotonicNow() - started).count();
  return report;
}

}  // namespace draplane::sim
