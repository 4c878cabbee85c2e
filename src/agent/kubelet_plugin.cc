#include "agent/kubelet_plugin.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "agent/failure.h"
#include "agent/internal/files.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra-health/v1beta1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

std::string RegistrationSocketPath(std::string_view registry_dir, std::string_view driver,
                                   std::string_view instance) {
  std::string name(driver);
  if (!instance.empty()) name += "-" + std::string(instance);
  return std::string(registry_dir) + "/" + name + "-reg.sock";
}

std::string DraSocketPath(std::string_view plugins_dir, std::string_view driver,
                          std::string_view instance) {
  std::string name = "dra";
  if (!instance.empty()) name += "-" + std::string(instance);
  return std::string(plugins_dir) + "/" + std::string(driver) + "/" + name + ".sock";
}

std::vector<std::string> SupportedServices() {
  return {std::string(kDraServiceV1), std::string(kDraServiceV1beta1),
          std::string(kHealthServiceV1), std::string(kHealthServiceV1beta1),
          std::string(kHealthServiceV1alpha1)};
}

std::string_view BaseRequestName(std::string_view request) {
  return request.substr(0, request.find('/'));
}

std::string TruncateHealthMessage(std::string_view message) {
  if (message.size() <= kHealthMessageMax) return std::string(message);
  return std::string(message.substr(0, kHealthMessageMax - 3)) + "...";
}

namespace {

// One device of a NodePrepareResources answer.
struct DeviceAnswer {
  std::string request_name;  // base name
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;
};

// One claim of an answer; `error` empty on success.
struct ClaimAnswer {
  std::vector<DeviceAnswer> devices;
  std::string error;
};

// The health of one driver's devices, as the last discovery saw it.
struct DeviceHealthEntry {
  std::string pool;
  std::string device;
  bool healthy = true;
  std::string message;
  int64_t last_updated_unix = 0;
};

struct HealthSnapshot {
  uint64_t version = 0;  // 0: no discovery yet
  std::vector<DeviceHealthEntry> devices;
};

bool SameHealth(const std::vector<DeviceHealthEntry>& a, const std::vector<DeviceHealthEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].pool != b[i].pool || a[i].device != b[i].device || a[i].healthy != b[i].healthy ||
        a[i].message != b[i].message) {
      return false;
    }
  }
  return true;
}

}  // namespace

// Everything the servers share.
struct KubeletPlugin::Impl {
  Agent& agent;
  client::ApiClient& api;
  const Clock& clock;
  KubeletPluginOptions options;

  // One entry per driver.
  struct Endpoint {
    std::string driver;
    std::string registration_socket;
    std::string dra_socket;
    std::vector<std::unique_ptr<grpc::Service>> services;
    std::unique_ptr<grpc::Server> dra_server;
    std::unique_ptr<grpc::Server> registration_server;
  };
  std::vector<std::unique_ptr<Endpoint>> endpoints;

  mutable Mutex mu;
  CondVar health_changed;
  bool stopping DRAPLANE_GUARDED_BY(mu) = false;
  // By driver.
  std::map<std::string, PluginRegistrationStatus> registration DRAPLANE_GUARDED_BY(mu);
  std::map<std::string, HealthSnapshot> health DRAPLANE_GUARDED_BY(mu);

  Impl(Agent& a, client::ApiClient& c, const Clock& k, KubeletPluginOptions o)
      : agent(a), api(c), clock(k), options(std::move(o)) {}

  // The devices of `driver` in `claim`'s allocation, as pool/device ("none" without any).
  static std::string AllocatedDevicesOf(const rv1::ResourceClaim& claim,
                                        const std::string& driver) {
    std::string out;
    if (claim.status.allocation) {
      for (const rv1::DeviceRequestAllocationResult& r : claim.status.allocation->devices.results) {
        if (r.driver != driver) continue;
        if (!out.empty()) out += ", ";
        out += r.pool + "/" + r.device;
      }
    }
    return out.empty() ? "none" : out;
  }

