// The command-line front end: one table of subcommands (name, help, options, handler).
// Only this module and src/report/ write output; only run_cli() catches errors and picks the
// exit code (0 ok, 1 a check failed, 2 bad input).
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "report/format.h"

namespace calc {

/// Runs `calc <args...>` printing to out/err; returns the exit code.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// Runs one command in-process and returns its JSON result (for `calc check` and tests).
/// Throws spec_error on bad input.
ojson evaluate(const std::vector<std::string>& args);

/// The command table as the parser is built from it: each subcommand's name with the option
/// names it takes ("--model", "-m"), in table order. Shell completion is generated from the
/// same table; tests check that the scripts list all of it.
std::vector<std::pair<std::string, std::vector<std::string>>> command_options();

}  // namespace calc
