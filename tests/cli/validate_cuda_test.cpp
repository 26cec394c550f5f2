// `calc validate --device cuda` from the command line without a GPU: the dry run's rows and
// report, and its option errors (exact one-line messages, exit code 2).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../unit/scratch.h"
#include "cli/cli.h"
#include "run_cli.h"

using namespace calc;

namespace {

using cli_testing::outcome;
using cli_testing::run;

}  // namespace

TEST_CASE("validate --device cuda --dry-run writes every row as JSON lines, GPU rows skipped") {
  auto path = calc::testing::scratch_dir("calc-tests") / "dry.jsonl";
  std::filesystem::remove(path);
  outcome o = run({"validate", "--model", "qwen3-8b", "--scale", "64", "--length", "24", "--device",
                   "cuda", "--dry-run", "--correctness-only", "--jsonl", path.string()});
  CHECK(o.err == "");
  CHECK(o.code == 0);
  CHECK(o.out.find("### cuda checks") != std::string::npos);
  std::string cells;  // the table's cells, padding squeezed out
  for (char c : o.out)
    if (c != ' ' || cells.empty() || cells.back() != ' ') cells += c;
  CHECK(cells.find("| gqa_decode paged (16-token pages, shuffled) | gqa_decode_paged | skipped |"
                   " pass: out: pass") != std::string::npos);
  std::ifstream in(path);
  int lines = 0, twins = 0, skipped = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    auto row = nlohmann::json::parse(line);
    twins += row.value("row", "") == "twin";
    skipped += row.value("gpu", "") == "skipped";
    CHECK(row.value("verdict", "") != "FAIL");
  }
  CHECK(twins == 15);          // one per check case
  CHECK(skipped == 1 + 15);    // the device row and each case's GPU row
  CHECK(lines == 1 + 2 * 15);  // --correctness-only: no timed cases
}

TEST_CASE("validate's CUDA options need --device cuda") {
  outcome o = run({"validate", "--model", "qwen3-8b", "--dry-run"});
  CHECK(o.code == 2);
  CHECK(o.err == "--dry-run: applies to --device cuda only\n");
  o = run({"validate", "--model", "qwen3-8b", "--correctness-only"});
  CHECK(o.code == 2);
  CHECK(o.err == "--correctness-only: applies to --device cuda only\n");
  o = run({"validate", "--model", "qwen3-8b", "--device", "cuda", "--dry-run", "--jsonl",
           "/nonexistent/dir/rows.jsonl"});
  CHECK(o.code == 2);
  CHECK(o.err == "--jsonl: cannot write '/nonexistent/dir/rows.jsonl'\n");
}
