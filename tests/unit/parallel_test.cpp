// Exact tests of the parallel hybrid mixer (`kind: parallel`, Falcon-H1): GQA attention and a
// Mamba2 mixer side by side in every layer. Every expected number is worked by hand in the
// comment beside it; the Falcon-H1 fixture is checked against its published parameter total.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../cli/run_cli.h"
#include "graph/graph.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"
#include "tally/closed_form.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

using testing::error_of;
using testing::import_error;
using testing::model;

namespace {

// d = 64, V = 1000 untied, two norms per layer, two layers. Attention branch GQA 4q/2kv x16;
// mixer branch Mamba2 4 heads x16, N = 8, 2 groups, conv 4 (inner 64, conv channels
// 64 + 2*2*8 = 96, in_proj width 64 + 96 + 4 = 164); SwiGLU f = 128.
const char* kParallel = R"(
name: parallel
vocab: 1000
hidden: 64
layers:
  count: 2
  norms: 2
  attention:
    kind: parallel
    attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}
    mixer: {kind: mamba2, heads: 4, head_dim: 16, state_dim: 8, groups: 2}
  ffn: {kind: swiglu, intermediate: 128}
)";

/// The Falcon-H1 fixture, found beside the bundled models (no compile-time path needed).
std::string falcon_fixture() { return models_dir() + "/../tests/fixtures/hf/falcon-h1-0.5b.json"; }

}  // namespace

