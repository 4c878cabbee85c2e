#include "allocator/allocator.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "allocator/internal/builder.h"
#include "allocator/internal/explain.h"
#include "allocator/internal/pools.h"
#include "allocator/internal/problem.h"
#include "allocator/internal/search.h"
#include "allocator/internal/snapshot_state.h"
#include "common/status_macros.h"

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;
using internal::CapacityPlan;
using internal::ClaimSpec;
using internal::DeviceRef;
using internal::GatheredPool;
using internal::kBudgetCause;
using internal::KeySpec;
using internal::kNone;
using internal::NodeEntry;
using internal::PrepareKey;
using internal::Problem;
using internal::ProblemBuilder;
using internal::RequestSpec;
using internal::SnapshotState;

// Presence bits of DeviceRequestAllocationResult.bindingConditions / bindingFailureConditions.
constexpr uint64_t kResultBindingConditionsPresent = uint64_t{1} << 5;
constexpr uint64_t kResultBindingFailureConditionsPresent = uint64_t{1} << 6;

// upstream klog.KObj: "namespace/name", or "name" without namespace.
std::string ObjectRef(const rv1::ResourceClaim& claim) {
  if (claim.metadata.namespace_.empty()) return claim.metadata.name;
  return claim.metadata.namespace_ + "/" + claim.metadata.name;
}

// --- results ------------------------------------------------------------------------------

bool ContainsRequirement(const std::vector<api::corev1::NodeSelectorRequirement>& list,
                         const api::corev1::NodeSelectorRequirement& r) {
  std::set<std::string> values(r.values.begin(), r.values.end());
  for (const auto& e : list) {
    if (e.key != r.key || e.operator_ != r.operator_) continue;
    if (std::set<std::string>(e.values.begin(), e.values.end()) != values) continue;
    return true;
  }
  return false;
}

// upstream createNodeSelector.
StatusOr<std::optional<api::corev1::NodeSelector>> NodeSelectorFor(
    const std::vector<internal::DeviceChoice>& choices, const std::vector<DeviceRef>& refs,
    const std::string& node_name) {
  api::corev1::NodeSelectorTerm term;
  for (const internal::DeviceChoice& choice : choices) {
    const DeviceRef& ref = refs[choice.device];
    const rv1::Device& device = ref.device();
    const rv1::ResourceSliceSpec& spec = ref.slice->spec();
    const std::optional<std::string>* name;
    const std::optional<api::corev1::NodeSelector>* selector;
    if (spec.per_device_node_selection.value_or(false)) {
      name = &device.node_name;
      selector = &device.node_selector;
    } else {
      name = &spec.node_name;
      selector = &spec.node_selector;
    }
    if (name->has_value() || device.binds_to_node.value_or(false)) {
      // Local to one node, or bound to the node: restrict the allocation to this node.
      api::corev1::NodeSelector local;
      api::corev1::NodeSelectorTerm t;
      api::corev1::NodeSelectorRequirement r;
      r.key = "metadata.name";
      r.operator_ = "In";
      r.values = {node_name};
      t.match_fields.push_back(std::move(r));
      local.node_selector_terms.push_back(std::move(t));
      return std::optional<api::corev1::NodeSelector>(std::move(local));
    }
    if (!selector->has_value()) continue;
    const auto& terms = (*selector)->node_selector_terms;
    if (terms.empty()) continue;
    if (terms.size() > 1) {
      return FailedPreconditionError(
          fmt::format("unsupported ResourceSlice.NodeSelector with {} terms", terms.size()));
    }
    for (const auto& r : terms[0].match_fields) {
      if (!ContainsRequirement(term.match_fields, r)) term.match_fields.push_back(r);
    }
    for (const auto& r : terms[0].match_expressions) {
      if (!ContainsRequirement(term.match_expressions, r)) term.match_expressions.push_back(r);
    }
  }
  if (term.match_fields.empty() && term.match_expressions.empty()) {
    return std::optional<api::corev1::NodeSelector>();
  }
  api::corev1::NodeSelector out;
  out.node_selector_terms.push_back(std::move(term));
  return std::optional<api::corev1::NodeSelector>(std::move(out));
}

// The selected key of request `r` of a claim (the chosen subrequest's key).
const KeySpec& SelectedKey(const RequestSpec& req, int selected) {
  return req.keys[req.has_sub ? static_cast<size_t>(std::max(selected, 0)) : 0];
}

