#include "api/labels/taints.h"

#include <gtest/gtest.h>

// Constructing generated structs needs the complete Boost.JSON types behind UnknownFields
// (api/meta/raw_json.h declares its default constructor inline).
#include <boost/json.hpp>
#include <string>
#include <vector>

namespace draplane::api::labels {
namespace {

struct Case {
  const char* name;
  const char* key;
  const char* op;
  const char* value;
  const char* effect;
  const char* taint_key;
  const char* taint_value;
  const char* taint_effect;
  bool want;
};

// Derived from upstream core/v1 toleration_test.go (TestTolerationToleratesTaint) and
// resourceclaim devicetoleration_test.go.
const Case kCases[] = {
    {"EmptyTolerationNeedsEmptyValue", "", "", "", "", "foo", "bar", "NoSchedule", false},
    {"EmptyKeyExistsToleratesAll", "", "Exists", "", "", "foo", "bar", "NoSchedule", true},
    {"EmptyKeyExistsAnyEffect", "", "Exists", "", "", "foo", "bar", "NoExecute", true},
    {"EmptyKeyExistsWrongEffect", "", "Exists", "", "NoSchedule", "foo", "bar", "NoExecute", false},
    {"SameKeyEffectExists", "foo", "Exists", "", "NoSchedule", "foo", "bar", "NoSchedule", true},
    {"SameKeyEffectEqual", "foo", "Equal", "bar", "NoSchedule", "foo", "bar", "NoSchedule", true},
    {"EmptyOperatorMeansEqual", "foo", "", "bar", "NoSchedule", "foo", "bar", "NoSchedule", true},
    {"EqualDifferentValue", "foo", "Equal", "value1", "NoSchedule", "foo", "value2", "NoSchedule",
     false},
    {"DifferentEffect", "foo", "Equal", "bar", "NoExecute", "foo", "bar", "NoSchedule", false},
    {"EmptyEffectMatchesAll", "foo", "Equal", "bar", "", "foo", "bar", "NoExecute", true},
    {"DifferentKey", "foo", "Exists", "", "", "other", "bar", "NoSchedule", false},
    {"EqualEmptyValues", "foo", "Equal", "", "", "foo", "", "NoSchedule", true},
    {"UnknownOperator", "foo", "In", "bar", "", "foo", "bar", "NoSchedule", false},
    {"OperatorIsCaseSensitive", "foo", "exists", "", "", "foo", "bar", "NoSchedule", false},
    {"EffectIsCaseSensitive", "foo", "Exists", "", "noschedule", "foo", "bar", "NoSchedule", false},
    {"DeviceEffectNone", "foo", "Exists", "", "None", "foo", "bar", "None", true},
    {"LtDisabledByDefault", "foo", "Lt", "10", "", "foo", "5", "NoSchedule", false},
};

class TolerationTable : public testing::TestWithParam<Case> {};

TEST_P(TolerationTable, MatchesUpstreamForNodesAndDevices) {
  const Case& c = GetParam();
  corev1::Toleration t;
  t.key = c.key;
  t.operator_ = c.op;
  t.value = c.value;
  t.effect = c.effect;
  corev1::Taint taint;
  taint.key = c.taint_key;
  taint.value = c.taint_value;
  taint.effect = c.taint_effect;
  EXPECT_EQ(ToleratesTaint(t, taint), c.want);

  resourcev1::DeviceToleration dt;
  dt.key = c.key;
  dt.operator_ = c.op;
  dt.value = c.value;
  dt.effect = c.effect;
  resourcev1::DeviceTaint dtaint;
  dtaint.key = c.taint_key;
  dtaint.value = c.taint_value;
  dtaint.effect = c.taint_effect;
  EXPECT_EQ(ToleratesTaint(dt, dtaint), c.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, TolerationTable, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(TolerationTest, ComparisonOperatorsWhenEnabled) {
  const TolerationOptions on{.enable_comparison_operators = true};
  struct Cmp {
    const char* op;
    const char* toleration_value;
    const char* taint_value;
    bool want;
  };
  // Lt tolerates a taint value below the toleration's, Gt one above; both values must be
  // canonical decimal integers (content.IsDecimalInteger) within int64.
  const Cmp cases[] = {
      {"Lt", "10", "5", true},
      {"Lt", "10", "10", false},
      {"Lt", "10", "11", false},
      {"Gt", "10", "11", true},
      {"Gt", "10", "10", false},
      {"Gt", "-5", "0", true},
      {"Lt", "0", "-1", true},
      {"Lt", "010", "5", false},
      {"Lt", "10", "05", false},
      {"Lt", "+10", "5", false},
      {"Lt", "-0", "-1", false},
      {"Gt", "1", "a", false},
      {"Gt", "1", "9223372036854775808", false},
      {"Gt", "", "1", false},
  };
  for (const Cmp& c : cases) {
    const TolerationView t{"k", c.op, c.toleration_value, ""};
    const TaintView taint{"k", c.taint_value, "NoSchedule"};
    EXPECT_EQ(ToleratesTaint(t, taint, on), c.want)
        << c.op << " " << c.toleration_value << " vs " << c.taint_value;
    EXPECT_FALSE(ToleratesTaint(t, taint)) << "disabled by default";
  }
}

corev1::Taint NodeTaint(std::string key, std::string value, std::string effect) {
  corev1::Taint t;
  t.key = std::move(key);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

corev1::Toleration NodeToleration(std::string key, std::string op, std::string value,
                                  std::string effect) {
  corev1::Toleration t;
  t.key = std::move(key);
  t.operator_ = std::move(op);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

TEST(TolerationTest, FindMatchingUntoleratedTaintUsesTheFilter) {
  const std::vector<corev1::Taint> taints = {NodeTaint("soft", "", "PreferNoSchedule"),
                                             NodeTaint("gpu", "busy", "NoSchedule"),
                                             NodeTaint("maint", "", "NoExecute")};
  const auto blocking = [](const corev1::Taint& t) { return IsScheduleBlockingEffect(t.effect); };
  EXPECT_EQ(FindMatchingUntoleratedTaint(taints, {}, blocking), 1u);
  EXPECT_EQ(
      FindMatchingUntoleratedTaint(taints, {NodeToleration("gpu", "Exists", "", "")}, blocking),
      2u);
  EXPECT_EQ(FindMatchingUntoleratedTaint(taints,
                                         {NodeToleration("gpu", "Equal", "busy", "NoSchedule"),
                                          NodeToleration("maint", "Exists", "", "NoExecute")},
                                         blocking),
            std::nullopt);
  EXPECT_EQ(FindMatchingUntoleratedTaint(taints, {NodeToleration("", "Exists", "", "")},
                                         [](const corev1::Taint&) { return true; }),
            std::nullopt);
  EXPECT_EQ(FindMatchingUntoleratedTaint(taints, {}, [](const corev1::Taint&) { return true; }),
            0u);
  EXPECT_TRUE(TolerationsTolerateTaint({NodeToleration("soft", "Exists", "", "")}, taints[0]));
  EXPECT_FALSE(TolerationsTolerateTaint({}, taints[0]));
}

TEST(TolerationTest, DeviceTaintsBlockOnlyNoScheduleAndNoExecute) {
  auto taint = [](std::string key, std::string effect) {
    resourcev1::DeviceTaint t;
    t.key = std::move(key);
    t.effect = std::move(effect);
    return t;
  };
  auto toleration = [](std::string key, std::string effect) {
    resourcev1::DeviceToleration t;
    t.key = std::move(key);
    t.operator_ = "Exists";
    t.effect = std::move(effect);
    return t;
  };
  const std::vector<resourcev1::DeviceTaint> taints = {
      taint("dry-run", "None"), taint("unknown", "Sometimes"), taint("broken", "NoExecute")};
  EXPECT_EQ(FindUntoleratedDeviceTaint(taints, {}), 2u);
  EXPECT_EQ(FindUntoleratedDeviceTaint(taints, {toleration("broken", "NoSchedule")}), 2u);
  EXPECT_EQ(FindUntoleratedDeviceTaint(taints, {toleration("broken", "")}), std::nullopt);
  EXPECT_EQ(FindUntoleratedDeviceTaint({taint("a", "NoSchedule")}, {toleration("", "")}),
            std::nullopt);
  EXPECT_EQ(FindUntoleratedDeviceTaint({}, {}), std::nullopt);
  EXPECT_TRUE(IsScheduleBlockingEffect("NoSchedule"));
  EXPECT_FALSE(IsScheduleBlockingEffect("PreferNoSchedule"));
  EXPECT_FALSE(IsScheduleBlockingEffect("None"));
}

}  // namespace
}  // namespace draplane::api::labels
