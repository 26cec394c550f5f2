// The reference executor: runs a (scaled) model's layers on random weights and random tokens,
// one prefill and some decode steps, counting the work its twins execute and the state they
// allocate, and checks the numerical equivalences the tallies rely on.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exec/runtime.h"
#include "spec/model_spec.h"

namespace calc {

struct measured_run {
  exec::counters work;                        // summed over every call
  std::map<std::string, std::int64_t> state;  // allocated bytes by component, at the end
  ref::mat last_logits;                       // logits of the last call's last row
};

/// Prefill `length` tokens, then `decode_steps` single-token calls, on `spec` (B = 1).
measured_run execute(const model_spec& spec, std::int64_t length, std::int64_t decode_steps,
                     std::uint64_t seed);

struct equivalence {
  std::string name;
  double max_abs_error = 0;
  double nmse = 0;       // ||a - b||^2 / ||b||^2
  double tolerance = 0;  // on nmse
  bool pass = false;
  std::string why;  // how the tolerance was chosen
};

/// Cached decode = full recompute; compact MLA = expanded MLA; chunked = recurrent linear
/// attention — whichever apply to the model.
std::vector<equivalence> check_equivalences(const model_spec& spec, std::int64_t length,
                                            std::int64_t decode_steps, std::uint64_t seed);

}  // namespace calc
