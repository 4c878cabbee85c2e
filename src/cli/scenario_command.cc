// `draplane scenario run PATH...`: run allocation scenarios (allocator/scenario/scenario.h) and
// report PASS / FAIL per scenario with a diff, then `N passed, M failed`.
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "allocator/scenario/scenario.h"
#include "cli/commands.h"

namespace draplane::cli {
namespace {

namespace scenario = allocator::scenario;

struct ScenarioOptions {
  std::vector<std::string> paths;
  std::string skip_file;
  bool quiet = false;
};

constexpr char kScenarioFooter[] = R"(
Each PATH is a scenario file or a directory searched recursively for *.yaml and *.yml. The format
is that of the shared allocator conformance set (conformance/allocator/FORMAT.md): a node, the
DeviceClasses and ResourceSlices, the claims of one Pod, the devices already in use, the feature
gates, and the expected outcome (success with the allocation results, unsatisfiable, or an error
substring).

Prints `PASS name` or `FAIL name` followed by the reason and a diff of expected (-) against
actual (+) results, then `N passed, M failed`. With --skip, scenarios named in the file (lines
`name reason`) are reported as `SKIP name: reason`.
Exit code: 0 when every scenario passes, 1 when one fails, 2 for usage errors and unreadable
paths.)";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  *out = buffer.str();
  return true;
}

int RunScenarios(const ScenarioOptions& options) {
  std::map<std::string, std::string> skips;
  if (!options.skip_file.empty()) {
    std::string text;
    if (!ReadFile(options.skip_file, &text)) {
      std::fprintf(stderr, "draplane scenario run: cannot read %s\n", options.skip_file.c_str());
      return 2;
    }
    StatusOr<std::vector<scenario::SkipEntry>> entries = scenario::ParseSkipList(text);
    if (!entries.ok()) {
      std::fprintf(stderr, "draplane scenario run: %s: %s\n", options.skip_file.c_str(),
                   std::string(entries.status().message()).c_str());
      return 2;
    }
    for (const scenario::SkipEntry& e : *entries) skips[e.name] = e.reason;
  }
  StatusOr<std::vector<std::string>> files = scenario::FindScenarioFiles(options.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "draplane scenario run: %s\n",
                 std::string(files.status().message()).c_str());
    return 2;
  }
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  for (const std::string& file : *files) {
    std::string text;
    if (!ReadFile(file, &text)) {
      std::printf("FAIL %s\n    cannot read the file\n", file.c_str());
      ++failed;
      continue;
    }
    StatusOr<scenario::Scenario> s =
        scenario::ParseScenario(text, file, {.unknown_fields = UnknownFieldsOf});
    if (!s.ok()) {
      std::printf("FAIL %s\n    %s\n", file.c_str(), std::string(s.status().message()).c_str());
      ++failed;
      continue;
    }
    if (auto it = skips.find(s->name); it != skips.end()) {
      std::printf("SKIP %s: %s\n", s->name.c_str(), it->second.c_str());
      ++skipped;
      continue;
    }
    scenario::RunResult r = scenario::RunScenario(*s);
    if (r.passed) {
      ++passed;
      if (!options.quiet) std::printf("PASS %s\n", r.name.c_str());
    } else {
      ++failed;
      std::printf("FAIL %s (%s)\n    %s\n", r.name.c_str(), file.c_str(), r.failure.c_str());
    }
  }
  std::printf("%d passed, %d failed", passed, failed);
  if (skipped > 0) std::printf(", %d skipped", skipped);
  std::printf("\n");
  std::fflush(stdout);
  return failed > 0 ? 1 : 0;
}

}  // namespace

void AddScenarioCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("scenario", "Allocation scenarios pinned as data");
  cmd->require_subcommand(1);
  auto options = std::make_shared<ScenarioOptions>();
  CLI::App* run = cmd->add_subcommand("run", "Run allocation scenario files and compare");
  run->add_option("paths", options->paths, "Scenario files or directories")->required();
  run->add_option("--skip", options->skip_file,
                  "A skip list: lines `name reason` naming scenarios not to run");
  run->add_flag("-q,--quiet", options->quiet, "Print only failures and the summary");
  run->footer(kScenarioFooter);
  run->callback([options] {
    const int code = RunScenarios(*options);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
