// A scratch folder per test process, so two test runs on one machine (the sanitizer build beside
// the plain one, two checkouts) never write into each other's files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace calc::testing {

/// `<temp>/<name>-<pid>`, created if missing.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace calc::testing
