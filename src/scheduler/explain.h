// Explanations of scheduling decisions, as data and as text.
//
// FailedSchedulingMessage turns a Diagnosis into the message of the FailedScheduling Event and
// of the PodScheduled=False condition: nodes are grouped by their reason, largest group first,
//
//   0/12 nodes are available: 8 nodes: claim gpus: request gpus: subrequest h100: no device
//   matches (4 do not match the request's selectors), subrequest a100-pair: 1 of 2 needed
//   devices available (1 is already allocated); 4 nodes: node affinity/selector mismatch.
//
// SummarizeDevices renders an allocator::Explanation in node-independent words (no device or
// node names), so nodes failing for the same reason form one group.
//
// Thread-safety: pure functions over values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "allocator/explanation.h"
#include "scheduler/framework/framework.h"

namespace draplane::scheduler {

// `claim_names` holds the name the pod uses for each of the explanation's claims, in order
// (spec.resourceClaims[].name, or "namespace/name" for a claim the pod does not name); the
// explanation's own claim names are not read, so an explanation built for other claims of the
// same specs gives the same text. The claim prefix ("claim gpus: ") is left out when the
// explanation covers a single claim.
std::string SummarizeDevices(const allocator::Explanation& explanation,
                             const std::vector<std::string>& claim_names);

std::string FailedSchedulingMessage(const Diagnosis& diagnosis);

}  // namespace draplane::scheduler
