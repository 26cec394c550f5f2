// compressed-tensors integer checkpoints (issue 21, "Exact bytes, as stored"): pack-quantized
// int4/int8 (llm-compressor's W4A16 and W8A16, Moonshot's Kimi-K2.5 release) and int-quantized
// int8 (W8A8) read onto calc's grouped and per-row integer formats, with pack-quantized's
// weight_shape (two int32 a matrix) counted per matrix; the scale dtype from the safetensors
// headers when a folder has them; and the moonshotai/Kimi-K2.5 bundle against the sum of its
// release's tensors (tests/fixtures/hf/SOURCES.md).
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "hf_counts.h"
#include "scratch.h"
#include "spec/hf/import.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::params;
using testing::state;
using testing::weight_bytes;

// A small Llama as llm-compressor quantises it; `weights` is the config group's weights object
// and `ignore` the modules left unquantised.
std::string llama(const std::string& weights, const std::string& format = "pack-quantized",
                  const std::string& ignore = R"(["lm_head"])") {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
    "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "vocab_size": 1000, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "compressed-tensors", "format": ")" +
         format + R"(", "ignore": )" + ignore + R"(, "kv_cache_scheme": null,
      "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": null,
      "weights": )" +
         weights + "}}}}";
}

std::string weights_format(const std::string& json) {
  return testing::model::from_text(hf::import_text(json, "config.json", "t").plain)
      .spec.precision.weights.name;
}

// One pack-quantized int4 matrix of `out` x `in` as Kimi-K2.5 stores it: weight_packed int32
// [out, in / 8], weight_scale BF16 [out, in / 32], weight_shape int32 [2].
std::int64_t int4_g32(std::int64_t out, std::int64_t in) {
  return out * (in / 8) * 4 + out * (in / 32) * 2 + 8;
}

}  // namespace

TEST_CASE("a per-matrix record: int4:g32:bf16:matrix:int32x2 parses and counts 8 B a matrix") {
  dtype t = parse_dtype("int4:g32:bf16:matrix:int32x2");
  CHECK(t.bits == 4);
  CHECK(t.group == 32);
  CHECK(t.scale_bits == 16);
  CHECK(t.zero_bits == 0);
  CHECK(t.matrix_bits == 64);
  CHECK(t.matrix_bytes(3).value() == 24);
  dtype r = parse_dtype("int8:row:bf16:matrix:int32x2");
  CHECK(r.block_rows == 1);
  CHECK(r.block_cols == 0);
  CHECK(r.matrix_bits == 64);
  CHECK(parse_dtype("int4:g128:bf16:matrix:int32x2:rowidx:int32").row_bits == 32);
  CHECK(parse_dtype("int8:row:fp32").matrix_bits == 0);
  CHECK_THROWS(parse_dtype("int4:g32:bf16:matrix"));
  CHECK_THROWS(parse_dtype("int4:g32:bf16:matrix:int32"));
  CHECK_THROWS(parse_dtype("int4:g32:bf16:matrix:int32x99"));
  CHECK_THROWS(parse_dtype("int8:row:bf16:matrix:int32x2:fp32"));
  CHECK_THROWS(parse_dtype("int4:g32:matrix:int32x2*8+bf16*8"));
}

