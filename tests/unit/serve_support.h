// What the time-under-load tests share: the message a refused input gives, and a file written
// for a command to read.
#pragma once

#include <fstream>
#include <functional>
#include <string>

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

}  // namespace calc::testing
