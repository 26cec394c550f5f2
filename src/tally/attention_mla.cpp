// Multi-head latent attention (§2.3.2; Tables 2-3 and 2-5).
//
// Both cache paths store the same weights and run the same weight GEMMs: the compact path
// absorbs W_UK into the query and W_UV into the aggregated output, which multiplies as many
// weights per row as applying kv_b to the new tokens. They differ in what is cached and in the
// width of each query-key pair: compact scores over kv_rank + qk_rope and aggregates over
// kv_rank; expanded scores over qk_nope + qk_rope and aggregates over v_head per head.
//
// With a lightning indexer (DeepSeek-V3.2, GLM-5) every query scores every earlier token's index
// key, and main attention reads only the top_k best: the pairs are min(t + 1, top_k) per query
// at 0-based position t, the index scans t + 1 (the whole rectangle under
// `index_scan: rectangular`). The index key is cached beside the latent, one per token.
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
  if (a.indexer) {
    // The indexer's query heads come from the query latent (from the input without one); its key
    // and per-head weights from the input. Engines replicate the indexer on every card.
    const mla_indexer& x = *a.indexer;
    checked q_in = a.q_rank > 0 ? checked(a.q_rank) : d;
    tensor wq = matrix("attention", "indexer_wq_b", category::attention, q_in,
                       checked(x.heads) * x.dim, w);
    tensor wk = matrix("attention", "indexer_wk", category::attention, d, x.dim, w);
    // weights_proj (d -> heads) is never block-quantised: DeepSeek-V3.2's FP8 checkpoint stores it
    // BF16 beside FP8 wq_b and wk, and GLM-5.1-FP8 lists it (indexers_proj) among the modules not
    // converted. It keeps the model dtype, `weights`, as the router does.
    tensor wp = matrix("attention", "indexer_weights_proj", category::attention, d, x.heads,
                       &m.precision->weights);
    wq.shards = wk.shards = wp.shards = 1;
    out.push_back(wq);
    out.push_back(wk);
    out.push_back(wp);
    // k_norm is a LayerNorm: a weight and a bias of the key width.
    out.push_back({"norms", "indexer_k_norm", category::other, checked(2) * x.dim, norms});
  }
}

work flops(const attention_mla& a, const model_context&, const call& c) {
  // Score and aggregate widths of the call's path (kinds.cpp).
  if (!a.indexer) return {pair_of(a, c.exec.mla).flops() * attention_pairs(c, std::nullopt), 0};
  const mla_indexer& x = *a.indexer;
  // Causal: min(t + 1, top_k) pairs per query; the rectangle is every pair, masked afterwards.
  checked pairs = attention_pairs(c, x.top_k);
  checked scans = c.exec.index_scan == pair_counting::rectangular ? n_rect(c) : n_pair(c);
  return {pair_of(a, c.exec.mla).flops() * pairs + pair_of(x).flops() * scans, 0};
}

std::vector<state_component> state(const attention_mla& a, const model_context& m,
                                   const execution_spec& e) {
  state_component s;
  // Compact: one shared latent plus the positional branch per token; expanded: per-head K
  // (nope + rope) and V restored and cached.
  s.name = e.mla == mla_path::compact ? "mla_latent" : "mla_kv";
  s.per_entry = record_of(a, e.mla).bytes(m.precision->kv);
  if (!a.indexer) return {s};
  s.read_cap = a.indexer->top_k;  // a query reads only the selected tokens
  state_component index;
  index.name = "mla_index";  // one index key per token (precision.index)
  index.per_entry = record_of(*a.indexer).bytes(m.precision->index);
  return {s, index};
}

checked decode_read(const attention_mla& a, const model_context& m, const execution_spec& e,
                    checked length) {
  std::vector<state_component> parts = state(a, m, e);
  if (!a.indexer) return parts.front().bytes(length);
  // The indexer reads every index key; main attention reads the top_k selected records.
  return parts[0].per_entry * min(length, a.indexer->top_k) + parts[1].bytes(length);
}

}  // namespace calc
