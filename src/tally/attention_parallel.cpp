// Parallel hybrid mixer (Falcon-H1): GQA attention and a Mamba2 mixer side by side on the same
// input, their outputs summed. Nothing new is counted here: every tensor, FLOP and state byte is
// the rule of its part (attention_gqa.cpp, attention_mamba2.cpp), and the layer's totals are
// their sums. Per layer the state is the attention's KV cache (growing with the history) plus
// the mixer's fixed recurrent and convolution state.
#include "tally/rules.h"

namespace calc {

namespace {

/// Tags the tensors from `first` on with the kind of the part that stores them (its by-kind
/// name, kinds.cpp).
void tag(std::vector<tensor>& out, std::size_t first, const std::string& kind) {
  for (std::size_t i = first; i < out.size(); ++i) out[i].kind = kind;
}

}  // namespace

void add_tensors(const attention_parallel& a, const model_context& m, std::vector<tensor>& out) {
  std::size_t first = out.size();
  add_tensors(a.attention, m, out);  // q/k/v/o projections (and any norms, biases, sinks)
  tag(out, first, kind_name(attention_spec(a.attention)));
  first = out.size();
  add_tensors(a.mixer, m, out);  // in_proj, out_proj, conv1d, dt_bias, A_log, D, gated norm
  tag(out, first, kind_name(attention_spec(a.mixer)));
}

work flops(const attention_parallel& a, const model_context& m, const call& c) {
  work g = flops(a.attention, m, c);  // QK^T and AV over the history
  work s = flops(a.mixer, m, c);      // SSD scan (chunked or recurrent) and the convolution
  return {g.interaction + s.interaction, g.state + s.state};
}

std::vector<state_component> state(const attention_parallel& a, const model_context& m,
                                   const execution_spec& e) {
  std::vector<state_component> out = state(a.attention, m, e);         // "kv"
  for (state_component& sc : state(a.mixer, m, e)) out.push_back(sc);  // "recurrent", "conv"
  return out;
}

checked decode_read(const attention_parallel& a, const model_context& m, const execution_spec& e,
                    checked length) {
  // The KV history of the attention branch; the mixer's state is read and rewritten apart.
  return decode_read(a.attention, m, e, length) + decode_read(a.mixer, m, e, length);
}

}  // namespace calc
