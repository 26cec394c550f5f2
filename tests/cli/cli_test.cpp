// The command line as a user meets it: golden Markdown per command, and one test per bad input
// asserting the exact one-line message and exit code 2.
#include "cli/cli.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../unit/scratch.h"
#include "run_cli.h"

using namespace calc;

namespace {

using cli_testing::outcome;
using cli_testing::run;

/// Markdown with each run of spaces as one: aligned tables compare by their cells.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

std::string source(const std::string& rel) { return std::string(CALC_SOURCE_DIR) + "/" + rel; }

/// Writes a temporary model file and returns its path.
std::string temp_model(const std::string& name, const std::string& text) {
  auto dir = calc::testing::scratch_dir("calc-tests");
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

const char* kGood = R"(name: tiny
vocab: 100
hidden: 64
layers:
  count: 2
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
)";

/// Compares a command's Markdown with tests/golden/<name>.md; UPDATE_GOLDEN=1 rewrites it.
void golden(const std::string& name, const std::vector<std::string>& args) {
  outcome o = run(args);
  REQUIRE(o.code == 0);
  std::string path = source("tests/golden/" + name + ".md");
  if (std::getenv("UPDATE_GOLDEN")) std::ofstream(path) << o.out;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (run with UPDATE_GOLDEN=1)");
  std::stringstream want;
  want << in.rdbuf();
  CHECK(o.out == want.str());
}

}  // namespace

namespace {

/// Runs a scope at the repository root, where the docs' commands name their files from.
struct at_source_root {
  std::filesystem::path before = std::filesystem::current_path();
  at_source_root() { std::filesystem::current_path(CALC_SOURCE_DIR); }
  ~at_source_root() { std::filesystem::current_path(before); }
};

}  // namespace

TEST_CASE("every transcript in the README and docs is what calc prints today") {
  // A block opening with `$ calc ...` shows that command's stdout; a line `...` elides output,
  // and the parts around it must appear in order. A change of output (a refit, a new rule)
  // that leaves a transcript behind fails here, not in a reader's hands.
  at_source_root here;
  int transcripts = 0;
  for (std::string doc : {"README.md", "docs/commands.md", "docs/engines.md"}) {
    std::ifstream in(doc);
    REQUIRE(in);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].starts_with("$ calc ")) continue;
      std::string command = lines[i];
      CHECK_MESSAGE(command.find_first_of("'\"\\") == std::string::npos,
                    doc << ": quoting in a transcript's command: " << command);
      std::vector<std::string> args;
      std::istringstream words(command.substr(7));
      for (std::string w; words >> w;) args.push_back(w);
      std::vector<std::string> parts(1);
      std::size_t j = i + 1;
      for (; j < lines.size() && !lines[j].starts_with("```"); ++j) {
        if (lines[j] == "...") {
          parts.emplace_back();
          continue;
        }
        parts.back() += lines[j] + "\n";
      }
      outcome o = run(args);
      ++transcripts;
      CHECK_MESSAGE(o.code == 0, doc << ": " << command << "\n" << o.err);
      if (parts.size() == 1) {
        CHECK_MESSAGE(o.out == parts[0], doc << ": the transcript of `" << command.substr(2)
                                             << "` differs from what it prints:\n"
                                             << o.out);
      } else {
        std::size_t at = 0;
        for (const std::string& part : parts) {
          std::size_t found = o.out.find(part, at);
          CHECK_MESSAGE(found != std::string::npos, doc << ": `" << command.substr(2)
                                                        << "` no longer prints:\n"
                                                        << part);
          if (found != std::string::npos) at = found + part.size();
        }
      }
      i = j;
    }
  }
  CHECK(transcripts >= 15);
}

