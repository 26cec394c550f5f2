// Convolution taps and quantised checkpoints (issue 21, "Exact bytes, as stored"): a depthwise
// convolution's taps (conv1d of Mamba, Gated DeltaNet, KDA, short conv) are no Linear, and no
// quantiser calc reads converts them, so an imported quantised hybrid keeps them in the model
// dtype (precision.conv_taps); Qwen3-Next's FP8 release, whose modules_to_not_convert lists each
// layer's conv1d, A_log, dt_bias, in_proj_ba, router and shared-expert gate, reads to its tensor
// listing byte for byte (tests/fixtures/hf/SOURCES.md); a layout only a Linear stores
// (pack-quantized's per-matrix record) never reaches the taps.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/dtype.h"
#include "hf_counts.h"
#include "safetensors_writer.h"
#include "scratch.h"
#include "spec/hf/import.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using testing::fixture;
using testing::header_writer;
using testing::weight_bytes;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fixture's config.json with `quantization_config` added before its closing brace (some
/// fixtures hold Python's Infinity, which calc's reader takes and nlohmann's does not).
std::string with_quant(const std::string& path, const json& quant) {
  std::string text = read_text(path);
  auto close = text.rfind('}');
  return text.substr(0, close) + ", \"quantization_config\": " + quant.dump() + "}\n";
}

testing::model imported(const std::string& json_text) {
  return testing::model::from_text(hf::import_text(json_text, "config.json", "t").plain);
}

/// Bytes of every tensor of that name (all layers).
std::int64_t bytes_of(const testing::model& m, const std::string& name) {
  std::int64_t out = 0;
  for (const tensor& t : model_tensors(m.g))
    if (t.name == name) out += t.bytes().value();
  return out;
}

// llm-compressor's W4A16 (pack-quantized int4, a scale per 128 inputs) over Linear layers.
const json w4a16 = json::parse(R"({"quant_method": "compressed-tensors", "format":
  "pack-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["Linear"],
  "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
  "group_size": 128}}}})");

// llm-compressor's FP8_DYNAMIC: FP8 weights with a scale per output row, dynamic activations.
const json fp8_dynamic = json::parse(R"({"quant_method": "compressed-tensors", "format":
  "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["Linear"],
  "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel"},
  "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
  "dynamic": true}}}})");

}  // namespace

TEST_CASE("compressed-tensors W4A16 of a Gated DeltaNet hybrid keeps the conv taps at BF16") {
  // Qwen3.5-27B: 48 Gated DeltaNet layers, each a depthwise convolution over Q, K and V
  // (2 x 16 x 128 + 48 x 128 = 10,240 channels) of 4 taps. compressed-tensors converts Linear
  // modules only (its config group targets Linear); the taps stay BF16: 10,240 x 4 x 2 B a layer.
  std::string text = with_quant(fixture("Qwen--Qwen3.5-27B/config.json"), w4a16);
  hf::imported y = hf::import_text(text, "config.json", "t");
  CHECK(y.yaml.find("conv_taps: bf16") != std::string::npos);
  testing::model m = testing::model::from_text(y.plain);
  CHECK(m.spec.precision.weights.name == "int4:g128:bf16:matrix:int32x2");
  CHECK(bytes_of(m, "conv1d") == 48 * 10240 * 4 * 2);
  // The projections beside them are int4: in_proj_qkv of 5,120 x 10,240 stores 4 bits a value,
  // a BF16 scale per 128 inputs of each output row and its shape (two int32).
  CHECK(bytes_of(m, "in_proj_qkv") == 48 * (5120LL * 10240 / 2 + 10240LL * (5120 / 128) * 2 + 8));
  // The same taps as the BF16 release stores them.
  testing::model plain = imported(read_text(fixture("Qwen--Qwen3.5-27B/config.json")));
  CHECK(bytes_of(plain, "conv1d") == bytes_of(m, "conv1d"));
}