  // NodePrepareResources for `driver`: one answer per claim, keyed by UID.
  template <typename ClaimList>
  std::map<std::string, ClaimAnswer> Prepare(const std::string& driver, const ClaimList& claims) {
    std::map<std::string, ClaimAnswer> out;
    for (const auto& ref : claims) {
      // A claim listed twice is answered once (its devices were listed twice).
      if (out.contains(ref.uid())) continue;
      ClaimAnswer& answer = out[ref.uid()];
      const std::string key = ref.namespace_() + "/" + ref.name();
      if (ref.uid().empty() || ref.namespace_().empty() || ref.name().empty()) {
        answer.error = "terminal: claim " + key + " (uid " + ref.uid() +
                       "): namespace, name and uid are required";
        continue;
      }
      StatusOr<rv1::ResourceClaim> claim =
          client::Get<rv1::ResourceClaim>(api, ref.namespace_(), ref.name());
      if (!claim.ok()) {
        answer.error = "retryable: claim " + key + ": " + std::string(claim.status().message());
        continue;
      }
      if (claim->metadata.uid != ref.uid()) {
        // Deleted and created again under the same name: not the claim the kubelet means.
        answer.error = "terminal: claim " + key + " got replaced: its uid is " +
                       claim->metadata.uid + ", not " + ref.uid();
        continue;
      }
      StatusOr<ClaimRecord> record = agent.PrepareClaim(*claim);
      if (!record.ok()) {
        answer.error = std::string(FailureClassName(ClassifyFailure(record.status()))) +
                       ": claim " + key + ": " + std::string(record.status().message());
        log::Warning("node {}: {}: NodePrepareResources: {}", agent.node_name(), driver,
                     answer.error);
        continue;
      }
      for (const DeviceRecord& d : record->devices) {
        if (d.driver != driver) continue;
        answer.devices.push_back(
            DeviceAnswer{.request_name = std::string(BaseRequestName(d.request)),
                         .pool = d.pool,
                         .device = d.device,
                         .cdi_device_ids = d.cdi_device_ids});
      }
      if (answer.devices.empty()) {
        // The kubelet calls a driver for the claims allocated devices of it; none here means the
        // allocation is for another node, and "prepared, no devices" would start the container
        // without them.
        answer.error = "terminal: claim " + key + " has no device of driver " + driver +
                       " on node " + agent.node_name() +
                       " (allocated: " + AllocatedDevicesOf(*claim, driver) + ")";
        log::Warning("node {}: {}: NodePrepareResources: {}", agent.node_name(), driver,
                     answer.error);
        continue;
      }
      log::Info("node {}: {}: prepared claim {} ({}): {} device(s)", agent.node_name(), driver, key,
                ref.uid(), answer.devices.size());
    }
    return out;
  }

  // NodeUnprepareResources for `driver`: one error string per claim UID (empty: done).
  template <typename ClaimList>
  std::map<std::string, std::string> Unprepare(const std::string& driver, const ClaimList& claims) {
    std::map<std::string, std::string> out;
    for (const auto& ref : claims) {
      Status s = agent.UnprepareClaim(ref.uid(), driver);
      std::string& error = out[ref.uid()];
      if (!s.ok()) {
        error = std::string(FailureClassName(ClassifyFailure(s))) + ": claim " + ref.namespace_() +
                "/" + ref.name() + ": " + std::string(s.message());
        log::Warning("node {}: {}: NodeUnprepareResources: {}", agent.node_name(), driver, error);
      } else {
        log::Info("node {}: {}: unprepared claim {}/{} ({})", agent.node_name(), driver,
                  ref.namespace_(), ref.name(), ref.uid());
      }
    }
    return out;
  }

