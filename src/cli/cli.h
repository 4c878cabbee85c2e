// The `draplane` command line: subcommands map to library calls; the exit code comes from the
// Status of the call (0 success, 1 a reported problem such as a lint finding, 2 usage or I/O
// errors). Each subcommand lives in its own `*_command.cc` and is registered explicitly in
// cli.cc. This module is the only one that includes CLI11.
#pragma once

namespace draplane::cli {

// Parses `argv` and runs the chosen subcommand; returns the process exit code.
int Run(int argc, char** argv);

}  // namespace draplane::cli
