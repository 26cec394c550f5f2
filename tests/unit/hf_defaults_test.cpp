// Published configs that leave fields to their transformers configuration class (issue 21): the
// family tables in src/spec/hf/families.cpp give those classes' defaults, so such a config reads
// as the reference implementation reads it. Each from its fixture under tests/fixtures/hf
// (sources in SOURCES.md there) and its bundle, parameters checked against the published total
// and the KV cache at 8K worked by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "spec/hf/import.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::params;
using testing::weight_bytes;
using testing::state;

// The fixtures beside the bundled models (models_dir() is <source>/models), so this file needs no
// CALC_SOURCE_DIR of its own.
std::string fixture(const std::string& name) {
  return models_dir() + "/../tests/fixtures/hf/" + name;
}

std::int64_t active(const testing::model& m) { return tally_params(m.g).active.value(); }

}  // namespace

TEST_CASE("gemma3 text_config without heads, KV heads or head_dim reads Gemma3TextConfig's") {
  // Google's gemma-3-4b-it config.json names only hidden_size, intermediate_size,
  // num_hidden_layers, sliding_window and rope_scaling in text_config.
  std::string yaml = hf::import_config(fixture("google--gemma-3-4b-it/config.json")).yaml;
  CHECK(yaml.find("# default of gemma3 (num_attention_heads absent)") != std::string::npos);
  CHECK(yaml.find("# default of gemma3 (num_key_value_heads absent)") != std::string::npos);
  CHECK(yaml.find("# default of gemma3 (head_dim absent)") != std::string::npos);
  model_spec s = testing::model::from_text(
                     hf::import_config(fixture("google--gemma-3-4b-it/config.json")).plain)
                     .spec;
  CHECK(s.layers.count == 34);
  CHECK(s.hidden == 2560);
  // A text_config that gives nothing at all is Gemma3TextConfig() itself: 26 layers of 2304,
  // GQA 8/4 x 256, GeGLU 9216, 131072 positions.
  model_spec bare =
      testing::model::from_text(
          hf::import_text(R"({"model_type": "gemma3", "text_config": {}})", "config.json", "g")
              .plain)
          .spec;
  CHECK(bare.layers.count == 26);
  CHECK(bare.hidden == 2304);
  // gemma3_text (Gemma3ForCausalLM) is the same class.
  testing::model text = testing::model::from_text(
      hf::import_text(R"({"model_type": "gemma3_text"})", "config.json", "g").plain);
  testing::model wrapped = testing::model::from_text(
      hf::import_text(R"({"model_type": "gemma3", "text_config": {}})", "config.json", "g").plain);
  CHECK(params(text) == params(wrapped));
}

