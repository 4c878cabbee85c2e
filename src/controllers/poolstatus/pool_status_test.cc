// The pool status of KEP-5677: counts, partitionSummary, shareableSummary and validation errors
// computed by hand for small pools (a MIG-like GPU, a shared NIC), the request's validation, and
// the controller answering once through real informers over the in-memory API.
#include "controllers/poolstatus/pool_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "api/gen/resource_v1_codec.h"
#include "api/gen/resource_v1alpha3_codec.h"
#include "api/validation/pool_status_request_validation.h"
#include "client/memory_api.h"
#include "client/typed.h"
#include "common/random.h"
#include "controllers/poolstatus/controller.h"

namespace draplane::controllers {
namespace {

namespace rv1 = api::resourcev1;
namespace ra3 = api::resourcev1alpha3;
using ::testing::HasSubstr;
using ::testing::StartsWith;

template <typename T>
T Parse(std::string_view json) {
  T out;
  api::FieldErrorList errors;
  api::resourcev1::Decode(boost::json::parse(json), &out, &errors);
  EXPECT_TRUE(errors.empty()) << json;
  return out;
}
template <>
ra3::ResourcePoolStatusRequestSpec Parse(std::string_view json) {
  ra3::ResourcePoolStatusRequestSpec out;
  api::FieldErrorList errors;
  api::resourcev1alpha3::Decode(boost::json::parse(json), &out, &errors);
  EXPECT_TRUE(errors.empty()) << json;
  return out;
}

// One physical GPU offered whole (80Gi) or as two halves (40Gi each) from one counter set; the
// slice names the partition type attribute, the devices carry it by its bare name.
constexpr std::string_view kMigSlice = R"({
  "metadata": {"name": "n1-gpu"},
  "spec": {"driver": "gpu.example.com", "nodeName": "n1",
    "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
    "partitionTypeAttribute": "gpu.example.com/profile",
    "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
    "devices": [
      {"name": "full", "attributes": {"profile": {"string": "Full"}},
       "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]},
      {"name": "half-1", "attributes": {"profile": {"string": "Half"}},
       "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]},
      {"name": "half-2", "attributes": {"profile": {"string": "Half"}},
       "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]},
      {"name": "plain"}]}})";

// Two NICs that allow multiple allocations, 400G of bandwidth each.
constexpr std::string_view kNicSlice = R"({
  "metadata": {"name": "n2-nic"},
  "spec": {"driver": "nic.example.com", "nodeName": "n2",
    "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
    "devices": [
      {"name": "nic-0", "allowMultipleAllocations": true,
       "capacity": {"bandwidth": {"value": "400G"}}},
      {"name": "nic-1", "allowMultipleAllocations": true,
       "capacity": {"bandwidth": {"value": "400G"}}}]}})";

std::string Claim(const std::string& name, const std::string& driver, const std::string& pool,
                  const std::string& device, const std::string& extra = "") {
  return R"({"metadata": {"namespace": "team-a", "name": ")" + name + R"(", "uid": "uid-)" + name +
         R"("}, "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
      "status": {"allocation": {"devices": {"results": [{"request": "r", "driver": ")" +
         driver + R"(", "pool": ")" + pool + R"(", "device": ")" + device + "\"" + extra + "}]}}}}";
}

struct Fixture {
  std::vector<rv1::ResourceSlice> slices;
  std::vector<rv1::ResourceClaim> claims;
  std::vector<rv1::DeviceTaintRule> rules;
  poolstatus::Inputs inputs() const {
    poolstatus::Inputs in;
    for (const auto& s : slices) in.slices.push_back(&s);
    for (const auto& c : claims) in.claims.push_back(&c);
    for (const auto& r : rules) in.rules.push_back(&r);
    return in;
  }
};

TEST(PoolStatusTest, MigPartitionsCountHeldDevicesOnceAndFitTheCounters) {
  Fixture f;
  f.slices.push_back(Parse<rv1::ResourceSlice>(kMigSlice));
  f.claims.push_back(Parse<rv1::ResourceClaim>(Claim("a", "gpu.example.com", "n1", "half-1")));
  // Admin access observes without holding: it changes nothing.
  f.claims.push_back(Parse<rv1::ResourceClaim>(
      Claim("b", "gpu.example.com", "n1", "half-2", R"(, "adminAccess": true)")));
  poolstatus::Result r = poolstatus::Compute(
      Parse<ra3::ResourcePoolStatusRequestSpec>(R"({"driver": "gpu.example.com"})"), f.inputs());
  ASSERT_EQ(r.status.pools.size(), 1u);
  EXPECT_EQ(r.status.pool_count, 1);
  const ra3::PoolStatus& p = r.status.pools[0];
  EXPECT_EQ(p.node_name, "n1");
  EXPECT_EQ(p.resource_slice_count, 1);
  EXPECT_EQ(p.total_devices, 4);
  EXPECT_EQ(p.allocated_devices, 1);
  EXPECT_EQ(p.unavailable_devices, 0);
  EXPECT_EQ(p.available_devices, 3);
  EXPECT_FALSE(p.validation_error);
  EXPECT_FALSE(p.shareable_summary);
  // 40Gi left: no Full fits, one more Half does ("plain" consumes no counters: not a partition).
  ASSERT_EQ(p.partition_summary.size(), 2u);
  EXPECT_EQ(p.partition_summary[0].attribute, "gpu.example.com/profile");
  EXPECT_EQ(p.partition_summary[0].type, "Full");
  EXPECT_EQ(p.partition_summary[0].total, 1);
  EXPECT_EQ(p.partition_summary[0].allocatable, 0);
  EXPECT_EQ(p.partition_summary[1].type, "Half");
  EXPECT_EQ(p.partition_summary[1].total, 2);
  EXPECT_EQ(p.partition_summary[1].allocatable, 1);
  EXPECT_EQ(poolstatus::CompleteMessage(r), "Calculated status for 1 pools");
}

TEST(PoolStatusTest, TaintsFromSlicesAndRulesMakeDevicesUnavailable) {
  Fixture f;
  f.slices.push_back(Parse<rv1::ResourceSlice>(kMigSlice));
  f.slices[0].spec.devices[3].taints.push_back(
      Parse<rv1::DeviceTaint>(R"({"key": "k", "effect": "NoExecute"})"));
  f.rules.push_back(Parse<rv1::DeviceTaintRule>(R"({"metadata": {"name": "drain"}, "spec": {
      "deviceSelector": {"driver": "gpu.example.com", "pool": "n1", "device": "full"},
      "taint": {"key": "k", "effect": "NoSchedule"}}})"));
  // Effect None and a rule of another pool count for nothing.
  f.rules.push_back(Parse<rv1::DeviceTaintRule>(R"({"metadata": {"name": "dry"}, "spec": {
      "deviceSelector": {"driver": "gpu.example.com"}, "taint": {"key": "k", "effect": "None"}}})"));
  f.rules.push_back(Parse<rv1::DeviceTaintRule>(R"({"metadata": {"name": "other"}, "spec": {
      "deviceSelector": {"pool": "n9"}, "taint": {"key": "k", "effect": "NoExecute"}}})"));
  poolstatus::Result r = poolstatus::Compute(
      Parse<ra3::ResourcePoolStatusRequestSpec>(R"({"driver": "gpu.example.com"})"), f.inputs());
  ASSERT_EQ(r.status.pools.size(), 1u);
  EXPECT_EQ(r.status.pools[0].unavailable_devices, 2);
  EXPECT_EQ(r.status.pools[0].available_devices, 2);
}

TEST(PoolStatusTest, SharedNicSumsCapacityAndCountsHeldDevicesOnce) {
  Fixture f;
  f.slices.push_back(Parse<rv1::ResourceSlice>(kNicSlice));
  for (auto [name, amount] : {std::pair{"a", "10G"}, {"b", "25G"}}) {
    f.claims.push_back(Parse<rv1::ResourceClaim>(
        Claim(name, "nic.example.com", "n2", "nic-0",
              std::string(R"(, "consumedCapacity": {"bandwidth": ")") + amount + "\"}")));
  }
  f.claims[0].status.allocation->devices.results[0].share_id =
      "6d4b5a0e-0000-4000-8000-000000000001";
  f.claims[1].status.allocation->devices.results[0].share_id =
      "6d4b5a0e-0000-4000-8000-000000000002";
  poolstatus::Result r = poolstatus::Compute(
      Parse<ra3::ResourcePoolStatusRequestSpec>(R"({"driver": "nic.example.com"})"), f.inputs());
  ASSERT_EQ(r.status.pools.size(), 1u);
  const ra3::PoolStatus& p = r.status.pools[0];
  EXPECT_EQ(p.total_devices, 2);
  EXPECT_EQ(p.allocated_devices, 1);  // two shares of nic-0: one device
  EXPECT_EQ(p.available_devices, 1);
  EXPECT_TRUE(p.partition_summary.empty());
  ASSERT_TRUE(p.shareable_summary);
  EXPECT_EQ(p.shareable_summary->fully_available_devices, 1);
  EXPECT_EQ(p.shareable_summary->partially_available_devices, 1);
  ASSERT_EQ(p.shareable_summary->capacity.size(), 1u);
  const ra3::ShareableCapacityStatus& c = p.shareable_summary->capacity[0];
  EXPECT_EQ(c.name, "bandwidth");
  EXPECT_EQ(c.total->ToString(), "800G");
  EXPECT_EQ(c.consumed->ToString(), "35G");
  EXPECT_EQ(c.available->ToString(), "765G");
}

TEST(PoolStatusTest, IncompletePoolsOldGenerationsLimitAndOrder) {
  Fixture f;
  for (std::string pool : {"p3", "p1", "p2"}) {
    f.slices.push_back(Parse<rv1::ResourceSlice>(R"({"metadata": {"name": ")" + pool +
                                                 R"(-a"}, "spec": {"driver": "d.example.com",
        "nodeName": "x", "pool": {"name": ")" + pool +
                                                 R"(", "generation": 2,
        "resourceSliceCount": 1}, "devices": [{"name": "a"}, {"name": "b"}]}})"));
  }
  // An older generation of p1 is ignored; p2 declares a second slice not published yet.
  f.slices.push_back(Parse<rv1::ResourceSlice>(R"({"metadata": {"name": "p1-old"}, "spec": {
      "driver": "d.example.com", "pool": {"name": "p1", "generation": 1, "resourceSliceCount": 1},
      "devices": [{"name": "z"}]}})"));
  f.slices[2].spec.pool.resource_slice_count = 2;
  auto spec =
      Parse<ra3::ResourcePoolStatusRequestSpec>(R"({"driver": "d.example.com", "limit": 2})");
  poolstatus::Result r = poolstatus::Compute(spec, f.inputs());
  EXPECT_EQ(r.status.pool_count, 3);
  EXPECT_EQ(r.incomplete, 1);
  ASSERT_EQ(r.status.pools.size(), 2u);
  EXPECT_EQ(r.status.pools[0].pool_name, "p1");
  EXPECT_EQ(r.status.pools[0].total_devices, 2);
  EXPECT_EQ(r.status.pools[0].generation, 2);
  EXPECT_EQ(r.status.pools[1].pool_name, "p2");
  EXPECT_FALSE(r.status.pools[1].total_devices);
  EXPECT_THAT(r.status.pools[1].validation_error.value_or(""),
              StartsWith("PoolIncomplete: pool d.example.com/p2 is incomplete: observed 1/2"));
  spec.pool_name = "p3";
  r = poolstatus::Compute(spec, f.inputs());
  EXPECT_EQ(r.status.pool_count, 1);
  EXPECT_EQ(r.incomplete, 0);
}

