#include "api/validation/sharing_policy_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/codec/yaml.h"
#include "api/gen/draplane_v1alpha1_codec.h"
#include "api/object.h"
#include "api/validation/object_validation.h"

namespace draplane::api::validation {
namespace {

namespace d = draplanev1alpha1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The issue's example (issue 22, "What to build" 2), which must apply as written.
constexpr std::string_view kIssueExample = R"(apiVersion: draplane.dev/v1alpha1
kind: DeviceSharingPolicy
metadata: {name: default}
spec:
  domains:
  - name: accelerators
    deviceClasses: [h100, a100]
    cost: {h100: {perDevice: 4}, a100: {perDevice: 2}}
  tenants:
  - {namespaces: [team-a], weight: 3}
  - {namespaceSelector: {matchLabels: {tier: batch}}, weight: 1}
  defaultWeight: 1
  usage: {halfLife: 24h, historyFraction: 0.5}
  aging: {fullCreditAfter: 30m, starvationThreshold: 2h, maxHold: 15m}
)";

d::DeviceSharingPolicy Policy(std::string_view yaml) {
  StatusOr<std::vector<codec::YamlDocument>> docs = codec::ParseYaml(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  d::DeviceSharingPolicy policy;
  FieldErrorList decode_errors;
  d::Decode(docs->front().value, &policy, &decode_errors);
  EXPECT_THAT(decode_errors, IsEmpty());
  return policy;
}

// A policy of the issue's shape with `spec` replaced.
d::DeviceSharingPolicy WithSpec(std::string_view spec) {
  return Policy(
      "apiVersion: draplane.dev/v1alpha1\nkind: DeviceSharingPolicy\n"
      "metadata: {name: default}\nspec:\n" +
      std::string(spec));
}

std::vector<std::string> Errors(d::DeviceSharingPolicy policy) {
  SetDefaults(&policy);
  std::vector<std::string> out;
  for (const FieldError& e : ValidateDeviceSharingPolicy(policy)) out.push_back(e.ToString());
  return out;
}

std::vector<std::string> SpecErrors(std::string_view spec) { return Errors(WithSpec(spec)); }

constexpr std::string_view kOneDomain = "  domains: [{name: gpus, deviceClasses: [h100]}]\n";

TEST(DeviceSharingPolicyValidation, TheIssueExampleIsValid) {
  EXPECT_THAT(Errors(Policy(kIssueExample)), IsEmpty());
}

TEST(DeviceSharingPolicyValidation, DefaultsFillWhatIsAbsent) {
  d::DeviceSharingPolicy policy = WithSpec(kOneDomain);
  SetDefaults(&policy);
  const d::DeviceSharingPolicySpec& spec = policy.spec;
  EXPECT_EQ(spec.default_weight, 1);
  ASSERT_TRUE(spec.usage.has_value());
  EXPECT_EQ(spec.usage->half_life, "24h");
  ASSERT_TRUE(spec.usage->history_fraction.has_value());
  EXPECT_EQ(spec.usage->history_fraction->ToString(), "500m");
  ASSERT_TRUE(spec.aging.has_value());
  EXPECT_EQ(spec.aging->full_credit_after, "30m");
  EXPECT_EQ(spec.aging->starvation_threshold, "2h");
  EXPECT_EQ(spec.aging->max_hold, "15m");
  EXPECT_EQ(spec.aging->holds, true);
  EXPECT_EQ(spec.priority, "StrictBands");
  // A class without a cost entry costs one per device, but no entry is written (the header says
  // why).
  EXPECT_TRUE(spec.domains[0].cost.empty());
  EXPECT_THAT(Errors(policy), IsEmpty());
}

TEST(DeviceSharingPolicyValidation, DefaultsKeepWhatIsSet) {
  d::DeviceSharingPolicy policy = WithSpec(std::string(kOneDomain) +
                                           "  defaultWeight: 5\n"
                                           "  usage: {historyFraction: 0.25}\n"
                                           "  aging: {maxHold: 1h, holds: false}\n");
  SetDefaults(&policy);
  EXPECT_EQ(policy.spec.default_weight, 5);
  EXPECT_EQ(policy.spec.usage->half_life, "24h");
  EXPECT_EQ(policy.spec.usage->history_fraction->ToString(), "250m");
  EXPECT_EQ(policy.spec.aging->max_hold, "1h");
  EXPECT_EQ(policy.spec.aging->holds, false);
  EXPECT_EQ(policy.spec.aging->starvation_threshold, "2h");
}

TEST(DeviceSharingPolicyValidation, MetadataIsClusterScopedWithADNSSubdomainName) {
  d::DeviceSharingPolicy policy = WithSpec(kOneDomain);
  policy.metadata.name = "Not_A_Name";
  policy.metadata.namespace_ = "team-a";
  std::vector<std::string> errs = Errors(policy);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0], ::testing::StartsWith("metadata.name: Invalid value: \"Not_A_Name\""));
  EXPECT_EQ(errs[1], "metadata.namespace: Forbidden: not allowed on this type");
}

