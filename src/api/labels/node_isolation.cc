#include "api/labels/node_isolation.h"

#include "api/meta/time.h"

namespace draplane::api::labels {

const corev1::Taint* FindIsolationTaint(const corev1::Node& node) {
  for (const corev1::Taint& t : node.spec.taints) {
    if (t.key == kPrepareFailuresTaintKey) return &t;
  }
  return nullptr;
}

std::optional<Timestamp> IsolationUntil(const corev1::Node& node) {
  if (FindIsolationTaint(node) == nullptr) return std::nullopt;
  auto a = node.metadata.annotations.find(kPrepareFailuresUntilAnnotation);
  if (a == node.metadata.annotations.end()) return Timestamp::max();
  StatusOr<Time> until = Time::Parse(a->second);
  if (!until.ok()) return Timestamp::max();
  return until->ToTimestamp();
}

bool IsIsolated(const corev1::Node& node, Timestamp now) {
  std::optional<Timestamp> until = IsolationUntil(node);
  return until.has_value() && now < *until;
}

}  // namespace draplane::api::labels
