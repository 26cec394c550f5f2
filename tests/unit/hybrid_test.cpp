// Exact-integer tests of the hybrid rules: linear attention (chunked and recurrent), MLA cache
// paths, MoE routing rows, AttnRes candidates; and properties every state tally must keep.
#include <doctest/doctest.h>

#include "graph/graph.h"
#include "plan/plan.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

using testing::model;

TEST_CASE("chunked linear attention: padded GEMMs vs valid triangles (MODELS A6, A8)") {
  execution_spec e;
  e.chunk = 64;
  e.chunk_flops = chunk_rule::padded_gemms;
  CHECK(chunk_work(e, 64, 128, 128).value() == 9'437'184);      // one chunk, per head
  CHECK(chunk_work(e, 65, 128, 128).value() == 2 * 9'437'184);  // tail padded to a chunk
  CHECK(chunk_work(e, 1, 128, 128).value() == 9'437'184);
  e.chunk_flops = chunk_rule::valid_triangles;
  CHECK(chunk_work(e, 64, 128, 128).value() == 8'904'704);
  // One valid token: no strict lower triangle, a 1-token state pass and causal pair.
  CHECK(chunk_work(e, 1, 128, 128).value() == 6LL * 128 * 128 + 2 * 128 + 2 * 128);
  CHECK(chunk_work(e, 65, 128, 128).value() == 8'904'704 + 6LL * 128 * 128 + 4 * 128);
}

TEST_CASE("Block AttnRes mixes 1002 candidates per token over 93 layers in blocks of 12") {
  CHECK(attnres_candidates(93, 12).value() == 1002);
  // One block of one layer: attention mix has 1 candidate (skipped), FFN mix 2, output 2.
  CHECK(attnres_candidates(1, 1).value() == 2 + 2);
}