TEST(PoolStatusTest, PartitionErrorsKeepTheCounts) {
  Fixture f;
  f.slices.push_back(Parse<rv1::ResourceSlice>(kMigSlice));
  // No attribute declared: only the request's default groups, and "missing" lacks it.
  f.slices[0].spec.partition_type_attribute.reset();
  auto spec = Parse<ra3::ResourcePoolStatusRequestSpec>(R"({"driver": "gpu.example.com"})");
  EXPECT_TRUE(poolstatus::Compute(spec, f.inputs()).status.pools[0].partition_summary.empty());
  spec.default_partition_type_attribute = "gpu.example.com/profile";
  EXPECT_EQ(poolstatus::Compute(spec, f.inputs()).status.pools[0].partition_summary.size(), 2u);
  f.slices[0].spec.devices[2].consumes_counters[0].counters["memory"].value =
      api::Quantity::Parse("20Gi").value();
  poolstatus::Result r = poolstatus::Compute(spec, f.inputs());
  const ra3::PoolStatus& p = r.status.pools[0];
  EXPECT_THAT(p.validation_error.value_or(""), StartsWith("PartitionCostMismatch: device half-2"));
  EXPECT_TRUE(p.partition_summary.empty());
  EXPECT_EQ(p.total_devices, 4);
  EXPECT_EQ(r.errors, 1);
  EXPECT_EQ(poolstatus::CompleteMessage(r), "Calculated status for 1 pools (1 incomplete)");
  f.slices[0].spec.devices[2].attributes.clear();
  EXPECT_THAT(poolstatus::Compute(spec, f.inputs()).status.pools[0].validation_error.value_or(""),
              StartsWith("PartitionTypeMissing: device half-2"));
}