TEST(DeviceSharingPolicyValidation, DomainsAreRequired) {
  EXPECT_THAT(SpecErrors("  tenants: []\n"), ElementsAre("spec.domains: Required value"));
}

TEST(DeviceSharingPolicyValidation, AtMost32Domains) {
  std::string spec = "  domains:\n";
  for (int i = 0; i < 33; ++i) {
    spec += "  - {name: d" + std::to_string(i) + ", deviceClasses: [c" + std::to_string(i) + "]}\n";
  }
  EXPECT_THAT(SpecErrors(spec),
              ElementsAre("spec.domains: Too many: 33: must have at most 32 items"));
}

TEST(DeviceSharingPolicyValidation, DomainNamesAreUniqueDNSLabels) {
  std::vector<std::string> errs = SpecErrors(
      "  domains:\n"
      "  - {name: gpus, deviceClasses: [h100]}\n"
      "  - {name: gpus, deviceClasses: [a100]}\n"
      "  - {name: Big.GPUs, deviceClasses: [l4]}\n"
      "  - {deviceClasses: [t4]}\n");
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], "spec.domains[1].name: Duplicate value: \"gpus\"");
  EXPECT_THAT(errs[1], ::testing::StartsWith("spec.domains[2].name: Invalid value: \"Big.GPUs\": "
                                             "a lowercase RFC 1123 label must consist of"));
  EXPECT_EQ(errs[2], "spec.domains[3].name: Required value");
}

TEST(DeviceSharingPolicyValidation, DeviceClassesAreRequiredAndAtMost64) {
  std::string many = "  domains: [{name: gpus, deviceClasses: [";
  for (int i = 0; i < 65; ++i) many += (i ? ", c" : "c") + std::to_string(i);
  many += "]}]\n";
  EXPECT_THAT(SpecErrors(many), ElementsAre("spec.domains[0].deviceClasses: Too many: 65: must "
                                            "have at most 64 items"));
  EXPECT_THAT(SpecErrors("  domains: [{name: gpus}]\n"),
              ElementsAre("spec.domains[0].deviceClasses: Required value"));
}

TEST(DeviceSharingPolicyValidation, DeviceClassesAreDNSSubdomains) {
  std::vector<std::string> errs =
      SpecErrors("  domains: [{name: gpus, deviceClasses: [H100, '']}]\n");
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0], ::testing::StartsWith(
                           "spec.domains[0].deviceClasses[0]: Invalid value: \"H100\": a lowercase "
                           "RFC 1123 subdomain"));
  EXPECT_EQ(errs[1], "spec.domains[0].deviceClasses[1]: Required value");
}

