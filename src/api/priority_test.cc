#include "api/priority.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/validation/priority_class_validation.h"

namespace draplane::api {
namespace {

schedulingv1::PriorityClass Class(std::string name, int32_t value, bool global_default = false,
                                  std::optional<std::string> policy = std::nullopt) {
  schedulingv1::PriorityClass pc;
  pc.metadata.name = std::move(name);
  pc.value = value;
  if (global_default) pc.global_default = true;
  pc.preemption_policy = std::move(policy);
  validation::SetDefaults(&pc);
  return pc;
}

boost::json::object Pod(std::string_view spec_json) {
  return boost::json::parse(std::string(R"({"metadata":{"name":"p"},"spec":)") +
                            std::string(spec_json) + "}")
      .as_object();
}

const boost::json::object& Spec(const boost::json::object& pod) {
  return pod.at("spec").as_object();
}

TEST(AdmitPodPriority, ClassNameResolvesToItsValueAndPolicy) {
  std::vector<schedulingv1::PriorityClass> classes = {Class("low", 10),
                                                      Class("high", 1000, false, "Never")};
  boost::json::object pod = Pod(R"({"priorityClassName":"high"})");
  EXPECT_EQ(AdmitPodPriority(pod, classes), std::nullopt);
  EXPECT_EQ(Spec(pod).at("priority").as_int64(), 1000);
  EXPECT_EQ(Spec(pod).at("preemptionPolicy").as_string(), "Never");
}

TEST(AdmitPodPriority, NoClassAndNoDefaultIsZero) {
  boost::json::object pod = Pod("{}");
  EXPECT_EQ(AdmitPodPriority(pod, {Class("low", 10)}), std::nullopt);
  EXPECT_EQ(Spec(pod).at("priority").as_int64(), 0);
  EXPECT_EQ(Spec(pod).at("preemptionPolicy").as_string(), "PreemptLowerPriority");
  EXPECT_FALSE(Spec(pod).contains("priorityClassName"));
}

TEST(AdmitPodPriority, GlobalDefaultNamesItselfOnThePod) {
  boost::json::object pod = Pod("{}");
  EXPECT_EQ(AdmitPodPriority(pod, {Class("low", 10), Class("batch", 5, true)}), std::nullopt);
  EXPECT_EQ(Spec(pod).at("priorityClassName").as_string(), "batch");
  EXPECT_EQ(Spec(pod).at("priority").as_int64(), 5);
}

TEST(AdmitPodPriority, OfSeveralGlobalDefaultsTheLowestValueWins) {
  std::vector<schedulingv1::PriorityClass> classes = {Class("b", 7, true), Class("a", 3, true),
                                                      Class("c", 3, true)};
  EXPECT_EQ(DefaultPriorityClass(classes)->metadata.name, "a");
}

TEST(AdmitPodPriority, UnknownClassIsForbidden) {
  boost::json::object pod = Pod(R"({"priorityClassName":"gold"})");
  EXPECT_EQ(AdmitPodPriority(pod, {Class("low", 10)}), "no PriorityClass with name gold was found");
}

TEST(AdmitPodPriority, APodMayNotSetItsOwnPriority) {
  boost::json::object pod = Pod(R"({"priority":5})");
  EXPECT_EQ(AdmitPodPriority(pod, {}),
            "the integer value of priority (5) must not be provided in pod spec; priority "
            "admission controller computed 0 from the given PriorityClass name");
  // The computed value itself may be stated.
  boost::json::object same = Pod(R"({"priorityClassName":"low","priority":10})");
  EXPECT_EQ(AdmitPodPriority(same, {Class("low", 10)}), std::nullopt);
}

TEST(AdmitPodPriority, APodMayNotChooseAnotherPreemptionPolicy) {
  boost::json::object pod = Pod(R"({"priorityClassName":"low","preemptionPolicy":"Never"})");
  EXPECT_EQ(AdmitPodPriority(pod, {Class("low", 10)}),
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec; "
            "priority admission controller computed PreemptLowerPriority from the given "
            "PriorityClass name");
}

TEST(AdmitPodPriority, SystemClassesResolve) {
  boost::json::object pod = Pod(R"({"priorityClassName":"system-node-critical"})");
  EXPECT_EQ(AdmitPodPriority(pod, SystemPriorityClasses()), std::nullopt);
  EXPECT_EQ(Spec(pod).at("priority").as_int64(), 2'000'001'000);
}

TEST(KeepPodPriority, AnUpdateWithoutPriorityKeepsTheAdmittedOne) {
  boost::json::object old = Pod(R"({"priority":1000,"preemptionPolicy":"Never"})");
  boost::json::object pod = Pod("{}");
  KeepPodPriority(pod, old);
  EXPECT_EQ(Spec(pod).at("priority").as_int64(), 1000);
  EXPECT_EQ(Spec(pod).at("preemptionPolicy").as_string(), "Never");
}

std::vector<std::string> Errors(const FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

TEST(ValidatePriorityClass, SystemClassesAreValidAsTheyAre) {
  for (const schedulingv1::PriorityClass& pc : SystemPriorityClasses()) {
    EXPECT_TRUE(validation::ValidatePriorityClass(pc).empty()) << pc.metadata.name;
  }
}

TEST(ValidatePriorityClass, TheSystemPrefixIsReserved) {
  EXPECT_EQ(Errors(validation::ValidatePriorityClass(Class("system-mine", 10))),
            std::vector<std::string>{
                "metadata.name: Forbidden: priority class names with 'system-' prefix are "
                "reserved for system use only. error: system-mine is not a known system "
                "priority class"});
  EXPECT_EQ(Errors(validation::ValidatePriorityClass(Class("system-node-critical", 10))),
            std::vector<std::string>{
                "metadata.name: Forbidden: priority class names with 'system-' prefix are "
                "reserved for system use only. error: value of system-node-critical "
                "PriorityClass must be 2000001000"});
  EXPECT_EQ(
      Errors(
          validation::ValidatePriorityClass(Class("system-cluster-critical", 2'000'000'000, true))),
      std::vector<std::string>{
          "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
          "for system use only. error: globalDefault of system-cluster-critical PriorityClass "
          "must be false"});
}

TEST(ValidatePriorityClass, UserValuesAreAtMostOneBillion) {
  EXPECT_TRUE(validation::ValidatePriorityClass(Class("top", 1'000'000'000)).empty());
  EXPECT_TRUE(validation::ValidatePriorityClass(Class("negative", -5)).empty());
  EXPECT_EQ(Errors(validation::ValidatePriorityClass(Class("over", 1'000'000'001))),
            std::vector<std::string>{
                "value: Forbidden: maximum allowed value of a user defined priority is "
                "1000000000"});
}

TEST(ValidatePriorityClass, PreemptionPolicyIsKnownAndNameIsASubdomain) {
  EXPECT_EQ(Errors(validation::ValidatePriorityClass(Class("p", 1, false, "Sometimes"))),
            std::vector<std::string>{"preemptionPolicy: Unsupported value: \"Sometimes\": "
                                     "supported values: \"Never\", \"PreemptLowerPriority\""});
  std::vector<std::string> bad = Errors(validation::ValidatePriorityClass(Class("Bad_Name", 1)));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].starts_with("metadata.name: Invalid value: \"Bad_Name\"")) << bad[0];
}

TEST(ValidatePriorityClassUpdate, ValueAndPreemptionPolicyAreImmutable) {
  schedulingv1::PriorityClass old = Class("p", 10);
  old.metadata.resource_version = "5";
  schedulingv1::PriorityClass changed = old;
  changed.value = 11;
  changed.preemption_policy = "Never";
  changed.description = "may change";
  EXPECT_EQ(
      Errors(validation::ValidatePriorityClassUpdate(changed, old)),
      (std::vector<std::string>{"value: Forbidden: may not be changed in an update.",
                                "preemptionPolicy: Invalid value: \"Never\": field is immutable"}));
  schedulingv1::PriorityClass described = old;
  described.description = "may change";
  described.global_default = true;
  EXPECT_TRUE(validation::ValidatePriorityClassUpdate(described, old).empty());
}

}  // namespace
}  // namespace draplane::api
