#include "agent/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace draplane::agent {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kCluster = R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
metadata:
  name: test
nodePools:
- name: h100
  count: 2
  labels:
    platform.example.com/accelerator: h100
  capacity: {cpu: "64", memory: 512Gi, pods: "110"}
  devices:
    gpus:
    - count: 2
      productName: NVIDIA H100 80GB HBM3
      architecture: Hopper
      cudaComputeCapability: "9.0"
      driverVersion: 550.90.07
      memory: 80Gi
- name: a100
  namePrefix: a100-node-
  count: 1
  devices:
    gpus:
    - productName: NVIDIA A100-SXM4-40GB
      architecture: Ampere
      cudaComputeCapability: "8.0"
      driverVersion: "550.90.07"
      memory: 40Gi
      multiprocessors: 98
      mig:
        memorySlices: 8
        profiles:
        - {name: 1g.5gb, memory: 5Gi, memorySlices: 1, multiprocessors: 14, placements: [0, 1]}
        - {name: 2g.10gb, memory: 10Gi, memorySlices: 2, multiprocessors: 28}
  faults:
  - {device: gpu-0, after: 1m30s, for: 10s, effect: NoExecute, message: XID 79}
- name: legacy
  count: 1
  extendedResources: {example.com/gpu: "4"}
)";

TEST(ProfileTest, ParsesAClusterProfile) {
  StatusOr<ClusterProfile> profile = ParseProfile(kCluster);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(profile->name, "test");
  ASSERT_EQ(profile->pools.size(), 3u);
  const GpuSpec& h100 = profile->pools[0].node.devices.gpus[0];
  EXPECT_EQ(h100.count, 2);
  EXPECT_EQ(h100.cuda_compute_capability, "9.0.0");
  EXPECT_EQ(h100.driver_version, "550.90.7");
  EXPECT_EQ(h100.brand, "Nvidia");
  EXPECT_EQ(profile->pools[0].node.capacity.at("memory").ToString(), "512Gi");
  const MigSpec& mig = *profile->pools[1].node.devices.gpus[0].mig;
  EXPECT_EQ(mig.profiles[0].placements, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(mig.profiles[1].placements, (std::vector<int64_t>{0, 2, 4, 6}));
  const FaultSpec& fault = profile->pools[1].node.faults[0];
  EXPECT_EQ(fault.after, std::chrono::seconds(90));
  EXPECT_EQ(*fault.duration, std::chrono::seconds(10));
  EXPECT_EQ(fault.effect, "NoExecute");
  EXPECT_EQ(profile->pools[2].node.extended_resources.at("example.com/gpu").Value(), 4);
}

TEST(ProfileTest, ExpandsNodesFromPools) {
  StatusOr<ClusterProfile> profile = ParseProfile(kCluster);
  ASSERT_TRUE(profile.ok());
  StatusOr<std::vector<ProfileNode>> nodes = ExpandNodes(*profile);
  ASSERT_TRUE(nodes.ok());
  std::vector<std::string> names;
  for (const ProfileNode& n : *nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"h100-0", "h100-1", "a100-node-0", "legacy-0"}));
  StatusOr<ProfileNode> node = FindNode(*profile, "a100-node-0");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->pool, "a100");
  EXPECT_EQ(FindNode(*profile, "nope").status().code(), StatusCode::kNotFound);
}

TEST(ProfileTest, NodeProfileTakesTheNameFromTheCaller) {
  StatusOr<ClusterProfile> profile = ParseProfile(R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
metadata: {name: from-metadata}
devices:
  fpgas: [{count: 2, model: Agilex 7, bitstreamFamily: inference-v2}]
)");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_TRUE(profile->is_node_profile);
  EXPECT_EQ(ExpandNodes(*profile)->at(0).name, "from-metadata");
  EXPECT_EQ(ExpandNodes(*profile, "worker-7")->at(0).name, "worker-7");
  EXPECT_EQ(FindNode(*profile, "worker-7")->node->devices.fpgas[0].count, 2);
}

TEST(ProfileTest, RejectsUnknownFieldsWithTheirPath) {
  StatusOr<ClusterProfile> profile = ParseProfile(R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
nodePools:
- name: a
  devices:
    gpus:
    - productName: X
      architecture: Hopper
      cudaComputeCapability: "8.0"
      driverVersion: "1"
      memory: 1Gi
      memroy: 2Gi
)");
  ASSERT_FALSE(profile.ok());
  EXPECT_THAT(profile.status().message(),
              HasSubstr("nodePools[0].devices.gpus[0].memroy: unknown field"));
}

