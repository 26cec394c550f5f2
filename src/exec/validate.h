// `calc validate`: the tally of a scaled spec, side by side with what the reference executor
// executed and allocated for the same calls, and the numerical equivalences, with verdicts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "spec/model_spec.h"

namespace calc {

struct validation_row {
  std::string quantity;  // e.g. "matrix FLOPs", "state bytes"
  std::string kind;      // layer kind, component or category
  std::int64_t predicted = 0;
  std::int64_t measured = 0;
  bool pass = false;
};

struct validation {
  model_spec scaled;
  std::vector<validation_row> rows;
  std::vector<equivalence> equivalences;
  bool pass = true;
};

/// Scales the model by k, tallies one prefill of `length` tokens and `decode_steps` decodes,
/// runs the same calls on the CPU twins and compares (exact for counts and bytes).
validation validate_model(const model_spec& spec, std::int64_t k, std::int64_t length,
                          std::int64_t decode_steps, std::uint64_t seed);

}  // namespace calc
