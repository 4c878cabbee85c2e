#include "cli/cli.h"

int main(int argc, char** argv) { return draplane::cli::Run(argc, argv); }
