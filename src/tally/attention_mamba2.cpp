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
//
// A Mamba-1 (S6) mixer (scan = selective; model_spec.h) is the same rule with one head per inner
// channel (P = 1): in_proj d -> [x | z] of 2*inner, the convolution over x alone, x_proj
// inner -> [dt | B | C] of dt_rank + 2N, dt_proj dt_rank -> inner with a bias, A_log inner x N,
// D per channel, no gated norm, and (Jamba) RMSNorms on dt, B and C. Its state is inner x N and
// the convolution's inner x conv_kernel slots; its scan has no chunked form, so every prompt
// token is a recurrent step (recurrent_of: scan none): h = exp(dt A) h + (dt x) B and y = h C,
// 2N FLOPs each per channel.
//
// A gated short convolution (scan = short_conv, LFM2) is the convolution alone: in_proj
// d -> [B | C | x] of 3*inner, the depthwise convolution over B x (inner channels), out_proj of
// C times its output; state_dim 0, so no state matrix and no step FLOPs, only the conv_kernel
// slots per channel and the convolution's FLOPs.
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

namespace {

/// Mamba-1's tensors (HF MambaMixer / JambaMambaMixer names).
void add_selective_tensors(const attention_mamba2& a, const model_context& m,
                           std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* conv_w = m.precision->conv_tap_weights();  // taps: not a Linear
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden, n = inner(a);
  tensor in = matrix("attention", "in_proj", category::attention, d, checked(2) * n, w);
  in.shards = a.heads;
  out.push_back(in);
  tensor x = matrix("attention", "x_proj", category::attention, n,
                    checked(a.dt_rank) + checked(2) * a.state_dim, w);
  x.shards = a.heads;
  out.push_back(x);
  tensor dt = matrix("attention", "dt_proj", category::attention, a.dt_rank, n, w);
  dt.shards = a.heads;
  out.push_back(dt);
  tensor o = matrix("attention", "out_proj", category::attention, n, d,
                    m.precision->attention_out_weights());
  o.shards = a.heads;
  out.push_back(o);
  if (a.proj_bias) {
    out.push_back({"norms", "in_proj_bias", category::other, checked(2) * n, norms});
    out.push_back({"norms", "out_proj_bias", category::other, d, norms});
  }
  out.push_back(conv_taps("conv1d", {n}, a.conv_kernel, conv_w));
  if (a.conv_bias) out.push_back({"norms", "conv1d_bias", category::other, n, norms});
  out.push_back({"norms", "dt_proj_bias", category::other, n, norms});
  out.push_back(
      {"norms", "A_log", category::other, n * a.state_dim, m.precision->ssm_params_format()});
  out.push_back({"norms", "D", category::other, n, m.precision->ssm_params_format()});
  if (a.dt_norms)
    out.push_back({"norms", "dt_b_c_norms", category::other,
                   checked(a.dt_rank) + checked(2) * a.state_dim, norms});
}

/// A gated short convolution's tensors (HF Lfm2ShortConv): in_proj d -> B, C, x, the depthwise
/// conv1d over B x, out_proj back to d; conv_bias puts a bias on all three.
void add_short_conv_tensors(const attention_mamba2& a, const model_context& m,
                            std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden, n = inner(a);
  tensor in = matrix("attention", "in_proj", category::attention, d, checked(3) * n, w);
  in.shards = a.heads;
  out.push_back(in);
  tensor o = matrix("attention", "out_proj", category::attention, n, d,
                    m.precision->attention_out_weights());
  o.shards = a.heads;
  out.push_back(o);
  out.push_back(conv_taps("conv1d", {n}, a.conv_kernel, m.precision->conv_tap_weights()));
  if (a.conv_bias) {
    out.push_back({"norms", "in_proj_bias", category::other, checked(3) * n, norms});
    out.push_back({"norms", "conv1d_bias", category::other, n, norms});
    out.push_back({"norms", "out_proj_bias", category::other, d, norms});
  }
}

}  // namespace

void add_tensors(const attention_mamba2& a, const model_context& m, std::vector<tensor>& out) {
  if (a.selective()) return add_selective_tensors(a, m, out);
  if (a.short_conv()) return add_short_conv_tensors(a, m, out);
  const dtype* w = m.precision->attention_weights();
  const dtype* conv_w = m.precision->conv_tap_weights();  // taps: not a Linear
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
  out.push_back(conv_taps("conv1d", {conv_channels(a)}, a.conv_kernel, conv_w));
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