TEST_CASE("parallel: parameters are the sum of both branches") {
  model m = model::from_text(kParallel);
  params_tally p = tally_params(m.g);
  // Per layer: GQA q 64*64 = 4,096, k and v 64*32 = 2,048 each, o 64*64 = 4,096 (12,288);
  // Mamba2 in_proj 64*164 = 10,496, out_proj 64*64 = 4,096 (attention category, 14,592), conv1d
  // 96*4 = 384 and its bias 96, dt_bias + A_log + D 3*4 = 12, gated norm 64 (other, 556);
  // SwiGLU 3*64*128 = 24,576; norms 2*64 = 128. Layer: 12,288 + 15,148 + 24,576 + 128 = 52,140.
  CHECK(p.categories[category::attention].value() == 2 * (12'288 + 14'592));
  CHECK(p.categories[category::dense_shared_ffn].value() == 2 * 24'576);
  // Two layers 104,280; embedding and head 2*64,000; final norm 64.
  CHECK(p.total.value() == 2 * 52'140 + 128'000 + 64);
  // The attention branch alone plus the mixer alone, minus the one shared FFN and norms.
  model a = model::from_text(kParallel, {"layers.attention.mixer.heads=2"});
  // Two mixer heads: inner 32, conv channels 32 + 32 = 64, in_proj width 32 + 64 + 2 = 98:
  // in_proj 64*98 = 6,272, out_proj 32*64 = 2,048, conv 64*4 + 64, per-head 3*2, norm 32.
  CHECK(tally_params(a.g).total.value() ==
        2 * (12'288 + 6'272 + 2'048 + 256 + 64 + 6 + 32 + 24'576 + 128) + 128'064);
}

TEST_CASE("parallel: state is the KV cache plus the fixed Mamba2 state, per layer") {
  model m = model::from_text(kParallel);
  // KV: 2 (K, V) x 2 heads x 16 x 2 B (bf16) = 128 B per token per layer, 256 B for both.
  // Fixed per layer: recurrent 4 x 16 x 8 x 4 B (fp32) = 2,048; conv 96 x 4 x 2 B = 768.
  for (std::int64_t n : {1, 1000, 8192}) {
    state_tally s = tally_state(m.g, n);
    CHECK(s.fixed.value() == 2 * (2'048 + 768));
    CHECK(s.total.value() == 256 * n + 2 * (2'048 + 768));
    CHECK(s.per_token.num.value() == 256);
    CHECK(s.decode_read.value() == 256 * n);  // the KV history; the SSM state is apart
    CHECK(s.decode_state_rw.value() == 2 * 2 * 2'048);
  }
  // Rows keep their names, as each branch alone names them.
  state_tally s = tally_state(m.g, 10);
  REQUIRE(s.items.size() == 3);
  CHECK(s.items[0].name == "kv");
  CHECK(s.items[1].name == "recurrent");
  CHECK(s.items[2].name == "conv");
}

TEST_CASE("parallel: decode FLOPs by kind keep the branches apart") {
  model m = model::from_text(kParallel);
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 100, 1));
  // Per layer: GQA projections 2*12,288 = 24,576 and QK^T + AV 4*4*16 per pair over 101 keys =
  // 25,856; Mamba2 projections 2*14,592 = 29,184, the state step 4 heads x 4*16*8 = 2,048 and
  // the cached convolution 2*96*4*(1+1) = 1,536; SwiGLU 2*24,576 = 49,152. Head 2*1000*64.
  CHECK(d.by_kind["gqa"].value() == 2 * (24'576 + 25'856));
  CHECK(d.by_kind["mamba2"].value() == 2 * (29'184 + 2'048 + 1'536));
  CHECK(d.by_kind["swiglu"].value() == 2 * 49'152);
  CHECK(d.by_kind.count("parallel") == 0);
  CHECK(d.interaction_flops.value() == 2 * 25'856);
  CHECK(d.state_flops.value() == 2 * (2'048 + 1'536));
  CHECK(d.flops.value() == 2 * (24'576 + 25'856 + 29'184 + 2'048 + 1'536 + 49'152) + 128'000);
  // The closed form agrees at this point and at a prefill.
  closed_form cf(m.g);
  CHECK(cf.decode(1, 100).flops == d.flops);
  CHECK(cf.state(1000, 1).total.value() == 256 * 1000 + 2 * (2'048 + 768));
  call p = make_call(m.spec, 1, 0, 100);
  CHECK(cf.forward(p).flops == tally_forward(m.g, p).flops);
}

TEST_CASE("parallel: a window on the attention branch caps its cache") {
  model m = model::from_text(kParallel, {"layers.attention.attention.window=8"});
  // min(N, 8) tokens x 256 B, and 2 x 64 B written into the window each decode step per layer.
  state_tally s = tally_state(m.g, 1000);
  CHECK(s.total.value() == 256 * 8 + 2 * (2'048 + 768));
  CHECK(s.window_write.value() == 2 * 128);
}

TEST_CASE("parallel: tensor parallelism must divide both branches' heads") {
  model m = model::from_text(kParallel, {"layers.attention.mixer.heads=2"});
  // 4 query heads, 2 SSM heads: tp 2 divides both, tp 4 only the query heads.
  CHECK(layout_problem(m.g, layout{2, 1, 1}).empty());
  CHECK(layout_problem(m.g, layout{4, 1, 1}) == "tp 4 does not divide the 2 heads of layer 0");
  // Expert parallelism needs routed experts: on a dense model it would be a flag that changes
  // nothing.
  CHECK(layout_problem(m.g, layout{2, 1, 2}) == "ep 2: the model has no routed experts");
}

TEST_CASE("parallel: each branch must be of its kind, and the attention keeps its own cache") {
  std::string mla = kParallel;
  mla.replace(mla.find("{kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}"), 50,
              "{kind: mla, heads: 4, kv_rank: 16, qk_nope: 16, v_head: 16}");
  CHECK(error_of(mla) ==
        "test.yaml:10:23: layers.attention.attention.kind: the attention branch of a parallel "
        "block must be gqa");
  std::string gdn = kParallel;
  gdn.replace(gdn.find("kind: mamba2"), 12, "kind: gqa");
  CHECK(error_of(gdn) ==
        "test.yaml:11:19: layers.attention.mixer.kind: the mixer branch of a parallel block "
        "must be mamba2");
  std::string shared = kParallel;
  shared.replace(shared.find("head_dim: 16}"), 13, "head_dim: 16, kv_source: 0}");
  CHECK(error_of(shared) ==
        "test.yaml:10:78: layers.attention.attention.kv_source: the attention branch of a "
        "parallel block keeps its own cache");
  std::string missing = kParallel;
  missing.erase(missing.find("    mixer:"));
  missing += "  ffn: {kind: swiglu, intermediate: 128}\n";
  CHECK(error_of(missing) == "test.yaml:9:5: layers.attention.mixer: missing required field");
}

TEST_CASE("Falcon-H1-0.5B config: 521,411,104 parameters; KV and Mamba2 state in every layer") {
  model m(falcon_fixture());
  // d = 1024, V = 32,784 untied, 36 layers. Per layer:
  //   attention q 1024*512 = 524,288, k and v 1024*128 = 131,072 each, o 512*1024 = 524,288
  //     -> 1,310,720;
  //   Mamba2 (inner mamba_d_ssm 1536 = 24 heads x 64, N = 128, 1 group, conv channels
  //     1536 + 2*128 = 1,792, in_proj width 1536 + 1792 + 24 = 3,352): in_proj 1024*3,352 =
  //     3,432,448, out_proj 1536*1024 = 1,572,864, conv1d 1,792*4 = 7,168 and its bias 1,792,
  //     dt_bias/A_log/D 3*24 = 72, no gated norm (mamba_rms_norm false) -> 5,014,344;
  //   SwiGLU 3*1024*2048 = 6,291,456; norms 2*1024 = 2,048 -> 12,618,568 per layer.
  // 36 layers 454,268,448 + embedding and head 2*32,784*1024 = 67,141,632 + final norm 1,024.
  CHECK(tally_params(m.g).total.value() == 521'411'104);
  // State: KV 2 x 2 heads x 64 x 2 B = 512 B per token per layer, 18,432 B for 36 layers;
  // fixed per layer recurrent 24 x 64 x 128 x 4 B = 786,432 and conv 1,792 x 4 x 2 B = 14,336,
  // 36 x 800,768 = 28,827,648.
  //   8K:   18,432 x 8,192   =   150,994,944 + 28,827,648 =   179,822,592
  //   128K: 18,432 x 131,072 = 2,415,919,104 + 28,827,648 = 2,444,746,752
  CHECK(tally_state(m.g, 8192).total.value() == 179'822'592);
  CHECK(tally_state(m.g, 131072).total.value() == 2'444'746'752);
  CHECK(tally_state(m.g, 8192).fixed.value() == 28'827'648);
  // mamba_chunk_size 128 becomes the SSD chunk of a prefill.
  CHECK(m.spec.execution.chunk == 128);
  const auto& a = std::get<attention_parallel>(*m.spec.layers.base.attention);
  CHECK(a.attention.q_heads == 8);
  CHECK(a.mixer.head_dim == 64);
  CHECK(!a.mixer.gated_norm);
}

TEST_CASE("falcon_h1: the imported YAML names each field, and reads back the same") {
  hf::imported y = hf::import_config(falcon_fixture());
  CHECK(y.model_type == "falcon_h1");
  CHECK(y.yaml.find("kind: parallel") != std::string::npos);
  CHECK(y.yaml.find("gated_norm: false") != std::string::npos);
  CHECK(y.yaml.find("linear_chunk: 128") != std::string::npos);
  model m = model::from_text(y.yaml);
  CHECK(tally_params(m.g).total.value() == 521'411'104);
}

TEST_CASE("falcon_h1: inner width, auto head_dim, and what calc cannot map") {
  const std::string dims = R"("model_type": "falcon_h1", "vocab_size": 100, "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "num_hidden_layers": 2, "mamba_n_heads": 4, "mamba_d_state": 8)";
  auto mixer = [](const std::string& json) {
    model_spec s = model::from_text(hf::import_text(json, "config.json", "t").yaml).spec;
    return std::get<attention_parallel>(*s.layers.base.attention).mixer;
  };
  // mamba_d_head "auto": mamba_d_ssm 64 over 4 heads = 16.
  CHECK(mixer("{" + dims + R"(, "mamba_d_ssm": 64, "mamba_d_head": "auto"})").head_dim == 16);
  // mamba_d_ssm null: mamba_expand 2 x hidden 64 = 128 inner channels, 32 per head.
  CHECK(mixer("{" + dims + R"(, "mamba_d_ssm": null, "mamba_d_head": "auto"})").head_dim == 32);
  // Absent: FalconH1Config's default mamba_d_ssm 1024, 256 per head.
  CHECK(mixer("{" + dims + "}").head_dim == 256);
  // The heads must tile the inner width.
  CHECK(import_error("{" + dims + R"(, "mamba_d_ssm": 64, "mamba_d_head": 32})") ==
        "config.json:3:46: mamba_n_heads: 4 heads x 32 channels = 128, but the inner width is "
        "64 (mamba_d_ssm)");
  // One bias flag covers in_proj and out_proj in calc: different ones are an error.
  CHECK(import_error("{" + dims + R"(, "mamba_d_ssm": 64, "projectors_bias": true})") ==
        "config.json:3:107: projectors_bias: in_proj's bias is false (default of falcon_h1 "
        "(mamba_proj_bias absent)) but out_proj's is true (projectors_bias); calc's mamba2 has "
        "one proj_bias for both");
  // Attention on only some layers is not read from this family.
  CHECK(import_error("{" + dims + R"(, "mamba_d_ssm": 64, "attn_layer_indices": [0]})") ==
        "config.json:3:110: attn_layer_indices: attention on only the listed layers is not read "
        "(calc reads falcon_h1 with attention and the Mamba2 mixer in every layer; expected "
        "null)");
  // A window or per-layer types would change the cache: errors, not ignored.
  CHECK(import_error("{" + dims + R"(, "mamba_d_ssm": 64, "sliding_window": 512})") ==
        "config.json:3:106: sliding_window: not read for falcon_h1 (its attention is full on "
        "every layer; expected null or absent)");
  CHECK(mixer("{" + dims + R"(, "mamba_d_ssm": 64, "sliding_window": null})").head_dim == 16);
  // "auto" is the only text mamba_d_head takes.
  CHECK(import_error("{" + dims + R"(, "mamba_d_ssm": 64, "mamba_d_head": "half"})") ==
        "config.json:3:104: mamba_d_head: expected an integer or \"auto\", got \"half\"");
}

TEST_CASE("command line: calc import of Falcon-H1; an unmappable field exits 2 with one line") {
  cli_testing::outcome ok = cli_testing::run({"import", falcon_fixture()});
  CHECK(ok.code == 0);
  CHECK(ok.out.find("    kind: parallel                  # attention and a Mamba2 mixer side by "
                    "side\n") != std::string::npos);
  CHECK(ok.out.find("      heads: 24                     # mamba_n_heads\n") != std::string::npos);

  auto dir = std::filesystem::temp_directory_path() / "calc-parallel-tests";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"model_type\": \"falcon_h1\",\n"
                                        " \"mamba_proj_bias\": true}\n";
  cli_testing::outcome bad =
      cli_testing::run({"state", "--model", dir.string(), "--length", "8192"});
  CHECK(bad.code == 2);
  // FalconH1Config's defaults (mamba_d_ssm 1024 over 128 heads: 8 each) read cleanly up to the
  // bias: in_proj's is given (true), out_proj's (projectors_bias) defaults to false.
  CHECK(bad.err == (dir / "config.json").string() +
                       ":2:21: mamba_proj_bias: in_proj's bias is true (mamba_proj_bias) but "
                       "out_proj's is false (default of falcon_h1 (projectors_bias absent)); "
                       "calc's mamba2 has one proj_bias for both\n");
}
