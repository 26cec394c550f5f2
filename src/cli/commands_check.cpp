// `calc check`: every chapter claim in scenarios/.
#include <fmt/format.h>

#include <filesystem>

#include "check/check.h"
#include "cli/cli.h"
#include "cli/support.h"

namespace calc::cli {

namespace {

/// Runs the claims from `dir` and returns to the working folder after, even on a throw: claims
/// name fixtures relative to the repository (`--model tests/fixtures/hf/qwen3-8b.json`).
class working_folder {
 public:
  explicit working_folder(const std::optional<std::string>& dir) {
    if (!dir) return;
    std::error_code ec;
    before_ = std::filesystem::current_path(ec);
    if (!ec) std::filesystem::current_path(*dir, ec);
    moved_ = !ec;
  }
  ~working_folder() {
    std::error_code ec;
    if (moved_) std::filesystem::current_path(before_, ec);
  }
  working_folder(const working_folder&) = delete;
  working_folder& operator=(const working_folder&) = delete;

 private:
  std::filesystem::path before_;
  bool moved_ = false;
};

}  // namespace

result run_check(const options& o) {
  std::vector<claim> claims = read_scenarios(o.scenarios);
  model_cache_scope cache;  // each model file is read once, whatever the claims
  std::vector<claim_result> results;
  {
    working_folder at_root(repository_root(o.scenarios));
    results = run_claims(claims, evaluate);
  }
  ojson j;
  std::int64_t passed = 0, failed = 0, open = 0;
  ojson rows = ojson::array(), open_rows = ojson::array();
  for (const claim_result& r : results) {
    ojson row = {{"id", r.c->id},
                 {"where", r.c->where},
                 {"expected", r.c->expect},
                 {"got", r.got},
                 {"pass", r.pass}};
    if (!r.error.empty()) row["error"] = r.error;
    if (r.c->open) {
      ++open;
      row["analysis"] = r.c->analysis;
      open_rows.push_back(row);
    } else {
      r.pass ? ++passed : ++failed;
      rows.push_back(row);
    }
  }
  j["claims"] = static_cast<std::int64_t>(results.size());
  j["passed"] = passed;
  j["failed"] = failed;
  j["open"] = open;
  j["results"] = rows;
  j["open_claims"] = open_rows;
  return {j,
          fmt::format("calc check: {} claims, {} passed, {} failed, {} open", results.size(),
                      passed, failed, open),
          failed > 0 ? 1 : 0,
          fmt::format("\n{} open claims listed apart (not failures)\n{} passed, {} failed\n", open,
                      passed, failed)};
}

}  // namespace calc::cli
