#include "api/object.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api/codec/json.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

std::vector<std::string> Errors(const FieldErrorList& errors) {
  std::vector<std::string> out;
  for (const FieldError& e : errors) out.push_back(e.ToString());
  return out;
}

// Decodes and encodes `json` and checks that nothing changed and nothing was reported.
void ExpectLossless(const boost::json::value& json) {
  FieldErrorList errors;
  Object obj = DecodeObject(json, &errors);
  EXPECT_THAT(Errors(errors), ::testing::IsEmpty());
  EXPECT_EQ(EncodeObject(obj), json) << "decoded as " << ObjectKind(obj);
}

// The upstream JSON fixtures (../shared/fixtures/k8s-api), parsed, by file name.
std::map<std::string, boost::json::value> JsonFixtures() {
  const std::filesystem::path dir = std::filesystem::path(DRAPLANE_SHARED_DIR) / "fixtures/k8s-api";
  std::map<std::string, boost::json::value> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<boost::json::value> json = codec::ParseJson(text.str());
    EXPECT_TRUE(json.ok()) << entry.path();
    if (json.ok()) out.emplace(entry.path().filename().string(), std::move(*json));
  }
  EXPECT_GE(out.size(), 13u);
  return out;
}

TEST(ObjectTest, EveryFixtureRoundTripsThroughItsTypedModel) {
  for (const auto& [name, json] : JsonFixtures()) {
    FieldErrorList errors;
    Object obj = DecodeObject(json, &errors);
    EXPECT_FALSE(std::holds_alternative<Unstructured>(obj)) << name << " is not modelled";
    ExpectLossless(json);
  }
}

// The number of JSON objects in `value` whose capacity exceeds their size.
int OversizedObjects(const boost::json::value& value) {
  int n = 0;
  if (const boost::json::object* obj = value.if_object()) {
    n += obj->capacity() > obj->size() ? 1 : 0;
    for (const auto& member : *obj) n += OversizedObjects(member.value());
  } else if (const boost::json::array* arr = value.if_array()) {
    for (const boost::json::value& item : *arr) n += OversizedObjects(item);
  }
  return n;
}

// Encoding reserves each object's members up front instead of growing it member by member; for
// a decoded object the reservation is exact.
TEST(ObjectTest, EncodingADecodedObjectAllocatesEachJsonObjectOnce) {
  for (const auto& [name, json] : JsonFixtures()) {
    FieldErrorList errors;
    EXPECT_EQ(OversizedObjects(EncodeObject(DecodeObject(json, &errors))), 0) << name;
  }
}

TEST(ObjectTest, DecodesTypedFields) {
  FieldErrorList errors;
  Object obj = DecodeObject(Json(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpus", "labels": {"a": "b"}},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0",
                          "attributes": {"model": {"string": "H100"}, "index": {"int": 0},
                                         "caps": {"strings": ["a", "b"]}},
                          "capacity": {"memory": {"value": "80Gi"}},
                          "taints": [{"key": "k", "effect": "NoSchedule"}]}]}})"),
                            &errors);
  ASSERT_THAT(Errors(errors), ::testing::IsEmpty());
  const auto* slice = std::get_if<resourcev1::ResourceSlice>(&obj);
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(ObjectName(obj), "node-1-gpus");
  EXPECT_EQ(slice->metadata.labels.at("a"), "b");
  EXPECT_EQ(slice->spec.driver, "gpu.example.com");
  EXPECT_EQ(slice->spec.node_name, "node-1");
  EXPECT_FALSE(slice->spec.all_nodes.has_value());
  EXPECT_EQ(slice->spec.pool.generation, 3);
  ASSERT_THAT(slice->spec.devices, SizeIs(1));
  const resourcev1::Device& dev = slice->spec.devices[0];
  EXPECT_EQ(dev.attributes.at("model").string_value, "H100");
  EXPECT_EQ(dev.attributes.at("index").int_value, 0);
  EXPECT_THAT(dev.attributes.at("caps").strings, ElementsAre("a", "b"));
  EXPECT_EQ(dev.capacity.at("memory").value.Value(), int64_t{80} << 30);
  EXPECT_EQ(dev.taints[0].effect, resourcev1::kDeviceTaintEffectNoSchedule);
}

