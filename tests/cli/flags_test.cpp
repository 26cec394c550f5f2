// Every option of every command is applied or refused (issue 19): for each command and each
// option it accepts, giving the option with a non-default value changes the answer, is refused
// with exit code 2, or is listed below as documented not to change the printed answer. A new
// option without an entry in `samples` fails here, so no flag can be silently ignored again.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "run_cli.h"

using calc::cli_testing::outcome;
using calc::cli_testing::run;

namespace {

/// A command line that answers, in JSON, for each command the walk covers.
const std::map<std::string, std::vector<std::string>> kBase = {
    {"state", {"state", "--model", "qwen3-8b", "--length", "8K"}},
    {"forward", {"forward", "--model", "qwen3-8b", "--prompt", "1K"}},
    {"params", {"params", "--model", "qwen3-8b"}},
    {"request", {"request", "--model", "qwen3-8b", "--prompt", "1K"}},
    {"capacity", {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K"}},
    {"plan", {"plan", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8K", "--requests",
              "16"}},
    {"roofline", {"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "1K"}},
    {"speculative", {"speculative", "--decode-ms", "20", "--round-ms", "30", "--accepted", "2"}},
    {"crossover", {"crossover", "--model", "qwen3.6-35b-a3b", "--length", "8K"}},
    {"experts", {"experts", "--model", "qwen3.6-35b-a3b", "--batch", "8"}},
    {"compare", {"compare", "--model", "qwen3-8b,qwen3.6-35b-a3b"}},
    {"sweep", {"sweep", "--model", "qwen3-8b", "--length", "1K:8K:x2"}},
    {"report", {"report", "--model", "qwen3-8b", "--length", "4K,128K", "--requests", "32"}},
    {"layers", {"layers", "--model", "qwen3-8b"}},
};

/// A value that should change the answer, and the model that has the feature it changes
/// ("" = the base line's model).
struct sample {
  std::string value;
  std::string model = "";
  bool flag = false;  // takes no value
};

const std::map<std::string, sample> kSamples = {
    {"--model", {"qwen3-32b"}},
    {"--set", {"layers.attention.kv_heads=4"}},
    {"--gpu", {"h200"}},
    {"--memory", {"as-sold"}},
    {"--length", {"16K"}},
    {"--prompt", {"2K"}},
    {"--context", {"4K"}},
    {"--batch", {"4"}},
    {"--generate", {"64"}},
    {"--weights", {"fp8"}},
    {"--embeddings", {"fp8"}},
    {"--kv", {"fp8"}},
    {"--storage", {"production", "deepseek-v4-flash"}},
    {"--mla-path", {"expanded", "deepseek-v3"}},
    {"--pairs", {"rectangular"}},
    {"--vocab-rows", {"all"}},
    {"--linear", {"recurrent", "qwen3.6-35b-a3b"}},
    {"--execution", {"reference", "deepseek-v4.1-flash"}},
    {"--index-scan", {"rectangular", "deepseek-v4.1-flash"}},
    {"--tp", {"2"}},
    {"--pp", {"2"}},
    {"--ep", {"2", "qwen3.6-35b-a3b"}},
    {"--dp", {"2", "deepseek-v3"}},
    {"--workspace", {"10GiB"}},
    {"--node-gpus", {"1"}},
    {"--max-gpus", {"1"}},
    {"--requests", {"64"}},
    {"--weight-bytes", {"30GB"}},
    {"--page-tokens", {"4096"}},
    {"--shared-prefix", {"4096"}},
    {"--engine", {"vllm"}},
    {"--engine-version", {"0.9.2"}},
    {"--kv-memory", {"10GiB"}},
    {"--gpu-memory-utilization", {"0.5"}},
    {"--mem-fraction-static", {"0.5"}},
    {"--kv-cache-free-gpu-memory-fraction", {"0.5"}},  // refused but with trtllm (serve tests)
    {"--max-num-seqs", {"4"}},
    {"--max-num-batched-tokens", {"65536"}},
    {"--mamba-ssm-cache-dtype", {"bfloat16", "qwen3.6-35b-a3b"}},
    {"--enable-prefix-caching", {"", "", true}},
    {"--activation-memory", {"20GiB"}},
    // SGLang's Mamba pool (engine_of: sglang) on a hybrid; vLLM's text-only switch.
    {"--disable-radix-cache", {"", "qwen3.6-35b-a3b", true}},
    {"--max-mamba-cache-size", {"4", "qwen3.6-35b-a3b"}},
    {"--mamba-full-memory-ratio", {"0.5", "qwen3.6-35b-a3b"}},
    {"--mamba-scheduler-strategy", {"extra_buffer", "qwen3.6-35b-a3b"}},
    {"--limit-mm-per-prompt", {R"({"image": 0, "video": 0})"}},
    // vLLM's chunked local attention with the hybrid allocator (on by default since 0.14).
    {"--allow-chunked-local-hybrid", {"0", "llama-4-scout"}},
    {"--mtp", {"", "deepseek-v4-flash", true}},
    {"--fp8", {"", "", true}},
    {"--budget", {"256MiB"}},
    {"--routing", {"concentrated"}},
    {"--plot-dir", {std::filesystem::temp_directory_path().string()}},  // never the source tree
    {"--num-speculative-tokens", {"2"}},
    {"--speculative-config", {R"({"method": "ngram", "num_speculative_tokens": 3})"}},
    {"--accepted", {"3"}},
    {"--decode-ms", {"25"}},
    {"--round-ms", {"40"}},
    {"--sla", {"ttft=1000,tpot=50"}},
    {"--rate", {"5"}},
    {"--concurrency", {"8"}},
    {"--isl", {"1K"}},
    {"--osl", {"1K"}},
    {"--calibration", {"models/calibration/default.yaml"}},
};

/// Where a command reads a different part of the model than kSamples' value changes.
const std::map<std::pair<std::string, std::string>, std::string> kCommandValue = {
    {{"experts", "--set"}, "layers.ffn.top_k=4"},
    // The base report's deployments fit within one server of 8 (runtime memory): a server of 3
    // cards rules out the 8-card layout for 32 requests at 128K.
    {{"report", "--node-gpus"}, "3"},
    // The throughput chart's workload and calibration: other than the defaults (1K, 1K, the
    // shipped file).
    {{"report", "--isl"}, "4K"},
    {{"report", "--osl"}, "256"},
    {{"report", "--calibration"}, "tests/fixtures/serve/calibration-pooled.yaml"},
};

/// Options documented not to change the printed answer (docs/commands.md says so).
const std::set<std::string> kNoEffect = {
    "--help",    // prints help instead of an answer
    "--format",  // the same answer in another format
    "--plot-dir",  // writes SVG files beside the answer (checked by the report tests)
};

/// Second spellings of walked options (tests below check they act the same).
const std::set<std::string> kAliases = {"--models",
                                        "--lengths",
                                        "--max-model-len",
                                        "--context-length",
                                        "--tokens",
                                        "--cached",
                                        "--kv-cache-dtype",
                                        "--tensor-parallel-size",
                                        "--pipeline-parallel-size",
                                        "--expert-parallel-size",
                                        "--data-parallel-size",
                                        "--block-size",
                                        "--page-size",
                                        "--max-running-requests",
                                        "--chunked-prefill-size",
                                        "--output",
                                        "--mamba-ssm-dtype",
                                        "--kv_cache_free_gpu_memory_fraction"};

/// The engine knobs are read only with --engine: they are walked a second time with it.
const std::set<std::string> kEngineCommands = {"capacity", "plan", "report"};

/// The engine whose knob an option is (SGLang's own spellings), else vLLM.
std::string engine_of(const std::string& option) {
  static const std::set<std::string> sglang = {"--mem-fraction-static", "--disable-radix-cache",
                                               "--max-mamba-cache-size",
                                               "--mamba-full-memory-ratio",
                                               "--mamba-scheduler-strategy"};
  return sglang.count(option) ? "sglang" : "vllm";
}

std::vector<std::string> with_model(std::vector<std::string> args, const std::string& model) {
  if (model.empty()) return args;
  auto it = std::find(args.begin(), args.end(), "--model");
  if (it != args.end()) *(it + 1) = model;
  return args;
}

std::vector<std::string> json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  return args;
}

}  // namespace

TEST_CASE("every option of every command changes the answer or is refused") {
  // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in CAPTURE.
  for (const auto& entry : calc::command_options()) {
    const std::string command = entry.first;
    const std::vector<std::string>& names = entry.second;
    auto base_it = kBase.find(command);
    if (base_it == kBase.end()) continue;  // catalogues, tools: checked by their own tests
    // The primary (first long) name of each option; aliases are checked to act the same below.
    std::set<std::string> seen;
    for (const std::string& name : names) {
      if (!name.starts_with("--") || seen.count(name)) continue;
      auto s = kSamples.find(name);
      if (s == kSamples.end()) {
        // Every other name must be documented: no effect, or an alias of a walked option.
        CHECK_MESSAGE((kNoEffect.count(name) || kAliases.count(name)),
                      "calc " << command << " " << name << ": no sample value in flags_test");
        continue;
      }
      seen.insert(name);
      for (bool engine : {false, true}) {
        if (engine && !kEngineCommands.count(command)) continue;
        if (name == "--engine" && engine) continue;
        CAPTURE(command);
        CAPTURE(name);
        CAPTURE(engine);
        std::vector<std::string> base = with_model(base_it->second, s->second.model);
        if (engine) base.insert(base.end(), {"--engine", engine_of(name)});
        if (name == "--model" && command == "compare") base = base_it->second;
        outcome before = run(json(base));
        // A model the engine rules cannot hold on the base line's card: the option's feature is
        // walked without --engine only (the engine tests cover it on fitting cards).
        if (engine && before.code != 0 && !s->second.model.empty()) continue;
        REQUIRE_MESSAGE(before.code == 0, before.err);
        std::vector<std::string> with = base;
        if (auto it = std::find(with.begin(), with.end(), name); it != with.end()) {
          *(it + 1) = s->second.value;  // an option the base line already gives: a new value
        } else if (s->second.flag) {
          with.push_back(name);
        } else {
          with.insert(with.end(), {name, s->second.value});
        }
        if (auto v = kCommandValue.find({command, name}); v != kCommandValue.end())
          with.back() = v->second;
        outcome after = run(json(with));
        bool refused = after.code == 2 && !after.err.empty() &&
                       after.err.find('\n') == after.err.size() - 1;
        bool changed = after.code == 0 && after.out != before.out;
        CHECK_MESSAGE((refused || changed || kNoEffect.count(name)),
                      "ignored: `calc " << command << " ... " << name << " " << s->second.value
                                        << "` printed the same answer; err: " << after.err);
      }
    }
  }
}

TEST_CASE("an option and its engine spelling give the same answer") {
  struct pair_case {
    std::vector<std::string> a, b;
  };
  const std::vector<pair_case> cases = {
      {{"forward", "--model", "qwen3-8b", "--prompt", "1K", "--context", "2K"},
       {"forward", "--model", "qwen3-8b", "--tokens", "1K", "--cached", "2K"}},
      {{"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K", "--tp", "2",
        "--kv", "fp8"},
       {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "8K",
        "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8_e4m3"}},
      {{"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--length",
        "32K", "--page-tokens", "32", "--pp", "2"},
       {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm",
        "--max-model-len", "32768", "--block-size", "32", "--pipeline-parallel-size", "2"}},
  };
  for (const pair_case& c : cases) {
    outcome a = run(json(c.a)), b = run(json(c.b));
    CAPTURE(c.a.front());
    REQUIRE_MESSAGE(a.code == 0, a.err);
    CHECK(a.out == b.out);
  }
}

TEST_CASE("the option groups alone decide what --engine refuses, whatever the value") {
  // Given at its default value the option is still refused: the declaration (only_in) decides,
  // not a comparison with the default in the handler. Each keeps its one-line reason.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workspace", "2GiB"}, "--workspace: not taken with --engine: the engine reserves"},
      {{"--ep", "1"}, "--ep: not taken with --engine: calc's engine rules split experts"},
      {{"--shared-prefix", "0"}, "--shared-prefix: not taken with --engine: the engines' prefix"},
      {{"--dp", "1"}, "--dp: is not read with --engine vllm (the engine's rules decide it)"},
      {{"--gpu-memory-utilization", "0.9", "--engine", "sglang"},
       "--gpu-memory-utilization: is vllm's knob"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                                     "--length", "8K"};
    args.insert(args.end(), c.first.begin(), c.first.end());
    if (std::find(args.begin(), args.end(), "--engine") == args.end())
      args.insert(args.end(), {"--engine", "vllm"});
    outcome o = run(args);
    CAPTURE(c.second);
    CHECK(o.code == 2);
    CHECK(o.err.starts_with(c.second));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  }
  // The same options without --engine are read.
  CHECK(run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K",
             "--workspace", "2GiB", "--ep", "1"})
            .code == 0);
}

TEST_CASE("a mistyped option gets a guess; another command's option names who takes it") {
  outcome typo = run({"forward", "--model", "qwen3-8b", "--prompt", "1K", "--contxt", "5"});
  CHECK(typo.code == 2);
  CHECK(typo.err ==
        "--contxt: is not an option of `calc forward` (did you mean '--context'?); `calc forward "
        "--help` lists its options\n");
  outcome other = run({"state", "--model", "qwen3-8b", "--length", "1K", "--generate", "5"});
  CHECK(other.code == 2);
  CHECK(other.err ==
        "--generate: is not an option of `calc state`; it is taken by: request; `calc state "
        "--help` lists its options\n");
  outcome pooled = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K",
                        "--gpus", "8"});
  CHECK(pooled.code == 2);
  CHECK(pooled.err.find("no longer pools") != std::string::npos);
}