TEST_CASE("Qwen3.6 hybrid: fixed recurrent and conv state, 20 KiB per token (§2.3.5)") {
  model m("qwen3.6-35b-a3b");
  state_tally s = tally_state(m.g, 8192);
  CHECK(s.fixed.value() == 62'914'560 + 1'966'080);
  CHECK(s.per_token.num.value() == 20'480);
  CHECK(s.decode_state_rw.value() == 2 * 62'914'560);
  CHECK(s.decode_read.value() == 20'480LL * 8192);
  forward_tally decode = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  // 30 GDN layers x 32 v-heads x 6 dk dv, plus the cached conv (2 outputs of 8192 x 4 channels)
  CHECK(decode.state_flops.value() == 30LL * 32 * 6 * 128 * 128 + 30LL * 2 * 8192 * 4 * 2);
  CHECK(decode.flops.value() == 7'331'184'832);
  forward_tally prefill = tally_forward(m.g, make_call(m.spec, 1, 0, 8192));
  CHECK(prefill.flops.value() == 52'094'951'358'464);
  CHECK(prefill.interaction_flops.value() == 4LL * 16 * 256 * 10 * 8192 * 8192);  // rectangle
}

TEST_CASE("Kimi K3: compact vs expanded MLA share projection FLOPs but not state") {
  model compact("kimi-k3");
  model expanded("kimi-k3", {"execution.mla_path=expanded"});
  call c = make_call(compact.spec, 1, 0, 8192);
  call e = make_call(expanded.spec, 1, 0, 8192);
  forward_tally fc = tally_forward(compact.g, c), fe = tally_forward(expanded.g, e);
  CHECK(fc.linear_flops == fe.linear_flops);
  CHECK(fc.interaction_flops.value() == 2LL * 96 * (576 + 512) * 24 * 33'558'528);
  CHECK(fe.interaction_flops.value() == 2LL * 96 * (192 + 128) * 24 * 33'558'528);
  CHECK(fc.flops.value() == 1'863'462'762'315'776);
  CHECK(fe.flops.value() == 1'744'701'011'001'344);  // the book's expanded-path total
  CHECK(tally_state(compact.g, 1).per_token.num.value() == 27'648);
  CHECK(tally_state(expanded.g, 1).per_token.num.value() == 1'474'560);
  CHECK(tally_state(compact.g, 8192).fixed == tally_state(expanded.g, 8192).fixed);
}

TEST_CASE("Kimi K3 decode: the recurrent KDA step and convolutions are not matrix FLOPs") {
  model m("kimi-k3");
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  CHECK(d.state_flops.value() == 0);
  CHECK(d.connection_flops.value() == 2LL * 7168 * 1002);
  // The AttnRes block store is workspace of the pass (8 snapshots of the row), not state.
  CHECK(d.workspace_bytes.value() == 8LL * 7168 * 2);
  CHECK(tally_state(m.g, 8192).total.value() == 454'459'392 + 27'648LL * 8192);
  CHECK(d.flops.value() == 249'438'187'520);
}

TEST_CASE("state is linear in length above the fixed part, and per request") {
  for (const char* name : {"qwen3-8b", "qwen3.6-35b-a3b", "kimi-k3", "deepseek-v3"}) {
    model m(name);
    state_tally a = tally_state(m.g, 1000), b = tally_state(m.g, 3000);
    REQUIRE(a.per_token.is_integer());
    CHECK_MESSAGE(b.total - a.total == a.per_token.num * 2000, name);
    CHECK_MESSAGE(a.total == a.fixed + a.per_token.num * 1000, name);
    CHECK_MESSAGE(tally_state(m.g, 1000, 2).total == a.total * 2, name);
  }
}

TEST_CASE("MoE rows: no dropped tokens, m*k rows through the experts") {
  model m("qwen3.6-35b-a3b");
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::routed_experts].value() == 40LL * 256 * 3'145'728);
  CHECK(p.selected_expert_bytes_per_token.value() == 40LL * 8 * 3'145'728 * 2);
  // One decode token reads the shared weights plus at most k experts per layer.
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  checked routed_read = checked(40) * 8 * 3'145'728 * 2;
  CHECK(f.weight_read_bytes ==
        p.shared_read_bytes - checked(40) * 256 * 3'145'728 * 2 + routed_read);
}

TEST_CASE("Example 2-4: concentrated routing touches 8 experts, 48 MiB per layer") {
  model m("qwen3.6-35b-a3b");
  experts_plan c = plan_experts(m.g, 64, parse_routing("concentrated"));
  CHECK(c.distinct_experts == 8);
  CHECK(c.layer_weight_read_bytes == 48.0 * (1 << 20));
  CHECK(c.dispatches.value() == 512);
  experts_plan u = plan_experts(m.g, 64, parse_routing("uniform"));
  CHECK(u.distinct_experts == 256);
  CHECK(u.rows_per_expert == 2);
  experts_plan z = plan_experts(m.g, 64, parse_routing("zipf:1.2"));
  CHECK(z.distinct_experts > 8);
  CHECK(z.distinct_experts < 256);
  CHECK(u.flops == c.flops);  // routing changes the bytes read, not the work
  CHECK_THROWS_AS(parse_routing("zipf:x"), spec_error);
  // A token picks k distinct experts, however skewed the popularity: one token touches exactly
  // k (drawn with repeats, zipf:2 gave 3.45 of DeepSeek-V3's 8), and more tokens never fewer.
  model ds("deepseek-v3");
  // Steep exponents too: there the popularity left to the uncapped experts is a sum of tiny
  // terms (subtracted from 1, it cancelled to noise: zipf:20 gave 6 experts of 8 and 21 rows per
  // expert from 16 tokens).
  for (const char* r : {"zipf:0", "zipf:1", "zipf:2", "zipf:10", "zipf:20", "zipf:60", "zipf:99"}) {
    experts_plan one = plan_experts(ds.g, 1, parse_routing(r));
    CHECK_MESSAGE(one.distinct_experts == doctest::Approx(8).epsilon(1e-6), r);
    experts_plan sixteen = plan_experts(ds.g, 16, parse_routing(r));
    CHECK_MESSAGE(sixteen.rows_per_expert <= 16 * (1 + 1e-9), r);
    CHECK(plan_experts(ds.g, 4, parse_routing(r)).distinct_experts >= one.distinct_experts);
    CHECK(plan_experts(ds.g, 4, parse_routing(r)).layer_weight_read_bytes >=
          static_cast<double>(one.concentrated_layer_read_bytes.value()) * (1 - 1e-6));
  }
}

TEST_CASE("§2.5.1 granularity: same parameters and F, different shapes") {
  model fine("qwen3-235b-a22b");
  model coarse("qwen3-235b-a22b",
               {"layers.ffn.experts=64", "layers.ffn.intermediate=3072", "layers.ffn.top_k=4"});
  experts_plan a = plan_experts(fine.g, 16, routing{});
  experts_plan b = plan_experts(coarse.g, 16, routing{});
  CHECK(a.flops.value() == 454'192'791'552);
  CHECK(a.flops == b.flops);
  CHECK(a.all_routed_bytes == b.all_routed_bytes);
  CHECK(a.expert_params * 2 == b.expert_params);
}

TEST_CASE("crossover budget: the longest context whose whole state fits") {
  model m("qwen3.6-35b-a3b");
  auto longest = max_tokens_within(m.g, 256LL << 20);
  REQUIRE(longest.has_value());
  CHECK(*longest == ((256LL << 20) - 64'880'640) / 20'480);
  CHECK_FALSE(max_tokens_within(m.g, 1 << 20).has_value());  // fixed state alone is 61.875 MiB
}
