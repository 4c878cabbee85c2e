// The kubelet's side of the plugin APIs (private to fakekubelet/): one gRPC client per plugin
// socket, speaking the DRA service and the health service versions chosen at registration.
//
// Calls carry a deadline; a failed call is a Status: DeadlineExceeded when the deadline passed,
// Unavailable when the socket does not answer, Internal for other gRPC errors — with the gRPC
// code and message in the text, as the kubelet logs them.
//
// Thread-safety: a PluginClient may be used from several threads (gRPC channels are); a
// HealthWatch is read from one thread and cancelled from any.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::fakekubelet::internal {

// pluginregistration.PluginInfo.
struct PluginInfo {
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

// GetInfo on a registration socket.
StatusOr<PluginInfo> GetPluginInfo(const std::string& socket, Duration timeout);
// NotifyRegistrationStatus on a registration socket.
Status NotifyRegistrationStatus(const std::string& socket, bool registered,
                                const std::string& error, Duration timeout);

// dra Claim.
struct ClaimRef {
  std::string namespace_;
  std::string uid;
  std::string name;
};

// dra Device.
struct DeviceResult {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
};

// dra NodePrepareResourceResponse / NodeUnprepareResourceResponse (no devices).
struct ClaimResult {
  std::vector<DeviceResult> devices;
  std::string error;
};

// dra-health DeviceHealth.
struct DeviceHealthUpdate {
  std::string pool_name;
  std::string device_name;
  std::string health;  // "Healthy", "Unhealthy", "Unknown" (upstream's state.DeviceHealthStatus)
  int64_t last_updated_time = 0;
  int64_t health_check_timeout_seconds = 0;
  std::string message;
};

class HealthWatch;

class PluginClient {
 public:
  // A client of the DRA socket `endpoint` speaking `dra_service` (kDraServiceV1 or
  // kDraServiceV1beta1) and `health_service` (one of the kHealthService* names, or empty).
  PluginClient(std::string endpoint, std::string dra_service, std::string health_service);
  ~PluginClient();

  const std::string& endpoint() const { return endpoint_; }
  const std::string& dra_service() const { return dra_service_; }
  const std::string& health_service() const { return health_service_; }

  // NodePrepareResources / NodeUnprepareResources: the per-claim results by claim UID.
  StatusOr<std::map<std::string, ClaimResult>> Prepare(const std::vector<ClaimRef>& claims,
                                                       Duration timeout);
  StatusOr<std::map<std::string, ClaimResult>> Unprepare(const std::vector<ClaimRef>& claims,
                                                         Duration timeout);

  // Opens NodeWatchResources; nullptr without a health service.
  std::unique_ptr<HealthWatch> WatchHealth();

 private:
  struct Stubs;
  std::string endpoint_;
  std::string dra_service_;
  std::string health_service_;
  std::unique_ptr<Stubs> stubs_;
};

// One NodeWatchResources stream.
class HealthWatch {
 public:
  virtual ~HealthWatch() = default;
  // The next message: the complete device list of the driver. NotFound-free: an ended stream is
  // Unavailable (with gRPC's reason), a cancelled one Cancelled.
  virtual StatusOr<std::vector<DeviceHealthUpdate>> Next() = 0;
  // Ends the stream from any thread; Next() then returns Cancelled.
  virtual void Cancel() = 0;
};

}  // namespace draplane::fakekubelet::internal
