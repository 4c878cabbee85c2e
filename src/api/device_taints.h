// DeviceTaintRules (KEP-5055, GA in 1.37) as every part of draplane applies them: which devices a
// rule selects, and the devices of a ResourceSlice as the scheduler sees them, with the taints of
// the rules that select them added (upstream's ResourceSlice tracker, which the DRA plugin and
// the eviction controller read slices through).
//
// A rule selects a device by its driver, pool and device name (each unset field matches any).
// Deviation (docs/design/agent.md, "DeviceTaintRule guardrail"): upstream applies a rule without
// a selector to every device (kubernetes#141422 evicted a whole cluster that way); here a rule
// whose selector is missing or empty selects nothing unless it carries the annotation
// `draplane.dev/select-all: "true"`. The API server refuses such a rule without the annotation;
// this repeats the guardrail for rules stored before.
//
// Thread-safety: pure functions over borrowed objects.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "api/gen/resource_v1_types.h"

namespace draplane::api {

inline constexpr std::string_view kSelectAllAnnotation = "draplane.dev/select-all";

// True when the rule's selector is missing or sets no field.
bool SelectsEverything(const resourcev1::DeviceTaintRule& rule);

// Whether `rule` selects the device (see the guardrail above).
bool RuleSelectsDevice(const resourcev1::DeviceTaintRule& rule, std::string_view driver,
                       std::string_view pool, std::string_view device);

// `slice` with, on each device, the taints of the `rules` that select it appended to its own, in
// the order of `rules`; std::nullopt when no rule selects a device of the slice (use it as it
// is). A rule with effect None (a dry run: it changes nothing but its status) adds nothing.
std::optional<resourcev1::ResourceSlice> WithRuleTaints(
    const resourcev1::ResourceSlice& slice,
    const std::vector<const resourcev1::DeviceTaintRule*>& rules);

}  // namespace draplane::api