  // The agent's discovery observer: a new snapshot (and a wake-up) per driver whose health list
  // changed.
  void UpdateHealth(const std::vector<Inventory>& inventories) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
    MutexLock lock(mu);
    for (const Inventory& inv : inventories) {
      auto it = health.find(inv.driver);
      if (it == health.end()) continue;  // not one of the served drivers
      std::vector<DeviceHealthEntry> devices;
      for (const DiscoveredDevice& d : inv.devices) {
        devices.push_back(DeviceHealthEntry{.pool = agent.node_name(),
                                            .device = d.device.name,
                                            .healthy = d.health.healthy,
                                            .message = TruncateHealthMessage(d.health.message),
                                            .last_updated_unix = now});
      }
      HealthSnapshot& snapshot = it->second;
      if (snapshot.version == 0 || !SameHealth(snapshot.devices, devices)) {
        ++snapshot.version;
        health_changed.NotifyAll();
      }
      // The time of the latest discovery rides along with the next message either way.
      snapshot.devices = std::move(devices);
    }
  }

  // NodeWatchResources for `driver`: sends the snapshot whenever it changes, at least every
  // resend interval, until the kubelet goes away or the plugin stops.
  template <typename Response>
  grpc::Status WatchHealth(const std::string& driver, grpc::ServerContext* context,
                           grpc::ServerWriter<Response>* writer) {
    uint64_t sent_version = 0;
    Duration since_sent{};
    // Wakes up at least this often to notice a kubelet that went away.
    const Duration poll =
        std::min<Duration>(options.health_resend_interval, std::chrono::milliseconds(500));
    while (true) {
      Response message;
      {
        MutexLock lock(mu);
        health_changed.WaitFor(lock, poll, [&]() DRAPLANE_REQUIRES(mu) {
          return stopping || health[driver].version != sent_version;
        });
        if (stopping) return grpc::Status::OK;
        const HealthSnapshot& snapshot = health[driver];
        if (snapshot.version == 0) continue;  // nothing discovered yet
        since_sent += poll;
        if (snapshot.version == sent_version && since_sent < options.health_resend_interval) {
          if (context->IsCancelled()) return grpc::Status::CANCELLED;
          continue;
        }
        FillHealth(snapshot, &message);
        sent_version = snapshot.version;
        since_sent = Duration::zero();
      }
      if (!writer->Write(message)) return grpc::Status::OK;  // the kubelet closed the stream
    }
  }

  template <typename Response>
  void FillHealth(const HealthSnapshot& snapshot, Response* out) const {
    const int64_t timeout =
        std::chrono::duration_cast<std::chrono::seconds>(options.health_check_timeout).count();
    for (const DeviceHealthEntry& d : snapshot.devices) {
      auto* device = out->add_devices();
      device->mutable_device()->set_pool_name(d.pool);
      device->mutable_device()->set_device_name(d.device);
      using Health = std::remove_cvref_t<decltype(device->health())>;
      device->set_health(d.healthy ? static_cast<Health>(1) : static_cast<Health>(2));
      device->set_last_updated_time(d.last_updated_unix);
      // v1alpha1 as 1.34/1.35 kubelets read it has neither (apis/README.md).
      if constexpr (requires { device->set_message(d.message); }) {
        device->set_health_check_timeout_seconds(timeout);
        device->set_message(d.message);
      }
    }
  }

  void Shutdown() {
    {
      MutexLock lock(mu);
      if (stopping) return;
      stopping = true;
    }
    health_changed.NotifyAll();
    // Registration first: the kubelet deregisters the plugin before its endpoint goes away. Only
    // sockets this plugin served are removed (a start refused for another process's live
    // sockets leaves them alone).
    for (auto& e : endpoints) {
      if (e->registration_server) {
        e->registration_server->Shutdown(std::chrono::system_clock::now() +
                                         std::chrono::seconds(1));
        e->registration_server->Wait();
        (void)internal::RemoveFile(e->registration_socket);
      }
    }
    for (auto& e : endpoints) {
      if (e->dra_server) {
        e->dra_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
        e->dra_server->Wait();
        (void)internal::RemoveFile(e->dra_socket);
      }
    }
  }
};

namespace {

using Impl = KubeletPlugin::Impl;

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(Impl& impl, std::string driver, std::string endpoint)
      : impl_(impl), driver_(std::move(driver)), endpoint_(std::move(endpoint)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type(std::string(kDraPluginType));
    info->set_name(driver_);
    info->set_endpoint(endpoint_);
    for (const std::string& service : SupportedServices()) info->add_supported_versions(service);
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    {
      MutexLock lock(impl_.mu);
      impl_.registration[driver_] = PluginRegistrationStatus{
          .notified = true, .registered = status->plugin_registered(), .error = status->error()};
    }
    if (status->plugin_registered()) {
      log::Info("node {}: {}: registered with the kubelet", impl_.agent.node_name(), driver_);
    } else {
      log::Error("node {}: {}: the kubelet refused the registration: {}", impl_.agent.node_name(),
                 driver_, status->error());
    }
    return grpc::Status::OK;
  }

