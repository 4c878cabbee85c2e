#include "fakekubelet/internal/plugin_client.h"

#include <grpcpp/grpcpp.h>

#include "agent/kubelet_plugin.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra-health/v1beta1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace draplane::fakekubelet::internal {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

namespace {

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& socket) {
  return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

void SetDeadline(grpc::ClientContext* context, Duration timeout) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout));
}

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  const std::string text = what + ": rpc error: code = " + std::to_string(s.error_code()) +
                           " desc = " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return DeadlineExceededError(text);
    case grpc::StatusCode::UNAVAILABLE:
      return UnavailableError(text);
    case grpc::StatusCode::CANCELLED:
      return CancelledError(text);
    default:
      return InternalError(text);
  }
}

template <typename Request>
void FillClaims(const std::vector<ClaimRef>& claims, Request* request) {
  for (const ClaimRef& c : claims) {
    auto* claim = request->add_claims();
    claim->set_namespace_(c.namespace_);
    claim->set_uid(c.uid);
    claim->set_name(c.name);
  }
}

template <typename Stub, typename Request, typename Response>
StatusOr<std::map<std::string, ClaimResult>> CallPrepare(Stub& stub,
                                                         const std::vector<ClaimRef>& claims,
                                                         Duration timeout) {
  Request request;
  FillClaims(claims, &request);
  Response response;
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  grpc::Status s = stub.NodePrepareResources(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, "NodePrepareResources");
  std::map<std::string, ClaimResult> out;
  for (const auto& [uid, result] : response.claims()) {
    ClaimResult& r = out[uid];
    r.error = result.error();
    for (const auto& d : result.devices()) {
      r.devices.push_back(
          DeviceResult{.request_names = {d.request_names().begin(), d.request_names().end()},
                       .pool_name = d.pool_name(),
                       .device_name = d.device_name(),
                       .cdi_device_ids = {d.cdi_device_ids().begin(), d.cdi_device_ids().end()}});
    }
  }
  return out;
}

template <typename Stub, typename Request, typename Response>
StatusOr<std::map<std::string, ClaimResult>> CallUnprepare(Stub& stub,
                                                           const std::vector<ClaimRef>& claims,
                                                           Duration timeout) {
  Request request;
  FillClaims(claims, &request);
  Response response;
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  grpc::Status s = stub.NodeUnprepareResources(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, "NodeUnprepareResources");
  std::map<std::string, ClaimResult> out;
  for (const auto& [uid, result] : response.claims()) out[uid].error = result.error();
  return out;
}

template <typename Stub, typename Request, typename Response>
class HealthWatchImpl final : public HealthWatch {
 public:
  explicit HealthWatchImpl(Stub& stub) {
    Request request;
    reader_ = stub.NodeWatchResources(&context_, request);
  }
  ~HealthWatchImpl() override {
    if (finished_) return;
    context_.TryCancel();
    reader_->Finish();
  }

  StatusOr<std::vector<DeviceHealthUpdate>> Next() override {
    Response message;
    if (!reader_->Read(&message)) {
      grpc::Status s = reader_->Finish();
      finished_ = true;
      if (s.ok()) return UnavailableError("NodeWatchResources: the plugin ended the stream");
      return FromGrpc(s, "NodeWatchResources");
    }
    std::vector<DeviceHealthUpdate> out;
    for (const auto& d : message.devices()) {
      DeviceHealthUpdate u;
      u.pool_name = d.device().pool_name();
      u.device_name = d.device().device_name();
      switch (static_cast<int>(d.health())) {
        case 1:
          u.health = "Healthy";
          break;
        case 2:
          u.health = "Unhealthy";
          break;
        default:
          u.health = "Unknown";
      }
      u.last_updated_time = d.last_updated_time();
      if constexpr (requires { d.message(); }) {
        u.health_check_timeout_seconds = d.health_check_timeout_seconds();
        u.message = d.message();
      }
      out.push_back(std::move(u));
    }
    return out;
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<Response>> reader_;
  bool finished_ = false;
};

}  // namespace

StatusOr<PluginInfo> GetPluginInfo(const std::string& socket, Duration timeout) {
  auto stub = pluginregistration::Registration::NewStub(ChannelTo(socket));
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  pluginregistration::InfoRequest request;
  pluginregistration::PluginInfo info;
  grpc::Status s = stub->GetInfo(&context, request, &info);
  if (!s.ok()) return FromGrpc(s, "GetInfo");
  return PluginInfo{
      .type = info.type(),
      .name = info.name(),
      .endpoint = info.endpoint(),
      .supported_versions = {info.supported_versions().begin(), info.supported_versions().end()}};
}