TEST_CASE("compressed-tensors FP8 per-row of Mamba2 hybrids keeps the conv taps at BF16") {
  // Granite-4.0-H (Mamba2 layers beside attention) and Nemotron-H: FP8_DYNAMIC converts every
  // Linear to fp8:row; the conv1d taps keep the bytes of the unquantised release.
  for (const char* f : {"granite-4.0-h-350m.json", "nemotron-h-56b.json", "bamba-9b.json"}) {
    CAPTURE(f);
    hf::imported y = hf::import_text(with_quant(fixture(f), fp8_dynamic), "config.json", "t");
    CHECK(y.yaml.find("conv_taps: bf16") != std::string::npos);
    testing::model q = testing::model::from_text(y.plain);
    CHECK(q.spec.precision.weights.name.starts_with("fp8:row:"));
    testing::model plain = imported(read_text(fixture(f)));
    CHECK(bytes_of(q, "conv1d") > 0);
    CHECK(bytes_of(q, "conv1d") == bytes_of(plain, "conv1d"));
    // The Mamba2 projections are FP8: fewer bytes than BF16.
    CHECK(bytes_of(q, "in_proj") < bytes_of(plain, "in_proj"));
  }
  // A dense model has no taps: no conv_taps line.
  CHECK(hf::import_text(with_quant(fixture("llama-3.1-70b.json"), fp8_dynamic), "config.json",
                        "t")
            .yaml.find("conv_taps") == std::string::npos);
}

TEST_CASE("Qwen3-Next-80B-A3B-Instruct-FP8 reads to its release's tensor listing") {
  // The release's modules_to_not_convert lists, for each Gated DeltaNet layer, A_log, conv1d,
  // dt_bias, in_proj_ba and the gated norm, for every layer the router and the shared-expert
  // gate, and the MTP block's modules: all stay BF16 (the listing), the rest FP8 with one F32
  // scale per 128 x 128 block.
  hf::imported y =
      hf::import_config(fixture("Qwen--Qwen3-Next-80B-A3B-Instruct-FP8/config.json"));
  CHECK(y.yaml.find("conv_taps: bf16") != std::string::npos);
  CHECK(y.yaml.find("mixer_gates: bf16") != std::string::npos);
  testing::model m = testing::model::from_text(y.plain);
  CHECK(m.spec.precision.attention->name == "fp8:b128x128:fp32");
  CHECK(bytes_of(m, "conv1d") == 36 * 8192 * 4 * 2);        // [8192, 1, 4] BF16 x 36
  CHECK(bytes_of(m, "in_proj_a") + bytes_of(m, "in_proj_b") == 36 * 64 * 2048 * 2);  // in_proj_ba
  // The listing's tensors, layers 0-47, embedding, head and final norm (the MTP block apart):
  const std::int64_t bf = 2, f8 = 1, f32 = 4;
  std::int64_t linear_layer = 32 * bf + 8192 * 4 * bf + 32 * bf + 64 * 2048 * bf  // A_log..ba
                              + 12288 * 2048 * f8 + 96 * 16 * f32                 // in_proj_qkvz
                              + 128 * bf                                          // norm
                              + 2048 * 4096 * f8 + 16 * 32 * f32;                 // out_proj
  std::int64_t expert = 3 * 512 * 2048 * f8 + 3 * 64 * f32;  // gate, up, down and their scales
  std::int64_t every_layer = 2 * 2048 * bf                    // input and post norms
                             + 512 * expert + 512 * 2048 * bf  // experts, router
                             + expert + 2048 * bf;             // shared expert and its gate
  std::int64_t attention_layer = 2 * 256 * bf                            // q_norm, k_norm
                                 + 8192 * 2048 * f8 + 64 * 16 * f32      // q_proj (with gate)
                                 + 2 * (512 * 2048 * f8 + 4 * 16 * f32)  // k_proj, v_proj
                                 + 2048 * 4096 * f8 + 16 * 32 * f32;     // o_proj
  std::int64_t listing = 2 * 151936 * 2048 * bf + 2048 * bf + 36 * linear_layer +
                         48 * every_layer + 12 * attention_layer;
  CHECK(listing == 80372547072);
  CHECK(weight_bytes(m) == listing);
}

TEST_CASE("Qwen3-Next-FP8: kept Gated DeltaNet projections on some layers only are refused") {
  json cfg = json::parse(read_text(fixture("Qwen--Qwen3-Next-80B-A3B-Instruct-FP8/config.json")));
  json& list = cfg["quantization_config"]["modules_to_not_convert"];
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i] == "model.layers.5.linear_attn.in_proj_ba") {
      list.erase(i);
      break;
    }
  std::string e = testing::import_error(cfg.dump(2));
  CHECK(e.find("35 of the 36 Gated DeltaNet layers") != std::string::npos);
  CHECK(e.find("modules_to_not_convert") != std::string::npos);
  // A module of a mixer that is neither a vector, the taps nor a known role stays refused.
  list.push_back("model.layers.0.linear_attn.in_proj_qkvz");
  CHECK(testing::import_error(cfg.dump(2)).find("linear_attn.in_proj_qkvz") != std::string::npos);
}

