// Popular checkpoints users name by Hugging Face id (issue 21, item 3): each bundle is `calc
// import` of the published config.json stored under tests/fixtures/hf/<Org>--<Name>/ (sources and
// how faithful each copy is in SOURCES.md there). Each case reads the model by its id, as
// `--model Org/Name` does, and checks the parameter count against the published total, and the
// KV cache at 8K tokens against the config's own shape worked by hand.
#include <doctest/doctest.h>

#include <algorithm>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "spec/hf/hub.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::params;
using testing::weight_bytes;
using testing::state;

// A BF16 KV cache of `layers` full-attention layers, each keeping K and V of `kv_heads` x
// `head_dim` per token, for `tokens` tokens.
std::int64_t bf16_kv(std::int64_t layers, std::int64_t kv_heads, std::int64_t head_dim,
                     std::int64_t tokens) {
  return layers * 2 * kv_heads * head_dim * 2 * tokens;
}

// One bundle: its Hugging Face id, the bundle file it must resolve to, calc's exact parameter
// count, and the config's attention shape for the KV cache.
struct popular {
  const char* id;
  const char* bundle;
  std::int64_t params;
  std::int64_t layers, kv_heads, head_dim;
};

// The parameter counts, against each model's published total:
// - Qwen/Qwen3-14B 14,768,307,200: the sum of the checkpoint's tensors in its tensor listing
//   (gogongxt/python scripts/models/qwen3_14b.md, "参数总量"); card 14.8B. Exact.
// - Qwen/Qwen3-1.7B 1,720,574,976: card 1.7B (1.4B without embeddings); the same language model
//   as Qwen3-VL-2B's, whose count SOURCES.md derives from the Hub's. Tied: one 151936 x 2048
//   table.
// - Qwen/Qwen3-0.6B 596,049,920: card 0.6B (0.44B without embeddings). The tensor listing sums to
//   751,632,384 because the checkpoint also stores `lm_head.weight`, a copy of the tied table:
//   596,049,920 + 151,936 x 1,024 = 751,632,384. calc counts the table once, as the model uses it.
// - Qwen/Qwen2.5-72B-Instruct 72,706,203,648: the tensor listing's sum; card 72.7B. Exact.
// - Qwen/Qwen2.5-14B-Instruct 14,770,033,664: card 14.7B (13.1B without embeddings). Exact by
//   hand: 48 x (attention 5120 x (5120 + 2 x 1024 + 5120) + Q/K/V biases 7,168 + FFN 3 x 5120 x
//   13824 + 2 norms x 5120) + 2 x 152064 x 5120 + 5120.
// - Qwen/Qwen2.5-32B 32,763,876,352: the tensor listing of QwQ-32B (the same architecture, below);
//   Qwen's card says 32.5B (31.0B without embeddings), a rounding the listing does not bear out.
// - Qwen/QwQ-32B 32,763,876,352: its tensor listing's sum (gogongxt/python scripts/models/
//   qwq_32b.md); card 32.5B, as for Qwen2.5-32B.
// - deepseek-ai/DeepSeek-R1-Distill-Qwen-32B 32,763,876,352: Qwen2.5-32B's architecture (the
//   distill keeps it); card 32.8B.
// - deepseek-ai/DeepSeek-R1-Distill-Qwen-7B 7,615,616,512: its tensor listing's sum; card 7.6B.
// - meta-llama/Llama-3.2-1B-Instruct 1,235,814,400: card 1.23B. Tied: one 128256 x 2048 table.
// - meta-llama/Llama-3.2-3B-Instruct 3,212,749,824: its tensor listing's sum (no lm_head stored:
//   tied); card 3.21B. Exact.
// - meta-llama/Meta-Llama-3-8B-Instruct 8,030,261,248: its tensor listing's sum; card 8B. Exact.
// - meta-llama/Meta-Llama-3-70B 70,553,706,496: card 70B (the Hub's 70.6B); Llama-3.1-70B's
//   shapes, whose 70,553,706,496 SOURCES.md already cites. Its stored config says float16 (a
//   re-save, SOURCES.md): two bytes a weight, as the release's bfloat16.
// - mistralai/Mistral-7B-Instruct-v0.3 7,248,023,552: the Hub's 7.25B; Mistral-7B-v0.1's
//   7,241,732,096 plus the 768 tokens v0.3 added to the vocabulary, x 4096 x 2 (table and head).
// - mistralai/Mistral-Nemo-Base-2407 12,247,782,400: card 12B (the Hub's 12.2B).
// - mistralai/Mistral-Small-24B-Instruct-2501 23,572,403,200: card 24B; the language model of
//   Mistral-Small-24B-Base-2501 that SOURCES.md already cites (23,572,403,200), exact.
// - ibm-granite/granite-3.3-8b-instruct 8,170,864,640: the count a model table marks "HF
//   safetensors confirmed" (code index file id 68624493177); card 8B. Tied: one 49159 x 4096 table.
const popular kPopular[] = {
    {"Qwen/Qwen3-14B", "qwen3-14b", 14'768'307'200, 40, 8, 128},
    {"Qwen/Qwen3-1.7B", "qwen3-1.7b", 1'720'574'976, 28, 8, 128},
    {"Qwen/Qwen3-0.6B", "qwen3-0.6b", 596'049'920, 28, 8, 128},
    {"Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b", 72'706'203'648, 80, 8, 128},
    {"Qwen/Qwen2.5-14B-Instruct", "qwen2.5-14b", 14'770'033'664, 48, 8, 128},
    {"Qwen/Qwen2.5-32B", "qwen2.5-32b", 32'763'876'352, 64, 8, 128},
    {"Qwen/QwQ-32B", "qwq-32b", 32'763'876'352, 64, 8, 128},
    {"deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1-distill-qwen-32b", 32'763'876'352,
     64, 8, 128},
    {"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1-distill-qwen-7b", 7'615'616'512, 28,
     4, 128},
    {"meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b", 1'235'814'400, 16, 8, 64},
    {"meta-llama/Llama-3.2-3B-Instruct", "llama-3.2-3b", 3'212'749'824, 28, 8, 128},
    {"meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama-3-8b", 8'030'261'248, 32, 8, 128},
    {"meta-llama/Meta-Llama-3-70B", "meta-llama-3-70b", 70'553'706'496, 80, 8, 128},
    {"mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-instruct-v0.3", 7'248'023'552, 32, 8, 128},
    {"mistralai/Mistral-Nemo-Base-2407", "mistral-nemo-base-2407", 12'247'782'400, 40, 8, 128},
    {"mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-24b-instruct-2501",
     23'572'403'200, 40, 8, 128},
    {"ibm-granite/granite-3.3-8b-instruct", "granite-3.3-8b", 8'170'864'640, 40, 8, 128},
};

}  // namespace

TEST_CASE("popular bundles: each Hugging Face id resolves to its bundle, params as published") {
  for (const popular& p : kPopular) {
    CAPTURE(p.id);
    // `--model Org/Name` finds the bundle whose source names the repository, in any case.
    std::string path = resolve_model_path(p.id);
    CHECK(path.ends_with(std::string("/") + p.bundle + ".yaml"));
    std::string lower = p.id;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    CHECK(resolve_model_path(lower) == path);
    // `calc calibrate --evaluate` finds a row's model by its repository, else by the shapes its
    // name tells (hf::shape_name): a quantised re-release of the id finds this bundle among them.
    std::vector<std::string> same =
        hf::bundles_with_shapes_of(std::string(p.id) + "-FP8", models_dir(), bundled_models());
    CHECK(std::find(same.begin(), same.end(), p.bundle) != same.end());

    testing::model m(p.id);
    CHECK(params(m) == p.params);
    // Every one is a 16-bit release (BF16, or FP16 as two configs are stored): two bytes a
    // parameter, nothing quantised.
    CHECK(weight_bytes(m) == 2 * p.params);
    // The whole state at 8K is the KV cache: every layer full attention, BF16, as the config
    // states (no sliding window is in use in any of these configs).
    CHECK(state(m, 8192) == bf16_kv(p.layers, p.kv_heads, p.head_dim, 8192));
  }
}

TEST_CASE("popular bundles: tied embeddings are one table, untied two") {
  // Llama-3.2-1B: 16 layers of GQA 32/8 x 64 and SwiGLU 8192, one 128256 x 2048 table.
  const std::int64_t layer = 2048 * (2048 + 2 * 512) + 2048 * 2048 + 3 * 2048 * 8192 + 2 * 2048;
  CHECK(params(testing::model("meta-llama/Llama-3.2-1B-Instruct")) ==
        16 * layer + 128256LL * 2048 + 2048);
  // Qwen3-0.6B stores a copy of its tied table as lm_head; the listing's 751,632,384 less that
  // copy is calc's count.
  CHECK(params(testing::model("Qwen/Qwen3-0.6B")) == 751'632'384 - 151'936LL * 1024);
  // Qwen2.5-32B and QwQ-32B are the same shapes: the distill and the reasoning model keep them.
  CHECK(params(testing::model("Qwen/QwQ-32B")) ==
        params(testing::model("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B")));
}

TEST_CASE("popular bundles: OLMo-2-1124-13B is stored in FP32, with full-width QK norms") {
  testing::model m("allenai/OLMo-2-1124-13B");
  CHECK(resolve_model_path("allenai/OLMo-2-1124-13B").ends_with("/olmo-2-1124-13b.yaml"));
  // Card 13B (the Hub's 13.7B). By hand: 40 x (attention 4 x 5120^2 + Q/K norms over all 40
  // heads 2 x 5120 + SwiGLU 3 x 5120 x 13824 + 2 norms x 5120) + 2 x 100352 x 5120 + 5120.
  const std::int64_t layer = 4LL * 5120 * 5120 + 2 * 5120 + 3LL * 5120 * 13824 + 2 * 5120;
  CHECK(params(m) == 40 * layer + 2LL * 100352 * 5120 + 5120);
  CHECK(params(m) == 13'716'198'400);
  // torch_dtype float32: four bytes a weight, and the cache in the model dtype.
  CHECK(weight_bytes(m) == 4 * params(m));
  // Full multi-head attention (40 KV heads of 128), FP32: 8192 tokens are past its 4096
  // positions, which calc warns about and still counts.
  CHECK(state(m, 4096) == 40LL * 2 * 40 * 128 * 4 * 4096);
}

TEST_CASE("popular bundles: gemma-3-12b-it, its language model and the 5:1 sliding pattern") {
  testing::model m("google/gemma-3-12b-it");
  CHECK(resolve_model_path("google/gemma-3-12b-it").ends_with("/gemma-3-12b-it.yaml"));
  // KerasHub's gemma3_12b_text preset counts 11,765,788,416 parameters with a
  // 262,144-row table; the Hugging Face checkpoint's table has 262,208 rows (the config's
  // default vocab_size, as for gemma-3-27b-it), 64 x 3840 more. Card: 12B.
  CHECK(params(m) == 11'765'788'416 + 64LL * 3840);
  // The whole checkpoint adds the SigLIP tower (416,866,032, as for the 27B) and the projector
  // (1152 x 3840 and its 1152-wide norm): 12,187,325,040, the Hub's 12.2B. calc counts the
  // language model only (the bundle says so).
  CHECK(params(m) + 416'866'032 + (1152LL * 3840 + 1152) == 12'187'325'040);
  CHECK(weight_bytes(m) == 2 * params(m));
  // KV at 8K: of 48 layers every sixth is global (8 x 8192 tokens), the other 40 keep a
  // 1024-token window; 8 KV heads x 256 x K and V x BF16 = 8,192 B a token a layer.
  CHECK(state(m, 8192) == 8192LL * (8 * 8192 + 40 * 1024));
}
