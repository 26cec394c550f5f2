// Bundled models of issue 21's third round (models/*.yaml, imported from tests/fixtures/hf; the
// sources and how faithful each copy is in SOURCES.md there): parameters against the published
// totals, and weight bytes against the sum of the published checkpoints' tensors (a tensor
// listing of each release: shape and dtype of every tensor) where one was found.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/dtype.h"
#include "scratch.h"
#include "spec/hf/import.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::params;
using testing::weight_bytes;
using testing::state;

// One FP8 (e4m3) matrix of `rows` x `cols` as DeepSeek and MiniMax store it: a byte a value and
// an FP32 scale (weight_scale_inv) per 128 x 128 block, the grid rounded up on each side.
std::int64_t fp8_block(std::int64_t rows, std::int64_t cols) {
  return rows * cols + ((rows + 127) / 128) * ((cols + 127) / 128) * 4;
}

// The main model (layers 0-60, MTP layer 61 left out) of a DeepSeek-V3 release as its tensor
// listing stores it: FP8 blocks for every attention and FFN matrix, BF16 router, embedding and
// head, FP32 routing bias, norms in `norm_bytes` a value; `indexer` adds DeepSeek-V3.2's
// lightning indexer (wq_b and wk FP8, weights_proj BF16, k_norm weight and bias).
std::int64_t deepseek_stored_bytes(bool indexer, std::int64_t norm_bytes) {
  const std::int64_t d = 7168;
  std::int64_t attention = fp8_block(1536, d) + fp8_block(24576, 1536) + fp8_block(576, d) +
                           fp8_block(32768, 512) + fp8_block(d, 16384);
  std::int64_t norms = (2 * d + 1536 + 512) * norm_bytes;
  if (indexer) {
    attention += fp8_block(8192, 1536) + fp8_block(128, d) + 64 * d * 2;
    norms += 2 * 128 * norm_bytes;
  }
  std::int64_t dense = 3 * fp8_block(18432, d);
  std::int64_t moe = 256 * 3 * fp8_block(2048, d) + 3 * fp8_block(2048, d) + 256 * d * 2 + 256 * 4;
  return 61 * (attention + norms) + 3 * dense + 58 * moe + 2 * 129280LL * d * 2 + d * norm_bytes;
}

}  // namespace

