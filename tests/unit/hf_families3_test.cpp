// Families the Hugging Face import reads since issue 21's fourth round
// (src/spec/hf/families_more.cpp): cohere2, gemma, glm4, glm, qwen2_vl, qwen2_5_vl, dots1, exaone,
// bailing_moe, gpt_neox, chatglm, phimoe, nemotron, deepseek, dbrx, stablelm, baichuan, minicpm,
// internlm3, olmo3. Each from a public config (tests/fixtures/hf, sources and how faithful each
// copy is in SOURCES.md), its parameters checked against the published total and its state at 8K
// and 128K worked by hand in the comment; and the bundles made from them.
#include <doctest/doctest.h>

#include <string>

#include "spec/hf/import.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::from_json;
using testing::params;
using testing::weight_bytes;
using testing::state;

}  // namespace

TEST_CASE("cohere2 (Command R7B): 3 sliding layers to 1 global, parallel block; 8,028,033,024") {
  testing::model m(fixture("CohereLabs--c4ai-command-r7b-12-2024"));
  // Published: CohereLabs/c4ai-command-r7b-12-2024, 8.03B parameters (the card's "7 billion"
  // class; the Hub's safetensors count). By hand: per layer GQA 32/8 x 128 2 x 4096^2 +
  // 2 x 4096 x 1024 = 41,943,040; SwiGLU 3 x 4096 x 14336 = 176,160,768; one LayerNorm without
  // bias 4,096 (attention and MLP read the same normed input); x 32 = 6,979,452,928; one tied
  // 256000 x 4096 table 1,048,576,000; the final norm 4,096.
  CHECK(params(m) == 8'028'033'024);
  CHECK(weight_bytes(m) == 2LL * 8'028'033'024);  // bfloat16
  // sliding_window_pattern 4: layers 3, 7, ..., 31 (8) global, the other 24 keep 4096 tokens.
  // K and V of 8 heads x 128 in bf16: 4,096 B per token and layer.
  //   8K:   8 x 8192 x 4096 + 24 x 4096 x 4096 = 268,435,456 + 402,653,184 = 671,088,640 B
  //   128K: 8 x 131072 x 4096 + 402,653,184 = 4,294,967,296 + 402,653,184 = 4,697,620,480 B
  CHECK(state(m, 8192) == 671'088'640);
  CHECK(state(m, 131072) == 4'697'620'480);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 8192);
}

TEST_CASE("cohere2 (Command A's sizes): 111,057,580,032 parameters, 16 global layers of 64") {
  // Command A (CohereLabs/c4ai-command-a-03-2025): no copy of its config.json was found; these
  // are its sizes as two published model catalogues give them (tests/fixtures/hf/SOURCES.md),
  // in the form the R7B file spells them. Published: 111.058B parameters. By hand: per layer
  // GQA 96/8 x 128: 2 x 12288^2 + 2 x 12288 x 1024 = 327,155,712; SwiGLU 3 x 12288 x 36864 =
  // 1,358,954,496; one norm 12,288; x 64 = 107,911,839,744; the tied 256000 x 12288 table
  // 3,145,728,000; the final norm 12,288.
  testing::model m = from_json(R"({"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2",
    "hidden_size": 12288, "intermediate_size": 36864, "num_hidden_layers": 64,
    "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 256000,
    "sliding_window": 4096, "sliding_window_pattern": 4, "logit_scale": 0.25,
    "use_parallel_block": true, "torch_dtype": "bfloat16"})");
  CHECK(params(m) == 111'057'580'032);
  // 16 global layers and 48 sliding ones, 4,096 B per token and layer:
  //   8K:   16 x 8192 x 4096 + 48 x 4096 x 4096 = 536,870,912 + 805,306,368 = 1,342,177,280 B
  //   128K: 16 x 131072 x 4096 + 805,306,368 = 8,589,934,592 + 805,306,368 = 9,395,240,960 B
  CHECK(state(m, 8192) == 1'342'177'280);
  CHECK(state(m, 131072) == 9'395'240'960);
}

TEST_CASE("cohere2: layer_types decide over the pattern; remote-code flags are read or refused") {
  const std::string dims = R"("model_type": "cohere2", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
    "sliding_window": 16)";
  // Tiny Aya's form (transformers 5 writes layer_types): the list decides, here 2 and 2.
  testing::model listed = from_json("{" + dims + R"(, "layer_types": ["sliding_attention",
    "full_attention", "sliding_attention", "full_attention"]})");
  testing::model pattern = from_json("{" + dims + R"(, "sliding_window_pattern": 2})");
  CHECK(state(listed, 1024) == state(pattern, 1024));
  // 2 full layers x 1024 tokens + 2 sliding x 16, 2 x 2 x 64 x 2 B = 512 B per token and layer.
  CHECK(state(pattern, 1024) == (2LL * 1024 + 2LL * 16) * 512);
  // A sequential block, a Q/K norm, another layer order or an untied embedding flag would change
  // the count or the cache: each is an error at its field, never read as this family.
  for (const char* field : {R"("use_parallel_block": false)", R"("use_qk_norm": true)",
                            R"("order_of_interleaved_layers": "global_attn_first")",
                            R"("use_embedding_sharing": false)", R"("layer_norm_bias": true)"}) {
    std::string f = field;
    CAPTURE(f);
    std::string err = testing::import_error("{" + dims + ", " + f + "}");
    CHECK(err.find(f.substr(1, f.find('"', 1) - 1)) != std::string::npos);
  }
}

TEST_CASE("gemma (Gemma-7B): head_dim 256, MHA, tied head; 8,537,680,896 parameters") {
  testing::model m(fixture("google--gemma-7b"));
  // Published: google/gemma-7b, 8,537,680,896 parameters (8.54B). By hand: per layer q, k, v
  // 3072 x 4096 (16 heads x 256) and o 4096 x 3072 = 50,331,648; GeGLU 3 x 3072 x 24576 =
  // 226,492,416; two norms 6,144; x 28 = 7,751,245,824; one tied 256000 x 3072 table
  // 786,432,000; the final norm 3,072.
  CHECK(params(m) == 8'537'680'896);
  // MHA: 2 x 16 x 256 x 2 B x 28 layers = 458,752 B/token.
  CHECK(state(m, 8192) == 458'752LL * 8192);      // 3,758,096,384 B
  CHECK(state(m, 131072) == 458'752LL * 131072);  // 60,129,542,144 B
}

TEST_CASE("glm4 (GLM-4-9B-0414's sizes): Q/K/V biases, four norms a layer; 9,400,279,040") {
  testing::model m(fixture("glm-4-9b-0414-finetune.json"));
  // Published: THUDM/GLM-4-9B-0414, 9.4B parameters. By hand: per layer q 4096 x 4096 + 4096,
  // k and v 4096 x 256 + 256 each, o 4096 x 4096 without bias = 35,656,192; SwiGLU (gate_up
  // fused) 3 x 4096 x 13696 = 168,296,448; four norms 16,384; x 40 = 8,158,760,960; untied
  // embedding and head 2 x 151552 x 4096 = 1,241,513,984; the final norm 4,096.
  CHECK(params(m) == 9'400'279'040);
  // 2 x 2 x 128 x 2 B x 40 layers = 40,960 B/token.
  CHECK(state(m, 8192) == 40'960LL * 8192);      // 335,544,320 B
  CHECK(state(m, 131072) == 40'960LL * 131072);  // 5,368,709,120 B
}

TEST_CASE("glm (glm-4-9b-chat-hf's class): GLM-4's layers with two norms; glm4 with four") {
  // GlmConfig's defaults are glm-4-9b-chat's sizes; the layer is GLM-4-0414's without the two
  // post norms: 40 x 2 x 4096 = 327,680 fewer weights.
  testing::model glm = from_json(R"({"model_type": "glm", "torch_dtype": "bfloat16"})");
  testing::model glm4(fixture("glm-4-9b-0414-finetune.json"));
  CHECK(params(glm4) - params(glm) == 327'680);
  CHECK(params(glm) == 9'399'951'360);
  CHECK(state(glm, 8192) == state(glm4, 8192));
}

TEST_CASE("qwen2_5_vl (Qwen2.5-VL-7B-Instruct): Qwen2.5-7B's layers beside the vision tower") {
  testing::model m(fixture("Qwen--Qwen2.5-VL-7B-Instruct"));
  // The language model is Qwen2.5-7B's: 7,615,616,512 parameters (Q/K/V biases, untied
  // 152064-token head). Published: Qwen/Qwen2.5-VL-7B-Instruct, 8,292,166,656 parameters with
  // the vision tower, which calc reports apart (not counted here; the checkpoint headers name
  // it). The tower by hand (Qwen2_5_VLVisionConfig: depth 32, 1280 wide, MLP 3420, 16 heads,
  // patch 14, temporal 2, merge 2, out 3584): patch embedding 1280 x 3 x 2 x 14 x 14 =
  // 1,505,280; per block two RMSNorms 2,560, qkv 1280 x 3840 + 3840, proj 1280^2 + 1280, gated
  // MLP 2 x (1280 x 3420 + 3420) + 3420 x 1280 + 1280 = 19,702,200, x 32 = 630,470,400; merger
  // ln_q 1280, 5120 x 5120 + 5120, 5120 x 3584 + 3584 = 44,574,464. Tower 676,550,144.
  CHECK(params(m) == 7'615'616'512);
  const std::int64_t tower = 1'505'280 + 32LL * 19'702'200 + 44'574'464;
  CHECK(tower == 676'550'144);
  CHECK(params(m) + tower == 8'292'166'656);
  // use_sliding_window false: every layer full. 2 x 4 x 128 x 2 B x 28 = 57,344 B/token.
  CHECK(state(m, 8192) == 57'344LL * 8192);      // 469,762,048 B
  CHECK(state(m, 131072) == 57'344LL * 131072);  // 7,516,192,768 B
  CHECK(hf::import_config(fixture("Qwen--Qwen2.5-VL-7B-Instruct"))
            .yaml.find("# Counted apart: the vision tower") != std::string::npos);
}

TEST_CASE("qwen2_vl (Qwen2-VL-7B-Instruct): the flat form and text_config read the same") {
  testing::model m(fixture("qwen2-vl-7b-instruct-finetune.json"));
  // The language model is Qwen2.5-7B's sizes again: 7,615,616,512. Published:
  // Qwen/Qwen2-VL-7B-Instruct, 8,291,375,616 parameters with the tower. The tower by hand
  // (Qwen2VLVisionConfig: depth 32, embed_dim 1280, mlp_ratio 4, patch 14, temporal 2, merge 2,
  // hidden 3584): patch embedding 1,505,280; per block two LayerNorms with bias 5,120, qkv
  // 1280 x 3840 + 3840, proj 1280^2 + 1280, fc1 1280 x 5120 + 5120, fc2 5120 x 1280 + 1280 =
  // 19,677,440, x 32 = 629,678,080; merger ln_q 2,560, 5120 x 5120 + 5120, 5120 x 3584 + 3584 =
  // 44,575,744. Tower 675,759,104.
  CHECK(params(m) == 7'615'616'512);
  const std::int64_t tower = 1'505'280 + 32LL * 19'677'440 + 44'575'744;
  CHECK(tower == 675'759'104);
  CHECK(params(m) + tower == 8'291'375'616);
  // use_sliding_window false: 2 x 4 x 128 x 2 B x 28 = 57,344 B/token.
  CHECK(state(m, 8192) == 57'344LL * 8192);      // 469,762,048 B
  CHECK(state(m, 131072) == 57'344LL * 131072);  // 7,516,192,768 B
  // transformers 5 writes the language model into text_config: the same reading.
  const std::string text = R"("hidden_size": 3584, "intermediate_size": 18944,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "vocab_size": 152064, "max_window_layers": 28, "sliding_window": 32768,
    "use_sliding_window": false, "tie_word_embeddings": false, "torch_dtype": "bfloat16")";
  testing::model nested =
      from_json(R"({"model_type": "qwen2_vl", "text_config": {"model_type": "qwen2_vl_text", )" +
                text + "}}");
  CHECK(params(nested) == params(m));
  CHECK(state(nested, 8192) == state(m, 8192));
}

TEST_CASE("dots1 (dots.llm1.base): Qwen3 attention, 128 experts top-6, 2 shared; 142,774,381,696") {
  testing::model m(fixture("rednote-hilab--dots.llm1.base"));
  // Published: rednote-hilab/dots.llm1.base, 142B total parameters (14B active). By hand: per
  // layer MHA 4 x 4096^2 = 67,108,864 and per-head q_norm, k_norm 2 x 128; two norms 8,192.
  // Layer 0 (first_k_dense_replace 1): SwiGLU 3 x 4096 x 10944 = 134,479,872, so 201,597,184.
  // Layers 1-61: 128 experts 128 x 3 x 4096 x 1408 = 2,214,592,512, two shared experts
  // 3 x 4096 x 2816 = 34,603,008, the router 128 x 4096 and its correction bias 128 =
  // 2,249,719,936, so 2,316,837,248 each, 141,327,072,128 in all. Untied embedding and head
  // 2 x 152064 x 4096 = 1,245,708,288; the final norm 4,096.
  CHECK(params(m) == 142'774'381'696);
  // MHA, 32 KV heads x 128, bf16: 2 x 32 x 128 x 2 B x 62 layers = 1,015,808 B/token.
  CHECK(state(m, 8192) == 1'015'808LL * 8192);      // 8,321,499,136 B
  CHECK(state(m, 131072) == 1'015'808LL * 131072);  // 133,143,986,176 B
}

TEST_CASE("dots1: the expert widths have no default") {
  CHECK(testing::import_error(R"({"model_type": "dots1", "hidden_size": 256,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 64,
    "first_k_dense_replace": 1})")
            .find("n_routed_experts") != std::string::npos);
}

TEST_CASE("exaone (EXAONE-3.0-7.8B-Instruct): Llama's layers under GPT-2 names; 7,818,448,896") {
  testing::model m(fixture("exaone-3.0-7.8b-instruct-bf16.json"));
  // Published: LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct, 7.8B parameters. By hand: per layer GQA
  // 32/8 x 128: 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; the gated MLP c_fc_0, c_fc_1, c_proj
  // 3 x 4096 x 14336 = 176,160,768; ln_1 and ln_2 8,192; x 32 (num_layers) = 6,979,584,000;
  // untied wte and lm_head 2 x 102400 x 4096 = 838,860,800; ln_f 4,096.
  CHECK(params(m) == 7'818'448'896);
  // 2 x 8 x 128 x 2 B x 32 layers = 131,072 B/token.
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
  // The class derives the MLP width when the config leaves it out; calc does not guess it.
  CHECK(testing::import_error(R"({"model_type": "exaone", "hidden_size": 256, "num_layers": 2,
    "num_attention_heads": 4})")
            .find("intermediate_size") != std::string::npos);
}

TEST_CASE("bailing_moe (Ling-Coder-lite): fused QKV, 64 experts top-6, 2 shared; 16,801,974,272") {
  testing::model m(fixture("inclusionAI--Ling-Coder-lite"));
  // Published: inclusionAI/Ling-Coder-lite (Ling-lite's architecture), 16.8B total parameters,
  // 2.75B active. By hand: per layer query_key_value 2048 x (16 + 2 x 4) x 128 = 6,291,456 and
  // dense 2048 x 2048 = 4,194,304; 64 experts 64 x 3 x 2048 x 1408 = 553,648,128, two shared
  // experts 2 x 3 x 2048 x 1408 = 17,301,504, the router 64 x 2048 = 131,072; two norms 4,096;
  // = 581,570,560, x 28 = 16,283,975,680; untied embedding and head 2 x 126464 x 2048 =
  // 517,996,544; the final norm 2,048.
  CHECK(params(m) == 16'801'974'272);
  // 2 x 4 x 128 x 2 B x 28 layers = 57,344 B/token.
  CHECK(state(m, 8192) == 57'344LL * 8192);      // 469,762,048 B
  CHECK(state(m, 131072) == 57'344LL * 131072);  // 7,516,192,768 B
}

TEST_CASE("bailing_moe: biased MLPs (the class default) and a sliding window are refused") {
  const std::string dims = R"("model_type": "bailing_moe", "hidden_size": 256,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
    "moe_intermediate_size": 64, "vocab_size": 100)";
  CHECK(testing::import_error("{" + dims + "}").find("use_bias") != std::string::npos);
  CHECK(testing::import_error("{" + dims + R"(, "use_bias": false, "use_sliding_window": true})")
            .find("use_sliding_window") != std::string::npos);
  CHECK(testing::import_error("{" + dims + R"(, "use_bias": false})").empty());
}

TEST_CASE("gpt_neox (Pythia-6.9B): fused biased QKV, GELU MLP, two LayerNorms; 6,857,302,016") {
  testing::model m(fixture("EleutherAI--pythia-6.9b"));
  // Published: EleutherAI/pythia-6.9b, 6,857,302,016 parameters. By hand: per layer
  // query_key_value 4096 x 12288 + 12288, dense 4096^2 + 4096, dense_h_to_4h 4096 x 16384 +
  // 16384, dense_4h_to_h 16384 x 4096 + 4096, two LayerNorms with biases 4 x 4096 =
  // 201,379,840; x 32 = 6,444,154,880; embed_in and the untied embed_out 2 x 50432 x 4096 =
  // 413,138,944; the final LayerNorm 8,192.
  CHECK(params(m) == 6'857'302'016);
  CHECK(weight_bytes(m) == 2LL * 6'857'302'016);  // float16
  CHECK(m.spec.layer_norm);
  // MHA, 32 heads x 128, FP16: 2 x 32 x 128 x 2 B x 32 layers = 524,288 B/token.
  CHECK(state(m, 8192) == 524'288LL * 8192);      // 4,294,967,296 B
  CHECK(state(m, 131072) == 524'288LL * 131072);  // 68,719,476,736 B
}

TEST_CASE("phimoe (Phi-3.5-MoE-instruct's sizes): 16 experts, LayerNorms, biased head; 41.9B") {
  // The release's config.json is not stored whole anywhere the look-ups reach (its longrope
  // factor lists cut the excerpts); these are its sizes, PhiMoEConfig's defaults, with the
  // release's attention_bias, lm_head_bias and window. Published: microsoft/Phi-3.5-MoE-instruct,
  // 41,873,153,344 parameters (41.9B, 6.6B active). By hand: per layer q and o 4096^2 + 4096, k
  // and v 4096 x 1024 + 1024 = 41,953,280; 16 experts 16 x 3 x 4096 x 6400 = 1,258,291,200; the
  // router 16 x 4096; two LayerNorms with biases 16,384; x 32 = 41,610,444,800; untied
  // embedding and head 2 x 32064 x 4096 = 262,668,288, the head's bias 32,064; the final
  // LayerNorm 8,192.
  testing::model m = from_json(R"({"model_type": "phimoe", "attention_bias": true,
    "lm_head_bias": true, "sliding_window": 131072, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16"})");
  CHECK(params(m) == 41'873'153'344);
  CHECK(m.spec.head_bias);
  // Every layer slides over 131072 tokens (the whole context): 2 x 8 x 128 x 2 B x 32 =
  // 131,072 B/token, at most 131072 tokens.
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
  CHECK(state(m, 262144) == 131'072LL * 131072);  // the window caps the cache
}

TEST_CASE("phimoe (a pruned Phi-3.5-MoE's published config.json): reads as the class") {
  testing::model m(fixture("phimoe-pruned-phi-3.5-moe.json"));
  // No published total for this derivative; by hand: per layer q and o 3584^2 + 3584, k and v
  // 3584 x 896 + 896 (32/8 heads x 112) = 32,121,600; 16 experts 16 x 3 x 3584 x 1920 =
  // 330,301,440; the router 57,344; two LayerNorms 14,336; x 32 = 11,599,831,040; embedding and
  // head 2 x 32064 x 3584 = 229,834,752, the head's bias 32,064; the final LayerNorm 7,168.
  CHECK(params(m) == 11'829'705'024);
  // sliding_window 4096 on every layer: 2 x 8 x 112 x 2 B x 32 = 114,688 B/token, at most 4096.
  CHECK(state(m, 8192) == 114'688LL * 4096);    // 469,762,048 B
  CHECK(state(m, 131072) == 114'688LL * 4096);  // the same
}

TEST_CASE("nemotron (Minitron-8B-Base): relu2 MLP, LayerNorm1P, head_dim 128; 8,271,699,968") {
  testing::model m(fixture("nvidia--Minitron-8B-Base"));
  // Published: nvidia/Minitron-8B-Base, 8.27B parameters. By hand: per layer q 4096 x 6144
  // (48 heads x 128), k and v 4096 x 1024, o 6144 x 4096 = 58,720,256; up and down 2 x 4096 x
  // 16384 = 134,217,728; two LayerNorms with biases 16,384; x 32 = 6,174,539,776; untied
  // embedding and head 2 x 256000 x 4096 = 2,097,152,000; the final LayerNorm 8,192.
  CHECK(params(m) == 8'271'699'968);
  CHECK(m.spec.layer_norm);
  // 2 x 8 x 128 x 2 B x 32 layers = 131,072 B/token.
  CHECK(state(m, 8192) == 131'072LL * 8192);      // 1,073,741,824 B
  CHECK(state(m, 131072) == 131'072LL * 131072);  // 17,179,869,184 B
}

TEST_CASE("deepseek (DeepSeek-MoE-16B-Chat): MHA, 64 experts top-6, 2 shared; 16,375,728,128") {
  testing::model m(fixture("deepseek-ai--deepseek-moe-16b-chat"));
  // Published: deepseek-ai/deepseek-moe-16b-chat, 16.4B parameters. By hand: per layer MHA 4 x
  // 2048^2 = 16,777,216 and two norms 4,096. Layer 0 (first_k_dense_replace 1): SwiGLU 3 x 2048
  // x 10944 = 67,239,936, so 84,021,248. Layers 1-27: 64 experts 64 x 3 x 2048 x 1408 =
  // 553,648,128, two shared 2 x 3 x 2048 x 1408 = 17,301,504, the router 64 x 2048 = 131,072, so
  // 587,862,016 each, 15,872,274,432 in all. Untied embedding and head 2 x 102400 x 2048 =
  // 419,430,400; the final norm 2,048.
  CHECK(params(m) == 16'375'728'128);
  // MHA, 16 heads x 128: 2 x 16 x 128 x 2 B x 28 layers = 229,376 B/token.
  CHECK(state(m, 8192) == 229'376LL * 8192);      // 1,879,048,192 B
  CHECK(state(m, 131072) == 229'376LL * 131072);  // 30,064,771,072 B
  // DeepSeek-V2's first upload under this model_type carries MLA's ranks: an error there.
  CHECK(testing::import_error(R"({"model_type": "deepseek", "kv_lora_rank": 512,
    "q_lora_rank": 1536})")
            .find("lora_rank") != std::string::npos);
}

TEST_CASE("dbrx (DBRX-Instruct): nested attn/ffn configs, 16 experts top-4; 131,596,523,520") {
  testing::model m(fixture("dbrx-instruct"));
  // Published: databricks/dbrx-instruct, 132B total parameters (36B active); the Hub counts
  // 131,596,523,520. By hand: per layer Wqkv 6144 x (6144 + 2 x 1024) = 50,331,648, out_proj
  // 6144^2 = 37,748,736; 16 GLU experts 16 x 3 x 6144 x 10752 = 3,170,893,824, the router
  // 16 x 6144 = 98,304; two bias-free LayerNorms 12,288; x 40 = 130,363,392,000; untied wte and
  // lm_head 2 x 100352 x 6144 = 1,233,125,376; norm_f 6,144.
  CHECK(params(m) == 131'596'523'520);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 32768);  // max_seq_len
  // attn_config.kv_n_heads 8 x 128: 2 x 8 x 128 x 2 B x 40 layers = 163,840 B/token.
  CHECK(state(m, 8192) == 163'840LL * 8192);      // 1,342,177,280 B
  CHECK(state(m, 131072) == 163'840LL * 131072);  // 21,474,836,480 B
}

TEST_CASE("stablelm (StableLM-2-1.6B-Chat): Q/K/V biases, LayerNorms; 1,644,515,328") {
  testing::model m(fixture("stabilityai--stablelm-2-1_6b-chat"));
  // Published: stabilityai/stablelm-2-1_6b, 1,644,515,328 parameters (1.6B). By hand: per layer
  // q, k, v 3 x (2048^2 + 2048) = 12,589,056 and o 2048^2 = 4,194,304; SwiGLU 3 x 2048 x 5632 =
  // 34,603,008; two LayerNorms with biases 8,192; x 24 = 1,233,469,440; untied embedding and
  // head 2 x 100352 x 2048 = 411,041,792; the final LayerNorm 4,096.
  CHECK(params(m) == 1'644'515'328);
  CHECK(weight_bytes(m) == 4LL * 1'644'515'328);  // float32, as the chat release stores it
  // MHA, 32 heads x 64, FP32: 2 x 32 x 64 x 4 B x 24 layers = 393,216 B/token.
  CHECK(state(m, 8192) == 393'216LL * 8192);      // 3,221,225,472 B
  CHECK(state(m, 131072) == 393'216LL * 131072);  // 51,539,607,552 B
  // StableLM 2 12B's parallel block, per-head Q/K LayerNorms and bias-free norms are refused.
  for (const char* f : {"use_parallel_residual", "qk_layernorm"})
    CHECK(testing::import_error(std::string(R"({"model_type": "stablelm", ")") + f + R"(": true})")
              .find(f) != std::string::npos);
  CHECK(testing::import_error(R"({"model_type": "stablelm", "use_norm_bias": false})")
            .find("use_norm_bias") != std::string::npos);
}

TEST_CASE("baichuan (Baichuan2-7B-Base): fused W_pack, MHA; 7,505,973,248 parameters") {
  testing::model m(fixture("baichuan-inc--Baichuan2-7B-Base"));
  // Published: baichuan-inc/Baichuan2-7B-Base, 7.5B parameters. By hand: per layer W_pack
  // 4096 x 3 x 4096 = 50,331,648 and o_proj 4096^2 = 16,777,216; SwiGLU 3 x 4096 x 11008 =
  // 135,266,304; two norms 8,192; x 32 = 6,476,267,520; untied embedding and head 2 x 125696 x
  // 4096 = 1,029,701,632; the final norm 4,096.
  CHECK(params(m) == 7'505'973'248);
  // MHA: 2 x 32 x 128 x 2 B x 32 layers = 524,288 B/token.
  CHECK(state(m, 8192) == 524'288LL * 8192);      // 4,294,967,296 B
  CHECK(state(m, 131072) == 524'288LL * 131072);  // 68,719,476,736 B
}

TEST_CASE("minicpm (MiniCPM-2B-sft-bf16): no model_type, tied by default; 2,724,880,896") {
  testing::model m(fixture("openbmb--MiniCPM-2B-sft-bf16"));
  // Published: openbmb/MiniCPM-2B-sft-bf16, 2.4B parameters without the embedding (2.7B with it).
  // By hand: per layer MHA 4 x 2304^2 = 21,233,664; SwiGLU 3 x 2304 x 5760 = 39,813,120; two
  // norms 4,608; x 40 = 2,442,055,680 (with the final norm 2,442,057,984: the card's 2.4B);
  // one tied 122753 x 2304 table 282,822,912.
  CHECK(params(m) == 2'724'880'896);
  // MHA, 36 heads x 64: 2 x 36 x 64 x 2 B x 40 layers = 368,640 B/token.
  CHECK(state(m, 8192) == 368'640LL * 8192);      // 3,019,898,880 B
  CHECK(state(m, 131072) == 368'640LL * 131072);  // 48,318,382,080 B
  CHECK(
      hf::import_config(fixture("openbmb--MiniCPM-2B-sft-bf16")).yaml.find("model_type minicpm") !=
      std::string::npos);
}

TEST_CASE("internlm3 (InternLM3-8B-Instruct): GQA 32/2, 48 layers; 8,804,241,408 parameters") {
  testing::model m(fixture("internlm--internlm3-8b-instruct"));
  // Published: internlm/internlm3-8b-instruct, 8.8B parameters. By hand: per layer q and o
  // 2 x 4096^2, k and v 2 x 4096 x 256 = 35,651,584; SwiGLU 3 x 4096 x 10240 = 125,829,120; two
  // norms 8,192; x 48 = 7,751,467,008; untied embedding and head 2 x 128512 x 4096 =
  // 1,052,770,304; the final norm 4,096.
  CHECK(params(m) == 8'804'241'408);
  // 2 x 2 x 128 x 2 B x 48 layers = 49,152 B/token.
  CHECK(state(m, 8192) == 49'152LL * 8192);      // 402,653,184 B
  CHECK(state(m, 131072) == 49'152LL * 131072);  // 6,442,450,944 B
  CHECK(testing::import_error(R"({"model_type": "internlm3", "bias": true})").find("bias") !=
        std::string::npos);
}

TEST_CASE("olmo3 (a published OLMo 3 config): OLMo 2's layer, 3 sliding to 1 full") {
  testing::model m(fixture("olmo3-190m-zh-continue.json"));
  // A small published Olmo3ForCausalLM (no published total; by hand): per layer MHA 4 x 768^2 =
  // 2,359,296, q_norm and k_norm over all 12 heads 2 x 768, SwiGLU 3 x 768 x 3072 = 7,077,888,
  // two post-norms 1,536 = 9,440,256; x 12 = 113,283,072; untied embedding and head 2 x 48000 x
  // 768 = 73,728,000; the final norm 768.
  CHECK(params(m) == 187'011'840);
  // layer_types: layers 3, 7, 11 full, the other 9 keep 4096 tokens; 2 x 12 x 64 x 2 B = 3,072 B
  // per token and layer.
  //   8K:   3 x 8192 x 3072 + 9 x 4096 x 3072 = 75,497,472 + 113,246,208 = 188,743,680 B
  //   128K: 3 x 131072 x 3072 + 113,246,208 = 1,207,959,552 + 113,246,208 = 1,321,205,760 B
  CHECK(state(m, 8192) == 188'743'680);
  CHECK(state(m, 131072) == 1'321'205'760);
}

TEST_CASE("olmo3 (Olmo-3-7B's sizes, the class's default layer list): 7,298,011,136") {
  // Olmo-3-1025-7B: hidden 4096, 32 layers of MHA 32 x 128, SwiGLU 11008, vocab 100278, window
  // 4096 (the sizes its published copies give; the release's own file is not stored whole in the
  // look-ups). Published: 7.3B. By hand: per layer 4 x 4096^2 + 2 x 4096 (Q/K norms) + 3 x 4096 x
  // 11008 + 2 x 4096 = 202,391,552; x 32 = 6,476,529,664; untied embedding and head 2 x 100278 x
  // 4096 = 821,477,376; the final norm 4,096.
  testing::model m = from_json(R"({"model_type": "olmo3", "hidden_size": 4096,
    "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "vocab_size": 100278, "sliding_window": 4096,
    "max_position_embeddings": 65536, "dtype": "bfloat16"})");
  CHECK(params(m) == 7'298'011'136);
  // Without layer_types the class lists every 4th layer full: 8 full, 24 sliding over 4096;
  // 2 x 32 x 128 x 2 B = 16,384 B per token and layer.
  //   8K:   8 x 8192 x 16384 + 24 x 4096 x 16384 = 1,073,741,824 + 1,610,612,736 = 2,684,354,560
  //   128K: 8 x 131072 x 16384 + 1,610,612,736 = 17,179,869,184 + 1,610,612,736 = 18,790,481,920
  CHECK(state(m, 8192) == 2'684'354'560);
  CHECK(state(m, 131072) == 18'790'481'920);
}

TEST_CASE("bundles of the fourth round read as their fixtures do") {
  // Each bundle is `calc import` of its fixture with the header and source edited: the same
  // parameters and state as the fixture it came from.
  const std::pair<const char*, const char*> bundles[] = {
      {"c4ai-command-r7b-12-2024", "CohereLabs--c4ai-command-r7b-12-2024"},
      {"gemma-7b", "google--gemma-7b"},
      {"glm-4-9b-0414", "glm-4-9b-0414-finetune.json"},
      {"qwen2.5-vl-7b-instruct", "Qwen--Qwen2.5-VL-7B-Instruct"},
      {"qwen2-vl-7b-instruct", "qwen2-vl-7b-instruct-finetune.json"},
      {"dots.llm1.base", "rednote-hilab--dots.llm1.base"},
      {"exaone-3.0-7.8b-instruct", "exaone-3.0-7.8b-instruct-bf16.json"},
      {"ling-coder-lite", "inclusionAI--Ling-Coder-lite"},
      {"glm-4.7", "zai-org--GLM-4.7"},
      {"pythia-6.9b", "EleutherAI--pythia-6.9b"},
      {"glm-4-9b-chat", "THUDM--glm-4-9b-chat"},
      {"minitron-8b-base", "nvidia--Minitron-8B-Base"},
      {"deepseek-moe-16b-chat", "deepseek-ai--deepseek-moe-16b-chat"},
      {"dbrx-instruct", "dbrx-instruct"},
      {"stablelm-2-1_6b-chat", "stabilityai--stablelm-2-1_6b-chat"},
      {"baichuan2-7b-base", "baichuan-inc--Baichuan2-7B-Base"},
      {"minicpm-2b-sft-bf16", "openbmb--MiniCPM-2B-sft-bf16"},
      {"internlm3-8b-instruct", "internlm--internlm3-8b-instruct"}};
  for (const auto& b : bundles) {
    std::string name = b.first;
    CAPTURE(name);
    testing::model bundled(name);
    testing::model imported(fixture(b.second));
    CHECK(params(bundled) == params(imported));
    CHECK(weight_bytes(bundled) == weight_bytes(imported));
    CHECK(state(bundled, 131072) == state(imported, 131072));
  }
}

TEST_CASE("glm-4.7 bundle: GLM-4.5's architecture at 202,752 positions; 352,797,829,024") {
  // zai-org/GLM-4.7's config.json has GLM-4.5's sizes (92 layers, 160 experts of 1536, 3 dense
  // layers of 12288, GQA 96/8 x 128 with Q/K/V biases and per-head Q/K norms): the main model
  // counts as the glm-4.5 bundle (whose count the GLM-4.5-FP8 tensor listing confirms), the
  // context limit is 202,752 tokens. The card's 358B counts the MTP layer too.
  testing::model m("glm-4.7");
  testing::model glm45("glm-4.5");
  CHECK(params(m) == 352'797'829'024);
  CHECK(params(m) == params(glm45));
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 202'752);
  // 2 x 8 x 128 x 2 B x 92 layers = 376,832 B/token.
  CHECK(state(m, 131072) == 376'832LL * 131072);  // 49,392,123,904 B
}

TEST_CASE("chatglm (glm-4-9b-chat): Megatron names, 2 KV groups, Q/K/V bias; 9,399,951,360") {
  testing::model m(fixture("THUDM--glm-4-9b-chat"));
  // Published: THUDM/glm-4-9b-chat, 9.4B parameters. By hand: per layer query_key_value 4096 x
  // (4096 + 2 x 2 x 128) + 4608 = 18,878,976, dense 4096^2 = 16,777,216, dense_h_to_4h 4096 x
  // 2 x 13696 and dense_4h_to_h 13696 x 4096 = 168,296,448, two RMSNorms 8,192; x 40 =
  // 8,158,433,280; untied embedding and output_layer 2 x 151552 x 4096 = 1,241,513,984; the final
  // norm 4,096. The same count as the glm class's reading of the -hf conversion.
  CHECK(params(m) == 9'399'951'360);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 131072);  // seq_length
  // 2 x 2 x 128 x 2 B x 40 layers = 40,960 B/token.
  CHECK(state(m, 8192) == 40'960LL * 8192);      // 335,544,320 B
  CHECK(state(m, 131072) == 40'960LL * 131072);  // 5,368,709,120 B
}

TEST_CASE("chatglm: ChatGLM-6B's names, MHA and biased linears fail at a field") {
  // ChatGLM-6B (v1) spells the vocabulary vocab_size and the MLP inner_hidden_size: no default
  // is taken for padded_vocab_size.
  CHECK(testing::import_error(R"({"model_type": "chatglm", "hidden_size": 4096, "num_layers": 28,
    "num_attention_heads": 32, "inner_hidden_size": 16384, "vocab_size": 130528,
    "position_encoding_2d": true})")
            .find("padded_vocab_size") != std::string::npos);
  const std::string base = R"({"model_type": "chatglm", "padded_vocab_size": 1000,
    "hidden_size": 256, "num_layers": 2, "num_attention_heads": 4, "ffn_hidden_size": 512,
    "kv_channels": 64, "multi_query_group_num": 2)";
  CHECK(testing::import_error(base + R"(, "multi_query_attention": false})")
            .find("multi_query_attention") != std::string::npos);
  CHECK(testing::import_error(base + R"(, "add_bias_linear": true})").find("add_bias_linear") !=
        std::string::npos);
  CHECK(testing::import_error(base + R"(, "rmsnorm": false})").find("rmsnorm") !=
        std::string::npos);
  CHECK(testing::import_error(base + "}").empty());
}
