// The fair-share placement preference (docs/design/fair-share.md §4b): a Pod that can fall back
// leaves the device classes under-served tenants are waiting for to them.
//
// ContestedClassesConstraint is a policy constraint (policy.h) built for one scheduling attempt
// from the contested classes (the scheduler's FairShareOrder::Contested). It refuses devices of
// those classes to firstAvailable subrequests only (an exact request has no fallback), with code
// "fair-share" and a message that names the waiting tenants ("left to team-b: under its fair
// share and waiting for this class"), so the search takes the request's next subrequest and the
// explanation says why. It is a preference, not a rule: the scheduler runs a node's search again
// without it when the node then fits nothing, so no device stays idle for it.
//
// Pure: no clock, threads or I/O. Thread-safety: used by one Allocate call at a time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/policy.h"

namespace draplane::allocator {

// The reason code of fair-share refusals in explanations (PolicyRejection::code).
inline constexpr std::string_view kFairSharePolicyCode = "fair-share";

// Per contested class, the tenants waiting for it (sorted, not empty).
using ContestedClasses = std::map<std::string, std::vector<std::string>, std::less<>>;

class ContestedClassesConstraint final : public PolicyConstraint {
 public:
  explicit ContestedClassesConstraint(const ContestedClasses& contested);

  std::string_view name() const override { return kFairSharePolicyCode; }
  std::optional<PolicyRejection> Add(const PolicyCandidate& candidate) override;
  void Remove(const PolicyCandidate& candidate) override;
  std::optional<PolicyRejection> CheckRequest(const PolicyRequest& request) override;

  // Whether a class is contested.
  bool Contests(std::string_view device_class) const { return refused_.contains(device_class); }
  // The refusal for a contested class, or null.
  const PolicyRejection* RefusalOf(std::string_view device_class) const {
    auto it = refused_.find(device_class);
    return it == refused_.end() ? nullptr : &it->second;
  }
  // Devices and requests refused since construction.
  int64_t refusals() const { return refusals_; }

 private:
  std::optional<PolicyRejection> Refuse(std::string_view request, std::string_view device_class);

  std::map<std::string, PolicyRejection, std::less<>> refused_;  // by class
  int64_t refusals_ = 0;
};

}  // namespace draplane::allocator
