// The serving-engine rules (src/engine/): per-rank heads, pipeline stages, vLLM's hybrid
// groups and sliding-window charging, and every real startup log in tests/fixtures/engine-logs/
// reproduced from its logged KV memory within the log's print rounding.
#include "engine/engine.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/error.h"
#include "engine/question.h"
#include "scratch.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

namespace {

using calc::ojson;

std::string source(const std::string& rel) { return std::string(CALC_SOURCE_DIR) + "/" + rel; }

ojson engine_run(std::vector<std::string> args) { return calc::evaluate(args); }

/// "6.51GiB" -> exact bytes as a fraction of 100ths: the log value and the half-unit around it.
struct logged_memory {
  std::int64_t lo = 0, hi = 0;  // bytes, the interval the printed value stands for
};

logged_memory memory_interval(const std::string& text, const std::string& plus_minus) {
  // A log that prints the byte count ("25083870720B", vllm-ascend's worker) stands for exactly
  // that many bytes.
  if (text.size() > 1 && text.back() == 'B' && text.find("GiB") == std::string::npos) {
    REQUIRE(plus_minus.empty());
    std::string digits = text.substr(0, text.size() - 1);
    REQUIRE(digits.find_first_not_of("0123456789") == std::string::npos);
    logged_memory m;
    m.lo = m.hi = std::stoll(digits);
    return m;
  }
  // Otherwise both are "<digits>.<digits>GiB"; work in units of 2^30 / 10^k bytes.
  auto parse = [](const std::string& t, int& decimals) {
    std::size_t point = t.find('.');
    std::size_t unit = t.find("GiB");
    REQUIRE(unit != std::string::npos);
    std::string digits = t.substr(0, unit);
    decimals = point == std::string::npos ? 0 : static_cast<int>(unit - point - 1);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    return std::stoll(digits);
  };
  int decimals = 0, pm_decimals = 0;
  std::int64_t value = parse(text, decimals);
  std::int64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  // Half a unit of the last printed digit, unless the fixture says otherwise.
  std::int64_t pm_num = 1, pm_den = 2 * scale;
  if (!plus_minus.empty()) {
    pm_num = parse(plus_minus, pm_decimals);
    pm_den = 1;
    for (int i = 0; i < pm_decimals; ++i) pm_den *= 10;
  }
  const std::int64_t gib = 1LL << 30;
  // value / scale GiB -/+ pm_num / pm_den GiB, in bytes (the products stay far below 2^63).
  std::int64_t centre_num = value * gib;
  logged_memory m;
  m.lo = (centre_num * pm_den - pm_num * gib * scale) / (scale * pm_den) + 1;
  m.hi = (centre_num * pm_den + pm_num * gib * scale) / (scale * pm_den);
  return m;
}

double two(double v) { return std::stod(calc::engine::two_decimals(v)); }

}  // namespace

TEST_CASE("engine: KV heads fewer than the TP degree are replicated, one per rank") {
  CHECK(calc::engine::kv_heads_per_rank(8, 2) == 4);
  CHECK(calc::engine::kv_heads_per_rank(4, 4) == 1);
  CHECK(calc::engine::kv_heads_per_rank(4, 8) == 1);  // each of 4 heads stored on 2 ranks
  // Qwen3-235B-A22B (4 KV heads): TP 8 keeps the same per-rank cache as TP 4, so the same
  // memory per rank holds the same tokens.
  auto at = [](const char* tp) {
    return engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-235b-a22b",
                       "--max-model-len", "32768", "--kv-memory", "10GiB", "--tensor-parallel-size",
                       tp, "-f", "json"});
  };
  CHECK(at("4")["kv_cache_tokens"] == at("8")["kv_cache_tokens"]);
  // TP 2 keeps two heads per rank: pages twice as large, half the blocks (floors aside).
  CHECK(at("4")["blocks"].get<std::int64_t>() / 2 == at("2")["blocks"].get<std::int64_t>());
}

TEST_CASE("engine: an MLA latent is not split over TP ranks") {
  auto at = [](const char* tp) {
    return engine_run({"capacity", "--engine", "vllm", "--model", "deepseek-v3", "--max-model-len",
                       "8192", "--kv-memory", "20GiB", "--tensor-parallel-size", tp, "-f", "json"});
  };
  ojson one = at("1"), eight = at("8");
  CHECK(one["kv_cache_tokens"] == eight["kv_cache_tokens"]);
  // 61 layers x (512 + 64) x 2 B per token; 16-token blocks: page 18,432 B per layer.
  CHECK(one["page_bytes"] == 18432);
  CHECK(one["blocks"] == (20LL << 30) / 18432 / 61);
}

TEST_CASE("engine: pipeline stages split layers as vLLM does, the remainder to early stages") {
  CHECK(calc::engine::stage_layers(27, 2, 0) == std::pair<std::int64_t, std::int64_t>{0, 14});
  CHECK(calc::engine::stage_layers(27, 2, 1) == std::pair<std::int64_t, std::int64_t>{14, 13});
  CHECK(calc::engine::stage_layers(10, 4, 0) == std::pair<std::int64_t, std::int64_t>{0, 2});
  CHECK(calc::engine::stage_layers(10, 4, 1) == std::pair<std::int64_t, std::int64_t>{2, 3});
  CHECK(calc::engine::stage_layers(10, 4, 2) == std::pair<std::int64_t, std::int64_t>{5, 3});
  CHECK(calc::engine::stage_layers(10, 4, 3) == std::pair<std::int64_t, std::int64_t>{8, 2});
}

TEST_CASE("engine: 52 sliding + 10 full layers make 7 groups of 10, 8 of them padding") {
  ojson j = engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.11", "--model",
                        source("tests/fixtures/engine-logs/models/gemma-3-27b.yaml"),
                        "--max-model-len", "32768", "--kv-memory", "20GiB",
                        "--max-num-batched-tokens", "8192", "-f", "json"});
  REQUIRE(j["groups"].size() == 7);
  std::int64_t padding = 0, sliding = 0, layers = 0;
  for (const auto& g : j["groups"]) {
    // Layers i, i+6, i+12, ... of the 52 sliding ones form sliding group i: 9, 9, 9, 9, 8, 8.
    CHECK(g["layers"].get<std::int64_t>() + g["padding"].get<std::int64_t>() == 10);
    layers += g["layers"].get<std::int64_t>();
    padding += g["padding"].get<std::int64_t>();
    if (g["kind"] == "sliding window 1024") ++sliding;
  }
  CHECK(layers == 62);
  CHECK(padding == 8);
  CHECK(sliding == 6);
  // Page: 16 tokens x 16 heads x 128 x 2 (K, V) x 2 B = 131,072 B; blocks = 20 GiB / page / 10.
  CHECK(j["page_bytes"] == 131072);
  CHECK(j["blocks"] == 16384);
  // A full layer needs 32768 / 16 = 2048 blocks; a sliding one min(1023 + 8192, 32768) tokens
  // -> ceil(9215 / 16) + 1 = 577 blocks; per request 2048 + 6 x 577 = 5510.
  CHECK(j["blocks_per_request"] == 5510);
  // Printed tokens (0.10-0.20): blocks // 7 groups x 16.
  CHECK(j["kv_cache_tokens"] == 16384 / 7 * 16);
  CHECK(j["log"][1]["line"] == "GPU KV cache size: 37,440 tokens");
  CHECK(j["log"][2]["line"] == "Maximum concurrency for 32,768 tokens per request: 2.97x");
  // From 0.21 the printed size is int(concurrency x max_model_len) = 16384 x 32768 // 5510.
  ojson now = engine_run({"capacity", "--engine", "vllm", "--model",
                          source("tests/fixtures/engine-logs/models/gemma-3-27b.yaml"),
                          "--max-model-len", "32768", "--kv-memory", "20GiB",
                          "--max-num-batched-tokens", "8192", "-f", "json"});
  CHECK(now["kv_cache_tokens"] == 16384LL * 32768 / 5510);
  // Before the hybrid allocator every layer is charged as full: 62 layers per block.
  ojson old = engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.9", "--model",
                          source("tests/fixtures/engine-logs/models/gemma-3-27b.yaml"),
                          "--max-model-len", "32768", "--kv-memory", "20GiB", "-f", "json"});
  CHECK(old["blocks"] == (20LL << 30) / 131072 / 62);
}

TEST_CASE("engine: recurrent-state layers raise the attention block to hold a state page") {
  // Qwen3.6-35B-A3B: a Gated DeltaNet state is 3 conv slots x 8192 channels x 2 B + 32 x 128 x
  // 128 values of the recurrent format; a full-attention token is 2 x 2 x 256 x 1 B (fp8) =
  // 1,024 B, so blocks grow to 16 x ceil(state / (16 x 1,024)) tokens.
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity",
                                     "--engine",
                                     "vllm",
                                     "--model",
                                     "qwen3.6-35b-a3b",
                                     "--max-model-len",
                                     "131072",
                                     "--kv-cache-dtype",
                                     "fp8",
                                     "--kv-memory",
                                     "6GiB",
                                     "-f",
                                     "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  ojson j = run({});  // the model's fp32 recurrent format: 49,152 + 2,097,152 B
  CHECK(j["block_size"] == 2096);
  CHECK(j["page_bytes"] == 2146304);
  CHECK(j["groups"].size() == 4);  // 3 state groups + 1 full group of 10 layers each
  CHECK(j["blocks_per_request"] == 63 + 3);
  ojson bf16 = run({"--mamba-ssm-cache-dtype", "bfloat16"});  // 49,152 + 1,048,576 B
  CHECK(bf16["block_size"] == 1072);
  CHECK(bf16["page_bytes"] == 1097728);
  CHECK(bf16["blocks_per_request"] == 123 + 3);
  // Prefix caching (vLLM >= 0.19, Mamba "align" mode): two state pages per request and group.
  ojson aligned = run({"--enable-prefix-caching"});
  CHECK(aligned["blocks_per_request"] == 63 + 3 * 2);
  ojson older = run({"--enable-prefix-caching", "--engine-version", "0.11"});
  CHECK(older["blocks_per_request"] == 63 + 3);
}

TEST_CASE("engine: an MLA attention block in a hybrid model is a multiple of 64 tokens") {
  // Kimi-Linear-48B-A3B (20 KDA + 7 MLA layers) at TP 2, as in vLLM issue #28228: a KDA state of
  // 36,864 + 1,048,576 = 1,085,440 B per rank and an MLA token of 576 x 2 B = 1,152 B. vLLM's
  // MLA backends take blocks in multiples of 64 tokens: 64 x ceil(1,085,440 / 73,728) = 960
  // (the log's "Setting attention block size to 960 tokens"); 16-token alignment would give 944.
  ojson j =
      engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.11", "--model",
                  source("tests/fixtures/hf/kimi-linear-48b-a3b-instruct.json"), "--max-model-len",
                  "120000", "--tensor-parallel-size", "2", "--kv-memory", "2.30GiB", "-f", "json"});
  CHECK(j["block_size"] == 960);
  CHECK(j["page_bytes"] == 960 * 1152);
  // The state padded by 20,480 B: the log's "Padding mamba page size by 1.89%".
  CHECK(two(100.0 * (960.0 * 1152 - 1085440) / 1085440) == doctest::Approx(1.89));
  // A GQA hybrid keeps the 16-token alignment (Qwen3.6-35B-A3B: 2,096 = 16 x 131).
  ojson gqa =
      engine_run({"capacity", "--engine", "vllm", "--model", "qwen3.6-35b-a3b", "--max-model-len",
                  "131072", "--kv-cache-dtype", "fp8", "--kv-memory", "6GiB", "-f", "json"});
  CHECK(gqa["block_size"] == 2096);
}