TEST_CASE("compressed-tensors pack-quantized W4A16 reads as int4 groups plus weight_shape") {
  std::string w4a16 = llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 128, "actorder": "static", "dynamic": false})");
  hf::imported y = hf::import_text(w4a16, "config.json", "t");
  CHECK(y.plain.find("weights: int4:g128:bf16:matrix:int32x2") != std::string::npos);
  CHECK(y.plain.find("head: bf16") != std::string::npos);
  testing::model m = testing::model::from_text(y.plain);
  // Per layer (inputs x outputs): q 256x256, k and v 256x128, o 256x256, gate and up 256x512,
  // down 512x256: seven matrices of 589,824 values in all; each stores values at 4 bits, a BF16
  // scale per 128 inputs of each output row, and its shape (2 int32). Plus two norms, the BF16
  // embedding and head and the final norm.
  std::int64_t values = 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512;
  // Scales, out x in / 128: q 256 x 2, k and v 128 x 2, o 256 x 2, gate and up 512 x 2, down
  // 256 x 4.
  std::int64_t scales = 256 * 2 + 2 * 128 * 2 + 256 * 2 + 2 * 512 * 2 + 256 * 4;
  CHECK(values == 589'824);
  CHECK(scales == 4'608);
  std::int64_t layer = values / 2 + scales * 2 + 7 * 8 + 2 * 256 * 2;
  CHECK(weight_bytes(m) == 2 * layer + 2 * 1000 * 256 * 2 + 256 * 2);
  // The weight_shape tensors alone: 2 layers x 7 matrices x 8 B.
  std::string without = y.plain;
  without.replace(without.find("int4:g128:bf16:matrix:int32x2"), 29, "int4:g128:bf16");
  CHECK(weight_bytes(m) - weight_bytes(testing::model::from_text(without)) == 2 * 7 * 8);

  // actorder "group" stores weight_g_idx int32 [in] per matrix.
  CHECK(weights_format(llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 128, "actorder": "group"})")) ==
        "int4:g128:bf16:matrix:int32x2:rowidx:int32");
  // W8A16 per channel: int8 packed four a word, a scale per output row.
  CHECK(weights_format(llama(R"({"num_bits": 8, "type": "int", "symmetric": true,
      "strategy": "channel"})")) == "int8:row:bf16:matrix:int32x2");
  // W8A8 int-quantized: int8 values as they are (no packing, no weight_shape); the dynamic
  // per-token activations store nothing.
  CHECK(weights_format(llama(R"({"num_bits": 8, "type": "int", "symmetric": true,
      "strategy": "channel"})",
                             "int-quantized")) == "int8:row:bf16");
  // A scale_dtype the config names decides over the model dtype.
  CHECK(weights_format(llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 32, "scale_dtype": "torch.float16"})")) ==
        "int4:g32:fp16:matrix:int32x2");
}

TEST_CASE("compressed-tensors integer schemes calc does not map are refused at their field") {
  using testing::import_error;
  std::string asym = import_error(llama(R"({"num_bits": 4, "type": "int", "symmetric": false,
      "strategy": "group", "group_size": 128})"));
  CHECK(asym.find("symmetric") != std::string::npos);
  CHECK(asym.find("weight_zero_point") != std::string::npos);
  CHECK(import_error(llama(R"({"num_bits": 3, "type": "int", "strategy": "group",
      "group_size": 128})"))
            .find("num_bits") != std::string::npos);
  CHECK(import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "tensor"})"))
            .find("strategy") != std::string::npos);
  CHECK(import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group"})"))
            .find("group_size") != std::string::npos);
  CHECK(import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128})",
                           "marlin-24"))
            .find("'marlin-24' is not mapped") != std::string::npos);
  CHECK(import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128})",
                           "int-quantized"))
            .find("num_bits") != std::string::npos);
  // An ignore pattern that names part of a role is still refused, not guessed.
  CHECK(import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128})",
                           "pack-quantized", R"(["lm_head", "re:.*q_proj.*"])"))
            .find("re:.*q_proj.*") != std::string::npos);
}