TEST_CASE("gemma-3-4b-it bundle: the language model of 3,880,263,168 parameters") {
  testing::model m("google/gemma-3-4b-it");
  CHECK(resolve_model_path("google/gemma-3-4b-it").ends_with("/gemma-3-4b-it.yaml"));
  // By hand, text_config at Gemma3TextConfig's defaults where Google's file is silent:
  //   embedding (tied head) 262,208 x 2560                                =   671,252,480
  //   per layer: q 2560 x 2048 + k, v 2 x 2560 x 1024 + o 2048 x 2560     =    15,728,640
  //              q_norm, k_norm 2 x 256                                   =           512
  //              GeGLU 3 x 2560 x 10240                                   =    78,643,200
  //              four norms 4 x 2560                                      =        10,240
  //              together 94,382,592; x 34 layers                         = 3,209,008,128
  //   final norm                                                          =         2,560
  // 3,880,263,168: the "3.88B" of the text model. Card: 4.3B with the vision tower.
  CHECK(params(m) == 3'880'263'168);
  // The whole checkpoint adds the SigLIP tower (416,866,032, the same vision_config as the
  // 12B's and 27B's) and the projector (1152 x 2560 and its 1152-wide norm): 4,300,079,472,
  // the card's 4.3B. calc counts the language model only (the bundle says so).
  CHECK(params(m) + 416'866'032 + (1152LL * 2560 + 1152) == 4'300'079'472);
  CHECK(weight_bytes(m) == 2 * params(m));
  // KV at 8K: of 34 layers every sixth is global (layers 5, 11, 17, 23, 29: 5 x 8192 tokens),
  // the other 29 keep a 1024-token window; 4 KV heads x 256 x K and V x BF16 = 4,096 B a token
  // a layer: 4096 x (40,960 + 29,696) = 289,406,976 B.
  CHECK(state(m, 8192) == 4096LL * (5 * 8192 + 29 * 1024));
  CHECK(state(m, 8192) == 289'406'976);
  // At 128K the five global layers grow, the windows do not: 4096 x (5 x 131072 + 29 x 1024).
  CHECK(state(m, 131072) == 4096LL * (5 * 131072 + 29 * 1024));
}

TEST_CASE("minimax_m2 without use_qk_norm: the Q/K norms transformers always builds") {
  // MiniMax-M2's transformers-5 conversion (Hub revision fbd8a14b) drops use_qk_norm,
  // qk_norm_type and use_routing_bias: transformers' MiniMaxM2Config has none of them and its
  // MiniMaxM2Attention always has q_norm (48 x 128) and k_norm (8 x 128), its sparse MoE block
  // always e_score_correction_bias. Same shapes as MiniMax-M2.5, so the same count.
  testing::model m(fixture("MiniMaxAI--MiniMax-M2/config.json"));
  testing::model m25(fixture("minimax-m2.5-bf16.json"));
  CHECK(params(m) == params(m25));
  CHECK(params(m) == 228'689'764'864);
  // An explicit use_qk_norm false still drops them: 62 layers x (48 + 8) x 128 = 444,416.
  testing::model plain = testing::model::from_text(
      hf::import_text(R"({"model_type": "minimax_m2", "use_qk_norm": false})", "c.json", "c")
          .plain);
  testing::model normed = testing::model::from_text(
      hf::import_text(R"({"model_type": "minimax_m2"})", "c.json", "c").plain);
  CHECK(params(normed) - params(plain) == 444'416);
  // A config naming nothing is MiniMaxM2Config() itself: MiniMax-M2's shapes.
  CHECK(params(normed) == 228'689'764'864);
}

TEST_CASE("minimax-m2 bundle: 228,689,764,864 parameters, about 10B active") {
  testing::model m("MiniMaxAI/MiniMax-M2");
  CHECK(resolve_model_path("MiniMaxAI/MiniMax-M2").ends_with("/minimax-m2.yaml"));
  // Card: 230B total, 10B active. By hand, per layer: GQA 48/8 x 128
  // 3072 x 6144 + 2 x 3072 x 1024 + 6144 x 3072 = 44,040,192; q_norm 6144 + k_norm 1024;
  // 256 experts of 3 x 3072 x 1536 = 3,623,878,656; router 256 x 3072 and its bias 256; two
  // norms 6,144: 3,668,718,848 x 62 = 227,460,568,576; embedding and untied head
  // 2 x 200064 x 3072 = 1,229,193,216; the final norm 3,072. The MTP modules are not counted.
  CHECK(params(m) == 228'689'764'864);
  // Active: 8 of 256 experts (113,246,208 a layer) instead of all: 158,086,400 a layer,
  // 9,801,356,800 for 62 layers (the card's 10B), plus the head and the final norm (the
  // embedding is a row lookup, not counted active): 10,415,956,480.
  CHECK(active(m) == 62LL * 158'086'400 + 200064LL * 3072 + 3072);
  // KV: every layer full attention, 2 x 8 x 128 x BF16 = 4,096 B a token a layer; 62 layers.
  CHECK(state(m, 8192) == 62LL * 4096 * 8192);  // 2,080,374,784 B
}
