// The decode-step form of each attention kind: one small evaluator per kind, each the series of
// its own rule (attention_*.cpp) at a decode call, B = 1, P = 1, context h: the query sits at
// 0-based position h, so it sees h + 1 positions and (h + 1) / r completed entries; a decode
// query reads the history of h cached tokens. Each kind's pair cost and records come from its
// statement in kinds.h, as its rule's do. Every kind has an evaluator: compile_attention visits
// with one overload per kind and no fallback, so a new kind does not compile until it has one.
#include <fmt/format.h>

#include "tally/block_sparse.h"
#include "tally/closed_form.h"

namespace calc {

namespace {

/// A history read once per decode step, `per_token` bytes a token, up to `cap` tokens: the
/// rule's own value at one token gives the rate (a layer reading another layer's cache keeps no
/// state of its own but reads as much).
length_series history_read(checked per_token, std::optional<std::int64_t> cap) {
  length_series s;
  s.add(floor_term{per_token, 0, 1, cap ? *cap : -1});
  return s;
}

attention_form form(const attention_gqa& a, const model_context& m, const execution_spec& e) {
  attention_form f;
  // attention_pairs at a decode query: h + 1 keys, min(h + 1, W) with a causal window; the
  // rectangle counts every key whatever the window.
  checked per_pair = pair_of(a).flops();
  if (a.block_sparse) {
    // Block-sparse: each head's keys at the query h as floor terms (block_sparse.h), its KV
    // heads' reads likewise; the rectangle counts every key, as for a chunk.
    if (e.pairs == pair_counting::causal) {
      attention_gqa one = a;
      one.q_heads = 1;
      f.step_interaction = block_sparse_step_series(a, pair_of(one).flops());
    } else {
      f.step_interaction.add(floor_term{per_pair, 1, 1, -1});
    }
    f.step_work = f.step_interaction;
    f.decode_read = block_sparse_read_series(a, block_sparse_head_record(a, m));
    return f;
  }
  if (a.chunk) {
    // Chunked: the query at h sees (h mod C) + 1 = (h + 1) - C * floor(h / C) keys of its own
    // chunk, and reads the h mod C earlier records of it (decode_read); the rectangle counts
    // every key.
    checked c = *a.chunk;
    f.step_interaction.add(floor_term{per_pair, 1, 1, -1});
    if (e.pairs == pair_counting::causal)
      f.step_interaction.add(floor_term{checked(0) - per_pair * c, 0, *a.chunk, -1});
    f.step_work = f.step_interaction;
    attention_gqa own = a;
    own.kv_source.reset();
    checked record = record_of(own).bytes(m.precision->kv);
    f.decode_read.add(floor_term{record, 0, 1, -1});
    f.decode_read.add(floor_term{checked(0) - record * c, 0, *a.chunk, -1});
    return f;
  }
  std::int64_t cap = e.pairs == pair_counting::causal && a.window ? *a.window : -1;
  f.step_interaction.add(floor_term{per_pair, 1, 1, cap});
  f.step_work = f.step_interaction;
  f.decode_read = history_read(decode_read(a, m, e, 1), a.window);
  return f;
}

attention_form form(const attention_mla& a, const model_context& m, const execution_spec& e) {
  attention_form f;
  if (!a.indexer) {
    f.step_interaction.add(floor_term{pair_of(a, e.mla).flops(), 1, 1, -1});
    f.step_work = f.step_interaction;
    f.decode_read = history_read(decode_read(a, m, e, 1), std::nullopt);
    return f;
  }
  // Sparse MLA: main attention over min(h + 1, top_k) selected tokens (every pair in the
  // rectangle), the indexer's scores over all h + 1; a step reads top_k latents at most and
  // every index key.
  const mla_indexer& x = *a.indexer;
  std::int64_t cap = e.pairs == pair_counting::causal ? x.top_k : -1;
  f.step_interaction.add(floor_term{pair_of(a, e.mla).flops(), 1, 1, cap});
  f.step_interaction.add(floor_term{pair_of(x).flops(), 1, 1, -1});
  f.step_work = f.step_interaction;
  f.decode_read.add(floor_term{record_of(a, e.mla).bytes(m.precision->kv), 0, 1, x.top_k});
  f.decode_read.add(floor_term{record_of(x).bytes(m.precision->index), 0, 1, -1});
  return f;
}

attention_form form(const attention_dsa& a, const model_context& m, const execution_spec& e) {
  attention_form f;
  const precision_spec& p = *m.precision;
  checked per_pair = pair_of(a).flops();                         // QK and PV over the shared record
  f.step_interaction.add(floor_term{per_pair, 1, 1, a.window});  // window: min(h + 1, W)
  f.decode_read.add(floor_term{record_of(a).bytes(p.window), 0, 1, a.window});
  if (a.global) {
    const dsa_global& g = *a.global;
    std::int64_t top = g.top_k > 0 ? g.top_k : -1;
    f.step_interaction.add(floor_term{per_pair, 1, g.ratio, top});  // min((h+1)/r, top_k)
    f.decode_read.add(floor_term{record_of(a).bytes(p.kv), 0, g.ratio, top});
    if (a.indexer) {
      checked per_scan = pair_of(*a.indexer).flops();
      std::int64_t pool = a.indexer->candidates > 0 ? a.indexer->candidates : -1;
      // The reference rectangle scores every completed entry; causal scans stop at the pool.
      std::int64_t scan_cap = e.index_scan == pair_counting::rectangular ? -1 : pool;
      f.step_interaction.add(floor_term{per_scan, 1, g.ratio, scan_cap});
      f.decode_read.add(floor_term{record_of(*a.indexer).bytes(p.index), 0, g.ratio, pool});
    }
  }
  f.step_work = f.step_interaction;
  return f;
}

/// Recurrent mixers: a decode step is one recurrent step and one convolution update, whatever
/// the context, so its work is the rule's value at any decode call; they read no history.
template <typename T>
attention_form linear_form(const T& a, const model_context& m, const execution_spec& e) {
  attention_form f;
  call step;
  step.context = 1;
  step.exec = e;
  work w = flops(a, m, step);
  f.step_interaction.add(w.interaction);
  f.step_work.add(w.interaction + w.state);
  return f;
}

attention_form form(const attention_gdn& a, const model_context& m, const execution_spec& e) {
  return linear_form(a, m, e);
}

attention_form form(const attention_kda& a, const model_context& m, const execution_spec& e) {
  return linear_form(a, m, e);
}

/// Mamba2 (SSD): one recurrent step and one convolution update per decode step, like linear
/// attention; no history to read.
attention_form form(const attention_mamba2& a, const model_context& m, const execution_spec& e) {
  return linear_form(a, m, e);
}

/// No mixer: no work, no reads (the rule's value at a step is zero).
attention_form form(const attention_none& a, const model_context& m, const execution_spec& e) {
  return linear_form(a, m, e);
}

/// A parallel hybrid: the attention branch's series plus the mixer's constant step.
attention_form form(const attention_parallel& a, const model_context& m, const execution_spec& e) {
  attention_form g = form(a.attention, m, e), s = form(a.mixer, m, e);
  g.step_work.add(s.step_work);
  g.step_interaction.add(s.step_interaction);
  g.decode_read.add(s.decode_read);
  return g;
}

}  // namespace

attention_form compile_attention(const attention_spec& a, const model_context& m,
                                 const execution_spec& e) {
  // Each kind's own form() overload; there is no generic one, so a kind without an evaluator
  // does not compile.
  return std::visit([&](const auto& kind) { return form(kind, m, e); }, a);
}

}  // namespace calc
