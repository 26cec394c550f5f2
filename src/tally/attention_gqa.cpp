// Grouped-query attention (Table 2-1; §2.1.3, §2.3.1). MHA and MQA are the two extremes.
//
// Extras real checkpoints carry: per-head sink logits (gpt-oss), keys that are also the values
// (Gemma 4's attention_k_eq_v: no v_proj, one cached tensor), values narrower than the keys
// (MiMo-V2-Flash's v_head_dim: v_proj, o_proj, the cached V and AV at d_v), and cross-layer KV
// sharing
// (Gemma 3n / 4: a layer reads an earlier layer's cache and keeps none; its own K/V projections
// stay in the checkpoint -- Gemma 4's HF module drops them on load as unexpected keys -- so they
// count as parameters but are never multiplied or read).
#include "tally/block_sparse.h"
#include "tally/rules.h"

namespace calc {

void add_tensors(const attention_gqa& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  checked d = m.hidden;
  checked q_width = checked(a.q_heads) * a.head_dim;
  checked kv_width = checked(a.kv_heads) * a.head_dim;
  // Values and the heads' output are d_v wide (v_head_dim; d_h unless it says otherwise).
  checked v_width = checked(a.kv_heads) * a.value_dim();
  checked out_width = checked(a.q_heads) * a.value_dim();
  // The query plus its sigmoid gate, which scales the heads' output (n_Q*d_v).
  checked q_out = a.output_gate ? q_width + out_width : q_width;
  out.push_back(matrix("attention", "q_proj", category::attention, d, q_out, w));
  const bool shared = a.kv_source.has_value();  // computes no K/V of its own
  tensor k = matrix("attention", "k_proj", category::attention, d, kv_width, w);
  k.gemm = !shared;
  k.shards = a.kv_heads;
  k.idle = shared;
  tensor v = matrix("attention", "v_proj", category::attention, d, v_width, w);
  v.gemm = k.gemm;
  v.shards = k.shards;
  v.idle = k.idle;
  out.push_back(k);
  if (!a.k_is_v) out.push_back(v);
  out.push_back(matrix("attention", "o_proj", category::attention, out_width, d,
                       m.precision->attention_out_weights()));
  if (a.qkv_bias) {
    out.push_back({"norms", "q_bias", category::other, q_width, &m.precision->norms});
    tensor kb{"norms", "k_bias", category::other, kv_width, &m.precision->norms};
    kb.idle = shared;
    out.push_back(kb);
    kb.name = "v_bias";
    kb.params = v_width;
    if (!a.k_is_v) out.push_back(kb);
  }
  if (a.sinks) out.push_back({"norms", "sinks", category::other, a.q_heads, &m.precision->norms});
  if (a.o_bias) out.push_back({"norms", "o_bias", category::other, d, &m.precision->norms});
  if (a.qk_norm) {
    // Per head: one d_h vector shared by the heads; across heads (qk_norm_full): n_Q*d_h for Q
    // and n_KV*d_h for K.
    checked width = checked(a.head_dim) * m.norm_vectors();
    checked q_width_n = a.qk_norm_full ? width * a.q_heads : width;
    checked k_width_n = a.qk_norm_full ? width * a.kv_heads : width;
    out.push_back({"norms", "q_norm", category::other, q_width_n, &m.precision->norms});
    tensor kn{"norms", "k_norm", category::other, k_width_n, &m.precision->norms};
    kn.idle = shared;
    out.push_back(kn);
  }
}

work flops(const attention_gqa& a, const model_context&, const call& c) {
  // §2.1.3: per pair and query head, 2*d_h for QK^T and 2*d_h for AV (kinds.cpp).
  // A chunked layer's query sees the keys of its own chunk only (call.h); a block-sparse layer's
  // heads each see their own block pattern, counted per head (block_sparse.h).
  if (a.block_sparse) {
    attention_gqa one = a;
    one.q_heads = 1;
    return {pair_of(one).flops() * block_sparse_head_pairs(c, a), 0};
  }
  checked pairs = a.chunk ? chunked_attention_pairs(c, *a.chunk) : attention_pairs(c, a.window);
  return {pair_of(a).flops() * pairs, 0};
}

std::vector<state_component> state(const attention_gqa& a, const model_context& m,
                                   const execution_spec&) {
  if (a.kv_source) return {};  // reads its source layer's cache
  // §2.2.1: each token keeps one K and one V vector per KV head (one when the keys are values).
  record_shape record = record_of(a);
  state_component kv;
  kv.name = "kv";
  kv.per_entry = record.bytes(m.precision->kv);
  // A window or a chunk bounds the cache (kinds.h kv_cap): both are kept, like a window, up to
  // their size per request.
  kv.cap = kv_cap(a);
  kv.kind = kv.cap ? state_class::window : state_class::history;
  kv.shards = record.heads;
  return {kv};
}

checked block_sparse_head_record(const attention_gqa& a, const model_context& m) {
  record_shape r = record_of(a);
  return record_shape{1, r.key_dim, r.value_dim}.bytes(m.precision->kv);
}

checked decode_read(const attention_gqa& a, const model_context& m, const execution_spec& e,
                    checked length) {
  // The history is read once, reused across heads; a sharing layer reads its source's cache,
  // of the same shape (validated), once more.
  attention_gqa own = a;
  own.kv_source.reset();
  const state_component kv = state(own, m, e).front();
  // A chunked layer's next query (position `length`) reads only the earlier keys of its own
  // chunk: length mod chunk records, none right after a boundary.
  if (a.chunk) {
    checked c = *a.chunk;
    return kv.per_entry * (length - length / c * c);
  }
  // A block-sparse layer's KV head reads the earlier keys its query group sees (block_sparse.h),
  // at one head's record each.
  if (a.block_sparse) return block_sparse_head_record(a, m) * block_sparse_read_records(a, length);
  return kv.bytes(length);
}

}  // namespace calc