TEST_CASE("README's calc check transcript shows today's claim counts") {
  // The README quotes the first line `calc check scenarios` prints and its summary; a new
  // claim that forgets to update it fails here rather than in a reader's hands. Claims name
  // fixtures relative to the repository root, where CI runs `calc check` (ctest's `scenarios`).
  outcome o = [] {
    at_source_root here;
    return run({"check", "scenarios"});
  }();
  REQUIRE(o.code == 0);
  std::string header = o.out.substr(0, o.out.find('\n'));
  std::string summary = o.out.substr(o.out.rfind('\n', o.out.size() - 2) + 1);
  std::ifstream in(source("README.md"));
  std::stringstream readme;
  readme << in.rdbuf();
  CHECK_MESSAGE(readme.str().find(header + "\n") != std::string::npos, "README lacks: " << header);
  CHECK_MESSAGE(readme.str().find(summary) != std::string::npos, "README lacks: " << summary);
}

TEST_CASE("golden Markdown for each command on qwen3-8b") {
  golden("state", {"state", "--model", "qwen3-8b", "--length", "8192"});
  golden("forward", {"forward", "--model", "qwen3-8b", "--tokens", "8192"});
  golden("forward-decode",
         {"forward", "--model", "qwen3-8b", "--tokens", "1", "--context", "8192"});
  golden("params", {"params", "--model", "qwen3-8b"});
  golden("request", {"request", "--model", "qwen3-8b", "--prompt", "8192", "--generate", "1025"});
  golden("capacity",
         {"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "4096,8192,16384"});
  golden("crossover", {"crossover", "--model", "qwen3-8b", "--length", "8192"});
  golden("roofline", {"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "8192"});
  golden("plan", {"plan", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192",
                  "--requests", "16"});
  golden("layers", {"layers", "--model", "qwen3-8b"});
  golden("compare", {"compare", "--models",
                     "qwen3-8b,qwen3.6-35b-a3b,deepseek-v4-flash,kimi-k3,deepseek-v4.1-flash"});
  golden("sweep",
         {"sweep", "--model", "qwen3.6-35b-a3b", "--length", "1K:1M:x4", "--format", "csv"});
  golden("experts", {"experts", "--model", "qwen3-235b-a22b", "--batch", "16"});
  golden("gpus", {"gpus"});
  golden("report", {"report", "--model", "qwen3-8b,qwen3.6-35b-a3b", "--gpu", "h100-sxm",
                    "--length", "4K,32K,128K,1M", "--requests", "8"});
}

TEST_CASE("golden Markdown for the hybrids") {
  golden("state-kimi-k3", {"state", "--model", "kimi-k3", "--length", "8192"});
  golden("forward-kimi-k3", {"forward", "--model", "kimi-k3", "--tokens", "8192"});
  golden("params-kimi-k3", {"params", "--model", "kimi-k3"});
  golden("state-qwen3.6", {"state", "--model", "qwen3.6-35b-a3b", "--length", "8192"});
  golden("forward-qwen3.6", {"forward", "--model", "qwen3.6-35b-a3b", "--tokens", "8192"});
  golden("experts-qwen3.6",
         {"experts", "--model", "qwen3.6-35b-a3b", "--batch", "64", "--routing", "concentrated"});
}

TEST_CASE("golden Markdown for the sparse-attention models") {
  golden("state-deepseek-v4-flash", {"state", "--model", "deepseek-v4-flash", "--length", "8192"});
  golden("forward-deepseek-v4-flash",
         {"forward", "--model", "deepseek-v4-flash", "--tokens", "8192"});
  golden("forward-v4.1-ced",
         {"forward", "--model", "deepseek-v4.1-flash", "--tokens", "8192", "--execution", "ced"});
  golden("forward-v4.1-reference", {"forward", "--model", "deepseek-v4.1-flash", "--tokens", "8192",
                                    "--execution", "reference"});
  golden("state-v4.1-production", {"state", "--model", "deepseek-v4.1-flash", "--length", "8192",
                                   "--storage", "production"});
  golden("layers-v4.1", {"layers", "--model", "deepseek-v4.1-flash"});
}

TEST_CASE("--execution ced on a model without CED is an input error") {
  outcome o = run({"forward", "--model", "qwen3-8b", "--tokens", "8", "--execution", "ced"});
  CHECK(o.code == 2);
  CHECK(o.err == "--execution: qwen3-8b has no CED split (no ced block)\n");
  outcome p = run({"state", "--model", "qwen3-8b", "--length", "8", "--storage", "production"});
  CHECK(p.code == 2);
  CHECK(p.err == "--storage: qwen3-8b declares no production formats\n");
}

TEST_CASE("capacity: paged blocks and a shared prefix") {
  outcome paged = run({"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "4000",
                       "--page-tokens", "256", "--format", "json"});
  CHECK(paged.out.find("\"per_request_bytes\": 603979776") != std::string::npos);  // 4096 tokens
  outcome shared = run({"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192",
                        "--shared-prefix", "4096", "--format", "json"});
  CHECK(shared.out.find("\"per_request_bytes\": 603979776") != std::string::npos);
  CHECK(shared.out.find("\"shared_prefix_bytes\": 603979776") != std::string::npos);
}

TEST_CASE("capacity: a TP degree that does not divide the heads is an input error") {
  outcome o = run(
      {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8192", "--tp", "3"});
  CHECK(o.code == 2);
  CHECK(o.err == "--tp/--pp/--ep/--dp: tp 3 does not divide the 32 heads of layer 0\n");
  outcome w = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8192",
                   "--weights", "int3:g128"});
  CHECK(w.code == 2);
  CHECK(w.err.rfind("--weights: unknown precision 'int3:g128'", 0) == 0);
}

TEST_CASE("plan finds layouts for V4-Flash and Kimi K3 on H200s and says why fewer fail") {
  for (const char* m : {"deepseek-v4-flash", "kimi-k3"}) {
    outcome o = run({"plan", "--model", m, "--gpu", "h200", "--length", "8192", "--requests", "8",
                     "--format", "json"});
    CHECK(o.code == 0);
    CHECK(o.out.find("\"gpus\": null") == std::string::npos);
    CHECK(o.out.find("\"why_not_fewer\"") != std::string::npos);
  }
}

TEST_CASE("validate --device cuda without a GPU says why in one line") {
  outcome o = run({"validate", "--model", "qwen3-8b", "--device", "cuda"});
  CHECK(o.code == 2);
  CHECK(o.err.rfind("--device cuda: ", 0) == 0);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

TEST_CASE("validate on the CPU twins is exact for a small model") {
  outcome o = run(
      {"validate", "--model", "qwen3-8b", "--scale", "64", "--length", "24", "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("MISMATCH") == std::string::npos);
  CHECK(o.out.find("\"pass\": true") != std::string::npos);
}

TEST_CASE("sweep rejects a malformed range") {
  outcome o = run({"sweep", "--model", "qwen3-8b", "--lengths", "1024:512:x2"});
  CHECK(o.code == 2);
  // Named as typed: --lengths is the same option as --length.
  CHECK(o.err == "--lengths: '1024:512:x2' is not FROM:TO:xFACTOR or FROM:TO:+STEP\n");
}

TEST_CASE("speculative decoding checks its inputs") {
  outcome o = run({"speculative", "--decode-ms", "20", "--round-ms", "30", "--accepted", "0.5"});
  CHECK(o.code == 2);
  CHECK(o.err == "--accepted: a round yields at least one valid token\n");
}

TEST_CASE("crossover --budget says when the fixed state alone does not fit") {
  outcome o = run({"crossover", "--model", "kimi-k3", "--length", "8192", "--budget", "256MiB",
                   "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("\"max_tokens\": null") != std::string::npos);
  CHECK(o.out.find("does not fit") != std::string::npos);
  outcome q = run({"crossover", "--model", "qwen3.6-35b-a3b", "--length", "8192", "--budget",
                   "256MiB", "--format", "json"});
  CHECK(q.out.find("\"max_tokens\": 9939") != std::string::npos);
}

TEST_CASE("experts on a dense model is an input error") {
  outcome o = run({"experts", "--model", "qwen3-8b", "--batch", "4"});
  CHECK(o.code == 2);
  CHECK(o.err == "--model: qwen3-8b has no mixture-of-experts layer\n");
}

TEST_CASE("JSON keys of the contract") {
  outcome o = run({"state", "--model", "qwen3-8b", "--length", "8192", "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("\"total_bytes\": 1207959552") != std::string::npos);
  for (const char* key : {"fixed_bytes", "growing_bytes", "per_token_bytes", "crossover_tokens",
                          "decode_read_bytes", "decode_state_rw_bytes", "components"})
    CHECK_MESSAGE(o.out.find(std::string("\"") + key + "\"") != std::string::npos, key);
}

TEST_CASE("CSV output is tidy: a header row, then the single values on each table row") {
  outcome o = run({"params", "--model", "qwen3-8b", "--format", "csv"});
  CHECK(o.code == 0);
  CHECK(o.out.rfind("model,formats,total_params,", 0) == 0);
  CHECK(o.out.find("\nqwen3-8b,\"weights, kv bf16\",8190735360,") != std::string::npos);
}

TEST_CASE("--help explains every command") {
  outcome o = run({"state", "--help"});
  CHECK(o.code == 0);
  CHECK(o.out.find("Context length per request, in tokens") != std::string::npos);
  CHECK(run({"--help"}).out.find("capacity") != std::string::npos);
}

// ---- bad input: one located line on stderr, exit code 2 --------------------------------------

TEST_CASE("an unknown key names the file, line, column and the closest key") {
  std::string text = kGood;
  text.replace(text.find("kv_heads"), 8, "kv_haeds");
  std::string path = temp_model("typo.yaml", text);
  outcome o = run({"state", "--model", path, "--length", "1"});
  CHECK(o.code == 2);
  CHECK(o.err ==
        path + ":6:38: layers.attention.kv_haeds: unknown field (did you mean 'kv_heads'?)\n");
}

TEST_CASE("malformed YAML") {
  std::string path = temp_model("broken.yaml", "name: x\nlayers: [1, 2\n");
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err.rfind(path + ":3:1: malformed YAML: ", 0) == 0);
}

TEST_CASE("a missing field") {
  std::string text = kGood;
  text.replace(text.find("vocab: 100\n"), 11, "");
  std::string path = temp_model("missing.yaml", text);
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err == path + ":1:1: vocab: missing required field\n");
}

TEST_CASE("a wrong type") {
  std::string text = kGood;
  text.replace(text.find("hidden: 64"), 10, "hidden: wide");
  std::string path = temp_model("type.yaml", text);
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err == path + ":3:9: hidden: expected an integer, got 'wide'\n");
}

TEST_CASE("a non-positive width") {
  std::string text = kGood;
  text.replace(text.find("intermediate: 128"), 17, "intermediate: 0");
  std::string path = temp_model("zero.yaml", text);
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err == path + ":7:37: layers.ffn.intermediate: must be positive, got 0\n");
}

TEST_CASE("heads that do not divide") {
  std::string text = kGood;
  text.replace(text.find("kv_heads: 2"), 11, "kv_heads: 3");
  std::string path = temp_model("heads.yaml", text);
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err ==
        path + ":6:48: layers.attention.kv_heads: 3 KV heads do not divide 4 query heads\n");
}

TEST_CASE("an unknown precision") {
  std::string path = temp_model("precision.yaml", std::string(kGood) + "precision: {kv: bf17}\n");
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err.rfind(path + ":8:17: precision.kv: unknown precision 'bf17'", 0) == 0);
}

TEST_CASE("an unknown layer kind suggests the closest") {
  std::string text = kGood;
  text.replace(text.find("kind: swiglu"), 12, "kind: swiglo");
  std::string path = temp_model("kind.yaml", text);
  outcome o = run({"params", "--model", path});
  CHECK(o.code == 2);
  CHECK(o.err == path + ":7:15: layers.ffn.kind: unknown kind 'swiglo' (did you mean 'swiglu'?)\n");
}

TEST_CASE("a missing file") {
  outcome o = run({"params", "--model", "/nonexistent/model.yaml"});
  CHECK(o.code == 2);
  CHECK(o.err == "/nonexistent/model.yaml: cannot open file (No such file or directory)\n");
}

TEST_CASE("an unknown bundled model") {
  outcome o = run({"params", "--model", "qwen3-8c"});
  CHECK(o.code == 2);
  CHECK(o.err.rfind("--model: unknown model 'qwen3-8c' (did you mean 'qwen3-8b'?)", 0) == 0);
}

TEST_CASE("an absurd length") {
  outcome o = run({"state", "--model", "qwen3-8b", "--length", "99999999999"});
  CHECK(o.code == 2);
  CHECK(o.err == "--length: 99999999999 is beyond the supported 4294967296 tokens\n");
  outcome neg = run({"state", "--model", "qwen3-8b", "--length", "-5"});
  CHECK(neg.code == 2);
  CHECK(neg.err == "--length: must not be negative, got -5\n");
}

TEST_CASE("request: any number of generated tokens up to the token limit, sums past 64 bits") {
  outcome ten = run({"request", "--model", "qwen3-8b", "--prompt", "8", "--generate", "10000000",
                     "-f", "json"});
  CHECK(ten.code == 0);
  CHECK(ten.out.find("\"decode_calls\": 9999999,") != std::string::npos);
  // 4.3 billion decode steps: the FLOPs pass 2^63, exact in JSON, in a unit that reads in
  // Markdown (rounded from the exact count, as a 64-bit one is).
  outcome most = run({"request", "--model", "qwen3-8b", "--prompt", "8", "--generate",
                      "4294967296"});
  CHECK(most.code == 0);
  CHECK(squeeze(most.out).find("| decode flops | 5.44 YFLOPs |") != std::string::npos);
  outcome exact = run({"request", "--model", "qwen3-8b", "--prompt", "8", "--generate",
                       "4294967296", "-f", "json"});
  CHECK(exact.out.find("\"decode_flops\": \"5440231216725998166343680\"") != std::string::npos);
  outcome over = run({"request", "--model", "qwen3-8b", "--prompt", "8", "--generate",
                      "4294967297"});
  CHECK(over.code == 2);
  CHECK(over.err == "--generate: 4294967297 is beyond the supported 4294967296 tokens\n");
}

TEST_CASE("a bundled model carries the context limit its config gives") {
  // 36 bundles predated the limit: no warning past it, and --engine without --max-model-len
  // failed on gpt-oss-120b. Each bundle naming its config fixture must agree with an import.
  at_source_root here;
  int checked_models = 0;
  for (const auto& entry : std::filesystem::directory_iterator("models")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    auto at = yaml.find("tests/fixtures/hf/");
    if (at == std::string::npos) continue;
    std::string fixture = yaml.substr(at, yaml.find_first_of(" ,)\"`\n", at) - at);
    if (fixture.ends_with("/config.json")) fixture.resize(fixture.size() - 12);
    outcome imported = run({"import", fixture});
    if (imported.code != 0) continue;
    auto limit = [](const std::string& t) -> std::int64_t {
      auto k = t.find("\nmax_position_embeddings:");
      return k == std::string::npos ? 0 : std::stoll(t.substr(k + 26));
    };
    CHECK_MESSAGE(limit(yaml) == limit(imported.out), entry.path().string());
    ++checked_models;
  }
  CHECK(checked_models >= 80);
}

TEST_CASE("third review: a bound, a knob, a size and a budget that were silently wrong") {
  // roofline took a tp the heads cannot split.
  outcome tp =
      run({"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "1", "--tp", "3"});
  CHECK(tp.code == 2);
  CHECK(tp.err == "--tp: tp 3 does not divide the 32 heads of layer 0\n");
  // vLLM's --activation-memory and --enable-prefix-caching did nothing under SGLang.
  for (const char* knob : {"--activation-memory=30GiB", "--enable-prefix-caching"}) {
    outcome o = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "32K",
                     "--engine", "sglang", knob});
    CHECK(o.code == 2);
    CHECK(o.err.find("is vllm's knob; --engine sglang does not read it") != std::string::npos);
  }
  // The log's "6.51" without its GiB read as 6 bytes.
  outcome bare = run({"capacity", "--engine", "vllm", "--model", "qwen3-14b", "--max-model-len",
                      "32768", "--kv-memory", "6.51"});
  CHECK(bare.code == 2);
  CHECK(bare.err.find("(a bare number is bytes)") != std::string::npos);
  // The weight budget priced gpt-oss's MXFP4 experts as BF16 (41.3 B params fit, while the
  // 116.8 B model's weights did) and kept one workspace for four cards.
  outcome b = run({"capacity", "--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--length", "8K",
                   "--requests", "1", "-f", "json"});
  REQUIRE(b.code == 0);
  auto j = nlohmann::json::parse(b.out);
  CHECK(j["weights_fit"] == true);
  CHECK(j["max_weight_bytes"].get<double>() > j["weight_bytes"].get<double>());
  outcome four = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K",
                      "--requests", "1", "--tp", "4", "-f", "json"});
  REQUIRE(four.code == 0);
  auto f = nlohmann::json::parse(four.out);
  CHECK(f["max_weight_bytes"].get<std::int64_t>() + 4 * (2LL << 30) +
            f["per_request_bytes"].get<std::int64_t>() <=
        f["memory_bytes"].get<std::int64_t>());
}

