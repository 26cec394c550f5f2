// Exact-integer tests of every tally rule (Table 2-1, §2.1.3, §2.2.1) on small and chapter shapes.
#include "tally/tally.h"

#include <doctest/doctest.h>

#include "graph/graph.h"
#include "spec/model_reader.h"
#include "test_model.h"

using namespace calc;
using testing::model;

namespace {

const char* kQwen3_8b = R"(
name: test-qwen3-8b
vocab: 151936
hidden: 4096
layers:
  count: 36
  attention: {kind: gqa, q_heads: 32, kv_heads: 8, head_dim: 128, qk_norm: true}
  ffn: {kind: swiglu, intermediate: 12288}
)";

}  // namespace

TEST_CASE("n_pair counts the causal rectangle plus triangle (§2.1.3)") {
  call c;
  c.batch = 1;
  c.context = 0;
  c.tokens = 8192;
  CHECK(n_pair(c).value() == 33'558'528);  // 8192 * 8193 / 2
  c.batch = 4;
  c.context = 4096;
  c.tokens = 1024;
  CHECK(n_pair(c).value() == 4 * (1024LL * 4096 + 1024LL * 1025 / 2));
  CHECK(n_rect(c).value() == 4LL * 1024 * (4096 + 1024));
}

TEST_CASE("a sliding window caps the keys each query sees") {
  call c;
  c.context = 0;
  c.tokens = 5;
  CHECK(attention_pairs(c, 3).value() == 1 + 2 + 3 + 3 + 3);
  c.context = 10;
  c.tokens = 2;
  CHECK(attention_pairs(c, 3).value() == 6);
  c.context = 1;
  c.tokens = 1;
  CHECK(attention_pairs(c, 128).value() == 2);
  c.exec.pairs = pair_counting::rectangular;
  c.context = 0;
  c.tokens = 4;
  CHECK(attention_pairs(c, std::nullopt).value() == 16);
}

