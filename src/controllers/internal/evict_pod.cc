#include "controllers/internal/evict_pod.h"

#include "api/gen/core_v1_types.h"
#include "client/typed.h"

namespace draplane::controllers::internal {

namespace cv1 = api::corev1;

StatusOr<bool> EvictPod(client::ApiClient& api, client::EventRecorder& events, const Clock& clock,
                        const PodEvictionRequest& request) {
  StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api, request.namespace_, request.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) return false;
    return pod.status();
  }
  // Replaced by another Pod of the same name, or already going away: nothing to do.
  if (pod->metadata.uid != request.uid || pod->metadata.deletion_timestamp) return false;
  events.Record(client::ReferenceTo(*pod), cv1::kEventTypeNormal, request.event_reason,
                request.event_message);
  bool has_condition = false;
  for (const cv1::PodCondition& c : pod->status.conditions) {
    if (c.type == cv1::kPodConditionTypeDisruptionTarget && c.status == "True") {
      has_condition = true;
    }
  }
  if (!has_condition) {
    cv1::Pod updated = *pod;
    std::erase_if(updated.status.conditions, [](const cv1::PodCondition& c) {
      return c.type == cv1::kPodConditionTypeDisruptionTarget;
    });
    cv1::PodCondition c;
    c.type = std::string(cv1::kPodConditionTypeDisruptionTarget);
    c.status = "True";
    c.reason = request.condition_reason;
    c.message = request.condition_message;
    c.last_transition_time = api::Time::FromTimestamp(clock.Now());
    updated.status.conditions.push_back(std::move(c));
    StatusOr<cv1::Pod> written = client::UpdateStatus(api, updated, request.field_manager);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kNotFound) return false;
      return written.status();
    }
  }
  client::DeleteOptions options;
  options.precondition_uid = request.uid;
  Status deleted = client::Delete<cv1::Pod>(api, request.namespace_, request.name, options);
  if (deleted.code() == StatusCode::kNotFound) return false;
  if (!deleted.ok()) return deleted;
  return true;
}

}  // namespace draplane::controllers::internal
