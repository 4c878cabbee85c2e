// Allocation scenarios: data files that pin what the allocator must answer
// (`../shared/conformance/allocator/FORMAT.md`, plus an optional `kubernetesVersion: "1.37"` that
// selects the release's reading of list attributes in selectors; the gates stay `features`). One
// scenario = a node, DeviceClasses and ResourceSlices, the claims of one Pod, the devices already
// in use, the feature gates, and the expected outcome. Used by `draplane scenario run` (a platform
// team can pin "this claim gets an H100 on this snapshot" in its CI) and by the conformance suite
// under tests/allocator/.
//
// draplane adds a `quotas:` section and `expect.refusedBy` / `expect.charges` (Allocation-mode
// quota) / `expect.admissionCharges` (upstream's admission-time evaluator, the default mode),
// docs/design/holdings.md §6; files without them are FORMAT.md scenarios.
//
// Comparison follows FORMAT.md: `compare: unordered` (default) matches claim results, device
// results and node-selector terms / requirements / values ignoring order and requires an empty
// config; `compare: exact` compares results and config in order. `shareID: any` accepts any
// share ID. A failure comes with a readable diff of expected against actual.
//
// Thread-safety: pure functions over their inputs; RunScenario builds its own snapshot.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/allocated_state.h"
#include "allocator/charges.h"
#include "allocator/features.h"
#include "allocator/quota.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::allocator::scenario {

struct Expectation {
  enum class Outcome { kSuccess, kUnsatisfiable, kError };
  Outcome outcome = Outcome::kSuccess;
  std::string error;  // substring of the error message (kError)
  std::vector<api::resourcev1::AllocationResult> results;  // kSuccess, one per claim
  // draplane extension (docs/design/holdings.md §6): messages that must appear as policy
  // refusals in the explanation, the Allocation-mode charge of the results, and what upstream's
  // admission-time evaluator charges a default-mode quota for the claims' specs, all claims
  // together (each checked when given).
  std::vector<std::string> refused_by;
  std::optional<ResourceList> charges;
  std::optional<ResourceList> admission_charges;
};

struct Scenario {
  std::string file;
  std::string name;
  Features features;
  api::corev1::Node node;
  std::vector<api::resourcev1::DeviceClass> classes;
  std::vector<api::resourcev1::ResourceSlice> slices;
  std::vector<api::resourcev1::ResourceClaim> claims;
  AllocatedState allocated;
  // draplane extension: the `quotas:` section (ResourceQuota manifests). Those in Allocation mode
  // in the claims' namespace are enforced inside the search, from their status.used.
  std::vector<QuotaBudget> quotas;
  bool exact = false;
  Expectation expect;
};

struct ScenarioParseOptions {
  // The fields of a manifest (apiVersion and kind set) its kind does not have, as paths
  // ("spec.devices.requests[0].exactly.cuont"); each is an error, as kubectl's strict field
  // validation refuses it. The CLI passes the API server's schemas; unset, manifests are decoded
  // leniently (unknown fields dropped).
  std::function<std::vector<std::string>(const boost::json::object&)> unknown_fields;
};

// Parses one scenario document. Claims get the API server's defaults (api::validation::
// SetDefaults), as `draplane allocate` gives them. InvalidArgument (naming the file) for malformed
// input, a key the format does not have included (a misspelled `allocatedDevices` would
// otherwise make a scenario pass for the wrong reason).
StatusOr<Scenario> ParseScenario(std::string_view yaml, const std::string& file,
                                 const ScenarioParseOptions& options = {});

struct RunResult {
  std::string name;
  std::string file;
  bool passed = false;
  // Why it failed: a one-line reason followed by a diff of expected against actual.
  std::string failure;
};

// Runs the allocator on the scenario (fixed share-ID seed, CEL selectors) and compares.
RunResult RunScenario(const Scenario& scenario);

// The scenario files under `paths`: files as given, directories searched recursively for
// `*.yaml` / `*.yml` in lexical order. NotFound for a missing path.
StatusOr<std::vector<std::string>> FindScenarioFiles(const std::vector<std::string>& paths);

// A skip list: lines `<name> <reason>`; `#` starts a comment. InvalidArgument for a line
// without a reason.
struct SkipEntry {
  std::string name;
  std::string reason;
};
StatusOr<std::vector<SkipEntry>> ParseSkipList(std::string_view text);

}  // namespace draplane::allocator::scenario
