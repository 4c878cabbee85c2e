// Runs every allocation scenario of the shared conformance set as its own test case
// (`Scenarios/ConformanceTest.Run/<name>`), skipping the entries of tests/allocator/skip.txt with
// their reason, and draplane's own scenarios under tests/allocator/scenarios
// (`Own/OwnScenarioTest.Run/<name>`: upstream fixes and features after the shared snapshot).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "allocator/scenario/scenario.h"
#include "api/codec/yaml.h"

namespace draplane::allocator::scenario {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The scenario files below `dir`; none when it cannot be read.
std::vector<std::string> ScenarioFilesUnder(const std::string& dir) {
  StatusOr<std::vector<std::string>> files = FindScenarioFiles({dir});
  return files.ok() ? *files : std::vector<std::string>();
}

std::vector<std::string> ScenarioFiles() {
  return ScenarioFilesUnder(std::string(DRAPLANE_SHARED_DIR) + "/conformance/allocator");
}

std::vector<std::string> OwnScenarioFiles() {
  return ScenarioFilesUnder(std::string(DRAPLANE_SOURCE_DIR) + "/tests/allocator/scenarios");
}

const std::map<std::string, std::string>& SkipList() {
  static const std::map<std::string, std::string> skips = [] {
    std::map<std::string, std::string> out;
    StatusOr<std::vector<SkipEntry>> entries =
        ParseSkipList(ReadFile(std::string(DRAPLANE_SOURCE_DIR) + "/tests/allocator/skip.txt"));
    if (entries.ok()) {
      for (const SkipEntry& e : *entries) out[e.name] = e.reason;
    }
    return out;
  }();
  return skips;
}

class ConformanceTest : public testing::TestWithParam<std::string> {};

TEST_P(ConformanceTest, Run) {
  const std::string& file = GetParam();
  StatusOr<Scenario> scenario = ParseScenario(ReadFile(file), file);
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  if (auto it = SkipList().find(scenario->name); it != SkipList().end()) {
    GTEST_SKIP() << it->second;
  }
  RunResult result = RunScenario(*scenario);
  EXPECT_TRUE(result.passed) << file << "\n" << result.failure;
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string base = info.param.substr(info.param.find_last_of('/') + 1);
  base = base.substr(0, base.find_last_of('.'));
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return base;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ConformanceTest, testing::ValuesIn(ScenarioFiles()), TestName);

// Our own scenarios have no skip list: each one must pass.
class OwnScenarioTest : public testing::TestWithParam<std::string> {};

TEST_P(OwnScenarioTest, Run) {
  const std::string& file = GetParam();
  StatusOr<Scenario> scenario = ParseScenario(ReadFile(file), file);
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  RunResult result = RunScenario(*scenario);
  EXPECT_TRUE(result.passed) << file << "\n" << result.failure;
}

INSTANTIATE_TEST_SUITE_P(Own, OwnScenarioTest, testing::ValuesIn(OwnScenarioFiles()), TestName);

// draplane's own scenarios: Allocation-mode quotas (the `quotas:` section,
// docs/design/holdings.md).
std::vector<std::string> QuotaScenarioFiles() {
  return ScenarioFilesUnder(std::string(DRAPLANE_SOURCE_DIR) + "/tests/allocator/quota");
}

INSTANTIATE_TEST_SUITE_P(Quota, OwnScenarioTest, testing::ValuesIn(QuotaScenarioFiles()), TestName);

TEST(ConformanceSuiteTest, FindsTheQuotaScenarios) { EXPECT_GE(QuotaScenarioFiles().size(), 19u); }

// Every case of upstream's ResourceClaim evaluator test (ported in tests/data/quota, run by
// api_quota_test) is also a default-mode scenario: tests/allocator/quota/default-mode/.
TEST(ConformanceSuiteTest, EveryUpstreamEvaluatorCaseIsADefaultModeScenario) {
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(
      ReadFile(std::string(DRAPLANE_SOURCE_DIR) + "/tests/data/quota/resource_claims.yaml"));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  const boost::json::array& cases = docs->front().value.at("usage").as_array();
  EXPECT_EQ(cases.size(), 10u);
  const std::vector<std::string> files = QuotaScenarioFiles();
  for (const boost::json::value& c : cases) {
    std::string name(c.at("name").as_string());
    std::string file = std::string(DRAPLANE_SOURCE_DIR) +
                       "/tests/allocator/quota/default-mode/default-mode-" + name + ".yaml";
    EXPECT_NE(std::find(files.begin(), files.end(), file), files.end()) << name;
  }
}

TEST(ConformanceSuiteTest, FindsTheSharedScenarios) {
  // Guard against a silently empty suite (a wrong DRAPLANE_SHARED_DIR).
  EXPECT_GE(ScenarioFiles().size(), 166u);
}

TEST(ConformanceSuiteTest, FindsOwnScenarios) { EXPECT_GE(OwnScenarioFiles().size(), 19u); }

TEST(ConformanceSuiteTest, SkipListIsWellFormed) {
  StatusOr<std::vector<SkipEntry>> entries =
      ParseSkipList(ReadFile(std::string(DRAPLANE_SOURCE_DIR) + "/tests/allocator/skip.txt"));
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  for (const SkipEntry& e : *entries) EXPECT_FALSE(e.reason.empty()) << e.name;
}

}  // namespace
}  // namespace draplane::allocator::scenario