TEST(DeviceSharingPolicyValidation, AClassIsInOneDomainOnly) {
  EXPECT_THAT(SpecErrors("  domains:\n"
                         "  - {name: accelerators, deviceClasses: [h100, a100, h100]}\n"
                         "  - {name: inference, deviceClasses: [l4, h100]}\n"),
              ElementsAre("spec.domains[0].deviceClasses[2]: Duplicate value: \"h100\"",
                          "spec.domains[1].deviceClasses[1]: Duplicate value: \"h100\": already "
                          "in domain \"accelerators\""));
}

TEST(DeviceSharingPolicyValidation, CostKeysNameClassesOfTheDomain) {
  EXPECT_THAT(SpecErrors("  domains:\n"
                         "  - {name: gpus, deviceClasses: [h100], cost: {h200: {perDevice: 4}}}\n"),
              ElementsAre("spec.domains[0].cost[h200]: Not found: \"h200\": must be one of the "
                          "domain's deviceClasses"));
}

TEST(DeviceSharingPolicyValidation, ACostSetsExactlyOneKind) {
  EXPECT_THAT(
      SpecErrors("  domains:\n"
                 "  - name: gpus\n"
                 "    deviceClasses: [h100, a100]\n"
                 "    cost:\n"
                 "      h100: {}\n"
                 "      a100: {perDevice: 2, perCounter: {name: memory, unit: 1Gi, weight: 1}}\n"),
      ElementsAre("spec.domains[0].cost[a100]: Invalid value: null: exactly one of `perDevice`, "
                  "`perCounter` or `perCapacity` is required, but multiple fields are set",
                  "spec.domains[0].cost[h100]: Required value: exactly one of `perDevice`, "
                  "`perCounter` or `perCapacity` is required"));
}

TEST(DeviceSharingPolicyValidation, CostValuesAndUnitsArePositive) {
  EXPECT_THAT(
      SpecErrors(
          "  domains:\n"
          "  - name: gpus\n"
          "    deviceClasses: [h100, a100, mig]\n"
          "    cost:\n"
          "      h100: {perDevice: 0}\n"
          "      a100: {perCounter: {name: memory, unit: '-1Gi', weight: 0}}\n"
          "      mig: {perCapacity: {name: gpu.nvidia.com/memory, unit: 10Gi, weight: 0.5}}\n"),
      ElementsAre("spec.domains[0].cost[a100].perCounter.unit: Invalid value: \"-1Gi\": must be "
                  "greater than 0",
                  "spec.domains[0].cost[a100].perCounter.weight: Invalid value: \"0\": must be "
                  "greater than 0",
                  "spec.domains[0].cost[h100].perDevice: Invalid value: \"0\": must be greater "
                  "than 0"));
}

TEST(DeviceSharingPolicyValidation, CounterAndCapacityNamesAreChecked) {
  std::vector<std::string> errs = SpecErrors(
      "  domains:\n"
      "  - name: gpus\n"
      "    deviceClasses: [a100, mig]\n"
      "    cost:\n"
      "      a100: {perCounter: {name: Memory_GB, unit: 1, weight: 1}}\n"
      "      mig: {perCapacity: {unit: 1, weight: 1}}\n");
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0], ::testing::StartsWith("spec.domains[0].cost[a100].perCounter.name: Invalid "
                                             "value: \"Memory_GB\""));
  EXPECT_EQ(errs[1], "spec.domains[0].cost[mig].perCapacity.name: Required value");
}

TEST(DeviceSharingPolicyValidation, ATenantSetsExactlyOneOfNamespacesAndSelector) {
  EXPECT_THAT(
      SpecErrors(
          std::string(kOneDomain) +
          "  tenants:\n"
          "  - {weight: 1}\n"
          "  - {namespaces: [a], namespaceSelector: {matchLabels: {tier: batch}}, weight: 1}\n"),
      ElementsAre("spec.tenants[0]: Required value: exactly one of `namespaces` or "
                  "`namespaceSelector` is required",
                  "spec.tenants[1]: Invalid value: null: exactly one of `namespaces` or "
                  "`namespaceSelector` is required, but multiple fields are set"));
}

