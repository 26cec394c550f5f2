// Serving arithmetic: weight formats, paged and shared-prefix caches, placement over cards,
// roofline bounds (§2.6.2, §2.5.3, Chapter 1's lower bound).
#include <doctest/doctest.h>

#include "cli/support.h"
#include "common/limits.h"
#include "engine/question.h"
#include "graph/graph.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "plan/roofline.h"
#include "report/data.h"
#include "serve/sla.h"
#include "serve/step.h"
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

TEST_CASE("placement: a learned position table is whole on every card, the token table split") {
  // vLLM's gpt2.py / gpt_bigcode.py: wte a VocabParallelEmbedding, wpe a plain nn.Embedding.
  model with("starcoder");  // 8192 positions x 6144, BF16
  model without("starcoder", {"position_embeddings=0"});
  checked table = checked(8192) * 6144 * 2;
  for (std::int64_t tp : {std::int64_t{1}, std::int64_t{4}}) {
    CAPTURE(tp);
    checked a = card_loads(with.g, layout{tp, 1, 1}, 4096)[0].weight_bytes;
    checked b = card_loads(without.g, layout{tp, 1, 1}, 4096)[0].weight_bytes;
    CHECK(a - b == table);
  }
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

TEST_CASE("placement refuses a layout engines cannot run, naming the rule") {
  model dense("qwen3-8b");        // 32 heads, 36 layers
  model moe("kimi-k2-instruct");  // 64 heads, 384 routed experts, 61 layers
  // The engines carve ep out of the tp group: ep 3 of a tp group of 4 leaves a card over
  // (placement took it, serve refused it).
  CHECK(layout_problem(moe.g, layout{4, 1, 3, 1}) ==
        "ep 3 does not divide the tp group of 4 cards");
  // DP attention: an attention group splits the heads over its share of the tp group.
  CHECK(layout_problem(dense.g, layout{24, 1, 1, 8}) ==
        "the attention group's tp 3 (tp 24 / dp 8) does not divide the 32 heads of layer 0");
}

TEST_CASE("every question's server is the card's server_gpus unless told") {
  // HGX and DGX servers hold 8 GPUs (limits::default_server_gpus, a catalogue entry's default);
  // each request type spelt its own 8 before. Neither the CLI's --node-gpus nor a request has a
  // default of its own: the card's catalogue entry gives it (server_gpus_of).
  CHECK(limits::default_server_gpus == 8);
  CHECK(!cli::options{}.node_gpus);
  CHECK(gpu_spec{}.server_gpus == limits::default_server_gpus);
  CHECK(!placement_request{}.node_gpus);
  CHECK(!engine::plan_request{}.node_gpus);
  CHECK(!report_request{}.node_gpus);
  CHECK(!serve::sla_request{}.node_gpus);
  CHECK(server_gpus_of(find_gpu("gh200"), std::nullopt) == 1);
  CHECK(server_gpus_of(find_gpu("gh200"), 4) == 4);
  CHECK(server_gpus_of(find_gpu("h100-sxm"), std::nullopt) == limits::default_server_gpus);
  // A library caller that leaves node_gpus unset plans on the card's server: no tp on GH200.
  model m("llama-3.1-70b");
  placement_request pq;
  pq.gpu = find_gpu("gh200");
  pq.length = 8192;
  pq.requests = 16;
  pq.workspace = checked(2LL << 30);
  placement_result pr = answer_plan(m.g, pq);
  REQUIRE(pr.plan.best);
  CHECK(pr.plan.best->l.tp == 1);
  pq.node_gpus = 2;
  pr = answer_plan(m.g, pq);
  REQUIRE(pr.plan.best);
  CHECK(pr.plan.best->l.tp == 2);
  // And searches the same cards at most, unless told (--max-gpus).
  CHECK(cli::options{}.max_gpus == limits::default_max_gpus);
  CHECK(placement_request{}.max_gpus == limits::default_max_gpus);
  CHECK(engine::plan_request{}.max_gpus == limits::default_max_gpus);
  CHECK(report_request{}.max_gpus == limits::default_max_gpus);
  CHECK(serve::sla_request{}.max_gpus == limits::default_max_gpus);
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

TEST_CASE("plan: layouts engines run (issue 19: no tp 1 x pp 24, no tp 3)") {
  // DeepSeek-V3 at 32K x 256 on H100 once came out "tp 1 x pp 24", Kimi K3 "tp 3 x pp 48".
  for (const char* name : {"deepseek-v3", "kimi-k3", "qwen3-235b-a22b"}) {
    CAPTURE(name);
    model m(name);
    gpu_spec h100 = find_gpu("h100-sxm");
    placement_plan p = plan_placement(m.g, h100, 32768, 256, 2LL << 30, 8, 512);
    REQUIRE(p.best);
    const layout& l = p.best->l;
    CHECK((l.tp & (l.tp - 1)) == 0);                   // a power of two
    CHECK(l.tp <= h100.nvlink_domain);                 // within one NVLink domain
    if (l.pp > 1) CHECK(l.tp == h100.nvlink_domain);   // pp only across domains
    for (std::int64_t cards = 1; cards <= 64; ++cards)
      for (const layout& d : deployable_layouts(m.g, h100, cards, 8)) {
        CHECK(layout_problem(m.g, d).empty());
        CHECK(d.cards() == cards);
        CHECK(((d.tp & (d.tp - 1)) == 0));
      }
  }
  // MLA: dp attention is offered, and with EP it holds more requests than plain tp (BF16
  // weights, as bundled; dp replicates the attention weights, so two stages of 8 B200).
  model v3("deepseek-v3");
  std::vector<layout> eight = deployable_layouts(v3.g, find_gpu("b200"), 8, 8);
  bool dp = false;
  for (const layout& l : eight) dp = dp || (l.dp == 8 && l.ep == 8);
  CHECK(dp);
  fit plain = evaluate_layout(v3.g, find_gpu("b200"), layout{8, 2, 1, 1}, 8192, 1, 2LL << 30);
  fit dpa = evaluate_layout(v3.g, find_gpu("b200"), layout{8, 2, 8, 8}, 8192, 1, 2LL << 30);
  CHECK(dpa.max_requests > plain.max_requests);
}

TEST_CASE("plan: a card without NVLink runs tp over its server's PCIe") {
  model m("qwen3-8b");
  gpu_spec rtx = find_gpu("rtx-4090");
  CHECK(rtx.nvlink_domain == 1);
  placement_plan p = plan_placement(m.g, rtx, 8192, 16, 2LL << 30, 8, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.tp == 2);
  CHECK(p.best->l.pp == 1);
}

TEST_CASE("plan: a bridged card runs tp over its server's PCIe, as serve costs it") {
  // H100 NVL and A100 PCIe join cards in NVLink pairs; engines run tp 4 and 8 over the server's
  // PCIe, and serve and plan --sla cost that. Plain plan once stopped tp at the pair and
  // stacked pipeline stages: tp 2 x pp 2 on four cards, tp 2 x pp 8 on sixteen.
  model l70("llama-3.1-70b");
  gpu_spec nvl = find_gpu("h100-nvl");
  REQUIRE(nvl.nvlink_domain == 2);
  REQUIRE(nvl.pcie > 0);
  CHECK(tp_domain(nvl, 8) == 8);
  CHECK(tp_domain(nvl, 4) == 4);
  placement_plan p = plan_placement(l70.g, nvl, 8192, 64, 2LL << 30, 8, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.cards() == 4);
  CHECK(p.best->l.tp == 4);
  CHECK(p.best->l.pp == 1);
  model l405("llama-3.1-405b");
  gpu_spec a100 = find_gpu("a100-pcie-80gb");
  p = plan_placement(l405.g, a100, 8192, 16, 2LL << 30, 8, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.tp == 8);  // a whole server
  CHECK(p.best->l.pp == p.best->l.cards() / 8);
  // Pipeline stages may also start past the bridge, where that takes fewer cards: 405B in FP8
  // fits six H100 NVL as tp 2 x pp 3 (tp 8 would take eight); never from tp 1.
  model l405_fp8("llama-3.1-405b", {"precision.weights=fp8"});
  p = plan_placement(l405_fp8.g, nvl, 8192, 1, 2LL << 30, 8, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.cards() == 6);
  CHECK(p.best->l.tp == 2);
  CHECK(p.best->l.pp == 3);
  for (std::int64_t cards = 2; cards <= 16; ++cards)
    for (const layout& l : deployable_layouts(l405.g, nvl, cards, 8)) CHECK(l.tp > 1);
  // A server of 4 (--node-gpus 4) bounds it there; an HGX card stays within its NVLink domain.
  p = plan_placement(l70.g, nvl, 8192, 64, 2LL << 30, 4, 64);
  REQUIRE(p.best);
  CHECK(p.best->l.tp <= 4);
  CHECK(tp_domain(find_gpu("h100-sxm"), 16) == 8);
  for (const layout& l : deployable_layouts(l405.g, find_gpu("h100-sxm"), 16, 16)) CHECK(l.tp <= 8);
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