TEST(ObjectTest, KeepsExplicitNullsAndSettingTheFieldWins) {
  const boost::json::value json = Json(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "s", "creationTimestamp": null, "labels": null},
    "spec": {"driver": "d", "nodeName": null, "devices": null, "pool": {"name": "p"}}})");
  ExpectLossless(json);
  FieldErrorList errors;
  Object obj = DecodeObject(json, &errors);
  auto& slice = std::get<resourcev1::ResourceSlice>(obj);
  EXPECT_FALSE(slice.spec.node_name.has_value());
  slice.spec.node_name = "node-1";
  const boost::json::value out = EncodeObject(obj);
  EXPECT_EQ(out.at("spec").at("nodeName"), "node-1");
  EXPECT_EQ(out.at("spec").at("devices"), nullptr);
  EXPECT_EQ(out.at("metadata").at("creationTimestamp"), nullptr);
}

TEST(ObjectTest, KeepsEmptyButPresentFieldsAndOmitsAbsentOnes) {
  ExpectLossless(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "", "generateName": ""},
    "spec": {"devices": {"requests": [], "constraints": [{}]}},
    "status": {}})"));
  ExpectLossless(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c",
      "count": 0, "adminAccess": false, "selectors": []}}]}}})"));
  ExpectLossless(Json(R"({"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1"})"));
}

// What upstream's Go types never write empty (omitempty lists and maps: ObjectMeta's
// finalizers, ownerReferences, labels, annotations; a claim's reservedFor and devices) is not
// written back empty either, so a store never holds `finalizers: []`.
TEST(ObjectTest, OmitsTheEmptyListsAndMapsUpstreamOmits) {
  FieldErrorList errors;
  Object obj = DecodeObject(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "labels": {}, "annotations": {}, "finalizers": [],
                 "ownerReferences": []},
    "spec": {"devices": {"requests": []}},
    "status": {"reservedFor": [], "devices": []}})"),
                            &errors);
  EXPECT_THAT(Errors(errors), ::testing::IsEmpty());
  EXPECT_EQ(EncodeObject(obj), Json(R"({"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
    "metadata": {"name": "c"}, "spec": {"devices": {"requests": []}}, "status": {}})"));
}

TEST(ObjectTest, KeepsUnknownFieldsAtEveryLevel) {
  const boost::json::value json = Json(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "futureTop": 1,
    "metadata": {"name": "c", "futureMeta": {"x": [1, 2]}},
    "spec": {"devices": {"requests": [{"name": "r", "futureRequest": "yes",
      "exactly": {"deviceClassName": "gpu", "futureExact": {"deep": {"deeper": null}}}}]}},
    "status": {"allocation": {"devices": {"results": [{"request": "r", "driver": "d",
      "pool": "p", "device": "x", "futureResult": true}]}}}})");
  ExpectLossless(json);
  FieldErrorList errors;
  Object obj = DecodeObject(json, &errors);
  const auto& claim = std::get<resourcev1::ResourceClaim>(obj);
  ASSERT_NE(claim.spec.devices.requests[0].unknown.fields(), nullptr);
  EXPECT_TRUE(claim.spec.devices.requests[0].unknown.fields()->contains("futureRequest"));
}

TEST(ObjectTest, ACopysUnknownFieldsChangeOnlyTheCopy) {
  UnknownFields original;
  original.Add("future", boost::json::value(1));
  UnknownFields copy = original;
  EXPECT_EQ(copy.fields(), original.fields());  // shared until one is changed
  copy.Add("future", boost::json::value(2));
  copy.Add("later", boost::json::value(3));
  ASSERT_NE(original.fields(), nullptr);
  EXPECT_EQ(*original.fields(), boost::json::object({{"future", 1}}));
  EXPECT_EQ(*copy.fields(), boost::json::object({{"future", 2}, {"later", 3}}));

  UnknownFields assigned;
  assigned = original;
  assigned.mutable_fields().erase("future");
  EXPECT_TRUE(assigned.empty());
  EXPECT_EQ(original.fields()->size(), 1u);

  // The one owner changes its fields in place.
  const boost::json::object* before = original.fields();
  original.Add("again", boost::json::value(4));
  EXPECT_EQ(original.fields(), before);
  EXPECT_EQ(copy.fields()->size(), 2u);
}

