#include "agent/prepare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "agent/cdi.h"
#include "agent/drivers/profile/profile_driver.h"
#include "agent/failure.h"
#include "agent/internal/files.h"

namespace draplane::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A driver that counts calls and fails on demand.
class FakeDriver : public Driver {
 public:
  std::string kind() const override { return "fake"; }
  std::vector<std::string> DriverNames() const override { return {"fake.example.com"}; }
  StatusOr<std::vector<Inventory>> Discover() override { return std::vector<Inventory>{}; }
  StatusOr<PreparedDevice> PrepareDevice(const DevicePrepareRequest& r) override {
    ++prepares;
    if (r.device == fail_device) return fail_status;
    held.insert(r.device);
    PreparedDevice out;
    out.cdi_class = r.device.starts_with("nic") ? "nic" : "gpu";
    out.edits.device_nodes.push_back(
        {.path = "/dev/" + r.device, .type = "c", .major = {}, .minor = {}});
    out.edits.env.push_back("CONFIGS=" + std::to_string(r.config.size()));
    out.edits.list_env.emplace_back("VISIBLE", "uuid-" + r.device);
    return out;
  }
  Status UnprepareDevice(const DevicePrepareRequest& r) override {
    ++unprepares;
    if (!fail_unprepare.ok()) return fail_unprepare;
    held.erase(r.device);
    return Status::Ok();
  }
  int prepares = 0;
  int unprepares = 0;
  std::string fail_device;
  Status fail_status;
  Status fail_unprepare;
  std::set<std::string> held;
};

class PrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("prepare-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Preparer> NewPreparer() {
    auto p = std::make_unique<Preparer>(
        PreparerOptions{.state_dir = dir_.string(), .node_name = "node-a"},
        std::map<std::string, Driver*>{{"fake.example.com", &driver_}});
    Status s = p->Recover();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return p;
  }

  static AllocatedDevice Dev(std::string request, std::string device) {
    return AllocatedDevice{.request = std::move(request),
                           .driver = "fake.example.com",
                           .pool = "node-a",
                           .device = std::move(device),
                           .share_id = {},
                           .admin_access = false,
                           .config = {}};
  }

  ClaimToPrepare Claim() {
    return ClaimToPrepare{
        .uid = "uid-1",
        .namespace_ = "team-a",
        .name = "train",
        .devices = {Dev("gpu", "gpu-0"), Dev("gpu", "gpu-1"), Dev("net", "nic-0")}};
  }

  std::vector<std::string> CdiFiles() { return *internal::ListFiles((dir_ / "cdi").string()); }

  FakeDriver driver_;
  std::filesystem::path dir_;
};

TEST_F(PrepareTest, WritesOneSpecPerKindListingExactlyTheAllocatedDevices) {
  std::unique_ptr<Preparer> p = NewPreparer();
  api::RawJson config(boost::json::parse(R"({"kind":"X"})"));
  ClaimToPrepare claim = Claim();
  claim.devices[0].config = {&config};
  StatusOr<ClaimRecord> record = p->Prepare(claim);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->state, PrepareState::kCompleted);
  EXPECT_THAT(CdiFiles(),
              ElementsAre("fake.example.com_gpu_uid-1.json", "fake.example.com_nic_uid-1.json"));
  StatusOr<std::string> text =
      internal::ReadFile((dir_ / "cdi/fake.example.com_gpu_uid-1.json").string());
  ASSERT_TRUE(text.ok());
  StatusOr<CdiSpec> spec = ParseCdiSpec(*text);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, "fake.example.com/gpu");
  EXPECT_EQ(spec->annotations.at("draplane.dev/claim"), "team-a/train");
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[0].name, "uid-1-gpu-0");
  EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/gpu-0");
  EXPECT_THAT(spec->devices[0].edits.env, ElementsAre("CONFIGS=1"));
  EXPECT_THAT(spec->devices[1].edits.env, ElementsAre("CONFIGS=0"));
  EXPECT_THAT(spec->edits.env,
              ElementsAre("VISIBLE=uuid-gpu-0,uuid-gpu-1", "DRA_DEVICE_GPU=gpu-0,gpu-1"));
  EXPECT_THAT(record->devices[2].cdi_device_ids, ElementsAre("fake.example.com/nic=uid-1-nic-0"));
  // The checkpoint on disk says the same.
  StatusOr<Checkpoint> disk = LoadCheckpoint((dir_ / "checkpoint.json").string());
  ASSERT_TRUE(disk.ok());
  EXPECT_EQ(disk->node, "node-a");
  EXPECT_EQ(disk->claims.at("uid-1"), *record);
}

