// Each layer kind's single statement (tally/kinds.h) against each consumer, on every bundled
// model: the closed form's decode interaction and state are the sums of the per-kind pair
// costs and records, and the engine rules' pages are the per-kind records and recurrent shapes.
// A consumer that re-derived a coefficient or a shape differently would fail here.
#include "tally/kinds.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "engine/engine.h"
#include "tally/block_sparse.h"
#include "tally/closed_form.h"
#include "tally/tally.h"
#include "test_model.h"

namespace calc {

using testing::bundled_model_files;

namespace {

/// Interaction FLOPs of one decode query at 0-based position h (h cached tokens), from the
/// statements alone: pair cost times the pairs each kind reads.
struct decode_interaction {
  const execution_spec& e;
  std::int64_t h;

  checked operator()(const attention_gqa& a) const {
    checked keys = checked(h) + 1;  // the rectangle counts every key whatever the window
    if (e.pairs == pair_counting::causal && a.window) keys = min(keys, *a.window);
    // A chunked layer's query sees its own chunk: (h mod C) + 1 keys.
    if (e.pairs == pair_counting::causal && a.chunk) keys = checked(h % *a.chunk) + 1;
    if (e.pairs == pair_counting::causal && a.block_sparse) {
      // A block-sparse layer's heads each see their own pattern (block_sparse.h): per head.
      attention_gqa one = a;
      one.q_heads = 1;
      checked sum = 0;
      for (std::int64_t q = 0; q < a.q_heads; ++q)
        sum += block_sparse_keys(*a.block_sparse, block_sparse_phase(*a.block_sparse, a.q_heads, q),
                                 h);
      return pair_of(one).flops() * sum;
    }
    return pair_of(a).flops() * keys;
  }
  checked operator()(const attention_mla& a) const {
    checked keys = checked(h) + 1;
    if (!a.indexer) return pair_of(a, e.mla).flops() * keys;
    // Sparse MLA: the top_k selected tokens (every key in the rectangle), all keys indexed.
    checked read = e.pairs == pair_counting::causal ? min(keys, a.indexer->top_k) : keys;
    return pair_of(a, e.mla).flops() * read + pair_of(*a.indexer).flops() * keys;
  }
  checked operator()(const attention_dsa& a) const {
    checked pairs = min(checked(h) + 1, a.window);
    checked scans = 0;
    if (a.global) {
      checked entries = (checked(h) + 1) / a.global->ratio;
      pairs += a.global->top_k > 0 ? min(entries, a.global->top_k) : entries;
      if (a.indexer) {
        std::int64_t pool = a.indexer->candidates;
        scans =
            e.index_scan == pair_counting::rectangular || pool == 0 ? entries : min(entries, pool);
      }
    }
    checked f = pair_of(a).flops() * pairs;
    if (a.indexer) f += pair_of(*a.indexer).flops() * scans;
    return f;
  }
  checked operator()(const attention_gdn&) const { return 0; }  // a state step, no pairs
  checked operator()(const attention_kda&) const { return 0; }
  checked operator()(const attention_mamba2&) const { return 0; }
  checked operator()(const attention_none&) const { return 0; }
  checked operator()(const attention_parallel& a) const { return (*this)(a.attention); }
};

/// State bytes of one request at `n` tokens from the statements, for every kind but DeepSeek
/// sparse attention (whose compressor buffers are its rule's detail); nullopt for that kind.
struct state_at {
  const precision_spec& p;
  const execution_spec& e;
  std::int64_t n;