 private:
  Impl& impl_;
  const std::string driver_;
  const std::string endpoint_;
};

// dra/v1 and dra/v1beta1 have the same messages in two packages.
template <typename Base, typename PrepareRequest, typename PrepareResponse,
          typename UnprepareRequest, typename UnprepareResponse>
class DraService final : public Base {
 public:
  DraService(Impl& impl, std::string driver) : impl_(impl), driver_(std::move(driver)) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*, const PrepareRequest* request,
                                    PrepareResponse* response) override {
    for (auto& [uid, answer] : impl_.Prepare(driver_, request->claims())) {
      auto& entry = (*response->mutable_claims())[uid];
      entry.set_error(answer.error);
      for (const DeviceAnswer& d : answer.devices) {
        auto* device = entry.add_devices();
        device->add_request_names(d.request_name);
        device->set_pool_name(d.pool);
        device->set_device_name(d.device);
        for (const std::string& id : d.cdi_device_ids) device->add_cdi_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareRequest* request,
                                      UnprepareResponse* response) override {
    for (auto& [uid, error] : impl_.Unprepare(driver_, request->claims())) {
      (*response->mutable_claims())[uid].set_error(error);
    }
    return grpc::Status::OK;
  }

 private:
  Impl& impl_;
  const std::string driver_;
};

using DraServiceV1 =
    DraService<drav1::DRAPlugin::Service, drav1::NodePrepareResourcesRequest,
               drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
               drav1::NodeUnprepareResourcesResponse>;
using DraServiceV1beta1 =
    DraService<drav1beta1::DRAPlugin::Service, drav1beta1::NodePrepareResourcesRequest,
               drav1beta1::NodePrepareResourcesResponse, drav1beta1::NodeUnprepareResourcesRequest,
               drav1beta1::NodeUnprepareResourcesResponse>;

template <typename Base, typename Request, typename Response>
class HealthService final : public Base {
 public:
  HealthService(Impl& impl, std::string driver) : impl_(impl), driver_(std::move(driver)) {}

  grpc::Status NodeWatchResources(grpc::ServerContext* context, const Request*,
                                  grpc::ServerWriter<Response>* writer) override {
    return impl_.WatchHealth<Response>(driver_, context, writer);
  }

 private:
  Impl& impl_;
  const std::string driver_;
};

using HealthServiceV1 = HealthService<v1::DRAResourceHealth::Service, v1::NodeWatchResourcesRequest,
                                      v1::NodeWatchResourcesResponse>;
using HealthServiceV1beta1 =
    HealthService<v1beta1::DRAResourceHealth::Service, v1beta1::NodeWatchResourcesRequest,
                  v1beta1::NodeWatchResourcesResponse>;
using HealthServiceV1alpha1 =
    HealthService<v1alpha1::DRAResourceHealth::Service, v1alpha1::NodeWatchResourcesRequest,
                  v1alpha1::NodeWatchResourcesResponse>;

Status CheckSocketPath(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgumentError("socket path " + path + " is longer than " +
                                std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                                " characters, the limit of a Unix socket");
  }
  return Status::Ok();
}

// Whether a process accepts connections on the Unix socket `path` (a stale one refuses them).
bool SocketAnswers(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const bool answers =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return answers;
}

// Serves `services` on the Unix socket `path`, replacing a stale socket of ours; mode 0600. A
// socket some process still serves is refused: unlinking it would leave that agent running
// unreachable, both rewriting the node's slices.
StatusOr<std::unique_ptr<grpc::Server>> Serve(const std::string& path,
                                              const std::vector<grpc::Service*>& services) {
  if (SocketAnswers(path)) {
    return FailedPreconditionError(
        "kubelet plugin: another process serves " + path +
        " (a second agent for this driver on this node? instances of a rolling update each need "
        "their own --plugin-instance)");
  }
  DRAPLANE_RETURN_IF_ERROR(internal::RemoveFile(path));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return UnavailableError("cannot serve gRPC on " + path);
  ::chmod(path.c_str(), 0600);
  return server;
}

}  // namespace

