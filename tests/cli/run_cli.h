// Runs calc's command line in-process for the CLI tests: exit code, stdout and stderr as text.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace calc::cli_testing {

struct outcome {
  int code;
  std::string out;
  std::string err;
};

/// `calc args...` as a user would run it, captured.
inline outcome run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace calc::cli_testing
