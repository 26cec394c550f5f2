// Families the Hugging Face import reads since issue 21's fifth round
// (src/spec/hf/families_extra.cpp): hunyuan_v1_dense, hunyuan_v1_moe, ernie4_5. Each from a
// public config (tests/fixtures/hf, sources and how faithful each copy is in SOURCES.md), its
// parameters checked against the published total and its state at 8K and 128K worked by hand.
#include <doctest/doctest.h>

#include <string>

#include "hf_counts.h"
#include "spec/hf/import.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::from_json;
using testing::import_error;
using testing::params;
using testing::state;
using testing::weight_bytes;

}  // namespace

TEST_CASE("hunyuan_v1_moe (Hunyuan-A13B): 64 experts top 8 + a shared MLP; 80,393,183,232") {
  // The release's config as Tencent-Hunyuan/Hunyuan-A13B ships it (model_type "hunyuan", read by
  // its architectures' HunYuanMoEV1ForCausalLM). Published: the card's 80B total, 13B active.
  // By hand, per layer: GQA 32/8 x 128: 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; per-head
  // Q/K RMSNorms 2 x 128 = 256; 64 experts x 3 x 4096 x 3072 = 2,415,919,104; the shared MLP
  // 3 x 4096 x 3072 = 37,748,736; the router 4096 x 64 = 262,144; two norms 8,192; together
  // 2,495,881,472, x 32 = 79,868,207,104; one tied 128167 x 4096 table 524,972,032; the final
  // norm 4,096.
  testing::model m(fixture("hunyuan-a13b-github.json"));
  CHECK(params(m) == 80'393'183'232);
  CHECK(weight_bytes(m) == 2LL * 80'393'183'232);  // bfloat16
  // use_cla false: every layer keeps its own K and V, 8 heads x 128 in bf16, 4,096 B per token
  // and layer, x 32 layers = 131,072 B per token.
  //   8K:   8192 x 131,072 = 1,073,741,824 B
  //   128K: 131072 x 131,072 = 17,179,869,184 B
  CHECK(state(m, 8192) == 1'073'741'824);
  CHECK(state(m, 131072) == 17'179'869'184);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 32768);
}

TEST_CASE("hunyuan_v1_dense (HunyuanImage-2.1's 7B reprompt model): 7,504,568,320") {
  // Hunyuan-7B's shapes (32 layers of 4096, GQA 32/8 x 128, SwiGLU 14336, per-head Q/K norms,
  // tied) with the 128,167-token vocabulary. By hand, per layer: attention 41,943,040; Q/K norms
  // 256; SwiGLU 3 x 4096 x 14336 = 176,160,768; two norms 8,192; together 218,112,256, x 32 =
  // 6,979,592,192; the tied table 128167 x 4096 = 524,972,032; the final norm 4,096. Hunyuan-7B
  // itself (vocab 128,256, the published 7.5B) is 364,544 more: 7,504,932,864.
  testing::model m(fixture("hunyuanimage-2.1-reprompt.json"));
  CHECK(params(m) == 7'504'568'320);
  // The same cache as Hunyuan-A13B's: 131,072 B per token.
  CHECK(state(m, 8192) == 1'073'741'824);
  CHECK(state(m, 131072) == 17'179'869'184);
  const std::string seven_b = R"({"architectures": ["HunYuanDenseV1ForCausalLM"],
    "model_type": "hunyuan_v1_dense", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 128256, "tie_word_embeddings": true, "use_qk_norm": true, "use_cla": false})";
  CHECK(params(from_json(seven_b)) == 7'504'932'864);
}

TEST_CASE("hunyuan: cross-layer attention, per-layer lists that differ and no tie are refused") {
  const std::string dims = R"("architectures": ["HunYuanMoEV1ForCausalLM"],
    "model_type": "hunyuan_v1_moe", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
    "num_experts": 4, "tie_word_embeddings": true)";
  // use_cla true would share K/V across layers (and drop k_proj / v_proj): refused at the field.
  std::string cla = import_error("{" + dims + R"(, "moe_topk": 2, "moe_intermediate_size": 64,
    "use_cla": true, "cla_share_factor": 2})");
  CHECK(cla.find("use_cla") != std::string::npos);
  // Per-layer lists are read when alike, refused when not (a variant per layer is not read).
  testing::model alike = from_json("{" + dims + R"(, "moe_topk": [2, 2],
    "moe_intermediate_size": [64, 64], "num_shared_expert": [1, 1]})");
  testing::model scalar = from_json("{" + dims + R"(, "moe_topk": 2,
    "moe_intermediate_size": 64, "num_shared_expert": 1})");
  CHECK(params(alike) == params(scalar));
  std::string differ = import_error("{" + dims + R"(, "moe_topk": [2, 1],
    "moe_intermediate_size": 64})");
  CHECK(differ.find("moe_topk") != std::string::npos);
  CHECK(differ.find("per-layer values differ") != std::string::npos);
  // No tie_word_embeddings: no default is taken.
  std::string untold = import_error(R"({"model_type": "hunyuan_v1_dense", "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 1000})");
  CHECK(untold.find("tie_word_embeddings") != std::string::npos);
}