TEST_F(PrepareTest, PrepareIsIdempotentAndUnprepareRemovesEverything) {
  std::unique_ptr<Preparer> p = NewPreparer();
  ASSERT_TRUE(p->Prepare(Claim()).ok());
  ASSERT_TRUE(p->Prepare(Claim()).ok());
  EXPECT_EQ(driver_.prepares, 3);
  // A restarted preparer remembers too.
  std::unique_ptr<Preparer> restarted = NewPreparer();
  ASSERT_TRUE(restarted->Prepare(Claim()).ok());
  EXPECT_EQ(driver_.prepares, 3);
  ASSERT_TRUE(restarted->Unprepare("uid-1").ok());
  EXPECT_EQ(driver_.unprepares, 3);
  EXPECT_THAT(driver_.held, IsEmpty());
  EXPECT_THAT(CdiFiles(), IsEmpty());
  EXPECT_TRUE(restarted->checkpoint().claims.empty());
  EXPECT_TRUE(restarted->Unprepare("uid-1").ok());
  EXPECT_EQ(driver_.unprepares, 3);
}

TEST_F(PrepareTest, ReallocatedClaimIsPreparedAgain) {
  std::unique_ptr<Preparer> p = NewPreparer();
  ASSERT_TRUE(p->Prepare(Claim()).ok());
  ClaimToPrepare moved = Claim();
  moved.devices = {Dev("gpu", "gpu-7")};
  StatusOr<ClaimRecord> record = p->Prepare(moved);
  ASSERT_TRUE(record.ok());
  EXPECT_THAT(driver_.held, ElementsAre("gpu-7"));
  EXPECT_THAT(CdiFiles(), ElementsAre("fake.example.com_gpu_uid-1.json"));
}

TEST_F(PrepareTest, FailureRollsBackAndKeepsItsClass) {
  std::unique_ptr<Preparer> p = NewPreparer();
  driver_.fail_device = "nic-0";
  driver_.fail_status = UnavailableError("busy");
  StatusOr<ClaimRecord> record = p->Prepare(Claim());
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(ClassifyFailure(record.status()), FailureClass::kRetryable);
  EXPECT_THAT(record.status().message(), HasSubstr("prepare fake.example.com/nic-0: busy"));
  EXPECT_THAT(driver_.held, IsEmpty());
  EXPECT_TRUE(p->checkpoint().claims.empty());
  EXPECT_THAT(CdiFiles(), IsEmpty());

  driver_.fail_status = InvalidArgumentError("bad config");
  EXPECT_EQ(ClassifyFailure(p->Prepare(Claim()).status()), FailureClass::kTerminal);
}

TEST_F(PrepareTest, FailedRollbackNeedsCleanup) {
  std::unique_ptr<Preparer> p = NewPreparer();
  driver_.fail_device = "nic-0";
  driver_.fail_status = UnavailableError("busy");
  driver_.fail_unprepare = UnavailableError("stuck");
  StatusOr<ClaimRecord> record = p->Prepare(Claim());
  EXPECT_EQ(ClassifyFailure(record.status()), FailureClass::kNeedsCleanup);
  EXPECT_EQ(p->checkpoint().claims.at("uid-1").state, PrepareState::kStarted);
  driver_.fail_unprepare = Status::Ok();
  ASSERT_TRUE(p->Unprepare("uid-1").ok());
  EXPECT_THAT(driver_.held, IsEmpty());
  EXPECT_TRUE(p->checkpoint().claims.empty());
}

