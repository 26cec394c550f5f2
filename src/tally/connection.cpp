// Connections between layers (§2.5). Block AttnRes replaces the residual sum with a learned mix
// over saved block snapshots and the running accumulator; each mix is a matrix-vector product of
// width d per candidate, so its matrix work is 2*d per candidate per row.
#include "tally/rules.h"

namespace calc {

checked attnres_candidates(std::int64_t layers, std::int64_t block_layers) {
  // A snapshot of the layer input is saved at the start of every block. Each of the 2*L
  // sublayers mixes the snapshots saved so far plus the running accumulator, except the first
  // sublayer of a block, whose accumulator has just been saved; a single candidate needs no mix.
  checked total = 0;
  for (std::int64_t s = 0; s < 2 * layers; ++s) {
    std::int64_t l = s / 2;
    std::int64_t snapshots = l / block_layers + 1;
    bool block_start = l % block_layers == 0 && s % 2 == 0;
    std::int64_t candidates = snapshots + (block_start ? 0 : 1);
    if (candidates > 1) total += candidates;
  }
  // The output mixes every snapshot and the final accumulator.
  total += ceil_div(layers, block_layers) + 1;
  return total;
}

}  // namespace calc