TEST_CASE("kimi-k2.5 bundle: int4 routed experts, BF16 elsewhere, as the release stores it") {
  // Imported from moonshotai/Kimi-K2.5's config (tests/fixtures/hf/moonshotai--Kimi-K2.5): the
  // ignore list keeps self_attn, the shared experts, layer 0's dense MLP and lm_head in BF16;
  // the router (DeepSeek's bare gate weight) is no Linear and stays BF16 unlisted.
  hf::imported y = hf::import_config(fixture("moonshotai--Kimi-K2.5"));
  CHECK(y.plain.find("experts: int4:g32:bf16:matrix:int32x2") != std::string::npos);
  // Only the experts are named: the kept roles take `weights`, the model dtype.
  CHECK(y.plain.find("shared_experts: int4") == std::string::npos);
  CHECK(y.plain.find("dense_ffn: int4") == std::string::npos);
  testing::model imported = testing::model::from_text(y.yaml);
  CHECK(imported.spec.precision.weights.name == "bf16");
  CHECK(imported.spec.precision.attention_weights()->name == "bf16");
  CHECK(imported.spec.precision.shared_expert_weights()->name == "bf16");
  CHECK(imported.spec.precision.dense_ffn_weights()->name == "bf16");
  CHECK(imported.spec.precision.expert_weights()->name == "int4:g32:bf16:matrix:int32x2");
  testing::model m("kimi-k2.5");
  // The language model's parameters: Kimi-K2.5's "Language model parameters" (SOURCES.md).
  CHECK(params(m) == 1'026'408'232'448);
  CHECK(params(imported) == params(m));
  // The release's tensors (a listing of every tensor's shape and dtype, SOURCES.md) sum to
  // 595,148,192,736 B (the listing's 554.27 GB, GiB): the MoonViT tower 833,732,064 B and its
  // projector 108,555,776 B (BF16, not counted by calc) and the language model below.
  const std::int64_t d = 7168;
  std::int64_t attention = (576 * d + 16384LL * 512 + d * 8192 + 1536 * d + 12288LL * 1536) * 2;
  std::int64_t norms = (2 * d + 512 + 1536) * 2;
  std::int64_t dense = 3 * 18432LL * d * 2;
  std::int64_t experts = 384 * (2 * int4_g32(2048, d) + int4_g32(d, 2048));
  std::int64_t moe = experts + 3 * 2048LL * d * 2 + 384 * d * 2 + 384 * 4;  // shared, gate, bias
  std::int64_t stored = 61 * (attention + norms) + dense + 60 * moe + 2 * 163840LL * d * 2 + d * 2;
  CHECK(stored == 595'148'192'736 - 833'732'064 - 108'555'776);
  // Exact, the 60 x 384 x 3 weight_shape tensors (552,960 B) included.
  CHECK(weight_bytes(m) == stored);
  CHECK(weight_bytes(imported) == stored);
  // --model moonshotai/Kimi-K2.5 resolves to the bundle (its source names the repository).
  CHECK(std::filesystem::path(resolve_model_path("moonshotai/Kimi-K2.5")).stem() == "kimi-k2.5");
  // MLA compact cache in BF16: (512 + 64) x 2 B x 61 layers = 70,272 B a token.
  CHECK(state(m, 8192) == 70'272LL * 8192);
  CHECK(state(m, 131072) == 70'272LL * 131072);
}

TEST_CASE("compressed-tensors scales: the safetensors headers decide their dtype") {
  // A Qwen3 FP8 block checkpoint (compressed-tensors strategy block) whose config names no
  // scale_dtype: Qwen's documented default is BF16, but this folder's header stores the
  // weight_scale grid F32, and the headers decide.
  std::filesystem::path dir = testing::scratch_dir("calc-bytes") / "ct-block-headers";
  std::filesystem::create_directories(dir);
  std::string config = R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 64, "num_hidden_layers": 2, "vocab_size": 1000,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "compressed-tensors",
    "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block",
    "block_structure": [128, 128]}}}}})";
  std::ofstream(dir / "config.json") << config;
  hf::imported plain = hf::import_text(config, "config.json", "t");
  CHECK(plain.plain.find("weights: fp8:b128x128:bf16") != std::string::npos);
  std::string header =
      R"({"model.layers.0.mlp.down_proj.weight_scale": {"dtype": "F32", "shape": [2, 4],)"
      R"( "data_offsets": [0, 32]}})";
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.plain.find("weights: fp8:b128x128:fp32") != std::string::npos);
}

TEST_CASE("compressed-tensors actorder: true is group (an int32 g_idx per input row), other types "
          "are refused") {
  CHECK(weights_format(llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 128, "actorder": true})")) ==
        weights_format(llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 128, "actorder": "group"})")));
  CHECK(weights_format(llama(R"({"num_bits": 4, "type": "int", "symmetric": true,
      "strategy": "group", "group_size": 128, "actorder": false})"))
            .find("rowidx") == std::string::npos);
  CHECK(testing::import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128, "actorder": 1})"))
            .find("actorder") != std::string::npos);
  CHECK(testing::import_error(llama(R"({"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128, "symmetric": "yes"})"))
            .find("symmetric") != std::string::npos);
}

