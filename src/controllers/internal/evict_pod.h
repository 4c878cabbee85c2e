// Evicting a Pod the way upstream's taint managers do (pkg/controller/tainteviction,
// devicetainteviction): an Event on the Pod, the condition DisruptionTarget=True, then a delete
// with the Pod's uid as precondition, so a Pod recreated under the same name is never hit. A Pod
// bound to a node ends gracefully (its kubelet player, or the API server's backstop, removes it).
//
// Thread-safety: stateless.
#pragma once

#include <string>
#include <string_view>

#include "client/api_client.h"
#include "client/events.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::controllers::internal {

struct PodEvictionRequest {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string event_reason;       // e.g. TaintManagerEviction
  std::string event_message;      // e.g. "Marking for deletion Pod ns/name"
  std::string condition_reason;   // DisruptionTarget's reason, e.g. DeletionByTaintManager
  std::string condition_message;  // and message
  std::string field_manager;
};

// True when this call deleted the Pod; false when it was gone, replaced (another uid) or already
// being deleted. Errors of the API calls otherwise.
StatusOr<bool> EvictPod(client::ApiClient& api, client::EventRecorder& events, const Clock& clock,
                        const PodEvictionRequest& request);

}  // namespace draplane::controllers::internal