StatusOr<std::unique_ptr<KubeletPlugin>> KubeletPlugin::Start(Agent& agent, client::ApiClient& api,
                                                              const Clock& clock,
                                                              KubeletPluginOptions options) {
  if (!agent.kubelet_plugin()) {
    return InvalidArgumentError(
        "kubelet plugin: the agent of node " + agent.node_name() +
        " prepares claims on its own; create it with AgentOptions::kubelet_plugin");
  }
  if (agent.managed_drivers().empty()) {
    return InvalidArgumentError("kubelet plugin: the agent manages no DRA driver");
  }
  auto impl = std::make_unique<Impl>(agent, api, clock, std::move(options));
  const KubeletPluginOptions& o = impl->options;
  DRAPLANE_RETURN_IF_ERROR(internal::MakeDirs(o.registry_dir));
  for (const std::string& driver : agent.managed_drivers()) {
    auto e = std::make_unique<Impl::Endpoint>();
    e->driver = driver;
    e->registration_socket = RegistrationSocketPath(o.registry_dir, driver, o.instance);
    e->dra_socket = DraSocketPath(o.plugins_dir, driver, o.instance);
    DRAPLANE_RETURN_IF_ERROR(CheckSocketPath(e->registration_socket));
    DRAPLANE_RETURN_IF_ERROR(CheckSocketPath(e->dra_socket));
    DRAPLANE_RETURN_IF_ERROR(internal::MakeDirs(o.plugins_dir + "/" + driver));
    {
      MutexLock lock(impl->mu);  // uncontended: no thread has the plugin yet
      impl->health[driver] = HealthSnapshot{};
    }
    impl->endpoints.push_back(std::move(e));
  }
  agent.set_discovery_observer([raw = impl.get()](const std::vector<Inventory>& inventories) {
    raw->UpdateHealth(inventories);
  });
  std::unique_ptr<KubeletPlugin> plugin(new KubeletPlugin(std::move(impl)));
  Impl& self = *plugin->impl_;
  for (auto& e : self.endpoints) {
    e->services.push_back(std::make_unique<DraServiceV1>(self, e->driver));
    e->services.push_back(std::make_unique<DraServiceV1beta1>(self, e->driver));
    e->services.push_back(std::make_unique<HealthServiceV1>(self, e->driver));
    e->services.push_back(std::make_unique<HealthServiceV1beta1>(self, e->driver));
    e->services.push_back(std::make_unique<HealthServiceV1alpha1>(self, e->driver));
    std::vector<grpc::Service*> dra;
    for (auto& s : e->services) dra.push_back(s.get());
    DRAPLANE_ASSIGN_OR_RETURN(e->dra_server, Serve(e->dra_socket, dra));
    e->services.push_back(std::make_unique<RegistrationService>(self, e->driver, e->dra_socket));
    DRAPLANE_ASSIGN_OR_RETURN(e->registration_server,
                              Serve(e->registration_socket, {e->services.back().get()}));
    log::Info("node {}: {}: kubelet plugin on {} (registration {})", agent.node_name(), e->driver,
              e->dra_socket, e->registration_socket);
  }
  return plugin;
}

KubeletPlugin::KubeletPlugin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KubeletPlugin::~KubeletPlugin() { Stop(); }

void KubeletPlugin::Stop() {
  impl_->agent.set_discovery_observer(nullptr);
  impl_->Shutdown();
}

std::map<std::string, PluginRegistrationStatus> KubeletPlugin::registration_status() const {
  MutexLock lock(impl_->mu);
  return impl_->registration;
}

std::map<std::string, std::pair<std::string, std::string>> KubeletPlugin::sockets() const {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& e : impl_->endpoints) {
    out[e->driver] = {e->registration_socket, e->dra_socket};
  }
  return out;
}

}  // namespace draplane::agent
