#include "api/resource_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/pod_claims.h"
#include "api/resource_pool.h"

namespace draplane::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

corev1::Pod PodWithClaims() {
  corev1::Pod pod;
  pod.metadata.name = "train";
  pod.metadata.namespace_ = "team-a";
  corev1::Container main;
  main.name = "main";
  main.resources.claims.push_back({.name = "gpus", .request = "big", .unknown = {}, .present = 0});
  main.resources.claims.push_back({.name = "net", .request = "", .unknown = {}, .present = 0});
  corev1::Container side;
  side.name = "side";
  pod.spec.containers = {main, side};
  corev1::PodResourceClaim gpus;
  gpus.name = "gpus";
  gpus.resource_claim_template_name = "two-gpus";
  corev1::PodResourceClaim net;
  net.name = "net";
  net.resource_claim_name = "shared-net";
  pod.spec.resource_claims = {gpus, net};
  return pod;
}

resourcev1::DeviceRequestAllocationResult Result(std::string request, std::string device) {
  resourcev1::DeviceRequestAllocationResult r;
  r.request = std::move(request);
  r.driver = "gpu.nvidia.com";
  r.pool = "node-a";
  r.device = std::move(device);
  return r;
}

TEST(PodClaimsTest, ResolvesNamedGeneratedAndExtendedResourceClaims) {
  corev1::Pod pod = PodWithClaims();
  EXPECT_EQ(ResolvePodClaims(pod).status().code(), StatusCode::kNotFound);
  corev1::PodResourceClaimStatus generated;
  generated.name = "gpus";
  generated.resource_claim_name = "train-gpus-x7k2p";
  pod.status.resource_claim_statuses.push_back(generated);
  pod.status.extended_resource_claim_status.emplace();
  pod.status.extended_resource_claim_status->resource_claim_name = "train-extended-resources-abcde";
  StatusOr<std::vector<PodClaimRef>> refs = ResolvePodClaims(pod);
  ASSERT_TRUE(refs.ok());
  ASSERT_EQ(refs->size(), 3u);
  EXPECT_EQ((*refs)[0].entry, "gpus");
  EXPECT_EQ((*refs)[0].claim, "train-gpus-x7k2p");
  EXPECT_EQ((*refs)[1].claim, "shared-net");
  EXPECT_EQ((*refs)[2].entry, "");
  EXPECT_EQ((*refs)[2].claim, "train-extended-resources-abcde");
}

TEST(ResourceHealthTest, ListsEachContainerReferencesDevicesWithTheirHealth) {
  corev1::Pod pod = PodWithClaims();
  resourcev1::ResourceClaim gpus;
  gpus.status.allocation.emplace();
  gpus.status.allocation->devices.results = {Result("big/h100", "gpu-0"),
                                             Result("big/h100", "gpu-1"), Result("small", "gpu-2")};
  resourcev1::ResourceClaim net;
  net.status.allocation.emplace();
  net.status.allocation->devices.results = {Result("nic", "nic-0")};
  std::map<std::string, boost::json::array> health =
      AllocatedResourcesStatus(pod, {{"gpus", &gpus}, {"net", &net}},
                               [](std::string_view, std::string_view, std::string_view device) {
                                 return device == "gpu-1" ? kResourceUnhealthy : kResourceHealthy;
                               });
  ASSERT_EQ(health.size(), 1u);  // the side container uses no claim
  EXPECT_EQ(boost::json::serialize(health["main"]),
            R"([{"name":"claim:gpus/big","resources":[)"
            R"({"resourceID":"gpu.nvidia.com/node-a/gpu-0","health":"Healthy"},)"
            R"({"resourceID":"gpu.nvidia.com/node-a/gpu-1","health":"Unhealthy"}]},)"
            R"({"name":"claim:net","resources":[)"
            R"({"resourceID":"gpu.nvidia.com/node-a/nic-0","health":"Healthy"}]}])");

  boost::json::array statuses =
      boost::json::parse(
          R"([{"name":"main","ready":true},{"name":"side","allocatedResourcesStatus":[]}])")
          .as_array();
  EXPECT_TRUE(SetAllocatedResourcesStatus(statuses, health));
  EXPECT_EQ(statuses[0].at("allocatedResourcesStatus"), boost::json::value(health["main"]));
  EXPECT_FALSE(statuses[1].as_object().contains("allocatedResourcesStatus"));
  EXPECT_FALSE(SetAllocatedResourcesStatus(statuses, health));  // nothing left to change
}

