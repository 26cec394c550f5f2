// Vision towers counted as a component (src/spec/hf/vision.cpp, src/tally/component.cpp): each
// family's tower from its vision_config, pinned against the published total of the whole
// checkpoint (text model + tower), and reported apart from the text model's totals.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "common/error.h"
#include "hf_counts.h"
#include "scratch.h"
#include "spec/component_reader.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"
#include "tally/component.h"

using namespace calc;
namespace fs = std::filesystem;

namespace {

using testing::fixture;
using testing::state;

/// A model with the components its file holds (component_reader.h), as the commands read them.
struct model_with_components {
  testing::model m;
  std::vector<component_spec> components;
  explicit model_with_components(const std::string& path)
      : m(path),
        components(read_model_components(resolve_model_path(path), m.spec.precision.embedding)) {}
  model_with_components(const std::string& yaml, const std::string& file)
      : m(testing::model::from_text(yaml)),
        components(read_model_components_text(yaml, file, m.spec.precision.embedding)) {}
};

/// The parameters of a model's components (0 when it has none).
std::int64_t vision(const model_with_components& w) {
  checked n;
  for (const component_spec& c : w.components) n += tally_component(c).params;
  return n.value();
}
std::int64_t params(const model_with_components& w) { return testing::params(w.m); }

model_with_components from_json(const std::string& json) {
  return model_with_components(hf::import_text(json, "config.json", "t").plain, "config.json");
}

model_with_components from_yaml(const std::string& yaml) {
  return model_with_components(yaml, "test.yaml");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("vision qwen2_vl / qwen2_5_vl: the ViT and patch merger from vision_config's defaults") {
  // Qwen2-VL-7B-Instruct, published 8,291,375,616 (SOURCES.md): the fine-tune's vision_config
  // gives only in_chans and spatial_patch_size; the rest are Qwen2VLVisionConfig's defaults
  // (depth 32, embed_dim 1280, mlp_ratio 4, num_heads 16, merge 2, temporal 2, hidden_size
  // 3584). Patch embedding 1,505,280, 32 blocks of 19,677,440, merger 44,575,744.
  model_with_components q2(fixture("qwen2-vl-7b-instruct-finetune.json"));
  REQUIRE(q2.components.size() == 1);
  CHECK(vision(q2) == 675'759'104);
  CHECK(params(q2) + vision(q2) == 8'291'375'616);
  component_tally t = tally_component(q2.components[0]);
  CHECK(t.parts[0].params.value() == 1'505'280);
  CHECK(t.parts[1].params.value() == 32LL * 19'677'440);
  CHECK(t.parts[2].params.value() == 44'575'744);
  CHECK(t.bytes.value() == 2 * 675'759'104LL);  // torch_dtype bfloat16
  // Qwen2.5-VL-7B-Instruct, published 8,292,166,656: RMSNorms and a gated MLP with biases.
  model_with_components q25(fixture("Qwen--Qwen2.5-VL-7B-Instruct"));
  CHECK(vision(q25) == 676'550'144);
  CHECK(params(q25) + vision(q25) == 8'292'166'656);
  // No KV cache: the state is the text model's alone (57,344 B a token, as before).
  CHECK(state(q25.m, 8192) == 57'344LL * 8192);
}

TEST_CASE("vision qwen3_vl / qwen3_vl_moe: position table, merger and DeepStack mergers") {
  struct row {
    const char* fixture;
    std::int64_t tower, total;
  };
  // The published totals of SOURCES.md (Hub and provider counts of the whole checkpoint).
  for (const row& r : {row{"Qwen--Qwen3-VL-2B-Instruct", 406'957'056, 2'127'532'032},
                       row{"Qwen--Qwen3-VL-4B-Instruct", 415'347'712, 4'437'815'808},
                       row{"Qwen--Qwen3-VL-8B-Instruct", 576'388'336, 8'767'123'696},
                       row{"Qwen--Qwen3-VL-30B-A3B-Instruct", 538'631'408, 31'070'754'032},
                       row{"Qwen--Qwen3-VL-235B-A22B-Instruct", 576'388'336, 235'670'022'896}}) {
    CAPTURE(r.fixture);
    model_with_components m(fixture(r.fixture));
    CHECK(vision(m) == r.tower);
    CHECK(params(m) + vision(m) == r.total);
  }
  // The 8B by part: patch 3*2*16*16*1152 + 1152 and 2304 positions; 27 blocks of 15,239,504;
  // the merger 40,119,040 and three DeepStack mergers of 40,125,952.
  model_with_components b8(fixture("Qwen--Qwen3-VL-8B-Instruct"));
  component_tally t = tally_component(b8.components[0]);
  CHECK(t.parts[0].params.value() == 3LL * 2 * 16 * 16 * 1152 + 1152 + 2304LL * 1152);
  CHECK(t.parts[1].params.value() == 27LL * 15'239'504);
  CHECK(t.parts[2].params.value() == 40'119'040 + 3LL * 40'125'952);
}

TEST_CASE("vision qwen3_5: Qwen3-VL's tower without DeepStack (Qwen3.5-27B: 460,730,096)") {
  // Published 27,781,427,952 = language model 26,895,998,464 + tower 460,730,096 + the MTP
  // block 424,699,392 (SOURCES.md; the tensor listing hf_checkpoint_test.cpp writes).
  model_with_components m(fixture("Qwen--Qwen3.5-27B"));
  CHECK(vision(m) == 460'730'096);
  CHECK(params(m) + vision(m) + 424'699'392 == 27'781'427'952);
  // A DeepStack list on a Qwen3.5 tower is not read: not counted, and said.
  nlohmann::json c = read_json(fixture("Qwen--Qwen3.5-27B/config.json"));
  c["vision_config"]["deepstack_visual_indexes"] = {8, 16, 24};
  hf::imported i = hf::import_text(c.dump(), "config.json", "t");
  CHECK(i.yaml.find("# Not counted: the vision tower (vision_config): "
                    "vision_config.deepstack_visual_indexes lists DeepStack layers") !=
        std::string::npos);
  CHECK(i.yaml.find("components:") == std::string::npos);
}

TEST_CASE("vision gemma3: SigLIP without its head, and the RMSNorm + matrix projector") {
  // gemma-3-27b-it, published 27,432,406,640 = language model 27,009,346,304 + SigLIP
  // 416,866,032 + projector 1152 x 5376 + 1152 (SOURCES.md).
  model_with_components g27(fixture("google--gemma-3-27b-it"));
  CHECK(vision(g27) == 416'866'032 + 1152LL * 5376 + 1152);
  CHECK(params(g27) + vision(g27) == 27'432'406'640);
  // gemma-3-4b-it: the same tower, the projector onto 2560: the card's 4.3B, 4,300,079,472.
  model_with_components g4(fixture("google--gemma-3-4b-it"));
  CHECK(params(g4) + vision(g4) == 4'300'079'472);
  // gemma-3-12b-it: 12,187,325,040.
  model_with_components g12(fixture("google--gemma-3-12b-it"));
  CHECK(params(g12) + vision(g12) == 12'187'325'040);
  // A SigLIP with its pooling head (vision_use_head absent: SiglipVisionTransformer builds it)
  // is not read: not counted, and the header says why.
  nlohmann::json c = read_json(fixture("google--gemma-3-4b-it/config.json"));
  c["vision_config"].erase("vision_use_head");
  hf::imported i = hf::import_text(c.dump(), "config.json", "t");
  CHECK(i.yaml.find("# Not counted: the vision tower and projector (vision_config): SigLIP's "
                    "pooling head (default of SiglipVisionConfig (vision_config.vision_use_head "
                    "absent)) is not read.") != std::string::npos);
}

TEST_CASE("vision mistral3: Pixtral and the patch-merger projector (Mistral Small 3.x 24B)") {
  // KerasHub's mistral3 presets give 24,011,361,280 parameters for Mistral Small 3.1/3.2 24B
  // (SOURCES.md) = language model 23,572,403,200 + Pixtral 403,305,472 (patch 3*14*14*1024,
  // ln_pre, 24 blocks of 16,779,264) + projector 35,652,608 (norm 1024, merging 4096 x 1024,
  // linear_1 1024 x 5120, linear_2 5120 x 5120, no biases).
  model_with_components m(fixture("mistral-small-3.2-24b.json"));
  CHECK(params(m) == 23'572'403'200);
  component_tally t = tally_component(m.components[0]);
  CHECK(t.parts[0].params.value() == 3LL * 14 * 14 * 1024 + 1024);
  CHECK(t.parts[1].params.value() == 24LL * 16'779'264);
  CHECK(t.parts[2].params.value() == 35'652'608);
  CHECK(params(m) + vision(m) == 24'011'361'280);
}

TEST_CASE("vision llama4: Scout's and Maverick's tower from the published vision_config") {
  // The fixtures carry the published vision_config (SOURCES.md). By tensor, as a model report
  // lists Scout's vision modules: patch 827,904, positions 812,416, class 1,408, q/k/v/o
  // 1,982,464 + 1,408 each, fc1 7,929,856 + 5,632, fc2 7,929,856 + 1,408, adapter fc1
  // 23,068,672 and fc2 16,777,216, projector 20,971,520.
  model_with_components scout(fixture("meta-llama--Llama-4-Scout-17B-16E-Instruct"));
  REQUIRE(scout.components.size() == 1);
  component_tally t = tally_component(scout.components[0]);
  CHECK(t.parts[0].params.value() == 827'904 + 812'416 + 1'408 + 2 * 1'408);
  CHECK(t.parts[1].params.value() == 34LL * 23'807'872 + 2 * 1'408);
  CHECK(t.parts[2].params.value() == 23'068'672 + 16'777'216 + 20'971'520);
  CHECK(vision(scout) == 871'932'416);
  CHECK(t.bytes.value() == 2 * 871'932'416LL);  // torch_dtype bfloat16
  // The Hub's count for meta-llama/Llama-4-Scout-17B-16E-Instruct: 108,641,793,536.
  CHECK(params(scout) + vision(scout) == 108'641'793'536);
  // Maverick: the same tower; Fireworks bills Llama 4 Maverick as 401,583,781,376 parameters.
  model_with_components maverick(fixture("meta-llama--Llama-4-Maverick-17B-128E-Instruct"));
  CHECK(vision(maverick) == 871'932'416);
  CHECK(params(maverick) + vision(maverick) == 401'583'781'376);
  // The bundles are the imports of these fixtures: the tower is a component there too, and the
  // header says it is counted apart.
  for (const char* name : {"llama-4-scout", "llama-4-maverick"}) {
    CAPTURE(name);
    model_with_components bundled(name);
    CHECK(vision(bundled) == 871'932'416);
  }
  hf::imported y = hf::import_config(fixture("meta-llama--Llama-4-Scout-17B-16E-Instruct"));
  CHECK(y.yaml.find("# Counted apart: the vision tower and projector (vision_config)") !=
        std::string::npos);
  // A copy without vision_config (as the fixture was abridged before) counts none, and says so.
  nlohmann::json c = read_json(fixture("meta-llama--Llama-4-Scout-17B-16E-Instruct/config.json"));
  c.erase("vision_config");
  hf::imported abridged = hf::import_text(c.dump(), "config.json", "t");
  CHECK(abridged.yaml.find("# Not counted: the vision tower and projector: the file has no "
                           "vision_config.") != std::string::npos);
  CHECK(from_json(c.dump()).components.empty());
}

TEST_CASE("vision kimi_k25: MoonViT and its patch merger (Kimi-K2.5: 1,026,879,376,368)") {
  // The card's whole checkpoint = language model 1,026,408,232,448 + MoonViT 416,866,032 +
  // PatchMergerMLP 54,277,888 (SOURCES.md). By tensor (the release's listing): patch_embed.proj
  // 1152 x 3 x 14 x 14 + bias, pos_emb 64 x 64 x 1152; 27 blocks of wqkv 3456 x 1152, wo, fc0,
  // fc1 with biases and two LayerNorms (15,239,504); final_layernorm; pre_norm 1152 with bias,
  // proj.0 4608 x 4608 and proj.2 7168 x 4608 with biases.
  for (const char* folder : {"moonshotai--Kimi-K2.5", "nvidia--Kimi-K2.5-NVFP4"}) {
    CAPTURE(folder);
    model_with_components m(fixture(folder));
    REQUIRE(m.components.size() == 1);
    component_tally t = tally_component(m.components[0]);
    CHECK(t.parts[0].params.value() == 1152LL * 3 * 14 * 14 + 1152 + 64LL * 64 * 1152);
    CHECK(t.parts[1].params.value() == 27LL * 15'239'504 + 2 * 1152);
    CHECK(t.parts[2].params.value() == 54'277'888);
    CHECK(vision(m) == 416'866'032 + 54'277'888);
    CHECK(params(m) + vision(m) == 1'026'879'376'368);
    // BF16 in both releases: the int4 release's listing stores the tower's 833,732,064 B and
    // the projector's 108,555,776 B, although its quantisation config ignores no vision module
    // (kimi_k25's vision_unquantised_method); the NVFP4 release excludes both roots by name.
    CHECK(m.components[0].weights.name == "bf16");
    CHECK(t.bytes.value() == 833'732'064 + 108'555'776);
  }
  // The bypass is the compressed-tensors release's: under another method the exclusion lists
  // must cover the tower, as for every other family.
  nlohmann::json fp8 = read_json(fixture("moonshotai--Kimi-K2.5/config.json"));
  fp8["quantization_config"] = {{"quant_method", "fp8"},
                                {"activation_scheme", "dynamic"},
                                {"weight_block_size", {128, 128}},
                                {"modules_to_not_convert", {"lm_head"}}};
  hf::imported left = hf::import_text(fp8.dump(), "config.json", "t");
  CHECK(left.yaml.find("# Not counted: the vision tower and projector (vision_config): the "
                       "quantisation config does not exclude `vision_tower`") != std::string::npos);
  CHECK(from_yaml(left.plain).components.empty());
  fp8["quantization_config"]["modules_to_not_convert"] = {"lm_head", "vision_tower",
                                                          "mm_projector"};
  CHECK(vision(from_json(fp8.dump())) == 416'866'032 + 54'277'888);
  model_with_components bundled("kimi-k2.5");
  CHECK(vision(bundled) == 416'866'032 + 54'277'888);
  // The projector as modeling_kimi_k25.py builds each mm_projector_type: `mlp` is a LayerNorm
  // and two Linears from mm_hidden_size; `identity` has no weights.
  nlohmann::json c = read_json(fixture("moonshotai--Kimi-K2.5/config.json"));
  c["vision_config"]["mm_projector_type"] = "mlp";
  CHECK(tally_component(from_json(c.dump()).components[0]).parts[2].params.value() ==
        2 * 1152 + 1152LL * 7168 + 7168 + 7168LL * 7168 + 7168);
  c["vision_config"]["mm_projector_type"] = "identity";
  CHECK(tally_component(from_json(c.dump()).components[0]).parts[2].params.value() == 0);
  // Layouts the reference raises on are errors at their field, never a guess.
  c["vision_config"]["mm_projector_type"] = "patchmerger";
  c["vision_config"]["pos_emb_type"] = "rope";
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.pos_emb_type: 'rope' is not a layout calc reads (expected "
            "divided_fixed)") != std::string::npos);
  c["vision_config"]["pos_emb_type"] = "divided_fixed";
  c["vision_config"]["merge_kernel_size"] = {2};
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.merge_kernel_size: expected two positive sides") !=
        std::string::npos);
  c["vision_config"]["merge_kernel_size"] = {2, 2};
  c["vision_config"].erase("vt_num_hidden_layers");
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.vt_num_hidden_layers: missing required field") != std::string::npos);
}

TEST_CASE("vision llava: CLIP ViT-L/14-336 and the projector around a llama text model") {
  // llava-hf/llava-1.5-7b-hf, 7,063,427,072 (SOURCES.md): the llama text model from
  // LlamaConfig's defaults where text_config is silent (hidden 4096, intermediate 11008, 32
  // layers, 32 heads; vocab 32064): 2 x 32064 x 4096 + 32 x 202,383,360 + 4096.
  model_with_components m(fixture("llava-hf--llava-1.5-7b-hf"));
  CHECK(params(m) == 2 * 32064LL * 4096 + 32 * 202'383'360LL + 4096);
  CHECK(m.m.spec.hidden == 4096);
  REQUIRE(m.components.size() == 1);
  component_tally t = tally_component(m.components[0]);
  // Patch 3 x 14 x 14 x 1024 (no bias), class 1024, 577 positions, pre_layrnorm; 24 blocks of
  // 12,596,224; post_layernorm; linear_1 1024 x 4096 and linear_2 4096 x 4096 with biases.
  CHECK(t.parts[0].params.value() == 3 * 14 * 14 * 1024 + 1024 + 577 * 1024 + 2 * 1024);
  CHECK(t.parts[1].params.value() == 24LL * 12'596'224 + 2 * 1024);
  CHECK(t.parts[2].params.value() == 1024LL * 4096 + 4096 + 4096LL * 4096 + 4096);
  CHECK(vision(m) == 303'507'456 + 20'979'712);
  CHECK(params(m) + vision(m) == 7'063'427'072);
  CHECK(t.bytes.value() == 2 * vision(m));  // torch_dtype float16
  hf::imported y = hf::import_config(fixture("llava-hf--llava-1.5-7b-hf"));
  CHECK(y.yaml.find("(model_type llava: the llava wrapper in src/spec/hf/families_wrappers.cpp, "
                    "its text_config read by the llama table in src/spec/hf/families.cpp)") !=
        std::string::npos);
  CHECK(y.yaml.find("hidden: 4096                        # default of llama (hidden_size absent)") !=
        std::string::npos);
  // No KV cache in the tower: 32 layers x 2 x 4096 x 2 B a token, the text model's alone.
  CHECK(state(m.m, 8192) == 32LL * 2 * 4096 * 2 * 8192);
  // vision_feature_layer as a list concatenates the layers' features into linear_1.
  nlohmann::json c = read_json(fixture("llava-hf--llava-1.5-7b-hf/config.json"));
  c["vision_feature_layer"] = {-2, -5};
  c["multimodal_projector_bias"] = false;
  CHECK(tally_component(from_json(c.dump()).components[0]).parts[2].params.value() ==
        2048LL * 4096 + 4096LL * 4096);
  // A text model calc does not read as a plain text family, or another tower, is an error at
  // its model_type.
  c = read_json(fixture("llava-hf--llava-1.5-7b-hf/config.json"));
  c["text_config"]["model_type"] = "gemma3";
  CHECK(testing::import_error(c.dump(2)).find(
            ": text_config.model_type: llava wraps a text model calc reads as a plain text "
            "family (llama, mistral, qwen2, ...); 'gemma3' is not one") != std::string::npos);
  c = read_json(fixture("llava-hf--llava-1.5-7b-hf/config.json"));
  c["vision_config"]["model_type"] = "siglip_vision_model";
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.model_type: 'siglip_vision_model' is not a tower calc reads under "
            "llava") != std::string::npos);
}

TEST_CASE("vision llava_next: the LLaVA tower, image_newline and a mistral text model") {
  // llava-hf/llava-v1.6-mistral-7b-hf: MistralConfig's hidden 4096, 32 layers, 32 heads with
  // the file's intermediate 14336, 8 KV heads and vocab 32064: 7,242,256,384; the tower and
  // projector as llava's and image_newline (4096): 7,566,747,648 by the module shapes.
  model_with_components m(fixture("llava-hf--llava-v1.6-mistral-7b-hf"));
  CHECK(params(m) == 2 * 32064LL * 4096 + 32 * (2 * 4096LL * 4096 + 2 * 4096LL * 1024 +
                                                3 * 4096LL * 14336 + 2 * 4096) + 4096);
  CHECK(params(m) == 7'242'256'384);
  CHECK(vision(m) == 303'507'456 + 20'979'712 + 4096);
  CHECK(params(m) + vision(m) == 7'566'747'648);
  // sliding_window null: no window, every layer holds the whole history (8 KV heads of 128).
  CHECK(state(m.m, 131072) == 32LL * 2 * 1024 * 2 * 131072);
  const std::string yaml = hf::import_config(fixture("llava-hf--llava-v1.6-mistral-7b-hf")).plain;
  CHECK(yaml.find("{vector: 4096}") != std::string::npos);
  // The text class's defaults where text_config is silent: MistralConfig's intermediate 14336
  // (the table's own default of 8 KV heads stays); a qwen2 text_config with nothing but its
  // model_type takes Qwen2Config's vocab 151936, hidden 4096, intermediate 22016, 32 layers of
  // 32 heads (Q/K/V biases, the qwen2 table's).
  nlohmann::json c = read_json(fixture("llava-hf--llava-v1.6-mistral-7b-hf/config.json"));
  c["text_config"].erase("intermediate_size");
  c["text_config"].erase("num_key_value_heads");
  CHECK(params(from_json(c.dump())) == 7'242'256'384);
  c["text_config"] = {{"model_type", "qwen2"}};
  model_with_components q = from_json(c.dump());
  CHECK(q.m.spec.vocab == 151936);
  CHECK(params(q) == 2 * 151936LL * 4096 +
                         32 * (4 * 4096LL * 4096 + 3 * 4096 + 3 * 4096LL * 22016 + 2 * 4096) +
                         4096);
}

TEST_CASE("vision glm4v_moe: GLM-4.5V's tower, downsample and merger (107,710,933,120)") {
  // zai-org/GLM-4.5V (SOURCES.md): its tensor listing sums to 107,710,933,120 parameters: the
  // glm4_moe text model (GLM-4.5-Air's layout: glm4v_moe_text) 106,852,251,264 and the tower
  // 858,681,856. By tensor: patch_embed.proj 1536 x 3 x 2 x 14 x 14 + bias, post_conv_layernorm,
  // 576 x 1536 positions; 24 blocks of qkv 4608 x 1536, proj 1536 x 1536, gate/up 4096 x 1536,
  // down 1536 x 4096 (no biases) and two RMSNorms; post_layernorm; downsample 4096 x 1536 x 2 x 2
  // + bias; merger proj 4096 x 4096, LayerNorm 4096, gate/up 10944 x 4096, down 4096 x 10944.
  model_with_components m(fixture("zai-org--GLM-4.5V"));
  CHECK(params(m) == 106'852'251'264);
  REQUIRE(m.components.size() == 1);
  component_tally t = tally_component(m.components[0]);
  CHECK(t.parts[0].params.value() == 1536LL * 3 * 2 * 14 * 14 + 1536 + 1536 + 576 * 1536);
  CHECK(t.parts[1].params.value() ==
        24 * (4608LL * 1536 + 1536LL * 1536 + 3 * 4096LL * 1536 + 2 * 1536) + 1536);
  CHECK(t.parts[2].params.value() == 4096LL * 1536 * 4 + 4096 + 4096LL * 4096 + 2 * 4096 +
                                         3 * 10944LL * 4096);
  CHECK(vision(m) == 858'681'856);
  CHECK(params(m) + vision(m) == 107'710'933'120);
  CHECK(t.bytes.value() == 2 * 858'681'856LL);  // dtype bfloat16
  // Bytes as the listing stores them: BF16 everywhere (2 x 107,710,933,120) but the 45 x 128
  // F32 routing-bias values (2 more bytes each): 215,421,877,760 B together, the listing's
  // 200.63 GB (GiB).
  CHECK(testing::weight_bytes(m.m) + t.bytes.value() == 215'421'877'760);
  hf::imported y = hf::import_config(fixture("zai-org--GLM-4.5V"));
  CHECK(y.yaml.find("its text_config read by the glm4_moe table in src/spec/hf/families.cpp") !=
        std::string::npos);
  // A qkv bias (attention_bias) beside the bias-less proj is a layout the block cannot write:
  // an error at the field; a size the class default would have to guess is required.
  nlohmann::json c = read_json(fixture("zai-org--GLM-4.5V/config.json"));
  c["vision_config"]["attention_bias"] = true;
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.attention_bias: a qkv bias beside a proj without one") !=
        std::string::npos);
  c["vision_config"]["attention_bias"] = false;
  c["vision_config"].erase("out_hidden_size");
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.out_hidden_size: missing required field") != std::string::npos);
}

TEST_CASE("vision: a quantised checkpoint counts the tower only when its exclusions cover it") {
  nlohmann::json c = read_json(fixture("Qwen--Qwen3-VL-8B-Instruct/config.json"));
  c["quantization_config"] = {{"quant_method", "fp8"},
                              {"activation_scheme", "dynamic"},
                              {"weight_block_size", {128, 128}},
                              {"modules_to_not_convert", {"lm_head", "model.visual"}}};
  model_with_components kept = from_json(c.dump());
  CHECK(vision(kept) == 576'388'336);
  CHECK(kept.components[0].weights.name == "bf16");
  c["quantization_config"]["modules_to_not_convert"] = {"lm_head"};
  hf::imported quantised = hf::import_text(c.dump(), "config.json", "t");
  CHECK(quantised.yaml.find("# Not counted: the vision tower and projector (vision_config): the "
                            "quantisation config does not exclude `visual`") != std::string::npos);
  CHECK(from_yaml(quantised.plain).components.empty());
}

TEST_CASE("vision: calc params reports the component apart from the text model's totals") {
  const std::string cfg = fixture("Qwen--Qwen3-VL-2B-Instruct");
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", cfg, "--format", "json"}, out, err) == 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  CHECK(j["total_params"] == 1'720'574'976);  // the text model, as before
  CHECK(j["weight_bytes"] == 2 * 1'720'574'976LL);
  REQUIRE(j["components"].size() == 1);
  CHECK(j["components"][0]["name"] == "vision_tower");
  CHECK(j["components"][0]["format"] == "bf16");
  CHECK(j["components"][0]["params"] == 406'957'056);
  CHECK(j["components"][0]["bytes"] == 2 * 406'957'056LL);
  CHECK(j["component_bytes"] == 2 * 406'957'056LL);
  // The state has no vision part.
  std::ostringstream so, se;
  REQUIRE(run_cli({"state", "--model", cfg, "--length", "8192", "--format", "json"}, so, se) == 0);
  CHECK(nlohmann::json::parse(so.str())["total_bytes"] == 4'096LL * 28 * 8192);
  // Markdown: the component's rows beside the totals.
  std::ostringstream md, mde;
  REQUIRE(run_cli({"params", "--model", cfg}, md, mde) == 0);
  CHECK(md.str().find("| component bytes") != std::string::npos);
  CHECK(md.str().find("### components") != std::string::npos);
  CHECK(md.str().find("| vision_tower") != std::string::npos);
}

TEST_CASE("vision: a malformed vision_config field is a one-line located error, exit 2") {
  nlohmann::json c = read_json(fixture("Qwen--Qwen3-VL-2B-Instruct/config.json"));
  c["vision_config"]["depth"] = "twenty-four";
  std::string text = c.dump(2);
  CHECK(testing::import_error(text).find("config.json:") == 0);
  CHECK(testing::import_error(text).find(
            ": vision_config.depth: expected a non-negative integer, got \"twenty-four\"") !=
        std::string::npos);
  c["vision_config"]["depth"] = 0;
  CHECK(testing::import_error(c.dump(2)).find(": vision_config.depth: must be positive, got 0") !=
        std::string::npos);
  c["vision_config"]["depth"] = 24;
  c["vision_config"]["num_heads"] = 15;
  CHECK(testing::import_error(c.dump(2)).find(
            ": vision_config.num_heads: 15 heads do not divide the width 1024") !=
        std::string::npos);
  // Through the command line: exit 2, one line on stderr naming file:line:col and the field.
  c["vision_config"]["num_heads"] = 16;
  c["vision_config"]["hidden_size"] = -1024;
  fs::path dir = testing::scratch_dir("calc-vision") / "bad";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << c.dump(2);
  std::ostringstream out, err;
  CHECK(run_cli({"params", "--model", (dir / "config.json").string()}, out, err) == 2);
  CHECK(err.str().find((dir / "config.json").string() + ":") == 0);
  CHECK(err.str().find(": vision_config.hidden_size: expected a non-negative integer, got -1024") !=
        std::string::npos);
  const std::string message = err.str();
  CHECK(std::count(message.begin(), message.end(), '\n') == 1);
}

TEST_CASE("vision: --set reaches the components list by index or by name") {
  auto component_params = [](std::vector<std::string> args) {
    std::vector<std::string> all = {"params", "--model", "llava-hf--llava-1.5-7b-hf"};
    all[2] = fixture(all[2]);
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--format", "json"});
    std::ostringstream out, err;
    REQUIRE(run_cli(all, out, err) == 0);
    return nlohmann::json::parse(out.str())["components"][0]["params"].get<std::int64_t>();
  };
  const std::int64_t block = 12'596'224;  // a CLIP-L block (hf_vision_test's llava case)
  CHECK(component_params({}) == 324'487'168);
  // A what-if on the tower alone: 23 blocks (vision_feature_layer -2 never runs the last one).
  CHECK(component_params({"--set", "components.0.layers=23"}) == 324'487'168 - block);
  CHECK(component_params({"--set", "components.vision_tower.layers=23"}) == 324'487'168 - block);
  // The text model is untouched, and the engine budget takes the edited tower.
  std::ostringstream out, err;
  REQUIRE(run_cli({"params", "--model", fixture("llava-hf--llava-1.5-7b-hf"), "--set",
                   "components.vision_tower.weights=fp32", "--format", "json"},
                  out, err) == 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  CHECK(j["total_params"] == 6'738'939'904);
  CHECK(j["component_bytes"] == 4 * 324'487'168LL);
  // An entry that is not there, or a field the schema does not have, is an error naming --set
  // or the field, exit 2.
  std::ostringstream o2, e2;
  CHECK(run_cli({"params", "--model", fixture("llava-hf--llava-1.5-7b-hf"), "--set",
                 "components.3.layers=2"},
                o2, e2) == 2);
  CHECK(e2.str() == "--set components.3.layers: 'components' has 1 entries, no entry 3\n");
  std::ostringstream o3, e3;
  CHECK(run_cli({"params", "--model", fixture("llava-hf--llava-1.5-7b-hf"), "--set",
                 "components.audio.layers=2"},
                o3, e3) == 2);
  CHECK(e3.str() == "--set components.audio.layers: 'components' has no entry named 'audio' "
                    "(give its name or its index)\n");
  std::ostringstream o4, e4;
  CHECK(run_cli({"params", "--model", fixture("llava-hf--llava-1.5-7b-hf"), "--set",
                 "components.0.depth=2"},
                o4, e4) == 2);
  CHECK(e4.str().find("components[0].depth") != std::string::npos);
  // A whole entry set to a scalar: the list's entries take one field at a time.
  std::ostringstream o5, e5;
  CHECK(run_cli({"params", "--model", fixture("llava-hf--llava-1.5-7b-hf"), "--set",
                 "components.0=3"},
                o5, e5) == 2);
  CHECK(e5.str() == "--set components.0: 'components' is a list: --set takes a field of one "
                    "entry, components.INDEX.FIELD or components.NAME.FIELD\n");
}

TEST_CASE("vision: the components schema is read strictly") {
  const std::string model = R"(schema: 1
name: t
vocab: 100
hidden: 64
layers:
  count: 1
  attention: {kind: gqa, q_heads: 4, kv_heads: 4, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
components:
  - name: vision_tower
    kind: vit
)";
  const std::string tower = R"(    patch: 14
    layers: 2
    hidden: 32
    intermediate: 64
    heads: 4
)";
  // A two-block tower: patch 3*14*14*32; each block 4*32^2 + 2*32*64 + 2 LayerNorms (4*32).
  model_with_components m = from_yaml(model + tower + "    projector:\n      - {linear: [32, 64]}\n");
  CHECK(vision(m) == 3 * 14 * 14 * 32 + 2 * (4 * 32 * 32 + 2 * 32 * 64 + 4 * 32) + 32 * 64);
  CHECK(testing::error_of(model + tower + "    mlp: swish\n") ==
        "test.yaml:17:10: components[0].mlp: expected gated or plain, got 'swish'");
  CHECK(testing::error_of(model + tower + "    weights: fp8\n") ==
        "test.yaml:17:14: components[0].weights: expected bf16, fp16 or fp32, got 'fp8'");
  CHECK(testing::error_of(model + tower + "    projector:\n      - {norm: 32, linear: [1, 2]}\n")
            .find("components[0].projector[0].norm: give one of linear: [in, out], norm: width "
                  "or vector: width") != std::string::npos);
  CHECK(testing::error_of(model + tower + "    projector:\n      - {vector: 32, bias: true}\n")
            .find("components[0].projector[0].bias: a learned vector has no bias") !=
        std::string::npos);
  CHECK(testing::error_of(model + "    patch: 14\n").find("components[0].layers: missing") !=
        std::string::npos);
}

TEST_CASE("vision: sizes past the limit are refused at their field, never multiplied over") {
  // SigLIP's position table is (image / patch)^2 and Qwen's merger hidden x merge^2: with sizes
  // near 2^32 these overflowed an int64 into a silent zero or a negative count.
  nlohmann::json g = read_json(fixture("google--gemma-3-4b-it/config.json"));
  g["vision_config"]["image_size"] = 4294967296LL;
  g["vision_config"]["patch_size"] = 1;
  CHECK(testing::import_error(g.dump(2)).find(
            ": vision_config.image_size: 4294967296 is above the limit of 1048576") !=
        std::string::npos);
  nlohmann::json q = read_json(fixture("Qwen--Qwen3-VL-2B-Instruct/config.json"));
  q["vision_config"]["spatial_merge_size"] = 3037000500LL;
  CHECK(testing::import_error(q.dump(2)).find(
            ": vision_config.spatial_merge_size: 3037000500 is above the limit") !=
        std::string::npos);
  // Each size within the limit, their product not: a projector of absurd width is refused at
  // the field the product grows by, never imported as a 1e36-parameter tower.
  q["vision_config"]["spatial_merge_size"] = 1024;  // 1024 x 1024^2 wide
  CHECK(testing::import_error(q.dump(2)).find(
            ": vision_config.spatial_merge_size: makes the merger's width hidden x merge^2 "
            "1073741824, above the limit of 1048576") != std::string::npos);
  nlohmann::json k = read_json(fixture("moonshotai--Kimi-K2.5/config.json"));
  k["vision_config"]["merge_kernel_size"] = {1048576, 1048576};
  CHECK(testing::import_error(k.dump(2)).find(": vision_config.merge_kernel_size: makes a kernel "
                                              "of height x width 1099511627776") !=
        std::string::npos);
  k["vision_config"]["merge_kernel_size"] = {1024, 1024};  // 1152 x 1024^2 wide
  CHECK(testing::import_error(k.dump(2)).find(
            ": vision_config.merge_kernel_size: makes the projector's width") != std::string::npos);
  k["vision_config"].erase("merge_kernel_size");
  k["vision_config"]["mm_hidden_size"] = 1048576;  // x the default 2 x 2 kernel
  CHECK(testing::import_error(k.dump(2)).find(
            ": vision_config.mm_hidden_size: makes the projector's width") != std::string::npos);
  k["vision_config"]["mm_hidden_size"] = 1152;
  k["vision_config"]["init_pos_emb_width"] = 1048576;
  CHECK(testing::import_error(k.dump(2)).find(
            ": vision_config.init_pos_emb_width: makes a position grid") != std::string::npos);
  nlohmann::json z = read_json(fixture("zai-org--GLM-4.5V/config.json"));
  z["vision_config"]["spatial_merge_size"] = 1000;
  CHECK(testing::import_error(z.dump(2)).find(
            ": vision_config.spatial_merge_size: makes the downsample's input") !=
        std::string::npos);
  nlohmann::json p = read_json(fixture("mistral-small-3.2-24b.json"));
  p["spatial_merge_size"] = 1000;
  CHECK(testing::import_error(p.dump(2)).find(
            ": spatial_merge_size: makes the patch merger's input") != std::string::npos);
  // A components list written by hand: each side of a projector part within the same limit.
  const std::string model = R"(schema: 1
name: t
vocab: 100
hidden: 64
layers:
  count: 1
  attention: {kind: gqa, q_heads: 4, kv_heads: 4, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
components:
  - {name: v, kind: vit, patch: 14, layers: 1, hidden: 32, intermediate: 64, heads: 4,
     projector: [)";
  CHECK(testing::error_of(model + "{linear: [32, 1048577]}]}\n")
            .find("components[0].projector[0].linear[1]: 1048577 is above the limit of 1048576") !=
        std::string::npos);
  CHECK(testing::error_of(model + "{norm: 1048577}]}\n")
            .find("components[0].projector[0].norm: 1048577 is above the limit") !=
        std::string::npos);
  CHECK(testing::error_of(model + "{vector: 1048577}]}\n")
            .find("components[0].projector[0].vector: 1048577 is above the limit") !=
        std::string::npos);
  CHECK(vision(from_yaml(model + "{linear: [32, 1048576]}]}\n")) > 0);
}

TEST_CASE("vision: --embeddings changes the text model's tables, not the tower's default dtype") {
  // A component without `weights:` takes the model's own dtype (the file's), as the model reader
  // checked it; --embeddings fp8 made that default fp8 and the tower an error at the file's line.
  std::ifstream in(std::string(CALC_SOURCE_DIR) + "/models/gemma-3-4b-it.yaml");
  std::string yaml, line;
  while (std::getline(in, line))
    if (line.find("    weights: bf16") != 0) yaml += line + "\n";
  fs::path file = testing::scratch_dir("calc-vision") / "gemma-no-tower-dtype.yaml";
  std::ofstream(file) << yaml;
  std::ostringstream base, be, fp8, fe;
  REQUIRE(run_cli({"params", "--model", file.string(), "--format", "json"}, base, be) == 0);
  REQUIRE(run_cli({"params", "--model", file.string(), "--embeddings", "fp8", "--format", "json"},
                  fp8, fe) == 0);
  auto b = nlohmann::json::parse(base.str()), e = nlohmann::json::parse(fp8.str());
  CHECK(b["component_bytes"].get<std::int64_t>() > 0);
  CHECK(e["component_bytes"] == b["component_bytes"]);
  CHECK(e["weight_bytes"].get<std::int64_t>() < b["weight_bytes"].get<std::int64_t>());
}