namespace {

/// A folder holding `config` and one safetensors header listing `tensors` (name, dtype, shape).
std::filesystem::path folder_with_header(
    const std::string& name, const std::string& config,
    const std::vector<std::tuple<std::string, std::string, std::vector<std::int64_t>>>& tensors) {
  std::filesystem::path dir = testing::scratch_dir("calc-bytes") / name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  std::string header = "{";
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    std::int64_t n = 1;
    std::string shape;
    for (std::int64_t s : std::get<2>(t)) {
      n *= s;
      shape += (shape.empty() ? "" : ", ") + std::to_string(s);
    }
    const std::string& dtype = std::get<1>(t);
    std::int64_t bytes = n * (dtype == "I32" || dtype == "F32" ? 4 : dtype == "I8" ? 1 : 2);
    header += (offset == 0 ? "\"" : ", \"") + std::get<0>(t) + "\": {\"dtype\": \"" + dtype +
              "\", \"shape\": [" + shape + "], \"data_offsets\": [" + std::to_string(offset) +
              ", " + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  return dir;
}

}  // namespace

TEST_CASE("compressed-tensors asymmetric pack-quantized: zero points as the headers pack them") {
  // compressed-tensors packs an asymmetric weight's zero points int32 along the output rows
  // (pack_to_int32(zero_point, bits, packed_dim=0)): q_proj of 256 x 256 in int4 groups of 128
  // stores weight_packed I32 [256, 32], weight_scale BF16 [256, 2], weight_zero_point I32
  // [32, 2] (256 rows / 8 a word), weight_shape I32 [2].
  std::string w4a16_asym = llama(R"({"num_bits": 4, "type": "int", "symmetric": false,
      "strategy": "group", "group_size": 128})");
  std::filesystem::path dir =
      folder_with_header("ct-asym-packed", w4a16_asym,
                         {{"model.layers.0.self_attn.q_proj.weight_packed", "I32", {256, 32}},
                          {"model.layers.0.self_attn.q_proj.weight_scale", "BF16", {256, 2}},
                          {"model.layers.0.self_attn.q_proj.weight_zero_point", "I32", {32, 2}},
                          {"model.layers.0.self_attn.q_proj.weight_shape", "I32", {2}}});
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.plain.find("weights: int4:g128:bf16:zero:int4:matrix:int32x2") != std::string::npos);
  testing::model m = testing::model::from_text(y.plain);
  // One q_proj: 256 x 256 / 2 B values + 512 scales x 2 B + 512 zeros x 0.5 B + 8 B.
  for (const tensor& t : model_tensors(m.g))
    if (t.name == "q_proj")
      CHECK(t.bytes().value() == 256 * 256 / 2 + 256 * 2 * 2 + 32 * 2 * 4 + 8);
  // Asymmetric per-row (channel) weights: a zero per row beside each scale.
  std::string w8_channel = llama(R"({"num_bits": 8, "type": "int", "symmetric": false,
      "strategy": "channel"})");
  std::filesystem::path dir8 = folder_with_header(
      "ct-asym-channel", w8_channel,
      {{"model.layers.0.self_attn.q_proj.weight_zero_point", "I32", {64, 1}}});
  CHECK(hf::import_config(dir8.string()).plain.find("weights: int8:row:bf16:zero:int8:matrix:"
                                                    "int32x2") != std::string::npos);
  CHECK(parse_dtype("int8:row:bf16:zero:int8:matrix:int32x2").zero_bits == 8);
  CHECK(parse_dtype("int4:row:zero").zero_bits == 16);
  CHECK_THROWS(parse_dtype("int4:row:bf16:zero:bogus"));
  CHECK_THROWS(parse_dtype("int4:row:bf16:matrix:int32x2:zero"));
  // Without headers the layout is unknown; the early unpacked layout (I8, dropped when all zero)
  // cannot be one format per role.
  std::string none = testing::import_error(w4a16_asym);
  CHECK(none.find("safetensors headers") != std::string::npos);
  CHECK(none.find("symmetric") != std::string::npos);
  std::filesystem::path old = folder_with_header(
      "ct-asym-int8", w4a16_asym,
      {{"model.layers.0.self_attn.q_proj.weight_zero_point", "I8", {256, 2}}});
  std::string e;
  try {
    hf::import_config(old.string());
  } catch (const spec_error& x) {
    e = x.what();
  }
  CHECK(e.find("I8") != std::string::npos);
  // int-quantized (W8A8) asymmetric stays refused.
  CHECK(testing::import_error(llama(R"({"num_bits": 8, "type": "int", "symmetric": false,
      "strategy": "channel"})",
                                    "int-quantized"))
            .find("int-quantized") != std::string::npos);
  for (const auto& d : {dir, dir8, old}) std::filesystem::remove_all(d);
}
