// A bundled (or inline) model read and expanded for tests, kept alive together with its graph.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"

namespace calc::testing {

struct model {
  model_spec spec;
  graph g;
  /// A bundled model by name, with optional --set assignments.
  explicit model(const std::string& name, std::vector<std::string> sets = {})
      : spec(read_model_file(resolve_model_path(name), sets)), g(build_graph(spec)) {}
  /// A model from YAML text.
  static model from_text(const std::string& yaml, std::vector<std::string> sets = {}) {
    return model(read_model_text(yaml, "test.yaml", sets));
  }
  model(const model& other) : spec(other.spec), g(build_graph(spec)) {}

 private:
  explicit model(model_spec s) : spec(std::move(s)), g(build_graph(spec)) {}
};

/// The one-line error a model YAML text raises, or "" when it reads cleanly.
inline std::string error_of(const std::string& yaml) {
  try {
    read_model_text(yaml, "test.yaml", {});
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

/// The one-line error importing config.json text raises, or "" when it imports cleanly.
inline std::string import_error(const std::string& json) {
  try {
    hf::import_text(json, "config.json", "t");
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

/// Every bundled model file: models/*.yaml and models/examples/*.yaml, sorted.
inline std::vector<std::string> bundled_model_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& dir : {models_dir(), models_dir() + "/examples"})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace calc::testing
