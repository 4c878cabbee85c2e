#include "allocator/scenario/scenario.h"

#include <fmt/core.h>

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <functional>
#include <set>
#include <system_error>
#include <utility>

#include "allocator/allocator.h"
#include "allocator/holdings.h"
#include "api/codec/yaml.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/object.h"
#include "api/quota/usage.h"
#include "api/validation/validation.h"
#include "common/status_macros.h"

namespace draplane::allocator::scenario {
namespace {

namespace rv1 = api::resourcev1;
namespace json = boost::json;

// Presence bits of DeviceRequestAllocationResult.bindingConditions / bindingFailureConditions.
constexpr uint64_t kBindingConditionsPresent = uint64_t{1} << 5;
constexpr uint64_t kBindingFailureConditionsPresent = uint64_t{1} << 6;

Status Malformed(const std::string& file, const std::string& what) {
  return InvalidArgumentError(file + ": " + what);
}

const json::value* Field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

StatusOr<std::string> StringField(const json::object& o, std::string_view key,
                                  const std::string& file) {
  const json::value* v = Field(o, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Malformed(file, std::string(key) + " must be a string");
  return std::string(v->get_string());
}

StatusOr<const json::array*> ArrayField(const json::object& o, std::string_view key,
                                        const std::string& file) {
  static const json::array kEmpty;
  const json::value* v = Field(o, key);
  if (v == nullptr) return &kEmpty;
  if (!v->is_array()) return Malformed(file, std::string(key) + " must be a list");
  return &v->get_array();
}

template <typename T>
Status DecodeInto(const json::value& v, T* out, const std::string& file, const std::string& what) {
  api::FieldErrorList errors;
  rv1::Decode(v, out, &errors);
  if (!errors.empty()) return Malformed(file, what + ": " + errors.front().ToString());
  return Status::Ok();
}

// --- comparison -----------------------------------------------------------------------------

bool ListSet(const std::vector<std::string>& list, uint64_t present, uint64_t bit) {
  return !list.empty() || (present & bit) != 0;
}

bool DeviceEqual(const rv1::DeviceRequestAllocationResult& e,
                 const rv1::DeviceRequestAllocationResult& a) {
  if (e.request != a.request || e.driver != a.driver || e.pool != a.pool || e.device != a.device ||
      e.admin_access != a.admin_access || e.tolerations != a.tolerations) {
    return false;
  }
  if (e.binding_conditions != a.binding_conditions ||
      ListSet(e.binding_conditions, e.present, kBindingConditionsPresent) !=
          ListSet(a.binding_conditions, a.present, kBindingConditionsPresent)) {
    return false;
  }
  if (e.binding_failure_conditions != a.binding_failure_conditions ||
      ListSet(e.binding_failure_conditions, e.present, kBindingFailureConditionsPresent) !=
          ListSet(a.binding_failure_conditions, a.present, kBindingFailureConditionsPresent)) {
    return false;
  }
  if (e.share_id.has_value() && *e.share_id == "any") {
    if (!a.share_id.has_value() || a.share_id->empty()) return false;
  } else if (e.share_id != a.share_id) {
    return false;
  }
  if (e.consumed_capacity.size() != a.consumed_capacity.size()) return false;
  for (const auto& [name, q] : e.consumed_capacity) {
    auto it = a.consumed_capacity.find(name);
    if (it == a.consumed_capacity.end() || it->second.Compare(q) != 0) return false;
  }
  return true;
}

// Whether `expected` and `actual` can be paired one to one with `equal` (order ignored).
template <typename T, typename Eq>
bool SameMultiset(const std::vector<T>& expected, const std::vector<T>& actual, Eq equal) {
  if (expected.size() != actual.size()) return false;
  std::vector<bool> used(actual.size(), false);
  // Backtracking keeps the match exact when an element could pair with several.
  std::function<bool(size_t)> match = [&](size_t i) {
    if (i == expected.size()) return true;
    for (size_t j = 0; j < actual.size(); ++j) {
      if (used[j] || !equal(expected[i], actual[j])) continue;
      used[j] = true;
      if (match(i + 1)) return true;
      used[j] = false;
    }
    return false;
  };
  return match(0);
}

template <typename T, typename Eq>
bool SameSequence(const std::vector<T>& expected, const std::vector<T>& actual, Eq equal) {
  if (expected.size() != actual.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!equal(expected[i], actual[i])) return false;
  }
  return true;
}

bool RequirementEqual(const api::corev1::NodeSelectorRequirement& e,
                      const api::corev1::NodeSelectorRequirement& a, bool exact) {
  if (e.key != a.key || e.operator_ != a.operator_) return false;
  if (exact) return e.values == a.values;
  return SameMultiset(e.values, a.values, std::equal_to<std::string>());
}

bool TermEqual(const api::corev1::NodeSelectorTerm& e, const api::corev1::NodeSelectorTerm& a,
               bool exact) {
  auto eq = [&](const auto& x, const auto& y) { return RequirementEqual(x, y, exact); };
  if (exact) {
    return SameSequence(e.match_expressions, a.match_expressions, eq) &&
           SameSequence(e.match_fields, a.match_fields, eq);
  }
  return SameMultiset(e.match_expressions, a.match_expressions, eq) &&
         SameMultiset(e.match_fields, a.match_fields, eq);
}

bool NodeSelectorEqual(const std::optional<api::corev1::NodeSelector>& e,
                       const std::optional<api::corev1::NodeSelector>& a, bool exact) {
  if (e.has_value() != a.has_value()) return false;
  if (!e.has_value()) return true;
  auto eq = [&](const auto& x, const auto& y) { return TermEqual(x, y, exact); };
  if (exact) return SameSequence(e->node_selector_terms, a->node_selector_terms, eq);
  return SameMultiset(e->node_selector_terms, a->node_selector_terms, eq);
}

bool ResultEqual(const rv1::AllocationResult& e, const rv1::AllocationResult& a, bool exact) {
  if (a.allocation_timestamp.has_value()) return false;
  if (exact) {
    if (!SameSequence(e.devices.results, a.devices.results, DeviceEqual)) return false;
    if (!(e.devices.config == a.devices.config)) return false;
  } else {
    if (!SameMultiset(e.devices.results, a.devices.results, DeviceEqual)) return false;
    // Upstream's matcher requires a nil config in these cases.
    if (!e.devices.config.empty() || !a.devices.config.empty()) return false;
  }
  return NodeSelectorEqual(e.node_selector, a.node_selector, exact);
}

std::string Yaml(const std::vector<rv1::AllocationResult>& results) {
  json::array list;
  for (const rv1::AllocationResult& r : results) list.push_back(rv1::Encode(r));
  return api::codec::WriteYaml(json::value(std::move(list)));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A line diff (longest common subsequence): "  " same, "- " expected only, "+ " actual only.
std::string Diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = Lines(expected);
  std::vector<std::string> b = Lines(actual);
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out = "    --- expected\n    +++ actual\n";
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out += "      " + a[i] + "\n";
      ++i;
      ++j;
    } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] > lcs[i + 1][j])) {
      out += "    + " + b[j] + "\n";
      ++j;
    } else {
      out += "    - " + a[i] + "\n";
      ++i;
    }
  }
  return out;
}

