// Device states on a MIG scenario, against a count by hand (issue 23 acceptance: "fragmented
// count on a MIG scenario matches a hand computation").
#include "scheduler/device_states.h"

#include <gtest/gtest.h>

#include "api/codec/yaml.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::scheduler {
namespace {

namespace rv1 = api::resourcev1;

template <typename T>
std::shared_ptr<const T> Yaml(std::string_view text) {
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(text);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  auto out = std::make_shared<T>();
  if (!docs.ok() || docs->empty()) return out;
  api::FieldErrorList errors;
  Decode(docs->front().value, out.get(), &errors);
  EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  return out;
}

// A pool `node` of MIG-partitionable GPUs: one counter set of 7 slices per GPU; per GPU the
// whole GPU (7 slices), seven 1g partitions (1 slice each) and two 3g partitions (3 slices each).
// GPUs listed in `tainted` carry a NoSchedule taint on every device (the agent's unhealthy taint).
void AddMigNode(ClusterState& cluster, const std::string& node, int gpus,
                const std::set<int>& tainted = {}) {
  cluster.UpsertNode(Yaml<api::corev1::Node>("metadata: {name: " + node + "}\n"));
  std::string counters = "spec:\n  driver: gpu.example.com\n  nodeName: " + node +
                         "\n  pool: {name: " + node +
                         ", generation: 1, resourceSliceCount: 2}\n  sharedCounters:\n";
  std::string devices = "spec:\n  driver: gpu.example.com\n  nodeName: " + node +
                        "\n  pool: {name: " + node +
                        ", generation: 1, resourceSliceCount: 2}\n  devices:\n";
  for (int g = 0; g < gpus; ++g) {
    const std::string set = "gpu-" + std::to_string(g) + "-counters";
    counters += "  - {name: " + set + ", counters: {slices: {value: \"7\"}}}\n";
    auto device = [&](const std::string& name, const std::string& type, int slices) {
      devices += "  - name: gpu-" + std::to_string(g) + name +
                 "\n    attributes: {type: {string: " + type + "}, profile: {string: \"" +
                 (type == "mig" ? name.substr(1, 2) : "whole") +
                 "\"}}\n    consumesCounters: [{counterSet: " + set +
                 ", counters: {slices: {value: \"" + std::to_string(slices) + "\"}}}]\n";
      if (tainted.contains(g)) {
        devices += "    taints: [{key: gpu.example.com/unhealthy, effect: NoSchedule}]\n";
      }
    };
    device("", "gpu", 7);
    for (int i = 0; i < 7; ++i) device("-1g-" + std::to_string(i), "mig", 1);
    for (int i = 0; i < 2; ++i) device("-3g-" + std::to_string(i), "mig", 3);
  }
  cluster.UpsertSlice(
      Yaml<rv1::ResourceSlice>("metadata: {name: " + node + "-counters}\n" + counters));
  cluster.UpsertSlice(
      Yaml<rv1::ResourceSlice>("metadata: {name: " + node + "-devices}\n" + devices));
}

void AddClass(ClusterState& cluster, const std::string& name, const std::string& type) {
  cluster.UpsertClass(
      Yaml<rv1::DeviceClass>("metadata: {name: " + name +
                             "}\nspec:\n  selectors:\n  - cel: {expression: 'device.attributes"
                             "[\"gpu.example.com\"].type == \"" +
                             type + "\"'}\n"));
}

// An allocated claim holding `devices` of pool `node`.
void Hold(ClusterState& cluster, const std::string& name, const std::string& node,
          const std::vector<std::string>& devices) {
  std::string yaml = "metadata: {name: " + name + ", namespace: team-a, uid: " + name +
                     "}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: mig}}]}}"
                     "\nstatus:\n  allocation:\n    devices:\n      results:\n";
  for (const std::string& d : devices) {
    yaml +=
        "      - {request: r, driver: gpu.example.com, pool: " + node + ", device: " + d + "}\n";
  }
  cluster.UpsertClaim(Yaml<rv1::ResourceClaim>(yaml));
}

rv1::ExactDeviceRequest Profile(const std::string& profile) {
  rv1::ExactDeviceRequest shape;
  shape.device_class_name = "mig";
  shape.allocation_mode = "ExactCount";
  shape.count = 1;
  rv1::DeviceSelector selector;
  selector.cel.emplace();
  selector.cel->expression =
      "device.attributes[\"gpu.example.com\"].profile == \"" + profile + "\"";
  shape.selectors.push_back(selector);
  return shape;
}

class DeviceStatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddClass(cluster_, "gpu", "gpu");
    AddClass(cluster_, "mig", "mig");
    // node-a: GPU 0 holds both 3g partitions (6 of 7 slices used, 1 left), GPU 1 five 1g
    // partitions (5 used, 2 left). node-b: GPU 0 free, GPU 1 unhealthy (tainted).
    AddMigNode(cluster_, "node-a", 2);
    AddMigNode(cluster_, "node-b", 2, {1});
    Hold(cluster_, "c0", "node-a", {"gpu-0-3g-0", "gpu-0-3g-1"});
    Hold(cluster_, "c1", "node-a",
         {"gpu-1-1g-0", "gpu-1-1g-1", "gpu-1-1g-2", "gpu-1-1g-3", "gpu-1-1g-4"});
  }

  int64_t Count(const DeviceStates& s, const std::string& cls, const std::string& state) {
    auto it = s.devices.find({"gpu.example.com", cls, state});
    return it == s.devices.end() ? -1 : it->second;
  }

  ClusterState cluster_;
  const allocator::Features features_ = allocator::AllFeatures();
};

