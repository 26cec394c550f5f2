// Recent text-only families the Hugging Face import reads (src/spec/hf/families_recent.cpp):
// mimo, afmoe, ... Each from a public config (tests/fixtures/hf, sources and how faithful each
// copy is in SOURCES.md), its parameters checked against the published total (or, where the card
// gives only a rounded figure, against a count worked independently from the reference module's
// shapes, in the comment), its state at 8K and 128K (or the model's limit) worked by hand; and the
// bundles made from them.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <string>
#include <variant>

#include "hf_counts.h"
#include "spec/hf/import.h"
#include "tally/call.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::from_json;
using testing::params;
using testing::state;
using testing::weight_bytes;

}  // namespace

TEST_CASE("mimo (MiMo-7B-Base): Qwen2's layers and one MTP layer outside the totals") {
  // Published: the card's 7B. Worked from modeling_mimo.py's shapes (Qwen2 layers): per layer
  // GQA 32/8 x 128: Q and O 2 x 4096^2 = 33,554,432, K and V 2 x 4096 x 1024 = 8,388,608, the
  // Q/K/V biases 4096 + 2 x 1024 = 6,144; SwiGLU 3 x 4096 x 11008 = 135,266,304; two norms
  // 8,192; together 177,223,680, x 36 = 6,380,052,480; untied 151680 x 4096 embedding and head
  // 2 x 621,281,280 = 1,242,562,560; the final norm 4,096.
  testing::model m(fixture("XiaomiMiMo--MiMo-7B-Base"));
  CHECK(params(m) == 7'622'619'136);
  CHECK(weight_bytes(m) == 2LL * 7'622'619'136);  // bfloat16
  // The MTP layer (mtp_layers.0: a Qwen2 decoder layer 177,223,680, the 2d -> d input_proj
  // 33,554,432 and three norms 12,288: 210,790,400; the checkpoint's 7,833,409,536 with it) is
  // the `mtp` block, read from num_nextn_predict_layers and kept out of the totals.
  REQUIRE(m.spec.mtp);
  CHECK(m.spec.mtp->layers == 1);
  // K and V of 8 heads x 128 in bf16: 4,096 B per token and layer, x 36 = 147,456 B per token.
  //   8K:   8192 x 147,456 = 1,207,959,552 B
  //   32K (max_position_embeddings): 32768 x 147,456 = 4,831,838,208 B
  //   128K: 131072 x 147,456 = 19,327,352,832 B
  CHECK(state(m, 8192) == 1'207'959'552);
  CHECK(state(m, 32768) == 4'831'838'208);
  CHECK(state(m, 131072) == 19'327'352'832);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 32768);
}

TEST_CASE("afmoe (Trinity-Mini): gated GQA, 3 sliding layers to 1 full, 2 dense + 30 MoE") {
  // Published: arcee-ai/Trinity-Mini, the card's 26B total (3B active). Worked from
  // modeling_afmoe.py's shapes: attention GQA 32/4 x 128: Q, O and the output gate (gate_proj)
  // 3 x 2048 x 4096 = 25,165,824, K and V 2 x 2048 x 512 = 2,097,152, per-head Q/K norms 256:
  // 27,262,976 + 256 = 27,263,232; four norms 8,192. Dense layers (num_dense_layers 2): SwiGLU
  // 3 x 2048 x 6144 = 37,748,736, a layer 65,020,160, x 2 = 130,040,320. MoE layers: 128 experts
  // x 3 x 2048 x 1024 = 805,306,368, the shared MLP 6,291,456, the router 2048 x 128 = 262,144,
  // expert_bias 128: 811,860,096, a layer 839,131,520, x 30 = 25,173,945,600. Untied 200192 x
  // 2048 embedding and head 819,986,432; the final norm 2,048.
  testing::model m(fixture("arcee-ai--Trinity-Mini"));
  CHECK(params(m) == 26'123'974'400);
  CHECK(weight_bytes(m) == 2LL * 26'123'974'400);  // bfloat16
  // layer_types: every 4th layer full (8), the other 24 slide over 2048 tokens. K and V of 4
  // heads x 128 in bf16: 2,048 B per token and layer.
  //   8K:   8 x 8192 x 2048 + 24 x 2048 x 2048 = 134,217,728 + 100,663,296 = 234,881,024 B
  //   128K: 8 x 131072 x 2048 + 100,663,296 = 2,147,483,648 + 100,663,296 = 2,248,146,944 B
  CHECK(state(m, 8192) == 234'881'024);
  CHECK(state(m, 131072) == 2'248'146'944);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 131072);
}

TEST_CASE("afmoe (Trinity-Nano-Preview): layer kinds from global_attn_every_n_layers alone") {
  // Published: arcee-ai/Trinity-Nano-Preview, the card's 6B total (1B active). Its config has no
  // layer_types: every global_attn_every_n_layers-th (4th) layer is full, as AfmoeConfig derives
  // them. Worked: attention GQA 8/2 x 128: Q, O and the gate 3 x 1024^2 = 3,145,728, K and V
  // 2 x 1024 x 256 = 524,288, Q/K norms 256: 3,670,272; four norms 4,096. Dense (2 layers):
  // 3 x 1024 x 3072 = 9,437,184, a layer 13,111,552, x 2 = 26,223,104. MoE (54 layers): 128 x
  // 3 x 1024 x 256 = 100,663,296, shared 786,432, router 131,072, expert_bias 128: 101,580,928,
  // a layer 105,255,296, x 54 = 5,683,785,984. Embedding and head 2 x 200192 x 1024 =
  // 409,993,216; the final norm 1,024.
  testing::model m(fixture("arcee-ai--Trinity-Nano-Preview"));
  CHECK(params(m) == 6'120'003'328);
  // 14 full layers, 42 sliding over 2048; K and V of 2 heads x 128 in bf16: 1,024 B per token
  // and layer.
  //   8K:   14 x 8192 x 1024 + 42 x 2048 x 1024 = 117,440,512 + 88,080,384 = 205,520,896 B
  //   128K: 14 x 131072 x 1024 + 88,080,384 = 1,879,048,192 + 88,080,384 = 1,967,128,576 B
  CHECK(state(m, 8192) == 205'520'896);
  CHECK(state(m, 131072) == 1'967'128'576);
  // The same sizes with layer_types spelt out read the same.
  const std::string dims = R"("architectures": ["AfmoeForCausalLM"], "model_type": "afmoe",
    "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
    "num_hidden_layers": 4, "num_dense_layers": 1, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 64, "num_experts": 8, "num_experts_per_tok": 2,
    "num_shared_experts": 1, "vocab_size": 1000, "sliding_window": 16)";
  testing::model derived = from_json("{" + dims + "}");
  testing::model listed = from_json("{" + dims + R"(, "layer_types": ["sliding_attention",
    "sliding_attention", "sliding_attention", "full_attention"]})");
  CHECK(params(derived) == params(listed));
  CHECK(state(derived, 4096) == state(listed, 4096));
  // One full layer of 4096 tokens and three of 16, K and V of 2 x 64 in bf16 (512 B).
  CHECK(state(derived, 4096) == (4096 + 3 * 16) * 512);
}

TEST_CASE("afmoe (Trinity-Large's sizes): 256 experts top 4, 6 dense layers; 398,635,286,016") {
  // Trinity-Large's own config.json was not found; these are the sizes the AWS Neuron test that
  // quotes Trinity-Nano-Preview's file lists as its LARGE_OVERRIDES (tests/fixtures/hf/SOURCES.md)
  // on that file. Published: the card's 400B total, 13B active. Worked: attention GQA 48/8 x 128:
  // Q, O and the gate 3 x 3072 x 6144 = 56,623,104, K and V 2 x 3072 x 1024 = 6,291,456, Q/K
  // norms 256: 62,914,816; four norms 12,288. Dense (6 layers): 3 x 3072 x 12288 = 113,246,208,
  // a layer 176,173,312, x 6 = 1,057,039,872. MoE (54 layers): 256 x 3 x 3072^2 =
  // 7,247,757,312, shared 28,311,552, router 786,432, expert_bias 256: 7,276,855,552, a layer
  // 7,339,782,656, x 54 = 396,348,263,424. Embedding and head 2 x 200192 x 3072 = 1,229,979,648;
  // the final norm 3,072.
  testing::model m = from_json(R"({"architectures": ["AfmoeForCausalLM"], "model_type": "afmoe",
    "global_attn_every_n_layers": 4, "head_dim": 128, "hidden_size": 3072,
    "intermediate_size": 12288, "max_position_embeddings": 131072, "moe_intermediate_size": 3072,
    "num_attention_heads": 48, "num_dense_layers": 6, "num_experts": 256,
    "num_experts_per_tok": 4, "num_hidden_layers": 60, "num_key_value_heads": 8,
    "num_shared_experts": 1, "sliding_window": 4096, "tie_word_embeddings": false,
    "vocab_size": 200192, "dtype": "bfloat16"})");
  CHECK(params(m) == 398'635'286'016);
  // 15 full layers, 45 sliding over 4096; K and V of 8 heads x 128 in bf16: 4,096 B per token
  // and layer.
  //   8K:   15 x 8192 x 4096 + 45 x 4096 x 4096 = 503,316,480 + 754,974,720 = 1,258,291,200 B
  //   128K: 15 x 131072 x 4096 + 754,974,720 = 8,053,063,680 + 754,974,720 = 8,808,038,400 B
  CHECK(state(m, 8192) == 1'258'291'200);
  CHECK(state(m, 131072) == 8'808'038'400);
}

TEST_CASE("bailing_moe (Ling-mini-2.0, BailingMoeV2): Q/K norms, the routing bias, an MTP layer") {
  // Ling 2.0 publishes model_type "bailing_moe" with BailingMoeV2ForCausalLM; no complete copy of
  // its config.json was found (tests/fixtures/hf/SOURCES.md), so these are the sizes every
  // excerpt agrees on. Published: 16.26B total (the Ling-V2 README). Worked from
  // modeling_bailing_moe_v2.py's shapes: attention, fused query_key_value 2048 x (16 + 2 x 4) x
  // 128 = 6,291,456, dense 2048 x 2048 = 4,194,304, query/key layernorms 256: 10,486,016; two
  // norms 4,096. Layer 0 dense SwiGLU 3 x 2048 x 5120 = 31,457,280: 41,947,392. Layers 1..19:
  // 256 experts x 3 x 2048 x 512 = 805,306,368, the shared MLP 3,145,728, the gate 256 x 2048 =
  // 524,288 and its expert_bias 256: 808,976,640, a layer 819,466,752, x 19 = 15,569,868,288.
  // Untied 157184 x 2048 embedding and head 643,825,664; the final norm 2,048.
  const std::string ling = R"({"architectures": ["BailingMoeV2ForCausalLM"],
    "model_type": "bailing_moe", "hidden_size": 2048, "intermediate_size": 5120,
    "num_hidden_layers": 20, "num_attention_heads": 16, "num_key_value_heads": 4,
    "head_dim": 128, "first_k_dense_replace": 1, "moe_intermediate_size": 512,
    "num_experts": 256, "num_experts_per_tok": 8, "num_shared_experts": 1, "n_group": 8,
    "topk_group": 4, "use_qk_norm": true, "use_bias": false, "use_qkv_bias": false,
    "moe_router_enable_expert_bias": true, "num_nextn_predict_layers": 1,
    "partial_rotary_factor": 0.5, "vocab_size": 157184, "max_position_embeddings": 32768,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  testing::model m = from_json(ling);
  CHECK(params(m) == 16'255'643'392);
  REQUIRE(m.spec.mtp);
  CHECK(m.spec.mtp->layers == 1);
  // Without the two V2 flags (a Ling-lite-style file) the same sizes lose the 20 x 256 Q/K norm
  // weights and the 19 x 256 routing biases.
  std::string v1 = ling;
  for (const char* flag : {R"("use_qk_norm": true, )", R"("moe_router_enable_expert_bias": true, )"})
    v1.erase(v1.find(flag), std::string(flag).size());
  CHECK(params(from_json(v1)) == 16'255'643'392 - 20 * 256 - 19 * 256);
  // K and V of 4 heads x 128 in bf16: 2,048 B per token and layer, x 20 = 40,960 B per token.
  //   8K:   8192 x 40,960 = 335,544,320 B
  //   128K: 131072 x 40,960 = 5,368,709,120 B (the README's YaRN extension of the 32K limit)
  CHECK(state(m, 8192) == 335'544'320);
  CHECK(state(m, 131072) == 5'368'709'120);
}

TEST_CASE("bundles of the recent families read as their fixtures do, and by their Hugging Face ids") {
  // Each bundle is `calc import` of its fixture with the name and source edited.
  const std::pair<const char*, const char*> bundles[] = {
      {"mimo-7b-base", "XiaomiMiMo--MiMo-7B-Base"},
      {"trinity-mini", "arcee-ai--Trinity-Mini"},
      {"mimo-v2-flash", "XiaomiMiMo--MiMo-V2-Flash"}};
  for (const auto& b : bundles) {
    std::string name = b.first;
    CAPTURE(name);
    testing::model bundled(name);
    testing::model imported(fixture(b.second));
    CHECK(params(bundled) == params(imported));
    CHECK(weight_bytes(bundled) == weight_bytes(imported));
    CHECK(state(bundled, 131072) == state(imported, 131072));
  }
  CHECK(params(testing::model("XiaomiMiMo/MiMo-7B-Base")) == 7'622'619'136);
  CHECK(params(testing::model("arcee-ai/Trinity-Mini")) == 26'123'974'400);
  CHECK(params(testing::model("XiaomiMiMo/MiMo-V2-Flash")) == 308'778'780'864);
}

TEST_CASE("mimo_v2_flash (MiMo-V2-Flash): keys 192 wide, values 128, own sliding shape, sinks") {
  // Published: the card's 309B total (15B active), which the model card gives without the three
  // MTP layers its checkpoint also ships (0.33B each, not declared by the config, so not read).
  // Worked from vLLM's mimo_v2_flash.py shapes: full layers (9, hybrid_layer_pattern 0): GQA
  // 64/4, Q and K 192 wide, V 128: q_proj 4096 x 12288 = 50,331,648, k_proj 4096 x 768 =
  // 3,145,728, v_proj 4096 x 512 = 2,097,152, o_proj 8192 x 4096 = 33,554,432: 89,128,960.
  // Sliding layers (39): GQA 64/8: k_proj 6,291,456, v_proj 4,194,304, and 64 sink logits:
  // 94,371,904. Two norms a layer 8,192 (x 48 = 393,216). Layer 0 dense SwiGLU 3 x 4096 x 16384
  // = 201,326,592. Layers 1..47 MoE: 256 x 3 x 4096 x 2048 = 6,442,450,944, the router
  // 1,048,576, the routing bias 256: 6,443,499,776, x 47 = 302,844,489,472. Untied 152576 x 4096
  // embedding and head 1,249,902,592; the final norm 4,096. Together 308,778,780,864.
  testing::model m(fixture("XiaomiMiMo--MiMo-V2-Flash"));
  CHECK(params(m) == 308'778'780'864);
  CHECK_FALSE(m.spec.mtp);  // the config declares none; the card's three are not guessed
  // FP8 block-quantised (128 x 128, FP32 scales by the family default): every Linear in the
  // layers is 1 B a value, 307,479,183,360 B; scale grids rounded up per matrix: 18,767,040
  // scales, 75,068,160 B; embedding, head, norms, sinks, routers and routing biases in bf16:
  // 1,299,597,504 values, 2,599,195,008 B.
  CHECK(weight_bytes(m) == 307'479'183'360 + 75'068'160 + 2'599'195'008);
  // The layer kinds: sliding layers with their own KV heads and the sinks, full layers without.
  const auto& full = std::get<attention_gqa>(m.g.layers[0].attention);
  const auto& swa = std::get<attention_gqa>(m.g.layers[1].attention);
  CHECK(full.kv_heads == 4);
  CHECK(swa.kv_heads == 8);
  CHECK(full.value_dim() == 128);
  CHECK(swa.value_dim() == 128);
  CHECK(full.head_dim == 192);
  CHECK_FALSE(full.window);
  REQUIRE(swa.window);
  CHECK(*swa.window == 128);
  CHECK_FALSE(full.sinks);
  CHECK(swa.sinks);
  // KV in bf16, K 192 and V 128 a head: full layers 4 x 320 x 2 = 2,560 B per token, sliding
  // layers 8 x 320 x 2 = 5,120 B per token over at most 128 tokens (655,360 B each).
  //   8K:   9 x 8192 x 2560 + 39 x 655,360 = 188,743,680 + 25,559,040 = 214,302,720 B
  //   128K: 9 x 131072 x 2560 + 25,559,040 = 3,019,898,880 + 25,559,040 = 3,045,457,920 B
  //   256K (max_position_embeddings): 9 x 262144 x 2560 + 25,559,040 = 6,065,356,800 B
  CHECK(state(m, 8192) == 214'302'720);
  CHECK(state(m, 131072) == 3'045'457'920);
  CHECK(state(m, 262144) == 6'065'356'800);
  // AV over the 128-wide values: one decode token at 8191 cached tokens scores 8192 keys in a
  // full layer and 128 in a sliding one, 2 x 64 x (192 + 128) = 40,960 FLOPs a key:
  // 9 x 8192 x 40,960 + 39 x 128 x 40,960 = 3,019,898,880 + 204,472,320 = 3,224,371,200.
  CHECK(tally_forward(m.g, make_call(m.spec, 1, 8191, 1)).interaction_flops.value() ==
        3'224'371'200);
}

TEST_CASE("v_head_dim: the value width apart from the key width, in weights, FLOPs and state") {
  const std::string base = R"(schema: 1
name: t
vocab: 100
hidden: 64
precision: {weights: bf16, kv: bf16}
layers:
  count: 2
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16)";
  const std::string tail = R"(}
  ffn: {kind: swiglu, intermediate: 128}
)";
  testing::model same = testing::model::from_text(base + tail);
  testing::model narrow = testing::model::from_text(base + ", v_head_dim: 8" + tail);
  // v_proj 64 x 2 x (16 - 8) and o_proj 4 x (16 - 8) x 64 fewer, per layer: 1,024 + 2,048.
  CHECK(params(same) - params(narrow) == 2 * (1024 + 2048));
  // Each token keeps K 2 x 16 and V 2 x 8 per layer in bf16: 96 B, against 128 B.
  CHECK(state(same, 10) == 10 * 2 * 128);
  CHECK(state(narrow, 10) == 10 * 2 * 96);
  // AV at 8 wide: a prefill of 10 tokens scores 55 pairs a layer, 2 x 4 x (16 + 8) FLOPs each.
  call c = make_call(narrow.spec, 1, 0, 10);
  CHECK(tally_forward(narrow.g, c).interaction_flops.value() == 2 * 55 * 2 * 4 * (16 + 8));
  // A v_head_dim equal to head_dim reads as none given.
  CHECK(params(testing::model::from_text(base + ", v_head_dim: 16" + tail)) == params(same));
  // Values that are the keys have the key width.
  CHECK(testing::error_of(base + ", k_is_v: true, v_head_dim: 8" + tail).find("v_head_dim") !=
        std::string::npos);
}

TEST_CASE("mimo_v2_flash: the per-layer lists are checked") {
  std::string cfg = R"({"model_type": "mimo_v2_flash", "architectures": ["MiMoV2FlashForCausalLM"],
    "num_hidden_layers": 3, "hidden_size": 256, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 48, "v_head_dim": 32, "swa_num_attention_heads": 8,
    "swa_num_key_value_heads": 4, "swa_head_dim": 48, "swa_v_head_dim": 32,
    "intermediate_size": 512, "moe_intermediate_size": 64, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "vocab_size": 1000, "sliding_window_size": 16,
    "add_swa_attention_sink_bias": true, "add_full_attention_sink_bias": false,
    "hybrid_layer_pattern": PATTERN, "moe_layer_freq": [0, 1, 1]})";
  auto with = [&](const std::string& pattern) {
    std::string c = cfg;
    c.replace(c.find("PATTERN"), 7, pattern);
    return c;
  };
  testing::model m = from_json(with("[0, 1, 1]"));
  // Full layer 0: q 256 x 192, k and v 256 x 96 and 256 x 64, o 128 x 256; sliding layers:
  // 8 query heads (q 256 x 384, o 256 x 256) and 4 KV heads, 8 sinks.
  const auto& full = std::get<attention_gqa>(m.g.layers[0].attention);
  const auto& swa = std::get<attention_gqa>(m.g.layers[2].attention);
  CHECK(full.q_heads == 4);
  CHECK(swa.q_heads == 8);
  CHECK(swa.kv_heads == 4);
  CHECK(swa.value_dim() == 32);
  CHECK(std::holds_alternative<ffn_swiglu>(m.g.layers[0].ffn));
  CHECK(std::holds_alternative<ffn_moe>(m.g.layers[1].ffn));
  CHECK(testing::import_error(with("[0, 1]")).find("hybrid_layer_pattern") != std::string::npos);
  CHECK(testing::import_error(with("[0, 2, 1]")).find("hybrid_layer_pattern") != std::string::npos);
}

TEST_CASE("mimo_v2_flash: an FP8 exclusion list is read, also under vLLM's ignored_layers") {
  // The published config lists no unconverted modules. A list naming one layer's o_proj (the
  // form a BF16 o_proj would take) is refused at that entry, under either key, never passed over
  // silently: calc keeps one format for o_proj across layers, not one per module.
  std::ifstream in(fixture("XiaomiMiMo--MiMo-V2-Flash/config.json"));
  const std::string cfg{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string anchor = R"("quant_method": "fp8",)";
  for (const char* key : {"modules_to_not_convert", "ignored_layers"}) {
    CAPTURE(key);
    std::string c = cfg;
    c.insert(c.find(anchor) + anchor.size(),
             fmt::format(R"( "{}": ["model.layers.0.self_attn.o_proj"],)", key));
    std::string e = testing::import_error(c);
    CHECK(e.find(std::string(key) + "[0]") != std::string::npos);
    CHECK(e.find("o_proj") != std::string::npos);
  }
  // The head listed reads as before (it stays in the model dtype either way).
  std::string c = cfg;
  c.insert(c.find(anchor) + anchor.size(), R"( "ignored_layers": ["lm_head"],)");
  CHECK(weight_bytes(from_json(c)) ==
        weight_bytes(testing::model(fixture("XiaomiMiMo--MiMo-V2-Flash"))));
}