TEST_F(PrepareTest, RecoverCleansUpInterruptedPreparesAndOrphanedSpecs) {
  {
    std::unique_ptr<Preparer> p = NewPreparer();
    ASSERT_TRUE(p->Prepare(Claim()).ok());
  }
  // What a crash between "started" and "completed" leaves: a started record, a device the
  // driver holds, a spec written for it; plus a spec of ours for a claim nobody knows, and
  // another vendor's spec (a CDI dir such as /var/run/cdi is shared), which stays.
  Checkpoint cp = *LoadCheckpoint((dir_ / "checkpoint.json").string());
  cp.claims["uid-2"] = ClaimRecord{.namespace_ = "team-b",
                                   .name = "half",
                                   .state = PrepareState::kStarted,
                                   .devices = {{.request = "gpu",
                                                .driver = "fake.example.com",
                                                .pool = "node-a",
                                                .device = "gpu-5",
                                                .share_id = {},
                                                .cdi_device_ids = {},
                                                .network = {}}},
                                   .cdi_specs = {}};
  ASSERT_TRUE(SaveCheckpoint((dir_ / "checkpoint.json").string(), cp).ok());
  driver_.held.insert("gpu-5");
  std::ofstream(dir_ / "cdi/fake.example.com_gpu_uid-2.json") << "{}";
  std::ofstream(dir_ / "cdi/fake.example.com_gpu_uid-9.json") << "{}";
  std::ofstream(dir_ / "cdi/vendor.example.com_gpu.json") << "{}";
  std::unique_ptr<Preparer> restarted = NewPreparer();
  EXPECT_THAT(driver_.held, ElementsAre("gpu-0", "gpu-1", "nic-0"));
  EXPECT_THAT(CdiFiles(),
              ElementsAre("fake.example.com_gpu_uid-1.json", "fake.example.com_nic_uid-1.json",
                          "vendor.example.com_gpu.json"));
  EXPECT_EQ(restarted->checkpoint().claims.size(), 1u);
}

// The CDI directory spelled otherwise after a restart (a trailing slash here; relative then
// absolute, /var/run for /run): the live claim's specs are the same files and stay.
TEST_F(PrepareTest, RecoverKnowsSpecsByFileNameWhateverTheDirectorysSpelling) {
  {
    std::unique_ptr<Preparer> p = NewPreparer();
    ASSERT_TRUE(p->Prepare(Claim()).ok());
  }
  Preparer again(PreparerOptions{.state_dir = dir_.string(),
                                 .node_name = "node-a",
                                 .cdi_dir = (dir_ / "cdi").string() + "/"},
                 std::map<std::string, Driver*>{{"fake.example.com", &driver_}});
  ASSERT_TRUE(again.Recover().ok());
  EXPECT_THAT(CdiFiles(),
              ElementsAre("fake.example.com_gpu_uid-1.json", "fake.example.com_nic_uid-1.json"));
}

// A spec file gone from the CDI directory is written again by the next prepare instead of
// answering CDI IDs that resolve to nothing.
TEST_F(PrepareTest, PrepareWritesAMissingSpecAgain) {
  std::unique_ptr<Preparer> p = NewPreparer();
  StatusOr<ClaimRecord> first = p->Prepare(Claim());
  ASSERT_TRUE(first.ok());
  std::filesystem::remove(dir_ / "cdi/fake.example.com_gpu_uid-1.json");
  StatusOr<ClaimRecord> again = p->Prepare(Claim());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_THAT(CdiFiles(),
              ElementsAre("fake.example.com_gpu_uid-1.json", "fake.example.com_nic_uid-1.json"));
  EXPECT_EQ(again->devices[0].cdi_device_ids, first->devices[0].cdi_device_ids);
}

// Unprepare through one driver's call releases only a claim holding a device of that driver.
TEST_F(PrepareTest, UnprepareForADriverKeepsClaimsWithoutItsDevices) {
  std::unique_ptr<Preparer> p = NewPreparer();
  ASSERT_TRUE(p->Prepare(Claim()).ok());
  ASSERT_TRUE(p->Unprepare("uid-1", "other.example.com").ok());
  EXPECT_EQ(p->checkpoint().claims.size(), 1u);
  ASSERT_TRUE(p->Unprepare("uid-1", "fake.example.com").ok());
  EXPECT_TRUE(p->checkpoint().claims.empty());
  EXPECT_THAT(CdiFiles(), IsEmpty());
}

TEST_F(PrepareTest, RefusesAnotherNodesStateAndACorruptCheckpoint) {
  std::unique_ptr<Preparer> p = NewPreparer();
  Preparer other(PreparerOptions{.state_dir = dir_.string(), .node_name = "node-b"}, {});
  EXPECT_EQ(other.Recover().code(), StatusCode::kFailedPrecondition);
  std::ofstream(dir_ / "checkpoint.json") << "{\"version\": 1, \"claims\": [";
  Preparer corrupt(PreparerOptions{.state_dir = dir_.string(), .node_name = "node-a"}, {});
  Status s = corrupt.Recover();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("corrupt checkpoint"));
}