TEST_CASE("ernie4_5 (ERNIE-4.5-0.3B): GQA 16/2 x 128, one use_bias flag, tied; 360,748,032") {
  // Published: baidu/ERNIE-4.5-0.3B-PT, the card's 0.36B. By hand, per layer: Q 1024 x 2048 and
  // O 2048 x 1024 = 4,194,304, K and V 2 x 1024 x 256 = 524,288; SwiGLU 3 x 1024 x 3072 =
  // 9,437,184; two norms 2,048; together 14,157,824, x 18 = 254,840,832; the tied 103424 x 1024
  // table 105,906,176; the final norm 1,024.
  testing::model m(fixture("ernie-4.5-0.3b-pt.json"));
  CHECK(params(m) == 360'748'032);
  CHECK(weight_bytes(m) == 2LL * 360'748'032);
  // 2 KV heads x 128, K and V in bf16: 1,024 B per token and layer, x 18 = 18,432 B per token.
  //   8K:   8192 x 18,432 = 150,994,944 B
  //   128K: 131072 x 18,432 = 2,415,919,104 B
  CHECK(state(m, 8192) == 150'994'944);
  CHECK(state(m, 131072) == 2'415'919'104);
  // use_bias true would put biases on the gated MLP too: refused at the field; head_dim and the
  // KV heads take no default.
  const std::string dims = R"("model_type": "ernie4_5", "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000)";
  CHECK(import_error("{" + dims + R"(, "num_key_value_heads": 2, "head_dim": 64,
    "use_bias": true})").find("use_bias") != std::string::npos);
  CHECK(import_error("{" + dims + R"(, "num_key_value_heads": 2})").find("head_dim") !=
        std::string::npos);
}

TEST_CASE("bundles of the fifth round read as their fixtures do, and by their Hugging Face ids") {
  // Each bundle is `calc import` of its fixture with the name and source edited.
  const std::pair<const char*, const char*> bundles[] = {
      {"hunyuan-a13b-instruct", "hunyuan-a13b-github.json"},
      {"ernie-4.5-0.3b-pt", "ernie-4.5-0.3b-pt.json"}};
  for (const auto& b : bundles) {
    std::string name = b.first;
    CAPTURE(name);
    testing::model bundled(name);
    testing::model imported(fixture(b.second));
    CHECK(params(bundled) == params(imported));
    CHECK(weight_bytes(bundled) == weight_bytes(imported));
    CHECK(state(bundled, 131072) == state(imported, 131072));
  }
  CHECK(params(testing::model("tencent/Hunyuan-A13B-Instruct")) == 80'393'183'232);
  CHECK(params(testing::model("baidu/ERNIE-4.5-0.3B-PT")) == 360'748'032);
}