TEST_CASE("engine: speculative decoding in the pool") {
  // GLM-4.5-Air (tests/fixtures/hf): 46 layers of 8 KV heads x 128, 4,096 B per layer and token,
  // 16-token pages of 65,536 B, and one MTP layer (num_nextn_predict_layers 1). vLLM registers
  // the MTP layer's attention beside the model's: 47 full-attention layers share the pool.
  std::string glm = source("tests/fixtures/hf/glm-4.5-air.json");
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "capacity", "--engine",    "vllm",  "--model", glm,   "--max-model-len",
        "32768",    "--kv-memory", "10GiB", "-f",      "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  ojson plain = run({});
  CHECK(plain["blocks"] == (10LL << 30) / 65536 / 46);
  ojson mtp = run({"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 1})"});
  CHECK(mtp["blocks"] == (10LL << 30) / 65536 / 47);
  CHECK(mtp["groups"][0]["layers"] == 47);
  CHECK(mtp["speculative_method"] == "mtp");
  CHECK(mtp["num_speculative_tokens"] == 1);
  // One request needs 47 layers' pages at PP 1; at PP 2 the MTP layer sits on the last stage
  // (23 + 23 + 1 = 24 layers there), which then decides the blocks.
  CHECK(mtp["max_model_len_kv_bytes"] == 47LL * 65536 * 2048);
  ojson pp = run({"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 1})",
                  "--pipeline-parallel-size", "2"});
  CHECK(pp["blocks"] == (10LL << 30) / 65536 / 24);
  // Proposals without draft layers (n-gram, or --num-speculative-tokens alone) leave the pool
  // of an attention-only model as it is.
  CHECK(run({"--num-speculative-tokens", "3"})["blocks"] == plain["blocks"]);
  // An EAGLE draft's own layer joins the pool with its own cache spec: 2 x 64 x 2 x 2 B = 512 B
  // per token, a smaller page that vLLM unifies by a larger block (16 x 8 = 128 tokens). A kind
  // of one layer makes the group size 1 (rule 5): 46 target groups and the draft's.
  ojson eagle =
      run({"--speculative-config",
           R"({"method": "eagle3", "num_speculative_tokens": 3, "model": ")" +
               source("tests/fixtures/engine-logs/models/draft-one-layer-test.yaml") + R"("})"});
  REQUIRE(eagle["groups"].size() == 47);
  CHECK(eagle["groups"][46]["block_size"] == 128);
  CHECK(eagle["groups"][46]["layers"] == 1);
  CHECK(eagle["blocks"] == (10LL << 30) / 65536);
  CHECK(eagle["blocks_per_request"] == 46 * 2048 + 32768 / 128);
  // Recurrent states keep one page per proposed token more (MambaSpec num_speculative_blocks),
  // and their convolution window grows by the proposed tokens: Qwen3.6-35B-A3B with 2 tokens
  // keeps 5 conv slots, 5 x 8,192 x 2 B + 2,097,152 B = 2,179,072 B = 133 x 16,384 B, so
  // 2,128-token blocks; a request takes ceil(131072 / 2128) = 62 blocks + 3 groups x 3 pages.
  ojson gdn = engine_run({"capacity", "--engine", "vllm", "--model", "qwen3.6-35b-a3b",
                          "--max-model-len", "131072", "--kv-cache-dtype", "fp8", "--kv-memory",
                          "6GiB", "--num-speculative-tokens", "2", "-f", "json"});
  CHECK(gdn["block_size"] == 2128);
  CHECK(gdn["blocks_per_request"] == 62 + 3 * 3);
  // Refused where calc has no rule, and for a model without MTP layers.
  CHECK_THROWS_WITH(
      engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8192",
                  "--kv-memory", "1GiB", "--speculative-config",
                  R"({"method": "mtp", "num_speculative_tokens": 1})"}),
      doctest::Contains("has none"));
  CHECK_THROWS_WITH(
      engine_run({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--max-model-len",
                  "8192", "--kv-memory", "1GiB", "--num-speculative-tokens", "2"}),
      doctest::Contains("do not model speculative decoding"));
  CHECK_THROWS_WITH(run({"--speculative-config", R"({"method": "medusa"})"}),
                    doctest::Contains("give num_speculative_tokens"));
  CHECK_THROWS_WITH(
      run({"--speculative-config", R"({"method": "medusa", "num_speculative_tokens": 2})"}),
      doctest::Contains("'medusa' is not modelled"));
  CHECK_THROWS_WITH(run({"--speculative-config", "{not json"}),
                    doctest::Contains("--speculative-config: expected a JSON object"));
  CHECK_THROWS_WITH(
      run({"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 2})",
           "--num-speculative-tokens", "3"}),
      "--num-speculative-tokens: 3 disagrees with --speculative-config's 2");
}

TEST_CASE("engine: a Mamba2 state is vLLM's conv and temporal state, per rank") {
  // Nemotron-H-56B's mixer: 256 heads x 64, state 256, 8 groups, kernel 4. TP 1: conv channels
  // 256 x 64 + 2 x 8 x 256 = 20,480, x 3 slots x 2 B (bf16) = 122,880 B; temporal 256 x 64 x
  // 256 = 4,194,304 values x 4 B (fp32) = 16,777,216 B.
  calc::attention_mamba2 m;
  m.heads = 256;
  m.head_dim = 64;
  m.state_dim = 256;
  m.groups = 8;
  m.conv_kernel = 4;
  calc::dtype bf16 = calc::parse_dtype("bf16"), fp32 = calc::parse_dtype("fp32");
  CHECK(calc::engine::mamba2_state_bytes(m, 1, bf16, fp32) == 122880 + 16777216);
  // TP 4: groups split 2 per rank; (16,384 + 4,096) / 4 = 5,120 channels x 3 x 2 B = 30,720 B;
  // 64 heads x 64 x 256 x 4 B = 4,194,304 B.
  CHECK(calc::engine::mamba2_state_bytes(m, 4, bf16, fp32) == 30720 + 4194304);
  // TP 16 > 8 groups: the groups are replicated up to 16 (vLLM extra_groups_for_head_shards),
  // (16,384 + 2 x 16 x 256) / 16 = 1,536 channels x 3 x 2 B = 9,216 B; 16 x 64 x 256 x 4 B.
  CHECK(calc::engine::mamba2_state_bytes(m, 16, bf16, fp32) == 9216 + 1048576);
  // A bf16 temporal state (--mamba-ssm-cache-dtype bfloat16) halves the second term.
  CHECK(calc::engine::mamba2_state_bytes(m, 1, bf16, bf16) == 122880 + 8388608);
}

TEST_CASE("engine: Mamba2 groups that neither divide by nor fit under the TP degree are refused") {
  // 24 heads split over TP 4 (6 each), but 6 B/C groups neither divide by 4 nor are fewer than
  // 4 ranks (vLLM only replicates groups up to the TP degree): an input error, not a guess.
  auto m = calc::testing::model::from_text(R"(schema: 1
name: odd-groups
vocab: 256
hidden: 256
layers:
  count: 1
  norms: 1
  attention: {kind: mamba2, heads: 24, head_dim: 16, state_dim: 16, groups: 6, conv_kernel: 4}
  ffn: none
)");
  calc::engine::engine_config c;
  c.tensor_parallel = 4;
  CHECK_THROWS_WITH(calc::engine::layer_caches(m.g, c),
                    "tensor_parallel: layer 0: 24 Mamba2 heads in 6 groups do not split "
                    "over 4 ranks");
  // TP 2 divides both: (384 + 2 x 6 x 16) / 2 = 288 channels x 3 x 2 B (bf16 conv) = 1,728 B;
  // 12 x 16 x 16 values x 4 B (fp32 recurrent) = 12,288 B.
  c.tensor_parallel = 2;
  std::vector<calc::engine::layer_cache> caches = calc::engine::layer_caches(m.g, c);
  REQUIRE(caches.size() == 1);
  CHECK(caches[0].type == calc::engine::layer_cache::kind::state);
  CHECK(caches[0].state_bytes == 1728 + 12288);
}

TEST_CASE("engine: Nemotron-H (Mamba2 + attention + MLP-only layers) in vLLM's hybrid pool") {
  // 118 layers: 54 Mamba2, 10 attention, 54 MLP-only (no cache). A state is 16,900,096 B
  // (above); an attention token 8 KV heads x 128 x 2 (K, V) x 2 B = 4,096 B, so blocks grow to
  // 16 x ceil(16,900,096 / (16 x 4,096)) = 16 x 258 = 4,128 tokens and pages of 4,128 x 4,096 =
  // 16,908,288 B (the state padded by 8,192 B). Group size 10 (the fewest; 54 >= 1.5 x 10):
  // ceil(54 / 10) = 6 state groups (60 slots, 6 padding) and 1 attention group.
  ojson j = engine_run({"capacity", "--engine", "vllm", "--model",
                        source("tests/fixtures/hf/nemotron-h-56b.json"), "--max-model-len", "8192",
                        "--kv-memory", "20GiB", "-f", "json"});
  CHECK(j["block_size"] == 4128);
  CHECK(j["page_bytes"] == 16908288);
  REQUIRE(j["groups"].size() == 7);
  std::int64_t padding = 0, layers = 0;
  for (const auto& g : j["groups"]) {
    layers += g["layers"].get<std::int64_t>();
    padding += g["padding"].get<std::int64_t>();
  }
  CHECK(layers == 64);  // the 54 MLP-only layers keep nothing
  CHECK(padding == 6);
  // Blocks: 21,474,836,480 // 16,908,288 // 10 = 127; a request: ceil(8192 / 4128) = 2 blocks
  // of attention + one state page in each of 6 groups = 8.
  CHECK(j["blocks"] == 127);
  CHECK(j["blocks_per_request"] == 8);
  // >= 0.21 prints int(127 / 8 x 8192) = 130,048 tokens.
  CHECK(j["kv_cache_tokens"] == 130048);
  // One request needs 10 layers x 16,908,288 B x 8 blocks = 1,352,663,040 B.
  CHECK(j["max_model_len_kv_bytes"] == 1352663040LL);
  // Before the hybrid allocator vLLM ran Mamba layers only in V0: calc refuses.
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.9",
                                "--model", source("tests/fixtures/hf/nemotron-h-56b.json"),
                                "--max-model-len", "8192", "--kv-memory", "20GiB"}),
                    "--engine-version: vllm (0.8-0.9 (V1, before the hybrid allocator)) has no "
                    "allocator for recurrent-state layers (layer 0); use a newer version");
}

TEST_CASE("engine: Nemotron-Nano-9B-v2's 672-token hybrid block (vLLM issue #24280)") {
  // vLLM issue #24280 (a vLLM maintainer, 2025-09-04): hybrid page unification gives "672
  // tokens for nvidia/NVIDIA-Nemotron-Nano-9B-v2". Its Mamba2 state with the 2-byte temporal
  // state of that time (NemotronH's hook defaulted to float16; PR #39032 made it float32 on
  // 2026-04-05): conv (128 x 80 + 2 x 8 x 128) x 3 x 2 B = 73,728 B, temporal 128 x 80 x 128 x
  // 2 B = 2,621,440 B, together 2,695,168 B; an attention token 8 x 128 x 2 x 2 B = 4,096 B; so
  // 16 x ceil(2,695,168 / 65,536) = 16 x 42 = 672 tokens.
  std::string model = source("tests/fixtures/engine-logs/models/nemotron-nano-9b-v2.yaml");
  auto run = [&](const char* ssm) {
    return engine_run({"capacity", "--engine", "vllm", "--model", model, "--max-model-len",
                       "131072", "--kv-memory", "40GiB", "--mamba-ssm-cache-dtype", ssm, "-f",
                       "json"});
  };
  ojson fp16 = run("float16");
  CHECK(fp16["block_size"] == 672);
  CHECK(fp16["page_bytes"] == 672 * 4096);
  // 27 Mamba2 + 4 attention layers (25 MLP-only keep nothing): group size 4, 7 + 1 groups.
  CHECK(fp16["groups"].size() == 8);
  // Today's float32 default: 73,728 + 5,242,880 B -> 16 x ceil(5,316,608 / 65,536) = 1,312.
  ojson fp32 = run("float32");
  CHECK(fp32["block_size"] == 1312);
  // The model's own `recurrent` format (fp32 here) is the default, as vLLM's hook is now.
  ojson dflt = engine_run({"capacity", "--engine", "vllm", "--model", model, "--max-model-len",
                           "131072", "--kv-memory", "40GiB", "-f", "json"});
  CHECK(dflt["block_size"] == 1312);
}

