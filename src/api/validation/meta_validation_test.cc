#include "api/validation/meta_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/gen/core_v1_codec.h"
#include "api/gen/meta_v1_codec.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

metav1::ObjectMeta Meta(std::string_view json) {
  metav1::ObjectMeta meta;
  FieldErrorList errs;
  metav1::Decode(boost::json::parse(json), &meta, &errs);
  EXPECT_THAT(errs, IsEmpty());
  return meta;
}

std::vector<std::string> Render(const FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

metav1::LabelSelector Selector(std::string_view json) {
  metav1::LabelSelector selector;
  FieldErrorList errs;
  metav1::Decode(boost::json::parse(json), &selector, &errs);
  EXPECT_THAT(errs, IsEmpty());
  return selector;
}

const FieldPath kMeta("metadata");

TEST(MetaValidationTest, ValidMetadataHasNoErrors) {
  EXPECT_THAT(Render(ValidateObjectMeta(
                  Meta(R"({"name": "gpu", "namespace": "team-a", "labels": {"a.b/c": "d"},
                           "finalizers": ["resource.kubernetes.io/delete-protection", "orphan"]})"),
                  true, NameIsDNSSubdomain, kMeta)),
              IsEmpty());
}

TEST(MetaValidationTest, GenerateNameStandsInForTheName) {
  EXPECT_THAT(Render(ValidateObjectMeta(Meta(R"({"generateName": "gpu-", "namespace": "a"})"), true,
                                        NameIsDNSSubdomain, kMeta)),
              IsEmpty());
}

TEST(MetaValidationTest, NamespaceRequiredOrForbiddenByScope) {
  EXPECT_THAT(Render(ValidateObjectMeta(Meta(R"({"name": "x"})"), true, NameIsDNSSubdomain, kMeta)),
              ElementsAre("metadata.namespace: Required value"));
  EXPECT_THAT(Render(ValidateObjectMeta(Meta(R"({"name": "x", "namespace": "a"})"), false,
                                        NameIsDNSSubdomain, kMeta)),
              ElementsAre("metadata.namespace: Forbidden: not allowed on this type"));
}

TEST(MetaValidationTest, OneControllerOwnerAndNoEventOwners) {
  auto meta = Meta(R"({"name": "x", "ownerReferences": [
      {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1", "controller": true},
      {"apiVersion": "v1", "kind": "Event", "name": "b", "uid": "2", "controller": true}]})");
  std::vector<std::string> errs =
      Render(ValidateObjectMeta(meta, false, NameIsDNSSubdomain, kMeta));
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0], StartsWith("metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\","
                                  "\"kind\":\"Event\""));
  EXPECT_THAT(errs[0], ::testing::EndsWith(": /v1, Kind=Event is disallowed from being an owner"));
  EXPECT_THAT(
      errs[1],
      ::testing::EndsWith(": Only one reference can have Controller set to true. Found \"true\" in "
                          "references for Pod/a and Event/b"));
}

TEST(MetaValidationTest, FinalizersWithoutDomainMustBeStandard) {
  EXPECT_THAT(Render(ValidateObjectMeta(Meta(R"({"name": "x", "finalizers": ["protect"]})"), false,
                                        NameIsDNSSubdomain, kMeta)),
              ElementsAre("metadata.finalizers: Invalid value: \"protect\": name is neither a "
                          "standard finalizer name nor is it fully qualified"));
  EXPECT_THAT(
      Render(ValidateObjectMeta(
          Meta(R"({"name": "x", "finalizers": ["orphan", "foregroundDeletion"]})"), false,
          NameIsDNSSubdomain, kMeta)),
      ElementsAre("metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: "
                  "finalizer orphan and foregroundDeletion cannot be both set"));
}

TEST(MetaValidationTest, AnnotationsAreLimitedTo256KiB) {
  metav1::ObjectMeta meta = Meta(R"({"name": "x"})");
  meta.annotations["a"] = std::string(256 * 1024, 'x');
  EXPECT_THAT(Render(ValidateObjectMeta(meta, false, NameIsDNSSubdomain, kMeta)),
              ElementsAre("metadata.annotations: Too long: may not be more than 262144 bytes"));
}

