// DeepSeek V4 / V4.1 sparse attention (§2.3.3, §2.3.6; Tables 2-4 and 2-6).
//
// Every layer keeps a window of recent records. A global branch stores one compressed entry
// every `ratio` tokens (its own, or a source layer's that it shares); main attention reads at
// most top_k of them, chosen by an indexer that scores every completed entry (or, in a Reindex
// layer, at most the candidate pool). Entries visible to the query at 0-based position t are
// (t+1) / ratio, completed blocks only (MODELS Part II A2).
#include <fmt/format.h>

#include "tally/rules.h"

namespace calc {

checked sum_floor_div(checked lo, checked hi, std::int64_t r, std::int64_t cap) {
  if (hi < lo) return 0;
  if (hi == lo && lo >= 0) {  // one query (a decode step): its own term
    checked k = lo / r;
    return cap < 0 ? k : min(k, cap);
  }
  // G(n) = sum_{k=0}^{n} min(floor(k/r), cap)
  auto floor_sum = [r](checked n) {  // sum_{k=0}^{n} floor(k/r), n >= -1
    if (n < 0) return checked(0);
    checked q = n / r, rem = n - q * r;
    return checked(r) * q * (q - 1) / 2 + q * (rem + 1);
  };
  auto capped = [&](checked n) {
    if (cap < 0) return floor_sum(n);
    checked edge = checked(cap) * r;  // from k = cap*r on, floor(k/r) >= cap
    if (n < edge) return floor_sum(n);
    return floor_sum(edge - 1) + (n - edge + 1) * cap;
  };
  return capped(hi) - capped(lo - 1);
}

namespace {

checked overlap_factor(const dsa_global& g) { return g.overlap ? 2 : 1; }

bool stores_entries(const attention_dsa& a) { return a.global && a.global->source < 0; }

}  // namespace

dsa_counts dsa_work(const attention_dsa& a, const call& c) {
  dsa_counts n;
  checked first = c.first_position(), end = c.end_position();  // positions [first, end)
  checked b = c.batch;
  // Window: the query at t reads min(W, t - floor + 1) records.
  n.window_pairs = b * sum_floor_div(first - c.window_floor + 1, end - c.window_floor, 1, a.window);
  if (!a.global) return n;
  const dsa_global& g = *a.global;
  std::int64_t top = g.top_k > 0 ? g.top_k : -1;
  n.global_pairs = b * sum_floor_div(first + 1, end, g.ratio, top);
  if (!a.indexer) return n;
  if (c.exec.index_scan == pair_counting::rectangular) {
    // Reference: all scores of the rectangle first, masked afterwards, no candidate cap.
    n.index_scans = c.rows() * (end / g.ratio);
  } else {
    std::int64_t pool = a.indexer->candidates > 0 ? a.indexer->candidates : -1;
    n.index_scans = b * sum_floor_div(first + 1, end, g.ratio, pool);
  }
  return n;
}

void add_tensors(const attention_dsa& a, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->attention_weights();
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  checked q_width = checked(a.heads) * a.head_dim;
  tensor wq_a = matrix("attention", "wq_a", category::attention, d, a.q_rank, w);
  wq_a.shards = 1;
  out.push_back(wq_a);
  out.push_back(matrix("attention", "wq_b", category::attention, a.q_rank, q_width, w));
  tensor wkv = matrix("attention", "wkv", category::attention, d, a.head_dim, w);  // window KV
  wkv.shards = 1;  // one record shared by every head
  out.push_back(wkv);
  // Grouped low-rank output: each group maps its heads' slice to o_rank, nothing across groups.
  // (o_groups matrices whose inputs together are the q_width of all heads)
  // Both halves are the output projection (precision.attention_out).
  const dtype* wo = m.precision->attention_out_weights();
  out.push_back(matrix("attention", "wo_a", category::attention, q_width, a.o_rank, wo));
  out.push_back(
      matrix("attention", "wo_b", category::attention, checked(a.o_groups) * a.o_rank, d, wo));
  if (a.sink) out.push_back({"norms", "attn_sink", category::other, a.heads, norms});
  out.push_back({"norms", "q_norm", category::other, a.q_rank, norms});
  out.push_back({"norms", "kv_norm", category::other, a.head_dim, norms});

  if (stores_entries(a)) {
    const dsa_global& g = *a.global;
    checked width = overlap_factor(g) * a.head_dim;  // overlapping blocks: two projection sets
    tensor kv = matrix("attention", "compressor_wkv", category::attention, d, width, w);
    kv.rows = row_source::new_positions;
    kv.shards = 1;
    out.push_back(kv);
    if (g.gate) {
      tensor gate = matrix("attention", "compressor_wgate", category::attention, d, width, w);
      gate.rows = row_source::new_positions;
      gate.shards = 1;
      out.push_back(gate);
    }
    if (g.position_bias)  // one bias row per position of a block: [ratio, overlap*head_dim]
      out.push_back({"norms", "compressor_ape", category::other, checked(g.ratio) * width, norms});
    out.push_back({"norms", "compressor_norm", category::other, a.head_dim, norms});
  }
  if (a.indexer) {
    const dsa_indexer& x = *a.indexer;
    const dsa_global& g = *a.global;
    if (x.keys == dsa_indexer::keys_kind::compressor) {
      checked width = overlap_factor(g) * x.dim;
      tensor kv = matrix("attention", "indexer_wkv", category::attention, d, width, w);
      kv.rows = row_source::new_positions;
      tensor gate = matrix("attention", "indexer_wgate", category::attention, d, width, w);
      gate.rows = row_source::new_positions;
      kv.shards = gate.shards = 1;
      out.push_back(kv);
      out.push_back(gate);
      if (g.position_bias)
        out.push_back({"norms", "indexer_ape", category::other, checked(g.ratio) * width, norms});
      out.push_back({"norms", "indexer_norm", category::other, x.dim, norms});
    } else if (x.keys == dsa_indexer::keys_kind::projection) {
      tensor k = matrix("attention", "index_key_proj", category::attention, a.head_dim, x.dim, w);
      k.rows = row_source::new_entries;
      k.entry_ratio = g.ratio;
      k.shards = 1;
      out.push_back(k);
      out.push_back({"norms", "indexer_norm", category::other, x.dim, norms});
    }
    out.push_back(matrix("attention", "indexer_wq", category::attention, a.q_rank,
                         checked(x.heads) * x.dim, w));
    out.push_back(matrix("attention", "indexer_weights", category::attention, d, x.heads, w));
  }
}

work flops(const attention_dsa& a, const model_context&, const call& c) {
  dsa_counts n = dsa_work(a, c);
  work w;
  // Table 2-4: 4 * heads * head_dim per pair (QK and PV over the shared record);
  // index dot products 2 * index heads * index dim per scanned entry (kinds.cpp).
  w.interaction = pair_of(a).flops() * (n.window_pairs + n.global_pairs);
  if (a.indexer) w.interaction += pair_of(*a.indexer).flops() * n.index_scans;
  return w;
}

std::vector<state_component> state(const attention_dsa& a, const model_context& m,
                                   const execution_spec&) {
  const precision_spec& p = *m.precision;
  std::vector<state_component> out;
  state_component window;
  window.name = "window";
  window.per_entry = record_of(a).bytes(p.window);
  window.cap = a.window;
  window.kind = state_class::window;
  out.push_back(window);
  if (!stores_entries(a)) return out;
  const dsa_global& g = *a.global;
  // Named by ratio, not by model: compressed_r4_main, compressed_r128_main, global_main (1:1).
  std::string prefix = g.ratio > 1 ? fmt::format("compressed_r{}", g.ratio) : std::string("global");
  state_component main;
  main.name = prefix + "_main";
  main.per_entry = record_of(a).bytes(p.kv);
  main.ratio = g.ratio;
  main.read_cap = g.top_k;
  out.push_back(main);
  if (g.ratio > 1) {
    // The incomplete block: kv_state and score_state, each [overlap*ratio, overlap*head_dim].
    state_component buffer;
    buffer.name = "compressor_buffers";
    checked f = overlap_factor(g);
    buffer.fixed = p.compressor.bytes(checked(2) * f * g.ratio * f * a.head_dim);
    buffer.kind = state_class::fixed;
    out.push_back(buffer);
  }
  if (a.indexer && a.indexer->keys != dsa_indexer::keys_kind::shared) {
    state_component index;
    index.name = prefix + "_index";
    index.per_entry = record_of(*a.indexer).bytes(p.index);
    index.ratio = g.ratio;
    out.push_back(index);
    if (a.indexer->keys == dsa_indexer::keys_kind::compressor && g.ratio > 1) {
      state_component buffer;
      buffer.name = "compressor_buffers";
      checked f = overlap_factor(g);
      buffer.fixed = p.compressor.bytes(checked(2) * f * g.ratio * f * a.indexer->dim);
      buffer.kind = state_class::fixed;
      out.push_back(buffer);
    }
  }
  return out;
}

checked decode_read(const attention_dsa& a, const model_context& m, const execution_spec&,
                    checked length) {
  const precision_spec& p = *m.precision;
  checked read = min(length, a.window) * record_of(a).bytes(p.window);
  if (!a.global) return read;
  checked entries = length / a.global->ratio;
  checked selected = a.global->top_k > 0 ? min(entries, a.global->top_k) : entries;
  read += selected * record_of(a).bytes(p.kv);
  if (a.indexer) {
    checked scanned = a.indexer->candidates > 0 ? min(entries, a.indexer->candidates) : entries;
    read += scanned * record_of(*a.indexer).bytes(p.index);
  }
  return read;
}

namespace {

/// The record a decode step writes into each kind's sliding window: only windowed kinds have
/// one (one overload per kind, so a new kind must say).
struct window_record_bytes {
  const model_context& m;
  checked operator()(const attention_dsa& d) const {
    return record_of(d).bytes(m.precision->window);
  }
  checked operator()(const attention_gqa& g) const {
    // A layer without a window or chunk keeps history, not a window; a sharing layer writes
    // nothing.
    return kv_cap(g) && !g.kv_source ? record_of(g).bytes(m.precision->kv) : checked(0);
  }
  checked operator()(const attention_parallel& p) const { return (*this)(p.attention); }
  checked operator()(const attention_mla&) const { return 0; }
  checked operator()(const attention_gdn&) const { return 0; }
  checked operator()(const attention_kda&) const { return 0; }
  checked operator()(const attention_mamba2&) const { return 0; }
  checked operator()(const attention_none&) const { return 0; }
};

}  // namespace

checked window_write(const attention_spec& a, const model_context& m) {
  return std::visit(window_record_bytes{m}, a);
}

}  // namespace calc