TEST_CASE("engine: a parallel layer is one KV cache spec plus one Mamba2 state spec") {
  // vLLM's FalconH1 decoder layer holds an Attention module and a MambaMixer2 module, so each
  // of its 36 layers gives vLLM's get_kv_cache_spec one full-attention spec and one Mamba spec
  // (vllm/model_executor/models/falcon_h1.py, get_mamba_state_shape_from_config). Per rank at
  // TP 1: attention 2 KV heads x 64 x 2 (K, V) x 2 B = 512 B per token; the mixer (24 heads x
  // 64, state 128, 1 group, kernel 4) keeps conv (24 x 64 + 2 x 1 x 128) = 1,792 channels x 3
  // slots x 2 B = 10,752 B and a temporal state of 24 x 64 x 128 = 196,608 values.
  calc::testing::model m(source("tests/fixtures/hf/falcon-h1-0.5b.json"));
  calc::engine::engine_config c;
  std::vector<calc::engine::layer_cache> caches = calc::engine::layer_caches(m.g, c);
  REQUIRE(caches.size() == 72);
  for (std::size_t i = 0; i < caches.size(); i += 2) {
    CHECK(caches[i].layer == caches[i + 1].layer);  // both modules belong to one layer
    CHECK(caches[i].type == calc::engine::layer_cache::kind::full);
    CHECK(caches[i].token_bytes == 512);
    CHECK(caches[i + 1].type == calc::engine::layer_cache::kind::state);
    CHECK(caches[i + 1].state_bytes == 10752 + 196608 * 4);  // fp32: the model's recurrent
  }
  // TP 2: one KV head per rank (256 B per token); the single B/C group is replicated up to 2
  // (extra_groups_for_head_shards): (1,536 + 2 x 2 x 128) / 2 = 1,024 channels x 3 x 2 B =
  // 6,144 B; 12 heads x 64 x 128 x 4 B = 393,216 B.
  c.tensor_parallel = 2;
  caches = calc::engine::layer_caches(m.g, c);
  CHECK(caches[0].token_bytes == 256);
  CHECK(caches[1].state_bytes == 6144 + 393216);
}

TEST_CASE("engine: Falcon-H1-0.5B in vLLM's hybrid pool, by hand") {
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity",
                                     "--engine",
                                     "vllm",
                                     "--model",
                                     source("tests/fixtures/hf/falcon-h1-0.5b.json"),
                                     "--max-model-len",
                                     "8192",
                                     "--kv-memory",
                                     "10GiB",
                                     "-f",
                                     "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  // The model's fp32 temporal state: 10,752 + 786,432 = 797,184 B. Page unification: blocks of
  // 16 x ceil(797,184 / (16 x 512)) = 16 x 98 = 1,568 tokens; pages of 1,568 x 512 = 802,816 B
  // (the state padded by 5,632 B). 36 attention + 36 state specs: group size 36, two groups,
  // no padding.
  ojson j = run({});
  CHECK(j["block_size"] == 1568);
  CHECK(j["page_bytes"] == 802816);
  REQUIRE(j["groups"].size() == 2);
  CHECK(j["groups"][0]["kind"] == "full attention");
  CHECK(j["groups"][1]["kind"] == "recurrent state");
  for (const auto& g : j["groups"]) {
    CHECK(g["layers"] == 36);
    CHECK(g["padding"] == 0);
  }
  // Blocks: 10,737,418,240 // 802,816 = 13,374; // 36 = 371. A request of 8,192 tokens:
  // ceil(8,192 / 1,568) = 6 attention blocks + 1 state page = 7; concurrency 371 / 7 = 53.
  CHECK(j["blocks"] == 371);
  CHECK(j["blocks_per_request"] == 7);
  CHECK(j["max_concurrency"] == doctest::Approx(53.0));
  // >= 0.21: 371 x 8,192 // 7 = 434,176 tokens; 0.10-0.20: 371 // 2 groups x 1,568 = 290,080.
  CHECK(j["kv_cache_tokens"] == 434176);
  CHECK(run({"--engine-version", "0.11"})["kv_cache_tokens"] == 290080);
  // One request: 36 layers x 802,816 B x 7 pages = 202,309,632 B.
  CHECK(j["max_model_len_kv_bytes"] == 202309632LL);
  CHECK(j["fits"] == true);
  // vLLM's own default (mamba_ssm_cache_dtype "auto" = the model dtype, bf16 for this config):
  // 10,752 + 393,216 = 403,968 B -> 16 x ceil(403,968 / 8,192) = 16 x 50 = 800-token blocks,
  // pages of 409,600 B; 10,737,418,240 // 409,600 = 26,214, // 36 = 728 blocks; a request
  // ceil(8,192 / 800) = 11 + 1 = 12 pages; 728 x 8,192 // 12 = 496,981 tokens, 60.67x.
  ojson bf16 = run({"--mamba-ssm-cache-dtype", "bfloat16"});
  CHECK(bf16["block_size"] == 800);
  CHECK(bf16["page_bytes"] == 409600);
  CHECK(bf16["blocks"] == 728);
  CHECK(bf16["blocks_per_request"] == 12);
  CHECK(bf16["kv_cache_tokens"] == 496981);
  CHECK(two(bf16["max_concurrency"].get<double>()) == doctest::Approx(60.67));
  CHECK(bf16["max_model_len_kv_bytes"] == 36LL * 409600 * 12);
  // Prefix caching on >= 0.19 (Mamba "align" mode): two state pages, 6 + 2 = 8 per request.
  CHECK(run({"--enable-prefix-caching"})["blocks_per_request"] == 8);
  // TP 2 (pages of 1,568 x 256 = 401,408 B hold the 399,360 B state): 26,749 // 36 = 743 blocks.
  ojson tp2 = run({"--tensor-parallel-size", "2"});
  CHECK(tp2["block_size"] == 1568);
  CHECK(tp2["page_bytes"] == 401408);
  CHECK(tp2["blocks"] == 743);
}

TEST_CASE("engine: parallel attention + Mamba2 layers are refused where calc has no rule") {
  std::string falcon = source("tests/fixtures/hf/falcon-h1-0.5b.json");
  auto run = [&](const char* engine, const char* version) {
    std::vector<std::string> args = {"capacity", "--engine",    engine,
                                     "--model",  falcon,        "--max-model-len",
                                     "8192",     "--kv-memory", "10GiB"};
    if (*version) {
      args.push_back("--engine-version");
      args.push_back(version);
    }
    return engine_run(args);
  };
  CHECK_THROWS_WITH(
      run("vllm", "0.6"),
      "--engine-version: layer 0 runs attention and a Mamba2 mixer in parallel, which calc's "
      "vllm 0.4-0.7 (V0 engine) rules do not cover: vLLM added them in the 0.9 series "
      "(FalconH1ForCausalLM, PR #18406, merged May 2025, V0 engine only); use --engine-version "
      "0.10 or newer");
  CHECK_THROWS_WITH(
      run("vllm", "0.9"),
      "--engine-version: layer 0 runs attention and a Mamba2 mixer in parallel, which calc's "
      "vllm 0.8-0.9 (V1, before the hybrid allocator) rules do not cover: vLLM 0.9 runs them on "
      "its V0 engine only (FalconH1ForCausalLM is SupportsV0Only; V1 hybrid attention/SSM "
      "models arrived with PR #20016 in 0.10), whose Mamba cache manager calc does not model; "
      "use --engine-version 0.10 or newer");
  CHECK_THROWS_WITH(
      run("sglang", ""),
      "--engine: layer 0 runs attention and a Mamba2 mixer in parallel, which calc's sglang "
      "0.5 (token pool + Mamba state pool) rules do not cover: calc's SGLang rules do not "
      "place a layer that holds both a KV cache and a Mamba state (FalconH1's parallel layers) "
      "in the two pools");
  CHECK_THROWS_WITH(run("sglang", "0.4"),
                    "--engine: layer 0 runs attention and a Mamba2 mixer in parallel, which "
                    "calc's sglang 0.4 rules do not cover: SGLang 0.4 has no Mamba state pool "
                    "(hybrid models arrived in 0.5)");
  CHECK_NOTHROW(run("vllm", "0.10"));
}

TEST_CASE("engine: layers reading another layer's cache allocate none; k_is_v stores K and V") {
  // models/examples/kv-sharing.yaml: 6 layers, 2 KV heads x 64: sliding 0, 2 and 4 (4 reads
  // 2's cache), global k_is_v 1, 3 and 5 (5 reads 3's). Own caches: 2 sliding + 2 full, so
  // group size 2, two groups. Every page is 16 x 2 x 64 x 2 (K and V, k_is_v too) x 2 B =
  // 8,192 B, so 1 GiB holds 2^30 / 8,192 / 2 = 65,536 blocks.
  std::string model = source("models/examples/kv-sharing.yaml");
  ojson j = engine_run({"capacity", "--engine", "vllm", "--model", model, "--max-model-len", "4096",
                        "--kv-memory", "1GiB", "-f", "json"});
  CHECK(j["page_bytes"] == 8192);
  REQUIRE(j["groups"].size() == 2);
  CHECK(j["groups"][0]["layers"] == 2);
  CHECK(j["groups"][1]["layers"] == 2);
  CHECK(j["blocks"] == 65536);
  // Per request: full 4096 / 16 = 256 blocks; sliding min(127 + 8192, 4096) -> 256 + 1 = 257.
  CHECK(j["blocks_per_request"] == 513);
  // V0 had no cross-layer sharing, and SGLang's is not modelled: both refuse.
  CHECK_THROWS_WITH(
      engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.6", "--model", model,
                  "--max-model-len", "4096", "--kv-memory", "1GiB"}),
      "--engine: layer 4 reads layer 2's cache (kv_source): calc has no vllm 0.4-0.7 "
      "(V0 engine) rule for cross-layer KV sharing");
  CHECK_THROWS_WITH(
      engine_run({"capacity", "--engine", "sglang", "--model", model, "--max-model-len", "4096",
                  "--kv-memory", "1GiB"}),
      "--engine: layer 4 reads layer 2's cache (kv_source): calc has no sglang 0.5 (token "
      "pool + Mamba state pool) rule for cross-layer KV sharing");
}

TEST_CASE("engine: vLLM 0.14-0.15 check one rank's memory against every stage's layers") {
  // Qwen3-8B at pipeline parallel 2: 18 of its 36 layers per rank, 2 x 8 x 128 x 2 B =
  // 4,096 B per layer and token. One request of 32,768 tokens needs 18 x 4,096 x 32,768 =
  // 2.25 GiB on a rank, 4.5 GiB for the whole model; 3 GiB available lies between.
  auto run = [](const std::string& version) {
    return engine_run({"capacity", "--engine", "vllm", "--engine-version", version, "--model",
                       "qwen3-8b", "--max-model-len", "32768", "--pipeline-parallel-size", "2",
                       "--kv-memory", "3GiB", "-f", "json"});
  };
  for (const char* per_stage : {"0.13", "0.16", "0.24"}) {
    CAPTURE(per_stage);
    ojson j = run(per_stage);
    CHECK(j["max_model_len_kv_bytes"] == 18LL * 4096 * 32768);
    CHECK(j["fits"] == true);
  }
  ojson merged = run("0.15");
  CHECK(merged["engine_rules"] == "vllm-v1-merged-check");
  CHECK(merged["max_model_len_kv_bytes"] == 36LL * 4096 * 32768);
  CHECK(merged["fits"] == false);
  // The estimate divides 3 GiB by all 36 layers: 3 x 2^30 / 147,456 = 21,845.3, in 16-token
  // blocks 21,840.
  CHECK(merged["estimated_max_model_len"] == 21840);
  // The blocks are still each rank's own: 3 GiB // (18 x 65,536 B pages) = 2,730.
  CHECK(merged["blocks"] == run("0.13")["blocks"]);
  CHECK(merged["blocks"] == 2730);
  // Without pipeline parallelism both checks are the same.
  ojson one =
      engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.15", "--model", "qwen3-8b",
                  "--max-model-len", "32768", "--kv-memory", "3GiB", "-f", "json"});
  CHECK(one["max_model_len_kv_bytes"] == 36LL * 4096 * 32768);
}