TEST(PoolStatusRequestValidationTest, SpecLimitsAndWriteOnceStatus) {
  namespace v = api::validation;
  ra3::ResourcePoolStatusRequest req;
  req.metadata.name = "check";
  req.spec.driver = "gpu.example.com";
  v::SetDefaults(&req);
  EXPECT_EQ(req.spec.limit, 100);
  EXPECT_TRUE(v::ValidateResourcePoolStatusRequest(req).empty());
  auto first = [](const api::FieldErrorList& errs) {
    return errs.empty() ? std::string() : errs[0].ToString();
  };
  ra3::ResourcePoolStatusRequest bad = req;
  bad.spec.driver.clear();
  EXPECT_EQ(first(v::ValidateResourcePoolStatusRequest(bad)), "spec.driver: Required value");
  bad = req;
  bad.spec.limit = 1001;
  EXPECT_THAT(first(v::ValidateResourcePoolStatusRequest(bad)),
              HasSubstr("spec.limit: Invalid value: 1001: must be less than or equal to 1000"));
  bad.spec.limit = 0;
  EXPECT_THAT(first(v::ValidateResourcePoolStatusRequest(bad)),
              HasSubstr("must be greater than or equal to 1"));
  bad = req;
  bad.spec.pool_name = "no pool!";
  EXPECT_THAT(first(v::ValidateResourcePoolStatusRequest(bad)), HasSubstr("spec.poolName"));
  bad = req;
  bad.spec.driver = "other.example.com";
  bad.metadata.resource_version = req.metadata.resource_version = "1";
  EXPECT_THAT(first(v::ValidateResourcePoolStatusRequestUpdate(bad, req)),
              HasSubstr("spec: Invalid value"));

  ra3::ResourcePoolStatusRequest answered = req;
  answered.status.emplace();
  answered.status->pool_count = 0;
  EXPECT_TRUE(v::ValidateResourcePoolStatusRequestStatusUpdate(answered, req).empty());
  ra3::ResourcePoolStatusRequest again = answered;
  again.status->pool_count = 1;
  EXPECT_THAT(first(v::ValidateResourcePoolStatusRequestStatusUpdate(again, answered)),
              HasSubstr("status: Invalid value: null: field is immutable"));
  again = answered;
  again.status->pools.resize(1);
  again.status->pools[0].driver = "gpu.example.com";
  again.status->pools[0].pool_name = "n1";
  again.status->pools[0].total_devices = -1;
  again.status->pools[0].validation_error = std::string(257, 'x');
  api::FieldErrorList errs = v::ValidateResourcePoolStatusRequestStatusUpdate(again, req);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0].ToString(), HasSubstr("status.pools[0].totalDevices"));
  EXPECT_THAT(errs[1].ToString(), HasSubstr("status.pools[0].validationError: Too long"));
}

