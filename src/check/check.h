// `calc check`: every printed claim of the chapter, re-derived and compared at its printed
// precision. Scenario files (scenarios/**.yaml) hold the expected numbers as data; this module
// runs each claim's command in-process, reads one JSON field (or an expression of fields),
// rounds half-to-even to the printed decimals and compares.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/checked.h"
#include "common/error.h"

namespace calc {

struct claim {
  std::string id;
  std::string where;       // chapter section or table
  std::string run;         // a calc command line, without "calc" and --format
  std::string field;       // JSON pointer, or an expression of pointers: "/a / (/a + /b)"
  std::string expect;      // as printed: "1.125 GiB", "8,190,735,360", "<0.001 billion"
  std::string over_run;    // optional: divide by a field of another command's output ...
  std::string over_field;  // ... for ratios between two runs (models, paths)
  bool open = false;       // cannot be reproduced from structure; listed apart, never fails
  std::string analysis;    // why, for open claims
  std::string file;
  source_location location;
};

/// Reads every claim of one scenario file (strict: unknown keys are errors).
std::vector<claim> read_scenario_file(const std::string& path);

/// Reads every *.yaml under a folder (recursively, sorted) or one file. A path that cannot be
/// read (missing, too long, no permission) is a spec_error naming it.
std::vector<claim> read_scenarios(const std::string& path);

/// The repository a scenario path belongs to: the folder holding the nearest `scenarios` folder
/// at or above `path`. Claims name fixtures (tests/fixtures/...) relative to it, so they run
/// from there whatever the working folder; nullopt for a scenario file outside such a folder.
std::optional<std::string> repository_root(const std::string& path);

struct claim_result {
  const claim* c = nullptr;
  std::string got;  // the value at the printed precision, with the unit
  bool pass = false;
  std::string error;  // when the command itself failed
};

/// Runs a calc command line and returns its JSON result (the CLI supplies this).
using evaluator = std::function<nlohmann::ordered_json(const std::vector<std::string>& args)>;

/// Evaluates claims; the same command line runs once however many claims read it.
std::vector<claim_result> run_claims(const std::vector<claim>& claims, const evaluator& eval);

/// Compares one exact value (num/den) with a printed expectation; returns the printed-precision
/// rendering of the value and whether it matches. Throws spec_error on a malformed expectation.
std::pair<std::string, bool> compare_printed(int128 num, int128 den, const std::string& expect);

/// Evaluates a field expression over a JSON document to an exact fraction {num, den}.
std::pair<int128, int128> evaluate_field(const nlohmann::ordered_json& doc,
                                         const std::string& field);

/// Splits a command line on spaces, keeping "quoted words" together.
std::vector<std::string> split_command(const std::string& line);

}  // namespace calc