// An optional mapping of resource names to quantities (`expect.charges`).
StatusOr<std::optional<ResourceList>> ResourceListField(const json::object& o, std::string_view key,
                                                        const std::string& file) {
  const json::value* v = Field(o, key);
  if (v == nullptr) return std::optional<ResourceList>();
  if (!v->is_object()) return Malformed(file, fmt::format("expect.{} must be a mapping", key));
  ResourceList list;
  for (const auto& kv : v->get_object()) {
    std::string text =
        kv.value().is_string() ? std::string(kv.value().get_string()) : json::serialize(kv.value());
    StatusOr<api::Quantity> q = api::Quantity::Parse(text);
    if (!q.ok()) {
      return Malformed(file, fmt::format("expect.{}.{}: {}", key, std::string_view(kv.key()),
                                         q.status().message()));
    }
    list.emplace(std::string(kv.key()), *q);
  }
  return std::optional<ResourceList>(std::move(list));
}

// Empty when `actual` has exactly the keys and quantities of `expected`, else a line diff.
std::string DiffResources(const ResourceList& expected, const ResourceList& actual) {
  bool same = actual.size() == expected.size();
  for (const auto& [key, q] : expected) {
    auto it = actual.find(key);
    same = same && it != actual.end() && it->second.Compare(q) == 0;
  }
  if (same) return "";
  auto render = [](const ResourceList& list) {
    std::string text;
    for (const auto& [key, q] : list) text += key + ": " + q.ToString() + "\n";
    return text;
  };
  return Diff(render(expected), render(actual));
}

