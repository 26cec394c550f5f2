// Grouped-query attention (Table 2-1; §2.1.3, §2.3.1). MHA and MQA are the two extremes.
#include "tally/rules.h"

namespace calc {

void add_tensors(const attention_gqa& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = &m.precision->weights;
  checked d = m.hidden;
  checked q_width = checked(a.q_heads) * a.head_dim;
  checked kv_width = checked(a.kv_heads) * a.head_dim;
  checked q_out = a.output_gate ? q_width * 2 : q_width;  // query plus its sigmoid gate
  out.push_back({"attention", "q_proj", category::attention, d * q_out, w, true});
  tensor k{"attention", "k_proj", category::attention, d * kv_width, w, true};
  k.shards = a.kv_heads;
  tensor v = k;
  v.name = "v_proj";
  out.push_back(k);
  out.push_back(v);
  out.push_back({"attention", "o_proj", category::attention, q_width * d, w, true});
  if (a.qkv_bias) {
    out.push_back({"norms", "q_bias", category::other, q_width, &m.precision->norms});
    out.push_back({"norms", "k_bias", category::other, kv_width, &m.precision->norms});
    out.push_back({"norms", "v_bias", category::other, kv_width, &m.precision->norms});
  }
  if (a.o_bias) out.push_back({"norms", "o_bias", category::other, d, &m.precision->norms});
  if (a.qk_norm) {
    checked width = checked(a.head_dim) * m.norm_vectors();
    out.push_back({"norms", "q_norm", category::other, width, &m.precision->norms});
    out.push_back({"norms", "k_norm", category::other, width, &m.precision->norms});
  }
}

work flops(const attention_gqa& a, const model_context&, const call& c) {
  // §2.1.3: per pair and query head, 2*d_h for QK^T and 2*d_h for AV.
  return {checked(4) * a.q_heads * a.head_dim * attention_pairs(c, a.window), 0};
}

std::vector<state_component> state(const attention_gqa& a, const model_context& m,
                                   const execution_spec&) {
  // §2.2.1: each token keeps one K and one V vector per KV head.
  state_component kv;
  kv.name = "kv";
  kv.per_entry = checked(2) * m.precision->kv.bytes(checked(a.kv_heads) * a.head_dim);
  kv.cap = a.window;
  kv.kind = a.window ? state_class::window : state_class::history;
  kv.shards = a.kv_heads;
  return {kv};
}

checked decode_read(const attention_gqa& a, const model_context& m, const execution_spec& e,
                    checked length) {
  return state(a, m, e).front().bytes(length);  // the history is read once, reused across heads
}

}  // namespace calc