// Two shares of one shared device (two requests of one claim, consumable capacity) are one
// resourceID: listed once, so that the status the API server validates has no duplicate.
TEST(ResourceHealthTest, SharesOfOneDeviceAreListedOnce) {
  corev1::Pod pod = PodWithClaims();
  pod.spec.containers[0].resources.claims = {
      {.name = "net", .request = "", .unknown = {}, .present = 0}};
  resourcev1::ResourceClaim net;
  net.status.allocation.emplace();
  resourcev1::DeviceRequestAllocationResult a = Result("a", "nic-0");
  a.share_id = "0d7a";
  resourcev1::DeviceRequestAllocationResult b = Result("b", "nic-0");
  b.share_id = "9fb9";
  net.status.allocation->devices.results = {a, b, Result("c", "nic-1")};
  std::map<std::string, boost::json::array> health = AllocatedResourcesStatus(
      pod, {{"net", &net}},
      [](std::string_view, std::string_view, std::string_view) { return kResourceHealthy; });
  EXPECT_EQ(boost::json::serialize(health["main"]),
            R"([{"name":"claim:net","resources":[)"
            R"({"resourceID":"gpu.nvidia.com/node-a/nic-0","health":"Healthy"},)"
            R"({"resourceID":"gpu.nvidia.com/node-a/nic-1","health":"Healthy"}]}])");
  boost::json::object json =
      boost::json::parse(R"({"spec":{"containers":[{"name":"main",)"
                         R"("resources":{"claims":[{"name":"net"}]}}]},)"
                         R"("status":{"containerStatuses":[{"name":"main"}]}})")
          .as_object();
  ASSERT_TRUE(SetAllocatedResourcesStatus(
      json["status"].as_object()["containerStatuses"].as_array(), health));
  EXPECT_THAT(ValidateAllocatedResourcesStatus(json), IsEmpty());
}

TEST(ResourceHealthTest, ValidatesNamesHealthAndUniqueIdsAsTheApiServerDoes) {
  boost::json::object pod = boost::json::parse(R"({
    "spec": {"containers": [{"name": "main", "resources": {
      "requests": {"example.com/gpu": "1"},
      "claims": [{"name": "gpus", "request": "big"}, {"name": "net"}]}}]},
    "status": {"containerStatuses": [{"name": "main", "allocatedResourcesStatus": [
      {"name": "claim:gpus/big", "resources": [
        {"resourceID": "gpu.nvidia.com/node-a/gpu-0", "health": "Healthy"}]},
      {"name": "claim:net", "resources": []},
      {"name": "example.com/gpu", "resources": [{"resourceID": "dev-1", "health": "Unknown"}]}
    ]}, {"name": "gone", "allocatedResourcesStatus": [{"name": "claim:x", "resources": []}]}]}
  })")
                                .as_object();
  EXPECT_THAT(ValidateAllocatedResourcesStatus(pod), IsEmpty());

  boost::json::array& entries = pod["status"]
                                    .as_object()["containerStatuses"]
                                    .as_array()[0]
                                    .as_object()["allocatedResourcesStatus"]
                                    .as_array();
  entries.push_back(boost::json::parse(R"({"name": "claim:gpus", "resources": [
      {"resourceID": "a", "health": "Sick"}, {"resourceID": "a", "health": "Healthy"}]})"));
  entries.push_back(boost::json::parse(R"({"name": "memory", "resources": []})"));
  FieldErrorList errors = ValidateAllocatedResourcesStatus(pod);
  std::vector<std::string> texts;
  for (const FieldError& e : errors) texts.push_back(e.ToString());
  EXPECT_THAT(
      texts,
      ElementsAre(
          HasSubstr("status.containerStatuses[0].allocatedResourcesStatus[3].name: Invalid value: "
                    "\"claim:gpus\": must match one of the container's resource claims in a "
                    "format 'claim:<claimName>/<request>' or 'claim:<claimName>' if request is "
                    "empty"),
          HasSubstr("status.containerStatuses[0].allocatedResourcesStatus[3].resources[0].health: "
                    "Unsupported value: \"Sick\": supported values: \"Healthy\", \"Unhealthy\", "
                    "\"Unknown\""),
          HasSubstr("status.containerStatuses[0].allocatedResourcesStatus[3].resources[1]."
                    "resourceID: Duplicate value: \"a\""),
          HasSubstr("status.containerStatuses[0].allocatedResourcesStatus[4].name: Invalid value: "
                    "\"memory\": must match one of the container's resource requests")));
}

TEST(ResourcePoolTest, OnlyThePoolsNewestGenerationCounts) {
  resourcev1::ResourceSlice old_slice;
  old_slice.spec.pool.generation = 1;
  old_slice.spec.devices.emplace_back();
  old_slice.spec.devices.back().name = "gpu-0";
  resourcev1::ResourceSlice new_slice = old_slice;
  new_slice.spec.pool.generation = 2;
  new_slice.spec.devices.back().name = "gpu-1";
  EXPECT_NE(FindPublishedDevice({&old_slice}, "gpu-0"), nullptr);
  EXPECT_EQ(FindPublishedDevice({&old_slice, &new_slice}, "gpu-0"), nullptr);
  EXPECT_EQ(FindPublishedDevice({&old_slice, &new_slice}, "gpu-1"), &new_slice.spec.devices[0]);
  EXPECT_EQ(FindPublishedDevice({}, "gpu-1"), nullptr);
}

}  // namespace
}  // namespace draplane::api
