// Mamba2 / SSD mixer (Mamba2, Nemotron-H, Falcon-H1). Shapes follow the public Mamba2 mixer:
// in_proj d -> [z | x | B | C | dt] of 2*inner + 2*groups*N + heads, a depthwise convolution
// over [x | B | C] (inner + 2*groups*N channels), dt_bias, A_log and D per head, a gated RMSNorm
// over inner, out_proj inner -> d; inner = heads * P (P = head_dim, N = state_dim).
//
// State is fixed: heads x P x N at precision.recurrent, read and rewritten every decode step, and
// conv_kernel slots per convolution channel at precision.conv (the Gated DeltaNet / KDA
// convention of attention_linear.cpp, which is also the [channels, conv_kernel] conv_states
// tensor HF's Mamba2 cache keeps). There is no KV cache.
//
// A decode step (or a recurrent prefill) runs per token and head: the state update
// h += (dt x) (x) B and the readout y = h C, 2*P*N FLOPs each (matrix FLOPs when
// execution.linear_step_flops). A chunked prefill runs SSD over chunks of execution.linear_chunk
// tokens, the tail padded to a full chunk (as HF's torch_forward pads the sequence), per chunk
// and head: C B^T (2 C^2 N), the masked scores times X (2 C^2 P), the chunk's final state
// B^T X (2 C N P) and the carried state's output C h (2 C N P). Decays, D, dt and the gate are
// element-wise and not counted.
#include "tally/rules.h"

namespace calc {

namespace {

checked inner(const attention_mamba2& a) { return checked(a.heads) * a.head_dim; }

/// x, B and C: the channels the convolution runs over (kinds.cpp).
checked conv_channels(const attention_mamba2& a) { return recurrent_of(a).conv_channels; }

/// z, x, B, C and dt: what in_proj produces.
checked in_width(const attention_mamba2& a) { return inner(a) + conv_channels(a) + a.heads; }

}  // namespace

checked ssd_chunk_work(const execution_spec& e, checked tokens, checked head_dim,
                       checked state_dim) {
  checked c = e.chunk;
  checked per_chunk = checked(2) * c * c * state_dim + checked(2) * c * c * head_dim +
                      checked(4) * c * state_dim * head_dim;
  return ceil_div(tokens, c) * per_chunk;
}

void add_tensors(const attention_mamba2& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* conv_w = &m.precision->weights;  // convolution taps: not a projection
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  tensor in = matrix("attention", "in_proj", category::attention, d, in_width(a), w);
  in.shards = a.heads;
  out.push_back(in);
  tensor o = matrix("attention", "out_proj", category::attention, inner(a), d,
                    m.precision->attention_out_weights());
  o.shards = a.heads;
  out.push_back(o);
  if (a.proj_bias) {
    out.push_back({"norms", "in_proj_bias", category::other, in_width(a), norms});
    out.push_back({"norms", "out_proj_bias", category::other, d, norms});
  }
  out.push_back({"conv", "conv1d", category::other, conv_channels(a) * a.conv_kernel, conv_w});
  if (a.conv_bias)
    out.push_back({"norms", "conv1d_bias", category::other, conv_channels(a), norms});
  out.push_back({"norms", "dt_bias", category::other, a.heads, norms});
  out.push_back({"norms", "A_log", category::other, a.heads, m.precision->ssm_params_format()});
  out.push_back({"norms", "D", category::other, a.heads, m.precision->ssm_params_format()});
  if (a.gated_norm) out.push_back({"norms", "gated_norm", category::other, inner(a), norms});
}

work flops(const attention_mamba2& a, const model_context&, const call& c) {
  // Per token and head: h += (dt x) (x) B and y = h C, 2 P N each; SSD chunks in a prefill.
  return {0, recurrent_flops(recurrent_of(a), c)};
}

std::vector<state_component> state(const attention_mamba2& a, const model_context& m,
                                   const execution_spec&) {
  return linear_state(recurrent_of(a), m);
}

checked decode_read(const attention_mamba2&, const model_context&, const execution_spec&, checked) {
  return 0;  // no history: the SSM state is read and rewritten (decode_state_rw)
}

}  // namespace calc
