// Exact tests of the layer features real checkpoints need (issue 9): layers with only a mixer
// or only a feed-forward block, the Mamba2 (SSD) mixer, GQA sinks / keys shared with values /
// cross-layer KV sharing, routed-expert biases and per-module weight formats. Every expected
// number is worked by hand in the comment beside it.
#include <doctest/doctest.h>

#include <string>

#include "graph/graph.h"
#include "plan/plan.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

using testing::error_of;
using testing::model;

namespace {

// d = 64, V = 1000 untied, one norm per layer; GQA 4q/2kv x16, SwiGLU f = 128.
const char* kPartial = R"(
name: partial
vocab: 1000
hidden: 64
layers:
  count: 4
  norms: 1
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
  variants:
    mixer: {ffn: none}
    mlp: {attention: none}
  pattern: [mixer, mlp, base, mlp]
)";

}  // namespace

TEST_CASE("partial layers: a mixer alone or an FFN alone, nothing invented for the other half") {
  model m = model::from_text(kPartial);
  REQUIRE(m.g.layers.size() == 4);
  CHECK(std::holds_alternative<ffn_none>(m.g.layers[0].ffn));
  CHECK(std::holds_alternative<attention_none>(m.g.layers[1].attention));
  CHECK(m.g.groups.size() == 3);  // mixer-only, FFN-only, both
  CHECK(m.g.groups[0].name == "gqa 4q/2kv x16 + 1 norms");
  CHECK(m.g.groups[1].name == "swiglu 128 + 1 norms");
  params_tally p = tally_params(m.g);
  // GQA: q 64*64 + k 64*32 + v 64*32 + o 64*64 = 12,288; SwiGLU 3*64*128 = 24,576; norm 64.
  // Layers: 12,352 + 24,640 + 36,928 + 24,640 = 98,560; embedding + head 2*1000*64 = 128,000;
  // final norm 64: 226,624.
  CHECK(p.total.value() == 226'624);
  CHECK(p.categories[category::attention].value() == 2 * 12'288);
  CHECK(p.categories[category::dense_shared_ffn].value() == 3 * 24'576);
  CHECK(p.categories[category::other].value() == 4 * 64 + 64);
  // KV: layers 0 and 2 only, 2 * 2 heads * 16 * 2 B = 128 B per token each: 25,600 B at 100.
  state_tally s = tally_state(m.g, 100);
  CHECK(s.total.value() == 25'600);
  REQUIRE(s.items.size() == 1);
  CHECK(s.items[0].layers == 2);
  // Prefill of 10 tokens: weight GEMMs 2*10*(2*12,288 + 3*24,576) = 1,966,080; QK and AV on two
  // layers 2 * 4*4*16*55 pairs = 28,160; head on the last row 2*1000*64 = 128,000.
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 0, 10));
  CHECK(f.linear_flops.value() == 1'966'080);
  CHECK(f.interaction_flops.value() == 28'160);
  CHECK(f.flops.value() == 1'966'080 + 28'160 + 128'000);
  CHECK(f.by_kind.count("none") == 0);  // an absent half is no kind of work
}

TEST_CASE("partial layers: `none` in the base block and in overrides; other scalars are errors") {
  std::string yaml = kPartial;
  // The base block itself without an FFN; an override brings one back on layer 3.
  model m = model::from_text(yaml, {"layers.ffn=none", "layers.pattern=[base]",
                                    "layers.overrides=[{at: [3], ffn: {kind: swiglu, "
                                    "intermediate: 128}}]"});
  CHECK(std::holds_alternative<ffn_none>(m.g.layers[0].ffn));
  CHECK(std::holds_alternative<ffn_swiglu>(m.g.layers[3].ffn));
  // 4 * (12,288 + 64) + 24,576 + 128,000 + 64 = 202,048.
  CHECK(tally_params(m.g).total.value() == 202'048);
  std::string bad = yaml;
  bad.replace(bad.find("{ffn: none}"), 11, "{ffn: nothing}");
  CHECK(error_of(bad) ==
        "test.yaml:11:18: layers.variants.mixer.ffn: expected a mapping with a kind, or none, "
        "got 'nothing'");
}

namespace {

// d = 64; Mamba2 with 4 heads x P 16, N 8, 2 groups, kernel 4: inner 64, groups*N 16,
// convolution channels 64 + 2*16 = 96, in_proj width 64 + 96 + 4 = 164.
const char* kMamba = R"(
name: mamba
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  norms: 1
  attention: {kind: mamba2, heads: 4, head_dim: 16, state_dim: 8, groups: 2, conv_kernel: 4}
  ffn: none
)";

}  // namespace

TEST_CASE("mamba2: parameters as the public mixer stores them") {
  model m = model::from_text(kMamba);
  // in_proj 64*164 = 10,496; out_proj 64*64 = 4,096 (attention).
  // conv1d 96*4 = 384, its bias 96, dt_bias + A_log + D 3*4 = 12, gated norm 64, layer norm 64.
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::attention].value() == 10'496 + 4'096);
  CHECK(p.categories[category::other].value() == 384 + 96 + 12 + 64 + 64 + 64);  // + final norm
  CHECK(p.total.value() == 10'496 + 4'096 + 384 + 96 + 12 + 64 + 64 + 64'000 + 64);
  // Without the conv bias and the gated norm, with projection biases (164 + 64).
  model b = model::from_text(
      kMamba, {"layers.attention.conv_bias=false", "layers.attention.gated_norm=false",
               "layers.attention.proj_bias=true"});
  CHECK(tally_params(b.g).total.value() == p.total.value() - 96 - 64 + 164 + 64);
}

TEST_CASE("mamba2: fixed state, no KV, nothing grows") {
  model m = model::from_text(kMamba);
  // recurrent: 4 heads x 16 x 8 fp32 = 2,048 B; conv: 96 channels x 4 slots bf16 = 768 B.
  for (std::int64_t n : {1, 8192, 131072}) {
    state_tally s = tally_state(m.g, n);
    CHECK(s.total.value() == 2'048 + 768);
    CHECK(s.fixed.value() == 2'048 + 768);
    CHECK(s.per_token.is_zero());
    CHECK(s.decode_read.value() == 0);
    CHECK(s.decode_state_rw.value() == 2 * 2'048);  // read and rewritten every step
  }
}

TEST_CASE("mamba2: decode step, chunked and recurrent prefill FLOPs") {
  model m = model::from_text(kMamba);
  // Decode at S = 100: projections 2*(10,496 + 4,096) = 29,184; the state step 4 heads x
  // 4*16*8 = 2,048; the cached convolution 2*96*4*(1+1) = 1,536; tied head 2*1000*64 = 128,000.
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 100, 1));
  CHECK(d.linear_flops.value() == 29'184);
  CHECK(d.state_flops.value() == 2'048 + 1'536);
  CHECK(d.by_kind["mamba2"].value() == 29'184 + 2'048 + 1'536);
  CHECK(d.flops.value() == 29'184 + 2'048 + 1'536 + 128'000);
  // Chunked prefill of 100 tokens, chunk 64: 2 padded chunks x 4 heads x
  // (2*64^2*8 + 2*64^2*16 + 4*64*8*16 = 229,376) = 1,835,008; convolution 2*96*4*(100+3).
  CHECK(ssd_chunk_work(m.spec.execution, 100, 16, 8).value() == 2 * 229'376);
  forward_tally p = tally_forward(m.g, make_call(m.spec, 1, 0, 100));
  CHECK(p.state_flops.value() == 1'835'008 + 79'104);
  CHECK(p.linear_flops.value() == 2LL * 100 * 14'592);
  // Recurrent prefill: 100 tokens x 2,048.
  model r = model::from_text(kMamba, {"execution.linear_prefill=recurrent"});
  CHECK(tally_forward(r.g, make_call(r.spec, 1, 0, 100)).state_flops.value() ==
        100 * 2'048 + 79'104);
}

TEST_CASE("mamba2: groups must divide heads") {
  std::string yaml = kMamba;
  yaml.replace(yaml.find("groups: 2"), 9, "groups: 3");
  CHECK(error_of(yaml) ==
        "test.yaml:9:75: layers.attention.groups: 3 groups do not divide 4 heads");
}

namespace {

// d = 64, V = 1000 tied; GQA 4q/2kv x16 with q/k norms, SwiGLU 128. Layer 0 full, layer 1 a
// window of 8, layer 2 reads layer 0's cache, layer 3 reads layer 1's.
const char* kShared = R"(
name: shared
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 4
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true}
  ffn: {kind: swiglu, intermediate: 128}
  variants:
    local: {attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true, window: 8}}
  pattern: [base, local]
  overrides:
    - {at: [2], attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true, kv_source: 0}}
    - {at: [3], attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true, window: 8, kv_source: 1}}
)";

}  // namespace

TEST_CASE("kv_source: a sharing layer stores no cache, keeps its K/V weights, never runs them") {
  model m = model::from_text(kShared);
  params_tally p = tally_params(m.g);
  // Per layer: q 4,096 + k 2,048 + v 2,048 + o 4,096 + q/k norms 32 + SwiGLU 24,576 + norms 128
  // = 37,024, the sharing layers included (their K/V projections stay in the checkpoint).
  // 4 * 37,024 + tied table 64,000 + final norm 64 = 212,160.
  CHECK(p.total.value() == 212'160);
  // Active: less the idle k, v and k_norm of layers 2 and 3: 2 * (2,048 + 2,048 + 16) = 8,224.
  CHECK(p.active.value() == 212'160 - 8'224);
  CHECK(p.shared_read_bytes.value() == 2 * (212'160 - 8'224));
  // State at 100: layer 0 keeps 2*2*16*2 B = 128 B per token (12,800), layer 1 its window of 8
  // (1,024); layers 2 and 3 nothing.
  state_tally s = tally_state(m.g, 100);
  CHECK(s.total.value() == 12'800 + 1'024);
  // Windowed and global KV are their own rows: one layer each.
  REQUIRE(s.items.size() == 2);
  CHECK(s.items[0].layers == 1);
  CHECK(s.items[1].layers == 1);
  CHECK(s.items[0].kind != s.items[1].kind);
  // A decode query reads its source's cache: 2 * 12,800 + 2 * 1,024; only layer 1 writes a window.
  CHECK(s.decode_read.value() == 27'648);
  CHECK(s.window_write.value() == 128);
  // Prefill of 10: projections 20 * 36,864 on layers 0-1 and 20 * 32,768 (no K/V) on 2-3;
  // pairs 55 on full layers, 1+2+...+8+8+8 = 52 in the windows: 4*4*16*(2*55 + 2*52).
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 0, 10));
  CHECK(f.linear_flops.value() == 2 * 737'280 + 2 * 655'360);
  CHECK(f.interaction_flops.value() == 256 * (2 * 55 + 2 * 52));
  // Weights read once per call: everything but the idle tensors, in BF16.
  CHECK(f.weight_read_bytes.value() == 2 * (212'160 - 8'224));
}

TEST_CASE("kv_source: the source must be an earlier GQA layer of the same cache shape") {
  std::string yaml = kShared;
  std::string later = yaml;
  later.replace(later.find("kv_source: 0"), 12, "kv_source: 3");
  CHECK(error_of(later) ==
        "test.yaml:14:105: layers.overrides[0].attention.kv_source: layer 2: the source layer 3 "
        "must come before it");
  std::string shape = yaml;
  shape.replace(shape.find("kv_source: 1"), 12, "kv_source: 0");
  CHECK(error_of(shape) ==
        "test.yaml:15:116: layers.overrides[1].attention.kv_source: layer 3: layer 0 caches 2 KV "
        "heads x 16, not the 2 KV heads x 16, window 8 this layer reads");
  std::string chain = yaml;
  chain.replace(chain.find("kv_source: 1"), 12, "kv_source: 2");
  CHECK(error_of(chain) ==
        "test.yaml:15:116: layers.overrides[1].attention.kv_source: layer 3: layer 2 stores no "
        "GQA cache of its own");
}

TEST_CASE("k_is_v: no v_proj and one cached tensor; sinks: q_heads parameters, nothing cached") {
  model plain = model::from_text(kPartial);
  model kv = model::from_text(kPartial, {"layers.attention.k_is_v=true"});
  model sinks = model::from_text(kPartial, {"layers.attention.sinks=true"});
  // Two attention layers: each loses v_proj 64*32 = 2,048, or gains 4 sink logits.
  CHECK(tally_params(kv.g).total.value() == 226'624 - 2 * 2'048);
  CHECK(tally_params(sinks.g).total.value() == 226'624 + 2 * 4);
  // KV: 64 B per token per layer instead of 128: 2 layers x 100 x 64 = 12,800.
  CHECK(tally_state(kv.g, 100).total.value() == 12'800);
  CHECK(tally_state(sinks.g, 100).total == tally_state(plain.g, 100).total);
  // Prefill FLOPs: k_is_v drops the V GEMM, 2*10*2,048 on two layers; sinks add none.
  call c = make_call(plain.spec, 1, 0, 10);
  CHECK(tally_forward(kv.g, c).flops.value() == tally_forward(plain.g, c).flops.value() - 81'920);
  CHECK(tally_forward(sinks.g, c).flops == tally_forward(plain.g, c).flops);
}

namespace {

// d = 64; MoE of 4 experts, top 2, f = 32, a router with bias.
const char* kMoe = R"(
name: moe
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  attention: none
  ffn: {kind: moe, experts: 4, top_k: 2, intermediate: 32, router_bias: true, expert_bias: true}
)";

}  // namespace

TEST_CASE("expert_bias: 2f + d per routed expert, read only for touched experts") {
  model m = model::from_text(kMoe);
  params_tally p = tally_params(m.g);
  // Experts 4 * 3*64*32 = 24,576; biases 4 * (2*32 + 64) = 512; router 64*4 + bias 4 = 260;
  // norms 2*64 + final 64; tied table 64,000.
  CHECK(p.categories[category::routed_experts].value() == 24'576 + 512);
  CHECK(p.total.value() == 24'576 + 512 + 260 + 192 + 64'000);
  // Active: 2 of 4 experts with their biases: 12,288 + 256.
  CHECK(p.active.value() == p.total.value() - 12'288 - 256);
  CHECK(p.selected_expert_bytes_per_token.value() == 2 * (12'288 + 256));
  // One decode row touches 2 experts: their matrices and biases are read (BF16).
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 10, 1));
  CHECK(d.weight_read_bytes.value() == 2 * (12'288 + 256) + 2 * (260 + 192 + 64'000));
  CHECK(d.linear_flops.value() == 2 * (2 * 6'144 + 256));  // biases add no FLOPs
}

TEST_CASE("precision.attention_out: the output projection's own format, else `attention`") {
  // kPartial has 2 attention layers: inputs q 64x64 + k, v 64x32 = 8,192 and o_proj 64x64 =
  // 4,096 parameters each; 3 SwiGLU layers of 3*64*128 = 24,576; norms 320; table and head
  // 2 * 64,000. Inputs in fp8: 2 * 8,192 = 16,384 B; o_proj in NVFP4 (4 bits and an fp8 scale
  // per 16 values, 4.5 bits): 8,192 * 9 / 16 = 4,608 B; the rest bf16: 2 * 202,048 = 404,096 B.
  model m =
      model::from_text(kPartial, {"precision.attention=fp8", "precision.attention_out=nvfp4"});
  CHECK(tally_params(m.g).weight_bytes.value() == 16'384 + 4'608 + 404'096);
  // attention_out alone: the inputs fall back to `attention`, absent, hence `weights` (bf16).
  model o = model::from_text(kPartial, {"precision.attention_out=nvfp4"});
  CHECK(tally_params(o.g).weight_bytes.value() == 2 * 16'384 + 4'608 + 404'096);
  // attention alone: o_proj follows it (fp8), as before the role existed.
  model a = model::from_text(kPartial, {"precision.attention=fp8"});
  CHECK(tally_params(a.g).weight_bytes.value() == 16'384 + 8'192 + 404'096);
  // `--weights` (set_weights) replaces attention_out too: every matrix in fp8, 24,576 + 73,728.
  model w = model::from_text(kPartial, {"precision.attention_out=nvfp4"});
  w.spec.precision.set_weights(parse_dtype("fp8"));
  graph gw = build_graph(w.spec);
  CHECK(tally_params(gw).weight_bytes.value() == 24'576 + 73'728 + 2 * (320 + 128'000));
  CHECK(error_of(std::string(kPartial) + "precision: {attention_out: fp5}\n")
            .rfind("test.yaml:14:28: precision.attention_out: unknown precision 'fp5' (known: ",
                   0) == 0);
}

TEST_CASE("per-module weight formats: experts, attention, dense FFN; --weights sets them all") {
  model m =
      model::from_text(kPartial, {"precision.attention=fp8", "precision.dense_ffn=int4:g128"});
  params_tally p = tally_params(m.g);
  // Attention 2 * 12,288 fp8 = 24,576 B; SwiGLU 3 * 24,576 int4 with a bf16 scale per 128:
  // 73,728 / 2 + 576 * 2 = 38,016 B; the rest (norms 320, table and head 128,000) bf16.
  CHECK(p.weight_bytes.value() == 24'576 + 38'016 + 2 * (320 + 128'000));
  model g = model::from_text(kMoe, {"precision.experts=mxfp4"});
  // Routed experts in MXFP4: 24,576 / 2 + 24,576 / 32 scales = 13,056 B; biases stay bf16.
  CHECK(tally_params(g.g).weight_bytes.value() == 13'056 + 2 * (512 + 260 + 192 + 64'000));
  // `--weights fp8` replaces every module role (the CLI calls set_weights).
  model f = model::from_text(kMoe, {"precision.experts=mxfp4"});
  f.spec.precision.set_weights(parse_dtype("fp8"));
  graph gg = build_graph(f.spec);
  CHECK(tally_params(gg).weight_bytes.value() == 24'576 + 256 + 2 * (512 + 4 + 192 + 64'000));
  CHECK(error_of(std::string(kMoe) + "precision: {experts: fp5}\n")
            .rfind("test.yaml:10:22: precision.experts: unknown precision 'fp5' (known: ", 0) == 0);
}