TEST_CASE("deepseek-v3.2 bundle: the release's FP8 blocks, BF16 weights_proj and FP32 norms") {
  testing::model m("deepseek-v3.2");
  // The listing of deepseek-ai/DeepSeek-V3.2 sums to 685,396,921,376 elements (scales counted):
  // the main model's 671,877,944,064 parameters (as for nvidia's NVFP4 republication), its
  // 1,001,920,512 scales, and the MTP layer.
  CHECK(params(m) == 671'877'944'064);
  std::int64_t stored = deepseek_stored_bytes(/*indexer=*/true, /*norm_bytes=*/4);
  CHECK(stored == 674'032'381'632);
  // Exact: each matrix's scale grid rounded up per side (kv_a_proj's 576 rows are 5 blocks of
  // 128, not 4.5: 28 scales x 4 B x 61 layers = 6,832 B that a grouped count of 16,384 values
  // per scale would miss).
  CHECK(weight_bytes(m) == stored);
  // The indexer's weights_proj is BF16 in the files (64 x 7168 x 2 B a layer), not FP8.
  CHECK(m.spec.precision.weights.name == "bf16");
  CHECK(m.spec.precision.norms.name == "fp32");
}

TEST_CASE("deepseek-v3.1 and deepseek-r1 bundles: FP8 blocks with FP32 scales, router BF16") {
  for (const char* name : {"deepseek-v3.1", "deepseek-r1"}) {
    CAPTURE(name);
    testing::model m(name);
    // 671,026,419,200: DeepSeek-V3's main model (the card's 671B; listing total 684,531,386,000
    // with the MTP layer and the scales).
    CHECK(params(m) == 671'026'419'200);
    std::int64_t stored = deepseek_stored_bytes(/*indexer=*/false, /*norm_bytes=*/2);
    CHECK(stored == 673'150'611'808);
    // Exact: the routing bias F32 as the files store it (precision.router_bias; at the norms'
    // BF16 it was 58 x 256 x 2 B = 29,696 B short) and kv_a_proj's scale grid rounded up per
    // side (6,832 B short as a grouped count).
    CHECK(weight_bytes(m) == stored);
    CHECK(m.spec.precision.router_bias_format()->name == "fp32");
    // MLA compact cache, BF16: (512 + 64) x 2 B x 61 layers = 70,272 B/token.
    CHECK(state(m, 8192) == 70'272LL * 8192);      // 575,668,224 B
    CHECK(state(m, 131072) == 70'272LL * 131072);  // 9,210,691,584 B
  }
}

TEST_CASE("minimax-m2.5 bundle: FP8 attention and experts, the F32 router as stored") {
  testing::model m("minimax-m2.5");
  // The listing of MiniMaxAI/MiniMax-M2.5 sums to 228,703,644,928 elements: calc's
  // 228,689,764,864 parameters and 13,880,064 block scales (per layer 256 experts x 3 x 288 and
  // attention 2,688).
  CHECK(params(m) == 228'689'764'864);
  const std::int64_t layers = 62;
  std::int64_t attention = fp8_block(6144, 3072) + 2 * fp8_block(1024, 3072) + fp8_block(3072, 6144);
  std::int64_t experts = 256 * (2 * fp8_block(1536, 3072) + fp8_block(3072, 1536));
  std::int64_t router = 256 * 3072 * 4 + 256 * 4;  // gate.weight and e_score_correction_bias F32
  std::int64_t norms = (2 * 3072 + 6144 + 1024) * 2;
  std::int64_t stored =
      layers * (attention + experts + router + norms) + 2 * 200064LL * 3072 * 2 + 3072 * 2;
  CHECK(stored == 230'121'630'720);  // the report's 214.32 GB (GiB) of tensors
  // Exact: the routing bias F32 as stored (precision.router_bias; 62 x 256 x 2 B = 31,744 B
  // short at the norms' BF16). Every matrix side is a multiple of 128: no grid to round.
  CHECK(weight_bytes(m) == stored);
}

TEST_CASE("phi-4 bundle: 14,659,507,200 parameters") {
  testing::model m("phi-4");
  // Published: 14,659,507,200 (the GGUF general.parameter_count of microsoft/phi-4; the card's
  // 14B). By hand: per layer Q and O 2 x 5120^2, K and V 2 x 5120 x 1280, SwiGLU 3 x 5120 x
  // 17920, two norms = 340,797,440; x 40 = 13,631,897,600; embedding and untied head 2 x 100352
  // x 5120 = 1,027,604,480; the final norm 5,120.
  CHECK(params(m) == 14'659'507'200);
  CHECK(weight_bytes(m) == 2 * 14'659'507'200LL);  // BF16 throughout
  // GQA 40/10 x 128, BF16: 2 x 10 x 128 x 2 B x 40 layers = 204,800 B/token.
  CHECK(state(m, 8192) == 204'800LL * 8192);      // 1,677,721,600 B
  CHECK(state(m, 131072) == 204'800LL * 131072);  // 26,843,545,600 B
}

TEST_CASE("gemma-3-27b-it bundle: the language model of 27,432,406,640 parameters") {
  testing::model m("gemma-3-27b-it");
  // Published: 27,432,406,640 parameters in google/gemma-3-27b-it (a preset table and a
  // llama.cpp server's n_params, SOURCES.md) = the language model calc counts, 27,009,346,304,
  // + the SigLIP tower (27 layers of 1152 wide, MLP 4304, 14 x 14 patches, 4096 positions, no
  // head) 416,866,032 + the projector (1152 x 5376 and its 1152-wide norm) 6,194,304.
  const std::int64_t h = 1152, f = 4304;
  std::int64_t vision_layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 4 * h;
  std::int64_t vision = 27 * vision_layer + 3 * 14 * 14 * h + h + 4096 * h + 2 * h;
  CHECK(vision == 416'866'032);
  CHECK(params(m) + vision + h * 5376 + h == 27'432'406'640);
  CHECK(params(m) == 27'009'346'304);
  // 52 sliding layers (window 1024) and 10 full ones, 16 KV heads x 128, BF16: 8,192 B a token
  // a layer. At 8K: 52 x 1024 + 10 x 8192 tokens; at 128K: 52 x 1024 + 10 x 131072.
  CHECK(state(m, 8192) == 8'192LL * (52 * 1024 + 10 * 8192));      // 1,107,296,256 B
  CHECK(state(m, 131072) == 8'192LL * (52 * 1024 + 10 * 131072));  // 11,173,625,856 B
}

TEST_CASE("the release configs import at their stored formats") {
  // FP8 block quantisation never converts a router: DeepSeek's gate is a bare Parameter, not a
  // Linear, and is not listed in modules_to_not_convert, yet the files store it BF16.
  hf::imported v32 = hf::import_config(fixture("deepseek-ai--DeepSeek-V3.2/config.json"));
  CHECK(v32.plain.find("weights: bf16") != std::string::npos);
  CHECK(v32.plain.find("experts: fp8:b128x128:fp32") != std::string::npos);
  hf::imported r1 = hf::import_config(fixture("deepseek-ai--DeepSeek-R1/config.json"));
  CHECK(r1.plain.find("attention: fp8:b128x128:fp32") != std::string::npos);
  // The routing bias as DeepSeek's reference Gate keeps it (a float32 Parameter).
  CHECK(r1.plain.find("router_bias: fp32") != std::string::npos);
  // Each import counts what its bundle does (the bundles add only listing-read norms).
  for (const char* name : {"deepseek-v3.1", "deepseek-r1"}) {
    CAPTURE(name);
    std::string folder = std::string(name) == "deepseek-r1" ? "deepseek-ai--DeepSeek-R1"
                                                           : "deepseek-ai--DeepSeek-V3.1";
    testing::model bundled(name);
    testing::model imported = testing::model::from_text(
        hf::import_config(fixture(folder + "/config.json")).yaml);
    CHECK(weight_bytes(imported) == weight_bytes(bundled));
  }
  hf::imported mm = hf::import_config(fixture("MiniMaxAI--MiniMax-M2.5/config.json"));
  CHECK(mm.plain.find("router_bias: fp32") != std::string::npos);
  hf::imported nano =
      hf::import_config(fixture("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json"));
  CHECK(nano.plain.find("ssm_params: fp32") != std::string::npos);
  CHECK(weight_bytes(testing::model::from_text(nano.yaml)) == 63'155'892'352);
}

TEST_CASE("glm-5.1-fp8 bundle: the release's modules_to_not_convert read per role") {
  // zai-org/GLM-5.1-FP8 lists, per layer, the norms (the indexer's LayerNorm k_norm and its
  // bias among them), the indexer's weights_proj (indexers_proj), the router and its bias, and
  // the MTP layer's eh_proj, enorm, hnorm and shared_head.norm: every one reads.
  testing::model m("glm-5.1-fp8");
  // The same architecture as GLM-5.1: 743,911,218,432 main-model parameters; the listing's
  // 753,910,024,032 elements add the scales and the MTP layer.
  CHECK(params(m) == 743'911'218'432);
  const std::int64_t d = 6144;
  std::int64_t attention = fp8_block(2048, d) + fp8_block(16384, 2048) + fp8_block(576, d) +
                           fp8_block(28672, 512) + fp8_block(d, 16384) + fp8_block(4096, 2048) +
                           fp8_block(128, d) + 32 * d * 2;  // weights_proj BF16
  std::int64_t norms = (2 * d + 2048 + 512 + 2 * 128) * 2;  // BF16, k_norm weight and bias
  std::int64_t moe = 256 * 3 * fp8_block(2048, d) + 3 * fp8_block(2048, d) + 256 * d * 2 + 256 * 4;
  std::int64_t stored = 78 * (attention + norms) + 3 * 3 * fp8_block(12288, d) + 75 * moe +
                        2 * 154880LL * d * 2 + d * 2;
  CHECK(stored == 746'130'054'912);
  // Exact: the F32 routing bias (75 x 256 x 2 B = 38,400 B short at BF16) and kv_a_proj's
  // grid rounded up per side (78 x 24 x 4 B = 7,488 B short as a grouped count).
  CHECK(weight_bytes(m) == stored);
}

TEST_CASE("FP8 exclusion lists: norm biases, the indexer's weights_proj and MTP modules read") {
  std::string json = R"({"model_type": "glm_moe_dsa", "num_hidden_layers": 4, "hidden_size": 256,
    "vocab_size": 1024, "num_attention_heads": 4, "q_lora_rank": 128, "kv_lora_rank": 64,
    "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "intermediate_size": 512,
    "moe_intermediate_size": 128, "n_routed_experts": 8, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "first_k_dense_replace": 1, "index_n_heads": 4, "index_head_dim": 32,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
      "modules_to_not_convert": ["lm_head", "model.layers.0.self_attn.indexer.k_norm.bias",
        "model.layers.1.self_attn.indexers_proj", "model.layers.4.eh_proj",
        "model.layers.4.enorm", "model.layers.4.shared_head.norm"]}})";
  hf::imported out = hf::import_text(json, "config.json", "tiny");
  CHECK(out.plain.find("attention: fp8:b128x128:fp32") != std::string::npos);
  // An input projection left out alone is still refused: calc keeps formats per role.
  std::string refused = json;
  std::string entry = R"("model.layers.4.enorm")";
  refused.replace(refused.find(entry), entry.size(), R"("model.layers.1.self_attn.indexer.wk")");
  CHECK_THROWS(hf::import_text(refused, "config.json", "tiny"));
}

TEST_CASE("nemotron-3-nano-30b-a3b bundle: BF16, its F32 control vectors named") {
  testing::model m("nemotron-3-nano-30b-a3b");
  CHECK(params(m) == 31'577'940'288);  // the card's 31.6B
  // The checkpoint stores A_log and D (64 each, 23 Mamba layers) and the routing bias (128, 23
  // MoE layers) in F32: 23,552 B, measured on the full model; precision.ssm_params and
  // router_bias count them so, everything else BF16.
  const std::int64_t f32_vectors = 23 * (64 + 64) * 4 + 23 * 128 * 4;
  CHECK(f32_vectors == 23'552);
  CHECK(weight_bytes(m) == 2 * (params(m) - f32_vectors / 4) + f32_vectors);
  CHECK(weight_bytes(m) == 63'155'892'352);
}

TEST_CASE("glm-4.5 bundle: 352,797,829,024 main-model parameters") {
  testing::model m("glm-4.5");
  // The tensor listing of zai-org/GLM-4.5-FP8 (the same architecture) sums to 358,458,543,424
  // elements: the main model, one FP32 scale per output row of each FP8 matrix, and the MTP
  // layer 92 (a full MoE layer, eh_proj, its own embedding and FP8 head). By hand, per layer:
  // Q 5120 x 12288 and K, V 5120 x 1024 with biases, O 12288 x 5120, q_norm and k_norm 128
  // each, two norms; 3 dense SwiGLU of 12288, 89 MoE layers of 160 x 1536 experts, a shared
  // expert of 1536, the router and its bias; untied embedding and head of 151552 x 5120.
  const std::int64_t d = 5120;
  std::int64_t attention = 12288 * d + 12288 + 2 * (1024 * d + 1024) + d * 12288 + 2 * 128;
  std::int64_t moe = 160 * 3 * 1536 * d + 3 * 1536 * d + 160 * d + 160;
  std::int64_t main = 92 * (attention + 2 * d) + 3 * 3 * 12288 * d + 89 * moe + 2 * 151552LL * d + d;
  std::int64_t scales = 93 * (12288 + 2 * 1024 + d) + 3 * (2 * 12288 + d) +
                        90 * (160 * (2 * 1536 + d) + 2 * 1536 + d) + 151552;
  std::int64_t mtp = attention + 2 * d + moe + d * 10240 + 2 * 151552LL * d + 3 * d;
  CHECK(main + scales + mtp == 358'458'543'424);
  CHECK(params(m) == main);
  CHECK(params(m) == 352'797'829'024);
  // BF16 but the routing bias, F32 in the FP8 release's listing (as in both GLM-5.1 releases):
  // 89 MoE layers x 160 x 2 B more than two bytes a parameter.
  CHECK(weight_bytes(m) == 2 * params(m) + 89 * 160 * 2);
  // GQA 96/8 x 128, BF16: 2 x 8 x 128 x 2 B x 92 layers = 376,832 B/token.
  CHECK(state(m, 8192) == 376'832LL * 8192);      // 3,087,007,744 B
  CHECK(state(m, 131072) == 376'832LL * 131072);  // 49,392,123,904 B
}

TEST_CASE("glm-4.5-fp8 bundle: compressed-tensors per-row FP8, the listing's bytes") {
  // The published zai-org/GLM-4.5-FP8 config (quantization_config kept) read as published: the
  // same 352,797,829,024 parameters as the BF16 bundle, FP8 matrices with an FP32 scale per
  // output row, the router BF16 (tests/unit/hf_import_test.cpp works the bytes by hand).
  testing::model m("glm-4.5-fp8");
  CHECK(params(m) == params(testing::model("glm-4.5")));
  CHECK(m.spec.precision.experts->name == "fp8:row:fp32");
  CHECK(weight_bytes(m) == 354'902'011'520);
  // Against the BF16 bundle's 705,595,686,528 B: a byte saved per FP8 value, less the scales.
  CHECK(weight_bytes(testing::model("glm-4.5")) - weight_bytes(m) == 350'693'675'008);
}

TEST_CASE("nemotron-nas (Llama-3.3-Nemotron-Super-49B-v1): per-layer blocks, 49,867,145,216") {
  testing::model m("llama-3.3-nemotron-super-49b-v1");
  // Published: 49,867,145,216 BF16 parameters (SOURCES.md; the card's 49.9B). By hand from the
  // 80 block_configs: 49 layers with GQA 64/8 x 128 (2 x 8192^2 + 2 x 8192 x 1024 =
  // 150,994,944 each), 31 without attention; SwiGLU widths int(2 x ffn_mult x 8192 / 3) up to a
  // multiple of 256: 28672 (ffn_mult 5.25) x 49, 14336 (2.625) x 6, 17920 (3.28125) x 1,
  // 7168 (1.3125) x 10, 5632 (1.0) x 8, 2816 (0.5) x 6 (3 x 8192 x width each); an RMSNorm
  // before each block a layer has (49 + 80); untied embedding and head 2 x 128256 x 8192.
  const std::int64_t d = 8192;
  std::int64_t attention = 49 * (2 * d * d + 2 * d * 1024);
  std::int64_t ffn = 3 * d * (49 * 28672LL + 6 * 14336 + 17920 + 10 * 7168 + 8 * 5632 + 6 * 2816);
  std::int64_t norms = (49 + 80) * d + d;
  CHECK(attention + ffn + norms + 2 * 128256LL * d == 49'867'145'216);
  CHECK(params(m) == 49'867'145'216);
  // KV: 49 attention layers x 2 x 8 x 128 x 2 B = 200,704 B/token; the no-op layers cache none.
  CHECK(state(m, 8192) == 200'704LL * 8192);      // 1,644,167,168 B
  CHECK(state(m, 131072) == 200'704LL * 131072);  // 26,306,674,688 B
}

TEST_CASE("nemotron-nas: a block replaced by a linear is refused at its field") {
  std::string json = R"({"model_type": "nemotron-nas", "hidden_size": 256, "vocab_size": 1000,
    "num_attention_heads": 4, "num_hidden_layers": 1, "block_configs": [
      {"attention": {"n_heads_in_group": 2, "no_op": false, "replace_with_linear": true},
       "ffn": {"ffn_mult": 1.0, "no_op": false}}]})";
  std::string error;
  try {
    hf::import_text(json, "config.json", "tiny");
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK(error.find("replace_with_linear") != std::string::npos);
  // Without it the layer reads: GQA 4/2 x 64, SwiGLU int(2 x 256 / 3) = 170 -> 256.
  std::string ok = json;
  ok.replace(ok.find("\"replace_with_linear\": true"), 27, "\"replace_with_linear\": false");
  hf::imported out = hf::import_text(ok, "config.json", "tiny");
  CHECK(out.plain.find("intermediate: 256") != std::string::npos);
  CHECK(out.plain.find("kv_heads: 2") != std::string::npos);
}

TEST_CASE("the safetensors headers decide the routing bias and A_log/D formats") {
  // Nemotron-3-Nano's config beside one shard whose header stores the routing bias BF16 and
  // A_log F32 (no data follows the header: calc reads only the header).
  std::filesystem::path dir = testing::scratch_dir("calc-bytes") / "nano-headers";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      fixture("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json"), dir / "config.json",
      std::filesystem::copy_options::overwrite_existing);
  std::string header =
      R"({"backbone.layers.0.mixer.A_log": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]},)"
      R"( "backbone.layers.1.mixer.gate.e_score_correction_bias": {"dtype": "BF16", "shape": [128],)"
      R"( "data_offsets": [256, 512]}})";
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.plain.find("ssm_params: fp32") != std::string::npos);
  CHECK(y.yaml.find("safetensors headers store A_log and D as fp32") != std::string::npos);
  testing::model m = testing::model::from_text(y.yaml);
  CHECK(!m.spec.precision.router_bias.has_value());  // BF16: the norms' format, not written
  REQUIRE(m.spec.precision.ssm_params.has_value());
  CHECK(m.spec.precision.ssm_params->name == "fp32");
  // 23 routing biases of 128 at BF16 instead of F32: 11,776 B fewer than the family default.
  CHECK(weight_bytes(m) == 63'155'892'352 - 23 * 128 * 2);
}

TEST_CASE("FP8 block scales: a grid per matrix, each side rounded up, in exact integers") {
  // DeepSeek's kv_a_proj_with_mqa, 7168 inputs x 576 outputs: 5 x 56 blocks of 128 x 128, not
  // the 252 a count of 16,384 values per scale gives.
  dtype b = parse_dtype("fp8:b128x128:fp32");
  CHECK(b.blocks(7168, 576).value() == 5 * 56);
  CHECK(b.block_bytes(7168LL * 576, b.blocks(7168, 576), 7168).value() == 7168LL * 576 + 280 * 4);
  CHECK(parse_dtype("fp8:g16384:fp32").bytes(7168LL * 576).value() == 7168LL * 576 + 252 * 4);
  // Non-square blocks: rows are outputs, columns inputs (weight_block_size [rows, columns]).
  dtype r = parse_dtype("fp8:b64x128");
  CHECK(r.blocks(/*in=*/256, /*out=*/100).value() == 2 * 2);
  CHECK(r.scale_bits == 16);  // bf16 scales unless named
  CHECK_THROWS(parse_dtype("fp8:b128"));
  CHECK_THROWS(parse_dtype("fp8:b0x128"));
  CHECK_THROWS(parse_dtype("fp8:b128x128:fp32:zero"));
  CHECK_THROWS(parse_dtype("fp8:b8192x128"));
}
