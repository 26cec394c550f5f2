// Bundles of issue 21's item 3 added by the "bundles3" round (models/*.yaml imported from
// tests/fixtures/hf; sources and how faithful each copy is in SOURCES.md there): parameters
// against the published totals, stored bytes against the releases' listings where found.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "common/dtype.h"
#include "hf_counts.h"
#include "scratch.h"
#include "tally/rules.h"
#include "spec/hf/import.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::params;
using testing::state;
using testing::weight_bytes;

// One FP8 (e4m3) matrix of `rows` x `cols` as DeepSeek-V3's format stores it: a byte a value
// and an FP32 scale (weight_scale_inv) per 128 x 128 block, the grid rounded up on each side.
std::int64_t fp8_block(std::int64_t rows, std::int64_t cols) {
  return rows * cols + ((rows + 127) / 128) * ((cols + 127) / 128) * 4;
}

}  // namespace

TEST_CASE("nemotron-nas (Llama-3.1-Nemotron-Ultra-253B-v1): 162 blocks, 253,401,268,224") {
  testing::model m("nvidia/Llama-3_1-Nemotron-Ultra-253B-v1");  // by its Hugging Face id
  CHECK(m.spec.name == "llama-3.1-nemotron-ultra-253b-v1");
  // By hand from the 162 block_configs (the card's 253B): 64 layers with GQA 128/8 x 128
  // (2 x 16384^2 + 2 x 16384 x 1024 each), 98 without attention; 81 SwiGLU blocks of width
  // int(2 x ffn_mult x 16384 / 3) up to a multiple of 256, and 81 without one (49 layers have
  // neither). Ultra's ffn_mult values are decimals (0.4875, 1.95, 3.4125, ...), not binary
  // fractions: 2 x 0.4875 x 16384 / 3 = 5324.8, truncated to 5324, rounded up to 5376.
  const std::int64_t d = 16384;
  std::int64_t attention = 64 * (2 * d * d + 2 * d * 1024);
  std::int64_t ffn = 3 * d *
                     (5376 + 10752 + 6 * 16128 + 10 * 21504 + 19 * 26624 + 2 * 32000 + 4 * 37376 +
                      34 * 53248LL + 301056 + 343040 + 399360 + 425984);
  std::int64_t norms = (64 + 81) * d + d;  // an RMSNorm before each block, and the final one
  CHECK(attention + ffn + norms + 2 * 128256LL * d == 253'401'268'224);
  CHECK(params(m) == 253'401'268'224);
  CHECK(weight_bytes(m) == 2 * 253'401'268'224LL);  // BF16 throughout
  // KV: 64 attention layers x 2 x 8 x 128 x 2 B = 262,144 B/token.
  CHECK(state(m, 8192) == 262'144LL * 8192);      // 2,147,483,648 B
  CHECK(state(m, 131072) == 262'144LL * 131072);  // 34,359,738,368 B
  // The bundle is the import of its fixture, value for value.
  hf::imported y = hf::import_config(fixture("nvidia--Llama-3_1-Nemotron-Ultra-253B-v1"));
  testing::model again = testing::model::from_text(y.yaml);
  CHECK(params(again) == params(m));
}

TEST_CASE("nemotron-nas: ffn_mult is truncated as DeciLM's Python float expression does") {
  // 2 x 1.95 x 16384 / 3 = 21299.2 -> 21299 -> 21504 (a multiple of 256); a decimal ffn_mult
  // was refused before Ultra was bundled.
  std::string json = R"({"model_type": "nemotron-nas", "hidden_size": 16384, "vocab_size": 1000,
    "num_attention_heads": 128, "num_hidden_layers": 1, "block_configs": [
      {"attention": {"n_heads_in_group": 16, "no_op": false},
       "ffn": {"ffn_mult": 1.95, "no_op": false}}]})";
  hf::imported out = hf::import_text(json, "config.json", "tiny");
  CHECK(out.plain.find("intermediate: 21504") != std::string::npos);
}

TEST_CASE("kimi-k2-instruct: the release's FP8 blocks with FP32 scales, 1,029,173,249,888 B") {
  testing::model m("kimi-k2-instruct");
  CHECK(params(m) == 1'026'408'232'448);
  CHECK(m.spec.precision.experts->name == "fp8:b128x128:fp32");
  // The release's tensor listing (SOURCES.md): every attention and FFN matrix FP8 with an FP32
  // scale per 128 x 128 block (q_a [12, 56], kv_b [128, 4], o [56, 64], experts [16, 56], ...);
  // the router, embedding, head and norms BF16; the routing bias FP32. Layers 0-60, no MTP.
  const std::int64_t d = 7168;
  std::int64_t attention = fp8_block(1536, d) + fp8_block(12288, 1536) + fp8_block(576, d) +
                           fp8_block(16384, 512) + fp8_block(d, 8192);
  std::int64_t norms = (2 * d + 1536 + 512) * 2;
  std::int64_t dense = 3 * fp8_block(18432, d);
  std::int64_t moe = 385 * 3 * fp8_block(2048, d) + 384 * d * 2 + 384 * 4;
  std::int64_t stored = 61 * (attention + norms) + dense + 60 * moe + 2 * 163840LL * d * 2 + d * 2;
  CHECK(stored == 1'029'173'249'888);
  CHECK(weight_bytes(m) == stored);
  // The listing's 958.49 GB (GiB) of tensors is that and the 61 BF16 rotary inv_freq buffers of
  // 56 values the checkpoint also stores (not weights: calc counts none).
  CHECK(stored + 61 * 56 * 2 == 1'029'173'256'720);
  // Its 1,026,470,731,056 elements: the parameters, one scale a block, and the inv_freq values.
  std::int64_t blocks = (61 * (attention - (1536 * d + 12288 * 1536 + 576 * d + 16384 * 512 +
                                            d * 8192)) +
                         dense - 3 * 18432 * d + 60 * 385 * 3 * (fp8_block(2048, d) - 2048 * d)) /
                        4;
  CHECK(params(m) + blocks + 61 * 56 == 1'026'470'731'056);
  // The abridged kimi_k2 fixture (no quantization_config) reads the same parameters at BF16,
  // as the bundle did before: 2 B each, 4 B for the 60 x 384 routing-bias values.
  testing::model bf16(fixture("moonshotai--Kimi-K2-Instruct"));
  CHECK(params(bf16) == params(m));
  CHECK(weight_bytes(bf16) == 2 * params(m) + 60 * 384 * 2);
}

TEST_CASE("--weights fp8:row: a short convolution's taps take a scale per channel") {
  // The taps stay in `weights` (docs/model-schema.md), which --weights sets whole; as `fp8`
  // makes them a byte each, `fp8:row` makes them a byte each and a scale per channel (a row of
  // `kernel` taps; BF16, fp8:row's scale format). calc refused it before: the taps had no sides.
  dtype row = parse_dtype("fp8:row");
  tensor taps = conv_taps("conv1d", {8192}, 4, &row);
  CHECK(taps.bytes() == 8192 * 4 + 8192 * 2);
  dtype block = parse_dtype("fp8:b128x128:fp32");
  tensor kda = conv_taps("q_k_v_conv1d", {4096, 4096, 4096}, 4, &block);
  CHECK(kda.bytes() == 3 * 4096 * 4 + 3 * 32 * 4);  // each conv its own 32 x 1 grid
  for (const char* model : {"qwen3-next-80b-a3b-thinking", "bamba-9b", "lfm2-700m",
                            "kimi-linear-48b-a3b-instruct", "falcon-mamba-7b"}) {
    CAPTURE(model);
    std::ostringstream out, err, out8, err8;
    CHECK(run_cli({"params", "--model", model, "--weights", "fp8:row", "--format", "json"}, out,
                  err) == 0);
    CHECK(err.str().empty());
    CHECK(run_cli({"params", "--model", model, "--weights", "fp8", "--format", "json"}, out8,
                  err8) == 0);
    // The row format only adds scales to what plain fp8 stores.
    CHECK(out.str() != out8.str());
  }
}

TEST_CASE("glm-4.6 bundle (reconstructed from GLM-4.7's config): 352,797,829,024 parameters") {
  testing::model m("zai-org/GLM-4.6");
  CHECK(m.spec.name == "glm-4.6");
  // Labelled reconstructed where a reader sees the model: its source line.
  CHECK(m.spec.source.find("RECONSTRUCTED") != std::string::npos);
  // By hand (GLM-4.5's architecture): per layer GQA 96/8 x 128 with Q/K/V biases and per-head
  // Q/K norms, 2 x 5120 x 12288 + 12288 + 2 x (5120 x 1024 + 1024) + 2 x 128 = 136,329,472, and
  // two norms; 3 dense layers of 3 x 5120 x 12288; 89 MoE layers of 160 routed + 1 shared
  // experts of 3 x 5120 x 1536, the router 160 x 5120 and its bias 160 = 3,799,285,920;
  // embedding and untied head 2 x 151552 x 5120; the final norm. The MTP layer is not counted.
  const std::int64_t d = 5120;
  std::int64_t total = 92 * (136'329'472 + 2 * d) + 3 * 3 * d * 12288 + 89 * 3'799'285'920LL +
                       2 * 151552LL * d + d;
  CHECK(total == 352'797'829'024);
  CHECK(params(m) == total);
  // BF16, the routing bias F32 (glm4_moe's listings): 2 B more for each of 89 x 160 values.
  CHECK(weight_bytes(m) == 2 * total + 89 * 160 * 2);
  // GQA 8 x 128, K and V BF16, 92 layers: 376,832 B/token; the window 202,752.
  CHECK(state(m, 8192) == 376'832LL * 8192);      // 3,087,007,744 B
  CHECK(state(m, 131072) == 376'832LL * 131072);  // 49,392,123,904 B
  CHECK(m.spec.max_position_embeddings == 202'752);
}

TEST_CASE("minimax_m2: the FP8 checkpoints' router is F32, the only matrix left in weights") {
  // MiniMax-M2.5's and M2.7's listings store block_sparse_moe.gate.weight F32, and MiniMax-M2's
  // headers sum to M2.5's 230,121,630,720 B (SOURCES.md): the family's router_dtype.
  hf::imported y = hf::import_config(fixture("MiniMaxAI--MiniMax-M2/config.json"));
  CHECK(y.plain.find("weights: fp32") != std::string::npos);
  CHECK(y.yaml.find("minimax_m2's checkpoints store the router (gate.weight) as fp32") !=
        std::string::npos);
  testing::model m = testing::model::from_text(y.yaml);
  CHECK(weight_bytes(m) == 230'121'630'720);
  CHECK(weight_bytes(testing::model("minimax-m2")) == 230'121'630'720);
  CHECK(weight_bytes(testing::model("minimax-m2.5")) == 230'121'630'720);
  // A folder whose headers store the router BF16: the headers decide, 62 x 256 x 3072 x 2 B less.
  std::filesystem::path dir = testing::scratch_dir("calc-bytes") / "minimax-bf16-router";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture("MiniMaxAI--MiniMax-M2/config.json"), dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::string header =
      R"({"model.layers.0.block_sparse_moe.gate.weight": {"dtype": "BF16", "shape": [256, 3072],)"
      R"( "data_offsets": [0, 1572864]}})";
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  hf::imported h = hf::import_config(dir.string());
  CHECK(h.plain.find("weights: bf16") != std::string::npos);
  CHECK(weight_bytes(testing::model::from_text(h.yaml)) == 230'121'630'720 - 62LL * 256 * 3072 * 2);
  // Families without a documented router format keep weights at the model dtype (Kimi K2).
  CHECK(hf::import_config(fixture("kimi-k2-instruct-fp8.json")).plain.find("weights: bf16") !=
        std::string::npos);
}