std::string_view OutcomeName(Expectation::Outcome o) {
  switch (o) {
    case Expectation::Outcome::kSuccess:
      return "success";
    case Expectation::Outcome::kUnsatisfiable:
      return "unsatisfiable";
    case Expectation::Outcome::kError:
      return "error";
  }
  return "?";
}

}  // namespace

// A key of `o` (at `where`, "" for the document) that the format does not have.
Status CheckKeys(const json::object& o, std::initializer_list<std::string_view> known,
                 const std::string& file, const std::string& where) {
  for (const auto& member : o) {
    if (std::find(known.begin(), known.end(), member.key()) == known.end()) {
      return Malformed(file, "unknown field \"" + where + std::string(member.key()) + "\"");
    }
  }
  return Status::Ok();
}

// The first field `options` finds unknown in manifest `v` (`what`: "claims[0]"), as an error.
Status CheckManifestFields(const json::value& v, const ScenarioParseOptions& options,
                           const std::string& file, const std::string& what) {
  if (!options.unknown_fields || !v.is_object()) return Status::Ok();
  std::vector<std::string> unknown = options.unknown_fields(v.get_object());
  if (unknown.empty()) return Status::Ok();
  return Malformed(file, what + ": unknown field \"" + unknown.front() + "\"");
}

StatusOr<Scenario> ParseScenario(std::string_view yaml, const std::string& file,
                                 const ScenarioParseOptions& options) {
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(yaml);
  if (!docs.ok()) return Malformed(file, std::string(docs.status().message()));
  if (docs->empty() || !docs->front().value.is_object()) {
    return Malformed(file, "a scenario is one YAML mapping");
  }
  const json::object& root = docs->front().value.get_object();
  DRAPLANE_RETURN_IF_ERROR(
      CheckKeys(root,
                {"name", "source", "features", "implementations", "kubernetesVersion", "node",
                 "objects", "claims", "allocatedDevices", "allocatedSharedDevices",
                 "allocatedCapacity", "quotas", "compare", "expect", "notes"},
                file, ""));
  Scenario s;
  s.file = file;
  DRAPLANE_ASSIGN_OR_RETURN(s.name, StringField(root, "name", file));
  if (s.name.empty()) return Malformed(file, "name is required");

  DRAPLANE_ASSIGN_OR_RETURN(const json::array* features, ArrayField(root, "features", file));
  for (const json::value& f : *features) {
    if (!f.is_string()) return Malformed(file, "features must be names");
    Status st = SetFeature(std::string(f.get_string()), true, &s.features);
    if (!st.ok()) return Malformed(file, std::string(st.message()));
  }
  // draplane's extension of the format: the release whose reading of list attributes selectors
  // use (the gates stay those of `features`).
  DRAPLANE_ASSIGN_OR_RETURN(std::string version, StringField(root, "kubernetesVersion", file));
  if (!version.empty()) {
    StatusOr<cel::ListAttributeMode> mode = ListAttributeModeOf(version);
    if (!mode.ok())
      return Malformed(file, "kubernetesVersion: " + std::string(mode.status().message()));
    s.features.list_attributes = *mode;
  }

  if (const json::value* node = Field(root, "node")) {
    if (!node->is_object()) return Malformed(file, "node must be a mapping");
    DRAPLANE_RETURN_IF_ERROR(CheckKeys(node->get_object(), {"name", "labels"}, file, "node."));
    DRAPLANE_ASSIGN_OR_RETURN(s.node.metadata.name, StringField(node->get_object(), "name", file));
    if (const json::value* labels = Field(node->get_object(), "labels")) {
      if (!labels->is_object()) return Malformed(file, "node.labels must be a mapping");
      for (const auto& kv : labels->get_object()) {
        if (!kv.value().is_string()) return Malformed(file, "node labels must be strings");
        s.node.metadata.labels.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
      }
    }
  }

  DRAPLANE_ASSIGN_OR_RETURN(const json::array* objects, ArrayField(root, "objects", file));
  for (size_t i = 0; i < objects->size(); ++i) {
    DRAPLANE_RETURN_IF_ERROR(
        CheckManifestFields((*objects)[i], options, file, fmt::format("objects[{}]", i)));
    api::FieldErrorList errors;
    api::Object obj = api::DecodeObject((*objects)[i], &errors);
    if (!errors.empty()) {
      return Malformed(file, fmt::format("objects[{}]: {}", i, errors.front().ToString()));
    }
    if (auto* c = std::get_if<rv1::DeviceClass>(&obj)) {
      s.classes.push_back(std::move(*c));
    } else if (auto* sl = std::get_if<rv1::ResourceSlice>(&obj)) {
      s.slices.push_back(std::move(*sl));
    } else {
      return Malformed(file, fmt::format("objects[{}]: a {} is neither a DeviceClass nor a "
                                         "ResourceSlice",
                                         i, api::ObjectKind(obj)));
    }
  }
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* claims, ArrayField(root, "claims", file));
  for (size_t i = 0; i < claims->size(); ++i) {
    rv1::ResourceClaim claim;
    DRAPLANE_RETURN_IF_ERROR(
        CheckManifestFields((*claims)[i], options, file, fmt::format("claims[{}]", i)));
    DRAPLANE_RETURN_IF_ERROR(DecodeInto((*claims)[i], &claim, file, fmt::format("claims[{}]", i)));
    // Claims are written like manifests: the API server's defaulting (no allocationMode means
    // ExactCount, no count means 1) applies, as in `draplane allocate`.
    api::validation::SetDefaults(&claim);
    s.claims.push_back(std::move(claim));
  }

  auto device_id = [&](const json::value& v, const char* what, std::string* driver,
                       std::string* pool, std::string* device) -> Status {
    if (!v.is_object()) return Malformed(file, std::string(what) + " entries must be mappings");
    DRAPLANE_ASSIGN_OR_RETURN(*driver, StringField(v.get_object(), "driver", file));
    DRAPLANE_ASSIGN_OR_RETURN(*pool, StringField(v.get_object(), "pool", file));
    DRAPLANE_ASSIGN_OR_RETURN(*device, StringField(v.get_object(), "device", file));
    return Status::Ok();
  };
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* in_use, ArrayField(root, "allocatedDevices", file));
  for (const json::value& v : *in_use) {
    std::string driver, pool, device;
    DRAPLANE_RETURN_IF_ERROR(device_id(v, "allocatedDevices", &driver, &pool, &device));
    s.allocated.AddDevice(driver, pool, device);
  }
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* shared,
                            ArrayField(root, "allocatedSharedDevices", file));
  for (const json::value& v : *shared) {
    std::string driver, pool, device;
    DRAPLANE_RETURN_IF_ERROR(device_id(v, "allocatedSharedDevices", &driver, &pool, &device));
    DRAPLANE_ASSIGN_OR_RETURN(std::string share, StringField(v.get_object(), "shareID", file));
    s.allocated.AddShare(driver, pool, device, share);
  }
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* capacity,
                            ArrayField(root, "allocatedCapacity", file));
  for (const json::value& v : *capacity) {
    std::string driver, pool, device;
    DRAPLANE_RETURN_IF_ERROR(device_id(v, "allocatedCapacity", &driver, &pool, &device));
    AllocatedState::Capacity consumed;
    if (const json::value* c = Field(v.get_object(), "capacity")) {
      if (!c->is_object()) return Malformed(file, "allocatedCapacity.capacity must be a mapping");
      for (const auto& kv : c->get_object()) {
        std::string text = kv.value().is_string() ? std::string(kv.value().get_string())
                                                  : json::serialize(kv.value());
        StatusOr<api::Quantity> q = api::Quantity::Parse(text);
        if (!q.ok()) return Malformed(file, std::string(q.status().message()));
        consumed.emplace(std::string(kv.key()), *q);
      }
    }
    s.allocated.AddConsumedCapacity(driver, pool, device, consumed);
  }

  DRAPLANE_ASSIGN_OR_RETURN(const json::array* quotas, ArrayField(root, "quotas", file));
  for (size_t i = 0; i < quotas->size(); ++i) {
    DRAPLANE_RETURN_IF_ERROR(
        CheckManifestFields((*quotas)[i], options, file, fmt::format("quotas[{}]", i)));
    api::corev1::ResourceQuota quota;
    api::FieldErrorList errors;
    api::corev1::Decode((*quotas)[i], &quota, &errors);
    if (!errors.empty()) {
      return Malformed(file, fmt::format("quotas[{}]: {}", i, errors.front().ToString()));
    }
    if (std::optional<QuotaBudget> budget = BudgetOf(quota)) s.quotas.push_back(std::move(*budget));
  }

  DRAPLANE_ASSIGN_OR_RETURN(std::string compare, StringField(root, "compare", file));
  if (compare == "exact") {
    s.exact = true;
  } else if (!compare.empty() && compare != "unordered") {
    return Malformed(file, "compare must be exact or unordered");
  }

  const json::value* expect = Field(root, "expect");
  if (expect == nullptr || !expect->is_object()) return Malformed(file, "expect is required");
  DRAPLANE_RETURN_IF_ERROR(
      CheckKeys(expect->get_object(),
                {"outcome", "error", "results", "refusedBy", "charges", "admissionCharges"}, file,
                "expect."));
  DRAPLANE_ASSIGN_OR_RETURN(std::string outcome,
                            StringField(expect->get_object(), "outcome", file));
  if (outcome == "success") {
    s.expect.outcome = Expectation::Outcome::kSuccess;
  } else if (outcome == "unsatisfiable") {
    s.expect.outcome = Expectation::Outcome::kUnsatisfiable;
  } else if (outcome == "error") {
    s.expect.outcome = Expectation::Outcome::kError;
  } else {
    return Malformed(file, "expect.outcome must be success, unsatisfiable or error");
  }
  DRAPLANE_ASSIGN_OR_RETURN(s.expect.error, StringField(expect->get_object(), "error", file));
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* results,
                            ArrayField(expect->get_object(), "results", file));
  for (size_t i = 0; i < results->size(); ++i) {
    rv1::AllocationResult r;
    DRAPLANE_RETURN_IF_ERROR(
        DecodeInto((*results)[i], &r, file, fmt::format("expect.results[{}]", i)));
    s.expect.results.push_back(std::move(r));
  }
  DRAPLANE_ASSIGN_OR_RETURN(const json::array* refused,
                            ArrayField(expect->get_object(), "refusedBy", file));
  for (const json::value& v : *refused) {
    if (!v.is_string()) return Malformed(file, "expect.refusedBy entries must be strings");
    s.expect.refused_by.emplace_back(v.get_string());
  }
  DRAPLANE_ASSIGN_OR_RETURN(s.expect.charges,
                            ResourceListField(expect->get_object(), "charges", file));
  DRAPLANE_ASSIGN_OR_RETURN(s.expect.admission_charges,
                            ResourceListField(expect->get_object(), "admissionCharges", file));
  return s;
}

