// Checkpoint truth (src/spec/hf/checkpoint.h): safetensors headers and the index's total_size,
// set against calc's weight bytes with each difference named. The safetensors files here are
// written by the test: an 8-byte length and a JSON header whose tensors are a published
// checkpoint's, with no tensor data behind them (calc never reads it).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "common/error.h"
#include "hf_counts.h"
#include "safetensors_writer.h"
#include "scratch.h"
#include "spec/hf/checkpoint.h"
#include "spec/hf/import.h"

using namespace calc;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using testing::fixture;
using testing::header_writer;

/// Qwen/Qwen3.5-27B's tensors as the published checkpoint lists them (a model report of the
/// checkpoint, SOURCES.md): 48 Gated DeltaNet and 16 gated-attention layers in BF16 with A_log
/// and the gated norm in FP32, the vision tower, and the MTP block, in two shards.
void write_qwen35_27b(const fs::path& dir) {
  header_writer lm, rest;
  lm.add("lm_head.weight", "BF16", {248320, 5120});
  lm.add("model.language_model.embed_tokens.weight", "BF16", {248320, 5120});
  lm.add("model.language_model.norm.weight", "BF16", {5120});
  for (int i = 0; i < 64; ++i) {
    std::string p = "model.language_model.layers." + std::to_string(i) + ".";
    if ((i + 1) % 4 != 0) {
      lm.add(p + "linear_attn.A_log", "F32", {48});
      lm.add(p + "linear_attn.conv1d.weight", "BF16", {10240, 1, 4});
      lm.add(p + "linear_attn.dt_bias", "BF16", {48});
      lm.add(p + "linear_attn.in_proj_a.weight", "BF16", {48, 5120});
      lm.add(p + "linear_attn.in_proj_b.weight", "BF16", {48, 5120});
      lm.add(p + "linear_attn.in_proj_qkv.weight", "BF16", {10240, 5120});
      lm.add(p + "linear_attn.in_proj_z.weight", "BF16", {6144, 5120});
      lm.add(p + "linear_attn.norm.weight", "F32", {128});
      lm.add(p + "linear_attn.out_proj.weight", "BF16", {5120, 6144});
    } else {
      lm.add(p + "self_attn.q_proj.weight", "BF16", {12288, 5120});
      lm.add(p + "self_attn.k_proj.weight", "BF16", {1024, 5120});
      lm.add(p + "self_attn.v_proj.weight", "BF16", {1024, 5120});
      lm.add(p + "self_attn.o_proj.weight", "BF16", {5120, 6144});
      lm.add(p + "self_attn.q_norm.weight", "BF16", {256});
      lm.add(p + "self_attn.k_norm.weight", "BF16", {256});
    }
    for (const char* m : {"gate_proj", "up_proj"})
      lm.add(p + "mlp." + m + ".weight", "BF16", {17408, 5120});
    lm.add(p + "mlp.down_proj.weight", "BF16", {5120, 17408});
    lm.add(p + "input_layernorm.weight", "BF16", {5120});
    lm.add(p + "post_attention_layernorm.weight", "BF16", {5120});
  }
  for (int b = 0; b < 27; ++b) {
    std::string p = "model.visual.blocks." + std::to_string(b) + ".";
    rest.add(p + "attn.qkv.weight", "BF16", {3456, 1152});
    rest.add(p + "attn.qkv.bias", "BF16", {3456});
    rest.add(p + "attn.proj.weight", "BF16", {1152, 1152});
    rest.add(p + "attn.proj.bias", "BF16", {1152});
    rest.add(p + "mlp.linear_fc1.weight", "BF16", {4304, 1152});
    rest.add(p + "mlp.linear_fc1.bias", "BF16", {4304});
    rest.add(p + "mlp.linear_fc2.weight", "BF16", {1152, 4304});
    rest.add(p + "mlp.linear_fc2.bias", "BF16", {1152});
    for (const char* n : {"norm1", "norm2"}) {
      rest.add(p + n + ".weight", "BF16", {1152});
      rest.add(p + n + ".bias", "BF16", {1152});
    }
  }
  rest.add("model.visual.merger.linear_fc1.weight", "BF16", {4608, 4608});
  rest.add("model.visual.merger.linear_fc1.bias", "BF16", {4608});
  rest.add("model.visual.merger.linear_fc2.weight", "BF16", {5120, 4608});
  rest.add("model.visual.merger.linear_fc2.bias", "BF16", {5120});
  rest.add("model.visual.merger.norm.weight", "BF16", {1152});
  rest.add("model.visual.merger.norm.bias", "BF16", {1152});
  rest.add("model.visual.patch_embed.proj.weight", "BF16", {1152, 3, 2, 16, 16});
  rest.add("model.visual.patch_embed.proj.bias", "BF16", {1152});
  rest.add("model.visual.pos_embed.weight", "BF16", {2304, 1152});
  rest.add("mtp.fc.weight", "BF16", {5120, 10240});
  for (const char* n :
       {"mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight",
        "mtp.layers.0.input_layernorm.weight", "mtp.layers.0.post_attention_layernorm.weight"})
    rest.add(n, "BF16", {5120});
  rest.add("mtp.layers.0.mlp.gate_proj.weight", "BF16", {17408, 5120});
  rest.add("mtp.layers.0.mlp.up_proj.weight", "BF16", {17408, 5120});
  rest.add("mtp.layers.0.mlp.down_proj.weight", "BF16", {5120, 17408});
  rest.add("mtp.layers.0.self_attn.q_proj.weight", "BF16", {12288, 5120});
  rest.add("mtp.layers.0.self_attn.k_proj.weight", "BF16", {1024, 5120});
  rest.add("mtp.layers.0.self_attn.v_proj.weight", "BF16", {1024, 5120});
  rest.add("mtp.layers.0.self_attn.o_proj.weight", "BF16", {5120, 6144});
  rest.add("mtp.layers.0.self_attn.q_norm.weight", "BF16", {256});
  rest.add("mtp.layers.0.self_attn.k_norm.weight", "BF16", {256});
  lm.write(dir / "model.safetensors-00001-of-00002.safetensors");
  rest.write(dir / "model.safetensors-00002-of-00002.safetensors");
  fs::copy_file(fixture("Qwen--Qwen3.5-27B/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
}

}  // namespace

TEST_CASE("safetensors headers: Qwen3.5-27B's checkpoint against calc's weight bytes") {
  fs::path dir = testing::scratch_dir("calc-ckpt") / "Qwen--Qwen3.5-27B";
  fs::create_directories(dir);
  write_qwen35_27b(dir);
  std::optional<hf::checkpoint> c = hf::read_checkpoint(dir.string());
  REQUIRE(c.has_value());
  CHECK(c->shards.size() == 2);
  // 27,781,427,952 parameters (the published total) in BF16, plus 2 more bytes for each of the
  // 48 x (48 + 128) FP32 values (A_log, the gated norm): 55,562,872,800 B.
  CHECK(c->tensor_bytes == 2 * 27'781'427'952LL + 48 * (48 + 128) * 2);

  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", dir.string(), "--format", "json"}, out, err) == 0);
  json j = json::parse(out.str());
  // The language model: 26,895,998,464 parameters by hand (the published total less the vision
  // tower's 460,730,096 and the MTP block's 424,699,392), BF16 but A_log and the gated norm,
  // which the headers store F32 (precision.ssm_params): 48 layers x (48 + 128) x 2 B more.
  CHECK(j["total_params"] == 26'895'998'464LL);
  CHECK(j["weight_bytes"] == 2 * 26'895'998'464LL + 48 * (48 + 128) * 2);
  CHECK(j["checkpoint_bytes"] == 55'562'872'800LL);
  // The vision tower is counted from vision_config as a component (460,730,096 BF16
  // parameters), reported apart; the headers store exactly its bytes, so it is no difference.
  CHECK(j["component_bytes"] == 2 * 460'730'096LL);
  CHECK(j["checkpoint_component_bytes"] == 2 * 460'730'096LL);
  REQUIRE(j["checkpoint_differences"].size() == 1);
  CHECK(j["checkpoint_differences"][0]["name"] == "MTP layers");
  CHECK(j["checkpoint_differences"][0]["bytes"] == 2 * 424'699'392LL);
  // checkpoint_bytes = weight_bytes + component_bytes + the named MTP layers, to the byte: the
  // F32 vectors are counted as stored.
  CHECK(j["checkpoint_bytes"].get<std::int64_t>() ==
        j["weight_bytes"].get<std::int64_t>() + j["component_bytes"].get<std::int64_t>() +
            j["checkpoint_differences"][0]["bytes"].get<std::int64_t>());
  CHECK(j["checkpoint_unexplained_bytes"] == 0);
}

TEST_CASE("the index's total_size is checkpoint_bytes when no shard is in the folder") {
  fs::path dir = testing::scratch_dir("calc-ckpt") / "index-only";
  fs::create_directories(dir);
  fs::copy_file(fixture("qwen3-8b.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"metadata": {"total_size": 16381470720}, "weight_map": )"
      << R"({"lm_head.weight": "model-00005-of-00005.safetensors"}})";
  std::optional<hf::checkpoint> c = hf::read_checkpoint((dir / "config.json").string());
  REQUIRE(c.has_value());
  CHECK(c->bytes() == 16'381'470'720);
  CHECK(c->missing_shards == std::vector<std::string>{"model-00005-of-00005.safetensors"});
  hf::checkpoint_comparison cmp = hf::compare_checkpoint(*c, 16'381'470'720, 36, false);
  CHECK(cmp.unexplained_bytes == 0);
  CHECK(cmp.differences.empty());
  CHECK_FALSE(cmp.headers_complete);
}

TEST_CASE("safetensors headers: bad files are one-line errors naming the file") {
  fs::path dir = testing::scratch_dir("calc-ckpt");
  auto error_of = [&](const std::string& bytes) {
    fs::path p = dir / "bad.safetensors";
    std::ofstream(p, std::ios::binary) << bytes;
    try {
      hf::read_safetensors_header(p.string());
    } catch (const spec_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("abc").find("shorter than the 8-byte header length") != std::string::npos);
  // A header length past the limit is refused before anything is allocated.
  CHECK(error_of(std::string("\xff\xff\xff\xff\xff\xff\x00\x00", 8))
            .find("longer than the limit of 100000000") != std::string::npos);
  std::string h = R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 10]}})";
  std::string len(8, '\0');
  len[0] = static_cast<char>(h.size());
  CHECK(error_of(len + h).find("tensor 'w': BF16 x 6 is 12 bytes, but data_offsets span 10") !=
        std::string::npos);
  CHECK(error_of(len).find("the header says") != std::string::npos);
}

TEST_CASE("FP8 block scales: the family's default, unless the safetensors headers say") {
  // Qwen3-30B-A3B-FP8 (quant_method fp8, weight_block_size [128, 128]): Qwen stores the block
  // scales in BF16. Embedding and head 2*151936*2048*2 = 1,244,659,712 B; norms (48*2 + 1)*2048
  // and Q/K norms 48*2*128 in BF16 = 421,888 B; routers 48*128*2048*2 = 25,165,824 B (listed in
  // modules_to_not_convert). FP8 per layer: attention 18,874,368 values + 1,152 scales of
  // 128 x 128, experts 603,979,776 values + 36,864 scales; BF16 scales make each layer
  // 18,874,368 + 603,979,776 + 2 * 38,016 = 622,930,176 B, x48 = 29,900,648,448 B.
  const std::int64_t bf16_scales = 1'244'659'712LL + 421'888 + 25'165'824 + 29'900'648'448LL;
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", fixture("qwen3-30b-a3b-fp8.json"), "--format", "json"}, out,
                  err) == 0);
  CHECK(json::parse(out.str())["weight_bytes"] == bf16_scales);  // 31,170,895,872 B

  // The same config beside a shard whose header stores the scales in FP32: 2 more bytes for
  // each of the 48 x 38,016 scales.
  fs::path dir = testing::scratch_dir("calc-ckpt") / "qwen3-30b-a3b-fp8-f32-scales";
  fs::create_directories(dir);
  fs::copy_file(fixture("qwen3-30b-a3b-fp8.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  header_writer h;
  h.add("model.layers.0.mlp.experts.0.down_proj.weight", "F8_E4M3", {2048, 768});
  h.add("model.layers.0.mlp.experts.0.down_proj.weight_scale_inv", "F32", {16, 6});
  h.write(dir / "model-00001-of-00001.safetensors");
  std::ostringstream out2, err2;
  REQUIRE(run_cli({"params", "--model", dir.string(), "--format", "json"}, out2, err2) == 0);
  CHECK(json::parse(out2.str())["weight_bytes"] == bf16_scales + 48 * 38'016 * 2);
}

TEST_CASE("the headers' weight dtype decides over torch_dtype, and the YAML says so") {
  // Qwen3-8B's config says bfloat16; a checkpoint whose matrices are stored in FP32 is read as
  // fp32 (the model dtype: matrices and norms): 8,190,735,360 parameters x 4 bytes.
  fs::path dir = testing::scratch_dir("calc-ckpt") / "qwen3-8b-f32";
  fs::create_directories(dir);
  fs::copy_file(fixture("qwen3-8b.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  header_writer h;
  h.add("model.embed_tokens.weight", "F32", {151936, 4096});
  h.add("model.layers.0.self_attn.q_proj.weight", "F32", {4096, 4096});
  h.add("model.layers.0.input_layernorm.weight", "BF16", {4096});
  h.write(dir / "model.safetensors");
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.yaml.find("weights: fp32") != std::string::npos);
  CHECK(y.yaml.find("# safetensors headers: 2556428288 of 2556428288 bytes of weight matrices "
                    "are fp32 (torch_dtype says bf16)") != std::string::npos);
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", dir.string(), "--format", "json"}, out, err) == 0);
  // Every tensor in FP32, the norms too (a checkpoint keeps them in its dtype).
  CHECK(json::parse(out.str())["weight_bytes"] == 8'190'735'360LL * 4);
}

TEST_CASE("a published index: Granite-3.1-1B-A400M's total_size is calc's FP32 weight bytes") {
  // ibm-granite/granite-3.1-1b-a400m-instruct (granitemoe, torch_dtype float32, tied): 24 layers
  // of GQA 16/8 x 64 (3,145,728), 32 experts of 3*1024*512 (50,331,648), a router 32*1024 and
  // two norms; the embedding 49155*1024 and the final norm: 1,334,628,352 parameters, 4 bytes
  // each = 5,338,513,408 B, the index's total_size (no shard is in the fixture folder).
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", fixture("ibm-granite--granite-3.1-1b-a400m-instruct"),
                   "--format", "json"},
                  out, err) == 0);
  json j = json::parse(out.str());
  CHECK(j["total_params"] == 1'334'628'352LL);
  CHECK(j["weight_bytes"] == 5'338'513'408LL);
  CHECK(j["checkpoint_bytes"] == 5'338'513'408LL);
  CHECK(j["checkpoint_unexplained_bytes"] == 0);
  CHECK(j["checkpoint_differences"].empty());
  CHECK(j["checkpoint_note"] == "index total_size only: no safetensors file to name the parts");
}

TEST_CASE("stored dtypes of the published listings are the families' defaults") {
  // The routing bias (e_score_correction_bias) is F32 in the tensor listings of
  // Kimi-K2-Instruct, Kimi-K2.5 and GLM-4.7-Flash (tests/fixtures/hf/SOURCES.md), as in
  // DeepSeek-V3's: without headers, the import says router_bias fp32.
  for (const char* folder :
       {"moonshotai--Kimi-K2-Instruct", "nvidia--Kimi-K2.5-NVFP4", "zai-org--GLM-4.7-Flash"}) {
    CAPTURE(folder);
    hf::imported y = hf::import_config(fixture(std::string(folder) + "/config.json"));
    CHECK(y.plain.find("router_bias: fp32") != std::string::npos);
  }
  auto params_json = [](const std::string& model) {
    std::ostringstream out, err;
    REQUIRE(run_cli({"params", "--model", model, "--format", "json"}, out, err) == 0);
    return json::parse(out.str());
  };
  // GLM-4.7-Flash is BF16: 2 B a parameter, and 2 B more for each of its 46 MoE layers' 64
  // F32 routing-bias values.
  json flash = params_json(fixture("zai-org--GLM-4.7-Flash/config.json"));
  CHECK(flash["weight_bytes"] == 2 * flash["total_params"].get<std::int64_t>() + 46 * 64 * 2);
  // Gated DeltaNet's A_log and gated norm: F32 in the Qwen3.5 releases (0.8B, 4B, 27B,
  // 35B-A3B listings), so qwen3_5 and qwen3_5_moe default to it; Qwen3-Next-80B-A3B-Instruct
  // stores both BF16, as its norms, so qwen3_next keeps the norms' format.
  hf::imported q35 = hf::import_config(fixture("Qwen--Qwen3.5-27B/config.json"));
  CHECK(q35.plain.find("ssm_params: fp32") != std::string::npos);
  json dense = params_json(fixture("Qwen--Qwen3.5-27B/config.json"));
  CHECK(dense["weight_bytes"] == 2 * 26'895'998'464LL + 48 * (48 + 128) * 2);
  hf::imported next = hf::import_config(fixture("qwen3-next-80b-a3b.json"));
  CHECK(next.plain.find("ssm_params") == std::string::npos);
}

TEST_CASE("compressed-tensors row scales: the family's default, unless the safetensors headers say") {
  // GLM-4.5-FP8's config beside a shard whose header stores weight_scale [out, 1] in BF16: the
  // 119,262,208 row scales of the main model take 2 bytes each, not the FP32 the listing shows.
  fs::path dir = testing::scratch_dir("calc-ckpt") / "glm-4.5-fp8-bf16-scales";
  fs::create_directories(dir);
  fs::copy_file(fixture("zai-org--GLM-4.5-FP8/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  header_writer h;
  h.add("model.layers.3.mlp.experts.0.down_proj.weight", "F8_E4M3", {5120, 1536});
  h.add("model.layers.3.mlp.experts.0.down_proj.weight_scale", "BF16", {5120, 1});
  h.write(dir / "model-00001-of-00093.safetensors");
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.plain.find("experts: fp8:row:bf16") != std::string::npos);
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", dir.string(), "--format", "json"}, out, err) == 0);
  CHECK(json::parse(out.str())["weight_bytes"] == 354'902'011'520LL - 119'262'208LL * 2);
}