  std::optional<checked> operator()(const attention_gqa& a) const {
    if (a.kv_source) return checked(0);  // reads its source's cache
    checked kept = a.window ? min(checked(n), *a.window) : checked(n);
    if (a.chunk) kept = min(checked(n), *a.chunk);  // the chunk buffer, as for a window
    return record_of(a).bytes(p.kv) * kept;
  }
  std::optional<checked> operator()(const attention_mla& a) const {
    checked index = a.indexer ? record_of(*a.indexer).bytes(p.index) : checked(0);
    return (record_of(a, e.mla).bytes(p.kv) + index) * n;
  }
  std::optional<checked> operator()(const attention_dsa&) const { return std::nullopt; }
  std::optional<checked> recurrent(const recurrent_shape& r) const {
    checked conv = r.conv_kernel > 0 ? p.conv.bytes(r.conv_channels * r.conv_kernel) : checked(0);
    return p.recurrent.bytes(r.state_values()) + conv;
  }
  std::optional<checked> operator()(const attention_gdn& a) const {
    return recurrent(recurrent_of(a));
  }
  std::optional<checked> operator()(const attention_kda& a) const {
    return recurrent(recurrent_of(a));
  }
  std::optional<checked> operator()(const attention_mamba2& a) const {
    return recurrent(recurrent_of(a));
  }
  std::optional<checked> operator()(const attention_none&) const { return checked(0); }
  std::optional<checked> operator()(const attention_parallel& a) const {
    return *(*this)(a.attention) + *(*this)(a.mixer);
  }
};

bool has_dsa(const graph& g) { return has_attention<attention_dsa>(g); }

/// The GQA module and the recurrent mixer of a layer, when it has them.
const attention_gqa* gqa_of(const layer& l) {
  if (const auto* p = std::get_if<attention_parallel>(&l.attention)) return &p->attention;
  return std::get_if<attention_gqa>(&l.attention);
}

std::optional<recurrent_shape> recurrent_state_of(const layer& l) {
  if (const auto* p = std::get_if<attention_parallel>(&l.attention)) return recurrent_of(p->mixer);
  if (const auto* x = std::get_if<attention_gdn>(&l.attention)) return recurrent_of(*x);
  if (const auto* x = std::get_if<attention_kda>(&l.attention)) return recurrent_of(*x);
  if (const auto* x = std::get_if<attention_mamba2>(&l.attention)) return recurrent_of(*x);
  return std::nullopt;
}

}  // namespace

TEST_CASE("kind names and attention modes name every kind") {
  attention_gqa gqa;
  gqa.window = 4096;
  attention_dsa reuse;
  reuse.global = dsa_global{};
  reuse.global->source = 2;
  CHECK(kind_name(attention_spec(gqa)) == "gqa");
  CHECK(kind_name(attention_spec(attention_gdn{})) == "gated_deltanet");
  CHECK(kind_name(attention_spec(reuse)) == "dsa");
  CHECK(kind_name(attention_spec(attention_parallel{})) == "parallel");
  CHECK(kind_name(ffn_spec(ffn_moe{})) == "moe");
  CHECK(kind_name(ffn_spec(ffn_none{})) == "none");
  CHECK(attention_mode(attention_spec(gqa)) == "swa");
  CHECK(attention_mode(attention_spec(attention_parallel{})) == "gqa+mamba2");
  CHECK(attention_mode(attention_spec(reuse)) == "reuse");
  CHECK(attention_mode(attention_spec(attention_dsa{})) == "window");
}

TEST_CASE("a graph has a kind when any layer has it (graph.h, one definition for every module)") {
  // Placement, serve and validate each spelt "any layer is ffn_moe" out; has_ffn is the one.
  testing::model dense("qwen3-8b"), moe("qwen3-30b-a3b"), mla("deepseek-v3");
  CHECK(!has_ffn<ffn_moe>(dense.g));
  CHECK(has_ffn<ffn_swiglu>(dense.g));
  CHECK(has_ffn<ffn_moe>(moe.g));
  CHECK(!has_attention<attention_mla>(moe.g));
  CHECK(has_attention<attention_mla>(mla.g));
  // DeepSeek-V3's first three layers are dense: one MoE layer is enough.
  CHECK(has_ffn<ffn_moe>(mla.g));
  CHECK(has_ffn<ffn_swiglu>(mla.g));
}

TEST_CASE("per-kind statements: pair costs and records as the chapter writes them") {
  const dtype bf16 = parse_dtype("bf16");
  attention_gqa q8b;  // Qwen3-8B: 4 * 32 * 128 per pair; K and V of 8 x 128
  q8b.q_heads = 32;
  q8b.kv_heads = 8;
  q8b.head_dim = 128;
  CHECK(pair_of(q8b).flops() == 4 * 32 * 128);
  CHECK(record_of(q8b).bytes(bf16) == 2 * 8 * 128 * 2);
  q8b.k_is_v = true;  // one tensor
  CHECK(record_of(q8b).bytes(bf16) == 8 * 128 * 2);
  attention_mla v3;  // DeepSeek-V3
  v3.heads = 128;
  v3.q_rank = 1536;
  v3.kv_rank = 512;
  v3.qk_nope = 128;
  v3.qk_rope = 64;
  v3.v_head = 128;
  CHECK(pair_of(v3, mla_path::compact).flops() == 2 * 128 * (576 + 512));
  CHECK(pair_of(v3, mla_path::expanded).flops() == 2 * 128 * (192 + 128));
  CHECK(record_of(v3, mla_path::compact).bytes(bf16) == 576 * 2);
  CHECK(record_of(v3, mla_path::expanded).bytes(bf16) == 128 * (192 + 128) * 2);
  attention_gdn gdn;  // Qwen3-Next: 32 states of 128 x 128
  gdn.qk_heads = 16;
  gdn.v_heads = 32;
  gdn.key_dim = 128;
  gdn.value_dim = 128;
  gdn.conv_kernel = 4;
  recurrent_shape r = recurrent_of(gdn);
  CHECK(r.state_values() == 32 * 128 * 128);
  CHECK(r.conv_channels == 2 * 16 * 128 + 32 * 128);
  CHECK(r.step_flops() == 6 * 32 * 128 * 128);  // S^T k, k (x) delta, S^T q
  attention_mamba2 m2;
  m2.heads = 8;
  m2.head_dim = 64;
  m2.state_dim = 128;
  m2.groups = 2;
  CHECK(recurrent_of(m2).step_flops() == 4 * 8 * 64 * 128);  // update and readout
  CHECK(recurrent_of(m2).conv_channels == 8 * 64 + 2 * 2 * 128);
  CHECK(split_heads(attention_spec(attention_none{})) == 0);
}

TEST_CASE("the closed form's decode interaction is the sum of per-kind pair costs") {
  std::vector<std::string> files = bundled_model_files();
  REQUIRE(files.size() >= 10);
  for (const std::string& file : files) {
    CAPTURE(file);
    model_spec spec = read_model_file(file);
    graph g = build_graph(spec);
    for (mla_path path : {mla_path::compact, mla_path::expanded}) {
      execution_spec e = spec.execution;
      e.mla = path;
      closed_form cf(g, e);
      for (std::int64_t h : {1LL, 127LL, 128LL, 4095LL, 4096LL, 131'072LL, 1'000'003LL}) {
        CAPTURE(h);
        checked want = 0;
        for (const layer& l : g.layers) want += std::visit(decode_interaction{e, h}, l.attention);
        CHECK(cf.decode_interaction(h) == want);
      }
    }
  }
}

TEST_CASE("the closed form's state is the sum of per-kind records and recurrent shapes") {
  int checked_models = 0;
  for (const std::string& file : bundled_model_files()) {
    CAPTURE(file);
    model_spec spec = read_model_file(file);
    graph g = build_graph(spec);
    if (has_dsa(g)) continue;  // compressor buffers are the sparse rule's own detail
    ++checked_models;
    closed_form cf(g);
    for (std::int64_t n : {0LL, 1LL, 4097LL, 262'144LL}) {
      CAPTURE(n);
      checked want = 0;
      for (const layer& l : g.layers)
        want += *std::visit(state_at{spec.precision, spec.execution, n}, l.attention);
      if (spec.token_history) want += spec.precision.token_history.bytes(1) * n;
      CHECK(cf.state(n).total == want);
    }
  }
  CHECK(checked_models >= 10);
}

TEST_CASE("the engine's pages are the per-kind records and recurrent shapes") {
  int checked_layers = 0;
  for (const std::string& file : bundled_model_files()) {
    CAPTURE(file);
    model_spec spec = read_model_file(file);
    graph g = build_graph(spec);
    if (has_dsa(g)) continue;  // the engine rules refuse sparse attention
    const precision_spec& p = spec.precision;
    model_context m{spec.hidden, &p, &spec.connection, spec.layer_norm};
    for (std::int64_t tp : {1, 2, 8}) {
      CAPTURE(tp);
      engine::engine_config c;
      c.tensor_parallel = tp;
      std::vector<engine::layer_cache> caches;
      try {
        caches = engine::layer_caches(g, c);
      } catch (const spec_error&) {
        REQUIRE(tp > 1);  // Mamba2 heads or groups that do not split over tp
        continue;
      }
      for (const engine::layer_cache& lc : caches) {
        const layer& l = g.layers.at(static_cast<std::size_t>(lc.layer));
        CAPTURE(lc.layer);
        ++checked_layers;
        switch (lc.type) {
          case engine::layer_cache::kind::full:
          case engine::layer_cache::kind::sliding:
          case engine::layer_cache::kind::chunked: {
            const attention_gqa* a = gqa_of(l);
            REQUIRE(a != nullptr);
            record_shape r = record_of(*a);
            checked k = p.kv.bytes(checked(engine::kv_heads_per_rank(r.heads, tp)) * r.key_dim);
            CHECK(lc.k_token_bytes == k);
            // Engines cache V beside K even when k_is_v; a narrower V (v_head_dim) at its width.
            checked v = a->v_head_dim ? p.kv.bytes(checked(engine::kv_heads_per_rank(r.heads, tp)) *
                                                   r.value_dim)
                                      : k;
            CHECK(lc.token_bytes == k + v);
            // On one rank the engine's page per token is the tally's KV record.
            if (tp == 1 && !a->k_is_v) {
              auto comps = state(*a, m, spec.execution);
              REQUIRE(comps.size() == 1);
              CHECK(lc.token_bytes == comps.front().per_entry);
            }
            break;
          }
          case engine::layer_cache::kind::mla: {
            const auto* a = std::get_if<attention_mla>(&l.attention);
            REQUIRE(a != nullptr);
            execution_spec compact = spec.execution;
            compact.mla = mla_path::compact;
            // Not split; a sparse layer's index key rides on the same page.
            checked index = a->indexer ? record_of(*a->indexer).bytes(p.index) : checked(0);
            CHECK(lc.token_bytes == state(*a, m, compact).front().per_entry + index);
            break;
          }
          case engine::layer_cache::kind::state: {
            std::optional<recurrent_shape> r = recurrent_state_of(l);
            REQUIRE(r.has_value());
            if (tp > 1) break;  // Mamba2 groups may be replicated over ranks
            // One rank keeps the tally's state matrices and kernel - 1 of its conv slots.
            checked conv =
                p.conv.bytes(r->conv_channels * std::max<std::int64_t>(0, r->conv_kernel - 1));
            // vLLM keeps a lightning layer's state in mamba_cache_dtype (the conv slots'
            // format), not the SSM state's (docs/engines.md rule 7a).
            const auto* gdn = std::get_if<attention_gdn>(&l.attention);
            const bool lightning = gdn != nullptr && gdn->lightning();
            const dtype& kept = lightning ? p.conv : p.recurrent;
            CHECK(lc.state_bytes == kept.bytes(r->state_values()) + conv);
            std::vector<state_component> comps =
                std::visit([&](const auto& x) { return state(x, m, spec.execution); }, l.attention);
            auto rec = std::find_if(comps.begin(), comps.end(),
                                    [](const state_component& s) { return s.name == "recurrent"; });
            // A short convolution (LFM2) keeps no state matrix, so no recurrent component.
            REQUIRE((rec != comps.end()) == (r->state_values() > 0));
            checked tallied = rec == comps.end() ? checked(0)
                              : lightning        ? p.conv.bytes(r->state_values())
                                                 : rec->fixed;
            if (lightning) CHECK(rec->fixed == p.recurrent.bytes(r->state_values()));
            CHECK(lc.state_bytes - tallied == conv);
            break;
          }
        }
      }
    }
  }
  CHECK(checked_layers > 100);
}

}  // namespace calc
