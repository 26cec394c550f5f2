// The classic decoders and two 2025 Llama variants the Hugging Face import reads since issue 21's
// families_classic.cpp: falcon, gpt_bigcode, gpt2, gptj, mpt, bloom, opt, olmo, apertus, arcee.
// Each from a public config (tests/fixtures/hf, sources and how faithful each copy is in
// SOURCES.md), its parameters checked against the published total or a total worked from the
// transformers module shapes (said in each case), and its state at 8K and 128K worked by hand.
#include <doctest/doctest.h>

#include <string>

#include "hf_counts.h"
#include "spec/hf/import.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::import_error;
using testing::params;
using testing::state;
using testing::weight_bytes;


/// The attention block every layer of an imported model has (these families are uniform).
const attention_gqa& gqa_of(const testing::model& m) {
  return std::get<attention_gqa>(*m.spec.layers.base.attention);
}

}  // namespace

TEST_CASE("falcon (Falcon-7B-instruct): multi-query despite num_kv_heads 71; 6,921,720,704") {
  testing::model m(fixture("tiiuae--falcon-7b-instruct"));
  // Model card: 7B. By hand from FalconModel's modules: query_key_value 4544 x (71 + 2) x 64 =
  // 21,229,568, dense 4544^2 = 20,647,936, dense_h_to_4h and dense_4h_to_h 2 x 4544 x 18176 =
  // 165,183,488, one input_layernorm (weight and bias) 9,088; 207,070,080 a layer x 32 =
  // 6,626,242,560; the tied 65024 x 4544 table 295,469,056; ln_f 9,088.
  CHECK(params(m) == 6'921'720'704);
  CHECK(weight_bytes(m) == 2LL * 6'921'720'704);  // bfloat16
  CHECK(gqa_of(m).kv_heads == 1);                  // multi_query, not the stale num_kv_heads
  CHECK(*m.spec.layers.base.norms == 1);           // parallel_attn: one LayerNorm a layer
  CHECK(m.spec.tie_embeddings);
  // One KV head of 64, K and V in bf16: 256 B a layer, x 32 = 8,192 B per token.
  //   8K:   8192 x 8,192 = 67,108,864 B
  //   128K: 131072 x 8,192 = 1,073,741,824 B (past the 2,048 positions; the cache is the same)
  CHECK(state(m, 8192) == 67'108'864);
  CHECK(state(m, 131072) == 1'073'741'824);
}

TEST_CASE("falcon (Falcon-40B): the new decoder's 8 KV groups and two LayerNorms; 41,303,293,952") {
  testing::model m(fixture("tiiuae--falcon-40b"));
  // Model card: 40B. By hand: query_key_value 8192 x (128 + 16) x 64 = 75,497,472, dense
  // 8192^2 = 67,108,864, the MLP 2 x 8192 x 32768 = 536,870,912, ln_attn and ln_mlp 4 x 8192 =
  // 32,768; 679,510,016 a layer x 60 = 40,770,600,960; the tied 65024 x 8192 table 532,676,608;
  // ln_f 16,384.
  CHECK(params(m) == 41'303'293'952);
  CHECK(gqa_of(m).kv_heads == 8);
  CHECK(*m.spec.layers.base.norms == 2);
  // 8 KV heads x 64, bf16: 2 x 8 x 64 x 2 B = 2,048 B a layer, x 60 = 122,880 B per token.
  //   8K:   8192 x 122,880 = 1,006,632,960 B
  //   128K: 131072 x 122,880 = 16,106,127,360 B
  CHECK(state(m, 8192) == 1'006'632'960);
  CHECK(state(m, 131072) == 16'106'127'360);
}

TEST_CASE("falcon: the KV heads and norms follow multi_query, new_decoder_architecture, "
          "parallel_attn") {
  const std::string dims = R"("model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4,
    "num_hidden_layers": 2, "vocab_size": 1000)";
  // Neither flag: multi_query is the class default, so one KV head.
  CHECK(gqa_of(testing::from_json("{" + dims + "}")).kv_heads == 1);
  // multi_query false (falcon-rw-1b): num_kv_heads, else every head.
  CHECK(gqa_of(testing::from_json("{" + dims + R"(, "multi_query": false})")).kv_heads == 4);
  CHECK(gqa_of(testing::from_json("{" + dims + R"(, "multi_query": false, "num_kv_heads": 2})"))
            .kv_heads == 2);
  // parallel_attn false: input and post-attention LayerNorms.
  CHECK(*testing::from_json("{" + dims + R"(, "parallel_attn": false})").spec.layers.base.norms == 2);
  // The new architecture with num_ln_in_parallel_attn 1: one norm; anything but 1 or 2 refused.
  CHECK(*testing::from_json("{" + dims + R"(, "new_decoder_architecture": true, "num_kv_heads": 2,
    "num_ln_in_parallel_attn": 1})").spec.layers.base.norms == 1);
  CHECK(import_error("{" + dims + R"(, "new_decoder_architecture": true,
    "num_ln_in_parallel_attn": 3})").find("num_ln_in_parallel_attn") != std::string::npos);
  // bias puts biases on query_key_value, dense and both MLP matrices: 4 x 256 + 256 (qkv with
  // one KV head: 256 + 2 x 64 = 384 wide) ... counted against the same config without it.
  std::int64_t plain = params(testing::from_json("{" + dims + "}"));
  std::int64_t biased = params(testing::from_json("{" + dims + R"(, "bias": true})"));
  CHECK(biased - plain == 2 * (384 + 256 + 1024 + 256));
  // n_embed, an old spelling of hidden_size, is refused, never read as the default width.
  CHECK(import_error(R"({"model_type": "falcon", "n_embed": 64})").find("n_embed") !=
        std::string::npos);
  // A KV count that does not divide the heads is an error at num_kv_heads.
  CHECK(import_error("{" + dims + R"(, "new_decoder_architecture": true, "num_kv_heads": 3})")
            .find("num_kv_heads") != std::string::npos);
}

TEST_CASE("gpt_bigcode (StarCoder): MQA, learned positions, biases; 15,517,456,384") {
  testing::model m(fixture("bigcode--starcoder-co-format"));
  // Model card: 15.5B. By hand from GPTBigCodeModel's modules: c_attn 6144 x (6144 + 2 x 128)
  // + 6,400 = 39,328,000, c_proj 6144^2 + 6144 = 37,754,880, c_fc 6144 x 24576 + 24576 =
  // 151,019,520, the MLP's c_proj 24576 x 6144 + 6144 = 151,001,088, ln_1 and ln_2 24,576;
  // 379,128,064 a layer x 40 = 15,165,122,560; wte 49152 x 6144 = 301,989,888 (tied), wpe
  // 8192 x 6144 = 50,331,648; ln_f 12,288.
  CHECK(params(m) == 15'517'456'384);
  CHECK(weight_bytes(m) == 2LL * 15'517'456'384);  // float16
  CHECK(m.spec.position_embeddings == 8192);
  CHECK(gqa_of(m).kv_heads == 1);
  // One KV head of 128 in fp16: 512 B a layer, x 40 = 20,480 B per token.
  //   8K:   8192 x 20,480 = 167,772,160 B
  //   128K: 131072 x 20,480 = 2,684,354,560 B
  CHECK(state(m, 8192) == 167'772'160);
  CHECK(state(m, 131072) == 2'684'354'560);
  // multi_query false: MHA, c_attn 3 x n_embd wide.
  const std::string dims = R"("model_type": "gpt_bigcode", "n_embd": 256, "n_head": 4,
    "n_layer": 2, "vocab_size": 1000, "n_positions": 64)";
  CHECK(gqa_of(testing::from_json("{" + dims + R"(, "multi_query": false})")).kv_heads == 4);
  CHECK(gqa_of(testing::from_json("{" + dims + "}")).kv_heads == 1);  // the class default
}

TEST_CASE("classic families read the common names their configuration classes accept") {
  // GPT2Config, GPTBigCodeConfig, GPTJConfig, MptConfig and BloomConfig map hidden_size,
  // num_hidden_layers, num_attention_heads (and max_position_embeddings) onto their own fields
  // (attribute_map): a config spelling them so is the same model, never the family default.
  struct names_case {
    const char* type;
    const char* own;
    const char* alias;
  };
  const names_case cases[] = {
      {"gpt_bigcode", R"("n_embd": 256, "n_layer": 3, "n_head": 4, "n_positions": 96)",
       R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
          "max_position_embeddings": 96)"},
      {"gpt2", R"("n_embd": 256, "n_layer": 3, "n_head": 4, "n_positions": 96)",
       R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
          "max_position_embeddings": 96)"},
      {"gptj", R"("n_embd": 256, "n_layer": 3, "n_head": 4, "n_positions": 96)",
       R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
          "max_position_embeddings": 96)"},
      {"mpt", R"("d_model": 256, "n_layers": 3, "n_heads": 4)",
       R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4)"},
      {"bloom", R"("hidden_size": 256, "n_layer": 3, "n_head": 4)",
       R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4)"},
  };
  for (const names_case& c : cases) {
    CAPTURE(c.type);
    const std::string head = std::string(R"({"model_type": ")") + c.type + R"(", "vocab_size": 1000, )";
    testing::model own = testing::from_json(head + c.own + "}");
    testing::model alias = testing::from_json(head + c.alias + "}");
    CHECK(params(alias) == params(own));
    CHECK(alias.spec.layers.count == 3);
    CHECK(gqa_of(alias).q_heads == 4);
    CHECK(alias.spec.position_embeddings == own.spec.position_embeddings);
    // Both spellings with different values: an error at the alternative, naming the own field.
    const std::string both = import_error(head + c.own + R"(, "num_hidden_layers": 5})");
    CHECK(both.find("num_hidden_layers") != std::string::npos);
    CHECK(both.find("differs from") != std::string::npos);
  }
  // StarCoder's config with the common names: 15.5B, not the class defaults' 0.1B.
  const std::string starcoder = R"({"model_type": "gpt_bigcode", "vocab_size": 49152,
    "hidden_size": 6144, "num_hidden_layers": 40, "num_attention_heads": 48, "n_inner": 24576,
    "max_position_embeddings": 8192})";
  CHECK(params(testing::from_json(starcoder)) == 15'517'456'384);
}

TEST_CASE("gpt2 (GPT-2 Large): wpe, n_inner null = 4 x n_embd, tied; 774,030,080") {
  testing::model m(fixture("openai-community--gpt2-large"));
  // Published: 774M (the model card); by hand from GPT2Model's Conv1D shapes: c_attn 1280 x
  // 3840 + 3840, c_proj 1280^2 + 1280, c_fc 1280 x 5120 + 5120, c_proj 5120 x 1280 + 1280, ln_1
  // and ln_2 5,120: 19,677,440 a layer x 36 = 708,387,840; wte 50257 x 1280 = 64,328,960
  // (tied), wpe 1024 x 1280 = 1,310,720; ln_f 2,560.
  CHECK(params(m) == 774'030'080);
  CHECK(m.spec.position_embeddings == 1024);
  REQUIRE(m.spec.max_position_embeddings);
  CHECK(*m.spec.max_position_embeddings == 1024);
  // MHA 20 x 64, bf16 (the file gives no torch_dtype): 5,120 B a layer, x 36 = 184,320 B.
  //   8K:   8192 x 184,320 = 1,509,949,440 B
  //   128K: 131072 x 184,320 = 24,159,191,040 B
  CHECK(state(m, 8192) == 1'509'949'440);
  CHECK(state(m, 131072) == 24'159'191'040);
  // GPT2Config's class defaults are GPT-2 small's: the hand-written bundle `gpt2` (124,439,808
  // parameters) and an import of a config that gives only the model_type agree on every count.
  testing::model small = testing::from_json(R"({"model_type": "gpt2"})");
  testing::model bundled("gpt2");
  CHECK(params(small) == 124'439'808);
  CHECK(params(small) == params(bundled));
  // The bundle keeps the released FP32 cache; the import, given no torch_dtype, BF16.
  CHECK(state(bundled, 1024) == 2 * state(small, 1024));
  // A second attention per layer (add_cross_attention) is not read.
  CHECK(import_error(R"({"model_type": "gpt2", "add_cross_attention": true})")
            .find("add_cross_attention") != std::string::npos);
}

TEST_CASE("gptj (GPT-J-6B): one LayerNorm, bias-free attention, biased MLP and head; "
          "6,050,882,784") {
  testing::model m(fixture("hivemind--gpt-j-6B-8bit"));
  // The model card says 6,053,381,344 (mesh-transformer-jax's count); transformers' GPTJ modules
  // give, by hand: q/k/v/out_proj 4 x 4096^2 = 67,108,864, fc_in 4096 x 16384 + 16384 and
  // fc_out 16384 x 4096 + 4096 = 134,238,208, ln_1 8,192; 201,355,264 a layer x 28 =
  // 5,637,947,392; wte and the untied lm_head 2 x 50400 x 4096 = 412,876,800, lm_head's bias
  // 50,400; ln_f 8,192. The card's 2,498,560 more (610 x 4096) is not in these modules.
  CHECK(params(m) == 6'050'882'784);
  CHECK(weight_bytes(m) == 4LL * 6'050'882'784);  // float32
  CHECK(m.spec.head_bias);
  CHECK(m.spec.position_embeddings == 0);  // rotary: no table
  // MHA 16 x 256 in fp32: 2 x 4096 x 4 B = 32,768 B a layer, x 28 = 917,504 B per token.
  //   8K:   8192 x 917,504 = 7,516,192,768 B
  //   128K: 131072 x 917,504 = 120,259,084,288 B
  CHECK(state(m, 8192) == 7'516'192'768);
  CHECK(state(m, 131072) == 120'259'084'288);
}

TEST_CASE("mpt (MPT-30B-chat): ALiBi, no biases, weight-only LayerNorms, tied; 29,957,200,896") {
  testing::model m(fixture("mosaicml--mpt-30b-chat"));
  // Model card: 30B. By hand from MptModel's modules: Wqkv 3 x 7168^2 and out_proj 7168^2 =
  // 205,520,896, up_proj and down_proj 2 x 7168 x 28672 = 411,041,792, norm_1 and norm_2 (no
  // bias) 14,336; 616,577,024 a layer x 48 = 29,595,697,152; the tied 50432 x 7168 table
  // 361,496,576; norm_f 7,168. ALiBi: no position table.
  CHECK(params(m) == 29'957'200'896);
  CHECK(m.spec.position_embeddings == 0);
  CHECK_FALSE(m.spec.layer_norm);
  // MHA 64 x 112, bf16: 2 x 7168 x 2 B = 28,672 B a layer, x 48 = 1,376,256 B per token.
  //   8K:   8192 x 1,376,256 = 11,274,289,152 B
  //   128K: 131072 x 1,376,256 = 180,388,626,432 B
  CHECK(state(m, 8192) == 11'274'289'152);
  CHECK(state(m, 131072) == 180'388'626'432);
  // MPT-7B's shapes (the class defaults' layer, d_model 4096, 32 layers, vocab 50432):
  // 6,649,286,656, the "6.7B" of its card.
  CHECK(params(testing::from_json(R"({"model_type": "mpt", "d_model": 4096, "n_heads": 32,
    "n_layers": 32, "vocab_size": 50432, "expansion_ratio": 4})")) == 6'649'286'656);
  // Grouped attention and Q/K LayerNorms (llm-foundry's attn_config) are refused at the field.
  CHECK(import_error(R"({"model_type": "mpt", "attn_config": {"attn_type":
    "grouped_query_attention", "kv_n_heads": 8}})")
            .find("attn_config.attn_type") != std::string::npos);
  CHECK(import_error(R"({"model_type": "mpt", "attn_config": {"qk_ln": true}})")
            .find("attn_config.qk_ln") != std::string::npos);
  // no_bias false would put biases everywhere: refused.
  CHECK(import_error(R"({"model_type": "mpt", "no_bias": false})").find("no_bias") !=
        std::string::npos);
}

TEST_CASE("bloom (BLOOM-560m): ALiBi, biases, the embedding LayerNorm, tied; 559,214,592") {
  testing::model m(fixture("bigscience--bloom-560m"));
  // Published: 559,214,592 (the model card's "559,214,592 parameters"). By hand:
  // query_key_value 1024 x 3072 + 3072, dense 1024^2 + 1024, dense_h_to_4h 1024 x 4096 + 4096,
  // dense_4h_to_h 4096 x 1024 + 1024, two LayerNorms 4,096: 12,596,224 a layer x 24 =
  // 302,309,376; the tied 250880 x 1024 table 256,901,120; word_embeddings_layernorm and ln_f
  // 2 x 2,048.
  CHECK(params(m) == 559'214'592);
  CHECK(m.spec.embedding_norm);
  CHECK_FALSE(m.spec.max_position_embeddings);  // ALiBi: BLOOM gives no context limit
  // MHA 16 x 64, bf16 (no torch_dtype): 4,096 B a layer, x 24 = 98,304 B per token.
  //   8K:   8192 x 98,304 = 805,306,368 B
  //   128K: 131072 x 98,304 = 12,884,901,888 B
  CHECK(state(m, 8192) == 805'306'368);
  CHECK(state(m, 131072) == 12'884'901'888);
}

TEST_CASE("opt (OPT-125m): positions + 2, biases, LayerNorms, tied; 125,239,296") {
  testing::model m(fixture("facebook--opt-125m"));
  // Published: 125M (model card); by hand from OPTDecoder's modules: q/k/v/out_proj 4 x (768^2
  // + 768) = 2,362,368, fc1 768 x 3072 + 3072 and fc2 3072 x 768 + 768 = 4,722,432, two
  // LayerNorms 3,072; 7,087,872 a layer x 12 = 85,054,464; the tied 50272 x 768 table
  // 38,608,896; embed_positions (2048 + 2) x 768 = 1,574,400; the final LayerNorm 1,536.
  CHECK(params(m) == 125'239'296);
  CHECK(m.spec.position_embeddings == 2050);
  // MHA 12 x 64, fp16: 3,072 B a layer, x 12 = 36,864 B per token.
  //   8K:   8192 x 36,864 = 301,989,888 B
  //   128K: 131072 x 36,864 = 4,831,838,208 B
  CHECK(state(m, 8192) == 301'989'888);
  CHECK(state(m, 131072) == 4'831'838'208);
  // OPT-350m's projections (word_embed_proj_dim 512 beside hidden 1024) are refused at the
  // field; post-norm (do_layer_norm_before false) drops the decoder's final LayerNorm.
  const std::string dims = R"("model_type": "opt", "hidden_size": 256, "num_attention_heads": 4,
    "num_hidden_layers": 2, "ffn_dim": 1024, "vocab_size": 1000, "max_position_embeddings": 64)";
  CHECK(import_error("{" + dims + R"(, "word_embed_proj_dim": 128})")
            .find("word_embed_proj_dim") != std::string::npos);
  CHECK(params(testing::from_json("{" + dims + "}")) -
            params(testing::from_json("{" + dims + R"(, "do_layer_norm_before": false})")) ==
        2 * 256);
  CHECK_FALSE(testing::from_json("{" + dims + R"(, "do_layer_norm_before": false})").spec.final_norm);
}

TEST_CASE("olmo (OLMo-7B-hf): non-parametric LayerNorms store nothing; 6,888,095,744") {
  testing::model m(fixture("PrunaAI--allenai-OLMo-7B-hf-HQQ-1bit-smashed"));
  // Model card: 6.89B. By hand: MHA 4 x 4096^2 = 67,108,864, SwiGLU 3 x 4096 x 11008 =
  // 135,266,304, no norm weights; 202,375,168 a layer x 32 = 6,476,005,376; untied embedding and
  // head 2 x 50304 x 4096 = 412,090,368; no final norm weights.
  CHECK(params(m) == 6'888'095'744);
  CHECK(weight_bytes(m) == 4LL * 6'888'095'744);  // float32
  CHECK(*m.spec.layers.base.norms == 0);
  CHECK_FALSE(m.spec.final_norm);
  // MHA 32 x 128 in fp32: 32,768 B a layer, x 32 = 1,048,576 B per token.
  //   8K:   8192 x 1,048,576 = 8,589,934,592 B
  //   128K: 131072 x 1,048,576 = 137,438,953,472 B
  CHECK(state(m, 8192) == 8'589'934'592);
  CHECK(state(m, 131072) == 137'438'953'472);
}

TEST_CASE("apertus (Apertus-8B's shapes): xIELU's two scalars a layer, Q/K norms; "
          "8,053,338,176") {
  testing::model m(fixture("NewEden-Forge--Science-Expert-R1"));
  // By hand from ApertusModel's modules: q_proj and o_proj 2 x 4096^2, k_proj and v_proj 2 x
  // 4096 x 1024 = 41,943,040, q_norm and k_norm 2 x 128, up_proj and down_proj 2 x 4096 x 21504
  // = 176,160,768, xIELU's alpha_p and alpha_n 2, two RMSNorms 8,192; 218,112,258 a layer x 32 =
  // 6,979,592,256; untied embedding and head 2 x 131072 x 4096 = 1,073,741,824; the final norm
  // 4,096. (Apertus-8B's card: 8B.)
  CHECK(params(m) == 8'053'338'176);
  const auto& f = std::get<ffn_mlp>(*m.spec.layers.base.ffn);
  CHECK(f.activation_params == 2);
  CHECK(gqa_of(m).qk_norm);
  // 8 KV heads x 128, bf16: 4,096 B a layer, x 32 = 131,072 B per token.
  //   8K:   8192 x 131,072 = 1,073,741,824 B
  //   128K: 131072 x 131,072 = 17,179,869,184 B
  CHECK(state(m, 8192) == 1'073'741'824);
  CHECK(state(m, 131072) == 17'179'869'184);
  // ApertusAttention builds q_norm and k_norm whatever the config's qk_norm says.
  const std::string small = R"({"model_type": "apertus", "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
    "vocab_size": 1000)";
  testing::model off = testing::from_json(small + R"(, "qk_norm": false})");
  testing::model on = testing::from_json(small + "}");
  CHECK(gqa_of(off).qk_norm);
  CHECK(params(off) == params(on));
  // Only xIELU is read: another activation would drop the scalars.
  CHECK(import_error(R"({"model_type": "apertus", "hidden_act": "silu"})").find("hidden_act") !=
        std::string::npos);
}

TEST_CASE("activation_params: a schema field of the mlp kind, counted as parameters") {
  const std::string head =
      "schema: 1\nname: t\nsource: test\nvocab: 16\nhidden: 8\nprecision: {weights: bf16, kv: "
      "bf16}\nlayers:\n  count: 3\n  attention: {kind: gqa, q_heads: 2, kv_heads: 2, head_dim: "
      "4}\n  norms: 2\n  ffn: {kind: mlp, intermediate: 32";
  testing::model with = testing::model::from_text(head + ", activation_params: 2}\n");
  testing::model without = testing::model::from_text(head + "}\n");
  CHECK(params(with) - params(without) == 3 * 2);
  CHECK(testing::error_of(head + ", activation_params: -1}\n").find("activation_params") !=
        std::string::npos);
}

TEST_CASE("arcee (AFM-4.5B's shapes): an ungated ReLU^2 MLP; 4,619,189,760") {
  testing::model m(fixture("Delta-Vector--Austral-AFM-SFT"));
  // By hand from ArceeModel's modules: q_proj and o_proj 2 x 2560 x 2560, k_proj and v_proj 2 x
  // 2560 x 512 = 15,728,640, up_proj and down_proj 2 x 2560 x 18432 = 94,371,840, two RMSNorms
  // 5,120; 110,105,600 a layer x 36 = 3,963,801,600; untied embedding and head 2 x 128005 x
  // 2560 = 655,385,600; the final norm 2,560. (AFM-4.5B's card: 4.5B.)
  CHECK(params(m) == 4'619'189'760);
  CHECK(std::holds_alternative<ffn_mlp>(*m.spec.layers.base.ffn));
  // 4 KV heads x 128, bf16: 2,048 B a layer, x 36 = 73,728 B per token.
  //   8K:   8192 x 73,728 = 603,979,776 B
  //   128K: 131072 x 73,728 = 9,663,676,416 B
  CHECK(state(m, 8192) == 603'979'776);
  CHECK(state(m, 131072) == 9'663'676'416);
  CHECK(import_error(R"({"model_type": "arcee", "hidden_act": "silu"})").find("hidden_act") !=
        std::string::npos);
}

TEST_CASE("classic bundles read as their fixtures do, and by their Hugging Face ids") {
  // Each bundle is `calc import` of its fixture with the name and source edited.
  const std::pair<const char*, const char*> bundles[] = {
      {"falcon-7b-instruct", "tiiuae--falcon-7b-instruct"},
      {"falcon-40b", "tiiuae--falcon-40b"},
      {"starcoder", "bigcode--starcoder-co-format"},
      {"gpt2-large", "openai-community--gpt2-large"},
      {"gpt-j-6b", "hivemind--gpt-j-6B-8bit"},
      {"mpt-30b-chat", "mosaicml--mpt-30b-chat"},
      {"bloom-560m", "bigscience--bloom-560m"},
      {"opt-125m", "facebook--opt-125m"},
      {"olmo-7b-hf", "PrunaAI--allenai-OLMo-7B-hf-HQQ-1bit-smashed"}};
  for (const auto& b : bundles) {
    std::string name = b.first;
    CAPTURE(name);
    testing::model bundled(name);
    testing::model from_fixture(fixture(b.second));
    CHECK(params(bundled) == params(from_fixture));
    CHECK(weight_bytes(bundled) == weight_bytes(from_fixture));
    CHECK(state(bundled, 131072) == state(from_fixture, 131072));
  }
  CHECK(params(testing::model("tiiuae/falcon-40b")) == 41'303'293'952);
  CHECK(params(testing::model("bigcode/starcoder")) == 15'517'456'384);
  CHECK(params(testing::model("EleutherAI/gpt-j-6b")) == 6'050'882'784);
  CHECK(params(testing::model("bigscience/bloom-560m")) == 559'214'592);
  CHECK(params(testing::model("facebook/opt-125m")) == 125'239'296);
  CHECK(params(testing::model("allenai/OLMo-7B-hf")) == 6'888'095'744);
}