TEST(DeviceSharingPolicyValidation, TenantNamespacesAreDNSLabelsInOneEntryOnly) {
  std::vector<std::string> errs =
      SpecErrors(std::string(kOneDomain) +
                 "  tenants:\n"
                 "  - {namespaces: [team-a, team-a], weight: 3}\n"
                 "  - {namespaces: [team-b, Team.C, team-a], weight: 1}\n");
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], "spec.tenants[0].namespaces[1]: Duplicate value: \"team-a\"");
  EXPECT_THAT(errs[1], ::testing::StartsWith(
                           "spec.tenants[1].namespaces[1]: Invalid value: \"Team.C\": a lowercase "
                           "RFC 1123 label"));
  EXPECT_EQ(
      errs[2],
      "spec.tenants[1].namespaces[2]: Duplicate value: \"team-a\": already in spec.tenants[0]");
}

TEST(DeviceSharingPolicyValidation, NamespaceSelectorIsAValidLabelSelector) {
  EXPECT_THAT(
      SpecErrors(std::string(kOneDomain) + "  tenants:\n"
                                           "  - namespaceSelector:\n"
                                           "      matchLabels: {'bad key!': x}\n"
                                           "      matchExpressions:\n"
                                           "      - {key: tier, operator: In}\n"
                                           "      - {key: tier, operator: Exists, values: [x]}\n"
                                           "      - {key: tier, operator: Gt, values: ['1']}\n"
                                           "    weight: 1\n"),
      ElementsAre(::testing::StartsWith("spec.tenants[0].namespaceSelector.matchLabels: Invalid "
                                        "value: \"bad key!\": name part must consist of"),
                  "spec.tenants[0].namespaceSelector.matchExpressions[0].values: Required value: "
                  "must be specified when `operator` is 'In' or 'NotIn'",
                  "spec.tenants[0].namespaceSelector.matchExpressions[1].values: Forbidden: may "
                  "not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                  "spec.tenants[0].namespaceSelector.matchExpressions[2].operator: Invalid value: "
                  "\"Gt\": not a valid selector operator"));
}

TEST(DeviceSharingPolicyValidation, WeightsArePositive) {
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  tenants:\n"
                                                   "  - {namespaces: [a], weight: 0}\n"
                                                   "  - {namespaces: [b]}\n"
                                                   "  defaultWeight: -1\n"),
              ElementsAre("spec.tenants[0].weight: Invalid value: 0: must be greater than 0",
                          "spec.tenants[1].weight: Required value",
                          "spec.defaultWeight: Invalid value: -1: must be greater than 0"));
}

TEST(DeviceSharingPolicyValidation, DurationsParseAndArePositive) {
  EXPECT_THAT(
      SpecErrors(std::string(kOneDomain) +
                 "  usage: {halfLife: 1d}\n"
                 "  aging: {fullCreditAfter: soon, starvationThreshold: '0', maxHold: -15m}\n"),
      ElementsAre("spec.usage.halfLife: Invalid value: \"1d\": time: unknown unit \"d\" in "
                  "duration \"1d\"",
                  "spec.aging.fullCreditAfter: Invalid value: \"soon\": time: invalid duration "
                  "\"soon\"",
                  "spec.aging.starvationThreshold: Invalid value: \"0\": must be greater than 0",
                  "spec.aging.maxHold: Invalid value: \"-15m\": must be greater than 0"));
}

TEST(DeviceSharingPolicyValidation, AMaxHoldLongerThanTheThresholdIsAllowed) {
  EXPECT_THAT(
      SpecErrors(std::string(kOneDomain) + "  aging: {starvationThreshold: 10m, maxHold: 1h}\n"),
      IsEmpty());
}