TEST(ObjectTest, KeepsQuantitiesAsWritten) {
  const boost::json::value json = Json(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "spec": {"driver": "d", "pool": {"name": "p"}, "devices": [{"name": "g",
      "capacity": {"a": {"value": 4}, "b": {"value": 1.5}, "c": {"value": "1.5Gi"},
                   "d": {"value": "2000m"}, "e": {"value": 18446744073709551615},
                   "f": {"value": 1.0}, "g": {"value": 2e30}}}]}})");
  ExpectLossless(json);
  FieldErrorList errors;
  Object obj = DecodeObject(json, &errors);
  const auto& cap = std::get<resourcev1::ResourceSlice>(obj).spec.devices[0].capacity;
  EXPECT_TRUE(cap.at("a").value.from_number());
  EXPECT_EQ(cap.at("a").value.Value(), 4);
  EXPECT_TRUE(cap.at("b").value.from_number());
  EXPECT_EQ(cap.at("b").value.MilliValue(), 1500);
  EXPECT_FALSE(cap.at("c").value.from_number());
  EXPECT_EQ(cap.at("c").value.original_text(), "1.5Gi");
  EXPECT_EQ(cap.at("d").value.Value(), 2);
  const boost::json::value out = EncodeObject(obj);
  const boost::json::value& capacity = out.at("spec").at("devices").at(0).at("capacity");
  EXPECT_TRUE(capacity.at("a").at("value").is_int64());
  EXPECT_TRUE(capacity.at("b").at("value").is_double());
  EXPECT_TRUE(capacity.at("d").at("value").is_string());
  EXPECT_TRUE(capacity.at("f").at("value").is_double());
}

TEST(ObjectTest, ReportsWrongTypesWithFieldPaths) {
  FieldErrorList errors;
  Object obj = DecodeObject(Json(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": ["x"], "labels": {"a": 1}},
    "spec": {"driver": "d", "pool": {"name": "p", "generation": "3"},
             "allNodes": "true",
             "devices": [{"name": "g", "capacity": {"example.com/mem": {"value": true}},
                          "attributes": {"x": {"int": 1.5}}}, 7]}})"),
                            &errors);
  EXPECT_TRUE(std::holds_alternative<resourcev1::ResourceSlice>(obj));
  EXPECT_THAT(
      Errors(errors),
      ElementsAre(
          "metadata.name: Invalid value: [...]: expected string, got array",
          "metadata.labels[a]: Invalid value: 1: expected string, got number",
          "spec.pool.generation: Invalid value: \"3\": expected 64-bit integer, got string",
          "spec.allNodes: Invalid value: \"true\": expected boolean, got string",
          "spec.devices[0].capacity[example.com/mem].value: Invalid value: true: expected "
          "quantity (string or number), got boolean",
          "spec.devices[0].attributes[x].int: Invalid value: 1.5: expected 64-bit integer, got "
          "number",
          "spec.devices[1]: Invalid value: 7: expected object, got number"));
}

TEST(ObjectTest, ReportsMalformedQuantitiesAndTimes) {
  FieldErrorList errors;
  DecodeObject(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"creationTimestamp": "yesterday"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c",
      "capacity": {"requests": {"memory": "12 GB"}}}}]}}})"),
               &errors);
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_THAT(errors[0].ToString(),
              HasSubstr("metadata.creationTimestamp: Invalid value: \"yesterday\": must be an "
                        "RFC 3339 timestamp"));
  EXPECT_THAT(errors[1].ToString(),
              HasSubstr("spec.devices.requests[0].exactly.capacity.requests[memory]: Invalid "
                        "value: \"12 GB\": "));
}

TEST(ObjectTest, CapsTheNumberOfReportedErrors) {
  boost::json::array items;
  for (int i = 0; i < 500; ++i) items.push_back(boost::json::value(i));
  boost::json::value json = Json(R"({"apiVersion": "v1", "kind": "Namespace", "spec": {}})");
  json.at("spec").as_object()["finalizers"] = std::move(items);
  FieldErrorList errors;
  DecodeObject(json, &errors);
  ASSERT_THAT(errors, SizeIs(100));
  EXPECT_THAT(errors.back().ToString(), HasSubstr("too many errors"));
}