// upstream's config assembly: class configs (each class once), then claim configs, then
// `requests: nil` for configs that cover every request.
std::vector<rv1::DeviceAllocationConfiguration> Configs(const ClaimSpec& claim,
                                                        const std::vector<int>& selected) {
  std::vector<rv1::DeviceAllocationConfiguration> out;
  std::map<std::string, std::pair<size_t, size_t>> class_ranges;
  for (size_t r = 0; r < claim.requests.size(); ++r) {
    const KeySpec& key = SelectedKey(claim.requests[r], selected[r]);
    if (key.device_class == nullptr) continue;
    const std::string& name = key.device_class->metadata.name;
    auto it = class_ranges.find(name);
    if (it != class_ranges.end()) {
      for (size_t i = it->second.first; i < it->second.second; ++i) {
        out[i].requests.push_back(key.FullName());
      }
      continue;
    }
    size_t start = out.size();
    for (const rv1::DeviceClassConfiguration& config : key.device_class->spec.config) {
      rv1::DeviceAllocationConfiguration c;
      c.source = std::string(rv1::kAllocationConfigSourceFromClass);
      c.requests = {key.FullName()};
      c.opaque = config.opaque;
      out.push_back(std::move(c));
    }
    class_ranges[name] = {start, out.size()};
  }
  auto contains = [](const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  for (const rv1::DeviceClaimConfiguration& config : claim.claim->spec.devices.config) {
    rv1::DeviceAllocationConfiguration c;
    c.source = std::string(rv1::kAllocationConfigSourceFromClaim);
    c.requests = config.requests;
    c.opaque = config.opaque;
    if (config.requests.empty()) {
      out.push_back(std::move(c));
      continue;
    }
    for (size_t r = 0; r < claim.requests.size(); ++r) {
      const RequestSpec& req = claim.requests[r];
      if (contains(config.requests, req.request->name)) {
        out.push_back(std::move(c));
        break;
      }
      if (!req.has_sub) continue;
      if (contains(config.requests, SelectedKey(req, selected[r]).FullName())) {
        out.push_back(std::move(c));
        break;
      }
    }
  }
  for (rv1::DeviceAllocationConfiguration& c : out) {
    if (c.requests.empty()) continue;
    bool all = true;
    for (size_t r = 0; r < claim.requests.size() && all; ++r) {
      const RequestSpec& req = claim.requests[r];
      if (contains(c.requests, req.request->name)) continue;
      if (req.has_sub && contains(c.requests, SelectedKey(req, selected[r]).FullName())) continue;
      all = false;
    }
    if (all) c.requests.clear();
  }
  return out;
}

// A cheap hash of what tells most claim sets apart (request names, classes, counts): equal
// specs hash equally, and SnapshotState::ClaimSetId compares the specs themselves.
uint64_t SpecsHash(const std::vector<const rv1::ResourceClaimSpec*>& specs) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  auto text = [&mix](std::string_view s) { mix(std::hash<std::string_view>{}(s)); };
  for (const rv1::ResourceClaimSpec* spec : specs) {
    const rv1::DeviceClaim& d = spec->devices;
    mix(d.requests.size());
    mix(d.constraints.size());
    mix(d.config.size());
    for (const rv1::DeviceRequest& r : d.requests) {
      text(r.name);
      if (r.exactly.has_value()) {
        text(r.exactly->device_class_name);
        mix(static_cast<uint64_t>(r.exactly->count));
        mix(r.exactly->selectors.size());
      }
      for (const rv1::DeviceSubRequest& sub : r.first_available) {
        text(sub.name);
        text(sub.device_class_name);
        mix(static_cast<uint64_t>(sub.count));
        mix(sub.selectors.size());
      }
    }
  }
  return h;
}

