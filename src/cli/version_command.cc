#include <cstdio>

#include "cli/commands.h"

namespace draplane::cli {

void AddVersionCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print the draplane version");
  cmd->callback([] { std::printf("draplane %s\n", DRAPLANE_VERSION); });
}

}  // namespace draplane::cli
