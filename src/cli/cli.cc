#include "cli/cli.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "common/log.h"
#include "server/openapi/openapi.h"

namespace draplane::cli {

std::vector<std::string> UnknownFieldsOf(const boost::json::object& object) {
  const boost::json::value* api_version = object.if_contains("apiVersion");
  const boost::json::value* kind = object.if_contains("kind");
  if (api_version == nullptr || !api_version->is_string() || kind == nullptr ||
      !kind->is_string()) {
    return {};
  }
  const std::string_view gv = api_version->get_string();
  const size_t slash = gv.find('/');
  boost::json::object copy = object;  // UnknownFields takes the object to prune it; it does not
  return server::openapi::UnknownFields(slash == std::string_view::npos ? "" : gv.substr(0, slash),
                                        gv.substr(slash == std::string_view::npos ? 0 : slash + 1),
                                        kind->get_string(), copy, /*prune=*/false);
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size());
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

int ReportFailure(std::string_view command, std::string_view what, const Status& s,
                  int not_found_exit) {
  std::fprintf(stderr, "draplane %.*s: %.*s: %s\n", static_cast<int>(command.size()),
               command.data(), static_cast<int>(what.size()), what.data(), s.ToString().c_str());
  return s.code() == StatusCode::kNotFound ? not_found_exit : 2;
}

int Run(int argc, char** argv) {
  CLI::App app{"draplane: a Dynamic Resource Allocation control plane for accelerator clusters",
               "draplane"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warning, error or off")
      ->capture_default_str();
  app.parse_complete_callback([&] {
    log::Level level;
    if (!log::ParseLevel(log_level, &level)) {
      throw CLI::ValidationError("--log-level", "unknown level " + log_level);
    }
    log::SetLevel(level);
  });

  AddVersionCommand(app);
  AddSchedulerCommand(app);
  AddControllerManagerCommand(app);
  AddExplainCommand(app);
  AddConvertCommand(app);
  AddLintCommand(app);
  AddCelCommand(app);
  AddServeCommand(app);
  AddKubeconfigCommand(app);
  AddScenarioCommand(app);
  AddAllocateCommand(app);
  AddAgentCommand(app);
  AddFakeKubeletCommand(app);
  AddSimCommand(app);
  AddPoolsCommand(app);
  AddQueueCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const CommandExit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "draplane: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace draplane::cli
