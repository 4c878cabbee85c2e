#include "api/quota/usage.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "api/codec/yaml.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::api::quota {
namespace {

// tests/data/quota/resource_claims.yaml: upstream's evaluator cases.
const boost::json::object& UpstreamCases() {
  static const boost::json::object* cases = [] {
    std::ifstream in(std::string(DRAPLANE_SOURCE_DIR) + "/tests/data/quota/resource_claims.yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto docs = codec::ParseYaml(text.str());
    if (!docs.ok() || docs->empty() || !(*docs)[0].value.is_object()) {
      return new boost::json::object();
    }
    return new boost::json::object((*docs)[0].value.get_object());
  }();
  return *cases;
}

std::vector<std::string> CaseNames(std::string_view section) {
  std::vector<std::string> names;
  const boost::json::value* list = UpstreamCases().if_contains(section);
  if (list == nullptr || !list->is_array()) return names;
  for (const boost::json::value& c : list->get_array()) {
    names.emplace_back(c.at("name").as_string());
  }
  return names;
}

const boost::json::object& Case(std::string_view section, const std::string& name) {
  for (const boost::json::value& c : UpstreamCases().at(section).as_array()) {
    if (c.at("name").as_string() == name) return c.as_object();
  }
  static const boost::json::object empty;
  return empty;
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string out;
  for (char c : info.param) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

class UsageCase : public testing::TestWithParam<std::string> {};

TEST_P(UsageCase, EqualsUpstream) {
  const boost::json::object& c = Case("usage", GetParam());
  boost::json::object claim_json;
  claim_json["apiVersion"] = "resource.k8s.io/v1";
  claim_json["kind"] = "ResourceClaim";
  claim_json["metadata"] = boost::json::object{{"name", "foo"}, {"namespace", "ns"}};
  claim_json["spec"] = c.at("spec");
  resourcev1::ResourceClaim claim;
  FieldErrorList errors;
  Decode(boost::json::value(claim_json), &claim, &errors);
  ASSERT_TRUE(errors.empty()) << errors.front().ToString();

  ResourceList want;
  for (const auto& [name, value] : c.at("usage").as_object()) {
    StatusOr<Quantity> q = Quantity::Parse(std::string(value.as_string()));
    ASSERT_TRUE(q.ok());
    want.emplace(std::string(name), *q);
  }
  ResourceList got = ResourceClaimUsage(claim);
  EXPECT_EQ(PrettyPrint(got), PrettyPrint(want));
}
INSTANTIATE_TEST_SUITE_P(QuotaUpstreamCases, UsageCase, testing::ValuesIn(CaseNames("usage")),
                         TestName);

class MatchingResourcesCase : public testing::TestWithParam<std::string> {};

TEST_P(MatchingResourcesCase, EqualsUpstream) {
  const boost::json::object& c = Case("matchingResources", GetParam());
  std::vector<std::string> got, want;
  for (const boost::json::value& item : c.at("items").as_array()) {
    if (ResourceClaimEvaluatorMatches(item.as_string())) got.emplace_back(item.as_string());
    EXPECT_EQ(ResourceClaimEvaluatorMatches(item.as_string()),
              EvaluatorMatches("resource.k8s.io", "resourceclaims", item.as_string()));
  }
  for (const boost::json::value& item : c.at("want").as_array())
    want.emplace_back(item.as_string());
  EXPECT_EQ(got, want);
}
INSTANTIATE_TEST_SUITE_P(QuotaUpstreamCases, MatchingResourcesCase,
                         testing::ValuesIn(CaseNames("matchingResources")), TestName);

class HandlesCase : public testing::TestWithParam<std::string> {};

TEST_P(HandlesCase, EqualsUpstream) {
  const boost::json::object& c = Case("handles", GetParam());
  std::string_view op_name = c.at("operation").as_string();
  Operation op = op_name == "Create"   ? Operation::kCreate
                 : op_name == "Update" ? Operation::kUpdate
                 : op_name == "Delete" ? Operation::kDelete
                                       : Operation::kConnect;
  EXPECT_EQ(Handles("resource.k8s.io", "resourceclaims", op, c.at("subresource").as_string()),
            c.at("want").as_bool());
}
INSTANTIATE_TEST_SUITE_P(QuotaUpstreamCases, HandlesCase, testing::ValuesIn(CaseNames("handles")),
                         TestName);

TEST(QuotaUpstreamCasesTest, FileHasEveryUpstreamCase) {
  // resource_claims_test.go: 10 usage cases, 2 matching-resources cases, 6 handles cases.
  EXPECT_EQ(CaseNames("usage").size(), 10u);
  EXPECT_EQ(CaseNames("matchingResources").size(), 2u);
  EXPECT_EQ(CaseNames("handles").size(), 6u);
}

corev1::Pod PodFromJson(std::string_view json) {
  corev1::Pod pod;
  FieldErrorList errors;
  Decode(boost::json::parse(json), &pod, &errors);
  EXPECT_TRUE(errors.empty());
  return pod;
}

TEST(PodUsageTest, ChargesRequestsLimitsInitContainersAndOverhead) {
  corev1::Pod pod = PodFromJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"containers":[
      {"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"2"}}},
      {"name":"b","resources":{"limits":{"memory":"1Gi","example.com/fpga":"1"}}}],
     "initContainers":[
      {"name":"big","resources":{"requests":{"cpu":"3"}}},
      {"name":"side","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}}],
     "overhead":{"cpu":"100m"}}})");
  ResourceList usage = PodUsage(pod, Timestamp());
  EXPECT_EQ(PrettyPrint(usage),
            "count/pods=1,cpu=3100m,limits.cpu=2100m,limits.memory=1Gi,memory=2Gi,pods=1,"
            "requests.cpu=3100m,"
            "requests.example.com/fpga=1,requests.memory=2Gi");
}

TEST(PodUsageTest, TerminalPodsOnlyCountAsObjects) {
  corev1::Pod pod = PodFromJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},
    "status":{"phase":"Succeeded"}})");
  EXPECT_EQ(PrettyPrint(PodUsage(pod, Timestamp())), "count/pods=1");
}

