// Scaled copies of a model for the reference executor: widths, heads and expert counts divided
// by k; layer patterns, compression ratios, windows, block sizes, top-k, chunk sizes and
// precisions kept, so every rule of the tally is exercised at a size a CPU runs in seconds.
#pragma once

#include <cstdint>

#include "spec/model_spec.h"

namespace calc {

/// Divides heads, head widths, hidden and intermediate widths, ranks, expert counts and the
/// vocabulary by k (never below 1, keeping heads divisible and top-k <= experts); Engram tables
/// shrink to at most 4,096 rows. k = 1 returns the model unchanged.
model_spec scale_spec(const model_spec& spec, std::int64_t k);

}  // namespace calc
