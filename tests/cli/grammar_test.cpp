// The option grammar (lengths with K/M/G, lists, ranges, model lists, case-insensitive names,
// ranked suggestions), human units in Markdown, `calc report`, `--version`, completion, and the
// GPU catalogue. Bad input: the exact one-line message and exit code 2.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../unit/scratch.h"
#include "cli/cli.h"
#include "common/names.h"
#include "common/units.h"
#include "report/chart.h"
#include "report/format.h"
#include "run_cli.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"

using namespace calc;

namespace {

using cli_testing::outcome;
using cli_testing::run;

nlohmann::json json_of(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--format", "json"});
  outcome o = run(a);
  REQUIRE_MESSAGE(o.code == 0, o.err);
  return nlohmann::json::parse(o.out);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Markdown with each run of spaces as one: aligned tables compare by their cells.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

}  // namespace

TEST_CASE("token counts as context lengths are spoken") {
  CHECK(parse_token_count("8192") == 8192);
  CHECK(parse_token_count("128K") == 131072);
  CHECK(parse_token_count("128k") == 131072);
  CHECK(parse_token_count("1M") == 1048576);
  CHECK(parse_token_count("4G") == 4294967296LL);
  CHECK_FALSE(parse_token_count(""));
  CHECK_FALSE(parse_token_count("12Q"));
  CHECK_FALSE(parse_token_count("1.5K"));
  CHECK_FALSE(parse_token_count("K"));
  CHECK_FALSE(parse_token_count("99999999999999999999"));  // too large, but shaped like a count
  // The digit that would pass 2^62 is refused before the multiplication (UBSan found the old
  // order overflowing on 999999999999999999 x 10).
  CHECK_FALSE(parse_token_count("9999999999999999999"));
  CHECK(parse_token_count("4611686018427387904") == 4611686018427387904LL);  // 2^62 itself
  CHECK_FALSE(parse_token_count("4611686018427387905"));
  CHECK(looks_like_token_count("99999999999999999999"));
}

TEST_CASE("--length takes suffixes, lists and ranges in every command") {
  CHECK(json_of({"state", "--model", "qwen3-8b", "--length", "128K"})["length"] == 131072);
  CHECK(json_of({"state", "--model", "qwen3-8b", "-n", "8K"})["total_bytes"] == 1207959552);
  CHECK(json_of({"plan", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "32K",
                 "--requests", "4"})["length"] == 32768);
  CHECK(json_of({"crossover", "--model", "qwen3-8b", "--length", "1M"})["length"] == 1048576);
  CHECK(json_of({"compare", "--model", "qwen3-8b", "--length", "4K"})["length"] == 4096);
  auto geometric = json_of({"sweep", "--model", "qwen3-8b", "--length", "1K:1M:x4"})["points"];
  REQUIRE(geometric.size() == 6);
  CHECK(geometric.back()["length"] == 1048576);
  auto arithmetic = json_of({"sweep", "--model", "qwen3-8b", "--lengths", "1K:4K:+1K"})["points"];
  REQUIRE(arithmetic.size() == 4);
  CHECK(arithmetic[1]["length"] == 2048);
  auto mixed = json_of({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length",
                        "4K,16K:64K:x4"})["rows"];
  REQUIRE(mixed.size() == 3);
  CHECK(mixed[2]["length"] == 65536);
  // Other token options take the same suffixes.
  CHECK(json_of({"request", "--model", "qwen3-8b", "--prompt", "8K", "--generate",
                 "1K"})["prompt"] == 8192);
  CHECK(json_of({"forward", "--model", "qwen3-8b", "--tokens", "1", "--context",
                 "8K"})["context"] == 8192);
}

TEST_CASE("--length: bad values are located, quoted as typed, exit 2") {
  outcome empty = run({"state", "--model", "qwen3-8b", "--length", ""});
  CHECK(empty.code == 2);
  CHECK(empty.err ==
        "--length: no length given; give tokens such as 8192 or 128K, a list 4K,8K, or a range "
        "1K:1M:x2\n");
  outcome huge = run({"state", "--model", "qwen3-8b", "--length", "99999999999999999999"});
  CHECK(huge.code == 2);
  CHECK(huge.err == "--length: 99999999999999999999 is beyond the supported 4294967296 tokens\n");
  outcome big = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8G"});
  CHECK(big.code == 2);
  CHECK(big.err == "--length: 8G is beyond the supported 4294967296 tokens\n");
  outcome word = run({"state", "--model", "qwen3-8b", "--length", "long"});
  CHECK(word.code == 2);
  CHECK(word.err == "--length: 'long' is not a length such as 8192, 128K or 1M\n");
  outcome two = run({"state", "--model", "qwen3-8b", "--length", "4K,8K"});
  CHECK(two.code == 2);
  CHECK(two.err == "--length: `calc state` takes one length, got 2\n");
  outcome range = run({"sweep", "--model", "qwen3-8b", "--length", "1K:64:x2"});
  CHECK(range.code == 2);
  CHECK(range.err == "--length: '1K:64:x2' is not FROM:TO:xFACTOR or FROM:TO:+STEP\n");
}

TEST_CASE("--model lists: compare and report take several, an empty list is said plainly") {
  outcome empty = run({"compare", "--models", ",", "--length", "8192"});
  CHECK(empty.code == 2);
  CHECK(empty.err ==
        "--model: the model list ',' is empty; name a model such as qwen3-8b (`calc models` "
        "lists them)\n");
  outcome two = run({"state", "--model", "qwen3-8b,gpt2", "--length", "8"});
  CHECK(two.code == 2);
  CHECK(two.err ==
        "--model: `calc state` takes one model, got 2; `calc compare` and `calc report` take "
        "several\n");
  auto both = json_of({"compare", "--model", "qwen3-8b,gpt2", "--length", "1K"})["models"];
  REQUIRE(both.size() == 2);
  CHECK(both[1]["model"] == "gpt2");
}

TEST_CASE("names match ignoring case; suggestions rank by prefix and family") {
  CHECK(json_of({"params", "--model", "Qwen3-8B"})["total_params"] == 8190735360LL);
  CHECK(json_of({"capacity", "--model", "qwen3-8b", "--gpu", "H200", "--length", "8K"})["gpu"] ==
        "h200");
  outcome h100 = run({"capacity", "--model", "qwen3-8b", "--gpu", "H100", "--length", "8K"});
  CHECK(h100.code == 2);
  CHECK(h100.err ==
        "--gpu: unknown GPU 'H100' (did you mean 'h100-nvl', 'h100-sxm' or 'h100-pcie'?); "
        "`calc gpus` lists the catalogue\n");
  CHECK(suggest("rtx-4009", {"rtx-4090", "rtx-6000-ada", "b200"}) ==
        std::vector<std::string>{"rtx-4090"});
  CHECK(suggest("MI300", {"mi300x", "mi300a", "mi325x"}) ==
        std::vector<std::string>{"mi300a", "mi300x"});
  CHECK(suggest("zzz", {"h100-sxm"}).empty());
  CHECK(did_you_mean({"a", "b"}) == " (did you mean 'a' or 'b'?)");
}

TEST_CASE("crossover --budget needs no --length") {
  auto j = json_of({"crossover", "--model", "qwen3.6-35b-a3b", "--budget", "256MiB"});
  CHECK(j["max_tokens"] == 9939);
  CHECK(j["length"].is_null());
  CHECK(j["batch_read_crossover"].is_null());
  outcome neither = run({"crossover", "--model", "qwen3-8b"});
  CHECK(neither.code == 2);
  CHECK(neither.err == "--length: give a length (for the batch read crossover) or a --budget\n");
}

TEST_CASE("--version and shell completion from the command table") {
  outcome v = run({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out.rfind("calc 0.", 0) == 0);  // the project version, one line
  CHECK(std::count(v.out.begin(), v.out.end(), '\n') == 1);
  outcome bash = run({"completion", "bash"});
  CHECK(bash.code == 0);
  CHECK(contains(bash.out, "complete -o default -F _calc calc\n"));
  CHECK(contains(bash.out, "report) opts=\""));
  CHECK(contains(bash.out, "--plot-dir"));
  CHECK(contains(bash.out, "qwen3-8b"));
  CHECK(contains(bash.out, "h100-sxm"));
  outcome zsh = run({"completion", "zsh"});
  CHECK(zsh.code == 0);
  CHECK(zsh.out.rfind("#compdef calc\n", 0) == 0);
  CHECK(contains(zsh.out, "'--length["));
  outcome fish = run({"completion", "fish"});
  CHECK(fish.code == 2);
}

TEST_CASE("Markdown in human units; JSON keeps exact integers") {
  CHECK(human_tokens(131072) == "128K");
  CHECK(human_tokens(1048576) == "1M");
  CHECK(human_tokens(1000) == "1,000");
  CHECK(human_rate(3'350'000'000'000) == "3.35 TB/s");
  CHECK(human_rate(900'000'000'000) == "900 GB/s");
  CHECK(human_decimal_bytes(80'000'000'000) == "80 GB");
  CHECK(human_params(8'190'735'360) == "8.191 B params");
  CHECK(human_seconds(0.0125) == "12.5 ms");
  outcome gpus = run({"gpus"});
  REQUIRE(gpus.code == 0);
  // The memory as sold (decimal) beside what the CUDA runtime reports (binary).
  CHECK(contains(squeeze(gpus.out),
                 "| h100-sxm | NVIDIA H100 SXM5 80GB | nvidia | 80 GB | 79.205 GiB | 3.35 TB/s |"));
  CHECK_FALSE(contains(gpus.out, "3,350,000,000,000"));
  auto j = json_of({"gpus"});
  bool found = false;
  for (const auto& g : j["gpus"])
    if (g["name"] == "h100-sxm") {
      found = true;
      CHECK(g["bandwidth_bytes"] == 3350000000000LL);
    }
  CHECK(found);
  // calc plan's reason in a sentence: card memory as sold in decimal GB, the shortfall in GiB;
  // the JSON keeps the exact shortfall as an integer beside it.
  auto plan = json_of({"plan", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192",
                       "--requests", "16", "--memory", "as-sold"});
  CHECK(plan["fewer_gpus_shortfall_bytes"] == 13856307200LL);
  CHECK(plan["why_not_fewer"] ==
        "with 1 card of 24 GB the best layout (tp 1 x pp 1) leaves its fullest card 12.905 GiB "
        "short of weights + workspace + 16 requests' state");
  // The runtime-visible memory (the default) in GiB, as the CUDA runtime and engines print it.
  auto runtime = json_of(
      {"plan", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192", "--requests", "16"});
  CHECK(runtime["memory_basis"] == "runtime");
  CHECK(runtime["card_memory_bytes"] == 25386352640LL);
  CHECK(runtime["fewer_gpus_shortfall_bytes"] == 13856307200LL - (25386352640LL - 24000000000LL));
  CHECK(contains(runtime["why_not_fewer"].get<std::string>(), "with 1 card of 23.643 GiB "));
  // The layouts between the one that falls short and the plan's, named as a range, or as one
  // count where only one lies between ("on 3 to 3 cards" read as a slip).
  auto gap = json_of({"plan", "--model", "deepseek-v4-flash", "--gpu", "h200", "--length", "8192",
                      "--requests", "16"});
  REQUIRE(gap["gpus"] == 4);
  REQUIRE(gap["fewer_gpus"] == 2);
  CHECK(contains(gap["why_not_fewer"].get<std::string>(),
                 "; no layout engines run on 3 cards comes closer"));
  auto wide = json_of({"plan", "--model", "deepseek-v4-flash", "--gpu", "h200", "--length", "8192",
                       "--requests", "16", "--memory", "as-sold"});
  REQUIRE(wide["gpus"] == 8);
  REQUIRE(wide["fewer_gpus"] == 4);
  CHECK(contains(wide["why_not_fewer"].get<std::string>(),
                 "; no layout engines run on 5 to 7 cards comes closer"));
  // calc capacity's note when the weights alone do not fit: the same units. Kimi K3's bf16
  // weights are weight_bytes exactly; the card is an RTX 4090's 24 GB.
  auto capacity =
      json_of({"capacity", "--model", "kimi-k3", "--gpu", "rtx-4090", "--length", "8K", "--memory",
               "as-sold"});
  CHECK(capacity["weights_fit"] == false);
  CHECK(capacity["memory_bytes"] == 24000000000LL);
  CHECK(capacity["note"] == "the weights alone (" +
                                calc::human_bytes(capacity["weight_bytes"].get<std::int64_t>()) +
                                ") plus the workspace exceed the 24 GB of memory");
  CHECK(contains(capacity["note"].get<std::string>(), "TiB"));
}

TEST_CASE("the GPU catalogue: at least 40 accelerators, every field and a source") {
  std::vector<gpu_spec> all = gpu_catalogue();
  CHECK(all.size() >= 40);
  const char* fields[] = {"name",       "display",    "memory",       "bandwidth", "bf16_tflops",
                          "fp8_tflops", "fp4_tflops", "interconnect", "source"};
  for (const gpu_spec& g : all) {
    YAML::Node n = YAML::LoadFile(g.file);
    for (const char* f : fields) CHECK_MESSAGE(n[f].IsDefined(), g.file << " lacks " << f);
    CHECK_MESSAGE(g.source.size() > 20, g.file);
    CHECK_MESSAGE(g.memory > 0, g.file);
    CHECK_MESSAGE(g.bandwidth > 0, g.file);
    CHECK_MESSAGE(g.bf16_tflops > 0, g.file);
    CHECK_MESSAGE(g.interconnect > 0, g.file);
    CHECK_MESSAGE(g.name + ".yaml" == std::filesystem::path(g.file).filename().string(), g.file);
    // Peaks double (or stay) with each halving of precision where the units exist.
    if (g.fp8_tflops > 0) CHECK_MESSAGE(g.fp8_tflops >= g.bf16_tflops, g.file);
    if (g.fp4_tflops > 0) CHECK_MESSAGE(g.fp4_tflops >= g.fp8_tflops, g.file);
  }
}

TEST_CASE("components list windowed and global KV of one kind on their own rows") {
  std::filesystem::path dir = calc::testing::scratch_dir("calc-tests");
  std::filesystem::create_directories(dir);
  std::string path = (dir / "swa-mix.yaml").string();
  std::ofstream(path) << R"(name: swa-mix
vocab: 100
hidden: 64
layers:
  count: 4
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
  variants:
    local: {attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16, window: 128}}
  pattern: [local, base]
)";
  auto j = json_of({"state", "--model", path, "--length", "1K"});
  REQUIRE(j["components"].size() == 2);
  CHECK(j["components"][0]["class"] != j["components"][1]["class"]);
  // KV of 2 heads x 16 x 2 bytes x (K, V) = 128 B per token per layer.
  CHECK(j["by_component"]["kv"]["bytes"] == 2 * 128 * 1024);
  CHECK(j["by_component"]["kv_window"]["bytes"] == 2 * 128 * 128);
}

TEST_CASE("report: a document with Mermaid charts, exact JSON, SVGs with --plot-dir") {
  outcome md = run({"report", "--model", "qwen3-8b,deepseek-v3", "--gpu", "h200", "--length",
                    "4K,32K,128K", "--requests", "8", "--memory", "as-sold"});
  REQUIRE_MESSAGE(md.code == 0, md.err);
  CHECK(md.out.rfind("# Serving report: qwen3-8b and deepseek-v3 on NVIDIA H200 SXM 141GB\n", 0) ==
        0);
  CHECK(contains(md.out, "```mermaid\n"));
  CHECK(contains(md.out, "xychart-beta\n"));
  CHECK(contains(md.out, "x-axis \"context length (tokens)\" [\"4K\", \"32K\", \"128K\"]"));
  CHECK(contains(squeeze(md.out), "| qwen3-8b | blue |"));
  CHECK(contains(md.out, "## Parameters and weights"));
  CHECK(contains(squeeze(md.out), "| qwen3-8b | 8.191 B params |"));
  // Memory as sold, said so.
  CHECK(contains(md.out, "141 GB of memory as sold, 4.8 TB/s"));
  outcome runtime =
      run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "4K"});
  CHECK(contains(runtime.out, "79.205 GiB of memory as the CUDA runtime reports it"));
  auto j = json_of({"report", "--model", "qwen3-8b", "--gpu", "h200", "--length", "8K"});
  CHECK(j["models"][0]["points"][0]["state_bytes"] == 1207959552);
  CHECK(j["models"][0]["weights"][0]["bytes"] == 16381470720LL);
  // bf16 -> fp8 halves the matrices; embeddings and head keep their format.
  CHECK(j["models"][0]["weights"][1]["bytes"] < j["models"][0]["weights"][0]["bytes"]);

  std::filesystem::path dir = calc::testing::scratch_dir("calc-tests") / "plots";
  std::filesystem::remove_all(dir);
  outcome svg =
      run({"report", "--model", "qwen3-8b", "--length", "1K:1M:x4", "--plot-dir", dir.string()});
  REQUIRE(svg.code == 0);
  // Chart files are named after the report (report-<digest>-state.svg), linked relative to the
  // working folder when there is no --output.
  std::string stem;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().ends_with("-state.gp"))
      stem = e.path().filename().string().substr(0, e.path().filename().string().size() - 9);
  REQUIRE(stem.starts_with("report-"));
  CHECK(std::filesystem::exists(dir / (stem + "-state.dat")));
  if (have_gnuplot()) {
    CHECK(std::filesystem::exists(dir / (stem + "-state.svg")));
    std::string link =
        (dir / (stem + "-state.svg")).lexically_relative(std::filesystem::current_path()).string();
    CHECK(contains(svg.out, "](" + link + ")"));
  } else {
    CHECK(contains(svg.out, "> gnuplot is not installed: no SVG drawn"));
  }
}

TEST_CASE("report --engine: requests per deployment are the engine's, named in the text") {
  std::vector<std::string> base = {"report", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                                   "--length", "8K", "--tp", "2"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto plain = json_of(base);
  auto vllm = json_of(with({"--engine", "vllm", "--kv-memory", "10GiB"}));
  // The same question asked of capacity --engine: floor(max_concurrency) on the same layout.
  auto cap = json_of({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len",
                      "8192", "--tp", "2", "--kv-memory", "10GiB"});
  auto held = static_cast<std::int64_t>(cap["max_concurrency"].get<double>());
  REQUIRE(held > 0);
  CHECK(vllm["models"][0]["points"][0]["requests"] == held);
  CHECK(vllm["models"][0]["points"][0]["requests"] != plain["models"][0]["points"][0]["requests"]);
  CHECK(vllm["requests_by"].get<std::string>().starts_with("vllm "));
  CHECK(!plain.contains("requests_by"));
  // The budget estimated from the card: SGLang's rules give their own count, said in words.
  outcome md = run(with({"--engine", "sglang"}));
  REQUIRE_MESSAGE(md.code == 0, md.err);
  CHECK(contains(md.out, "that sglang "));
  CHECK(contains(md.out, "holds at once on one instance of each model's deployment"));
  // Options the engine does not read are refused as by capacity --engine.
  outcome ws = run(with({"--engine", "vllm", "--workspace", "4GiB"}));
  CHECK(ws.code == 2);
  CHECK(contains(ws.err, "--workspace: not taken with --engine"));
}

TEST_CASE("report --engine: the deployment and the cards are the engine's plan, as plan --engine") {
  // DeepSeek-V3 at 8K on B200s: the textbook plan holds it on four cards, where vLLM's budget
  // (90 % of the card less its reservations) leaves no KV pool; the report once planned the
  // four cards and then said not one request fits on them.
  auto rep = json_of({"report", "--model", "deepseek-v3", "--gpu", "b200", "--length", "8K",
                      "--engine", "vllm", "--requests", "16"});
  auto one = json_of({"plan", "--engine", "vllm", "--model", "deepseek-v3", "--gpu", "b200",
                      "--length", "8K", "--requests", "1"});
  auto many = json_of({"plan", "--engine", "vllm", "--model", "deepseek-v3", "--gpu", "b200",
                       "--length", "8K", "--requests", "16"});
  const auto& m = rep["models"][0];
  CHECK(m["gpus"] == one["gpus"]);
  CHECK(m["points"][0]["requests"].get<std::int64_t>() >= 1);
  CHECK(m["points"][0]["cards"] == many["gpus"]);
  auto plain = json_of(
      {"plan", "--model", "deepseek-v3", "--gpu", "b200", "--length", "8K", "--requests", "1"});
  CHECK(plain["gpus"] != one["gpus"]);  // the case this guards: the two plans differ
}

TEST_CASE("weights_format names the matrices' own format, or mixed") {
  // DeepSeek-V3's `weights` default is BF16 but every matrix kind is FP8 blocks; gpt-oss keeps
  // BF16 attention beside MXFP4 experts; the formats summary says which is which.
  auto cap = [](const std::string& model) {
    return json_of({"capacity", "--model", model, "--gpu", "h200", "--length", "8K", "--tp", "8"});
  };
  CHECK(cap("deepseek-v3")["weights_format"].get<std::string>().starts_with("fp8"));
  CHECK(cap("gpt-oss-120b")["weights_format"] == "mixed");
  CHECK(cap("qwen3-8b")["weights_format"] == "bf16");
  auto serve = json_of({"serve", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--isl",
                        "1K", "--osl", "1K", "--concurrency", "1"});
  CHECK(serve["weights_format"] == cap("deepseek-v3")["weights_format"]);
  CHECK(serve["formats"] == cap("deepseek-v3")["formats"]);
}

TEST_CASE("charts: log length axis across decades, one coloured line per model") {
  chart c{"s",
          "State",
          "context length (tokens)",
          "state (GiB)",
          {1024, 4096, 1048576},
          {{"a", {1, 2, 3}}, {"b", {0, 1, 2}}}};
  CHECK(log_x(c));
  CHECK_FALSE(log_y(c));  // a zero cannot sit on a log axis
  std::string gp = gnuplot_script(c, "s.dat", "s.svg");
  CHECK(contains(gp, "set logscale x 2\n"));
  CHECK(contains(gp, "set xlabel 'context length (tokens)' noenhanced\n"));
  CHECK(contains(gp, "set xtics (\"1K\" 1024, \"4K\" 4096, \"1M\" 1048576)\n"));
  CHECK(contains(gp, "title 'a'"));
  CHECK(contains(gp, "title 'b'"));
  CHECK(gnuplot_data(c) == "# length \"a\" \"b\"\n1024 1 0\n4096 2 1\n1048576 3 2\n");
  chart narrow = c;
  narrow.x = {1024, 2048, 4096};
  CHECK_FALSE(log_x(narrow));
}
