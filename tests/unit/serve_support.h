// What the time-under-load tests share: the message a refused input gives, a file written for
// a command to read, and the command line run in-process with its output captured.
#pragma once

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/error.h"
#include "scratch.h"

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

}  // namespace calc::testing