TEST(MetaValidationTest, UpdateKeepsIdentityAndFinalizersWhileDeleting) {
  auto old = Meta(R"({"name": "x", "uid": "u1", "resourceVersion": "5", "generation": 3,
                      "deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["a.io/x"]})");
  auto now = old;
  EXPECT_THAT(Render(ValidateObjectMetaUpdate(now, old, kMeta)), IsEmpty());
  now.finalizers.push_back("b.io/y");
  now.uid = "u2";
  now.generation = 2;
  now.deletion_timestamp.reset();
  EXPECT_THAT(Render(ValidateObjectMetaUpdate(now, old, kMeta)),
              ElementsAre("metadata.finalizers: Forbidden: no new finalizers can be added if the "
                          "object is being deleted, found new finalizers []string{\"b.io/y\"}",
                          "metadata.generation: Invalid value: 2: must not be decremented",
                          "metadata.uid: Invalid value: \"u2\": field is immutable",
                          "metadata.deletionTimestamp: Invalid value: null: field is immutable"));
}

TEST(MetaValidationTest, TemplateMetadataAllowsOnlyLabelsAndAnnotations) {
  auto meta = Meta(R"({"name": "n", "uid": "u", "labels": {"a": "b"}, "finalizers": ["x.io/y"]})");
  EXPECT_THAT(Render(ValidateTemplateObjectMeta(meta, FieldPath("spec.metadata"))),
              ElementsAre("spec.metadata.name: Forbidden: cannot be set",
                          "spec.metadata.uID: Forbidden: cannot be set",
                          "spec.metadata.finalizers: Forbidden: cannot be set"));
}

TEST(MetaValidationTest, ConditionsAreUniqueAndComplete) {
  std::vector<metav1::Condition> conditions(2);
  FieldErrorList decode;
  metav1::Decode(boost::json::parse(R"({"type": "Ready", "status": "True", "reason": "Ok",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"})"),
                 &conditions[0], &decode);
  conditions[1] = conditions[0];
  conditions[1].reason = "Bad:";
  conditions[1].observed_generation = -1;
  EXPECT_THAT(
      Render(ValidateConditions(conditions, FieldPath("c"))),
      ElementsAre(
          "c[1].type: Duplicate value: \"Ready\"",
          "c[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
          StartsWith("c[1].reason: Invalid value: \"Bad:\": a condition reason must start")));
}

TEST(MetaValidationTest, NodeSelectorFieldRequirements) {
  corev1::NodeSelector selector;
  FieldErrorList decode;
  corev1::Decode(boost::json::parse(R"({"nodeSelectorTerms": [{"matchFields": [
      {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
      {"key": "metadata.name", "operator": "Exists"}],
      "matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1", "2"]}]}]})"),
                 &selector, &decode);
  EXPECT_THAT(
      Render(ValidateNodeSelector(selector, FieldPath("s"))),
      ElementsAre("s.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be "
                  "specified single value when `operator` is 'Lt' or 'Gt'",
                  "s.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one "
                  "value when `operator` is 'In' or 'NotIn' for node field selector",
                  "s.nodeSelectorTerms[0].matchFields[1].operator: Invalid value: \"Exists\": not "
                  "a valid selector operator"));
}

// metav1validation.ValidateLabelSelector: labels as labels, In / NotIn with values, Exists /
// DoesNotExist without, Gt / Lt not a label selector operator (only a node selector's).
TEST(MetaValidationTest, LabelSelectorRequirements) {
  metav1::LabelSelector selector = Selector(R"({"matchLabels":{"tier":"batch"},
      "matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},
                          {"key":"gpu","operator":"DoesNotExist"}]})");
  EXPECT_THAT(ValidateLabelSelector(selector, FieldPath("s")), IsEmpty());
  selector = Selector(R"({"matchLabels":{"tier":"no good"},
      "matchExpressions":[{"key":"zone","operator":"NotIn"},
                          {"key":"gpu","operator":"Exists","values":["x"]},
                          {"key":"n","operator":"Gt","values":["1"]},
                          {"key":"-bad","operator":"In","values":["ok"]}]})");
  std::vector<std::string> errs = Render(ValidateLabelSelector(selector, FieldPath("s")));
  ASSERT_EQ(errs.size(), 5u);
  EXPECT_THAT(errs[0], StartsWith("s.matchLabels: Invalid value: \"no good\": a valid label must"));
  EXPECT_EQ(errs[1],
            "s.matchExpressions[0].values: Required value: must be specified when `operator` is "
            "'In' or 'NotIn'");
  EXPECT_EQ(errs[2],
            "s.matchExpressions[1].values: Forbidden: may not be specified when `operator` is "
            "'Exists' or 'DoesNotExist'");
  EXPECT_EQ(errs[3],
            "s.matchExpressions[2].operator: Invalid value: \"Gt\": not a valid selector operator");
  EXPECT_THAT(errs[4], StartsWith("s.matchExpressions[3].key: Invalid value: \"-bad\""));
}

}  // namespace
}  // namespace draplane::api::validation