TEST(DeviceSharingPolicyValidation, HistoryFractionIsBetweenZeroAndOne) {
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  usage: {historyFraction: 1.5}\n"),
              ElementsAre("spec.usage.historyFraction: Invalid value: \"1500m\": must be between 0 "
                          "and 1, inclusive"));
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  usage: {historyFraction: '-0.1'}\n"),
              ElementsAre("spec.usage.historyFraction: Invalid value: \"-100m\": must be between 0 "
                          "and 1, inclusive"));
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  usage: {historyFraction: 0}\n"), IsEmpty());
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  usage: {historyFraction: 1}\n"), IsEmpty());
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  usage: {historyFraction: 500m}\n"),
              IsEmpty());
}

TEST(DeviceSharingPolicyValidation, PriorityIsStrictBandsOnly) {
  EXPECT_THAT(SpecErrors(std::string(kOneDomain) + "  priority: FairAcrossBands\n"),
              ElementsAre("spec.priority: Unsupported value: \"FairAcrossBands\": supported "
                          "values: \"StrictBands\""));
}

TEST(DeviceSharingPolicyValidation, AtMost256Tenants) {
  std::string spec = std::string(kOneDomain) + "  tenants:\n";
  for (int i = 0; i < 257; ++i)
    spec += "  - {namespaces: [ns" + std::to_string(i) + "], weight: 1}\n";
  EXPECT_THAT(SpecErrors(spec),
              ElementsAre("spec.tenants: Too many: 257: must have at most 256 items"));
}

TEST(DeviceSharingPolicyValidation, StatusValuesAreNotNegativeAndTenantsUnique) {
  d::DeviceSharingPolicy old = WithSpec(kOneDomain);
  SetDefaults(&old);
  old.metadata.resource_version = "1";
  d::DeviceSharingPolicy updated = old;
  updated.status.emplace();
  updated.status->observed_generation = -1;
  d::SharingDomainStatus domain;
  domain.name = "gpus";
  domain.capacity_units = Quantity::FromInt64(-4);
  d::SharingTenantStatus tenant;
  tenant.namespace_ = "team-a";
  tenant.weight = 1;
  tenant.pending = -2;
  domain.tenants = {tenant, tenant};
  updated.status->domains = {domain};
  std::vector<std::string> out;
  for (const FieldError& e : ValidateDeviceSharingPolicyStatusUpdate(updated, old)) {
    out.push_back(e.ToString());
  }
  EXPECT_THAT(out,
              ElementsAre("status.observedGeneration: Invalid value: -1: must be greater than or "
                          "equal to 0",
                          "status.domains[0].capacityUnits: Invalid value: \"-4\": must be greater "
                          "than or equal to 0",
                          "status.domains[0].tenants[0].pending: Invalid value: -2: must be "
                          "greater than or equal to 0",
                          "status.domains[0].tenants[1].pending: Invalid value: -2: must be "
                          "greater than or equal to 0",
                          "status.domains[0].tenants[1]: Duplicate value: \"team-a\""));
}

// draplane lint and the simulator reach the rules through ValidateObject.
TEST(DeviceSharingPolicyValidation, ValidateObjectDispatchesAndDefaults) {
  FieldErrorList decode_errors;
  StatusOr<std::vector<codec::YamlDocument>> docs = codec::ParseYaml(kIssueExample);
  ASSERT_TRUE(docs.ok());
  Object object = DecodeObject(docs->front().value, &decode_errors);
  ASSERT_THAT(decode_errors, IsEmpty());
  ASSERT_TRUE(std::holds_alternative<d::DeviceSharingPolicy>(object));
  FieldErrorList errors;
  EXPECT_TRUE(ValidateObject(object, nullptr, {}, &errors));
  EXPECT_THAT(errors, IsEmpty());
  EXPECT_EQ(std::get<d::DeviceSharingPolicy>(object).spec.aging->holds, true);

  std::get<d::DeviceSharingPolicy>(object).spec.tenants[0].weight = 0;
  errors.clear();
  EXPECT_TRUE(ValidateObject(object, nullptr, {}, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(),
            "spec.tenants[0].weight: Invalid value: 0: must be greater than 0");
}

}  // namespace
}  // namespace draplane::api::validation