TEST_CASE("an unknown GPU and a bad workspace") {
  outcome o = run({"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4009", "--length", "8192"});
  CHECK(o.code == 2);
  CHECK(o.err.rfind("--gpu: unknown GPU 'rtx-4009' (did you mean 'rtx-4090'?)", 0) == 0);
  outcome w = run({"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192",
                   "--workspace", "-2GiB"});
  CHECK(w.code == 2);
  CHECK(w.err == "--workspace: '-2GiB' is not a size such as 2GiB or 512MiB\n");
}

TEST_CASE("--set errors name the path") {
  outcome o =
      run({"state", "--model", "qwen3-8b", "--length", "1", "--set", "layers.attention.kv_head=4"});
  CHECK(o.code == 2);
  CHECK(o.err == "--set: layers.attention.kv_head: unknown field (did you mean 'kv_heads'?)\n");
  outcome bad = run({"state", "--model", "qwen3-8b", "--length", "1", "--set", "layers.nope.x=1"});
  CHECK(bad.code == 2);
  CHECK(bad.err == "--set: layers.nope: unknown field\n");
  outcome value = run(
      {"state", "--model", "qwen3-8b", "--length", "1", "--set", "layers.attention.kv_heads=abc"});
  CHECK(value.code == 2);
  CHECK(value.err == "--set: layers.attention.kv_heads: expected an integer, got 'abc'\n");
  outcome scalar = run({"state", "--model", "qwen3-8b", "--length", "1", "--set", "vocab.x=1"});
  CHECK(scalar.code == 2);
  CHECK(scalar.err == "--set vocab.x: 'vocab' is not a mapping in the model\n");
}