TEST_CASE("Qwen3-8B parameters by tensor and category (Table 2-B, WE 2-1)") {
  model m = model::from_text(kQwen3_8b);
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 8'190'735'360);
  CHECK(p.categories[category::embedding_output].value() == 1'244'659'712);
  CHECK(p.categories[category::attention].value() == 1'509'949'440);
  CHECK(p.categories[category::dense_shared_ffn].value() == 5'435'817'984);
  CHECK(p.categories[category::other].value() == 308'224);
  CHECK(p.weight_bytes.value() == 16'381'470'720);
  CHECK(p.shared_read_bytes.value() == 15'136'811'008);  // WE 2-2: all but the embedding table
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].attention.value() == 41'943'040);
  CHECK(p.groups[0].ffn.value() == 150'994'944);
  CHECK(p.groups[0].layers == 36);
}

TEST_CASE("Qwen3-8B forward FLOPs (§2.1.4)") {
  model m = model::from_text(kQwen3_8b);
  forward_tally prefill = tally_forward(m.g, make_call(m.spec, 1, 0, 8192));
  CHECK(prefill.flops.value() == 133'594'323'353'600);
  CHECK(prefill.vocab_flops.value() == 2LL * 4096 * 151936);  // last token only
  CHECK(prefill.interaction_flops.value() == 4LL * 32 * 128 * 36 * 33'558'528);
  forward_tally decode = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  CHECK(decode.flops.value() == 19'968'622'592);
  CHECK(decode.interaction_flops.value() == 4LL * 32 * 128 * 36 * 8193);
  call all = make_call(m.spec, 2, 0, 3);
  all.exec.vocab_all_rows = true;
  CHECK(tally_forward(m.g, all).vocab_flops.value() == 2LL * 6 * 4096 * 151936);
}

TEST_CASE("rectangular pair counting is the eager masked rectangle") {
  model m = model::from_text(kQwen3_8b);
  call c = make_call(m.spec, 1, 0, 8192);
  c.exec.pairs = pair_counting::rectangular;
  forward_tally f = tally_forward(m.g, c);
  CHECK(f.interaction_flops.value() == 4LL * 32 * 128 * 36 * 8192 * 8192);
}

TEST_CASE("GQA KV state: 2 * L * n_kv * d_h * b per token (§2.2.1)") {
  model m = model::from_text(kQwen3_8b);
  state_tally s = tally_state(m.g, 8192);
  CHECK(s.per_token.num.value() == 147'456);
  CHECK(s.total.value() == 1'207'959'552);
  CHECK(s.fixed.value() == 0);
  CHECK(s.decode_read.value() == 1'207'959'552);
  CHECK(tally_state(m.g, 8192, 4).total.value() == 4 * 1'207'959'552LL);
  // A window keeps min(N, W) tokens; per-token growth then excludes it.
  model w = model::from_text(kQwen3_8b, {"layers.attention.window=128"});
  CHECK(tally_state(w.g, 8192).total.value() == 147'456LL * 128);
  CHECK(tally_state(w.g, 100).total.value() == 147'456LL * 100);
  CHECK(tally_state(w.g, 8192).per_token.num.value() == 0);
}

TEST_CASE("--set what-ifs change the structure, not the code") {
  model m = model::from_text(kQwen3_8b, {"layers.attention.kv_heads=4"});
  CHECK(tally_state(m.g, 1).per_token.num.value() == 2LL * 36 * 4 * 128 * 2);
  model fp8 = model::from_text(kQwen3_8b, {"precision={kv: fp8}"});
  CHECK(tally_state(fp8.g, 1).per_token.num.value() == 2LL * 36 * 8 * 128);
}

TEST_CASE("a per-index override replaces one layer's block") {
  model m =
      model::from_text(std::string(kQwen3_8b) +
                       "  overrides:\n    - {at: [0], ffn: {kind: swiglu, intermediate: 100}}\n");
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::dense_shared_ffn].value() == 35LL * 150'994'944 + 3LL * 4096 * 100);
  CHECK(p.groups.size() == 2);
}

TEST_CASE("a pattern cycles variants over the layers") {
  model m = model::from_text(R"(
name: hybrid
vocab: 100
hidden: 64
layers:
  count: 4
  attention: {kind: gqa, q_heads: 4, kv_heads: 4, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
  variants:
    local: {attention: {kind: gqa, q_heads: 4, kv_heads: 1, head_dim: 16, window: 8}}
  pattern: [local, base]
)");
  REQUIRE(m.g.layers.size() == 4);
  CHECK(m.g.layers[0].variant == "local");
  CHECK(m.g.layers[1].variant == "base");
  state_tally s = tally_state(m.g, 100);
  // 2 full layers of 4 KV heads, 2 window layers of 1 KV head capped at 8 tokens.
  CHECK(s.total.value() == 2LL * (2 * 4 * 16 * 2) * 100 + 2LL * (2 * 1 * 16 * 2) * 8);
  CHECK(s.per_token.num.value() == 2LL * (2 * 4 * 16 * 2));
}

TEST_CASE("a 1M-token context and a trillion-parameter model stay exact") {
  // ~1.02T parameters: 264 layers of d = 16384, f = 65536, 128 query heads of 128.
  model m = model::from_text(R"(
name: dense-1t
vocab: 262144
hidden: 16384
layers:
  count: 264
  attention: {kind: gqa, q_heads: 128, kv_heads: 16, head_dim: 128}
  ffn: {kind: swiglu, intermediate: 65536}
)");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() > 1'000'000'000'000);
  forward_tally prefill = tally_forward(m.g, make_call(m.spec, 1, 0, 1'048'576));
  // The interaction term alone passes 2^63: 4 * 16384 * 264 * N_pair(1M).
  checked expected_interaction =
      checked(4) * 128 * 128 * 264 * (checked(1'048'576) * 1'048'577 / 2);
  CHECK(prefill.interaction_flops == expected_interaction);
  CHECK_FALSE(prefill.flops.fits_int64());
  CHECK_THROWS_AS(prefill.flops.value(), overflow_error);
  state_tally s = tally_state(m.g, 1'048'576);
  CHECK(s.total.value() == 1'048'576LL * 2 * 264 * 16 * 128 * 2);
  forward_tally decode = tally_forward(m.g, make_call(m.spec, 1, 1'048'575, 1));
  CHECK(decode.interaction_flops.value() == 4LL * 128 * 128 * 264 * 1'048'576);
}

TEST_CASE("checked arithmetic throws instead of wrapping") {
  checked big = checked(INT64_MAX) * INT64_MAX;  // fits in 128 bits
  CHECK_THROWS_AS(big * big, overflow_error);
  CHECK_THROWS_AS(checked(1) / 0, overflow_error);
  CHECK(ceil_div(7, 2).value() == 4);
}
