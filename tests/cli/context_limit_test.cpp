// Models as published (issue 19 item 5): the schema's context limit (`max_position_embeddings`),
// the default end of length ranges, the one-line stderr warning past the limit (never on stdout,
// never from `calc check`), and the formats a command assumed, named in its output.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../unit/scratch.h"
#include "common/error.h"
#include "run_cli.h"
#include "spec/context_limit.h"
#include "spec/format_summary.h"
#include "spec/model_reader.h"

using namespace calc;
using cli_testing::outcome;
using cli_testing::run;

namespace {

const char* kTiny =
    "name: tiny\nvocab: 100\nhidden: 64\n{}layers:\n  count: 2\n"
    "  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}\n"
    "  ffn: {kind: swiglu, intermediate: 128}\n";

model_spec tiny(const std::string& extra) {
  std::string text = kTiny;
  text.replace(text.find("{}"), 2, extra);
  return read_model_text(text, "tiny.yaml");
}

std::string spec_error_of(const std::string& extra) {
  try {
    tiny(extra);
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("max_position_embeddings: optional, an integer of at least 1") {
  CHECK_FALSE(tiny("").max_position_embeddings);
  CHECK(tiny("max_position_embeddings: 4096\n").max_position_embeddings == 4096);
  CHECK(contains(spec_error_of("max_position_embeddings: 0\n"),
                 "tiny.yaml:4:26: max_position_embeddings: must be positive"));
  CHECK(contains(spec_error_of("max_position_embeddings: 8589934592\n"),
                 "max_position_embeddings: 8589934592 positions is more than the limit of "
                 "4294967296 tokens"));
  CHECK(contains(spec_error_of("max_position_embeddings: long\n"), "max_position_embeddings"));
  // A what-if reaches it like any field.
  model_spec s = read_model_text(std::string(kTiny).replace(std::string(kTiny).find("{}"), 2, ""),
                                 "tiny.yaml", {"max_position_embeddings=2048"});
  CHECK(s.max_position_embeddings == 2048);
}

TEST_CASE("every bundled model with a published config.json carries its context limit") {
  // From each config.json (the YAML comments cite the file); the chapter's own models have none.
  const std::pair<const char*, std::int64_t> want[] = {
      {"qwen3-8b", 40960},        {"qwen3-32b", 40960},
      {"qwen3-30b-a3b", 40960},   {"qwen3-235b-a22b", 40960},
      {"llama-3.1-8b", 131072},   {"llama-3.1-405b", 131072},
      {"deepseek-v3", 163840},    {"deepseek-r1-distill-llama-70b", 131072},
      {"gpt2", 1024},             {"deepseek-v4-flash", 1048576},
      {"qwen3.5-397b-a17b", 262144}, {"qwen3.6-35b-a3b", 262144}};
  for (const auto& entry : want) {
    const char* name = entry.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    CAPTURE(name);
    CHECK(read_model_file(resolve_model_path(name)).max_position_embeddings == entry.second);
  }
  for (const char* name : {"kimi-k3", "deepseek-v4.1-flash"})
    CHECK_FALSE(read_model_file(resolve_model_path(name)).max_position_embeddings);
}

TEST_CASE("default length ranges end at the context limit") {
  CHECK(default_lengths(40960) == std::vector<std::int64_t>{1024, 4096, 16384, 40960});
  CHECK(default_lengths(65536) == std::vector<std::int64_t>{1024, 4096, 16384, 65536});
  CHECK(default_lengths(1LL << 20) ==
        std::vector<std::int64_t>{1024, 4096, 16384, 65536, 262144, 1048576});
  CHECK(default_lengths(512) == std::vector<std::int64_t>{512});
  model_spec a = tiny("max_position_embeddings: 4096\n"), b = tiny("");
  CHECK(default_length_end({&a}) == 4096);
  CHECK(default_length_end({&b}) == 1LL << 20);  // no limit: the chapter's 1M
  CHECK(default_length_end({&a, &b}) == 4096);

  outcome sweep = run({"sweep", "--model", "qwen3-8b", "--format", "json"});
  REQUIRE_MESSAGE(sweep.code == 0, sweep.err);
  nlohmann::json points = nlohmann::json::parse(sweep.out)["points"];
  REQUIRE(points.size() == 4);
  CHECK(points.back()["length"] == 40960);
  CHECK(sweep.err.empty());  // the default range is within the limit

  outcome report = run({"report", "--model", "qwen3-8b,deepseek-v3", "--format", "json"});
  REQUIRE_MESSAGE(report.code == 0, report.err);
  CHECK(nlohmann::json::parse(report.out)["lengths"] ==
        nlohmann::json::array({1024, 4096, 16384, 65536, 163840}));  // the larger limit
  // Qwen3-8B's 40,960 positions are passed by that range: said once, on stderr.
  CHECK(report.err ==
        "calc report: warning: qwen3-8b has 40,960 positions (max_position_embeddings); "
        "163,840 is past them\n");
}

TEST_CASE("a length past the context limit: one warning line on stderr, the answer unchanged") {
  outcome past = run({"state", "--model", "qwen3-8b", "--length", "1M", "--format", "json"});
  REQUIRE(past.code == 0);
  CHECK(past.err ==
        "calc state: warning: qwen3-8b has 40,960 positions (max_position_embeddings); "
        "1,048,576 is past them\n");
  CHECK(nlohmann::json::parse(past.out)["length"] == 1048576);  // stdout is pure JSON
  outcome md = run({"state", "--model", "qwen3-8b", "--length", "1M"});
  CHECK_FALSE(contains(md.out, "warning"));
  CHECK(md.err == past.err);
  // At the limit, or on a model without one: nothing.
  CHECK(run({"state", "--model", "qwen3-8b", "--length", "40960"}).err.empty());
  CHECK(run({"state", "--model", "kimi-k3", "--length", "1M"}).err.empty());
  // A request's context is S + P + G - 1; a call's S + P.
  CHECK(contains(run({"request", "--model", "qwen3-8b", "--prompt", "40000", "--generate", "962"})
                     .err,
                 "40,961 is past them"));
  CHECK(run({"request", "--model", "qwen3-8b", "--prompt", "40000", "--generate", "961"})
            .err.empty());
  CHECK(contains(run({"forward", "--model", "qwen3-8b", "--tokens", "1", "--context", "40960"}).err,
                 "40,961 is past them"));
  // A range: its end.
  CHECK(contains(run({"sweep", "--model", "qwen3-8b", "--length", "1K:64K:x2", "-f", "csv"}).err,
                 "65,536 is past them"));
}

TEST_CASE("calc check prints no context-limit warning for the chapter's long lengths") {
  // Q8-TE-st1M asks about Qwen3-8B at 1,048,575 tokens, past its 40,960 positions.
  std::filesystem::path dir = testing::scratch_dir("context-limit-check");
  std::ofstream(dir / "long.yaml")
      << "title: long\nclaims:\n  - {id: long, where: \"Table 2-E\", run: state --model qwen3-8b "
         "--length 1048575, field: /total_bytes, expect: 144.000 GiB}\n";
  outcome o = run({"check", dir.string()});
  CHECK_MESSAGE(o.code == 0, o.out);
  CHECK(o.err.empty());
  CHECK_FALSE(contains(o.out, "warning"));
}

TEST_CASE("output names the formats assumed; DeepSeek-V3 defaults to its FP8 checkpoint") {
  precision_spec p;
  p.weights = p.kv = p.embedding = p.head = parse_dtype("bf16");
  CHECK(format_summary(p) == "weights, kv bf16");
  p.attention = p.experts = parse_dtype("fp8:g16384:fp32");
  p.kv = parse_dtype("fp8");
  CHECK(format_summary(p) == "weights bf16; attention, experts fp8:g16384:fp32; kv fp8");

  const std::string fp8 =
      "weights, kv bf16; attention, experts, shared_experts, dense_ffn fp8:g16384:fp32";
  auto json = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--format", "json"});
    outcome o = run(args);
    REQUIRE_MESSAGE(o.code == 0, o.err);
    return nlohmann::json::parse(o.out);
  };
  nlohmann::json published = json({"params", "--model", "deepseek-v3"});
  nlohmann::json bf16 = json({"params", "--model", "deepseek-v3", "--weights", "bf16"});
  CHECK(published["formats"] == fp8);
  CHECK(bf16["formats"] == "weights, kv bf16");
  // The same parameters; FP8 blocks take one byte a value plus 4 B per 16,384 values, so the
  // published weights are a little over half the BF16 bytes (the router, embedding and head stay
  // BF16).
  CHECK(published["total_params"] == bf16["total_params"]);
  CHECK(bf16["weight_bytes"] == 2 * bf16["total_params"].get<std::int64_t>());
  std::int64_t w = published["weight_bytes"].get<std::int64_t>();
  CHECK(w > bf16["weight_bytes"].get<std::int64_t>() / 2);
  CHECK(w < bf16["weight_bytes"].get<std::int64_t>() * 52 / 100);
  nlohmann::json capacity =
      json({"capacity", "--model", "deepseek-v3", "--gpu", "h200", "--length", "8K"});
  CHECK(capacity["formats"] == fp8);
  CHECK(json({"plan", "--model", "deepseek-v3", "--gpu", "h200", "--length", "8K", "--requests",
              "1"})["formats"] == fp8);
  CHECK(json({"report", "--model", "deepseek-v3", "--length", "8K"})["models"][0]["formats"] ==
        fp8);
  CHECK(json({"params", "--model", "qwen3-8b"})["formats"] == "weights, kv bf16");
  CHECK(contains(run({"report", "--model", "deepseek-v3", "--length", "8K"}).out,
                 "of weights (formats: " + fp8 + ")"));
}