// The id of `claims`' specs, remembered by their uids and resourceVersions: a stored claim's spec
// never changes within a version (as slices' verdicts are kept per version), so the claims of a
// Pod retried again and again are compared once, not on every attempt. Claims without both
// (in-flight claims a caller builds) are compared every time.
uint64_t ClaimSetId(SnapshotState& state, const std::vector<ClaimSpec>& claims) {
  auto compared = [&] {
    std::vector<const rv1::ResourceClaimSpec*> specs;
    specs.reserve(claims.size());
    for (const ClaimSpec& c : claims) specs.push_back(&c.claim->spec);
    return state.ClaimSetId(specs, SpecsHash(specs));
  };
  std::string versions;
  for (const ClaimSpec& c : claims) {
    const auto& meta = c.claim->metadata;
    if (meta.uid.empty() || meta.resource_version.empty()) return compared();
    versions += meta.uid;
    versions.push_back('/');
    versions += meta.resource_version;
    versions.push_back('\n');
  }
  if (auto it = state.claim_version_ids.find(versions); it != state.claim_version_ids.end()) {
    return it->second;
  }
  // Versions of deleted claims are never asked for again: start over now and then.
  constexpr size_t kRememberedClaimSets = 65536;
  if (state.claim_version_ids.size() >= kRememberedClaimSets) state.claim_version_ids.clear();
  uint64_t id = compared();
  state.claim_version_ids.emplace(std::move(versions), id);
  return id;
}

class AllocatorImpl final : public Allocator {
 public:
  AllocatorImpl(Snapshot& snapshot, std::vector<const rv1::ResourceClaim*> claims,
                const Features& features)
      : state_(snapshot.state()), features_(features) {
    claims_.reserve(claims.size());
    for (const rv1::ResourceClaim* claim : claims) {
      ClaimSpec spec;
      spec.claim = claim;
      spec.ref = ObjectRef(*claim);
      for (const rv1::DeviceRequest& req : claim->spec.devices.requests) {
        RequestSpec rs;
        rs.request = &req;
        rs.has_sub = !req.first_available.empty();
        if (rs.has_sub) {
          for (const rv1::DeviceSubRequest& sub : req.first_available) {
            rs.keys.push_back(PrepareKey(state_, features_, sub.name, req.name,
                                         sub.device_class_name, sub.selectors, sub.allocation_mode,
                                         sub.count, sub.tolerations, sub.capacity,
                                         sub.derived_attributes));
          }
        } else if (req.exactly.has_value()) {
          const rv1::ExactDeviceRequest& e = *req.exactly;
          KeySpec k = PrepareKey(state_, features_, req.name, "", e.device_class_name, e.selectors,
                                 e.allocation_mode, e.count, e.tolerations, e.capacity,
                                 e.derived_attributes);
          k.admin = e.admin_access.value_or(false);
          k.has_admin = e.admin_access.has_value();
          rs.keys.push_back(std::move(k));
        } else {
          // Neither form: a request type this code does not know.
          rs.keys.push_back(PrepareKey(state_, features_, req.name, "", "", {}, "", 0,
                                       kNoTolerations, std::nullopt, {}));
        }
        spec.requests.push_back(std::move(rs));
      }
      claims_.push_back(std::move(spec));
    }
    claim_set_ = ClaimSetId(state_, claims_);
  }