// The controller through real informers: answers once, retries an incomplete pool, and sweeps.
class PoolStatusControllerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    informers_.Stop();
    controller_.reset();
  }
  void Start() {
    controller_ = std::make_unique<PoolStatusController>(api_, informers_, clock_);
    informers_.Start();
    ASSERT_TRUE(informers_.WaitForSync());
  }
  // Waits (a guard against hangs, no timing assumed) until the informer shows `pred`.
  template <typename T, typename P>
  void WaitFor(P pred) {
    auto& informer = informers_.Get<T>();
    for (int i = 0; i < 60000; ++i) {
      if (pred(informer)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL() << "timed out";
  }
  ManualClock clock_;
  std::unique_ptr<Random> random_ = NewSeededRandom(5677);
  client::MemoryApi api_{clock_, *random_};
  client::SharedInformers informers_{api_};
  std::unique_ptr<PoolStatusController> controller_;
};

TEST_F(PoolStatusControllerTest, AnswersOnceAndKeepsTheAnswer) {
  ASSERT_TRUE(client::Create(api_, Parse<rv1::ResourceSlice>(kMigSlice)).ok());
  // A claim is created without status; its allocation is written as the scheduler writes it.
  rv1::ResourceClaim claim = Parse<rv1::ResourceClaim>(Claim("a", "gpu.example.com", "n1", "full"));
  StatusOr<rv1::ResourceClaim> created = client::Create(api_, claim);
  ASSERT_TRUE(created.ok());
  created->status = claim.status;
  ASSERT_TRUE(client::UpdateStatus(api_, *created).ok());
  ra3::ResourcePoolStatusRequest req;
  req.metadata.name = "check";
  req.spec.driver = "gpu.example.com";
  ASSERT_TRUE(client::Create(api_, req).ok());
  Start();
  ASSERT_TRUE(controller_->Sync("check").ok());
  StatusOr<ra3::ResourcePoolStatusRequest> got =
      client::Get<ra3::ResourcePoolStatusRequest>(api_, "", "check");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->status);
  ASSERT_EQ(got->status->pools.size(), 1u);
  EXPECT_EQ(got->status->pools[0].allocated_devices, 1);
  ASSERT_EQ(got->status->conditions.size(), 1u);
  EXPECT_EQ(got->status->conditions[0].type, "Complete");
  EXPECT_EQ(got->status->conditions[0].reason, "CalculationComplete");
  EXPECT_EQ(got->status->conditions[0].message, "Calculated status for 1 pools");
  // A later change is not reflected: the answer is a snapshot.
  WaitFor<ra3::ResourcePoolStatusRequest>([](auto& inf) {
    auto r = inf.Get("", "check");
    return r && r->status;
  });
  ASSERT_TRUE(client::Delete<rv1::ResourceClaim>(api_, "team-a", "a").ok());
  ASSERT_TRUE(controller_->Sync("check").ok());
  EXPECT_EQ(client::Get<ra3::ResourcePoolStatusRequest>(api_, "", "check")
                ->status->pools[0]
                .allocated_devices,
            1);
  // The sweep deletes it an hour after completion.
  clock_.Advance(std::chrono::minutes(61));
  ASSERT_TRUE(controller_->Sync(":cleanup").ok());
  EXPECT_EQ(client::Get<ra3::ResourcePoolStatusRequest>(api_, "", "check").status().code(),
            StatusCode::kNotFound);
}

TEST_F(PoolStatusControllerTest, IncompletePoolIsNotAnswered) {
  rv1::ResourceSlice slice = Parse<rv1::ResourceSlice>(kMigSlice);
  slice.spec.pool.resource_slice_count = 2;
  ASSERT_TRUE(client::Create(api_, slice).ok());
  ra3::ResourcePoolStatusRequest req;
  req.metadata.name = "check";
  req.spec.driver = "gpu.example.com";
  ASSERT_TRUE(client::Create(api_, req).ok());
  Start();
  Status s = controller_->Sync("check");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.ToString(), HasSubstr("1 pool(s) of driver gpu.example.com are incomplete"));
  EXPECT_FALSE(client::Get<ra3::ResourcePoolStatusRequest>(api_, "", "check")->status);
}

}  // namespace
}  // namespace draplane::controllers
