#include "cli/explain_claim.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/gen/draplane_v1alpha1_codec.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::cli {
namespace {

namespace d = api::draplanev1alpha1;

template <typename T>
T Parse(std::string_view json) {
  T out;
  api::FieldErrorList errors;
  Decode(boost::json::parse(json), &out, &errors);
  EXPECT_TRUE(errors.empty());
  return out;
}

d::AllocationDecision Decision(const std::string& name, const std::string& time,
                               const std::string& claims_json) {
  return Parse<d::AllocationDecision>(
      R"({"apiVersion":"draplane.dev/v1alpha1","kind":"AllocationDecision","metadata":{"name":")" +
      name + R"(","namespace":"team-a"},"spec":{"schemaVersion":1,"time":")" + time +
      R"(","pod":{"name":"llm-3","uid":"p-1"},"outcome":"Allocated","nodeName":"a100-04",)"
      R"("nodesEvaluated":42,"nodesFeasible":9,"scheduler":{"name":"default-scheduler",)"
      R"("instance":"sched-0"},"claims":)" +
      claims_json +
      R"(,"policyVersion":{"digest":"7f3c","inputs":[{"apiVersion":"v1","kind":"ResourceQuota",)"
      R"("namespace":"team-a","name":"devices","resourceVersion":"9101","mode":"Allocation"}]}}})");
}

const char kGpuClaims[] =
    R"([{"name":"llm-3-gpu","uid":"c-1","requests":[{"name":"gpu","subrequest":"a100-pair",)"
    R"("deviceClassName":"a100","devices":[{"driver":"gpu.nvidia.com","pool":"a100-04",)"
    R"("device":"gpu-2"},{"driver":"gpu.nvidia.com","pool":"a100-04","device":"gpu-3"}],)"
    R"("tiersNotTaken":[{"subrequest":"h100","reasons":[{"reason":"quota","message":)"
    R"("quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1","nodes":["h100-01",)"
    R"("h100-02"],"nodeCount":14}]}]}],"charges":{"a100.deviceclass.resource.k8s.io/devices":"2"}},)"
    R"({"name":"llm-3-nic","uid":"c-2"}])";

api::resourcev1::ResourceClaim Claim() {
  return Parse<api::resourcev1::ResourceClaim>(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"llm-3-gpu",)"
      R"("namespace":"team-a","uid":"c-1","ownerReferences":[{"apiVersion":"v1","kind":"Pod",)"
      R"("name":"llm-3","uid":"p-1"}]},"status":{"allocation":{"devices":{"results":[)"
      R"({"request":"gpu/a100-pair","driver":"gpu.nvidia.com","pool":"a100-04","device":"gpu-2"},)"
      R"({"request":"gpu/a100-pair","driver":"gpu.nvidia.com","pool":"a100-04","device":"gpu-3"}]}},)"
      R"("reservedFor":[{"resource":"pods","name":"llm-3","uid":"p-1"}]}})");
}

TEST(ExplainClaimTest, FindsTheRecordsNamingTheClaimNewestFirst) {
  std::vector<d::AllocationDecision> all = {
      Decision("old", "2026-12-01T10:00:00.000000Z", kGpuClaims),
      Decision("other", "2026-12-01T11:00:00.000000Z",
               R"([{"name":"llm-3-gpu","uid":"another-claim-same-name"}])"),
      Decision("new", "2026-12-01T12:00:00.000000Z", kGpuClaims),
      Decision("new", "2026-12-01T12:00:00.000000Z", kGpuClaims),  // listed twice
  };
  std::vector<d::AllocationDecision> found = DecisionsForClaim(Claim(), all);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].metadata.name, "new");
  EXPECT_EQ(found[1].metadata.name, "old");
}

TEST(ExplainClaimTest, TextSaysWhatWasChosenAndWhy) {
  std::string text =
      DecisionText(Decision("llm-3-p-1", "2026-12-01T10:02:03.114000Z", kGpuClaims), Claim());
  EXPECT_EQ(text,
            "Claim team-a/llm-3-gpu (uid c-1)\n"
            "Decision team-a/llm-3-p-1 at 2026-12-01T10:02:03.114000Z by default-scheduler, "
            "replica sched-0\n"
            "  Pod:       llm-3 (uid p-1)\n"
            "  Outcome:   Allocated on node a100-04, 9 feasible of 42 nodes evaluated\n"
            "  Request gpu:\n"
            "    chosen:    subrequest a100-pair (class a100)\n"
            "    devices:   gpu.nvidia.com/a100-04/gpu-2, gpu.nvidia.com/a100-04/gpu-3\n"
            "    not taken: subrequest h100\n"
            "      quota: quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1 "
            "(14 nodes: h100-01, h100-02, ...)\n"
            "  Charged:   a100.deviceclass.resource.k8s.io/devices=2\n"
            "  Policy:    ResourceQuota team-a/devices at resourceVersion 9101 (Allocation)\n"
            "  Digest:    7f3c\n"
            "  Also in this decision: llm-3-nic\n");
}

// A record is history: one that no longer describes the claim says so, rather than reading as
// the claim's state (a deallocated claim's devices and charges were given back).
TEST(ExplainClaimTest, TextSaysWhenTheClaimNoLongerHasTheDecidedDevices) {
  const d::AllocationDecision decision =
      Decision("llm-3-p-1", "2026-12-01T10:02:03.114000Z", kGpuClaims);
  api::resourcev1::ResourceClaim deallocated = Claim();
  deallocated.status.allocation.reset();
  deallocated.status.reserved_for.clear();
  EXPECT_NE(DecisionText(decision, deallocated)
                .find("  Outcome:   Allocated on node a100-04, 9 feasible of 42 nodes evaluated\n"
                      "  Now:       not allocated (deallocated since: the devices and charges "
                      "below were given back)\n"),
            std::string::npos);
  api::resourcev1::ResourceClaim moved = Claim();
  moved.status.allocation->devices.results[1].device = "gpu-5";
  EXPECT_NE(DecisionText(decision, moved).find("  Now:       allocated differently"),
            std::string::npos);
  EXPECT_EQ(DecisionText(decision, Claim()).find("Now:"), std::string::npos);
}

TEST(ExplainClaimTest, ThePodsOfAClaimComeFromReservationsAndOwners) {
  EXPECT_EQ(ClaimPods(Claim()),
            (std::vector<std::pair<std::string, std::string>>{{"llm-3", "p-1"}}));
}

}  // namespace
}  // namespace draplane::cli