Status NotifyRegistrationStatus(const std::string& socket, bool registered,
                                const std::string& error, Duration timeout) {
  auto stub = pluginregistration::Registration::NewStub(ChannelTo(socket));
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  pluginregistration::RegistrationStatus request;
  request.set_plugin_registered(registered);
  request.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  grpc::Status s = stub->NotifyRegistrationStatus(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, "NotifyRegistrationStatus");
  return Status::Ok();
}

struct PluginClient::Stubs {
  std::unique_ptr<drav1::DRAPlugin::Stub> v1;
  std::unique_ptr<drav1beta1::DRAPlugin::Stub> v1beta1;
  std::unique_ptr<v1::DRAResourceHealth::Stub> health_v1;
  std::unique_ptr<v1beta1::DRAResourceHealth::Stub> health_v1beta1;
  std::unique_ptr<v1alpha1::DRAResourceHealth::Stub> health_v1alpha1;
};

PluginClient::PluginClient(std::string endpoint, std::string dra_service,
                           std::string health_service)
    : endpoint_(std::move(endpoint)),
      dra_service_(std::move(dra_service)),
      health_service_(std::move(health_service)),
      stubs_(std::make_unique<Stubs>()) {
  // One connection for every service, as the kubelet's DRAPlugin keeps one.
  std::shared_ptr<grpc::Channel> channel = ChannelTo(endpoint_);
  stubs_->v1 = drav1::DRAPlugin::NewStub(channel);
  stubs_->v1beta1 = drav1beta1::DRAPlugin::NewStub(channel);
  stubs_->health_v1 = v1::DRAResourceHealth::NewStub(channel);
  stubs_->health_v1beta1 = v1beta1::DRAResourceHealth::NewStub(channel);
  stubs_->health_v1alpha1 = v1alpha1::DRAResourceHealth::NewStub(channel);
}

PluginClient::~PluginClient() = default;

StatusOr<std::map<std::string, ClaimResult>> PluginClient::Prepare(
    const std::vector<ClaimRef>& claims, Duration timeout) {
  if (dra_service_ == agent::kDraServiceV1beta1) {
    return CallPrepare<drav1beta1::DRAPlugin::Stub, drav1beta1::NodePrepareResourcesRequest,
                       drav1beta1::NodePrepareResourcesResponse>(*stubs_->v1beta1, claims, timeout);
  }
  return CallPrepare<drav1::DRAPlugin::Stub, drav1::NodePrepareResourcesRequest,
                     drav1::NodePrepareResourcesResponse>(*stubs_->v1, claims, timeout);
}

StatusOr<std::map<std::string, ClaimResult>> PluginClient::Unprepare(
    const std::vector<ClaimRef>& claims, Duration timeout) {
  if (dra_service_ == agent::kDraServiceV1beta1) {
    return CallUnprepare<drav1beta1::DRAPlugin::Stub, drav1beta1::NodeUnprepareResourcesRequest,
                         drav1beta1::NodeUnprepareResourcesResponse>(*stubs_->v1beta1, claims,
                                                                     timeout);
  }
  return CallUnprepare<drav1::DRAPlugin::Stub, drav1::NodeUnprepareResourcesRequest,
                       drav1::NodeUnprepareResourcesResponse>(*stubs_->v1, claims, timeout);
}

std::unique_ptr<HealthWatch> PluginClient::WatchHealth() {
  if (health_service_ == agent::kHealthServiceV1) {
    return std::make_unique<
        HealthWatchImpl<v1::DRAResourceHealth::Stub, v1::NodeWatchResourcesRequest,
                        v1::NodeWatchResourcesResponse>>(*stubs_->health_v1);
  }
  if (health_service_ == agent::kHealthServiceV1beta1) {
    return std::make_unique<
        HealthWatchImpl<v1beta1::DRAResourceHealth::Stub, v1beta1::NodeWatchResourcesRequest,
                        v1beta1::NodeWatchResourcesResponse>>(*stubs_->health_v1beta1);
  }
  if (health_service_ == agent::kHealthServiceV1alpha1) {
    return std::make_unique<
        HealthWatchImpl<v1alpha1::DRAResourceHealth::Stub, v1alpha1::NodeWatchResourcesRequest,
                        v1alpha1::NodeWatchResourcesResponse>>(*stubs_->health_v1alpha1);
  }
  return nullptr;
}

}  // namespace draplane::fakekubelet::internal