TEST_CASE("engine: bad engine input is one line naming the option") {
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                "--max-model-len", "4096", "-f", "json"}),
                    "--kv-memory: give --kv-memory (the engine's logged KV memory) or --gpu");
  CHECK_THROWS_WITH(
      engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.2", "--model", "qwen3-8b",
                  "--max-model-len", "4096", "--kv-memory", "1GiB"}),
      "--engine-version: calc has no vllm rules for 0.2 (known: 0.4-0.7 (V0 "
      "engine), 0.8-0.9 (V1, before the hybrid allocator), 0.10-0.13 (V1 hybrid "
      "allocator), 0.14-0.15 (V1 hybrid allocator, memory checked against every stage), "
      "0.16-0.18 (V1 hybrid allocator), 0.19-0.20 (V1 hybrid allocator, Mamba align mode), "
      ">=0.21 (GPU KV cache size = concurrency x max_model_len))");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                "--max-model-len", "4096", "--kv-memory", "lots"}),
                    "--kv-memory: 'lots' is not a size such as 18.69GiB or 40GB");
  // SGLang 0.4 has no Mamba pool; no SGLang rule set models the SWA pool.
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--engine-version", "0.4.9",
                                "--model", "qwen3.6-35b-a3b", "--max-model-len", "4096",
                                "--kv-memory", "1GiB"}),
                    "--engine-version: layer 0 keeps recurrent state: SGLang 0.4 has no Mamba "
                    "state pool (hybrid models arrived in 0.5); use --engine-version 0.5 or "
                    "newer");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--model", "gpt-oss-120b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB"}),
                    "--engine: layer 0 keeps sliding window 128: SGLang's SWA pool is not "
                    "modelled by calc (only full-attention, MLA and Mamba state pools)");
  // SGLang's Mamba-pool knobs are refused with vLLM, not ignored.
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3.6-35b-a3b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB",
                                "--disable-radix-cache"}),
                    "--disable-radix-cache: is sglang's knob; --engine vllm does not read it");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3.6-35b-a3b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB",
                                "--max-mamba-cache-size", "64"}),
                    "--max-mamba-cache-size: is sglang's knob; --engine vllm does not read it");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--model", "qwen3.6-35b-a3b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB",
                                "--mamba-scheduler-strategy", "lazy"}),
                    "--mamba-scheduler-strategy: 'lazy' is not no_buffer or extra_buffer");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--model", "qwen3.6-35b-a3b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB",
                                "--mamba-full-memory-ratio", "-1"}),
                    "--mamba-full-memory-ratio: must be > 0, got -1");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--model", "qwen3.6-35b-a3b",
                                "--max-model-len", "4096", "--kv-memory", "1GiB", "--pp", "2"}),
                    "--pipeline-parallel-size: calc has no SGLang rule for a hybrid model's "
                    "Mamba pool over pipeline stages; give --pipeline-parallel-size 1");
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "deepseek-v4-flash",
                                "--max-model-len", "4096", "--kv-memory", "1GiB"}),
                    "--engine: layer 0 is DeepSeek sparse attention, whose engine cache layout "
                    "calc does not model");
}

TEST_CASE("engine: every startup log in tests/fixtures/engine-logs is reproduced or explained") {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(source("tests/fixtures/engine-logs")))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);
  int reproduced = 0;
  for (const auto& file : files) {
    CAPTURE(file.filename().string());
    YAML::Node f = YAML::LoadFile(file.string());
    REQUIRE(f["source"].as<std::string>().rfind("https://", 0) == 0);
    std::string model = f["model"].as<std::string>();
    if (model.find('/') != std::string::npos) model = source(model);
    std::vector<std::string> base = {"capacity",
                                     "--engine",
                                     f["engine"].as<std::string>(),
                                     "--engine-version",
                                     f["version"].as<std::string>(),
                                     "--model",
                                     model,
                                     "-f",
                                     "json"};
    for (const auto& a : f["args"]) base.push_back(a.as<std::string>());
    logged_memory m = memory_interval(
        f["kv_memory"].as<std::string>(),
        f["kv_memory_plus_minus"] ? f["kv_memory_plus_minus"].as<std::string>() : "");
    auto at = [&](std::int64_t bytes) {
      std::vector<std::string> args = base;
      args.push_back("--kv-memory");
      args.push_back(std::to_string(bytes) + "B");
      return engine_run(args);
    };
    ojson lo = at(m.lo), hi = at(m.hi), mid = at((m.lo + m.hi) / 2);
    YAML::Node logged = f["logged"];
    bool ok = true;
    if (logged["kv_cache_tokens"]) {
      auto t = logged["kv_cache_tokens"].as<std::int64_t>();
      ok = ok && lo["kv_cache_tokens"].get<std::int64_t>() <= t &&
           t <= hi["kv_cache_tokens"].get<std::int64_t>();
    }
    if (logged["block_size"])  // "Setting attention block size to N tokens" (hybrid models)
      ok = ok && mid["block_size"].get<std::int64_t>() == logged["block_size"].as<std::int64_t>();
    if (logged["blocks"]) {
      auto b = logged["blocks"].as<std::int64_t>();
      ok = ok && lo["blocks"].get<std::int64_t>() <= b && b <= hi["blocks"].get<std::int64_t>();
    }
    if (logged["max_concurrency"]) {
      double c = std::stod(logged["max_concurrency"].as<std::string>());
      ok = ok && two(lo["max_concurrency"].get<double>()) <= c &&
           c <= two(hi["max_concurrency"].get<double>());
    }
    if (logged["k_size_gb"]) {
      double k = std::stod(logged["k_size_gb"].as<std::string>());
      auto gib = [](const ojson& j) {
        return two(static_cast<double>(j["k_pool_bytes"].get<std::int64_t>()) / (1LL << 30));
      };
      ok = ok && gib(lo) <= k && k <= gib(hi);
    }
    // SGLang's Mamba pool: the state slots, and its conv and ssm buffers in units of 2^30 B.
    if (logged["max_mamba_cache_size"]) {
      auto n = logged["max_mamba_cache_size"].as<std::int64_t>();
      ok = ok && lo["max_mamba_cache_size"].get<std::int64_t>() <= n &&
           n <= hi["max_mamba_cache_size"].get<std::int64_t>();
    }
    for (const char* key : {"conv_size_gb", "ssm_size_gb"}) {
      if (!logged[key]) continue;
      const char* bytes = std::string(key) == "conv_size_gb" ? "conv_state_pool_bytes"
                                                             : "ssm_state_pool_bytes";
      double gb = std::stod(logged[key].as<std::string>());
      auto at_gib = [&](const ojson& j) {
        return two(static_cast<double>(j[bytes].get<std::int64_t>()) / (1LL << 30));
      };
      ok = ok && at_gib(lo) <= gb && gb <= at_gib(hi);
    }
    if (logged["max_running_requests"])
      ok = ok && mid["max_running_requests"].get<std::int64_t>() ==
                     logged["max_running_requests"].as<std::int64_t>();
    if (logged["max_model_len_kv_gib"]) {
      double need = std::stod(logged["max_model_len_kv_gib"].as<std::string>());
      ok = ok && two(static_cast<double>(mid["max_model_len_kv_bytes"].get<std::int64_t>()) /
                     (1LL << 30)) == need;
    }
    if (logged["estimated_max_model_len"]) {
      auto len = logged["estimated_max_model_len"].as<std::int64_t>();
      ok = ok && lo["estimated_max_model_len"].get<std::int64_t>() <= len &&
           len <= hi["estimated_max_model_len"].get<std::int64_t>();
    }
    if (logged["fits"]) ok = ok && mid["fits"].get<bool>() == logged["fits"].as<bool>();
    if (f["reproduced"].as<bool>()) {
      CHECK(ok);
      ++reproduced;
    } else {
      // An explained mismatch stays a mismatch: if the rules come to match, update the fixture.
      CHECK(f["why_not"].as<std::string>().size() > 40);
      CHECK_FALSE(ok);
    }
  }
  CHECK(reproduced >= 19);
}

TEST_CASE("engine: a Hugging Face config.json goes through the same engine rules") {
  // Qwen3-Next-80B-A3B (tests/fixtures/hf): 36 Gated DeltaNet + 12 full-attention layers. A state
  // is 3 x (2 x 16 x 128 + 32 x 128) x 2 B + 32 x 128 x 128 x 4 B = 2,146,304 B; a full-attention
  // token 2 heads x 256 x 2 (K, V) x 2 B = 2,048 B, so blocks of 16 x ceil(2,146,304 / 32,768) =
  // 1,056 tokens and pages of 2,162,688 B; 4 groups of 12 layers.
  ojson j = engine_run({"capacity", "--engine", "vllm", "--model",
                        source("tests/fixtures/hf/qwen3-next-80b-a3b.json"), "--max-model-len",
                        "131072", "--kv-memory", "10GiB", "-f", "json"});
  CHECK(j["block_size"] == 1056);
  CHECK(j["page_bytes"] == 2162688);
  REQUIRE(j["groups"].size() == 4);
  CHECK(j["groups"][3]["layers"] == 12);
  CHECK(j["blocks"] == (10LL << 30) / 2162688 / 12);
  CHECK(j["blocks_per_request"] == 125 + 3);  // ceil(131072 / 1056) + one page per state group
}

TEST_CASE("engine: without --kv-memory the memory is estimated, and weights can leave none") {
  // qwen3-8b on one H100 SXM at 0.9 of the memory the CUDA runtime reports (85,045,477,376 B,
  // models/gpus/h100-sxm.yaml) - 16,381,470,720 B of weights - the profile run's peak - the
  // non-torch memory - the CUDA graph pool (newest rules, >= 0.21). The peak is the larger of
  // the forward pass, 8,192 x (2 x 4,096 + 3 x 12,288) x 2 B, and the sampler, 1,024 rows
  // (vllm serve's max_num_seqs on a card of >= 70 GiB) x 151,936 logits x 14 B.
  ojson j = engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                        "--max-model-len", "32768", "-f", "json"});
  const std::int64_t forward = 8192LL * (2 * 4096 + 3 * 12288) * 2;
  const std::int64_t sampler = 1024LL * 151936 * 14;
  const std::int64_t non_torch = 256LL << 20, graphs = 256LL << 20;
  REQUIRE(j.contains("budget"));
  const ojson& b = j["budget"];
  CHECK(b["forward_peak_bytes"] == forward);
  CHECK(b["sampler_peak_bytes"] == sampler);
  CHECK(b["activation_peak_bytes"] == std::max(forward, sampler));
  CHECK(b["non_torch_bytes"] == non_torch);
  CHECK(b["cuda_graph_bytes"] == graphs);
  CHECK(b["sampler_rows"] == 1024);
  CHECK(b["engine_share_bytes"] == 85045477376LL * 9 / 10);
  std::int64_t deducted = std::max(forward, sampler) + non_torch + graphs;
  CHECK(j["activation_estimate_bytes"] == deducted);
  CHECK(j["card_memory_bytes"] == 85045477376LL);
  CHECK(j["available_kv_bytes"] == 85045477376LL * 9 / 10 - 16381470720LL - deducted);
  CHECK(j["available_kv_source"].get<std::string>().find("runtime-visible memory") !=
        std::string::npos);
  // vLLM 0.20 captures its graphs after sizing (nothing deducted); 0.21 deducts the pool.
  ojson v20 = engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.20", "--model",
                          "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "32768", "-f",
                          "json"});
  ojson v21 = engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.21.0",
                          "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "32768",
                          "-f", "json"});
  CHECK(v20["budget"]["cuda_graph_bytes"] == 0);
  CHECK(v21["budget"]["cuda_graph_bytes"] == graphs);
  CHECK(v20["available_kv_bytes"].get<std::int64_t>() - v21["available_kv_bytes"].get<std::int64_t>() ==
        graphs);
  // TP 2: the communication buffers (2 GiB per rank) replace the TP 1 figure.
  ojson tp2 = engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu",
                          "h100-sxm", "--tp", "2", "--max-model-len", "32768", "-f", "json"});
  CHECK(tp2["budget"]["non_torch_bytes"] == (2LL << 30));
  // The sampler's rows follow --max-num-seqs (and never exceed the batched tokens).
  ojson few = engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu",
                          "h100-sxm", "--max-model-len", "32768", "--max-num-seqs", "16", "-f",
                          "json"});
  CHECK(few["budget"]["sampler_rows"] == 16);
  CHECK(few["budget"]["activation_peak_bytes"] == forward);
  // SGLang: the fraction of the same runtime figure covers weights and pool; no activation term.
  ojson s =
      engine_run({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                  "--max-model-len", "32768", "--mem-fraction-static", "0.8", "-f", "json"});
  CHECK(s["available_kv_bytes"] == 85045477376LL * 8 / 10 - 16381470720LL);
  CHECK(s["budget"]["fraction_source"] == "--mem-fraction-static");
  // Without it, SGLang's computed default for an 81,106 MiB card at TP 1: 512 + 8,192 x 1.5 +
  // 256 x 2 + 1 / 8 x 1,024 = 13,440 MiB reserved, 1 - 13,440 / 81,106 = 0.834.
  ojson sd = engine_run({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--gpu",
                         "h100-sxm", "--max-model-len", "32768", "-f", "json"});
  CHECK(sd["budget"]["fraction"] == doctest::Approx(0.834));
  CHECK(sd["available_kv_bytes"] == 85045477376LL * 834 / 1000 - 16381470720LL);
  // A card without a runtime figure in the catalogue falls back to the memory as sold, and
  // says so. DeepSeek-V3 in bf16 does not fit 8 x A10 at all.
  ojson none = engine_run({"capacity", "--engine", "vllm", "--model", "deepseek-v3", "--gpu",
                           "a10", "--tp", "8", "--max-model-len", "32768", "--weights", "bf16",
                           "-f", "json"});
  CHECK(none["card_memory_bytes"] == calc::find_gpu("a10").memory);
  CHECK(none["available_kv_source"].get<std::string>().find("memory as sold (no runtime figure)") !=
        std::string::npos);
  CHECK(none["fits"] == false);
  CHECK(none["blocks"] == 0);
  CHECK(none["reason"].get<std::string>().rfind("no memory is left for the KV cache", 0) == 0);
}