RunResult RunScenario(const Scenario& s) {
  RunResult out;
  out.name = s.name;
  out.file = s.file;
  if (s.expect.admission_charges.has_value()) {
    // Admission comes before any allocation: upstream's evaluator charges the claims' specs.
    api::quota::ResourceList actual;
    for (const rv1::ResourceClaim& c : s.claims) {
      actual = api::quota::Add(actual, api::quota::ResourceClaimUsage(c));
    }
    if (std::string diff = DiffResources(*s.expect.admission_charges, actual); !diff.empty()) {
      out.failure = "admission charges differ\n" + diff;
      return out;
    }
  }
  Snapshot snapshot;
  for (const rv1::DeviceClass& c : s.classes) snapshot.SetClass(c);
  for (const rv1::ResourceSlice& sl : s.slices) snapshot.AddSlice(sl);
  std::vector<const rv1::ResourceClaim*> claims;
  for (const rv1::ResourceClaim& c : s.claims) claims.push_back(&c);
  std::unique_ptr<Random> random = NewSeededRandom(1);
  Options options;
  options.random = random.get();
  // Allocation-mode quotas of the claims' namespace take part in the search.
  const std::string ns = s.claims.empty() ? "" : s.claims.front().metadata.namespace_;
  std::vector<QuotaBudget> budgets;
  for (const QuotaBudget& q : s.quotas) {
    if (q.namespace_ == ns) budgets.push_back(q);
  }
  Holdings held;
  QuotaConstraint quota(ns, budgets, held);
  if (!budgets.empty()) options.policies = {&quota};
  options.explain = !s.expect.refused_by.empty();
  StatusOr<Outcome> outcome = Allocate(snapshot, s.node, claims, s.allocated, s.features, options);

  std::string actual_kind;
  std::string actual_error;
  if (!outcome.ok()) {
    actual_kind = "error";
    actual_error = std::string(outcome.status().message());
  } else if (outcome->kind == Outcome::Kind::kNodeError) {
    actual_kind = "error";
    actual_error = outcome->message;
  } else if (outcome->kind == Outcome::Kind::kUnsatisfiable) {
    actual_kind = "unsatisfiable";
  } else {
    actual_kind = "success";
  }
  std::string expected_kind(OutcomeName(s.expect.outcome));
  if (actual_kind != expected_kind) {
    out.failure = fmt::format("outcome: expected {}{}, got {}{}", expected_kind,
                              s.expect.error.empty() ? "" : " (" + s.expect.error + ")",
                              actual_kind, actual_error.empty() ? "" : " (" + actual_error + ")");
    if (actual_kind == "success") out.failure += "\n" + Diff("", Yaml(*outcome->results));
    return out;
  }
  if (actual_kind == "error") {
    if (actual_error.find(s.expect.error) == std::string::npos) {
      out.failure = fmt::format("error: expected a message containing \"{}\", got \"{}\"",
                                s.expect.error, actual_error);
      return out;
    }
    out.passed = true;
    return out;
  }
  if (!s.expect.refused_by.empty()) {
    std::vector<std::string> refusals;
    std::function<void(const RequestExplanation&)> collect = [&](const RequestExplanation& r) {
      for (const CandidateExplanation& c : r.candidates) {
        if (c.status == CandidateStatus::kPolicy) refusals.push_back(c.detail);
      }
      for (const RequestExplanation& sub : r.subrequests) collect(sub);
    };
    if (outcome->explanation != nullptr) {
      for (const ClaimExplanation& c : outcome->explanation->claims) {
        for (const RequestExplanation& r : c.requests) collect(r);
      }
    }
    for (const std::string& expected : s.expect.refused_by) {
      if (std::find(refusals.begin(), refusals.end(), expected) != refusals.end()) continue;
      out.failure = "no policy refusal \"" + expected + "\"; refusals:";
      for (const std::string& r : refusals) out.failure += "\n    " + r;
      return out;
    }
  }
  if (actual_kind == "unsatisfiable") {
    out.passed = true;
    return out;
  }
  auto equal = [&](const rv1::AllocationResult& e, const rv1::AllocationResult& a) {
    return ResultEqual(e, a, s.exact);
  };
  if (!SameMultiset(s.expect.results, *outcome->results, equal)) {
    out.failure = fmt::format("results differ ({} comparison)\n{}", s.exact ? "exact" : "unordered",
                              Diff(Yaml(s.expect.results), Yaml(*outcome->results)));
    return out;
  }
  if (s.expect.charges.has_value()) {
    DeviceCatalog catalog;
    for (const rv1::ResourceSlice& sl : s.slices) catalog.SetSlice(sl);
    std::vector<ClaimCharge> charges;
    for (size_t i = 0; i < s.claims.size(); ++i) {
      charges.push_back(ChargeAllocation(s.claims[i], (*outcome->results)[i], catalog));
    }
    std::vector<const ClaimCharge*> pointers;
    for (const ClaimCharge& c : charges) pointers.push_back(&c);
    ResourceList actual = Holdings().Increment(ns, pointers, Holdings::Scope::kCommitted);
    if (std::string diff = DiffResources(*s.expect.charges, actual); !diff.empty()) {
      out.failure = "charges differ\n" + diff;
      return out;
    }
  }
  out.passed = true;
  return out;
}

StatusOr<std::vector<std::string>> FindScenarioFiles(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return NotFoundError(path + ": no such file or directory");
    if (!fs::is_directory(st)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string ext = it->path().extension().string();
      if (ext == ".yaml" || ext == ".yml") found.push_back(it->path().string());
    }
    if (ec) return InvalidArgumentError(path + ": " + ec.message());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

StatusOr<std::vector<SkipEntry>> ParseSkipList(std::string_view text) {
  std::vector<SkipEntry> out;
  int line_number = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_number;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("skip list line {}: \"{}\" has no reason", line_number, line));
    }
    std::string_view reason = line.substr(space);
    while (!reason.empty() && (reason.front() == ' ' || reason.front() == '\t')) {
      reason.remove_prefix(1);
    }
    out.push_back({std::string(line.substr(0, space)), std::string(reason)});
  }
  return out;
}

}  // namespace draplane::allocator::scenario
