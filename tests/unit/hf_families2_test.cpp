// Families the Hugging Face import reads since issue 21's second round (src/spec/hf/families.cpp):
// phi, starcoder2, olmo2, cohere, minimax_m2. Each from a public config (tests/fixtures/hf,
// sources and how faithful each copy is in SOURCES.md), its parameters checked against the
// published total and its state at 8K and 128K worked by hand in the comment.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

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

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


}  // namespace

TEST_CASE("phi (Phi-2): LayerNorms with biases, biased MLP and head; 2,779,683,840 parameters") {
  testing::model m(fixture("microsoft--phi-2"));
  // Published: microsoft/phi-2's safetensors hold 2,779,683,840 parameters (the model card's
  // 2.7B). By hand: per layer Q, K, V and dense 4 x (2560^2 + 2560) = 26,224,640; fc1 2560 x
  // 10240 + 10240 and fc2 10240 x 2560 + 2560 = 52,441,600; one LayerNorm 2 x 2560; x 32
  // layers = 2,517,483,520; embedding and untied head 2 x 51200 x 2560 = 262,144,000; the
  // head's bias 51,200; the final LayerNorm 5,120.
  CHECK(params(m) == 2'779'683'840);
  CHECK(weight_bytes(m) == 2LL * 2'779'683'840);  // float16 throughout
  // MHA, 32 heads x 80, FP16: 2 x 32 x 80 x 2 B x 32 layers = 327,680 B/token.
  CHECK(state(m, 8192) == 327'680LL * 8192);      // 2,684,354,560 B
  CHECK(state(m, 131072) == 327'680LL * 131072);  // 42,949,672,960 B
  CHECK(m.spec.head_bias);
  CHECK(m.spec.layer_norm);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 2048);
}

TEST_CASE("phi: a tied Phi-2 head cannot carry lm_head's bias") {
  CHECK(testing::import_error(R"({"model_type": "phi", "tie_word_embeddings": true})")
            .find("tie_word_embeddings") != std::string::npos);
}

TEST_CASE("starcoder2 (StarCoder2-3B): LayerNorm, biases, GELU MLP, window 4096; 3,030,371,328") {
  testing::model m(fixture("starcoder2-3b.json"));
  // Published: bigcode/starcoder2-3b, 3,030,371,328 parameters (3.03B). By hand: per layer
  // Q and O 3072^2 + 3072 each, K and V 3072 x 256 + 256 each (20,453,888); c_fc and c_proj
  // 2 x 3072 x 12288 + 12288 + 3072 (75,512,832); two LayerNorms 4 x 3072; x 30 layers =
  // 2,879,370,240; one tied 49152 x 3072 table 150,994,944; the final LayerNorm 6,144.
  CHECK(params(m) == 3'030'371'328);
  // Every layer slides over 4096 tokens: 2 x 2 x 128 x 2 B x 30 = 30,720 B/token, at most 4096.
  CHECK(state(m, 8192) == 30'720LL * 4096);    // 125,829,120 B
  CHECK(state(m, 131072) == 30'720LL * 4096);  // the same: the window caps the cache
}

TEST_CASE("olmo2 (OLMo-2-0425-1B): Q/K norms over all heads; 1,484,916,736 parameters") {
  testing::model m(fixture("olmo-2-0425-1b.json"));
  // Published: allenai/OLMo-2-0425-1B, 1,484,916,736 parameters (1.48B). By hand: per layer
  // MHA 4 x 2048^2 = 16,777,216, q_norm and k_norm 2048 each (over all 16 heads of 128, not
  // one 128-wide vector), SwiGLU 3 x 2048 x 8192 = 50,331,648, two norms 4,096; x 16 =
  // 1,073,872,896; untied embedding and head 2 x 100352 x 2048; the final norm 2,048.
  CHECK(params(m) == 1'484'916'736);
  // 2 x 16 x 128 x 2 B x 16 layers = 131,072 B/token (BF16: the copy has no torch_dtype).
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
}

TEST_CASE("cohere (Aya-23-8B's config): one bias-free LayerNorm per layer; 8,028,033,024") {
  testing::model m(fixture("aya-23-8b.json"));
  // Published: CohereForAI/aya-23-8B, 8.03B parameters. By hand: per layer GQA 32/8 x 128
  // 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; SwiGLU 3 x 4096 x 14336 = 176,160,768; one
  // LayerNorm without bias 4,096; x 32 = 6,979,452,928; one tied 256000 x 4096 table
  // 1,048,576,000; the final norm 4,096.
  CHECK(params(m) == 8'028'033'024);
  CHECK_FALSE(m.spec.layer_norm);  // no bias: one weight vector per norm, as an RMSNorm
  // 2 x 8 x 128 x 2 B x 32 layers = 131,072 B/token.
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
}

TEST_CASE("cohere: use_qk_norm spans every head (Command R+)") {
  // The same layers with use_qk_norm: CohereLayerNorm((heads, head_dim)) without bias adds
  // 32 x 128 + 8 x 128 = 5,120 weights per layer.
  testing::model plain(fixture("aya-23-8b.json"));
  std::string json = R"({"model_type": "cohere", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 256000, "use_qk_norm": true})";
  testing::model normed = testing::model::from_text(hf::import_text(json, "c.json", "c").plain);
  CHECK(params(normed) - params(plain) == 32LL * (32 * 128 + 8 * 128));
}

TEST_CASE("minimax_m2 (MiniMax-M2.5): per_layer Q/K norms, 256 experts; 228,689,764,864") {
  testing::model m(fixture("minimax-m2.5-bf16.json"));
  // Published: MiniMax-M2.5's model card, 230B total parameters (10B active); the main model
  // without the MTP modules counts 228,689,764,864. By hand: per layer GQA 48/8 x 128
  // 3072 x 6144 + 2 x 3072 x 1024 + 6144 x 3072 = 44,040,192; q_norm 6144 and k_norm 1024
  // (qk_norm_type per_layer: over all heads); 256 experts 3 x 3072 x 1536 = 3,623,878,656,
  // the router 256 x 3072 and its correction bias 256; two norms 6,144; x 62 =
  // 227,460,568,576; untied embedding and head 2 x 200064 x 3072; the final norm 3,072.
  CHECK(params(m) == 228'689'764'864);
  // 2 x 8 x 128 x 2 B x 62 layers = 253,952 B/token.
  CHECK(state(m, 8192) == 253'952LL * 8192);      // 2,080,374,784 B
  CHECK(state(m, 131072) == 253'952LL * 131072);  // 33,285,996,544 B
}

TEST_CASE("minimax_m2: a per-head norm or a linear-attention layer is refused at its field") {
  CHECK(testing::import_error(R"({"model_type": "minimax_m2", "qk_norm_type": "per_head"})")
            .find("qk_norm_type") != std::string::npos);
  CHECK(testing::import_error(R"({"model_type": "minimax_m2", "attn_type_list": [1, 0]})")
            .find("attn_type_list") != std::string::npos);
  CHECK(testing::import_error(R"({"model_type": "minimax_m2", "shared_intermediate_size": 512})")
            .find("shared_intermediate_size") != std::string::npos);
}

TEST_CASE("internlm2 (InternLM2.5-7B-Chat): fused wqkv, one bias flag; 7,737,708,544 parameters") {
  testing::model m(fixture("internlm2_5-7b-chat.json"));
  // Published: internlm/internlm2_5-7b-chat, 7.74B parameters. By hand: per layer wqkv 4096 x
  // (4096 + 2 x 1024) = 25,165,824, wo 4096^2, SwiGLU 3 x 4096 x 14336 = 176,160,768, two
  // norms 8,192; x 32 = 6,979,584,000; untied embedding and head 2 x 92544 x 4096 =
  // 758,120,448; the final norm 4,096. bias: false, so no biases.
  CHECK(params(m) == 7'737'708'544);
  // 2 x 8 x 128 x 2 B x 32 layers = 131,072 B/token.
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
}

TEST_CASE("schema: qk_norm_full needs qk_norm; head_bias needs an untied head") {
  const std::string base = R"(name: t
vocab: 100
hidden: 64
layers:
  count: 2
  ffn: {kind: swiglu, intermediate: 128}
)";
  CHECK(testing::error_of(base + "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, "
                                 "qk_norm_full: true}\n")
            .find("qk_norm_full: needs qk_norm") != std::string::npos);
  CHECK(testing::error_of("tie_embeddings: true\nhead_bias: true\n" + base +
                          "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}\n")
            .find("head_bias") != std::string::npos);
  // Counts: q_norm 4 x 16 and k_norm 2 x 16 per layer against 16 + 16; the head's bias V values.
  testing::model per_head = testing::model::from_text(
      base + "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true}\n");
  testing::model full = testing::model::from_text(
      base + "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, qk_norm: true, "
             "qk_norm_full: true}\n");
  CHECK(params(full) - params(per_head) == 2 * ((64 + 32) - (16 + 16)));
  testing::model biased = testing::model::from_text(
      "head_bias: true\n" + base + "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, "
                                   "qk_norm: true}\n");
  CHECK(params(biased) - params(per_head) == 100);
}

TEST_CASE("granitemoehybrid (Granite-4.0-H-350M): Mamba2 and NoPE attention by layer_types") {
  testing::model m(fixture("granite-4.0-h-350m.json"));
  // Published: 340M parameters (Ollama's granite4:350m-h; SOURCES.md). By hand, inner = 48 x 32
  // = 1536, G = 1 x 128: 28 Mamba2 layers of in_proj 768 x (2 x 1536 + 2 x 128 + 48) =
  // 2,592,768, out_proj 1536 x 768, conv1d (1536 + 256) x 4 and its bias 1792, dt_bias, A_log
  // and D 3 x 48, the gated norm 1536 (3,783,056 each); 4 attention layers of GQA 12/4 x 64
  // (1,572,864 each); on all 32 layers the shared SwiGLU MLP 3 x 768 x 2048 = 4,718,592 and two
  // norms; one tied 100352 x 768 table; the final norm.
  CHECK(params(m) == 340'332'224);
  // KV: 2 x 4 x 64 x 2 B x 4 attention layers = 4,096 B/token. Fixed per request, on each of
  // the 28 Mamba2 layers: the recurrent state 48 x 32 x 128 FP32 = 786,432 B and the conv slots
  // (1536 + 256) x 4 BF16 = 14,336 B: 22,421,504 B.
  CHECK(state(m, 8192) == 4'096LL * 8192 + 22'421'504);      // 55,975,936 B
  CHECK(state(m, 131072) == 4'096LL * 131072 + 22'421'504);  // 559,292,416 B
}

TEST_CASE("granitemoehybrid: routed experts join the shared MLP; an unknown layer type is refused") {
  // The 350M layers with 8 experts of 512, top 2 (Granite 4.0-H-Tiny's form): every layer adds
  // 8 x 3 x 768 x 512 expert weights and a 8 x 768 router beside the shared MLP.
  std::string layers = R"("num_hidden_layers": 2,
    "hidden_size": 768, "num_attention_heads": 12, "num_key_value_heads": 4, "vocab_size": 1000,
    "mamba_n_heads": 48, "mamba_d_head": 32, "mamba_d_state": 128, "shared_intermediate_size": 2048,
    "intermediate_size": 512, "model_type": "granitemoehybrid")";
  const std::string types = R"(, "layer_types": ["mamba", "attention"])";
  testing::model dense =
      testing::model::from_text(hf::import_text("{" + layers + types + "}", "g.json", "g").plain);
  testing::model moe = testing::model::from_text(
      hf::import_text("{" + layers + types + R"(, "num_local_experts": 8, "num_experts_per_tok": 2})",
                      "g.json", "g")
          .plain);
  CHECK(params(moe) - params(dense) == 2LL * (8 * 3 * 768 * 512 + 8 * 768));
  CHECK(testing::import_error("{" + layers + R"(, "layer_types": ["mamba", "linear"]})")
            .find("layer_types[1]: unknown layer type 'linear'") != std::string::npos);
}

TEST_CASE("seed_oss (Seed-OSS-36B): Q/K/V biases, no output bias; 36,151,104,512 parameters") {
  testing::model m(fixture("seed-oss-36b-instruct.json"));
  // Published: ByteDance-Seed/Seed-OSS-36B-Instruct, 36B parameters (36.15B). By hand: per
  // layer q_proj 5120 x 10240 (80 heads x 128, not hidden / heads = 64) with its bias 10,240;
  // k_proj and v_proj 5120 x 1024 with biases 1,024 each; o_proj 10240 x 5120 without bias
  // (attention_out_bias false); SwiGLU 3 x 5120 x 27648; two norms; x 64 layers =
  // 34,562,506,752; untied embedding and head 2 x 155136 x 5120; the final norm.
  CHECK(params(m) == 36'151'104'512);
  // 2 x 8 x 128 x 2 B x 64 layers = 262,144 B/token.
  CHECK(state(m, 8192) == 262'144LL * 8192);      // 2,147,483,648 B
  CHECK(state(m, 131072) == 262'144LL * 131072);  // 34,359,738,368 B
}

TEST_CASE("ernie4_5_moe (ERNIE-4.5-21B-A3B): MoE on layers 1-27, two shared; 21,825,437,888") {
  testing::model m(fixture("ernie-4.5-21b-a3b.json"));
  // Published: baidu/ERNIE-4.5-21B-A3B, 21B total (21.8B) and 3B active parameters. By hand:
  // attention on all 28 layers GQA 20/4 x 128: 2 x 2560^2 + 2 x 2560 x 512 = 15,728,640, and
  // two norms; layer 0 (before moe_layer_start_index 1) a SwiGLU of 12288: 94,371,840; layers
  // 1 to 27 (moe_layer_end_index) 64 experts 3 x 2560 x 1536 each = 754,974,720, two shared
  // experts of 1536 as one SwiGLU of 3072 = 23,592,960, the router 64 x 2560 and its
  // correction bias 64; one tied 103424 x 2560 table; the final norm.
  CHECK(params(m) == 21'825'437'888);
  // 2 x 4 x 128 x 2 B x 28 layers = 57,344 B/token.
  CHECK(state(m, 8192) == 57'344LL * 8192);      // 469,762,048 B
  CHECK(state(m, 131072) == 57'344LL * 131072);  // 7,516,192,768 B
}

TEST_CASE("ernie4_5_moe: moe_layer_end_index bounds the MoE layers; negative means the last") {
  std::string base = R"({"model_type": "ernie4_5_moe", "hidden_size": 64, "intermediate_size": 128,
    "moe_intermediate_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "moe_num_experts": 4, "moe_k": 2, "moe_layer_start_index": 1,
    "vocab_size": 100, )";
  auto count = [&](const std::string& end) {
    return params(testing::model::from_text(
        hf::import_text(base + R"("moe_layer_end_index": )" + end + "}", "e.json", "e").plain));
  };
  // Ending at layer 2 leaves layer 3 dense: one MoE block (4 x 3 x 64 x 32 + 4 x 64 + 4) fewer,
  // one SwiGLU of 128 (3 x 64 x 128) more.
  CHECK(count("3") - count("2") == (4 * 3 * 64 * 32 + 4 * 64 + 4) - 3 * 64 * 128);
  CHECK(count("-1") == count("3"));
}

TEST_CASE("exaone4 (EXAONE-4.0-32B): 3 local layers to 1 global, per-head Q/K norms; 32,003,216,384") {
  testing::model m(fixture("exaone-4.0-32b.json"));
  // Published: LGAI-EXAONE/EXAONE-4.0-32B, 30.95B parameters without embeddings (the model
  // card); with the untied embedding and head 2 x 102400 x 5120 = 1,048,576,000, 32.0B. By
  // hand: per layer GQA 40/8 x 128 2 x 5120^2 + 2 x 5120 x 1024 = 62,914,560, q_norm and k_norm
  // 128 each, SwiGLU 3 x 5120 x 27392 = 420,741,120, two post-norms 10,240; x 64 =
  // 30,954,635,264; the final norm 5,120.
  CHECK(params(m) == 32'003'216'384);
  // sliding_window_pattern 4: layers 3, 7, ... global (16), the other 48 slide over 4096 tokens.
  // Per token and layer 2 x 8 x 128 x 2 B = 4,096 B: global 16 x 4,096 = 65,536 B/token; local
  // 48 x 4,096 x 4096 tokens = 805,306,368 B once the window is full.
  CHECK(state(m, 8192) == 65'536LL * 8192 + 805'306'368);      // 1,342,177,280 B
  CHECK(state(m, 131072) == 65'536LL * 131072 + 805'306'368);  // 9,395,240,960 B
}

TEST_CASE("exaone4: the letters form LLLG and no window read as the reference does") {
  std::string base = R"({"model_type": "exaone4", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "vocab_size": 100, )";
  auto at = [&](const std::string& tail, std::int64_t n) {
    return state(testing::model::from_text(
                     hf::import_text(base + tail + "}", "x.json", "x").plain),
                 n);
  };
  // Per token and layer 2 x 2 x 16 x 2 B = 128 B; window 4 on 6 of 8 layers.
  std::int64_t letters = at(R"("sliding_window": 4, "sliding_window_pattern": "LLLG")", 100);
  CHECK(letters == at(R"("sliding_window": 4, "sliding_window_pattern": 4)", 100));
  CHECK(letters == 2 * 128 * 100 + 6 * 128 * 4);
  // EXAONE-4.0-1.2B's form: no window, every layer full.
  CHECK(at(R"("sliding_window": null, "sliding_window_pattern": "LLLG")", 100) == 8 * 128 * 100);
  CHECK(testing::import_error(base + R"("sliding_window": 4, "sliding_window_pattern": "LLXG"})")
            .find("sliding_window_pattern") != std::string::npos);
}

TEST_CASE("olmoe (OLMoE-1B-7B): 64 experts top-8, Q/K norms over all heads; 6,919,161,856") {
  testing::model m(fixture("olmoe-1b-7b.json"));
  // Published: allenai/OLMoE-1B-7B-0924, 6.92B parameters (1B active). By hand: per layer MHA
  // 4 x 2048^2 = 16,777,216, q_norm and k_norm 2048 each, 64 experts 3 x 2048 x 1024 =
  // 402,653,184, the router 64 x 2048, two norms; x 16 = 6,713,114,624; untied embedding and
  // head 2 x 50304 x 2048 = 206,045,184; the final norm.
  CHECK(params(m) == 6'919'161'856);
  CHECK(weight_bytes(m) == 4LL * 6'919'161'856);  // float32 throughout
  // FP32 cache (the model dtype): 2 x 16 x 128 x 4 B x 16 layers = 262,144 B/token.
  CHECK(state(m, 8192) == 262'144LL * 8192);      // 2,147,483,648 B
  CHECK(state(m, 131072) == 262'144LL * 131072);  // 34,359,738,368 B
}

TEST_CASE("mistral3 (Mistral Small 3.x 24B): the text model in text_config; 23,572,403,200") {
  testing::model m(fixture("mistral-small-3.2-24b.json"));
  // Published: 23,572,403,200 parameters for the text model (mistralai/Mistral-Small-24B-Base-
  // 2501, the same language model; the 3.1 / 3.2 repositories' 24B adds the Pixtral tower,
  // which is not counted here). By hand: per layer q_proj 5120 x 4096 (32 heads x 128), k and v
  // 5120 x 1024, o_proj 4096 x 5120 = 52,428,800; SwiGLU 3 x 5120 x 32768 = 503,316,480; two
  // norms; x 40 = 22,230,220,800; untied embedding and head 2 x 131072 x 5120; the final norm.
  CHECK(params(m) == 23'572'403'200);
  // sliding_window null: full attention on every layer. 2 x 8 x 128 x 2 B x 40 = 163,840 B/token.
  CHECK(state(m, 8192) == 163'840LL * 8192);      // 1,342,177,280 B
  CHECK(state(m, 131072) == 163'840LL * 131072);  // 21,474,836,480 B
  // The Pixtral tower and projector are counted apart, as a component (hf_vision_test.cpp).
  CHECK(hf::import_config(fixture("mistral-small-3.2-24b.json")).yaml.find(
            "# Counted apart: the vision tower and projector") != std::string::npos);
}

TEST_CASE("granite (Granite-3.3-2B): Llama's layers, tied head, µP multipliers; 2,533,539,840") {
  testing::model m(fixture("granite-3.3-2b.json"));
  // Published: ibm-granite/granite-3.3-2b-instruct, 2.53B parameters. By hand: per layer GQA
  // 32/8 x 64: 2 x 2048^2 + 2 x 2048 x 512 = 10,485,760; SwiGLU 3 x 2048 x 8192 = 50,331,648;
  // two norms; x 40 = 2,432,860,160; one tied 49159 x 2048 table 100,677,632; the final norm.
  CHECK(params(m) == 2'533'539'840);
  // 2 x 8 x 64 x 2 B x 40 layers = 81,920 B/token.
  CHECK(state(m, 8192) == 81'920LL * 8192);      // 671,088,640 B
  CHECK(state(m, 131072) == 81'920LL * 131072);  // 10,737,418,240 B
}

TEST_CASE("minimax_m2: the published FP8 config's modules_to_not_convert reads") {
  // MiniMax-M2.x publish FP8 blocks of 128 x 128 with gate (the router), e_score_correction_bias
  // and lm_head left out: the bias is a vector calc never converts, the head keeps BF16 and the
  // router F32, as the M2.5 and M2.7 listings store it (minimax_m2's router_dtype).
  std::string json = text_of(fixture("minimax-m2.5-bf16.json"));
  const std::string dtype = R"("torch_dtype": "bfloat16")";
  json.replace(json.find(dtype), dtype.size(),
               R"("torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8",
      "fmt": "float8_e4m3fn", "weight_block_size": [128, 128], "activation_scheme": "dynamic",
      "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]})");
  testing::model m =
      testing::model::from_text(hf::import_text(json, "minimax.json", "minimax").plain);
  CHECK(params(m) == 228'689'764'864);
  // By hand, per layer: FP8 attention 44,040,192 B and experts 3,623,878,656 B, one FP32
  // scale per 128 x 128 block of each matrix (q and o 1,152 blocks each, k and v 192 each: 10,752
  // B; the experts 221,184 blocks: 884,736 B); x 62 = 227,466,488,832 B. BF16: embedding and
  // head 2 x 200064 x 3072 x 2 B = 2,458,386,432; per layer two norms 6,144 and q_norm 6,144 +
  // k_norm 1,024 (13,312 values, x 62 x 2 B = 1,650,688); FP32 as MiniMax's files store them:
  // the router 256 x 3072 (62 x 786,432 x 4 B = 195,035,136) and the routing bias
  // (precision.router_bias), 62 x 256 x 4 = 63,488 B; the final norm 6,144 B. Total
  // 230,121,630,720 B: M2.5's listing (214.32 GiB) to the byte.
  CHECK(weight_bytes(m) == 230'121'630'720);
}