TEST_F(DeviceStatesTest, LeftoverSlicesTooSmallForEveryPendingProfileAreFragmented) {
  // Pending: a 3g profile. By hand, class mig (4 physical GPUs, each counted once):
  //   node-a GPU 0: 1 slice left: a 1g partition is free, no 3g fits  -> fragmented
  //   node-a GPU 1: 2 slices left: 1g partitions free, no 3g fits      -> fragmented
  //   node-b GPU 0: all 7 slices free, a 3g fits                        -> idle
  //   node-b GPU 1: every device tainted                                -> unavailable
  // Class gpu (the whole-GPU devices): node-a's GPUs cannot give a whole GPU any more and are
  // held -> allocated 2; node-b GPU 0 idle (no pending shape of class gpu); GPU 1 unavailable.
  DeviceStates s = ComputeDeviceStates(cluster_, {Profile("3g")}, features_, 0);
  EXPECT_EQ(Count(s, "mig", "fragmented"), 2);
  EXPECT_EQ(Count(s, "mig", "idle"), 1);
  EXPECT_EQ(Count(s, "mig", "unavailable"), 1);
  EXPECT_EQ(Count(s, "mig", "allocated"), 0);
  EXPECT_EQ(Count(s, "gpu", "allocated"), 2);
  EXPECT_EQ(Count(s, "gpu", "idle"), 1);
  EXPECT_EQ(Count(s, "gpu", "unavailable"), 1);
  EXPECT_EQ(Count(s, "gpu", "fragmented"), 0);
  EXPECT_EQ(s.shapes, 1u);
  // Counter sets: the most-used counter's ratio.
  EXPECT_DOUBLE_EQ((s.counter_used.at({"gpu.example.com", "node-a", "gpu-0-counters"})), 6.0 / 7);
  EXPECT_DOUBLE_EQ((s.counter_used.at({"gpu.example.com", "node-a", "gpu-1-counters"})), 5.0 / 7);
  EXPECT_DOUBLE_EQ((s.counter_used.at({"gpu.example.com", "node-b", "gpu-0-counters"})), 0);
}

TEST_F(DeviceStatesTest, AProfileThatFitsTheLeftoversMakesThemUsable) {
  // A 1g profile pending as well: node-a's leftovers can serve it, so they are in use, not
  // fragmented; the count of the two identical 1g requests is one shape.
  auto claim = [](const std::string& request, const std::string& profile) {
    rv1::ResourceClaim c;
    rv1::DeviceRequest r;
    r.name = request;
    r.exactly = Profile(profile);
    c.spec.devices.requests.push_back(r);
    return c;
  };
  rv1::ResourceClaim a = claim("r", "1g");
  rv1::ResourceClaim b = claim("other", "1g");
  rv1::ResourceClaim c = claim("r", "3g");
  std::vector<rv1::ExactDeviceRequest> shapes = PendingShapes({&a, &b, &c});
  ASSERT_EQ(shapes.size(), 2u);
  DeviceStates s = ComputeDeviceStates(cluster_, shapes, features_, 0);
  EXPECT_EQ(Count(s, "mig", "fragmented"), 0);
  EXPECT_EQ(Count(s, "mig", "allocated"), 2);
  EXPECT_EQ(Count(s, "mig", "idle"), 1);
  EXPECT_EQ(Count(s, "mig", "unavailable"), 1);
}

TEST_F(DeviceStatesTest, WithNothingPendingFreeDevicesAreIdle) {
  DeviceStates s = ComputeDeviceStates(cluster_, {}, features_, 0);
  EXPECT_EQ(Count(s, "mig", "fragmented"), 0);
  EXPECT_EQ(Count(s, "mig", "allocated"), 2);
  EXPECT_EQ(Count(s, "mig", "idle"), 1);
  EXPECT_EQ(s.allocator_calls, 0);
}

TEST_F(DeviceStatesTest, ASpentEvaluationBudgetLeavesTheShapeUnknownNotFragmented) {
  DeviceStates s = ComputeDeviceStates(cluster_, {Profile("3g")}, features_, 0,
                                       /*evaluation_budget=*/1);
  EXPECT_EQ(Count(s, "mig", "fragmented"), 0);
  EXPECT_EQ(Count(s, "mig", "allocated"), 2);
}

TEST_F(DeviceStatesTest, ShapesOverTheBoundAreDroppedAndCounted) {
  std::vector<rv1::ExactDeviceRequest> shapes;
  for (size_t i = 0; i < kMaxShapes + 3; ++i) shapes.push_back(Profile("p" + std::to_string(i)));
  DeviceStates s = ComputeDeviceStates(cluster_, shapes, features_, 0);
  EXPECT_EQ(s.shapes, kMaxShapes);
  EXPECT_EQ(s.shapes_dropped, 3u);
  // No profile p<i> exists, so the 32 evaluated shapes alone would strand every free remainder;
  // but a dropped shape might use any device of its class, and unknown is never fragmented.
  EXPECT_EQ(Count(s, "mig", "fragmented"), 0);
  shapes.resize(kMaxShapes);
  s = ComputeDeviceStates(cluster_, shapes, features_, 0);
  EXPECT_EQ(s.shapes_dropped, 0u);
  EXPECT_EQ(Count(s, "mig", "fragmented"), 3);
}

}  // namespace
}  // namespace draplane::scheduler
