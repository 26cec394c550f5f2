// Multi-head latent attention (§2.3.2; Tables 2-3 and 2-5).
//
// Both cache paths store the same weights and run the same weight GEMMs: the compact path
// absorbs W_UK into the query and W_UV into the aggregated output, which multiplies as many
// weights per row as applying kv_b to the new tokens. They differ in what is cached and in the
// width of each query-key pair: compact scores over kv_rank + qk_rope and aggregates over
// kv_rank; expanded scores over qk_nope + qk_rope and aggregates over v_head per head.
#include "tally/rules.h"

namespace calc {

void add_tensors(const attention_mla& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  checked q_head = checked(a.qk_nope) + a.qk_rope;
  if (a.q_rank > 0) {
    tensor qa = matrix("attention", "q_a_proj", category::attention, d, a.q_rank, w);
    qa.shards = 1;  // the shared low-rank input is computed on every card
    out.push_back(qa);
    out.push_back(
        matrix("attention", "q_b_proj", category::attention, a.q_rank, a.heads * q_head, w));
    out.push_back({"norms", "q_a_norm", category::other, a.q_rank, norms});
  } else {
    out.push_back(matrix("attention", "q_proj", category::attention, d, a.heads * q_head, w));
  }
  tensor kva =
      matrix("attention", "kv_a_proj", category::attention, d, checked(a.kv_rank) + a.qk_rope, w);
  kva.shards = 1;  // one latent for all heads
  out.push_back(kva);
  out.push_back({"norms", "kv_a_norm", category::other, a.kv_rank, norms});
  // kv_b restores per-head K (nope part) and V; the compact path holds it as W_UK and W_UV.
  out.push_back(matrix("attention", "kv_b_proj", category::attention, a.kv_rank,
                       a.heads * (checked(a.qk_nope) + a.v_head), w));
  out.push_back(matrix("attention", "o_proj", category::attention, checked(a.heads) * a.v_head, d,
                       m.precision->attention_out_weights()));
  if (a.output_gate)
    out.push_back(
        matrix("attention", "g_proj", category::attention, d, checked(a.heads) * a.v_head, w));
}

work flops(const attention_mla& a, const model_context&, const call& c) {
  // Score and aggregate widths of the call's path (kinds.cpp).
  return {pair_of(a, c.exec.mla).flops() * attention_pairs(c, std::nullopt), 0};
}

std::vector<state_component> state(const attention_mla& a, const model_context& m,
                                   const execution_spec& e) {
  state_component s;
  // Compact: one shared latent plus the positional branch per token; expanded: per-head K
  // (nope + rope) and V restored and cached.
  s.name = e.mla == mla_path::compact ? "mla_latent" : "mla_kv";
  s.per_entry = record_of(a, e.mla).bytes(m.precision->kv);
  return {s};
}

checked decode_read(const attention_mla& a, const model_context& m, const execution_spec& e,
                    checked length) {
  return state(a, m, e).front().bytes(length);
}

}  // namespace calc
