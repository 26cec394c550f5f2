// calc: what an LLM costs to serve, exactly. See README.md and docs/commands.md.
#include <iostream>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return calc::run_cli(args, std::cout, std::cerr);
}