  Status AllocateInto(const api::corev1::Node& node, const AllocatedState& allocated,
                      const Options& options, Outcome& out) override {
    out.Clear();
    NodeEntry& entry = internal::GatherPools(state_, node, features_);
    if (!entry.gather_error.ok()) {
      return Status(entry.gather_error.code(),
                    "gather pool information: " + std::string(entry.gather_error.message()));
    }
    // Unsatisfiable without policies is unsatisfiable with them (they only refuse more), so
    // with policies the cache is read; it is written only when no policy refused anything (the
    // search was then the policy-free one): a policy's verdict is not the node's.
    // An explanation is cached with the verdict, and read, only without policies (a policy's
    // refusals are part of the explanation, and not the node's).
    const bool use_cache = options.use_node_cache && (!options.explain || options.policies.empty());
    // A remembered allocation is the policy-free search's first solution: it answers only callers
    // that search without policies and want no explanation (an explanation needs the search).
    const bool use_allocated =
        options.use_node_cache && options.policies.empty() && !options.explain;
    NodeEntry::Unsatisfiable* unexplained = nullptr;
    if (use_cache && !options.explain && NeverFits(entry)) {
      out.kind = Outcome::Kind::kUnsatisfiable;
      out.stats.node_cache_hit = true;
      return Status::Ok();
    }
    if (use_cache) {
      if (entry.state_id != allocated.id() || entry.records.size() != entry.pools.size()) {
        entry.state_id = allocated.id();
        entry.records.clear();
        for (const GatheredPool& p : entry.pools) {
          entry.records.push_back(allocated.PoolFor(p.driver, p.pool));
        }
      }
      for (NodeEntry::Unsatisfiable& u : entry.unsatisfiable) {
        if (!Current(u.key, entry, allocated)) continue;
        if (options.explain && u.explanation == nullptr) {
          unexplained = &u;
          break;
        }
        out.kind = Outcome::Kind::kUnsatisfiable;
        out.stats.node_cache_hit = true;
        if (options.explain) out.explanation = Named(u.explanation, options);
        return Status::Ok();
      }
      if (use_allocated) {
        for (const NodeEntry::Allocated& a : entry.allocated) {
          if (!Current(a.key, entry, allocated)) continue;
          out.kind = Outcome::Kind::kAllocated;
          out.results = WithNewShareIds(a.results, options);
          out.stats.node_cache_hit = true;
          return Status::Ok();
        }
      }
    }

    ProblemBuilder builder(state_, entry, node, allocated, features_, claims_, options.explain,
                           !options.policies.empty());
    // The budget is charged while the builder evaluates selectors, and only then.
    state_.budget = options.evaluation_budget;
    Status built = builder.Build();
    state_.budget = nullptr;
    internal::ExplainInputs explain;
    std::optional<internal::ExplainRecorder> recorder;
    if (options.explain) {
      explain.problem = &builder.problem;
      explain.pools = &entry.pools;
      explain.node = node.metadata.name;
      explain.keys = builder.key_infos;
    }
    // A fatal error aborts the Pod's attempt; its message says what is wrong.
    if (!built.ok()) return built;
    bool invalid = false;
    for (const GatheredPool& p : entry.pools) invalid = invalid || p.invalid;
    // Most claim sets a node cannot take it never can (the wrong model of GPU): that needs no
    // search, whatever the node has allocated (so the answer does not depend on whether a
    // verdict was remembered), and outlives every allocation and release on the node.
    const bool never = !invalid && internal::UnsatisfiableWhateverIsAllocated(builder.problem);
    if (never && use_cache && !NeverFits(entry)) {
      Remember<kRememberedAlways>(entry.unsatisfiable_always, {claim_set_, packed_features_});
    }
    if (never && !options.explain) {
      out.kind = Outcome::Kind::kUnsatisfiable;
      return Status::Ok();
    }
    internal::AssignSymmetryClasses(builder.problem);
    internal::SearchOptions search_options;
    search_options.features = features_;
    search_options.policies = options.policies;
    search_options.prune = options.prune;
    search_options.max_steps = options.max_search_steps;
    if (options.explain) {
      recorder.emplace(builder.problem.keys.size(), builder.problem.devices.size());
      search_options.observer = &*recorder;
    }
    StatusOr<internal::SearchResult> searched = internal::Search(builder.problem, search_options);
    if (!searched.ok()) return searched.status();
    internal::SearchResult& result = *searched;

    out.stats.allocate_one_calls = result.stats.allocate_one_calls;
    out.stats.devices_tried = result.stats.devices_tried;
    out.stats.count_bound_prunes = result.stats.count_bound_prunes;
    out.stats.symmetry_skips = result.stats.symmetry_skips;
    out.stats.memo_hits = result.stats.memo_hits;
    out.stats.policy_rejections = result.stats.policy_rejections;
    if (result.solved) {
      DRAPLANE_ASSIGN_OR_RETURN(std::vector<rv1::AllocationResult> results,
                                Results(builder, result, node, options));
      out.results = std::make_shared<const std::vector<rv1::AllocationResult>>(std::move(results));
      out.kind = Outcome::Kind::kAllocated;
      if (use_allocated) Remember(entry.allocated, {Key(entry, allocated), out.results});
    } else {
      if (invalid) {
        // Not fatal: other nodes may still work.
        out.kind = Outcome::Kind::kNodeError;
        out.message = "invalid resource pools were encountered";
      } else {
        out.kind = Outcome::Kind::kUnsatisfiable;
        if (use_cache && unexplained == nullptr && result.stats.policy_rejections == 0) {
          Remember(entry.unsatisfiable, {Key(entry, allocated), nullptr});
        }
      }
    }
    if (options.explain) {
      explain.recorder = &*recorder;
      explain.result = &result;
      explain.outcome = out.kind == Outcome::Kind::kAllocated       ? "allocated"
                        : out.kind == Outcome::Kind::kUnsatisfiable ? "unsatisfiable"
                                                                    : "node-error";
      explain.error = out.message;
      out.explanation = std::make_shared<const Explanation>(internal::BuildExplanation(explain));
      if (use_cache && out.kind == Outcome::Kind::kUnsatisfiable) {
        NodeEntry::Unsatisfiable* verdict =
            unexplained != nullptr ? unexplained : &entry.unsatisfiable.back();
        verdict->explanation = out.explanation;
      }
    }
    return Status::Ok();
  }