TEST_CASE("weights that do not fit are said plainly") {
  outcome o = run({"capacity", "--model", "deepseek-r1-distill-llama-70b", "--gpu", "rtx-4090",
                   "--length", "8192", "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("\"requests\": 0") != std::string::npos);
  CHECK(o.out.find("\"weights_fit\": false") != std::string::npos);
}

TEST_CASE("check exits 1 on a failing claim") {
  std::string path = temp_model("claims.yaml", R"(claims:
  - {id: wrong, run: params --model qwen3-8b, field: /total_params, expect: 8.20 billion}
)");
  outcome o = run({"check", path});
  CHECK(o.code == 1);
  CHECK(o.out.find("0 passed, 1 failed") != std::string::npos);
}

TEST_CASE("capacity --engine: golden Markdown, the engine's log lines, input errors") {
  golden("capacity-engine-vllm", {"capacity", "--engine", "vllm", "--model", "qwen3-8b",
                                  "--max-model-len", "32768", "--kv-memory", "18.69GiB"});
  golden("capacity-engine-sglang",
         {"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--context-length", "32768",
          "--kv-memory", "18.69GiB", "--page-size", "16"});
  outcome o = run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len",
                   "32768", "--kv-memory", "18.69GiB"});
  CHECK(squeeze(o.out).find("| GPU KV cache size: 136,096 tokens |") != std::string::npos);
  // Plain capacity keeps needing --gpu and --length.
  outcome g = run({"capacity", "--model", "qwen3-8b", "--length", "8192"});
  CHECK(g.code == 2);
  CHECK(g.err == "--gpu: is required (name at least one GPU)\n");
  outcome l = run({"capacity", "--model", "qwen3-8b", "--gpu", "rtx-4090"});
  CHECK(l.code == 2);
  CHECK(l.err == "--length: give at least one context length\n");
  // Without a length the engines hold the model's own limit (max_position_embeddings).
  outcome m = run({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--kv-memory", "1GiB",
                   "--format", "json"});
  CHECK(m.code == 0);
  CHECK(m.out.find("\"max_model_len\": 40960") != std::string::npos);
  outcome e = run({"capacity", "--engine", "trtllm", "--model", "qwen3-8b"});
  CHECK(e.code == 2);
  CHECK(e.err.find("--engine") != std::string::npos);
  outcome d = run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8",
                   "--kv-memory", "1GiB", "--kv-cache-dtype", "int3"});
  CHECK(d.code == 2);
  CHECK(d.err ==
        "--kv-cache-dtype: 'int3' is not auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16 or "
        "float32\n");
  outcome u = run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8",
                   "--gpu", "h100-sxm", "--gpu-memory-utilization", "1.5"});
  CHECK(u.code == 2);
  CHECK(u.err == "--gpu-memory-utilization: must be in (0, 1], got 1.5\n");
  outcome t = run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8",
                   "--kv-memory", "1GiB", "--tensor-parallel-size", "3"});
  CHECK(t.code == 2);
  CHECK(t.err == "--tensor-parallel-size: tp 3 does not divide the 32 heads of layer 0\n");
}

