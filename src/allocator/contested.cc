#include "allocator/contested.h"

namespace draplane::allocator {

ContestedClassesConstraint::ContestedClassesConstraint(const ContestedClasses& contested) {
  for (const auto& [device_class, tenants] : contested) {
    std::string names;
    for (const std::string& t : tenants) names += (names.empty() ? "" : ", ") + t;
    refused_.emplace(
        device_class,
        PolicyRejection{std::string(kFairSharePolicyCode),
                        "left to " + names + ": under " + (tenants.size() == 1 ? "its" : "their") +
                            " fair share and waiting for class " + device_class});
  }
}

std::optional<PolicyRejection> ContestedClassesConstraint::Refuse(std::string_view request,
                                                                  std::string_view device_class) {
  if (request.find('/') == std::string_view::npos) return std::nullopt;  // no fallback
  auto it = refused_.find(device_class);
  if (it == refused_.end()) return std::nullopt;
  ++refusals_;
  return it->second;
}

std::optional<PolicyRejection> ContestedClassesConstraint::Add(const PolicyCandidate& candidate) {
  return Refuse(candidate.request, candidate.device_class);
}

void ContestedClassesConstraint::Remove(const PolicyCandidate& candidate) {
  (void)candidate;  // refusals only: nothing accepted is tracked
}

std::optional<PolicyRejection> ContestedClassesConstraint::CheckRequest(
    const PolicyRequest& request) {
  return Refuse(request.request, request.device_class);
}

}  // namespace draplane::allocator