// A real kill: the child process dies inside the profile driver's prepare (crash fault); the
// parent restarts on the same state dir and finds nothing leaked and nothing prepared twice.
TEST_F(PrepareTest, KilledMidPrepareNeitherLeaksNorDoublePrepares) {
  // "fast": fork without re-executing, so the child works on this test's directory.
  GTEST_FLAG_SET(death_test_style, "fast");
  std::filesystem::create_directories(dir_);
  const std::string profile = (dir_ / "node.yaml").string();
  std::ofstream(profile) << R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
devices:
  gpus: [{count: 2, productName: GPU, architecture: Hopper, cudaComputeCapability: "9.0",
          driverVersion: "550.1", memory: 80Gi}]
faults:
- {device: gpu-1, prepare: crash}
)";
  ManualClock clock;
  auto run = [&](bool exits) {
    std::unique_ptr<ProfileDriver> driver =
        std::move(*ProfileDriver::Create({.node_name = "node-a",
                                          .profile_path = profile,
                                          .node = {},
                                          .clock = &clock,
                                          .state_dir = (dir_ / "state").string(),
                                          .crash_exits_process = exits}));
    Preparer p(PreparerOptions{.state_dir = (dir_ / "state").string(), .node_name = "node-a"},
               {{"gpu.nvidia.com", driver.get()}});
    EXPECT_TRUE(p.Recover().ok());
    ClaimToPrepare claim{.uid = "uid-9", .namespace_ = "ns", .name = "c", .devices = {}};
    for (const char* dev : {"gpu-0", "gpu-1"}) {
      claim.devices.push_back(AllocatedDevice{.request = "gpu",
                                              .driver = "gpu.nvidia.com",
                                              .pool = "node-a",
                                              .device = dev,
                                              .share_id = {},
                                              .admin_access = false,
                                              .config = {}});
    }
    StatusOr<ClaimRecord> record = p.Prepare(claim);
    return std::make_pair(record.ok(), driver->prepared());
  };
  EXPECT_EXIT(run(true), ::testing::ExitedWithCode(137), "simulated crash");
  // The crash left a started record and two devices held by the driver, no spec.
  StatusOr<Checkpoint> left = LoadCheckpoint((dir_ / "state/checkpoint.json").string());
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->claims.at("uid-9").state, PrepareState::kStarted);
  auto [ok, prepared] = run(false);
  EXPECT_TRUE(ok);
  ASSERT_EQ(prepared.size(), 2u);
  EXPECT_EQ(prepared.at("gpu.nvidia.com/gpu-0"), std::set<std::string>{"uid-9"});
  EXPECT_EQ(prepared.at("gpu.nvidia.com/gpu-1"), std::set<std::string>{"uid-9"});
  StatusOr<std::vector<std::string>> specs = internal::ListFiles((dir_ / "state/cdi").string());
  EXPECT_THAT(*specs, ElementsAre("gpu.nvidia.com_gpu_uid-9.json"));
  EXPECT_EQ(LoadCheckpoint((dir_ / "state/checkpoint.json").string())->claims.at("uid-9").state,
            PrepareState::kCompleted);
}

}  // namespace
}  // namespace draplane::agent

namespace draplane::agent {
namespace {

TEST(CheckpointTest, RoundTripsEveryField) {
  Checkpoint cp;
  cp.node = "n";
  api::resourcev1::NetworkDeviceData net;
  net.interface_name = "net0";
  net.ips = {"10.1.2.3/16"};
  net.hardware_address = "02:00:00:00:00:01";
  cp.claims["u"] = ClaimRecord{.namespace_ = "ns",
                               .name = "c",
                               .state = PrepareState::kCompleted,
                               .devices = {{.request = "r/s",
                                            .driver = "d.example.com",
                                            .pool = "n",
                                            .device = "x",
                                            .share_id = "4c1e6b0e-8a5f-4a51-9b5c-0c1f5d7a9e21",
                                            .cdi_device_ids = {"d.example.com/nic=u-x"},
                                            .network = net}},
                               .cdi_specs = {"/s/cdi/a.json"}};
  StatusOr<Checkpoint> back = ParseCheckpoint(CheckpointJson(cp));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, cp);
  EXPECT_FALSE(ParseCheckpoint(R"({"version": 2})").ok());
  EXPECT_FALSE(ParseCheckpoint(R"({"version": 1, "claims": {"u": {"state": "Half"}}})").ok());
}

TEST(CdiTest, RequestEnvNames) {
  EXPECT_EQ(RequestEnvName("gpu"), "DRA_DEVICE_GPU");
  EXPECT_EQ(RequestEnvName("gpu/h100-80gb"), "DRA_DEVICE_GPU_H100_80GB");
  EXPECT_EQ(CdiSpecFileName("gpu.nvidia.com/mig", "u1"), "gpu.nvidia.com_mig_u1.json");
}

}  // namespace
}  // namespace draplane::agent