TEST_CASE("engine knobs: a typed 0 is a value to check, never the engine's default") {
  // Each of these is 0 in the options when left out (the engine's own default); typed as 0 it
  // once read as left out.
  auto refused = [](std::vector<std::string> more, const std::string& engine,
                    const std::string& model, const std::string& why) {
    std::vector<std::string> a = {"capacity", "--engine",        engine, "--model", model, "--gpu",
                                  "h100-sxm", "--max-model-len", "8192"};
    a.insert(a.end(), more.begin(), more.end());
    outcome o = run(a);
    CAPTURE(more.front());
    CHECK(o.code == 2);
    CHECK(o.err == why);
  };
  refused({"--max-num-batched-tokens", "0"}, "vllm", "qwen3-8b",
          "--max-num-batched-tokens: must be at least 1, got 0\n");
  refused({"--max-num-seqs", "0"}, "vllm", "qwen3-8b",
          "--max-num-seqs: must be at least 1, got 0\n");
  refused({"--block-size", "0"}, "vllm", "qwen3-8b", "--block-size: must be at least 1, got 0\n");
  refused({"--page-size", "0"}, "sglang", "qwen3-8b", "--block-size: must be at least 1, got 0\n");
  // Every spelling of an option counts as typed (options::given holds its first long name).
  refused({"--chunked-prefill-size", "0"}, "sglang", "qwen3-8b",
          "--max-num-batched-tokens: must be at least 1, got 0\n");
  refused({"--max-running-requests", "0"}, "sglang", "qwen3-8b",
          "--max-num-seqs: must be at least 1, got 0\n");
  refused({"--speculative-config", R"({"method": "ngram", "num_speculative_tokens": 2})",
           "--num-speculative-tokens", "0"},
          "vllm", "qwen3-8b",
          "--num-speculative-tokens: 0 disagrees with --speculative-config's 2\n");
  refused({"--mem-fraction-static", "0"}, "sglang", "qwen3-8b",
          "--mem-fraction-static: must be in (0, 1], got 0\n");
  refused({"--max-mamba-cache-size", "0", "--tp", "4"}, "sglang", "qwen3-next-80b-a3b-thinking",
          "--max-mamba-cache-size: must be at least 1, got 0\n");
  refused({"--mamba-full-memory-ratio", "0", "--tp", "4"}, "sglang", "qwen3-next-80b-a3b-thinking",
          "--mamba-full-memory-ratio: must be > 0, got 0\n");
  // Left out, each takes the engine's default; plain capacity's --page-tokens 0 is "unpaged".
  CHECK(run({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--gpu", "h100-sxm",
             "--max-model-len", "8192"})
            .code == 0);
  CHECK(run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8192",
             "--page-tokens", "0"})
            .code == 0);
}

