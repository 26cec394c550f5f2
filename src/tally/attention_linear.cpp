// Linear attention with a recurrent state: Gated DeltaNet, lightning attention (MiniMax) and Kimi
// Delta Attention (§2.3.4, §2.3.5; seed 004). The state is fixed in size (heads x d_k x d_v) and
// read and rewritten by every decode step; short convolutions keep `kernel` slots per channel.
// Lightning attention's prefill is SSD's chunked form over the model's own blocks (kinds.cpp).
//
// Prefill runs the chunked algorithm (intra-chunk GEMMs, one state pass per chunk) unless the
// call asks for the recurrent one; a decode step is always recurrent. Which of these count as
// matrix FLOPs is part of the execution path (docs/decisions/2026-11-29-linear-attention.md).
#include "tally/rules.h"

namespace calc {

checked chunk_work(const execution_spec& e, checked tokens, checked key_dim, checked value_dim) {
  checked c = e.chunk;
  if (e.chunk_flops == chunk_rule::padded_gemms) {
    // K_beta K^T and Q K^T (2 C^2 d_k each); Kcum S, Q S, K^T v_new (2 C d_k d_v each);
    // attn v_new (2 C^2 d_v). The tail chunk is padded to C.
    checked per_chunk = checked(4) * c * c * key_dim + checked(6) * c * key_dim * value_dim +
                        checked(2) * c * c * value_dim;
    return ceil_div(tokens, c) * per_chunk;
  }
  // Valid tokens only: KK^T and the W/U forward substitution over the strict lower triangle,
  // state predict/query/update, causal QK and PV over the causal triangle.
  auto chunk = [&](checked n) {
    checked low = n * (n - 1) / 2, causal = n * (n + 1) / 2;
    return checked(2) * low * key_dim + checked(2) * low * (key_dim + value_dim) +
           checked(6) * n * key_dim * value_dim + checked(2) * causal * key_dim +
           checked(2) * causal * value_dim;
  };
  checked full = tokens / c, rest = tokens - full * c;
  return full * chunk(c) + (rest > 0 ? chunk(rest) : checked(0));
}

checked conv_work(checked channels, std::int64_t kernel, const call& c) {
  if (!c.exec.conv_flops || kernel == 0) return 0;
  // A fresh sequence pads kernel-1 zeros and yields P+kernel-1 outputs before the crop; with a
  // cache, the kernel slots and P new columns yield P+1.
  checked outputs = c.context == 0 ? checked(c.tokens) + kernel - 1 : checked(c.tokens) + 1;
  return checked(2) * channels * kernel * outputs * c.batch;
}

checked recurrent_flops(const recurrent_shape& r, const call& c) {
  checked s = 0;
  if (c.decode_step() || c.exec.linear == linear_prefill::recurrent ||
      r.chunks == recurrent_shape::scan::none) {
    // A recurrent step per token (kinds.cpp: the delta rule's S^T k, k (x) delta, S^T q; SSD's
    // update and readout), 2 d_k d_v each per head.
    if (c.exec.step_state_gemms) s += c.rows() * r.step_flops();
  } else {
    execution_spec e = c.exec;
    if (r.chunk > 0) e.chunk = r.chunk;  // the kind's own block (lightning attention)
    // SSD's work is symmetric in its two state sides, so lightning's d_k x d_v passes as is.
    checked per_head = r.chunks == recurrent_shape::scan::ssd
                           ? ssd_chunk_work(e, c.tokens, r.key_dim, r.value_dim)
                           : chunk_work(e, c.tokens, r.key_dim, r.value_dim);
    s += checked(c.batch) * r.heads * per_head;
  }
  return s + conv_work(r.conv_channels, r.conv_kernel, c);
}

std::vector<state_component> linear_state(const recurrent_shape& r, const model_context& m) {
  std::vector<state_component> out;
  if (r.state_values() > 0) {  // a short convolution (LFM2) keeps no state matrix
    state_component rec;
    rec.name = "recurrent";
    rec.shards = r.heads;
    rec.fixed = m.precision->recurrent.bytes(r.state_values());
    rec.read_write_each_step = true;
    rec.kind = state_class::fixed;
    out.push_back(rec);
  }
  if (r.conv_kernel > 0) {
    // Slots = kernel width, as the cached convolution update keeps them (§2.3.5: 1.875 MiB).
    state_component conv;
    conv.name = "conv";
    conv.fixed = m.precision->conv.bytes(r.conv_channels * r.conv_kernel);
    conv.kind = state_class::fixed;
    conv.shards = r.heads;
    out.push_back(conv);
  }
  return out;
}

namespace {

/// Lightning attention's tensors (MiniMax's MiniMaxText01LightningAttention names). The per-head
/// decay slopes are computed from the head and layer index, a buffer: no parameter.
void add_lightning_tensors(const attention_gdn& a, const model_context& m,
                           std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  checked d = m.hidden;
  checked width = checked(a.v_heads) * a.value_dim;
  checked qkv = checked(2) * a.qk_heads * a.key_dim + width;
  out.push_back(matrix("attention", "qkv_proj", category::attention, d, qkv, w));
  out.push_back(matrix("attention", "output_gate", category::attention, d, width, w));
  out.push_back(matrix("attention", "out_proj", category::attention, width, d,
                       m.precision->attention_out_weights()));
  out.push_back({"norms", "norm", category::other, width, &m.precision->norms});  // all heads
}

}  // namespace

void add_tensors(const attention_gdn& a, const model_context& m, std::vector<tensor>& out) {
  if (a.lightning()) return add_lightning_tensors(a, m, out);
  const dtype* w = m.precision->attention_weights();
  const dtype* conv_w = m.precision->conv_tap_weights();  // taps: not a Linear
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  checked v_width = checked(a.v_heads) * a.value_dim;
  checked qkv = recurrent_of(a).conv_channels;  // Q, K and V: what the convolution runs over
  out.push_back(matrix("attention", "in_proj_qkv", category::attention, d, qkv, w));
  out.push_back(matrix("attention", "in_proj_z", category::attention, d, v_width, w));    // gate
  const dtype* gates = m.precision->mixer_gate_weights();  // kept apart by Qwen's FP8 releases
  out.push_back(matrix("attention", "in_proj_a", category::attention, d, a.v_heads, gates));
  out.push_back(matrix("attention", "in_proj_b", category::attention, d, a.v_heads, gates));
  out.push_back(matrix("attention", "out_proj", category::attention, v_width, d,
                       m.precision->attention_out_weights()));
  if (a.conv_kernel > 0)
    out.push_back(conv_taps("conv1d", {qkv}, a.conv_kernel, conv_w));
  // A_log and the gated norm in `ssm_params` (F32 in the Qwen3.5 releases' files, BF16 in
  // Qwen3-Next's and Qwen3.6's); dt_bias is stored in the model dtype in all of them.
  const dtype* ssm = m.precision->ssm_params_format();
  out.push_back({"norms", "A_log", category::other, a.v_heads, ssm});
  out.push_back({"norms", "dt_bias", category::other, a.v_heads, norms});
  out.push_back({"norms", "gated_norm", category::other, a.value_dim, ssm});  // shared by heads
}

work flops(const attention_gdn& a, const model_context&, const call& c) {
  return {0, recurrent_flops(recurrent_of(a), c)};
}

std::vector<state_component> state(const attention_gdn& a, const model_context& m,
                                   const execution_spec&) {
  return linear_state(recurrent_of(a), m);
}

void add_tensors(const attention_kda& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* conv_w = m.precision->conv_tap_weights();  // taps: not a Linear
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  checked k_width = checked(a.heads) * a.key_dim;
  checked v_width = checked(a.heads) * a.value_dim;
  out.push_back(matrix("attention", "q_proj", category::attention, d, k_width, w));
  out.push_back(matrix("attention", "k_proj", category::attention, d, k_width, w));
  out.push_back(matrix("attention", "v_proj", category::attention, d, v_width, w));
  out.push_back(matrix("attention", "f_a_proj", category::attention, d, a.decay_rank, w));
  out.push_back(matrix("attention", "f_b_proj", category::attention, a.decay_rank, k_width, w));
  out.push_back(matrix("attention", "beta_proj", category::attention, d, a.heads, w));
  if (a.output_gate && a.gate_rank > 0) {  // low rank, like the decay (Kimi Linear)
    out.push_back(matrix("attention", "g_a_proj", category::attention, d, a.gate_rank, w));
    out.push_back(matrix("attention", "g_b_proj", category::attention, a.gate_rank, v_width, w));
  } else if (a.output_gate) {
    out.push_back(matrix("attention", "g_proj", category::attention, d, v_width, w));
  }
  out.push_back(matrix("attention", "o_proj", category::attention, v_width, d,
                       m.precision->attention_out_weights()));
  if (a.conv_kernel > 0)
    out.push_back(conv_taps("q_k_v_conv1d", {k_width, k_width, v_width}, a.conv_kernel, conv_w));
  out.push_back({"norms", "A_log", category::other, a.heads, norms});
  out.push_back({"norms", "dt_bias", category::other, k_width, norms});  // per channel
  out.push_back({"norms", "o_norm", category::other, a.value_dim, norms});
}

work flops(const attention_kda& a, const model_context&, const call& c) {
  return {0, recurrent_flops(recurrent_of(a), c)};
}

std::vector<state_component> state(const attention_kda& a, const model_context& m,
                                   const execution_spec&) {
  return linear_state(recurrent_of(a), m);
}

checked decode_read(const attention_gdn&, const model_context&, const execution_spec&, checked) {
  return 0;  // no history: the recurrent state is read and rewritten (decode_state_rw)
}

checked decode_read(const attention_kda&, const model_context&, const execution_spec&, checked) {
  return 0;
}

}  // namespace calc