TEST(PodUsageTest, PodsStuckTerminatingPastTheirGracePeriodStopCounting) {
  corev1::Pod pod = PodFromJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
    "deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":30},
    "spec":{"containers":[{"name":"a"}]}})");
  Timestamp deleted = pod.metadata.deletion_timestamp->ToTimestamp();
  EXPECT_EQ(PrettyPrint(PodUsage(pod, deleted + std::chrono::seconds(10))), "count/pods=1,pods=1");
  EXPECT_EQ(PrettyPrint(PodUsage(pod, deleted + std::chrono::seconds(31))), "count/pods=1");
}

corev1::ResourceQuota QuotaFromJson(std::string_view json) {
  corev1::ResourceQuota quota;
  FieldErrorList errors;
  Decode(boost::json::parse(json), &quota, &errors);
  EXPECT_TRUE(errors.empty());
  return quota;
}

TEST(QuotaMatchesTest, ScopesMatchPodsOnlyAndHardKeysChooseTheEvaluator) {
  corev1::ResourceQuota scoped = QuotaFromJson(R"({"metadata":{"name":"q"},
    "spec":{"hard":{"pods":"1","count/resourceclaims.resource.k8s.io":"1"},
            "scopes":["BestEffort"]}})");
  corev1::ResourceQuota plain = QuotaFromJson(R"({"metadata":{"name":"q"},
    "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"1"}}})");
  corev1::Pod best_effort = PodFromJson(R"({"metadata":{"name":"p"},
    "spec":{"containers":[{"name":"a"}]}})");
  corev1::Pod burstable = PodFromJson(R"({"metadata":{"name":"p"},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}})");
  EXPECT_TRUE(QuotaMatches(scoped, "", "pods", &best_effort));
  EXPECT_FALSE(QuotaMatches(scoped, "", "pods", &burstable));
  EXPECT_FALSE(QuotaMatches(scoped, "resource.k8s.io", "resourceclaims", nullptr));
  EXPECT_TRUE(QuotaMatches(plain, "resource.k8s.io", "resourceclaims", nullptr));
  EXPECT_FALSE(QuotaMatches(plain, "", "pods", &best_effort));
}