 private:
  // The key of a verdict searched now on `entry`'s node (its records are current).
  NodeEntry::VerdictKey Key(const NodeEntry& entry, const AllocatedState& allocated) const {
    NodeEntry::VerdictKey key{claim_set_, packed_features_, allocated.id(), {}};
    key.versions.reserve(entry.records.size());
    for (const AllocatedState::PoolRecord* r : entry.records) key.versions.push_back(r->version);
    return key;
  }

  // Whether these claims are remembered as never fitting on `entry`'s node.
  bool NeverFits(const NodeEntry& entry) const {
    for (const NodeEntry::UnsatisfiableAlways& u : entry.unsatisfiable_always) {
      if (u.claims == claim_set_ && u.features == packed_features_) return true;
    }
    return false;
  }

  // Whether a verdict remembered under `key` answers this call now.
  bool Current(const NodeEntry::VerdictKey& key, const NodeEntry& entry,
               const AllocatedState& allocated) const {
    if (key.claims != claim_set_ || key.state_id != allocated.id() ||
        key.features != packed_features_ || key.versions.size() != entry.records.size()) {
      return false;
    }
    for (size_t i = 0; i < entry.records.size(); ++i) {
      if (key.versions[i] != entry.records[i]->version) return false;
    }
    return true;
  }

  // Appends a verdict, forgetting the oldest beyond a few per node: a node is asked about the
  // claim shapes of the Pods pending at one time, rarely more than a handful.
  // Verdicts that no allocation changes are kept for more claim shapes (a node keeps them
  // until its slices change, across many rounds of pending Pods).
  static constexpr size_t kRememberedAlways = 16;
  template <size_t kRemembered = 4, typename Verdict>
  static void Remember(std::vector<Verdict>& verdicts, Verdict verdict) {
    if (verdicts.size() >= kRemembered) verdicts.erase(verdicts.begin());
    verdicts.push_back(std::move(verdict));
  }

  // A remembered allocation for this call: as it is when no device in it is shared, else a copy
  // with share IDs drawn as Results draws them (one per shared device, in result order), so a
  // seeded caller draws the same sequence whether or not the node was remembered.
  static std::shared_ptr<const std::vector<rv1::AllocationResult>> WithNewShareIds(
      const std::shared_ptr<const std::vector<rv1::AllocationResult>>& remembered,
      const Options& options) {
    bool shared = false;
    for (const rv1::AllocationResult& ar : *remembered) {
      for (const rv1::DeviceRequestAllocationResult& r : ar.devices.results) {
        shared = shared || r.share_id.has_value();
      }
    }
    if (!shared) return remembered;
    auto copy = std::make_shared<std::vector<rv1::AllocationResult>>(*remembered);
    Random& random = options.random != nullptr ? *options.random : SecureRandom();
    for (rv1::AllocationResult& ar : *copy) {
      for (rv1::DeviceRequestAllocationResult& r : ar.devices.results) {
        if (r.share_id.has_value()) r.share_id = random.NewUuid();
      }
    }
    return copy;
  }

  // A remembered explanation for this call: as it is when it names these claims or the caller
  // does not need the names, else a copy renamed to them.
  std::shared_ptr<const Explanation> Named(const std::shared_ptr<const Explanation>& remembered,
                                           const Options& options) const {
    bool same = true;
    for (size_t c = 0; c < remembered->claims.size() && c < claims_.size() && same; ++c) {
      same = remembered->claims[c].claim == claims_[c].ref;
    }
    if (same || !options.explain_claim_names) return remembered;
    auto renamed = std::make_shared<Explanation>(*remembered);
    std::vector<std::string> names;
    names.reserve(claims_.size());
    for (const ClaimSpec& c : claims_) names.push_back(c.ref);
    internal::RenameClaims(*renamed, names);
    return renamed;
  }

