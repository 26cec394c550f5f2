// Serving arithmetic: weight formats, paged and shared-prefix caches, placement over cards,
// roofline bounds (§2.6.2, §2.5.3, Chapter 1's lower bound).
#include <doctest/doctest.h>

#include "graph/graph.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "plan/roofline.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

using testing::model;

TEST_CASE("grouped weight formats keep embeddings, head and norms in BF16 (§2.6.2)") {
  model m("deepseek-r1-distill-llama-70b",
          {"precision.weights=int4:g128", "precision.embedding=bf16", "precision.head=bf16"});
  params_tally p = tally_params(m.g);
  checked tables = checked(2) * 128256 * 8192 * 2;
  checked norms = (checked(80) * 2 * 8192 + 8192) * 2;
  checked matrices = p.total - checked(2) * 128256 * 8192 - (checked(80) * 2 * 8192 + 8192);
  CHECK(p.weight_bytes == tables + norms + matrices / 2 + matrices / 128 * 2);
  CHECK(p.weight_bytes.value() == 39'500'398'592);
}

TEST_CASE("capacity: decimal card memory, binary workspace, whole requests") {
  model m("qwen3-8b");
  gpu_spec g = find_gpu("rtx-4090");
  capacity_plan c = plan_capacity(m.g, g, 1, 4096, 2LL << 30, tally_params(m.g).weight_bytes);
  CHECK(c.free_bytes.value() == 24'000'000'000 - 16'381'470'720 - (2LL << 30));
  CHECK(c.requests == 9);
  CHECK(max_params(m.g, g, 1, 8192, 2LL << 30, 4).value() == 8'510'339'072);
}

TEST_CASE("placement: KV heads split by whole heads, replicated past their count") {
  model m("qwen3-235b-a22b");  // 4 KV heads
  std::vector<card_load> tp4 = card_loads(m.g, layout{4, 1, 1}, 8192);
  std::vector<card_load> tp8 = card_loads(m.g, layout{8, 1, 1}, 8192);
  checked whole = tally_state(m.g, 8192).total;
  CHECK(tp4[0].state_bytes == whole / 4);
  CHECK(tp8[0].state_bytes == whole / 4);  // each head stored on two of the eight cards
  // Norms and routers are on every card: 8 cards hold more than the weights in total.
  CHECK(tp8[0].weight_bytes * 8 > tally_params(m.g).weight_bytes);
}

TEST_CASE("placement: at tp 1 the stages hold the model's weights exactly once") {
  // A tensor counted on two stages (or on none) shows as a difference from the model's total,
  // for every bundled model (mHC connection mixes, Engram tables, MTP layers included).
  for (const std::string& file : testing::bundled_model_files()) {
    CAPTURE(file);
    model_spec spec = read_model_file(file, {});
    graph g = build_graph(spec);
    const checked weights = tally_params(g).weight_bytes;
    const std::int64_t layers = static_cast<std::int64_t>(g.layers.size());
    for (std::int64_t pp : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, layers}) {
      CAPTURE(pp);
      if (pp > layers) continue;
      checked sum = 0;
      for (const card_load& c : card_loads(g, layout{1, pp, 1}, 4096)) sum += c.weight_bytes;
      CHECK(sum == weights);
    }
  }
}

TEST_CASE("placement: invalid layouts are explained") {
  model m("qwen3-8b");
  CHECK(layout_problem(m.g, layout{3, 1, 1}) == "tp 3 does not divide the 32 heads of layer 0");
  CHECK(layout_problem(m.g, layout{1, 37, 1}) == "pp 37 exceeds the 36 layers");
  CHECK(layout_problem(m.g, layout{2, 1, 1}).empty());
}

TEST_CASE("plan: the fewest cards, whole servers past one") {
  model m("llama-3.1-405b");
  placement_plan p = plan_placement(m.g, find_gpu("h100-sxm"), 8192, 1, 2LL << 30, 8, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.cards() == 16);
  REQUIRE(p.below);
  CHECK(p.below->l.cards() == 8);
  CHECK(p.below->worst_free < 0);
}

TEST_CASE("roofline: a small decode batch is memory-bound, an 8K prefill compute-bound") {
  model m("qwen3-8b");
  roofline_plan r = plan_roofline(m.g, find_gpu("h100-sxm"), 1, 1, 0, 8192, false);
  CHECK(r.prefill.regime == "compute");
  CHECK(r.decode.regime == "memory");
  CHECK(r.decode.memory_s ==
        doctest::Approx(static_cast<double>(r.decode.bytes.value()) / 3.35e12));
  // The decode reads every shared weight once plus the 8K history.
  CHECK(r.decode.bytes > tally_params(m.g).shared_read_bytes + tally_state(m.g, 8192).decode_read);
  roofline_plan big = plan_roofline(m.g, find_gpu("h100-sxm"), 1, 512, 0, 1, false);
  CHECK(big.decode_tokens_per_s > r.decode_tokens_per_s);
}
