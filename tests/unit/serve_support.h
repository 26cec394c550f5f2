// What the time-under-load tests share: the message a refused input gives, a file written for
// a command to read, the command line run in-process with its output captured, and a card sized
// for a KV pool.
#pragma once

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/error.h"
#include "scratch.h"
#include "serve/batching.h"

namespace calc::testing {

/// The spec_error message `f` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

/// `text` written to `name` in this process's scratch folder; its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  auto p = scratch_dir("calc-serve-tests") / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

/// `calc args...` as a user would run it: the exit code, stdout in `out` and stderr in `err`.
inline int run(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::ostringstream o, e;
  int rc = run_cli(args, o, e);
  out = o.str();
  err = e.str();
  return rc;
}

/// `calc serve --model model --gpu gpu more...`.
inline std::vector<std::string> serve_args(const std::string& model, const std::string& gpu,
                                           const std::vector<std::string>& more) {
  std::vector<std::string> a = {"serve", "--model", model, "--gpu", gpu};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

/// `d` on a card whose KV pool under `cfg` is `pool` bytes (the byte above): the memory as sold
/// set for it, without a runtime figure, and `cfg` sizing the pool by its memory_fraction alone
/// (budget_engine off; the engines' deductions are tested with `calc capacity`'s rules).
inline serve::deployment with_pool_bytes(serve::deployment d, serve::batching_config& cfg,
                                         double pool) {
  cfg.budget_engine = nullptr;
  d.gpu.runtime_memory = 0;
  double memory = cfg.fraction_of_free ? d.weight_bytes_per_rank + pool / cfg.memory_fraction
                                       : (d.weight_bytes_per_rank + pool) / cfg.memory_fraction;
  d.gpu.memory = static_cast<std::int64_t>(memory) + 1;
  return d;
}

}  // namespace calc::testing