TEST_CASE("plan --engine: the fewest cards whose engine concurrency holds the requests") {
  ojson one = evaluate({"plan", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                        "--max-model-len", "32768", "--requests", "4", "-f", "json"});
  CHECK(one["gpus"] == 1);
  CHECK(one["max_concurrency"].get<double>() >= 4);
  // Many more requests need more cards; the answer's concurrency holds them, one card fewer
  // would not be tried first (cards are searched from 1 up).
  ojson more = evaluate({"plan", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                         "--max-model-len", "32768", "--requests", "40", "-f", "json"});
  REQUIRE(more["gpus"].is_number());
  CHECK(more["gpus"].get<std::int64_t>() > 1);
  // Replicas of one layout share the requests, as plain plan deploys them.
  CHECK(more["max_concurrency"].get<double>() * more["instances"].get<double>() >= 40);
  ojson none = evaluate({"plan", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "rtx-4090",
                         "--max-model-len", "32768", "--requests", "100000", "--max-gpus", "8",
                         "-f", "json"});
  CHECK(none["gpus"].is_null());
  // A logged KV figure does not make a card hold weights it cannot: DeepSeek-V3 was planned on
  // two single H100s (627 GiB per rank) with --kv-memory 10GiB.
  ojson logged = evaluate({"plan", "--engine", "vllm", "--model", "deepseek-v3", "--gpu",
                           "h100-sxm", "--max-model-len", "32768", "--requests", "8", "--kv-memory",
                           "10GiB", "-f", "json"});
  REQUIRE(logged["gpus"].is_number());
  CHECK(logged["weight_bytes_per_rank"].get<double>() < 80.0 * (1LL << 30));
  outcome cap = run({"capacity", "--engine", "vllm", "--model", "deepseek-v3", "--gpu", "h100-sxm",
                     "--max-model-len", "8192", "--kv-memory", "10GiB"});
  CHECK(cap.code == 2);
  CHECK(cap.err.rfind("--kv-memory: the weights (626.92 GiB per rank at tp 1 x pp 1) pass "
                      "h100-sxm's",
                      0) == 0);
}
