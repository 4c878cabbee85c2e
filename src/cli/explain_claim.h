// `draplane explain claim NS/NAME`: the stored decision record (draplane.dev/v1alpha1
// AllocationDecision, docs/design/decisions.md) of a claim's allocation, found among the records
// of the claim's namespace and printed as text, YAML or JSON (internal to the cli module; the
// subcommand is registered by AddExplainCommand).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "api/gen/draplane_v1alpha1_types.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::cli {

// The records that name `claim` (by uid when both have one, else by name), newest first (by
// spec.time, then name).
std::vector<api::draplanev1alpha1::AllocationDecision> DecisionsForClaim(
    const api::resourcev1::ResourceClaim& claim,
    std::vector<api::draplanev1alpha1::AllocationDecision> decisions);

// A decision as text for a terminal, the claim's own requests first.
std::string DecisionText(const api::draplanev1alpha1::AllocationDecision& decision,
                         const api::resourcev1::ResourceClaim& claim);

// The pods whose decisions can name the claim: its reservedFor Pods and its owner Pod (claims
// made from a template), as (name, uid).
std::vector<std::pair<std::string, std::string>> ClaimPods(
    const api::resourcev1::ResourceClaim& claim);

}  // namespace draplane::cli
