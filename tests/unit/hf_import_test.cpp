// Hugging Face config.json import (src/spec/hf/): real public configs (tests/fixtures/hf/, see
// SOURCES.md) read into the same model_spec as the YAML reader builds, checked against published
// parameter totals, hand-computed state bytes, the bundled YAML of the same model, and the
// located errors of bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "common/dtype.h"
#include "scratch.h"
#include "spec/hf/families.h"
#include "spec/hf/hf_json.h"
#include "spec/hf/import.h"
#include "tally/call.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;
using testing::import_error;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

/// A model read from a config the way `--model path/config.json` reads it.
testing::model imported(const std::string& name, std::vector<std::string> sets = {}) {
  return testing::model(fixture(name), std::move(sets));
}

/// A fixture config's text without its closing brace, for tests that append a field.
std::string open_config(const std::string& name) {
  std::ifstream in(fixture(name));
  std::stringstream text;
  text << in.rdbuf();
  std::string base = text.str();
  return base.substr(0, base.rfind('}'));
}


}  // namespace

TEST_CASE("Qwen3-8B config: 8,190,735,360 parameters; KV 144 KiB per token") {
  testing::model m = imported("qwen3-8b.json");
  CHECK(params(m) == 8'190'735'360);  // the published total
  // K and V of 8 heads x 128 in BF16 on 36 layers: 2 * 8 * 128 * 2 B * 36 = 147,456 B/token.
  CHECK(state(m, 8192) == 147'456LL * 8192);      // 1,207,959,552 B = 1.125 GiB
  CHECK(state(m, 131072) == 147'456LL * 131072);  // 19,327,352,832 B = 18 GiB
}

TEST_CASE("Llama-3.1-70B config: 70,553,706,496 parameters; KV 320 KiB per token") {
  testing::model m = imported("llama-3.1-70b.json");
  CHECK(params(m) == 70'553'706'496);  // the published total
  // head_dim absent: hidden / heads = 8192 / 64 = 128. 2 * 8 * 128 * 2 B * 80 = 327,680 B/token.
  CHECK(state(m, 8192) == 327'680LL * 8192);      // 2,684,354,560 B = 2.5 GiB
  CHECK(state(m, 131072) == 327'680LL * 131072);  // 42,949,672,960 B = 40 GiB
}

TEST_CASE("Mixtral-8x22B config: 140,620,634,112 parameters (the published 141B)") {
  testing::model m = imported("mixtral-8x22b.json");
  // Per layer: attention 2*6144^2 + 2*6144*1024 = 88,080,384; experts 8 * 3*6144*16384 =
  // 2,415,919,104; router 6144*8 = 49,152; norms 2*6144. x56 = 140,227,411,968, plus embedding
  // and head 2*32000*6144 = 393,216,000 and the final norm 6144.
  CHECK(params(m) == 140'620'634'112);
  // 2 * 8 * 128 * 2 B * 56 = 229,376 B/token (no sliding window: sliding_window is null).
  CHECK(state(m, 8192) == 229'376LL * 8192);
  CHECK(state(m, 131072) == 229'376LL * 131072);
}

TEST_CASE("Qwen3-Next-80B-A3B config: every 4th layer attention, the rest Gated DeltaNet") {
  testing::model m = imported("qwen3-next-80b-a3b.json");
  // 12 attention layers: 2 * 2 * 256 * 2 B * 12 = 24,576 B/token. 36 GDN layers keep a fixed
  // 32 x 128 x 128 FP32 state (2 MiB each) and conv slots of 4 (the kernel width, §2.3.5's rule)
  // x (2*16*128 + 32*128) channels = 32,768 BF16 values (65,536 B):
  // 36 * (2,097,152 + 65,536) = 77,856,768 B.
  CHECK(state(m, 8192) == 24'576LL * 8192 + 77'856'768);      // 279,183,360 B
  CHECK(state(m, 131072) == 24'576LL * 131072 + 77'856'768);  // 3,299,082,240 B
}

namespace {

/// A model from a config's text alone (no quantisation file beside it).
testing::model from_config_text(const std::string& name, std::vector<std::string> sets = {}) {
  std::ifstream in(fixture(name));
  std::stringstream text;
  text << in.rdbuf();
  return testing::model::from_text(hf::import_text(text.str(), name, "test").yaml, sets);
}

}  // namespace

TEST_CASE("DeepSeek-V3 architecture: 671,026,419,200 parameters without MTP; compact MLA cache") {
  // DeepSeek-V3.1 keeps V3's architecture (61 layers, 3 dense, 256 experts, MLA 512 + 64).
  testing::model m = from_config_text("deepseek-v3.1-nvfp4/config.json");
  CHECK(params(m) == 671'026'419'200);  // the published total of the main model
  REQUIRE(m.spec.mtp.has_value());      // num_nextn_predict_layers: 1, excluded from totals
  CHECK(m.spec.mtp->layers == 1);
  CHECK(m.spec.execution.mla == mla_path::compact);  // what serving engines cache
  // Compact cache: latent 512 + rope 64 in BF16 on 61 layers = 576 * 2 B * 61 = 70,272 B/token.
  CHECK(state(m, 8192) == 70'272LL * 8192);      // 575,668,224 B
  CHECK(state(m, 131072) == 70'272LL * 131072);  // 9,210,691,584 B
}

TEST_CASE("FP8 checkpoint (ModelOpt hf_quant_config.json): FP8 matrices and cache") {
  testing::model m = imported("llama-3.1-70b-instruct-fp8");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 70'553'706'496);
  // Embedding and head 2 * 128256 * 8192 in BF16 (lm_head excluded) = 4,202,692,608 B; norms
  // (80 * 2 + 1) * 8192 in BF16 = 2,637,824 B; the other 68,451,041,280 parameters in FP8.
  CHECK(p.weight_bytes.value() == 4'202'692'608 + 2'637'824 + 68'451'041'280);
  // A dense model has no router, so ModelOpt's router rule leaves the matrices one role.
  CHECK(m.spec.precision.weights.name == "fp8");
  CHECK(!m.spec.precision.dense_ffn.has_value());
  // kv_cache_quant_algo FP8: 2 * 8 * 128 * 1 B * 80 = 163,840 B/token.
  CHECK(state(m, 8192) == 163'840LL * 8192);
}

TEST_CASE(
    "NVFP4 DeepSeek-V3.1 (ModelOpt): attention inputs and routers BF16, o_proj and FFNs NVFP4") {
  // hf_quant_config.json excludes lm_head, model.layers.61* (the MTP layer, not counted) and, in
  // each of the 61 layers, self_attn.{q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj}. It does
  // not list the router (mlp.gate): ModelOpt never quantises one (its default configs disable
  // *mlp.gate.* and *router*, and DeepSeek's Gate is no Linear, so it gets no quantizer to list).
  // So `weights` is bf16 (the router, and the attention inputs with no role of their own), and
  // precision.attention_out (o_proj), the experts and the dense FFNs are NVFP4.
  testing::model m = imported("deepseek-v3.1-nvfp4");
  CHECK(m.spec.precision.weights.name == "bf16");
  CHECK(!m.spec.precision.attention.has_value());
  REQUIRE(m.spec.precision.attention_out.has_value());
  CHECK(m.spec.precision.attention_out->name == "nvfp4");
  REQUIRE(m.spec.precision.experts.has_value());
  CHECK(m.spec.precision.experts->name == "nvfp4");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 671'026'419'200);
  // BF16 (2 B): per layer q_a 7168*1536 = 11,010,048, q_b 1536*(128*192) = 37,748,736, kv_a
  // 7168*(512+64) = 4,128,768, kv_b 512*(128*(128+128)) = 16,777,216: 69,664,768 x 61 =
  // 4,249,550,848; embedding and head 2 * 129280*7168 = 1,853,358,080; norms 61 * (1536 + 512 +
  // 2*7168) + 7168 and 58 * 256 router biases = 1,021,440; routers 58 * 7168*256 =
  // 106,430,464. 6,210,360,832 values = 12,420,721,664 B; the router biases are FP32, as
  // DeepSeek's reference Gate keeps them (precision.router_bias): 58 * 256 * 2 = 29,696 B more.
  // NVFP4 (4-bit values and an fp8 scale per 16: 9 B per 16 values): o_proj 128*128*7168 x 61 =
  // 7,163,871,232; dense FFN 3 * 3*7168*18432 = 1,189,085,184; 58 MoE layers of 257 experts
  // (256 routed + 1 shared) of 3*7168*2048 = 656,463,101,952. 664,816,058,368 values * 9 / 16 =
  // 373,959,032,832 B. (With the routers in NVFP4 it would be 152,993,792 B less.)
  CHECK(p.weight_bytes.value() == 12'420'721'664 + 29'696 + 373'959'032'832);  // 386,379,784,192
  // kv_cache_quant_algo FP8: the compact latent 512 + 64 at 1 B on 61 layers = 35,136 B/token.
  CHECK(state(m, 8192) == 35'136LL * 8192);
}

TEST_CASE("NVFP4 Qwen3-235B-A22B (ModelOpt): the routers its list names stay BF16") {
  // hf_quant_config.json (ModelOpt 0.33.0) lists lm_head and every layer's mlp.gate, the Linear
  // router whose quantizer the default config disables: the same rule as the unlisted DeepSeek
  // Gate, so the explicit list changes nothing.
  testing::model m = imported("qwen3-235b-a22b-nvfp4");
  CHECK(m.spec.precision.weights.name == "bf16");
  CHECK(m.spec.precision.attention->name == "nvfp4");
  CHECK(m.spec.precision.experts->name == "nvfp4");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 235'093'634'560);
  // BF16: embedding and head 2 * 151936*4096 = 1,244,659,712; routers 94 * 4096*128 =
  // 49,283,072; norms 94 * (2*4096 + 2*128) + 4096 = 798,208. 1,294,740,992 values =
  // 2,589,481,984 B. NVFP4: attention 94 * (4096*(64+4+4)*128 + 64*128*4096) = 6,702,497,792;
  // experts 94 * 128 * 3*4096*1536 = 227,096,395,776. 233,798,893,568 values * 9 / 16 =
  // 131,511,877,632 B.
  CHECK(p.weight_bytes.value() == 2'589'481'984 + 131'511'877'632);  // 134,101,359,616 B
}

TEST_CASE("ModelOpt in config.json (quant_method modelopt): read like hf_quant_config.json") {
  // Newer ModelOpt exports write quantization_config {quant_method: modelopt, quant_algo, ignore}
  // into config.json: the DeepSeek-V3.1 config with the folder's exclusions given that way
  // imports to the folder's bytes, routers in the model dtype included.
  std::string base = open_config("deepseek-v3.1-nvfp4/config.json");
  std::string doc = base +
                    ",\n\"quantization_config\": {\"quant_method\": \"modelopt\", "
                    "\"quant_algo\": \"NVFP4\", \"group_size\": 16, \"kv_cache_quant_algo\": "
                    "\"FP8\", \"ignore\": [\"lm_head\", \"model.layers.*.self_attn.q_a_proj\", "
                    "\"model.layers.*.self_attn.q_b_proj\", "
                    "\"model.layers.*.self_attn.kv_a_proj_with_mqa\", "
                    "\"model.layers.*.self_attn.kv_b_proj\", \"model.layers.61*\"]}}";
  testing::model m = testing::model::from_text(hf::import_text(doc, "config.json", "t").yaml);
  CHECK(m.spec.precision.weights.name == "bf16");
  CHECK(m.spec.precision.attention_out->name == "nvfp4");
  CHECK(tally_params(m.g).weight_bytes.value() ==
        tally_params(imported("deepseek-v3.1-nvfp4").g).weight_bytes.value());
  CHECK(state(m, 8192) == 35'136LL * 8192);
  // quant_method modelopt names its format in quant_algo; an unmapped one is an error there.
  std::string mixed = base +
                      ",\n\"quantization_config\": {\"quant_method\": \"modelopt\", "
                      "\"quant_algo\": \"MIXED_PRECISION\"}}";
  CHECK(import_error(mixed).find("quantization_config.quant_algo: quantisation "
                                 "'MIXED_PRECISION' is not mapped") != std::string::npos);
}

TEST_CASE("compressed-tensors FP8 per channel (GLM-4.5-FP8): one FP32 scale per output row") {
  // zai-org/GLM-4.5-FP8's published config (tests/fixtures/hf/SOURCES.md): config_groups over
  // Linear, weights 8-bit float with strategy "channel", dynamic per-token activations; its
  // ignore list names every norm, every q/k/v bias, each MoE layer's router (layers 3 to 92,
  // the MTP layer included) and routing bias, the MTP modules and lm_head.
  testing::model m = imported("zai-org--GLM-4.5-FP8/config.json");
  CHECK(m.spec.precision.weights.name == "bf16");  // the routers (mlp.gate) stay BF16
  CHECK(m.spec.precision.experts->name == "fp8:row:fp32");
  CHECK(m.spec.precision.attention->name == "fp8:row:fp32");
  CHECK(m.spec.precision.head.name == "bf16");  // lm_head ignored
  CHECK(params(m) == 352'797'829'024);          // the BF16 release's main model
  // The listing's bytes by hand: each FP8 matrix of out x in stores out x in bytes and an F32
  // weight_scale [out, 1] (4 B a row: the experts' down_proj scales, 90 layers x 160 x 5120 x
  // 4 B, are the listing's 281.25 MB); biases, norms, the router, embedding and head BF16; the
  // routing bias F32.
  const std::int64_t d = 5120;
  auto row = [](std::int64_t out, std::int64_t in) { return out * in + out * 4; };
  std::int64_t attention = row(12288, d) + 2 * row(1024, d) + row(d, 12288) +
                           (12288 + 2 * 1024) * 2 + 2 * 128 * 2 + 2 * d * 2;
  std::int64_t dense = 2 * row(12288, d) + row(d, 12288);
  std::int64_t moe = 160 * (2 * row(1536, d) + row(d, 1536)) + 2 * row(1536, d) + row(d, 1536) +
                     160 * d * 2 + 160 * 4;
  std::int64_t stored = 92 * attention + 3 * dense + 89 * moe + 2 * 151552LL * d * 2 + d * 2;
  CHECK(stored == 354'902'011'520);
  // With the MTP layer 92 (a MoE layer, eh_proj 10240 -> 5120, its own BF16 embedding, an FP8
  // head with row scales, three norms) this is the listing's "336.47 GB" (GiB) of tensors.
  std::int64_t mtp = attention + moe + 10240 * d * 2 + 151552LL * d * 2 + row(151552, d) + 3 * d * 2;
  CHECK(stored + mtp == 361'277'168'384);
  CHECK(std::llround(static_cast<double>(stored + mtp) * 100.0 / (1LL << 30)) == 33647);
  CHECK(tally_params(m.g).weight_bytes.value() == stored);
  // Rounded to a group per 5120 inputs the scales of the 12288-input o_proj and down_proj
  // would be three a row, not one: the per-row format counts rows, whatever the width.
  CHECK(parse_dtype("fp8:row:fp32").blocks(/*in=*/12288, /*out=*/5120).value() == 5120);
  CHECK(parse_dtype("fp8:row").scale_bits == 16);  // bf16 scales unless named
  CHECK_THROWS(parse_dtype("fp8:row:fp32:zero"));
  // The cache keeps the model dtype (no kv_cache_scheme): 2 x 8 x 128 x 2 B x 92 layers.
  CHECK(state(m, 8192) == 376'832LL * 8192);
}

TEST_CASE("compressed-tensors: schemes and lists calc cannot state are errors at their field") {
  std::string base = open_config("zai-org--GLM-4.5/config.json");
  auto with = [&](const std::string& weights, const std::string& ignore) {
    return base + ",\n\"quantization_config\": {\"quant_method\": \"compressed-tensors\", " +
           "\"format\": \"float-quantized\", \"config_groups\": {\"group_0\": {\"targets\": " +
           "[\"Linear\"], \"weights\": {" + weights + "}}}, \"ignore\": [" + ignore + "]}}";
  };
  const std::string channel = "\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\"";
  // A pattern for every layer's router reads as every router; lm_head stays BF16.
  std::string patterns = with(channel, "\"lm_head\", \"re:.*mlp.gate$\"");
  CHECK(import_error(patterns) == "");
  testing::model p = testing::model::from_text(hf::import_text(patterns, "config.json", "t").yaml);
  CHECK(p.spec.precision.weights.name == "bf16");
  CHECK(p.spec.precision.experts->name == "fp8:row:fp32");
  // Block strategy: block_structure [rows, columns]; scale_dtype, when given, decides.
  testing::model b = testing::model::from_text(
      hf::import_text(with("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", "
                           "\"block_structure\": [128, 128], \"scale_dtype\": \"torch.bfloat16\"",
                           "\"lm_head\", \"re:.*mlp.gate$\""),
                      "config.json", "t")
          .yaml);
  CHECK(b.spec.precision.experts->name == "fp8:b128x128:bf16");
  // Routers kept on some MoE layers only: one format per role cannot say it.
  CHECK(import_error(with(channel, "\"model.layers.3.mlp.gate\", \"model.layers.5.mlp.gate\""))
            .find("MoE layers stay unquantised") != std::string::npos);
  // A consecutive run that misses MoE layers is not every router either.
  std::string run;
  for (int l = 10; l <= 20; ++l)
    run += (run.empty() ? "" : ", ") + ("\"model.layers." + std::to_string(l) + ".mlp.gate\"");
  CHECK(import_error(with(channel, run)).find("the routers of 11 of the") != std::string::npos);
  // Integer or 4-bit weights, group strategies and other patterns are not mapped.
  CHECK(import_error(with("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\"", ""))
            .find("quantization_config.config_groups.group_0.weights.num_bits") !=
        std::string::npos);
  CHECK(import_error(with("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"group\"", ""))
            .find("strategy 'group' is not mapped") != std::string::npos);
  // A pattern over part of a role (whole roles such as re:.*self_attn.* are mapped:
  // hf_int_quant_test.cpp).
  CHECK(import_error(with(channel, "\"re:.*q_proj.*\""))
            .find("the pattern 're:.*q_proj.*' is not mapped") != std::string::npos);
  // 2:4 sparse weights store a bitmask and half the values: not these formats.
  std::string sparse = with(channel, "");
  sparse.insert(sparse.rfind("}}"), ", \"sparsity_config\": {\"format\": \"sparse-24-bitmask\"}");
  CHECK(import_error(sparse).find("quantization_config.sparsity_config: sparse weights "
                                  "('sparse-24-bitmask') are not mapped") != std::string::npos);
}

TEST_CASE("attention input exclusions: only the whole set of input projections is mapped") {
  // The DeepSeek-V3.1 config with a quantization_config whose modules_to_not_convert is given.
  std::string base = open_config("deepseek-v3.1-nvfp4/config.json");
  auto with = [&](const std::string& list) {
    return base + ",\n\"quantization_config\": {\"quant_method\": \"nvfp4\", " +
           "\"modules_to_not_convert\": [" + list + "]}}";
  };
  // Every layer ("*") keeps its four input projections: the attention roles are mapped like the
  // ModelOpt folder's. quant_method nvfp4 does not say that ModelOpt wrote the file, so the
  // router, not listed, is NVFP4 here.
  std::string all = with(
      "\"model.layers.*.self_attn.q_a_proj\", \"model.layers.*.self_attn.q_b_proj\", "
      "\"model.layers.*.self_attn.kv_a_proj_with_mqa\", \"model.layers.*.self_attn.kv_b_proj\"");
  CHECK(import_error(all) == "");
  testing::model m = testing::model::from_text(hf::import_text(all, "config.json", "t").yaml);
  CHECK(m.spec.precision.attention->name == "bf16");
  CHECK(m.spec.precision.attention_out->name == "nvfp4");
  CHECK(m.spec.precision.weights.name == "nvfp4");
  // (The 58 x 256 routing biases FP32: 29,696 B of it, precision.router_bias.)
  CHECK(tally_params(m.g).weight_bytes.value() == 386'226'760'704 + 29'696);
  // With the router (mlp.gate) kept too, `weights` is the model dtype and the quantised roles
  // are named: the 106,430,464 router values at 2 B instead of 9/16 B, + 106,430,464 * 23 / 16 =
  // 152,993,792 B, which is the ModelOpt folder's 386,379,784,192 B.
  testing::model r = testing::model::from_text(
      hf::import_text(with("\"mlp.gate\", \"model.layers.*.self_attn.q_a_proj\", "
                           "\"model.layers.*.self_attn.q_b_proj\", "
                           "\"model.layers.*.self_attn.kv_a_proj_with_mqa\", "
                           "\"model.layers.*.self_attn.kv_b_proj\""),
                      "config.json", "t")
          .yaml);
  CHECK(r.spec.precision.weights.name == "bf16");
  CHECK(!r.spec.precision.attention.has_value());
  CHECK(r.spec.precision.attention_out->name == "nvfp4");
  CHECK(tally_params(r.g).weight_bytes.value() == 386'226'760'704 + 29'696 + 152'993'792);
  CHECK(tally_params(r.g).weight_bytes.value() ==
        tally_params(imported("deepseek-v3.1-nvfp4").g).weight_bytes.value());
  // Three of the four: the fourth would be NVFP4 in the files, which one role cannot say.
  CHECK(import_error(with("\"model.layers.*.self_attn.q_a_proj\", "
                          "\"model.layers.*.self_attn.q_b_proj\", "
                          "\"model.layers.*.self_attn.kv_a_proj_with_mqa\"")) ==
        "config.json:59:77: quantization_config.modules_to_not_convert[0]: layer * leaves "
        "self_attn.{kv_a_proj_with_mqa, q_a_proj, q_b_proj} unquantised, but the input "
        "projections of its MLA attention are self_attn.{kv_a_proj_with_mqa, kv_b_proj, q_a_proj, "
        "q_b_proj}; calc keeps one format for the attention inputs and one for o_proj, not per "
        "module");
  // o_proj alone stays the per-module error it was.
  CHECK(import_error(with("\"model.layers.*.self_attn.o_proj\"")) ==
        "config.json:59:77: quantization_config.modules_to_not_convert[0]: "
        "'model.layers.*.self_attn.o_proj' stays unquantised, but calc keeps formats per role "
        "(attention, attention_out, router, head, embedding), not per module");
  // Layer 0 lists its inputs, the others none: their inputs would be NVFP4.
  CHECK(import_error(with("\"model.layers.0.self_attn.q_a_proj\", "
                          "\"model.layers.0.self_attn.q_b_proj\", "
                          "\"model.layers.0.self_attn.kv_a_proj_with_mqa\", "
                          "\"model.layers.0.self_attn.kv_b_proj\"")) ==
        "config.json:59:77: quantization_config.modules_to_not_convert[0]: the attention input "
        "projections of 1 of the 61 layers stays unquantised; calc keeps one format per role");
}

TEST_CASE("round trip: a config imports to the same tallies as the bundled YAML") {
  struct pair {
    const char* config;
    const char* bundled;
  };
  for (pair p :
       {pair{"qwen3-8b.json", "qwen3-8b"}, pair{"llama-3.1-405b.json", "llama-3.1-405b"}}) {
    CAPTURE(p.config);
    testing::model a = imported(p.config);
    testing::model b(p.bundled);
    CHECK(params(a) == params(b));
    CHECK(state(a, 8192) == state(b, 8192));
    CHECK(state(a, 131072) == state(b, 131072));
    call prefill = make_call(a.spec, 1, 0, 8192);
    CHECK(tally_forward(a.g, prefill).flops.value() ==
          tally_forward(b.g, make_call(b.spec, 1, 0, 8192)).flops.value());
    CHECK(tally_forward(a.g, make_call(a.spec, 1, 8192, 1)).flops.value() ==
          tally_forward(b.g, make_call(b.spec, 1, 8192, 1)).flops.value());
  }
  // DeepSeek-V3: both the bundled row and the import default to the compact MLA cache.
  testing::model a = from_config_text("deepseek-v3.1-nvfp4/config.json", {});
  testing::model b("deepseek-v3");
  CHECK(params(a) == params(b));
  CHECK(tally_params(a.g).active.value() == tally_params(b.g).active.value());
  CHECK(state(a, 8192) == state(b, 8192));
  CHECK(tally_forward(a.g, make_call(a.spec, 1, 0, 8192)).flops.value() ==
        tally_forward(b.g, make_call(b.spec, 1, 0, 8192)).flops.value());
  CHECK(tally_forward(a.g, make_call(a.spec, 4, 8192, 1)).flops.value() ==
        tally_forward(b.g, make_call(b.spec, 4, 8192, 1)).flops.value());
}

TEST_CASE("the printed YAML reads back to the same model") {
  for (const char* name :
       {"qwen3-8b.json", "mixtral-8x22b.json", "qwen3-next-80b-a3b.json", "llama-3.1-70b.json"}) {
    CAPTURE(name);
    hf::imported y = hf::import_config(fixture(name));
    testing::model direct = imported(name);
    testing::model text = testing::model::from_text(y.yaml);
    CHECK(params(direct) == params(text));
    CHECK(state(direct, 32768) == state(text, 32768));
    CHECK(direct.spec.layers.count == text.spec.layers.count);
    CHECK(direct.spec.layers.pattern == text.spec.layers.pattern);
  }
}

TEST_CASE("every value of the imported YAML names where it came from") {
  hf::imported y = hf::import_config(fixture("llama-3.1-70b.json"));
  CHECK(y.model_type == "llama");
  CHECK(y.yaml.find("kv_heads: 8") != std::string::npos);
  CHECK(y.yaml.find("# num_key_value_heads") != std::string::npos);
  CHECK(y.yaml.find("head_dim: 128") != std::string::npos);
  CHECK(y.yaml.find("# hidden_size / num_attention_heads (default of llama, head_dim absent)") !=
        std::string::npos);
}

TEST_CASE("unknown model_type: one line naming the field and the supported families") {
  std::string e = import_error("{\n  \"model_type\": \"rwkv\",\n  \"hidden_size\": 64\n}");
  CHECK(
      e.starts_with("config.json:2:17: model_type: unknown model_type 'rwkv' (supported "
                    "families: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, "));
  // The list names every model_type calc reads, the one read outside the tables included.
  CHECK(e.find(", nemotron-nas)") != std::string::npos);
}

TEST_CASE("an unknown layer_types entry is an error, located at the entry") {
  std::string e = import_error(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "intermediate_size": 128, "sliding_window": 16,
  "layer_types": ["full_attention", "chunked_attention"]})");
  CHECK(e ==
        "config.json:4:37: layer_types[1]: unknown layer type 'chunked_attention' for qwen3 "
        "(calc reads full_attention, sliding_attention)");
}

TEST_CASE("a missing field names the family default that was not enough") {
  std::string e = import_error(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 6, "intermediate_size": 128})");
  CHECK(e ==
        "config.json:1:1: head_dim: missing, and the llama default hidden_size / "
        "num_attention_heads is not a whole number (64 / 6)");
  std::string v = import_error(R"({"model_type": "llama", "hidden_size": 64})");
  CHECK(v == "config.json:1:1: vocab_size: missing required field (llama has no default for it)");
}

TEST_CASE("a wrongly typed field is located at its value") {
  std::string e = import_error("{\"model_type\": \"llama\",\n \"vocab_size\": \"many\"}");
  CHECK(e == "config.json:2:16: vocab_size: expected a non-negative integer, got \"many\"");
  CHECK(import_error("{\"model_type\": \"llama\",\n \"vocab_size\": }")
            .starts_with("config.json:2:16: malformed JSON: syntax error"));
}

TEST_CASE("command line: calc import prints the YAML; a bad config exits 2 with one line") {
  std::ostringstream out, err;
  int code = run_cli({"import", fixture("qwen3-8b.json")}, out, err);
  CHECK(code == 0);
  CHECK(out.str().starts_with("# Imported by `calc import` from "));
  CHECK(out.str().find("  kv_heads: 8                     # num_key_value_heads\n") !=
        std::string::npos);

  auto dir = calc::testing::scratch_dir("calc-hf-tests");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\n  \"model_type\": \"rwkv\"\n}\n";
  std::ostringstream out2, err2;
  code = run_cli({"state", "--model", dir.string(), "--length", "8192"}, out2, err2);
  CHECK(code == 2);
  CHECK(err2.str() == (dir / "config.json").string() +
                          ":2:17: model_type: unknown model_type 'rwkv' (supported families: " +
                          hf::family_names() + ")\n");
  std::ostringstream out3, err3;
  code = run_cli({"params", "--model", (dir / "missing.json").string()}, out3, err3);
  CHECK(code == 2);
  CHECK(err3.str() == (dir / "missing.json").string() + ": cannot open file\n");
}

// The family tables without a bundled real config: small configs written here (not published
// ones) that exercise each table's defaults and layer rule.
TEST_CASE("family tables: defaults and layer rules") {
  auto spec_of = [](const std::string& json) {
    return testing::model::from_text(hf::import_text(json, "config.json", "t").yaml).spec;
  };
  const std::string dims = R"("vocab_size": 100, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "num_hidden_layers": 6)";
  SUBCASE("gemma2: even layers slide (window 4096 by default), four norms, tied, head_dim 256") {
    model_spec s = spec_of("{\"model_type\": \"gemma2\", " + dims + "}");
    CHECK(s.tie_embeddings);
    CHECK(*s.layers.base.norms == 4);
    CHECK(s.layers.pattern == std::vector<std::string>{"base", "full"});
    const auto& a = std::get<attention_gqa>(*s.layers.base.attention);
    CHECK(a.head_dim == 256);
    CHECK(a.window == 4096);
  }
  SUBCASE("gemma3_text: sliding_window_pattern 3 -> two sliding layers, then one full") {
    model_spec s = spec_of("{\"model_type\": \"gemma3_text\", \"sliding_window\": 512, " +
                           std::string("\"sliding_window_pattern\": 3, ") + dims + "}");
    CHECK(s.layers.pattern == std::vector<std::string>{"base", "base", "full"});
    CHECK(std::get<attention_gqa>(*s.layers.base.attention).qk_norm);
    CHECK(std::get<attention_gqa>(*s.layers.base.attention).window == 512);
  }
  SUBCASE("qwen2: Q/K/V biases always, no output bias; sliding only when use_sliding_window") {
    model_spec s = spec_of("{\"model_type\": \"qwen2\", \"sliding_window\": 32, " + dims + "}");
    const auto& a = std::get<attention_gqa>(*s.layers.base.attention);
    CHECK(a.qkv_bias);
    CHECK(!a.o_bias);
    CHECK(!a.window);
    model_spec w = spec_of(
        "{\"model_type\": \"qwen2\", \"sliding_window\": 32, \"use_sliding_window\": true, "
        "\"max_window_layers\": 4, " +
        dims + "}");
    REQUIRE(w.layers.overrides.size() == 1);
    CHECK(w.layers.overrides[0].at == std::vector<std::int64_t>{4, 5});
  }
  SUBCASE("deepseek_v2: q_lora_rank null is no query compression; dense first layer") {
    model_spec s = spec_of(R"({"model_type": "deepseek_v2", "vocab_size": 100, "hidden_size": 64,
      "num_attention_heads": 4, "num_hidden_layers": 3, "intermediate_size": 128,
      "q_lora_rank": null, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
      "v_head_dim": 16, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 2,
      "moe_intermediate_size": 32, "first_k_dense_replace": 1})");
    CHECK(std::get<attention_mla>(*s.layers.base.attention).q_rank == 0);
    const auto& moe = std::get<ffn_moe>(*s.layers.base.ffn);
    CHECK(moe.shared_experts == 2);
    CHECK(!moe.router_bias);
    REQUIRE(s.layers.overrides.size() == 1);
    CHECK(s.layers.overrides[0].at == std::vector<std::int64_t>{0});
  }
  SUBCASE("glm4_moe: attention_bias is Q/K/V only; use_qk_norm; routing bias") {
    model_spec s = spec_of(
        "{\"model_type\": \"glm4_moe\", \"attention_bias\": true, \"use_qk_norm\": true, "
        "\"head_dim\": 16, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
        "\"moe_intermediate_size\": 32, " +
        dims + "}");
    const auto& a = std::get<attention_gqa>(*s.layers.base.attention);
    CHECK((a.qkv_bias && !a.o_bias && a.qk_norm));
    CHECK(std::get<ffn_moe>(*s.layers.base.ffn).router_bias);
    CHECK(std::get<ffn_moe>(*s.layers.base.ffn).shared_experts == 1);
  }
  SUBCASE("mistral: sliding_window defaults to 4096 on every layer; phi3 takes the config's") {
    model_spec s = spec_of("{\"model_type\": \"mistral\", " + dims + "}");
    CHECK(std::get<attention_gqa>(*s.layers.base.attention).window == 4096);
    model_spec p = spec_of("{\"model_type\": \"phi3\", \"sliding_window\": 2047, " + dims + "}");
    CHECK(std::get<attention_gqa>(*p.layers.base.attention).window == 2047);
    CHECK(p.layers.pattern.empty());
  }
}

TEST_CASE("config positions: every value located, through strings, escapes and nesting") {
  hf::hf_json doc = hf::hf_json::parse(
      "{\"a\": \"x\\\"}\", \"b\": [1, {\"c\": [2, 3]}],\n  \"d\": -Infinity, \"e\": NaN}",
      "c.json");
  CHECK(doc.where("/a").line == 1);
  CHECK(doc.where("/a").column == 7);
  CHECK(doc.where("/b/1/c/1").column == 34);
  CHECK(doc.where("/d").line == 2);
  CHECK(doc.where("/d").column == 8);
  CHECK(doc.root()["d"].is_null());  // Python's -Infinity and NaN read as null
  CHECK(doc.root()["e"].is_null());
  CHECK(doc.where("/nothing").line == 1);
}

TEST_CASE("gemma3 (multimodal): the language model is read from text_config") {
  std::string yaml = hf::import_text(R"({"model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 16, "intermediate_size": 128, "num_hidden_layers": 12, "sliding_window": 32},
    "vision_config": {"hidden_size": 1152}})",
                                     "config.json", "g")
                         .yaml;
  // vision_use_head absent: SigLIP builds its pooling head, which calc does not read.
  CHECK(yaml.find("# Not counted: the vision tower and projector (vision_config): SigLIP's "
                  "pooling head") != std::string::npos);
  CHECK(yaml.find("vocab: 262208                       # default of gemma3 (vocab_size absent)") !=
        std::string::npos);
  model_spec s = testing::model::from_text(yaml).spec;
  CHECK(s.layers.count == 12);
  // Five sliding layers, then one full (sliding_window_pattern default 6): layers 5 and 11.
  REQUIRE(s.layers.overrides.size() == 1);
  CHECK(s.layers.overrides[0].at == std::vector<std::int64_t>{5, 11});
  CHECK(s.precision.weights.name == "bf16");
}

// ---- real configs of the families that had only written-here configs above ----------------

TEST_CASE("Mistral-7B-v0.1 config: 7,241,732,096 parameters; a 4096-token window everywhere") {
  testing::model m = imported("mistral-7b-v0.1.json");
  // Per layer: attention 2*4096^2 + 2*4096*1024 = 41,943,040; MLP 3*4096*14336 = 176,160,768;
  // norms 2*4096. x32 = 6,979,584,000, plus embedding and head 2*32000*4096 = 262,144,000 and the
  // final norm 4096: the published 7,241,732,096.
  CHECK(params(m) == 7'241'732'096);
  // sliding_window 4096 on every layer (Mistral v0.1): each layer keeps at most 4096 tokens of
  // 2 * 8 * 128 * 2 B = 4096 B; 32 layers x 4096 B x 4096 tokens = 536,870,912 B (512 MiB) at
  // 8K and at 128K alike.
  CHECK(state(m, 8192) == 536'870'912);
  CHECK(state(m, 131072) == 536'870'912);
}

TEST_CASE("Mamba2-780m config: 780,161,280 parameters; fixed state only, bare Infinity read") {
  testing::model m = imported("mamba2-780m-hf.json");
  // d = 1536, inner = expand x d = 3072 = 48 heads x 64, state 128, one group, kernel 4.
  // Per layer: in_proj d x (2 x 3072 + 2 x 128 + 48) = 1536 x 6448 = 9,904,128; conv1d over
  // 3072 + 2 x 128 = 3328 channels, 3328 x 4 weights + 3328 biases = 16,640; dt_bias, A_log, D
  // 3 x 48 = 144; gated norm 3072; out_proj 3072 x 1536 = 4,718,592; one norm 1536:
  // 14,644,112, x48 = 702,917,376. Tied embedding 50288 x 1536 = 77,242,368, final norm 1536.
  CHECK(params(m) == 780'161'280);
  // No attention: the state is fixed at any length. SSM state 48 x 64 x 128 values in fp32
  // (the recurrent format) = 1,572,864 B; conv window 4 x 3328 channels x 2 B (bf16) = 26,624 B;
  // x48 layers = 75,497,472 + 1,277,952 = 76,775,424 B at 8K and 128K alike.
  CHECK(state(m, 8192) == 76'775'424);
  CHECK(state(m, 131072) == 76'775'424);
}

TEST_CASE("Qwen2.5-7B-Instruct config: 7,615,616,512 parameters; Q/K/V biases; no window") {
  testing::model m = imported("qwen2.5-7b-instruct.json");
  // The published checkpoint's tensors sum to 7,615,616,512: embedding and head
  // 2*152064*3584 = 1,090,011,136; per layer q/o 2*3584^2, k/v 2*3584*512, Q/K/V biases
  // 3584 + 2*512, MLP 3*3584*18944, norms 2*3584 = 233,856,512, x28 = 6,547,982,336; final norm.
  CHECK(params(m) == 7'615'616'512);
  const auto& a = std::get<attention_gqa>(*m.spec.layers.base.attention);
  CHECK((a.qkv_bias && !a.o_bias && !a.window));  // use_sliding_window: false
  // 2 * 4 * 128 * 2 B * 28 = 57,344 B/token.
  CHECK(state(m, 8192) == 57'344LL * 8192);      // 469,762,048 B = 448 MiB
  CHECK(state(m, 131072) == 57'344LL * 131072);  // 7,516,192,768 B = 7 GiB
}

TEST_CASE("Gemma-2-9B config: 9,241,705,984 parameters; even layers slide over 4096") {
  testing::model m = imported("gemma-2-9b.json");
  // Per layer: q/o 2*3584*4096, k/v 2*3584*2048 = 44,040,192; MLP 3*3584*14336 = 154,140,672;
  // four norms 4*3584. x42 = 8,324,198,400, plus the tied embedding 256000*3584 = 917,504,000 and
  // the final norm: 9,241,705,984 (the published 9.24B).
  CHECK(params(m) == 9'241'705'984);
  CHECK(m.spec.tie_embeddings);
  // 2 * 8 * 256 * 2 B = 8192 B per token and layer. 21 full layers hold every token, 21 sliding
  // layers at most 4096: 8K: 21*8192*8192 + 21*8192*4096 = 2,113,929,216 B;
  // 128K: 21*8192*131072 + 704,643,072 = 23,253,221,376 B.
  CHECK(state(m, 8192) == 2'113'929'216);
  CHECK(state(m, 131072) == 23'253'221'376);
}

TEST_CASE("Phi-3-mini-4k-instruct config: 3,821,079,552 parameters; window 2047") {
  testing::model m = imported("phi-3-mini-4k-instruct.json");
  // Fused qkv_proj 3072*9216 and gate_up_proj 3072*16384 hold the same counts as separate
  // matrices: per layer 28,311,552 + 9,437,184 + 50,331,648 + 25,165,824 + 2*3072 = 113,252,352,
  // x32 = 3,624,075,264, plus embedding and head 2*32064*3072 = 197,001,216 and the final norm:
  // the published 3,821,079,552.
  CHECK(params(m) == 3'821'079'552);
  // sliding_window 2047 on all 32 layers: 2 * 32 * 96 * 2 B * 32 = 393,216 B/token, at most 2047
  // tokens: 804,913,152 B at 8K and 128K.
  CHECK(state(m, 8192) == 393'216LL * 2047);
  CHECK(state(m, 131072) == 393'216LL * 2047);
}

TEST_CASE("DeepSeek-V2-Lite-Chat config: 15,706,484,224 parameters; compact MLA cache") {
  testing::model m = imported("deepseek-v2-lite-chat.json");
  // The published checkpoint's tensors sum to 15,706,484,224: q_lora_rank null (q_proj
  // 2048 x 16*192), kv_a 2048x576, kv_a_layernorm 512, kv_b 512x4096, o 2048^2 on 27 layers; one
  // dense layer (3*2048*10944); 26 MoE layers of 64 experts 3*2048*1408, two shared (2816) and a
  // router 64x2048; embedding and head 2*102400*2048.
  CHECK(params(m) == 15'706'484'224);
  CHECK(std::get<attention_mla>(*m.spec.layers.base.attention).q_rank == 0);
  // Compact cache: (512 + 64) * 2 B * 27 layers = 31,104 B/token.
  CHECK(state(m, 8192) == 31'104LL * 8192);      // 254,803,968 B
  CHECK(state(m, 131072) == 31'104LL * 131072);  // 4,076,863,488 B
}

TEST_CASE("Qwen1.5-MoE-A2.7B config: 14,315,784,192 parameters; gated shared expert") {
  testing::model m = imported("qwen1.5-moe-a2.7b-chat.json");
  // Per layer: attention 4*2048^2 + Q/K/V biases 3*2048 = 16,783,360; 60 experts 3*2048*1408 =
  // 519,045,120; shared expert 3*2048*5632 = 34,603,008 and its gate 2048; router 60*2048;
  // norms 2*2048: 570,560,512, x24 = 13,693,452,288, plus embedding and head 2*151936*2048 =
  // 622,329,856 and the final norm: 14,315,784,192 (the published 14.3B).
  CHECK(params(m) == 14'315'784'192);
  const auto& moe = std::get<ffn_moe>(*m.spec.layers.base.ffn);
  CHECK((moe.experts == 60 && moe.top_k == 4 && moe.shared_gate));
  // 2 * 16 * 128 * 2 B * 24 = 196,608 B/token (use_sliding_window: false).
  CHECK(state(m, 8192) == 196'608LL * 8192);      // 1,610,612,736 B = 1.5 GiB
  CHECK(state(m, 131072) == 196'608LL * 131072);  // 25,769,803,776 B = 24 GiB
}

TEST_CASE("Kimi-Linear-48B-A3B config: 49,122,681,728 parameters; 20 KDA + 7 MLA layers") {
  testing::model m = imported("kimi-linear-48b-a3b-instruct.json");
  // The published checkpoint's tensors sum to 49,122,681,728:
  //   embedding and head 2*163840*2304 = 754,974,720; norms 27*2*2304 + 2304 = 126,720;
  //   KDA (20 layers): q/k/v 3*2304*4096, f_a 2304*128, f_b 128*4096, g_a 2304*128, g_b
  //     128*4096, b_proj 2304*32, o_proj 4096*2304, q/k/v conv 3*4096*4, A_log 32, dt_bias 4096,
  //     o_norm 128 = 39,514,272 each -> 790,285,440;
  //   MLA (layers 4, 8, ..., 24, 27; 1-based): q_proj 2304*32*192, kv_a 2304*576, kv_a norm 512,
  //     kv_b 512*32*256, o 4096*2304 = 29,114,880 each -> 203,804,160;
  //   layer 0's MLP 3*2304*9216 = 63,700,992; 26 MoE layers of 256 experts 3*2304*1024, router
  //     256*2304 and its bias 256, one shared expert 3*2304*1024 = 1,819,607,296 each.
  CHECK(params(m) == 49'122'681'728);
  const auto& kda = std::get<attention_kda>(*m.spec.layers.base.attention);
  CHECK((kda.heads == 32 && kda.key_dim == 128 && kda.decay_rank == 128 && kda.gate_rank == 128));
  REQUIRE(m.spec.layers.variants.count("full"));
  const auto& mla = std::get<attention_mla>(*m.spec.layers.variants.at("full").attention);
  CHECK((!mla.rope_branch && mla.q_rank == 0));  // mla_use_nope: true
  // MLA compact cache: (512 + 64) * 2 B * 7 = 8064 B/token. Each KDA layer keeps a fixed
  // 32 x 128 x 128 FP32 state (2,097,152 B) and conv slots of 4 x 3*4096 BF16 values (98,304 B):
  // 20 * 2,195,456 = 43,909,120 B.
  CHECK(state(m, 8192) == 8064LL * 8192 + 43'909'120);      // 109,969,408 B
  CHECK(state(m, 131072) == 8064LL * 131072 + 43'909'120);  // 1,100,873,728 B
}

TEST_CASE("kimi_linear layer lists: out of range, overlapping and missing layers are errors") {
  const std::string head = R"({"model_type": "kimi_linear", "vocab_size": 10, "hidden_size": 64,
  "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128,
  "kv_lora_rank": 16, "q_lora_rank": null, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
  "v_head_dim": 8, "num_experts": 4, "num_experts_per_token": 2, "moe_intermediate_size": 16,
  "linear_attn_config": {"num_heads": 2, "head_dim": 8, "short_conv_kernel_size": 4, )";
  CHECK(import_error(head + R"("full_attn_layers": [4, 5]}})") ==
        "config.json:5:106: linear_attn_config.full_attn_layers: layer 5 is outside 1..4 "
        "(num_hidden_layers)");
  CHECK(import_error(head + R"("full_attn_layers": [4], "kda_layers": [1, 2, 4]}})") ==
        "config.json:5:125: linear_attn_config.kda_layers: layer 4 is also in "
        "linear_attn_config.full_attn_layers");
  CHECK(import_error(head + R"("full_attn_layers": [4], "kda_layers": [1, 2]}})") ==
        "config.json:5:125: linear_attn_config.kda_layers: layer 3 is in neither "
        "linear_attn_config.full_attn_layers nor linear_attn_config.kda_layers");
  CHECK(import_error(head + R"("full_attn_layers": [4], "use_full_rank_gate": true}})").empty());
}

TEST_CASE("Kimi Linear: the low-rank KDA gate runs in the reference executor like the tally") {
  std::ostringstream out, err;
  int code = run_cli({"validate", "--model", fixture("kimi-linear-48b-a3b-instruct.json"),
                      "--scale", "16", "--length", "160", "--decode-steps", "2"},
                     out, err);
  CAPTURE(out.str());
  CAPTURE(err.str());
  CHECK(code == 0);
}

TEST_CASE("AWQ checkpoint (Qwen3-32B-AWQ): int4 weights with fp16 scales and int4 zeros") {
  testing::model m = imported("qwen3-32b-awq.json");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 32'762'123'264);  // Qwen3-32B's parameters
  // As the published files store them (qweight int32 [in, out/8], qzeros int32 [in/128, out/8],
  // scales 16-bit [in/128, out]): the 64 layers' matrices hold 487,587,840 values each, i.e.
  // 243,793,920 B of int4 + 3,809,280 groups x (2 B scale + 0.5 B zero) = 253,317,120 B, x64 =
  // 16,212,295,680 B; embedding and head 2*151936*5120 in 16 bits = 3,111,649,280 B; norms
  // (64 * (2*5120 + 2*128) + 5120) * 2 B = 1,353,728 B. Total 19,325,298,688 B = 18.00 GiB, the
  // checkpoint's 18.00 "GB" (GiB) of safetensors.
  CHECK(p.weight_bytes.value() == 19'325'298'688);
  // The cache keeps the model dtype (float16): 2 * 8 * 128 * 2 B * 64 = 262,144 B/token.
  CHECK(state(m, 8192) == 262'144LL * 8192);      // 2 GiB
  CHECK(state(m, 131072) == 262'144LL * 131072);  // 32 GiB
}

TEST_CASE("AWQ and GPTQ: what is mapped and what is a located error") {
  const std::string head = R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
  "quantization_config": )";
  auto weights = [&](const std::string& q) {
    return testing::model::from_text(hf::import_text(head + q + "}", "config.json", "t").yaml)
        .spec.precision.weights.name;
  };
  CHECK(weights(R"({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": false})") ==
        "int4:g64:fp16");
  CHECK(weights(R"({"quant_method": "awq", "bits": 4, "group_size": 128})") ==
        "int4:g128:fp16:zero:int4");
  CHECK(import_error(head + R"({"quant_method": "awq", "bits": 8, "group_size": 128}})") ==
        "config.json:3:58: quantization_config.bits: AWQ with 8 bits is not mapped (calc reads 4)");
  // GPTQ: the AWQ groups plus g_idx, whatever sym and desc_act say (both keep qzeros and g_idx).
  CHECK(weights(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": true,
                    "desc_act": true})") == "bf16");  // router and gates keep the model dtype
  auto attention = [&](const std::string& q) {
    return testing::model::from_text(hf::import_text(head + q + "}", "config.json", "t").yaml)
        .spec.precision.attention_weights()
        ->name;
  };
  CHECK(attention(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": true})") ==
        "int4:g128:fp16:zero:int4:rowidx:int32");
  CHECK(attention(R"({"quant_method": "gptq", "bits": 8, "group_size": 32,
                      "checkpoint_format": "gptq_v2"})") == "int8:g32:fp16:zero:int8:rowidx:int32");
  CHECK(import_error(head + R"({"quant_method": "gptq", "bits": 3, "group_size": 128}})") ==
        "config.json:3:59: quantization_config.bits: GPTQ with 3 bits is not mapped (calc reads 4 "
        "and 8)");
  CHECK(import_error(head + R"({"quant_method": "gptq", "bits": 4, "group_size": -1}})") ==
        "config.json:3:76: quantization_config.group_size: GPTQ group_size -1 (one scale per "
        "output column over all inputs) is not mapped (calc reads a positive group size)");
  CHECK(import_error(head + R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
  "checkpoint_format": "gptq_marlin"}})") ==
        "config.json:4:24: quantization_config.checkpoint_format: GPTQ checkpoint format "
        "'gptq_marlin' is not mapped (calc reads gptq and gptq_v2, whose packing it counts)");
  CHECK(import_error(head + R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
  "modules_in_block_to_quantize": [["self_attn.q_proj"]]}})") ==
        "config.json:4:35: quantization_config.modules_in_block_to_quantize: a list of the "
        "modules quantised is not mapped: calc keeps one format per role");
}

TEST_CASE("GPTQ checkpoint (Qwen2.5-Coder-1.5B-Instruct-GPTQ-Int4): the published file's bytes") {
  testing::model m = imported("qwen2.5-coder-1.5b-instruct-gptq-int4.json");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 1'543'714'304);  // Qwen2.5-1.5B's parameters (the repo lists them)
  // Each quantised Linear of `in` inputs and `out` outputs stores qweight int32 [in/8, out],
  // scales fp16 [in/128, out], qzeros int32 [in/128, out/8] and g_idx int32 [in]:
  //   q, o (1536 x 1536): 1,179,648 + 36,864 + 9,216 + 6,144 = 1,231,872 B each
  //   k, v (1536 x 256):    196,608 +  6,144 + 1,536 + 6,144 =   210,432 B each
  //   gate, up (1536 x 8960): 6,881,280 + 215,040 + 53,760 + 6,144 = 7,156,224 B each
  //   down (8960 x 1536):     6,881,280 + 215,040 + 53,760 + 35,840 = 7,185,920 B
  // = 24,382,976 B a layer, x28 = 682,723,328 B. In fp16: the tied embedding 151936 x 1536,
  // the Q/K/V biases 28 x 2048 and the norms 28 x 2 x 1536 + 1536 = 467,037,184 B.
  // Total 1,149,760,512 B; the published model.safetensors is 1,149,862,960 B, the 102,448 B
  // between being the file's header (8 B of length and the JSON of its 926 tensors).
  CHECK(p.weight_bytes.value() == 1'149'760'512);
  // Without g_idx the count would miss 28 x (6 x 6,144 + 35,840) = 2,035,712 B.
  testing::model awq_like = imported("qwen2.5-coder-1.5b-instruct-gptq-int4.json",
                                     {"precision.attention=int4:g128:fp16:zero:int4",
                                      "precision.dense_ffn=int4:g128:fp16:zero:int4"});
  CHECK(p.weight_bytes.value() - tally_params(awq_like.g).weight_bytes.value() == 2'035'712);
  // The cache keeps fp16: 2 x 2 heads x 128 x 2 B x 28 layers = 28,672 B/token.
  CHECK(state(m, 8192) == 28'672LL * 8192);      // 234,881,024 B = 224 MiB
  CHECK(state(m, 131072) == 28'672LL * 131072);  // 3,758,096,384 B = 3.5 GiB
}

TEST_CASE("Gemma 3 1B config: 999,885,952 parameters; 22 sliding layers of 512 and 4 full") {
  testing::model m = imported("gemma-3-1b-it.json");
  // Per layer: q, o 2 x 1152 x 1024, k, v 2 x 1152 x 256, q/k norms 2 x 256, MLP 3 x 1152 x
  // 6912, four norms 4 x 1152 = 26,842,112; x26 = 697,894,912; the tied embedding 262144 x
  // 1152 = 301,989,888; final norm 1152. Total 999,885,952 (the published count).
  CHECK(params(m) == 999'885'952);
  // sliding_window_pattern 6: layers 5, 11, 17, 23 are full, the other 22 keep 512 tokens.
  // K and V of 1 head x 256 in bf16: 1,024 B per token per layer.
  //   8K:   4 x 8192 x 1024 + 22 x 512 x 1024 = 33,554,432 + 11,534,336 = 45,088,768 B
  //   128K: 4 x 131072 x 1024 + 11,534,336 = 536,870,912 + 11,534,336 = 548,405,248 B
  CHECK(state(m, 8192) == 45'088'768);
  CHECK(state(m, 131072) == 548'405'248);
}

TEST_CASE("rowidx: counted over each matrix's input rows, refused where there are no rows") {
  // Qwen3-8B with every projection in GPTQ's layout (embedding and head keep bf16), per layer
  // with bytes = in*out/2 + (in/128)*out*2.5 + in*4:
  //   q, o (4096, 4096) 8,732,672 each; k, v (4096, 1024) 2,195,456 each;
  //   gate, up (4096, 12288) 26,165,248 each; down (12288, 4096) 26,198,016; norms 16,896
  // = 100,401,664 B, x36 = 3,614,459,904 B; embedding and head 2 x 151936 x 4096 x 2 B =
  // 2,489,319,424 B; final norm 8,192 B. Total 6,103,787,520 B.
  testing::model q("qwen3-8b", {"precision.weights=int4:g128:fp16:zero:int4:rowidx:int32",
                                "precision.embedding=bf16", "precision.head=bf16"});
  CHECK(tally_params(q.g).weight_bytes.value() == 6'103'787'520);
  std::ostringstream out, err;
  CHECK(run_cli({"state", "--model", "qwen3-8b", "--set", "precision.kv=int4:g128:rowidx:int32",
                 "--length", "8K"},
                out, err) == 2);
  CHECK(err.str() ==
        "--set: precision.kv: 'int4:g128:rowidx:int32' stores a value per input row of a "
        "weight matrix (rowidx), which the kv role does not have\n");
  std::ostringstream out2, err2;
  CHECK(run_cli({"params", "--model", "qwen3-8b", "--set",
                 "precision.embedding=int4:g128:rowidx:int32"},
                out2, err2) == 2);
  CHECK(err2.str() ==
        "precision: 'int4:g128:rowidx:int32' stores a value per input row of a matrix, but "
        "embedding.embed_tokens is not a matrix (give its role another format)\n");
}

TEST_CASE("GPTQ MoE (Qwen3-30B-A3B-GPTQ-Int4): g_idx per expert matrix, the router in fp16") {
  testing::model m = imported("qwen3-30b-a3b-gptq-int4.json");
  params_tally p = tally_params(m.g);
  CHECK(p.total.value() == 30'532'122'624);  // Qwen3-30B-A3B's parameters
  // Per layer, with (in, out) and bytes = in*out/2 + (in/128)*out*2.5 + in*4:
  //   q (2048, 4096) 4,366,336; k, v (2048, 512) 552,960 each; o (4096, 2048) 4,374,528
  //   = 9,846,784 B of attention;
  //   each of 128 experts: gate, up (2048, 768) 825,344 each, down (768, 2048) 820,224
  //   = 2,470,912 B, x128 = 316,276,736 B (768 g_idx rows for down, not 2048);
  //   the router 2048 x 128 in fp16 (the checkpoint stores mlp.gate.weight, unquantised)
  //   524,288 B; norms (2 x 2048 + 2 x 128) x 2 B = 8,704 B.
  // 326,656,512 B a layer, x48 = 15,679,512,576 B; embedding and head 2 x 151936 x 2048 x 2 B =
  // 1,244,659,712 B; final norm 4,096 B. Total 16,924,176,384 B.
  CHECK(p.weight_bytes.value() == 16'924'176'384);
  CHECK(p.selected_expert_bytes_per_token.value() == 8LL * 2'470'912 * 48);
  // K and V of 4 heads x 128 in fp16 on 48 layers: 2 x 4 x 128 x 2 B x 48 = 98,304 B/token.
  CHECK(state(m, 8192) == 98'304LL * 8192);      // 805,306,368 B = 768 MiB
  CHECK(state(m, 131072) == 98'304LL * 131072);  // 12,884,901,888 B = 12 GiB
}

TEST_CASE("GLM-4.5-Air config: 106,852,251,264 parameters without MTP; Q/K/V biases") {
  testing::model m = imported("glm-4.5-air.json");
  // Per layer: q/o 2*4096*12288, k/v 2*4096*1024, Q/K/V biases 12288 + 2*1024 = 109,066,240;
  // norms 2*4096. Layer 0's MLP 3*4096*10944 = 134,479,872; 45 MoE layers of 128 experts
  // 3*4096*1408, one shared expert of 1408, router 128*4096 and its bias 128 = 2,232,418,432
  // each. 46*109,074,432 + 134,479,872 + 45*2,232,418,432 + embedding and head 2*151552*4096 +
  // the final norm = 106,852,251,264 (the published 106B; the MTP layer is excluded).
  CHECK(params(m) == 106'852'251'264);
  REQUIRE(m.spec.mtp.has_value());
  CHECK(m.spec.mtp->layers == 1);
  const auto& a = std::get<attention_gqa>(*m.spec.layers.base.attention);
  CHECK((a.qkv_bias && !a.o_bias && !a.qk_norm));
  // 2 * 8 * 128 * 2 B * 46 = 188,416 B/token.
  CHECK(state(m, 8192) == 188'416LL * 8192);      // 1,543,503,872 B
  CHECK(state(m, 131072) == 188'416LL * 131072);  // 24,696,061,952 B = 23 GiB
}

TEST_CASE("KDA gate_rank in model YAML: g_a/g_b parameters; needs output_gate") {
  const std::string yaml = R"(schema: 1
name: kda-gate
vocab: 100
hidden: 64
layers:
  count: 1
  attention: {kind: kda, heads: 2, key_dim: 16, value_dim: 16, decay_rank: 8, GATE}
  ffn: {kind: swiglu, intermediate: 128}
)";
  auto with = [&](const std::string& gate) {
    std::string y = yaml;
    y.replace(y.find("GATE"), 4, gate);
    return y;
  };
  testing::model full = testing::model::from_text(with("output_gate: true"));
  testing::model low = testing::model::from_text(with("output_gate: true, gate_rank: 8"));
  // Full rank: g 64 x 32 = 2048. Low rank 8: g_a 64 x 8 + g_b 8 x 32 = 768.
  CHECK(params(full) - params(low) == 2048 - 768);
  std::string e;
  try {
    testing::model::from_text(with("output_gate: false, gate_rank: 8"));
  } catch (const spec_error& x) {
    e = x.what();
  }
  CHECK(e.find("gate_rank: a low-rank gate needs output_gate: true") != std::string::npos);
}