TEST_CASE("conv taps: the safetensors headers' dtype decides over the model dtype") {
  fs::path dir = testing::scratch_dir("calc-conv-taps") / "qwen3-next-fp8";
  fs::create_directories(dir);
  fs::copy_file(fixture("Qwen--Qwen3-Next-80B-A3B-Instruct-FP8/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  header_writer h;
  h.add("model.layers.0.linear_attn.conv1d.weight", "F32", {8192, 1, 4});
  h.add("model.layers.0.linear_attn.in_proj_qkvz.weight", "F8_E4M3", {12288, 2048});
  h.add("model.layers.0.linear_attn.in_proj_qkvz.weight_scale_inv", "F32", {96, 16});
  h.add("model.embed_tokens.weight", "BF16", {151936, 2048});
  h.write(dir / "model.safetensors");
  hf::imported y = hf::import_config(dir.string());
  CHECK(y.yaml.find("conv_taps: fp32") != std::string::npos);
  CHECK(y.yaml.find("safetensors headers store conv1d as fp32") != std::string::npos);
  testing::model m = testing::model::from_text(y.plain);
  CHECK(bytes_of(m, "conv1d") == 36 * 8192 * 4 * 4);
  fs::remove_all(dir);
}

TEST_CASE("--weights: a Linear-only layout leaves the conv taps, a plain format sets them") {
  precision_spec p;
  p.weights = parse_dtype("bf16");
  p.set_weights(parse_dtype("int4:g32:bf16:matrix:int32x2"));
  CHECK(p.conv_tap_weights()->name == "bf16");
  p.set_weights(parse_dtype("int4:g128:fp16:zero:int4:rowidx:int32"));
  CHECK(p.conv_tap_weights()->name == "bf16");
  p.set_weights(parse_dtype("fp8:row"));
  CHECK(p.conv_tap_weights()->name == "fp8:row");
  p.mixer_gates = parse_dtype("bf16");
  p.set_weights(parse_dtype("fp8"));
  CHECK(p.mixer_gate_weights()->name == "fp8");
  // On a bundled hybrid: --weights with pack-quantized's layout keeps the BF16 taps.
  testing::model q("qwen3.5-27b", {"precision.weights=int4:g32:bf16:matrix:int32x2"});
  testing::model b("qwen3.5-27b");
  CHECK(bytes_of(b, "conv1d") == 48 * 10240 * 4 * 2);
  testing::model w = b;
  w.spec.precision.set_weights(parse_dtype("int4:g32:bf16:matrix:int32x2"));
  testing::model w2 = w;  // rebuilt graph
  CHECK(bytes_of(w2, "conv1d") == 48 * 10240 * 4 * 2);
  // Given as the model's own weights (no conv_taps role), the layout is refused at the taps.
  std::string e;
  try {
    tally_params(q.g);
  } catch (const spec_error& x) {
    e = x.what();
  }
  CHECK(e.find("is not a Linear") != std::string::npos);
  CHECK(e.find("precision.conv_taps") != std::string::npos);
}

TEST_CASE("precision.conv_taps and mixer_gates: read, and bad values refused at the field") {
  const std::string base = R"(schema: 1
name: t
vocab: 1000
hidden: 256
precision:
  weights: fp8:row
)";
  const std::string layers = R"(layers:
  count: 2
  attention: {kind: gated_deltanet, qk_heads: 2, v_heads: 4, key_dim: 64, value_dim: 64,
    conv_kernel: 4}
  ffn: {kind: swiglu, intermediate: 512}
)";
  testing::model m = testing::model::from_text(base + "  conv_taps: bf16\n  mixer_gates: bf16\n" +
                                               layers);
  // in_proj_a and in_proj_b (256 x 4 each) in BF16 beside fp8:row projections; taps BF16.
  CHECK(bytes_of(m, "conv1d") == 2 * (2 * 2 * 64 + 4 * 64) * 4 * 2);
  CHECK(bytes_of(m, "in_proj_a") == 2 * 256 * 4 * 2);
  CHECK(testing::error_of(base + "  conv_taps: int4:g32:bf16:matrix:int32x2\n" + layers)
            .find("conv_taps") != std::string::npos);
  CHECK(testing::error_of(base + "  conv_taps: int4:g32:bf16:matrix:int32x2\n" + layers)
            .find("not a Linear") != std::string::npos);
  CHECK(testing::error_of(base + "  conv_taps: int4:g128:rowidx:int32\n" + layers)
            .find("a value per input row") != std::string::npos);
  CHECK(testing::error_of(base + "  mixer_gates: bogus\n" + layers).find("mixer_gates") !=
        std::string::npos);
  CHECK(testing::error_of(base + "  conv_tap: bf16\n" + layers).find("conv_tap") !=
        std::string::npos);
}