  StatusOr<std::vector<rv1::AllocationResult>> Results(const ProblemBuilder& b,
                                                       const internal::SearchResult& result,
                                                       const api::corev1::Node& node,
                                                       const Options& options) const {
    Random& random = options.random != nullptr ? *options.random : SecureRandom();
    std::vector<rv1::AllocationResult> out(claims_.size());
    for (size_t c = 0; c < claims_.size(); ++c) {
      rv1::AllocationResult& ar = out[c];
      for (const internal::DeviceChoice& choice : result.choices[c]) {
        const internal::RequestKey& key = b.problem.keys[choice.key];
        const KeySpec& spec = *b.key_specs[choice.key];
        const DeviceRef& ref = b.refs[choice.device];
        const rv1::Device& device = ref.device();
        const internal::Device& dev = b.problem.devices[choice.device];
        rv1::DeviceRequestAllocationResult r;
        r.request = key.FullName();
        r.driver = b.problem.pools[dev.pool].driver;
        r.pool = b.problem.pools[dev.pool].name;
        r.device = dev.name;
        if (spec.admin) r.admin_access = true;
        r.tolerations = *spec.tolerations;
        if (features_.device_binding_and_status) {
          r.binding_conditions = device.binding_conditions;
          r.binding_failure_conditions = device.binding_failure_conditions;
          if ((device.present & internal::kDeviceBindingConditionsPresent) != 0) {
            r.present |= kResultBindingConditionsPresent;
          }
          if ((device.present & internal::kDeviceBindingFailureConditionsPresent) != 0) {
            r.present |= kResultBindingFailureConditionsPresent;
          }
        }
        if (choice.shared) {
          r.share_id = random.NewUuid();
          const CapacityPlan& plan = b.problem.plans[choice.plan];
          for (size_t i = 0; i < dev.capacities.size(); ++i) {
            r.consumed_capacity.emplace(dev.capacities[i].name, plan.consumed[i]);
          }
        }
        ar.devices.results.push_back(std::move(r));
      }
      ar.devices.config = Configs(claims_[c], result.selected_subrequest[c]);
      StatusOr<std::optional<api::corev1::NodeSelector>> selector =
          NodeSelectorFor(result.choices[c], b.refs, node.metadata.name);
      if (!selector.ok()) {
        return FailedPreconditionError(fmt::format("create NodeSelector for claim {}: {}",
                                                   claims_[c].claim->metadata.name,
                                                   selector.status().message()));
      }
      ar.node_selector = *std::move(selector);
    }
    return out;
  }

  static inline const std::vector<rv1::DeviceToleration> kNoTolerations = {};

  SnapshotState& state_;
  Features features_;
  uint64_t packed_features_ = PackedFeatures(features_);
  std::vector<ClaimSpec> claims_;
  uint64_t claim_set_ = 0;
};

}  // namespace

StatusOr<Outcome> Allocator::Allocate(const api::corev1::Node& node,
                                      const AllocatedState& allocated, const Options& options) {
  Outcome out;
  DRAPLANE_RETURN_IF_ERROR(AllocateInto(node, allocated, options, out));
  return out;
}

std::unique_ptr<Allocator> NewAllocator(Snapshot& snapshot,
                                        std::vector<const rv1::ResourceClaim*> claims,
                                        const Features& features) {
  return std::make_unique<AllocatorImpl>(snapshot, std::move(claims), features);
}

// Nothing else on the allocation path reports ResourceExhausted.
bool IsEvaluationBudgetExceeded(const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return false;
  for (const StatusCause& cause : status.causes()) {
    if (cause.type == kBudgetCause) return true;
  }
  return false;
}

bool IsStepLimitExceeded(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted && !IsEvaluationBudgetExceeded(status);
}

StatusOr<Outcome> Allocate(Snapshot& snapshot, const api::corev1::Node& node,
                           const std::vector<const rv1::ResourceClaim*>& claims,
                           const AllocatedState& allocated, const Features& features,
                           const Options& options) {
  return NewAllocator(snapshot, claims, features)->Allocate(node, allocated, options);
}

}  // namespace draplane::allocator
