// Families added to the Hugging Face import (src/spec/hf/families.cpp): each read from a real
// published config (tests/fixtures/hf/<org>--<name>/config.json, sources in SOURCES.md), its
// parameters checked against a published total and its state at 8K and 128K worked by hand.
// Families calc recognises but cannot read exactly are refused at the field that says why.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "scratch.h"
#include "spec/hf/import.h"
#include "tally/call.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;
namespace fs = std::filesystem;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


/// The one-line error importing a fixture folder raises, or "".
std::string folder_error(const std::string& name) {
  try {
    hf::import_config(fixture(name));
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kimi_k2 (Kimi-K2-Instruct): DeepSeek-V3's architecture, 1,026,408,232,448 parameters") {
  testing::model m(fixture("moonshotai--Kimi-K2-Instruct"));
  // The published total: the paramCount of moonshotai/Kimi-K2-Instruct in a Fireworks model
  // listing, and the language-model row of Kimi-K2.5's parameter table (SOURCES.md). By hand:
  // MLA per layer (64 heads, q_rank 1536, kv_rank 512 + rope 64, nope 128, v 128)
  // 7168*1536 + 1536 + 1536*64*192 + 7168*576 + 512 + 512*64*256 + 64*128*7168 = 101,124,096;
  // 1 dense layer (SwiGLU 18432): 3*7168*18432 = 396,361,728; 60 MoE layers of 384 experts and
  // one shared of 2048: 385*3*7168*2048 + router 384*7168 + bias 384 = 16,958,226,816;
  // norms 2*7168 a layer; embedding and head 2*163840*7168; final norm 7168.
  CHECK(params(m) == 1'026'408'232'448);
  // Compact MLA cache: (512 + 64) BF16 values on 61 layers = 70,272 B/token.
  CHECK(state(m, 8192) == 70'272LL * 8192);      // 575,668,224 B
  CHECK(state(m, 131072) == 70'272LL * 131072);  // 9,210,691,584 B
}

TEST_CASE("glm4_moe_lite (GLM-4.7-Flash): MLA and 64 experts, 29,943,393,920 parameters") {
  testing::model m(fixture("zai-org--GLM-4.7-Flash"));
  // Published: the parameter count llama.cpp and Ollama report for GLM-4.7-Flash's main model
  // (SOURCES.md). By hand: MLA per layer (20 heads, q_rank 768, kv 512 + 64, nope 192, v 256)
  // 2048*768 + 768 + 768*20*256 + 2048*576 + 512 + 512*20*448 + 20*256*2048 = 21,759,232;
  // 1 dense layer 3*2048*10240 = 62,914,560; 46 MoE layers 65*3*2048*1536 + 64*2048 + 64 =
  // 613,548,096; norms 2*2048;
  // embedding and head 2*154880*2048; final norm 2048.
  CHECK(params(m) == 29'943'393'920);
  // (512 + 64) * 2 B * 47 layers = 54,144 B/token.
  CHECK(state(m, 8192) == 54'144LL * 8192);      // 443,547,648 B
  CHECK(state(m, 131072) == 54'144LL * 131072);  // 7,096,762,368 B
}

TEST_CASE("qwen3_vl (Qwen3-VL-8B-Instruct): the text model in text_config, Qwen3-8B's layers") {
  testing::model m(fixture("Qwen--Qwen3-VL-8B-Instruct"));
  // Published total 8,767,123,696 (the Hub's safetensors parameter count) = the language model
  // 8,190,735,360 (Qwen3-8B's, below) + the vision tower, not counted, by hand: patch
  // embedding 3*2*16*16*1152 + 1152, position table 2304*1152, 27 blocks of 15,239,504
  // (qkv 1152*3456 + 3456, proj 1152^2 + 1152, fc1 1152*4304 + 4304, fc2 4304*1152 + 1152, two
  // LayerNorms 4*1152), the merger 40,119,040 and 3 DeepStack mergers of 40,125,952 =
  // 576,388,336.
  CHECK(params(m) == 8'190'735'360);
  CHECK(params(m) + 576'388'336 == 8'767'123'696);
  // 2 * 8 * 128 * 2 B * 36 = 147,456 B/token.
  CHECK(state(m, 8192) == 147'456LL * 8192);
  CHECK(state(m, 131072) == 147'456LL * 131072);
}

TEST_CASE("qwen3_vl_moe (Qwen3-VL-30B-A3B-Instruct): Qwen3-30B-A3B's layers in text_config") {
  testing::model m(fixture("Qwen--Qwen3-VL-30B-A3B-Instruct"));
  // Published total 31,070,754,032 (a Fireworks listing's paramCount) = the language model
  // 30,532,122,624 (Qwen3-30B-A3B's) + the vision tower as for Qwen3-VL-8B with a 2048-wide
  // output (each of the 4 mergers' fc2 4608*2048 + 2048): 538,631,408, not counted.
  CHECK(params(m) == 30'532'122'624);
  CHECK(params(m) + 538'631'408 == 31'070'754'032);
  // 2 * 4 * 128 * 2 B * 48 = 98,304 B/token.
  CHECK(state(m, 8192) == 98'304LL * 8192);      // 805,306,368 B
  CHECK(state(m, 131072) == 98'304LL * 131072);  // 12,884,901,888 B
}

TEST_CASE("qwen3_5_moe (Qwen3.5-397B-A17B): the published config reads as the bundled model") {
  testing::model m(fixture("Qwen--Qwen3.5-397B-A17B"));
  testing::model bundled("qwen3.5-397b-a17b");
  CHECK(params(m) == params(bundled));
  CHECK(m.spec.mtp.has_value());  // mtp_num_hidden_layers: 1, excluded from totals
  // 15 full layers: 2 (K, V) * 2 heads * 256 * 2 B * 15 = 30,720 B/token. 45 GDN layers keep 64 x
  // 128 x 128 FP32 (4,194,304 B) and 4 conv slots x (2*16*128 + 64*128) BF16 (98,304 B):
  // 193,167,360 B fixed.
  CHECK(state(m, 8192) == 30'720LL * 8192 + 193'167'360);      // 444,825,600 B
  CHECK(state(m, 131072) == 30'720LL * 131072 + 193'167'360);  // 4,219,699,200 B
  CHECK(state(m, 131072) == state(bundled, 131072));
}

TEST_CASE("deepseek_v32 (DeepSeek-V3.2): MLA with the lightning indexer, 671,877,944,064") {
  testing::model m(fixture("nvidia--DeepSeek-V3.2-NVFP4"));
  // DeepSeek-V3's 671,026,419,200 (MLA 187,107,328 a layer; 58 MoE layers of 256 experts + 1
  // shared; 3 dense) plus the indexer on each of 61 layers: wq_b 1536*64*128 = 12,582,912, wk
  // 7168*128 = 917,504, weights_proj 7168*64 = 458,752, k_norm (LayerNorm) 2*128 = 256, so
  // 13,959,424 a layer, 851,524,864 in all. The card's 685B counts the MTP layer too: a decoder
  // layer with its indexer 11,532,490,752 + eh_proj 2*7168^2 + 3 norms of 7168 = 11,624,027,648,
  // and the checkpoint stores the MTP layer's own embedding and head copies (2*129280*7168 =
  // 1,853,358,080): 671.88 + 11.62 + 1.85 = 685.36 billion.
  CHECK(params(m) == 671'877'944'064);
  // Cache per token and layer: the compact latent (512 + 64) BF16 = 1,152 B and the index key,
  // 128 FP8 values + one FP32 scale = 132 B: 1,284 B, 78,324 B on 61 layers.
  CHECK(state(m, 8192) == 78'324LL * 8192);      // 641,630,208 B
  CHECK(state(m, 131072) == 78'324LL * 131072);  // 10,266,148,864 B
  // A decode step at 131,072 cached tokens: main attention reads the top 2,048 (compact pair
  // 2*128*(576 + 512) = 278,528 FLOPs), the indexer scores all 131,073 (2*64*128 = 16,384):
  // 2,048*278,528 + 131,073*16,384 = 2,717,925,376 a layer, 165,793,447,936 on 61.
  call step = make_call(*m.g.spec, 1, 131072, 1);
  CHECK(tally_forward(m.g, step).interaction_flops == 165'793'447'936LL);
  // Under the window of top_k, sparse attention is dense: 1,024 cached tokens read all 1,025.
  step = make_call(*m.g.spec, 1, 1024, 1);
  CHECK(tally_forward(m.g, step).interaction_flops ==
        61LL * 1025 * (278'528 + 16'384));  // 18,439,372,800
}

TEST_CASE("glm_moe_dsa (GLM-5.1, GLM-5): 743,911,218,432 parameters, 753,864,139,008 with MTP") {
  testing::model m(fixture("zai-org--GLM-5.1"));
  // By hand: MLA per layer (64 heads, q_rank 2048, kv_rank 512 + rope 64, nope 192, v 256)
  // 6144*2048 + 2048 + 2048*64*256 + 6144*576 + 512 + 512*64*448 + 64*256*6144 = 165,022,208;
  // indexer 2048*32*128 + 6144*128 + 2*128 + 6144*32 = 9,371,904; 3 dense layers
  // 3*6144*12288; 75 MoE layers 257*3*6144*2048 + 256*6144 + 256 = 9,702,998,272; norms 2*6144
  // a layer; embedding and head 2*154880*6144; final norm. GLM-5's card: 744B. The MTP layer
  // (a decoder layer 9,877,404,672 + eh_proj 2*6144^2 + 3 norms = 9,952,920,576) makes
  // 753,864,139,008, the total of GLM-5.1's safetensors tensor listing (SOURCES.md).
  CHECK(params(m) == 743'911'218'432);
  // Per token and layer 1,152 B latent + 132 B index key = 1,284 B; 100,152 B on 78 layers.
  CHECK(state(m, 8192) == 100'152LL * 8192);      // 820,445,184 B
  CHECK(state(m, 131072) == 100'152LL * 131072);  // 13,127,122,944 B
  // GLM-5-FP8's abridged copy leaves the index fields out: GlmMoeDsaConfig's defaults (32 heads,
  // 128 wide, top 2,048) give the same model.
  testing::model glm5(fixture("zai-org--GLM-5-FP8"));
  CHECK(params(glm5) == params(m));
  CHECK(state(glm5, 131072) == state(m, 131072));
}

TEST_CASE("sparse MLA: the indexer block is written by import and read back") {
  std::string yaml = hf::import_config(fixture("zai-org--GLM-5.1")).yaml;
  CHECK(yaml.find("indexer:") != std::string::npos);
  CHECK(yaml.find("index: fp8:g128:fp32") != std::string::npos);
}

TEST_CASE("an unknown model_type whose architectures names a known class reads as that class") {
  std::string cfg = text_of(fixture("llama-3.1-70b.json"));
  auto at = cfg.find("\"model_type\": \"llama\"");
  REQUIRE(at != std::string::npos);
  cfg.replace(at, std::string("\"model_type\": \"llama\"").size(),
              "\"model_type\": \"my_llama_fork\"");
  hf::imported y = hf::import_text(cfg, "config.json", "fork");
  CHECK(y.model_type == "llama");
  CHECK(y.yaml.find("# Family: model_type 'my_llama_fork' is not a family calc knows; read as "
                    "llama because architectures names LlamaForCausalLM.") != std::string::npos);
  testing::model m = testing::model::from_text(y.yaml);
  CHECK(params(m) == 70'553'706'496);
  // Neither the type nor the classes known: the error lists the families.
  cfg.replace(cfg.find("LlamaForCausalLM"), 16, "NoSuchForCausalLM");
  CHECK(testing::import_error(cfg).find("unknown model_type 'my_llama_fork'") != std::string::npos);
}

TEST_CASE("calc import names the model from its folder, and the source from Org--Name") {
  hf::imported y = hf::import_config(fixture("moonshotai--Kimi-K2-Instruct"));
  CHECK(y.yaml.find("name: \"Kimi-K2-Instruct\"") != std::string::npos);
  CHECK(y.yaml.find("source: \"moonshotai/Kimi-K2-Instruct config.json") != std::string::npos);
  // A file with its own name keeps it.
  CHECK(hf::import_config(fixture("qwen3-8b.json")).yaml.find("name: \"qwen3-8b\"") !=
        std::string::npos);
}

TEST_CASE(
    "bundled-model fixtures: Mixtral-8x7B and Qwen3-Coder-480B-A35B at their published totals") {
  // 32 layers of 8 experts (3*4096*14336 each) + router 8*4096, GQA 32/8 x 128, norms; the
  // embedding and head 2*32000*4096: 46,702,792,704 (SOURCES.md).
  CHECK(params(testing::model(fixture("mistralai--Mixtral-8x7B-v0.1"))) == 46'702'792'704);
  // 62 layers of 160 experts (3*6144*2560 each) + router 160*6144, GQA 96/8 x 128 with Q/K
  // norms, norms; the embedding and head 2*151936*6144: 480,154,875,392, the Hub's count.
  CHECK(params(testing::model(fixture("Qwen--Qwen3-Coder-480B-A35B-Instruct"))) == 480'154'875'392);
}

TEST_CASE("kimi_k25 (Kimi-K2.5-NVFP4): the text model in text_config, its ModelOpt list read") {
  testing::model m(fixture("nvidia--Kimi-K2.5-NVFP4"));
  // The published checkpoint's language model (the vision tower and projector, listed by the
  // card as 416,866,032 + 54,277,888, are not counted).
  CHECK(params(m) == 1'026'408'232'448);
  // quantization_config.ignore names the head and every layer's self_attn under the wrapper's
  // prefix (language_model.model.layers.N.self_attn*), and the vision modules, which are not
  // counted. BF16: embedding and head 2*163840*7168*2 = 4,697,620,480 B; MLA 61 x 101,122,048
  // matrix values = 12,336,889,856 B; norms 61*(1536 + 512 + 2*7168) + 7168 = 1,006,592 values =
  // 2,013,184 B; routers 60*384*7168*2 = 330,301,440 B and their biases F32 (kimi_k25's
  // default: Kimi-K2.5's listing) 60*384*4 = 92,160 B.
  // NVFP4 (9 bytes per 16 values): routed experts 60*384*3*7168*2048 -> 570,760,888,320 B,
  // shared experts 60*3*7168*2048 -> 1,486,356,480 B, the dense layer 3*7168*18432 ->
  // 222,953,472 B.
  CHECK(tally_params(m.g).weight_bytes.value() ==
        4'697'620'480LL + 12'336'889'856LL + 2'013'184LL + 330'301'440LL + 92'160LL +
            570'760'888'320LL + 1'486'356'480LL + 222'953'472LL);  // 589,837,115,392 B
  // kv_cache_scheme {num_bits: 8, type: float}: an FP8 latent cache, 576 B/token on 61 layers.
  CHECK(state(m, 8192) == 576LL * 61 * 8192);      // 287,834,112 B
  CHECK(state(m, 131072) == 576LL * 61 * 131072);  // 4,605,345,792 B
}

TEST_CASE("qwen3_5 (Qwen3.5-27B) and qwen3_5_moe (Qwen3.5-122B-A10B): state at 8K and 128K") {
  testing::model dense(fixture("Qwen--Qwen3.5-27B"));
  // The published checkpoint sums to 27,781,427,952: this language model + the vision tower
  // 460,730,096 + the MTP block 424,699,392 (tests/unit/hf_checkpoint_test.cpp lists them).
  CHECK(params(dense) == 26'895'998'464);
  // 16 full layers: 2 (K, V) * 4 heads * 256 * 2 B * 16 = 65,536 B/token. 48 GDN layers: 48 heads
  // of 128 x 128 FP32 (3,145,728 B) and 4 conv slots x (2*16*128 + 48*128) = 10,240 channels in
  // BF16 (81,920 B): 48 * 3,227,648 = 154,927,104 B fixed.
  CHECK(state(dense, 8192) == 65'536LL * 8192 + 154'927'104);      // 691,798,016 B
  CHECK(state(dense, 131072) == 65'536LL * 131072 + 154'927'104);  // 8,744,861,696 B
  testing::model moe(fixture("Qwen--Qwen3.5-122B-A10B"));
  // 12 full layers: 2 * 2 * 256 * 2 B * 12 = 24,576 B/token. 36 GDN layers: 64 heads of
  // 128 x 128 FP32 (4,194,304 B) + 4 x 12,288 BF16 conv slots (98,304 B): 154,533,888 B.
  CHECK(state(moe, 8192) == 24'576LL * 8192 + 154'533'888);      // 355,860,480 B
  CHECK(state(moe, 131072) == 24'576LL * 131072 + 154'533'888);  // 3,375,759,360 B
}

TEST_CASE("nemotron_h (Nemotron-3-Nano-30B-A3B): ungated relu2 experts, 31,577,940,288 params") {
  // The published config (SOURCES.md) gives expand 2 beside 64 heads x 64: the mixer is read as
  // heads x head_dim = 4096 wide, as the reference implementation sizes it, and the stale
  // expand (2 x 2688 = 5376) refuses nothing.
  CHECK(folder_error("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").empty());
  testing::model m(fixture("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"));
  // Published: 31.6B total, 3.2B-3.6B active (the model card's figures, as model listings repeat
  // them). By hand, d 2688, pattern of 23 M, 23 E and 6 * layers, one norm (2688) a layer:
  // M: in_proj 2688 x (2*4096 + 2*8*128 + 64) + conv 6144 x 4 + bias 6144 + dt_bias, A_log, D
  //    3*64 + gated norm 4096 + out_proj 4096 x 2688 = 38,742,208 (+ 2688 norm);
  // E: router 128 x 2688 + e_score_correction_bias 128 + 128 relu2 experts of up and down only
  //    128*2*2688*1856 + shared 2*2688*3712 = 1,297,465,472 (+ 2688);
  //    (a gate matrix on each routed and shared expert would add 648,560,640 a layer);
  // *: q 2688 x 4096, k and v 2688 x 256, o 4096 x 2688 = 23,396,352 (+ 2688);
  // embedding and head untied 2 x 131072 x 2688; final norm 2688.
  CHECK(params(m) == 31'577'940'288);
  // Active: 6 of 128 experts per token, so each E layer uses 6*2*2688*1856 of its experts; the
  // input embedding table is not active (one row a token): 3,580,076,352 with it (the card's
  // "3.6B including embeddings"), 3,227,754,816 without (its "3.2B active").
  CHECK(tally_params(m.g).active.value() == 3'227'754'816);
  // State: 6 attention layers x 2 (K, V) x 2 heads x 128 x 2 B = 6,144 B/token; 23 Mamba2
  // layers keep the conv window, conv_kernel 4 columns of 4096 + 2*8*128 = 6144 channels in
  // BF16 (49,152 B, as transformers' Mamba2 cache holds it), and the SSM state 64 heads x 64 x
  // 128 in FP32 (2,097,152 B; the config's mamba_ssm_cache_dtype float32 agrees with calc's
  // default): 23 x 2,146,304 = 49,364,992 B whatever the length.
  CHECK(state(m, 8192) == 6'144LL * 8192 + 49'364'992);      // 99,696,640 B
  CHECK(state(m, 131072) == 6'144LL * 131072 + 49'364'992);  // 854,671,360 B
}

TEST_CASE("nemotron_h (Nemotron-3-Nano): ungated experts run in the reference executor") {
  // `calc validate` executes the scaled model and compares every counted quantity with the
  // tally: two GEMMs an ungated expert, routed and shared, where a gated one runs three.
  std::ostringstream out, err;
  std::string nano = fixture("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
  int code = run_cli({"validate", "--model", nano, "--scale", "16", "--length", "160",
                      "--decode-steps", "2"},
                     out, err);
  CAPTURE(out.str());
  CAPTURE(err.str());
  CHECK(code == 0);
}

TEST_CASE("nemotron_h: experts in a latent space (moe_latent_size) are refused at that field") {
  std::string e;
  try {
    hf::import_text(R"({"model_type": "nemotron_h", "moe_latent_size": 1024})", "config.json",
                    "nano");
  } catch (const spec_error& x) {
    e = x.what();
  }
  CHECK(e.find("moe_latent_size: nemotron_h is read only with null (got 1024)") !=
        std::string::npos);
}

TEST_CASE(
    "qwen3_vl 2B / 4B (tied heads) and qwen3_vl_moe 235B: the published totals less the ViT") {
  // The vision towers by hand: patch embedding 3*2*16*16*w + w, position table 2304*w, `depth`
  // blocks (qkv, proj, fc1, fc2 with biases, two LayerNorms), the merger (LayerNorm w, fc1
  // 4w x 4w, fc2 4w x out) and 3 DeepStack mergers (LayerNorm 4w): w 1024, 24 blocks of 4096 for
  // the 2B (out 2048) and 4B (out 2560); the 8B's for the 235B.
  testing::model b2(fixture("Qwen--Qwen3-VL-2B-Instruct"));
  CHECK(params(b2) + 406'957'056 == 2'127'532'032);  // tie_word_embeddings true: one table
  testing::model b4(fixture("Qwen--Qwen3-VL-4B-Instruct"));
  CHECK(params(b4) + 415'347'712 == 4'437'815'808);
  testing::model b235(fixture("Qwen--Qwen3-VL-235B-A22B-Instruct"));
  CHECK(params(b235) + 576'388'336 == 235'670'022'896);
  // 2 * 8 * 128 * 2 B = 4,096 B a layer: 28 layers (2B) and 36 (4B); the 235B 2 * 4 * 128 * 2 B
  // on 94 layers = 192,512 B/token.
  CHECK(state(b2, 8192) == 4'096LL * 28 * 8192);
  CHECK(state(b4, 131072) == 4'096LL * 36 * 131072);
  CHECK(state(b235, 8192) == 192'512LL * 8192);
  CHECK(state(b235, 131072) == 192'512LL * 131072);
}

TEST_CASE("granitemoe (Granite-3.1-1B-A400M): 32 experts top-8, tied, FP32; state by hand") {
  testing::model m(fixture("ibm-granite--granite-3.1-1b-a400m-instruct"));
  // 1,334,628,352 = the published index's total_size 5,338,513,408 B / 4 (FP32 checkpoint).
  CHECK(params(m) == 1'334'628'352);
  // The cache keeps the model dtype (FP32): 2 * 8 * 64 * 4 B * 24 layers = 98,304 B/token.
  CHECK(state(m, 8192) == 98'304LL * 8192);      // 805,306,368 B
  CHECK(state(m, 131072) == 98'304LL * 131072);  // 12,884,901,888 B
}

TEST_CASE("smollm3 (SmolLM3-3B): tied head, NoPE layers count the same; 3,075,098,624") {
  testing::model m(fixture("HuggingFaceTB--SmolLM3-3B"));
  // The published index: total_parameters 3,075,098,624, total_size 6,150,197,248 B (BF16) and
  // no lm_head (SOURCES.md). By hand: 36 layers of GQA 16/4 x 128 (10,485,760), SwiGLU 11008
  // (67,633,152) and two norms; one 128256 x 2048 table; the final norm.
  CHECK(params(m) == 3'075'098'624);
  CHECK(tally_params(m.g).weight_bytes.value() == 6'150'197'248);
  // 2 * 4 * 128 * 2 B * 36 = 73,728 B/token on every layer (layer_types: all full attention).
  CHECK(state(m, 8192) == 73'728LL * 8192);      // 603,979,776 B
  CHECK(state(m, 131072) == 73'728LL * 131072);  // 9,663,676,416 B
}

TEST_CASE("ModelOpt lists per layer: block_sparse_moe.gate routers and self_attn* globs") {
  // Mixtral-8x7B's config with an hf_quant_config.json written here in the form of
  // nvidia/MiniMax-M2.5-NVFP4's (SOURCES.md: one block_sparse_moe.gate and one self_attn* entry
  // per layer, and lm_head).
  fs::path dir = testing::scratch_dir("calc-families") / "mixtral-nvfp4";
  fs::create_directories(dir);
  fs::copy_file(fixture("mistralai--Mixtral-8x7B-v0.1/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  std::string list = "\"lm_head\"";
  for (int i = 0; i < 32; ++i)
    list += fmt::format(
        ", \"model.layers.{0}.block_sparse_moe.gate\", \"model.layers.{0}.self_attn*\"", i);
  std::ofstream(dir / "hf_quant_config.json")
      << R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", )"
      << R"("kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": [)" << list << "]}}";
  testing::model m(dir.string());
  // BF16: embedding and head 2*32000*4096*2 = 524,288,000 B; attention 32 x 41,943,040 values =
  // 2,684,354,560 B; routers 32*8*4096*2 = 2,097,152 B; norms 65*4096*2 = 532,480 B. NVFP4
  // experts: 32*8*3*4096*14336 = 45,097,156,608 values at 9 bytes per 16 = 25,367,150,592 B.
  CHECK(tally_params(m.g).weight_bytes.value() ==
        524'288'000LL + 2'684'354'560LL + 2'097'152LL + 532'480LL + 25'367'150'592LL);
  CHECK(state(m, 8192) == 2LL * 8 * 128 * 32 * 8192);  // FP8 cache: 65,536 B/token
}