TEST_CASE("engine: SGLang's default --mem-fraction-static by card and layout") {
  // server_args.py _handle_gpu_memory_settings (PR #10975): reserved MiB = 512 + max(chunked
  // prefill, 2048) x 1.5 + graph batch x 2 + tp x pp / 8 x 1024, at least 10 GiB above 60 GiB.
  using calc::engine::sglang_default_fraction;
  CHECK(sglang_default_fraction(81106, 1, 1) == doctest::Approx(0.834));  // H100: 13,440 MiB
  CHECK(sglang_default_fraction(81106, 8, 1) == doctest::Approx(0.817));  // 14,848 MiB
  CHECK(sglang_default_fraction(24210, 1, 1) == doctest::Approx(0.845));  // RTX 4090: 3,760 MiB
  CHECK(sglang_default_fraction(24210, 4, 1) == doctest::Approx(0.824));  // graph batch 80
  CHECK(sglang_default_fraction(45403, 1, 1) == doctest::Approx(0.849));  // 4,096-token chunks
  // --chunked-prefill-size given: its activation reserve, not the bucket's (H100: 8,192 by
  // default; 32,768 reserves 512 + 49,152 + 512 + 128 = 50,304 MiB, past the 10 GiB floor).
  CHECK(sglang_default_fraction(81106, 1, 1, 8192) == sglang_default_fraction(81106, 1, 1));
  CHECK(sglang_default_fraction(81106, 1, 1, 32768) == doctest::Approx(0.380));
  // Above 60 GiB the reservation is at least 10 GiB: 196,592 MiB (MI300X) at TP 1 reserves
  // 512 + 24,576 + 1,024 + 128 = 26,240 MiB.
  CHECK(sglang_default_fraction(196592, 1, 1) == doctest::Approx(0.867));
}

TEST_CASE("engine: the budget without --kv-memory against vLLM's memory-profiling log") {
  // tests/fixtures/engine-logs/profiles/llama-3-8b-vllm-0.6-h100.yaml: every term of the
  // estimate against the log's own line, and the available KV memory within 0.1 GiB, at TP 1
  // and TP 2. The sampler term (256 rows x 128,256 logits x 41 B) and the non-torch memory by
  // TP degree decide it: a peak that scaled with TP, or one non-torch figure for every TP,
  // misses the TP 2 line by more than the tolerance.
  YAML::Node f =
      YAML::LoadFile(source("tests/fixtures/engine-logs/profiles/llama-3-8b-vllm-0.6-h100.yaml"));
  REQUIRE(f["source"].as<std::string>().rfind("https://", 0) == 0);
  const double gib = static_cast<double>(1LL << 30);
  for (const auto& run : f["runs"]) {
    std::string tp = run["tp"].as<std::string>();
    CAPTURE(tp);
    std::vector<std::string> args = {"capacity", "--engine", "vllm", "--engine-version",
                                     f["version"].as<std::string>(), "--model",
                                     f["model"].as<std::string>(), "--gpu",
                                     source(f["gpu"].as<std::string>()),
                                     "--gpu-memory-utilization",
                                     f["gpu_memory_utilization"].as<std::string>(),
                                     "--max-model-len", "8192", "--tensor-parallel-size", tp, "-f",
                                     "json"};
    ojson j = engine_run(args);
    const ojson& b = j["budget"];
    auto in_gib = [&](const char* key) { return b[key].get<double>() / gib; };
    // The weights per rank and the instance's share as the log prints them (two decimals).
    CHECK(two(j["weight_bytes_per_rank"].get<double>() / gib) ==
          doctest::Approx(std::stod(run["weights_gib"].as<std::string>())));
    CHECK(two(in_gib("engine_share_bytes")) ==
          doctest::Approx(std::stod(run["can_use_gib"].as<std::string>())));
    // The non-torch memory and the activation peak, term by term.
    CHECK(two(in_gib("non_torch_bytes")) ==
          doctest::Approx(std::stod(run["non_torch_gib"].as<std::string>())));
    CHECK(std::abs(in_gib("activation_peak_bytes") -
                   std::stod(run["activation_gib"].as<std::string>())) <= 0.05);
    // The whole budget, predicted: within 0.1 GiB of the log's available KV memory.
    double available = j["available_kv_bytes"].get<double>() / gib;
    CHECK(std::abs(available - std::stod(run["available_gib"].as<std::string>())) <= 0.1);
    // With the log's own non-torch and activation terms given, within the four terms' rounding.
    double rest = std::stod(run["non_torch_gib"].as<std::string>()) +
                  std::stod(run["activation_gib"].as<std::string>());
    args.insert(args.end() - 2, {"--activation-memory", calc::engine::two_decimals(rest) + "GiB"});
    ojson given = engine_run(args);
    CHECK(std::abs(given["available_kv_bytes"].get<double>() / gib -
                   std::stod(run["available_gib"].as<std::string>())) <= 0.03);
  }
}

TEST_CASE("engine: the profile run's forward pass grows with the batched tokens (RTX 3090 log)") {
  // tests/fixtures/engine-logs/profiles/llama-3.1-8b-vllm-0.6-rtx3090.yaml: three runs of one
  // 0.6.x build that differ in the tokens of the profile batch (20,000, 29,000 and 512). The
  // log's peak_torch_memory - weights is the forward pass there; calc's forward term,
  // tokens x (2 x 4,096 + 3 x 14,336) x 2 B, lies within 0.25 GiB of it at all three. A term
  // that did not grow with the tokens (or grew with the context length instead) misses the
  // 512-token run by a GiB or more.
  YAML::Node f = YAML::LoadFile(
      source("tests/fixtures/engine-logs/profiles/llama-3.1-8b-vllm-0.6-rtx3090.yaml"));
  REQUIRE(f["source"].as<std::string>().rfind("https://", 0) == 0);
  const double gib = static_cast<double>(1LL << 30);
  const double weights = std::stod(f["weights_gib"].as<std::string>());
  for (const auto& run : f["runs"]) {
    std::string len = run["max_model_len"].as<std::string>();
    CAPTURE(len);
    ojson j = engine_run({"capacity", "--engine", "vllm", "--engine-version",
                          f["version"].as<std::string>(), "--model", f["model"].as<std::string>(),
                          "--gpu", f["gpu"].as<std::string>(), "--gpu-memory-utilization",
                          f["gpu_memory_utilization"].as<std::string>(), "--max-model-len", len,
                          "--max-num-batched-tokens", run["batched_tokens"].as<std::string>(),
                          "-f", "json"});
    double forward = j["budget"]["forward_peak_bytes"].get<double>() / gib;
    double logged = std::stod(run["peak_torch_gib"].as<std::string>()) - weights;
    CHECK(std::abs(forward - logged) <= 0.25);
    if (run["available_gib"]) {
      // Explained miss: this pre-#10511 build reports 0.35 GiB of non-torch memory and no
      // sampler peak; calc's 0.6 row keeps PR #10511's figures, so it predicts less memory by
      // the non-torch difference and the sampler term. If the rules come to match this build,
      // revisit the fixture.
      double available = j["available_kv_bytes"].get<double>() / gib;
      double miss = std::stod(run["available_gib"].as<std::string>()) - available;
      CHECK(miss > 1.0);
      CHECK(miss < 2.0);
    }
  }
}

TEST_CASE("engine: every rule-set row starts at a boundary pinned to its pull request") {
  // rule_boundaries() is the data behind docs/engines.md's "Version boundaries": each row of
  // rule_sets() after an engine's first starts at one, and each cites the change that made it.
  const auto& boundaries = calc::engine::rule_boundaries();
  std::string previous_engine;
  for (const calc::engine::rule_set& r : calc::engine::rule_sets()) {
    CAPTURE(r.versions);
    bool first = previous_engine != r.engine;
    previous_engine = r.engine;
    if (first) continue;
    bool found = false;
    for (const auto& b : boundaries)
      if (std::string(b.engine) == r.engine && b.version == r.min_version) found = true;
    CHECK(found);
  }
  for (const auto& b : boundaries) {
    CAPTURE(b.rule);
    // The pull request, or the release whose notes made the change.
    std::string change = b.change;
    CHECK((change.find("PR #") != std::string::npos || change.find("release 0.") != std::string::npos));
    CHECK(std::string(b.evidence).size() > 20);
  }
  // The budget rules' own boundary: the CUDA graph pool from 0.21.
  CHECK(calc::engine::find_budget_rules("vllm", "0.20.2").cuda_graph == 0);
  CHECK(calc::engine::find_budget_rules("vllm", "0.21.0").cuda_graph > 0);
  CHECK(calc::engine::find_budget_rules("vllm", "0.6").sampler_bytes_per_logit == 41);
  CHECK(calc::engine::find_budget_rules("sglang", "").computed_fraction);
}

