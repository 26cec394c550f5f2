// The closed form (tally/closed_form.h) against the itemised tallies (tally/tally.h): exact
// equality on random points of every bundled model, drawn to hit the block, chunk, window,
// top-k and candidate-pool boundaries and 10M-token contexts; and closed-form requests against
// the step-by-step sum.
#include "tally/closed_form.h"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "plan/plan.h"
#include "tally/tally.h"
#include "test_model.h"

namespace calc {

using testing::bundled_model_files;

namespace {

/// Lengths where some floor or min changes slope: compression ratios, top-k and candidate
/// edges (k * r), windows, chunk sizes, CED replay, and their products with small multiples.
std::vector<std::int64_t> breakpoints(const model_spec& s, const graph& g) {
  std::set<std::int64_t> edges = {1, 2, 3, s.execution.chunk};
  if (s.ced) edges.insert(s.ced->replay);
  for (const layer& l : g.layers) {
    if (const auto* a = std::get_if<attention_gqa>(&l.attention); a && a->window)
      edges.insert(*a->window);
    if (const auto* a = std::get_if<attention_gqa>(&l.attention); a && a->chunk) {
      edges.insert(*a->chunk);  // a chunk boundary, and the one after it
      edges.insert(2 * *a->chunk);
    }
    if (const auto* a = std::get_if<attention_gqa>(&l.attention); a && a->block_sparse) {
      // A block edge, the band's end and the first vertical blocks below it.
      const block_sparse_spec& b = *a->block_sparse;
      edges.insert(b.block);
      edges.insert(b.block * b.local_blocks);
      edges.insert(b.block * (b.local_blocks + b.vert_stride));
      edges.insert(b.block * (b.local_blocks + 3 * b.vert_stride));
    }
    if (const auto* a = std::get_if<attention_mla>(&l.attention); a && a->indexer)
      edges.insert(a->indexer->top_k);  // sparse MLA reads min(t + 1, top_k) tokens
    if (const auto* a = std::get_if<attention_dsa>(&l.attention)) {
      edges.insert(a->window);
      if (a->global) {
        edges.insert(a->global->ratio);
        edges.insert(a->global->ratio * std::max<std::int64_t>(1, a->global->top_k));
        if (a->indexer && a->indexer->candidates > 0)
          edges.insert(a->global->ratio * a->indexer->candidates);
      }
    }
  }
  return {edges.begin(), edges.end()};
}

struct point_source {
  std::mt19937_64 rng{20261129};
  std::vector<std::int64_t> edges;

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  /// A length: near a boundary (k * edge + {-1, 0, 1}), small, large, or exactly 10M.
  std::int64_t length() {
    switch (uniform(0, 5)) {
      case 0:
      case 1: {
        std::int64_t e = edges[static_cast<std::size_t>(uniform(0, std::ssize(edges) - 1))];
        return std::max<std::int64_t>(0, e * uniform(1, 3) + uniform(-1, 1));
      }
      case 2:
        return uniform(0, 300);
      case 3:
        return uniform(0, 200'000);
      case 4:
        return uniform(0, 10'000'000);
      default:
        return 10'000'000 - uniform(0, 2);
    }
  }
  std::int64_t batch() { return uniform(0, 3) == 0 ? uniform(1, 256) : 1; }
  std::int64_t tokens() { return uniform(0, 1) == 0 ? 1 : std::max<std::int64_t>(1, length()); }
};

/// An execution path that differs from the model's in every switch the tallies read.
execution_spec flipped(const execution_spec& e, bool has_ced) {
  execution_spec f = e;
  f.pairs = e.pairs == pair_counting::causal ? pair_counting::rectangular : pair_counting::causal;
  f.mla = e.mla == mla_path::compact ? mla_path::expanded : mla_path::compact;
  f.linear =
      e.linear == linear_prefill::chunked ? linear_prefill::recurrent : linear_prefill::chunked;
  f.index_scan =
      e.index_scan == pair_counting::causal ? pair_counting::rectangular : pair_counting::causal;
  f.vocab_all_rows = !e.vocab_all_rows;
  f.ced = has_ced && !e.ced;
  return f;
}

/// Compares closed and itemised tallies on `points` random points under `exec`.
void compare(const graph& g, const execution_spec& exec, point_source& p, int points) {
  closed_form cf(g, exec);
  for (int i = 0; i < points; ++i) {
    std::int64_t n = p.length(), b = p.batch();
    state_totals fast = cf.state(n, b);
    state_tally slow = tally_state(g, n, b, exec);
    INFO("state at length ", n, ", batch ", b);
    REQUIRE(fast.total == slow.total);
    REQUIRE(fast.fixed == slow.fixed);
    REQUIRE(fast.growing == slow.growing);
    REQUIRE(fast.decode_read == slow.decode_read);
    REQUIRE(fast.decode_state_rw == slow.decode_state_rw);
    REQUIRE(fast.window_write == slow.window_write);

    call c = make_call(*g.spec, b, p.uniform(0, 4) == 0 ? 0 : p.length(), p.tokens());
    c.exec = exec;
    forward_totals ff = cf.forward(c);
    forward_tally sf = tally_forward(g, c);
    INFO("call B=", c.batch, " S=", c.context, " P=", c.tokens);
    REQUIRE(ff.flops == sf.flops);
    REQUIRE(ff.interaction_flops == sf.interaction_flops);
    REQUIRE(ff.state_flops == sf.state_flops);
    REQUIRE(ff.vocab_flops == sf.vocab_flops);
    REQUIRE(ff.weight_read_bytes == sf.weight_read_bytes);
    REQUIRE(ff.embedding_read_bytes == sf.embedding_read_bytes);

    std::int64_t h = std::max<std::int64_t>(1, p.length());
    call step = make_call(*g.spec, 1, h, 1);
    step.exec = exec;
    INFO("decode step at context ", h);
    forward_tally st = tally_forward(g, step);
    REQUIRE(cf.decode_flops(h) == st.flops);
    REQUIRE(cf.decode_interaction(h) == st.interaction_flops);
    step.batch = b;
    forward_totals fd = cf.decode(b, h);
    forward_tally sd = tally_forward(g, step);
    INFO("decode call B=", b);
    REQUIRE(fd.flops == sd.flops);
    REQUIRE(fd.interaction_flops == sd.interaction_flops);
    REQUIRE(fd.state_flops == sd.state_flops);
    REQUIRE(fd.vocab_flops == sd.vocab_flops);
    REQUIRE(fd.weight_read_bytes == sd.weight_read_bytes);
    REQUIRE(fd.embedding_read_bytes == sd.embedding_read_bytes);
  }
}

/// The code paths a layer takes through the state and attention terms of the tallies and the
/// closed form, sizes aside: its attention and FFN kinds and the switches that bend a term in the
/// length (a window, a chunk, a block-sparse pattern, sinks, a shared cache, a sparse indexer, a compressed global branch,
/// a scan rule, shared or latent experts, an Engram lookup). Switches that only add weights (norms,
/// biases, gates) are left out: their terms are linear in the tokens.
std::string kind(const attention_spec& a) {
  struct visitor {
    std::string operator()(const attention_gqa& x) const {
      return fmt::format("gqa{}{}{}{}{}{}{}", x.window ? " window" : "", x.chunk ? " chunk" : "",
                         x.sinks ? " sinks" : "", x.k_is_v ? " k=v" : "",
                         x.kv_source ? " shared" : "", x.block_sparse ? " block_sparse" : "",
                         x.v_head_dim ? " d_v" : "");
    }
    std::string operator()(const attention_mla& x) const {
      return fmt::format("mla{}{}", x.indexer ? " indexer" : "", x.rope_branch ? " rope" : "");
    }
    std::string operator()(const attention_gdn& x) const {
      return fmt::format("gdn {}", static_cast<int>(x.rule));
    }
    std::string operator()(const attention_kda&) const { return "kda"; }
    std::string operator()(const attention_dsa& x) const {
      std::string k = "dsa";
      if (x.global) k += fmt::format(" global{}", x.global->overlap ? " overlap" : "");
      if (x.indexer)
        k += fmt::format(" indexer {}{}", static_cast<int>(x.indexer->keys),
                         x.indexer->candidates > 0 ? " candidates" : "");
      return k;
    }
    std::string operator()(const attention_mamba2& x) const {
      return fmt::format("mamba2 {}", static_cast<int>(x.scan));
    }
    std::string operator()(const attention_none&) const { return "none"; }
    std::string operator()(const attention_parallel& x) const {
      return (*this)(x.attention) + " | " + (*this)(x.mixer);
    }
  };
  return std::visit(visitor{}, a);
}

std::string kind(const ffn_spec& f) {
  struct visitor {
    std::string operator()(const ffn_swiglu&) const { return "swiglu"; }
    std::string operator()(const ffn_mlp&) const { return "mlp"; }
    std::string operator()(const ffn_none&) const { return "none"; }
    std::string operator()(const ffn_moe& x) const {
      return fmt::format("moe{}{}{}{}", x.shared_experts > 0 ? " shared" : "",
                         x.router ? "" : " hash", x.latent > 0 ? " latent" : "",
                         x.gated ? "" : " ungated");
    }
  };
  return std::visit(visitor{}, f);
}

/// A bundle's kinds: its layers' (as a set) and its CED replay.
std::string kinds(const model_spec& spec, const graph& g) {
  std::set<std::string> layers;
  for (const layer& l : g.layers)
    layers.insert(kind(l.attention) + " + " + kind(l.ffn) + (l.engram ? " + engram" : ""));
  std::string k = spec.ced ? "ced" : "";
  for (const std::string& l : layers) k += " ; " + l;
  return k;
}

}  // namespace

TEST_CASE("closed form equals the itemised tallies on random points of every bundled model") {
  // Every bundle at 1,000 random points under its execution path and 1,000 under the flipped
  // one (a third of them on its own breakpoints: windows, chunks, top-k and pool edges); for
  // each set of layer kinds (kinds() above: one per architecture, so their count grows with new
  // architectures, not with every bundle), the bundle of the fewest layers at 10,000 under its
  // own path. Every bundle used to take 10,000, most of the unit tests' time; a bundle of kinds
  // already covered differs from the one covered only in its constants.
  struct bundle {
    std::string file;
    model_spec spec;
    graph g;
    std::string kinds;
  };
  std::vector<std::unique_ptr<bundle>> bundles;
  std::map<std::string, const bundle*> fewest_layers;  // by kinds
  for (const std::string& file : bundled_model_files()) {
    auto b = std::make_unique<bundle>();
    b->file = file;
    b->spec = read_model_file(file);
    b->g = build_graph(b->spec);
    b->kinds = kinds(b->spec, b->g);
    const bundle*& rep = fewest_layers[b->kinds];
    if (!rep || b->g.layers.size() < rep->g.layers.size()) rep = b.get();
    bundles.push_back(std::move(b));
  }
  REQUIRE(bundles.size() >= 10);
  for (const auto& b : bundles) {
    CAPTURE(b->file);
    point_source p;
    p.edges = breakpoints(b->spec, b->g);
    compare(b->g, b->spec.execution, p, fewest_layers.at(b->kinds) == b.get() ? 10'000 : 1'000);
    compare(b->g, flipped(b->spec.execution, b->spec.ced.has_value()), p, 1'000);
  }
  MESSAGE(bundles.size(), " bundles, ", fewest_layers.size(),
          " sets of layer kinds at 10,000 points");
  CHECK(fewest_layers.size() >= 20);  // the architectures calc reads: a kinds() that lumps fails
}

TEST_CASE("series: a sum over a range equals the sum of its points") {
  length_series s;
  s.add(7);
  s.add(floor_term{3, 1, 1, -1});     // 3 (x + 1)
  s.add(floor_term{5, 0, 4, 512});    // 5 min(x / 4, 512)
  s.add(floor_term{-2, 1, 128, 16});  // -2 min((x + 1) / 128, 16)
  for (auto [lo, hi] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 0}, {0, 3000}, {2047, 2049}, {127, 4096}, {5, 4}}) {
    checked slow = 0;
    for (std::int64_t x = lo; x <= hi; ++x) slow += s.at(x);
    CHECK(s.sum(lo, hi) == slow);
  }
  CHECK(s.at(2048) == 7 + 3 * 2049 + 5 * 512 - 2 * 16);
}

TEST_CASE("closed-form requests equal the step-by-step sum") {
  std::mt19937_64 rng(7);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (const std::string& file : bundled_model_files()) {
    CAPTURE(file);
    model_spec spec = read_model_file(file);
    graph g = build_graph(spec);
    std::vector<std::int64_t> edges = breakpoints(spec, g);
    for (int i = 0; i < 12; ++i) {
      // Prompts end just before a boundary so the decodes cross it; some start from nothing.
      std::int64_t e = edges[static_cast<std::size_t>(uniform(0, std::ssize(edges) - 1))];
      std::int64_t cached = uniform(0, 2) == 0 ? 0 : uniform(0, 3000);
      std::int64_t prompt = std::max<std::int64_t>(1, e * uniform(1, 2) - uniform(0, 40));
      std::int64_t generate = uniform(1, 300);
      CAPTURE(cached);
      CAPTURE(prompt);
      CAPTURE(generate);
      request_plan fast = plan_request(g, cached, prompt, generate);
      request_plan slow = plan_request_stepwise(g, cached, prompt, generate);
      CHECK(fast.decode_calls == slow.decode_calls);
      CHECK(fast.flops == slow.flops);
      CHECK(fast.prefill_flops == slow.prefill_flops);
      CHECK(fast.decode_flops == slow.decode_flops);
      CHECK(fast.kv_written_bytes == slow.kv_written_bytes);
      CHECK(fast.decode_written_bytes == slow.decode_written_bytes);
      CHECK(fast.final_state_bytes == slow.final_state_bytes);
      CHECK(fast.final_positions == slow.final_positions);
      CHECK(fast.cumulative_read_bytes == slow.cumulative_read_bytes);
      CHECK(fast.cumulative_read_tokens == slow.cumulative_read_tokens);
    }
  }
}

}  // namespace calc
