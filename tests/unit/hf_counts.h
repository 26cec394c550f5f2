// What the Hugging Face import tests compare with published totals (parameters, stored bytes,
// state at a length), and where their config fixtures are.
#pragma once

#include <cstdint>
#include <string>

#include "spec/hf/import.h"
#include "tally/tally.h"
#include "test_model.h"

namespace calc::testing {

inline std::int64_t params(const model& m) { return tally_params(m.g).total.value(); }
inline std::int64_t weight_bytes(const model& m) {
  return tally_params(m.g).weight_bytes.value();
}
inline std::int64_t state(const model& m, std::int64_t n) {
  return tally_state(m.g, n).total.value();
}

/// A config.json text imported and read as calc reads `--model config.json`.
inline model from_json(const std::string& json) {
  return model::from_text(hf::import_text(json, "config.json", "t").plain);
}

#ifdef CALC_SOURCE_DIR
/// A file under tests/fixtures/hf/ (CALC_SOURCE_DIR: the test's entry in CMakeLists.txt).
inline std::string fixture(const std::string& name) {
  return std::string(CALC_SOURCE_DIR) + "/tests/fixtures/hf/" + name;
}
#endif

}  // namespace calc::testing