TEST(QuotaMatchesTest, PriorityClassSelectorsFollowUpstream) {
  corev1::Pod high = PodFromJson(R"({"metadata":{"name":"p"},
    "spec":{"priorityClassName":"high","containers":[{"name":"a"}]}})");
  corev1::Pod none =
      PodFromJson(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]}})");
  auto requirement = [](std::string op, std::vector<std::string> values) {
    corev1::ScopedResourceSelectorRequirement r;
    r.scope_name = "PriorityClass";
    r.operator_ = std::move(op);
    r.values = std::move(values);
    return r;
  };
  corev1::ScopedResourceSelectorRequirement in = requirement("In", {"high"});
  corev1::ScopedResourceSelectorRequirement exists = requirement("Exists", {});
  corev1::ScopedResourceSelectorRequirement not_in = requirement("NotIn", {"high"});
  EXPECT_TRUE(PodMatchesScope(high, in));
  EXPECT_FALSE(PodMatchesScope(none, in));
  EXPECT_TRUE(PodMatchesScope(high, exists));
  EXPECT_FALSE(PodMatchesScope(none, exists));
  EXPECT_TRUE(PodMatchesScope(none, not_in));
}

TEST(QuotaKeysTest, NamesAndAllocationChargedKeys) {
  EXPECT_EQ(ObjectCountResourceName("", "pods"), "count/pods");
  EXPECT_EQ(ObjectCountResourceName("draplane.dev", "allocationdecisions"),
            "count/allocationdecisions.draplane.dev");
  EXPECT_EQ(DeviceClassResourceName("h100"), "h100.deviceclass.resource.k8s.io/devices");
  EXPECT_TRUE(IsAllocationChargedKey("h100.deviceclass.resource.k8s.io/devices"));
  EXPECT_TRUE(IsAllocationChargedKey("gpu.nvidia.com.driver.draplane.dev/counter.memory"));
  EXPECT_TRUE(IsAllocationChargedKey("mig.nvidia.com.deviceclass.draplane.dev/counter.memory"));
  EXPECT_TRUE(IsAllocationChargedKey("nic.deviceclass.draplane.dev/capacity.bandwidth"));
  EXPECT_FALSE(IsAllocationChargedKey("count/resourceclaims.resource.k8s.io"));
  EXPECT_FALSE(IsAllocationChargedKey("requests.cpu"));
  EXPECT_TRUE(EvaluatorMatches("", "resourcequotas", "resourcequotas"));
  EXPECT_TRUE(EvaluatorMatches("", "resourcequotas", "count/resourcequotas"));
  EXPECT_FALSE(EvaluatorMatches("", "resourcequotas", "count/pods"));
  EXPECT_TRUE(IsIgnoredResource("", "events"));
  EXPECT_TRUE(IsIgnoredResource("events.k8s.io", "events"));
  EXPECT_FALSE(IsIgnoredResource("", "pods"));
}

TEST(QuotaModeTest, OnlyAllocationSwitchesTheMode) {
  corev1::ResourceQuota quota;
  EXPECT_EQ(ModeOf(quota), DeviceQuotaMode::kAdmission);
  quota.metadata.annotations[std::string(kDeviceQuotaModeAnnotation)] = "Allocation";
  EXPECT_EQ(ModeOf(quota), DeviceQuotaMode::kAllocation);
  quota.metadata.annotations[std::string(kDeviceQuotaModeAnnotation)] = "Admission";
  EXPECT_EQ(ModeOf(quota), DeviceQuotaMode::kAdmission);
}

}  // namespace
}  // namespace draplane::api::quota