TEST_CASE("engine: the catalogue's runtime-visible memory needs its source") {
  calc::gpu_spec h100 = calc::find_gpu("h100-sxm");
  CHECK(h100.memory == 80000000000LL);          // as sold: plain capacity and the chapter
  CHECK(h100.runtime_memory == 85045477376LL);  // as the CUDA runtime reports it
  CHECK(h100.runtime_memory_source.find("https://") != std::string::npos);
  CHECK(calc::engine_visible_memory(h100) == 85045477376LL);
  // H200: 139.81 GiB in the engines' own logs, 9.1 GB above the 141 GB it is sold as.
  calc::gpu_spec h200 = calc::find_gpu("h200");
  CHECK(h200.memory == 141000000000LL);
  CHECK(calc::engine_visible_memory(h200) == 150119844413LL);
  // A card without a runtime figure keeps its memory as sold.
  calc::gpu_spec h800 = calc::find_gpu("h800");
  CHECK(h800.runtime_memory == 0);
  CHECK(calc::engine_visible_memory(h800) == 80000000000LL);
  // H200 NVL: 139.80 GiB, 0.01 GiB under the SXM card's figure, though both are sold as 141 GB.
  calc::gpu_spec nvl = calc::find_gpu("h200-nvl");
  CHECK(calc::engine_visible_memory(nvl) == 150109106995LL);
  CHECK(nvl.runtime_memory < h200.runtime_memory);
  // Records given in two decimals of GiB (a vLLM or PyTorch message) are stored as that value
  // in bytes: B200 178.35 GiB, T4 14.58 GiB; MI300X's HIP query in whole MiB (196,592).
  CHECK(calc::find_gpu("b200").runtime_memory == 191501854310LL);
  CHECK(calc::find_gpu("t4").runtime_memory == 15655155794LL);
  CHECK(calc::find_gpu("mi300x").runtime_memory == 196592LL << 20);
  // GB200 184.31 GiB (a PyTorch out-of-memory message), above the 186 "GB" it is sold as in
  // decimal bytes: GiB sold as "GB".
  CHECK(calc::find_gpu("gb200").runtime_memory == 197901355581LL);
  int with_runtime = 0;
  for (const calc::gpu_spec& g : calc::gpu_catalogue())
    if (g.runtime_memory > 0) ++with_runtime;
  CHECK(with_runtime >= 27);
  // Every runtime figure of the catalogue has a source and lies within 10 % of the figure as
  // sold (ECC and driver reservations, or GiB sold as "GB"), so a typo cannot pass.
  for (const calc::gpu_spec& g : calc::gpu_catalogue()) {
    CAPTURE(g.name);
    if (g.runtime_memory == 0) continue;
    CHECK(!g.runtime_memory_source.empty());
    CHECK(g.runtime_memory * 10 > g.memory * 9);
    CHECK(g.runtime_memory * 10 < g.memory * 11);
  }
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "calc-engine-gpu";
  std::filesystem::create_directories(dir);
  std::string file = (dir / "no-source.yaml").string();
  {
    std::ofstream out(file);
    out << "name: no-source\nmemory: 24GB\nbandwidth: 1TB\nbf16_tflops: 100\nnvlink_domain: "
           "1\nsource: test\n"
           "runtime_memory: 25386352640B\n";
  }
  CHECK_THROWS_WITH(calc::read_gpu_file(file), doctest::Contains("runtime_memory_source"));
}

TEST_CASE("engine: a per-rank --kv-memory list keeps the smallest rank's blocks") {
  // Qwen3-8B at TP 2: 36 layers x 4 KV heads x 128 x 2 (K, V) x 2 B = 2,048 B per layer and
  // token, 16-token pages of 32,768 B; vLLM sizes each worker's pool from its own memory and
  // keeps the smallest block count (get_kv_cache_configs).
  auto run = [](const std::string& memory, const char* tp, const char* pp) {
    return engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len",
                       "32768", "--tensor-parallel-size", tp, "--pipeline-parallel-size", pp,
                       "--kv-memory", memory, "-f", "json"});
  };
  ojson list = run("10GiB,9GiB", "2", "1");
  ojson least = run("9GiB", "2", "1");
  CHECK(list["blocks"] == least["blocks"]);
  CHECK(list["blocks"] == (9LL << 30) / 32768 / 36);
  CHECK(list["available_kv_bytes"] == (9LL << 30));
  REQUIRE(list["rank_kv_bytes"].size() == 2);
  CHECK(list["rank_kv_bytes"][0] == (10LL << 30));
  // Pipeline parallel 2 at TP 1: rank r holds stage r (vLLM's rank order pp_rank x tp +
  // tp_rank); 18 layers x 4,096 B x 16 per page on each. Stage 1 with 5 GiB decides, though
  // stage 0 alone would hold 8 GiB's worth.
  ojson pp = run("8GiB,5GiB", "1", "2");
  CHECK(pp["blocks"] == (5LL << 30) / 65536 / 18);
  ojson pp_swapped = run("5GiB,8GiB", "1", "2");
  CHECK(pp_swapped["blocks"] == pp["blocks"]);
  // TP 2 x PP 2: ranks 0, 1 are stage 0; ranks 2, 3 stage 1.
  ojson both = run("6GiB,7GiB,3GiB,9GiB", "2", "2");
  CHECK(both["blocks"] == (3LL << 30) / 32768 / 18);
  CHECK_THROWS_WITH(run("6GiB,7GiB,3GiB", "2", "2"),
                    "--kv-memory: 3 values for 4 ranks (tp 2 x pp 2): give one value for all "
                    "ranks, or one per rank");
}

TEST_CASE("engine: plain plan and plan --engine choose the same layout") {
  // Both search plan/placement.h's deployable_layouts (TP a power of two within the NVLink
  // domain, PP only across domains, replicas) with the same preferences; where both need the
  // same cards they pick the same layout. (What "holds" means differs: the engine's budget
  // against plain capacity's, so the card counts can differ: Qwen3-235B-A22B at 32K x 64 on H100
  // takes 16 cards in plain plan and 24 under vLLM's budget, tp 8 x pp 2 and tp 8 x pp 3, both
  // PP only once TP fills the 8-card domain; the old engine search tried tp 6 and tp 3 first.)
  struct input {
    const char* model;
    const char* length;
    const char* requests;
  };
  for (const input& in : {input{"qwen3-8b", "32768", "4"}, input{"qwen3-8b", "32768", "40"},
                          input{"llama-3.1-70b", "8192", "16"},
                          input{"llama-3.1-70b", "32768", "64"}}) {
    CAPTURE(in.model);
    CAPTURE(in.requests);
    std::vector<std::string> args = {"plan",       "--model",    in.model, "--gpu", "h100-sxm",
                                     "--length",   in.length,    "--requests", in.requests, "-f",
                                     "json"};
    ojson plain = engine_run(args);
    args.insert(args.begin() + 1, {"--engine", "vllm"});
    ojson engine = engine_run(args);
    REQUIRE(engine["gpus"].is_number());
    CHECK(engine["gpus"] == plain["gpus"]);
    CHECK(engine["tensor_parallel_size"] == plain["tp"]);
    CHECK(engine["pipeline_parallel_size"] == plain["pp"]);
    CHECK(engine["instances"] == plain["instances"]);
    auto tp = engine["tensor_parallel_size"].get<std::int64_t>();
    CHECK((tp & (tp - 1)) == 0);  // a power of two
  }
  ojson big = engine_run({"plan", "--engine", "vllm", "--model", "qwen3-235b-a22b", "--gpu",
                          "h100-sxm", "--length", "32768", "--requests", "64", "-f", "json"});
  CHECK(big["gpus"] == 24);
  CHECK(big["tensor_parallel_size"] == 8);
  CHECK(big["pipeline_parallel_size"] == 3);
}

TEST_CASE("engine: every option of plain capacity and plan is applied or refused") {
  std::vector<std::string> base = {
      "capacity", "--engine",    "vllm",  "--model", "qwen3-8b", "--max-model-len",
      "32768",    "--kv-memory", "10GiB", "-f",      "json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  // Refused, each naming what the engine takes instead.
  SUBCASE("--gpus") {
    CHECK_THROWS_WITH(with({"--gpus", "2"}), doctest::Contains("--gpus: is not an option"));
  }
  SUBCASE("--workspace") {
    CHECK_THROWS_WITH(with({"--workspace", "4GiB"}),
                      doctest::Contains("--workspace: not taken with --engine"));
    CHECK_THROWS_WITH(
        engine_run({"plan", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                    "--max-model-len", "8192", "--requests", "4", "--workspace", "4GiB"}),
        doctest::Contains("--workspace: not taken with --engine"));
  }
  SUBCASE("--shared-prefix") {
    CHECK_THROWS_WITH(with({"--shared-prefix", "1024"}),
                      doctest::Contains("--shared-prefix: not taken with --engine"));
  }
  SUBCASE("--requests") {
    CHECK_THROWS_WITH(with({"--requests", "8"}),
                      doctest::Contains("--requests: not taken by capacity --engine"));
  }
  SUBCASE("--ep") {
    CHECK_THROWS_WITH(with({"--ep", "2"}), doctest::Contains("--ep: not taken with --engine"));
  }
  SUBCASE("--weight-bytes") {
    CHECK_THROWS_WITH(with({"--weight-bytes", "10GB"}),
                      doctest::Contains("--weight-bytes: not taken with --engine"));
  }
  SUBCASE("--page-tokens is the engine's block size") {
    ojson page = with({"--page-tokens", "32"});
    ojson block = with({"--block-size", "32"});
    CHECK(page["block_size"] == 32);
    CHECK(page["blocks"] == block["blocks"]);
    CHECK(page["blocks"] != with({})["blocks"]);
    // One option under two spellings: given twice, the parser refuses it.
    CHECK_THROWS_WITH(with({"--page-tokens", "32", "--block-size", "16"}),
                      doctest::Contains("At Most 1 required but received 2"));
  }
  SUBCASE("--length is the engine's context length") {
    ojson by_length = engine_run({"capacity", "--engine", "sglang", "--model", "qwen3-8b",
                                  "--length", "32K", "--kv-memory", "10GiB", "-f", "json"});
    CHECK(by_length["max_model_len"] == 32768);
    CHECK_THROWS_WITH(with({"--length", "8192"}),
                      doctest::Contains("At Most 1 required but received 2"));
    CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--length",
                                  "8K,16K", "--kv-memory", "10GiB"}),
                      "--length: give one context length with --engine (the engine's "
                      "--max-model-len)");
    // The same option spelled as the engines spell it: its errors name that spelling, and a
    // --max-model-len error names --length where the user typed --length.
    CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                  "--max-model-len", "8K,16K", "--kv-memory", "10GiB"}),
                      "--max-model-len: give one context length with --engine (the engine's "
                      "--max-model-len)");
    CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                  "--context-length=8K,16K", "--kv-memory", "10GiB"}),
                      doctest::Contains("--context-length: give one context length"));
    CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                  "--max-model-len", "abc", "--kv-memory", "10GiB"}),
                      "--max-model-len: 'abc' is not a length such as 8192, 128K or 1M");
    ojson plan = engine_run({"plan", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                             "--length", "8192", "--requests", "4", "-f", "json"});
    CHECK(plan["max_model_len"] == 8192);
    CHECK(plan["gpus"] == 1);
    // Without either, the engines' default: the model's max_position_embeddings.
    ojson limit = engine_run({"capacity", "--engine", "sglang", "--model", "qwen3-8b",
                              "--kv-memory", "10GiB", "-f", "json"});
    CHECK(limit["max_model_len"] == 40960);
  }
}

