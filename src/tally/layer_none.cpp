// Layers with only a mixer or only a feed-forward block (`attention: none`, `ffn: none`;
// Nemotron-H's M, *, - and E layers). The missing half contributes nothing: no tensors, no
// FLOPs, no state, no reads. The layer's norms stay its `norms:` count (tally.cpp).
#include "tally/rules.h"

namespace calc {

void add_tensors(const attention_none&, const model_context&, std::vector<tensor>&) {}

work flops(const attention_none&, const model_context&, const call&) { return {0, 0}; }

std::vector<state_component> state(const attention_none&, const model_context&,
                                   const execution_spec&) {
  return {};
}

checked decode_read(const attention_none&, const model_context&, const execution_spec&, checked) {
  return 0;
}

void add_tensors(const ffn_none&, const model_context&, std::vector<tensor>&) {}

}  // namespace calc