TEST(ObjectTest, UnknownKindsStayUnstructured) {
  const boost::json::value json = Json(R"({"apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "ns"}, "data": {"k": "v"}})");
  FieldErrorList errors;
  Object obj = DecodeObject(json, &errors);
  ASSERT_TRUE(std::holds_alternative<Unstructured>(obj));
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(ObjectKind(obj), "ConfigMap");
  EXPECT_EQ(ObjectApiVersion(obj), "v1");
  EXPECT_EQ(ObjectName(obj), "cm");
  EXPECT_EQ(ObjectNamespace(obj), "ns");
  EXPECT_EQ(ObjectMetadata(obj), nullptr);
  EXPECT_EQ(EncodeObject(obj), json);
  // The same kind name in another group is not the modelled one.
  EXPECT_TRUE(std::holds_alternative<Unstructured>(DecodeObject(
      Json(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim"})"), &errors)));
}

TEST(ObjectTest, MissingTypeFieldsAreRequired) {
  FieldErrorList errors;
  Object obj = DecodeObject(Json(R"({"metadata": {"name": "x"}, "apiVersion": 5})"), &errors);
  EXPECT_TRUE(std::holds_alternative<Unstructured>(obj));
  EXPECT_THAT(Errors(errors),
              ElementsAre("apiVersion: Invalid value: 5: expected string, got number",
                          "kind: Required value"));
  errors.clear();
  DecodeObject(Json("[1]"), &errors);
  EXPECT_THAT(Errors(errors), ElementsAre(": Invalid value: [...]: expected object, got array"));
}

TEST(ObjectTest, DispatchesOnGroupVersionAndKind) {
  EXPECT_TRUE(IsModelledKind("resource.k8s.io/v1", "ResourceSlice"));
  EXPECT_TRUE(IsModelledKind("resource.k8s.io/v1", "DeviceTaintRuleList"));
  EXPECT_TRUE(IsModelledKind("v1", "Pod"));
  EXPECT_TRUE(IsModelledKind("v1", "Status"));
  EXPECT_TRUE(IsModelledKind("v1", "Event"));
  EXPECT_TRUE(IsModelledKind("events.k8s.io/v1", "Event"));
  EXPECT_TRUE(IsModelledKind("coordination.k8s.io/v1", "Lease"));
  EXPECT_FALSE(IsModelledKind("v1", "ConfigMap"));
  EXPECT_FALSE(IsModelledKind("v1", "List"));
  FieldErrorList errors;
  EXPECT_TRUE(std::holds_alternative<eventsv1::Event>(
      DecodeObject(Json(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event"})"), &errors)));
  EXPECT_TRUE(std::holds_alternative<corev1::Event>(
      DecodeObject(Json(R"({"apiVersion": "v1", "kind": "Event"})"), &errors)));
}

TEST(ObjectTest, EncodesObjectsBuiltInCode) {
  resourcev1::ResourceClaim claim;
  claim.metadata.name = "gpu-claim";
  claim.metadata.namespace_ = "team-a";
  resourcev1::DeviceRequest request;
  request.name = "gpu";
  request.exactly.emplace();
  request.exactly->device_class_name = "gpu.example.com";
  request.exactly->count = 2;
  claim.spec.devices.requests.push_back(request);
  EXPECT_EQ(EncodeObject(claim), Json(R"({"kind": "ResourceClaim",
    "apiVersion": "resource.k8s.io/v1", "metadata": {"name": "gpu-claim", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu",
      "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}})"));
  resourcev1::ResourceSliceList list;
  EXPECT_EQ(resourcev1::Encode(list), Json(R"({"kind": "ResourceSliceList",
    "apiVersion": "resource.k8s.io/v1", "items": []})"));
}

TEST(ObjectTest, ListsWriteItemsUnlessADecodedListHadNone) {
  ExpectLossless(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList"})"));
  ExpectLossless(Json(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
    "metadata": {"resourceVersion": "7"}, "items": []})"));
  resourcev1::ResourceSliceList list;
  list.metadata.resource_version = "7";
  EXPECT_EQ(EncodeObject(list), Json(R"({"kind": "ResourceSliceList",
    "apiVersion": "resource.k8s.io/v1", "metadata": {"resourceVersion": "7"}, "items": []})"));
}

TEST(ObjectTest, EqualityIsSemantic) {
  FieldErrorList errors;
  resourcev1::Counter a, b;
  resourcev1::Decode(Json(R"({"value": "1Gi"})"), &a, &errors);
  resourcev1::Decode(Json(R"({"value": 1073741824, "future": true})"), &b, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(a, b);
  resourcev1::Decode(Json(R"({"value": "1G"})"), &b, &errors);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace draplane::api