TEST_CASE("engine: SGLang's Mamba pool beside the token pool (Qwen3-Next-80B-A3B by hand)") {
  // tests/fixtures/hf/qwen3-next-80b-a3b.json at TP 1: 36 Gated DeltaNet layers, each state
  // (2 x 16 x 128 + 32 x 128) channels x 3 slots x 2 B = 49,152 B of convolution and
  // 32 x 128 x 128 x 4 B = 2,097,152 B of recurrent state (SGLang's --mamba-ssm-dtype default
  // is float32 whatever the model's), 77,266,944 B a request; 12 full-attention layers of
  // 2 x 256 x 2 (K, V) x 2 B = 24,576 B a token. The pools' budget is 10 GiB.
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity", "--engine", "sglang", "--model",
                                     source("tests/fixtures/hf/qwen3-next-80b-a3b.json"),
                                     "--max-model-len", "131072", "--kv-memory", "10GiB", "-f",
                                     "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  const std::int64_t budget = 10LL << 30, per_request = 77266944, conv = 36 * 49152;
  const std::int64_t cell = 24576;
  // The radix cache on (the default): states get ratio / (1 + ratio) of the budget, 0.9 / 1.9,
  // in whole requests: 5,086,145,482 / 77,266,944 = 65 slots; the token pool the rest, 232,546
  // tokens (page 1: the no_buffer strategy needs it). The pool holds 66 slots (slot 0 pads).
  ojson j = run({});
  CHECK(j["engine_rules"] == "sglang-mamba");
  CHECK(j["mamba_request_bytes"] == per_request);
  const std::int64_t slots = budget * 9 / 19 / per_request;
  REQUIRE(slots == 65);
  CHECK(j["max_mamba_cache_size"] == slots);
  CHECK(j["kv_cache_tokens"] == (budget - slots * per_request) / cell);
  CHECK(j["kv_cache_tokens"] == 232546);
  CHECK(j["conv_state_pool_bytes"] == (slots + 1) * conv);
  CHECK(j["ssm_state_pool_bytes"] == (slots + 1) * (per_request - conv));
  // Each running request keeps 3 state slots with the radix cache: 65 // 3 = 21 requests, far
  // under the default cap of 2,048, and the concurrency stays the token pool's 1.77.
  CHECK(j["max_running_requests"] == 21);
  CHECK(j["max_concurrency"].get<double>() == doctest::Approx(232546.0 / 131072));
  CHECK(j["block_size"] == 1);
  CHECK(j["log"][0]["line"] ==
        "Mamba Cache is allocated. max_mamba_cache_size: 65, conv_state size: 0.11GB, "
        "ssm_state size: 4.64GB");
  CHECK(j["log"][1]["line"] ==
        "KV Cache is allocated. #tokens: 232546, K size: 2.66 GB, V size: 2.66 GB");
  // A ratio of 0.5: a third of the budget, 46 slots.
  CHECK(run({"--mamba-full-memory-ratio", "0.5"})["max_mamba_cache_size"] == budget / 3 / per_request);
  // extra_buffer keeps 2 ping-pong slots more per request: 65 // 5 = 13.
  CHECK(run({"--mamba-scheduler-strategy", "extra_buffer"})["max_running_requests"] == 13);
  // --max-mamba-cache-size is taken as given; what it leaves is the token pool's.
  ojson given = run({"--max-mamba-cache-size", "100"});
  CHECK(given["max_mamba_cache_size"] == 100);
  CHECK(given["kv_cache_tokens"] == (budget - 100 * per_request) / cell);
  CHECK(given["max_running_requests"] == 33);
  // A bf16 recurrent state halves the matrices: 36 x (49,152 + 1,048,576) B a request.
  ojson bf16 = run({"--mamba-ssm-dtype", "bfloat16"});
  CHECK(bf16["mamba_request_bytes"] == 36 * (49152 + 1048576));
  CHECK(bf16["max_mamba_cache_size"] == budget * 9 / 19 / (36 * (49152 + 1048576)));
  // --disable-radix-cache: one state per running request, --max-running-requests of them, and
  // the page size as given (64); the token pool gets the rest.
  ojson plain = run({"--disable-radix-cache", "--max-running-requests", "16", "--page-size", "64"});
  CHECK(plain["max_mamba_cache_size"] == 16);
  CHECK(plain["max_running_requests"] == 16);
  CHECK(plain["block_size"] == 64);
  CHECK(plain["kv_cache_tokens"] == (budget - 16 * per_request) / cell / 64 * 64);
  // With the radix cache on the page size falls back to 1 (server_args.py, no_buffer).
  CHECK(run({"--page-size", "64"})["block_size"] == 1);
  // Without --max-running-requests SGLang 0.5 keeps 512 states: 39.6 GB, more than the 10 GiB
  // budget, so nothing is left for the tokens and one request does not fit.
  ojson many = run({"--disable-radix-cache"});
  CHECK(many["max_mamba_cache_size"] == 512);
  CHECK(many["kv_cache_tokens"] == 0);
  CHECK(many["fits"] == false);
  CHECK(many["reason"] ==
        "the Mamba pool's 512 request states (77266944 B each) take more than the 10737418240 B "
        "budget; nothing is left for the token pool");
}

TEST_CASE("engine: SGLang 0.5.9's Mamba pool against its startup log (Qwen3.5-397B-A17B, TP 2)") {
  // tests/fixtures/engine-logs/qwen3.5-397b-a17b-sglang-0.5.9-tp2.yaml (kvcache-ai/ktransformers
  // #1870): the pools' budget from the Load-weight line, 15.654 +/- 0.005 GiB. The Mamba side
  // is exact at both ends of that interval: 45 Gated DeltaNet layers of 6,144 channels x 3 x
  // 2 B + 32 x 128 x 128 x 4 B per rank = 96,030,720 B a request; 82 slots; 83 x those in the
  // pool, printed 0.13 and 7.29 GB. A split of 1:1 (ratio 1) would give 87 slots, 0.2 (the
  // default before PR #11679) 29.
  YAML::Node f = YAML::LoadFile(
      source("tests/fixtures/engine-logs/qwen3.5-397b-a17b-sglang-0.5.9-tp2.yaml"));
  REQUIRE(f["source"].as<std::string>().rfind("https://", 0) == 0);
  logged_memory m = memory_interval(f["kv_memory"].as<std::string>(),
                                    f["kv_memory_plus_minus"].as<std::string>());
  auto at = [&](std::int64_t bytes, std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity", "--engine", "sglang", "--engine-version",
                                     f["version"].as<std::string>(), "--model",
                                     f["model"].as<std::string>(), "-f", "json", "--kv-memory",
                                     std::to_string(bytes) + "B"};
    for (const auto& a : f["args"]) args.push_back(a.as<std::string>());
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  const YAML::Node logged = f["logged"];
  for (std::int64_t bytes : {m.lo, m.hi}) {
    CAPTURE(bytes);
    ojson j = at(bytes, {});
    CHECK(j["mamba_request_bytes"] == 96030720);
    CHECK(j["max_mamba_cache_size"] == logged["max_mamba_cache_size"].as<std::int64_t>());
    CHECK(two(static_cast<double>(j["conv_state_pool_bytes"].get<std::int64_t>()) / (1LL << 30)) ==
          std::stod(logged["conv_size_gb"].as<std::string>()));
    CHECK(two(static_cast<double>(j["ssm_state_pool_bytes"].get<std::int64_t>()) / (1LL << 30)) ==
          std::stod(logged["ssm_size_gb"].as<std::string>()));
    CHECK(j["max_running_requests"] == logged["max_running_requests"].as<std::int64_t>());
    // The explained miss: the token pool 0.1-0.3 % above the log's over the interval (0.22 % at
    // its centre: 0.018 GiB of memory the engine did not have when it sized the pools). A change
    // that moves it must revisit the fixture's note.
    auto tokens = logged["kv_cache_tokens"].as<double>();
    double miss = (j["kv_cache_tokens"].get<double>() - tokens) / tokens;
    CHECK(miss > 0.001);
    CHECK(miss < 0.003);
    CHECK(at(bytes, {"--mamba-full-memory-ratio", "1"})["max_mamba_cache_size"] == 87);
    CHECK(at(bytes, {"--mamba-full-memory-ratio", "0.2"})["max_mamba_cache_size"] == 29);
  }
}

namespace {

/// A Qwen3-VL-2B-Instruct model folder: the published config.json and a safetensors header
/// (no tensor data) holding the vision tower and mergers its vision_config describes: a 3-D patch
/// embedding, 2,304 position embeddings, 24 blocks of 1,024 wide with 4,096-wide MLPs, a merger
/// and three DeepStack mergers onto the 2,048-wide text model, 406,957,056 BF16 parameters (the
/// vision tower's count in tests/fixtures/hf/SOURCES.md).
std::string qwen3_vl_2b_folder() {
  std::filesystem::path dir = calc::testing::scratch_dir("engine-vision") / "Qwen3-VL-2B";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(source("tests/fixtures/hf/Qwen--Qwen3-VL-2B-Instruct/config.json"),
                             dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  nlohmann::json h = nlohmann::json::object();
  std::int64_t offset = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::int64_t n = 2;  // BF16
    for (std::int64_t d : shape) n *= d;
    h["model.visual." + name] = {
        {"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  };
  add("patch_embed.proj.weight", {1024, 3, 2, 16, 16});
  add("patch_embed.proj.bias", {1024});
  add("pos_embed.weight", {2304, 1024});
  for (int i = 0; i < 24; ++i) {
    std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* norm : {"norm1", "norm2"}) {
      add(b + norm + ".weight", {1024});
      add(b + norm + ".bias", {1024});
    }
    add(b + "attn.qkv.weight", {3072, 1024});
    add(b + "attn.qkv.bias", {3072});
    add(b + "attn.proj.weight", {1024, 1024});
    add(b + "attn.proj.bias", {1024});
    add(b + "mlp.linear_fc1.weight", {4096, 1024});
    add(b + "mlp.linear_fc1.bias", {4096});
    add(b + "mlp.linear_fc2.weight", {1024, 4096});
    add(b + "mlp.linear_fc2.bias", {1024});
  }
  auto merger = [&](const std::string& m, std::int64_t norm) {
    add(m + "norm.weight", {norm});
    add(m + "norm.bias", {norm});
    add(m + "linear_fc1.weight", {4096, 4096});
    add(m + "linear_fc1.bias", {4096});
    add(m + "linear_fc2.weight", {2048, 4096});
    add(m + "linear_fc2.bias", {2048});
  };
  merger("merger.", 1024);
  for (int i = 0; i < 3; ++i) merger("deepstack_merger_list." + std::to_string(i) + ".", 4096);
  REQUIRE(offset == 406957056LL * 2);
  std::string text = h.dump();
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << text;
  return (dir / "config.json").string();
}

}  // namespace

TEST_CASE("engine: the vision tower the engines load comes out of the budget") {
  const std::string with_tower = qwen3_vl_2b_folder();
  const std::string text_only = source("tests/fixtures/hf/Qwen--Qwen3-VL-2B-Instruct/config.json");
  const std::int64_t tower = 406957056LL * 2;
  auto run = [](const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity", "--engine", "vllm", "--model", model, "--gpu",
                                     "h100-sxm", "--max-model-len", "8192", "-f", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return engine_run(args);
  };
  // The same config with and without the checkpoint beside it: the tower is counted from
  // vision_config (the model's component), so both take its bytes from the one rank's KV
  // budget; the headers store the same bytes, which are then no difference to add.
  ojson bare = run(text_only, {}), full = run(with_tower, {});
  CHECK(bare["vision_weight_bytes_per_rank"] == tower);
  CHECK(full["vision_weight_bytes_per_rank"] == tower);
  CHECK(full["weight_bytes_per_rank"] == bare["weight_bytes_per_rank"]);
  CHECK(full["available_kv_bytes"] == bare["available_kv_bytes"]);
  // TP 2: the tower's layers split over the two ranks.
  CHECK(run(with_tower, {"--tp", "2"})["vision_weight_bytes_per_rank"] == tower / 2);
  // vLLM's text-only mode (every modality limited to 0, from 0.10): the tower is not loaded.
  ojson skip = run(with_tower, {"--limit-mm-per-prompt", R"({"image": 0, "video": 0})"});
  CHECK_FALSE(skip.contains("vision_weight_bytes_per_rank"));
  CHECK(skip["weight_bytes_per_rank"].get<std::int64_t>() ==
        bare["weight_bytes_per_rank"].get<std::int64_t>() - tower);
  CHECK(skip["available_kv_bytes"].get<std::int64_t>() -
            bare["available_kv_bytes"].get<std::int64_t>() ==
        tower);
  CHECK(skip["vision_tower"].get<std::string>().rfind("not loaded", 0) == 0);
  // One modality still allowed: loaded. Before 0.10 the limits change profiling only.
  CHECK(run(with_tower, {"--limit-mm-per-prompt", R"({"image": 1, "video": 0})"})
            ["vision_weight_bytes_per_rank"] == tower);
  // One left out keeps its default limit: Qwen3-VL's tower takes video too (its patch embedding
  // spans frame pairs), so images alone at 0 still load it; Gemma 3's takes images only.
  ojson video_left = run(with_tower, {"--limit-mm-per-prompt", R"({"image": 0})"});
  CHECK(video_left["vision_weight_bytes_per_rank"] == tower);
  CHECK(video_left["vision_tower"].get<std::string>().find("image and video") != std::string::npos);
  CHECK(run(with_tower,
            {"--limit-mm-per-prompt", R"({"video": 0})"})["vision_weight_bytes_per_rank"] == tower);
  ojson gemma = engine_run({"capacity", "--engine", "vllm", "--model", "gemma-3-4b-it", "--gpu",
                            "h100-sxm", "--max-model-len", "8192", "-f", "json",
                            "--limit-mm-per-prompt", R"({"image": 0})"});
  CHECK_FALSE(gemma.contains("vision_weight_bytes_per_rank"));
  CHECK(gemma["vision_tower"].get<std::string>().find("(image)") != std::string::npos);
  ojson old = run(with_tower, {"--engine-version", "0.9", "--limit-mm-per-prompt",
                               R"({"image": 0, "video": 0})"});
  CHECK(old["vision_weight_bytes_per_rank"] == tower);
  CHECK(old["vision_tower"].get<std::string>().rfind("loaded: vLLM 0.8-0.9", 0) == 0);
  // SGLang loads the tower too, inside its static fraction; the flag is vLLM's.
  ojson sg = engine_run({"capacity", "--engine", "sglang", "--model", with_tower, "--gpu",
                         "h100-sxm", "--max-model-len", "8192", "--mem-fraction-static", "0.8",
                         "-f", "json"});
  CHECK(sg["vision_weight_bytes_per_rank"] == tower);
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "sglang", "--model", with_tower,
                                "--gpu", "h100-sxm", "--max-model-len", "8192",
                                "--limit-mm-per-prompt", R"({"image": 0})"}),
                    "--limit-mm-per-prompt: is vllm's knob; --engine sglang does not read it");
  CHECK_THROWS_WITH(run(with_tower, {"--limit-mm-per-prompt", "none"}),
                    "--limit-mm-per-prompt: expected a JSON object such as {\"image\": 0, "
                    "\"video\": 0}");
}

