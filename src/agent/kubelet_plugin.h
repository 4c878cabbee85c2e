// The kubelet's DRA plugin API for the node agent (`draplane agent --kubelet-plugin`): what the Go
// helper `k8s.io/dynamic-resource-allocation/kubeletplugin` does for Go drivers, for the agent's
// drivers. On a real node the kubelet, not the agent, decides when a claim is prepared: it calls
// NodePrepareResources after the Pod is bound and before its containers start, and
// NodeUnprepareResources after they stopped (docs/design/kubelet-plugin.md has the contract and
// the conformance table).
//
// Per DRA driver name the agent manages (Agent::managed_drivers), two gRPC servers on Unix
// sockets:
//   - registration: `<registry_dir>/<driver>[-<instance>]-reg.sock` serving
//     `pluginregistration.Registration`: GetInfo answers {type "DRAPlugin", name = driver,
//     endpoint = the DRA socket, supported_versions = SupportedServices()};
//     NotifyRegistrationStatus records what the kubelet decided (registration_status()).
//   - DRA: `<plugins_dir>/<driver>/dra[-<instance>].sock` serving `v1.DRAPlugin`,
//     `v1beta1.DRAPlugin` (older kubelets) and the health services `v1`, `v1beta1` and `v1alpha1`
//     `DRAResourceHealth`.
// The DRA server starts first, so a registration socket only appears once its endpoint answers.
// `instance` (a DaemonSet Pod's UID) makes both socket names unique per instance, so during a
// rolling update the old and the new agent serve side by side and the kubelet may call either;
// they share the state dir (prepare.h "shared state"). Each instance removes only its own stale
// sockets, at start and on Stop().
//
// NodePrepareResources, per claim {namespace, uid, name} of the request:
//   1. GET the ResourceClaim (the request carries no allocation); the UID must match — a claim
//      deleted and re-created under the same name is another claim — and it must be allocated;
//   2. Agent::PrepareClaim (the checkpointed Preparer: idempotent, crash-safe);
//   3. answer this driver's devices: pool, device, the CDI device IDs, and the *base* request
//      name (`gpu` for the subrequest `gpu/h100`, upstream's resourceclaim.BaseRequestRef).
// Every claim of the request gets an entry; a claim that cannot be prepared gets its error in
// the entry ("retryable: ...", "terminal: ..." or "needs-cleanup: ...", failure.h), never a
// failed RPC, so one bad claim does not hide the others' results.
// NodeUnprepareResources unprepares each claim by UID (unknown claims succeed: idempotent), with
// per-claim errors likewise. A claim with devices of several of the agent's drivers is prepared
// and unprepared as one unit: the first driver's call does the work, the others find it done.
//
// NodeWatchResources streams, per driver, the complete list of its devices on this node with
// HEALTHY / UNHEALTHY (driver.h DeviceHealth), the Unix time of the discovery that determined it,
// `health_check_timeout` and the driver's message (at most 1024 characters: longer ones are cut
// to 1021 and "..." appended). A message is sent when the stream opens (after the first
// discovery), whenever the list changes, and at least every `health_resend_interval`. The same
// health reaches the scheduler as the device taint `<driver>/unhealthy` in the node's slices,
// which the agent alone writes (health.h) — the kubelet only reports health in Pod status.
//
// Thread-safety: Start/Stop from the owner; the gRPC handlers run on gRPC's threads and call the
// agent's thread-safe PrepareClaim / UnprepareClaim. Ownership: the agent, the ApiClient and the
// Clock must outlive the plugin.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/status.h"

namespace draplane::agent {

// The kubelet's names (kubeletplugin/apis/README.md; pkg/kubelet/cm/dra/plugin).
inline constexpr std::string_view kDraPluginType = "DRAPlugin";
inline constexpr std::string_view kDraServiceV1 = "v1.DRAPlugin";
inline constexpr std::string_view kDraServiceV1beta1 = "v1beta1.DRAPlugin";
inline constexpr std::string_view kHealthServiceV1 = "v1.DRAResourceHealth";
inline constexpr std::string_view kHealthServiceV1beta1 = "v1beta1.DRAResourceHealth";
inline constexpr std::string_view kHealthServiceV1alpha1 = "v1alpha1.DRAResourceHealth";
// The kubelet's and the Go helper's default directories.
inline constexpr std::string_view kDefaultRegistryDir = "/var/lib/kubelet/plugins_registry";
inline constexpr std::string_view kDefaultPluginsDir = "/var/lib/kubelet/plugins";
// The kubelet's deadline for each call to a DRA plugin (defaultClientCallTimeout).
inline constexpr std::chrono::seconds kKubeletCallTimeout{45};
// The longest health message the kubelet keeps (dra-health DeviceHealth.message).
inline constexpr size_t kHealthMessageMax = 1024;

// "<registry_dir>/<driver>-reg.sock", or "<registry_dir>/<driver>-<instance>-reg.sock".
std::string RegistrationSocketPath(std::string_view registry_dir, std::string_view driver,
                                   std::string_view instance);
// "<plugins_dir>/<driver>/dra.sock", or "<plugins_dir>/<driver>/dra-<instance>.sock".
std::string DraSocketPath(std::string_view plugins_dir, std::string_view driver,
                          std::string_view instance);
// What GetInfo lists in `supported_versions`, newest DRA service first (a kubelet takes the
// first one it supports): v1.DRAPlugin, v1beta1.DRAPlugin, then the health services.
std::vector<std::string> SupportedServices();
// The request a device serves, without the subrequest: "gpu/h100" -> "gpu".
std::string_view BaseRequestName(std::string_view request);
// `message` cut to kHealthMessageMax characters (the last three "...").
std::string TruncateHealthMessage(std::string_view message);

struct KubeletPluginOptions {
  std::string registry_dir = std::string(kDefaultRegistryDir);
  std::string plugins_dir = std::string(kDefaultPluginsDir);
  // Unique per instance for rolling updates (the Pod UID); empty: the plain socket names.
  std::string instance{};
  // Health: the list is re-sent at least this often, and each device carries this timeout (the
  // kubelet marks a device Unknown when no update arrives for that long; a multiple of the
  // resend interval, so a slow discovery does not flap devices to Unknown).
  Duration health_resend_interval = std::chrono::seconds(30);
  Duration health_check_timeout = std::chrono::seconds(90);
};

// What the kubelet said in NotifyRegistrationStatus.
struct PluginRegistrationStatus {
  bool notified = false;
  bool registered = false;
  std::string error;
};

class KubeletPlugin {
 public:
  // Creates the directories and serves every socket (see above); also installs the agent's
  // discovery observer, so call it before Agent::Start(). InvalidArgument when the agent is not
  // in kubelet-plugin mode, manages no driver, or a socket path is too long for a Unix socket;
  // Unavailable when a server cannot listen.
  static StatusOr<std::unique_ptr<KubeletPlugin>> Start(Agent& agent, client::ApiClient& api,
                                                        const Clock& clock,
                                                        KubeletPluginOptions options);
  ~KubeletPlugin();
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;

  // Removes the registration sockets (the kubelet deregisters the plugin), ends the health
  // streams, stops the servers and removes the DRA sockets. Idempotent.
  void Stop();

  // Per driver, what the kubelet last said.
  std::map<std::string, PluginRegistrationStatus> registration_status() const;
  // Per driver, the sockets served: {registration socket, DRA socket}.
  std::map<std::string, std::pair<std::string, std::string>> sockets() const;

  struct Impl;

 private:
  explicit KubeletPlugin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace draplane::agent