TEST(ProfileTest, RejectsBadValues) {
  auto error = [](std::string_view body) {
    std::string text = "apiVersion: draplane.dev/v1alpha1\nkind: NodeProfile\n" + std::string(body);
    StatusOr<ClusterProfile> p = ParseProfile(text);
    return p.ok() ? std::string("ok") : std::string(p.status().message());
  };
  EXPECT_THAT(error("devices: {gpus: [{productName: X, architecture: Hopper, "
                    "cudaComputeCapability: nine, driverVersion: '1', memory: 1Gi}]}"),
              HasSubstr("devices.gpus[0].cudaComputeCapability: invalid version"));
  EXPECT_THAT(error("devices: {nics: [{model: X, bandwidth: fast}]}"),
              HasSubstr("devices.nics[0].bandwidth"));
  EXPECT_THAT(error("devices: {nics: [{model: X, bandwidth: 1G, requestPolicy: {default: 1G}}]}"),
              HasSubstr("only allowed with shared: true"));
  EXPECT_THAT(error("faults: [{device: gpu-0, effect: Evict}]"),
              HasSubstr("faults[0].effect: must be None, NoSchedule or NoExecute"));
  EXPECT_THAT(error("faults: [{device: gpu-0, prepare: sometimes}]"),
              HasSubstr("faults[0].prepare"));
  EXPECT_THAT(error("extendedResources: {gpu: '1'}"), HasSubstr("not an extended resource name"));
  EXPECT_THAT(
      error("devices: {gpus: [{productName: X, architecture: Hopper, cudaComputeCapability: '8.0', "
            "driverVersion: '1', memory: 40Gi, mig: {memorySlices: 4, profiles: "
            "[{name: 7g, memory: 40Gi, memorySlices: 8}]}}]}"),
      HasSubstr("mig.profiles[0].memorySlices"));
  EXPECT_THAT(
      error("devices: {fpgas: [{model: X, bitstreamFamily: bf, attach: {outcome: maybe}}]}"),
      HasSubstr("devices.fpgas[0].attach.outcome: must be attached, failed or never"));
  EXPECT_THAT(error("devices: {fpgas: [{model: X, bitstreamFamily: bf, attach: {after: soon}}]}"),
              HasSubstr("devices.fpgas[0].attach.after"));
  EXPECT_THAT(
      error("devices: {gpus: [{productName: X, architecture: Hopper, cudaComputeCapability: '8.0', "
            "driverVersion: '1', memory: 40Gi, mig: {memorySlices: 4}, attach: {}}]}"),
      HasSubstr("devices.gpus[0].attach: a partitionable (mig) GPU cannot be fabric-attached"));
  EXPECT_THAT(error("faults: [{device: gpu-0, unprepare: always}]"),
              HasSubstr("faults[0].unprepare: must be retryable"));
  EXPECT_THAT(error("faults: [{device: gpu-0, prepare: terminal, unprepare: retryable}]"),
              HasSubstr("faults[0].unprepare: a fault is either a prepare or an unprepare fault"));
  StatusOr<ClusterProfile> wrong_kind =
      ParseProfile("apiVersion: draplane.dev/v1alpha1\nkind: Pod\n");
  EXPECT_FALSE(wrong_kind.ok());
}

TEST(ProfileTest, ParsesFabricAttachedDevicesAndUnprepareFaults) {
  StatusOr<ClusterProfile> p = ParseProfile(R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
devices:
  gpus:
  - {productName: X, architecture: Hopper, cudaComputeCapability: '9.0', driverVersion: '1',
     memory: 80Gi, attach: {after: 2s}}
  fpgas:
  - {model: X, bitstreamFamily: bf, attach: {after: 1m, outcome: failed, message: port busy}}
  - {model: X, bitstreamFamily: bf, attach: {outcome: never}}
faults:
- {device: gpu-0, unprepare: retryable, times: 2}
)");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const NodeTemplate& node = p->pools[0].node;
  ASSERT_TRUE(node.devices.gpus[0].attach.has_value());
  EXPECT_EQ(node.devices.gpus[0].attach->after, std::chrono::seconds(2));
  EXPECT_EQ(node.devices.gpus[0].attach->outcome, AttachSpec::Outcome::kAttached);
  EXPECT_EQ(node.devices.fpgas[0].attach->outcome, AttachSpec::Outcome::kFailed);
  EXPECT_EQ(node.devices.fpgas[0].attach->message, "port busy");
  EXPECT_EQ(node.devices.fpgas[1].attach->outcome, AttachSpec::Outcome::kNever);
  ASSERT_EQ(node.faults.size(), 1u);
  EXPECT_EQ(node.faults[0].kind, FaultKind::kUnprepareRetryable);
  EXPECT_EQ(node.faults[0].times, 2);
}

TEST(ProfileTest, NormalizesVersionsToSemver) {
  EXPECT_EQ(*NormalizeVersion("550.90.07"), "550.90.7");
  EXPECT_EQ(*NormalizeVersion("9.0"), "9.0.0");
  EXPECT_EQ(*NormalizeVersion("12"), "12.0.0");
  EXPECT_FALSE(NormalizeVersion("1.2.3.4").ok());
  EXPECT_FALSE(NormalizeVersion("v1.2").ok());
  EXPECT_FALSE(NormalizeVersion("1..2").ok());
}

}  // namespace
}  // namespace draplane::agent