TEST_CASE("engine: vLLM's chunked local attention (Llama-4-Scout) in or out of the hybrid allocator") {
  // A Llama-4-Scout run at TP 8 on H200 (a write-up of the user's own startup log dated 12-18,
  // code index file id 14123402554): 89.71 GiB of KV memory, max_model_len 5,242,880. With the
  // default of its release the log warns "There is a latency regression when using chunked
  // local attention with the hybrid KV cache manager. Disabling it, by default" and prints
  // 3,919,664 tokens and concurrency 0.75 (2,939,748 tokens a request); with
  // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 the same 3,919,664 tokens and 2.96x.
  // Per rank one KV head of 128 (8 / 8): 512 B a token and layer, 8,192 B a page of 16.
  // Off: 48 layers charged as full in one group, 393,216 B a block: 244,979 blocks = 3,919,664
  // tokens; 244,979 / 327,680 blocks a request = 0.75. On: 12 full + 36 chunked layers in four
  // groups of 12, 98,304 B a block: 979,916 blocks, 979,916 // 4 x 16 = 3,919,664 tokens; a
  // request takes 327,680 full blocks + 3 x ceil(min(8192 + 8192, 5,242,880) / 16) = 3 x 1,024
  // chunked ones (ChunkedLocalAttentionSpec.max_memory_usage_bytes): 979,916 / 330,752 = 2.96.
  const std::int64_t gib = 1LL << 30;
  for (std::int64_t bytes : {static_cast<std::int64_t>(89.705 * gib) + 1,
                             static_cast<std::int64_t>(89.715 * gib) - 1}) {
    CAPTURE(bytes);
    auto run = [&](const char* version) {
      return engine_run({"capacity", "--engine", "vllm", "--engine-version", version, "--model",
                         "llama-4-scout", "--tensor-parallel-size", "8", "--max-model-len",
                         "5242880", "--max-num-batched-tokens", "8192", "--kv-memory",
                         std::to_string(bytes) + "B", "-f", "json"});
    };
    ojson off = run("0.13");  // the variable's default 0 (PR #21761) to 0.13
    CHECK(off["kv_cache_tokens"].get<std::int64_t>() >= 3'919'264);
    CHECK(off["kv_cache_tokens"].get<std::int64_t>() <= 3'919'696);
    CHECK(two(off["max_concurrency"].get<double>()) == 0.75);
    CHECK(off["groups"].size() == 1);
    // Default 1 from 0.14 (PR #29627). The log's 3,919,664 tokens are the per-group print of a
    // release before 0.21; from 0.21 the same pool prints int(2.96... x 5,242,880) instead.
    ojson on = run("0.16");
    CHECK(on["kv_cache_tokens"].get<std::int64_t>() >= 3'919'264);
    CHECK(on["kv_cache_tokens"].get<std::int64_t>() <= 3'919'696);
    CHECK(two(on["max_concurrency"].get<double>()) == 2.96);
    CHECK(on["groups"].size() == 4);
    ojson derived = run("0.23");
    CHECK(derived["blocks"] == on["blocks"]);
    CHECK(derived["kv_cache_tokens"].get<std::int64_t>() ==
          on["blocks"].get<std::int64_t>() * 5'242'880 /
              on["blocks_per_request"].get<std::int64_t>());
  }
  // The variable set on a release whose default is 0 gives the same pool as the default from 0.14.
  ojson set = engine_run({"capacity", "--engine", "vllm", "--engine-version", "0.13", "--model",
                          "llama-4-scout", "--tensor-parallel-size", "8", "--max-model-len",
                          "5242880", "--kv-memory", "96329662464B", "--allow-chunked-local-hybrid",
                          "1", "-f", "json"});
  CHECK(set["kv_cache_tokens"] == 3'919'664);
  CHECK(two(set["max_concurrency"].get<double>()) == 2.96);
  CHECK_THROWS_WITH(engine_run({"capacity", "--engine", "vllm", "--model", "llama-4-scout",
                                "--max-model-len", "8192", "--kv-memory", "10GiB",
                                "--allow-chunked-local-hybrid", "yes"}),
                    "--allow-chunked-local-hybrid: 'yes' is not 0 or 1");
  calc::testing::model scout("llama-4-scout");
  calc::engine::engine_config c;
  c.tensor_parallel = 8;
  c.max_model_len = 5'242'880;
  c.max_num_batched_tokens = 8192;
  c.available_kv_bytes = 979'916LL * 98'304;
  const calc::engine::rule_set& r13 = calc::engine::find_rules("vllm", "0.13");
  CHECK(calc::engine::plan_engine(scout.g, r13, c).groups.size() == 1);
  c.chunked_local_hybrid = true;
  calc::engine::engine_capacity e = calc::engine::plan_engine(scout.g, r13, c);
  REQUIRE(e.groups.size() == 4);
  CHECK(e.blocks == 979'916);
  CHECK(e.blocks_per_request == 327'680 + 3 * 1'024);
  CHECK(e.groups[1].kind == "chunked local 8192");
  // A chunk longer than max_model_len takes no more than max_model_len: ceil(4096 / 16).
  c.max_model_len = 4096;
  CHECK(calc::engine::plan_engine(scout.g, r13, c).blocks_per_request == 4 * 256);
  // EAGLE or MTP drafting turns the hybrid manager off for such models whatever the variable.
  c.max_model_len = 5'242'880;
  c.speculative.draft = calc::engine::speculative_config::drafter::model;
  c.speculative.tokens = 2;
  CHECK(calc::engine::plan_engine(scout.g, r13, c).groups.size() == 1);
}

TEST_CASE("engine: the hybrid-allocator version boundaries against the logs that pin them") {
  // Issue 21 item 4: each boundary at the release a log or a dated merge puts it
  // (docs/engines.md, "Version boundaries").
  using calc::engine::find_rules;
  using print = calc::engine::rule_set::token_print;
  CHECK_FALSE(find_rules("vllm", "0.13").chunked_local_hybrid);  // PR #21761's default 0
  CHECK(find_rules("vllm", "0.14.0").chunked_local_hybrid);      // PR #29627, December 2025
  CHECK(find_rules("vllm", "0.15").whole_model_check);
  CHECK_FALSE(find_rules("vllm", "0.16").whole_model_check);     // PR #33698
  CHECK(find_rules("vllm", "0.18").state_pages_prefix_caching == 1);
  CHECK(find_rules("vllm", "0.19.1").state_pages_prefix_caching == 2);  // issue #40696
  CHECK(find_rules("vllm", "0.20").tokens == print::blocks_per_group);  // v0.20.0, issue #43308
  CHECK(find_rules("vllm", "0.21.0").tokens == print::concurrency_x_len);

  // vLLM 0.22.0 (club-3090 issue #487, fixture qwen3.6-27b-vllm-0.22-tp2-mtp3): Qwen3.6-27B at
  // TP 2 with 3 MTP tokens and prefix caching, 10.85 GiB: 418 blocks of 4 groups, 1,600-token
  // blocks, 164 + 3 x (2 + 3) = 179 blocks a request. The same pool read by each row shows what
  // each boundary changes: the print (0.21) and the state pages (0.19).
  auto run = [](const char* version) {
    return engine_run({"capacity", "--engine", "vllm", "--engine-version", version, "--model",
                       source("tests/fixtures/engine-logs/models/qwen3.6-27b.json"),
                       "--tensor-parallel-size", "2", "--max-model-len", "262144",
                       "--kv-cache-dtype", "fp8_e5m2", "--enable-prefix-caching",
                       "--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 3})",
                       "--kv-memory", "10.85GiB", "-f", "json"});
  };
  ojson v22 = run("0.22.0");
  CHECK(v22["block_size"] == 1600);
  CHECK(v22["page_bytes"] == 1600 * 1024);
  CHECK(v22["groups"].size() == 4);
  CHECK(v22["blocks"] == 418);
  CHECK(v22["blocks_per_request"] == 164 + 3 * (2 + 3));
  CHECK(v22["kv_cache_tokens"] == 612157);  // int(418 / 179 x 262,144), as logged
  CHECK(two(v22["max_concurrency"].get<double>()) == doctest::Approx(2.34));
  ojson v20 = run("0.20");  // per-group print: 418 // 4 x 1,600
  CHECK(v20["blocks_per_request"] == 179);
  CHECK(v20["kv_cache_tokens"] == 418 / 4 * 1600);
  ojson v18 = run("0.18");  // one state page: 164 + 3 x (1 + 3) = 176 blocks, 2.38x
  CHECK(v18["blocks_per_request"] == 176);
  CHECK(two(v18["max_concurrency"].get<double>()) == doctest::Approx(2.38));

  // vLLM 0.19.0 (issue #40691: Qwen3.5-27B at TP 1, max_model_len 32,768, no prefix caching, no
  // "Available KV cache memory" line): "GPU KV cache size: 290,864 tokens" and "33.04x". A bf16
  // token is 4,096 B a layer, a state 61,440 + 3,145,728 B, so 784-token blocks, 4 groups of
  // 16 and 42 + 3 blocks a request. One
  // block count gives both printed numbers under the per-group print, 1,487: 1,487 // 4 x 784 =
  // 290,864 and 1,487 / 45 = 33.04 (1,486 gives 33.02, 1,488 33.07). Under the derived print of
  // 0.21 the same pool would say 1,082,800 tokens, which is what issue #40691 asked for.
  const std::int64_t page = 784LL * 4096;
  auto qwen35 = [&](const char* version) {
    return engine_run({"capacity", "--engine", "vllm", "--engine-version", version, "--model",
                       source("tests/fixtures/hf/Qwen--Qwen3.5-27B/config.json"),
                       "--max-model-len", "32768", "--kv-memory",
                       std::to_string(1487 * page * 16) + "B", "-f", "json"});
  };
  ojson v19 = qwen35("0.19.0");
  CHECK(v19["block_size"] == 784);
  CHECK(v19["blocks"] == 1487);
  CHECK(v19["blocks_per_request"] == 45);
  CHECK(v19["kv_cache_tokens"] == 290864);
  CHECK(two(v19["max_concurrency"].get<double>()) == doctest::Approx(33.04));
  CHECK(qwen35("0.21")["kv_cache_tokens"] == 1487LL * 32768 / 45);
}
