// `calc validate --device cuda` from the command line without a GPU: the dry run's rows and
// report, and its option errors (exact one-line messages, exit code 2).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
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
  CHECK(cells.find("| gqa_decode paged (16-token pages, shuffled) | gqa_decode_paged | batch 2, "
                    "q_heads 32, kv_heads 8, head_dim 128, context 1000, page_tokens 16 | skipped |"
                   " pass: out: pass") != std::string::npos);
  CHECK(o.out.find("faults: drop one token caught, swap two heads caught, leave an output "
                   "unwritten caught") != std::string::npos);
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

TEST_CASE("validate --device cuda --dry-run: every timed row has its shape and a prediction") {
  auto path = calc::testing::scratch_dir("calc-tests") / "dry-timed.jsonl";
  std::filesystem::remove(path);
  outcome o = run({"validate", "--model", "qwen3-8b", "--device", "cuda", "--dry-run", "--jsonl",
                   path.string(), "--format", "json"});
  CHECK(o.err == "");
  CHECK(o.code == 0);
  std::ifstream in(path);
  std::map<std::string, int> bytes_rows;
  for (std::string line; std::getline(in, line);) {
    auto row = nlohmann::json::parse(line);
    if (row.value("row", "") != "bytes") continue;
    CAPTURE(line);
    ++bytes_rows[row.at("kernel")];
    CHECK(row.at("predicted_bytes").is_number_integer());
    CHECK(row.at("shape").at("batch").is_number_integer());
    CHECK(row.at("verdict") != "MISMATCH");
  }
  CHECK(bytes_rows == std::map<std::string, int>{{"delta_step", 3},
                                                 {"gqa_decode", 5},
                                                 {"mla_decode", 2},
                                                 {"moe_gemm", 3},
                                                 {"sparse_decode", 2}});
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
