// Issue 11: no crash, hang, internal error or silent nonsense on any input. One test per bad
// input a probe found, asserting the exact one-line message and exit code 2 (or the now-correct
// answer), and the limits of common/limits.h each named in its error.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../unit/scratch.h"
#include "check/check.h"
#include "cli/cli.h"
#include "common/dtype.h"
#include "common/limits.h"
#include "graph/graph.h"
#include "run_cli.h"
#include "spec/model_reader.h"

using namespace calc;

namespace {

using cli_testing::outcome;
using cli_testing::run;

/// Writes a temporary file and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  auto dir = calc::testing::scratch_dir("calc-hardening-tests");
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

const std::string kTiny = R"(name: tiny
vocab: 100
hidden: 64
layers:
  count: 2
  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: 16}
  ffn: {kind: swiglu, intermediate: 128}
)";

/// Runs `state` on a model file and expects exit 2 with `message` after the file's path.
void rejects_model(const std::string& name, const std::string& text, const std::string& message,
                   const std::vector<std::string>& extra = {}) {
  std::string path = temp_file(name, text);
  std::vector<std::string> args = {"state", "--model", path, "--length", "8"};
  args.insert(args.end(), extra.begin(), extra.end());
  outcome o = run(args);
  CHECK(o.code == 2);
  CHECK(o.err == path + message + "\n");
}

}  // namespace

TEST_CASE("reader: a product of fields past 64 bits is a located error, not signed overflow") {
  std::string text = kTiny;
  text.replace(text.find("attention: {"), std::string::npos,
               "attention: {kind: dsa, heads: 4611686018427387904, head_dim: 64, q_rank: 8, "
               "o_groups: 3, o_rank: 8, window: 8}\n  ffn: {kind: swiglu, intermediate: 128}\n");
  rejects_model("dsa-heads.yaml", text,
                ":6:89: layers.attention.o_groups: 3 output groups do not divide "
                "4611686018427387904 x 64");
}

TEST_CASE("--tp/--pp/--ep and card counts have a limit; --tp 0 is refused") {
  std::vector<std::string> base = {"capacity", "--model",  "qwen3-8b", "--gpu",
                                   "h100-sxm", "--length", "100"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  outcome tp = with({"--tp", "4294967296"});
  CHECK(tp.code == 2);
  CHECK(tp.err == "--tp: 4294967296 is more than the limit of 4096 cards\n");
  outcome pp = with({"--pp", "4294967296"});
  CHECK(pp.err == "--pp: 4294967296 is more than the limit of 4096 cards\n");
  outcome zero = with({"--tp", "0"});
  CHECK(zero.code == 2);
  CHECK(zero.err == "--tp: must be at least 1, got 0\n");
  outcome ep = with({"--ep", "-1"});
  CHECK(ep.err == "--ep: must be at least 1, got -1\n");
}

TEST_CASE("plan: huge request and card counts are refused by name") {
  std::vector<std::string> base = {"plan",     "--model",  "qwen3-8b", "--gpu",
                                   "h100-sxm", "--length", "10"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  CHECK(with({"--requests", "4294967297"}).err ==
        "--requests: 4294967297 is more than the limit of 4294967296 requests\n");
  CHECK(with({"--requests", "1", "--max-gpus", "4294967296"}).err ==
        "--max-gpus: 4294967296 is more than the limit of 4096 cards\n");
  CHECK(with({"--requests", "1", "--node-gpus", "4294967296"}).err ==
        "--node-gpus: 4294967296 is more than the limit of 4096 cards\n");
}

TEST_CASE("sweep: a huge factor stops at the range's end instead of wrapping negative") {
  outcome o = run({"sweep", "--model", "qwen3-8b", "--lengths", "2:4294967296:x4294967296",
                   "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("\"length\": 2,") != std::string::npos);
  CHECK(o.out.find("\"length\"") == o.out.rfind("\"length\""));  // one point: 2 * 2^32 > TO
  outcome huge = run({"sweep", "--model", "qwen3-8b", "--lengths",
                      "2:4294967296:x9223372036854775807", "--format", "json"});
  CHECK(huge.code == 2);
  CHECK(huge.err ==
        "--lengths: '2:4294967296:x9223372036854775807' is not FROM:TO:xFACTOR or FROM:TO:+STEP\n");
  outcome many = run({"sweep", "--model", "qwen3-8b", "--lengths", "1:4294967296:+1"});
  CHECK(many.code == 2);
  CHECK(many.err == "--lengths: '1:4294967296:+1' gives more than 10000000 lengths\n");
}

TEST_CASE("YAML: recursive aliases, alias bombs and deep nesting hit the limits") {
  outcome rec = run({"state", "--model", "qwen3-8b", "--length", "10", "--set", "source=&a [*a]"});
  CHECK(rec.code == 2);
  CHECK(rec.err.rfind("--set source:1:1: [0][0]", 0) == 0);
  CHECK(rec.err.find("...: nested deeper than 64 levels (the limit; a recursive alias?)\n") !=
        std::string::npos);
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  outcome set_bomb =
      run({"state", "--model", "qwen3-8b", "--length", "10", "--set", "source=" + bomb});
  CHECK(set_bomb.code == 2);
  CHECK(set_bomb.err.find("more than 4000000 YAML nodes with aliases expanded (the limit)") !=
        std::string::npos);
  std::string deep = kTiny + "source: " + std::string(100, '[') + std::string(100, ']') + "\n";
  outcome d = run({"state", "--model", temp_file("deep.yaml", deep), "--length", "1"});
  CHECK(d.code == 2);
  CHECK(d.err.find("nested deeper than 64 levels (the limit; a recursive alias?)") !=
        std::string::npos);
}

TEST_CASE("formats: records do not nest and names have a length limit") {
  outcome nested = run({"params", "--model", "qwen3-8b", "--weights", "bf16*1*1"});
  CHECK(nested.code == 2);
  CHECK(nested.err ==
        "--weights: 'bf16*1*1': a part of a record is a plain or grouped format such as "
        "fp8:g64:e8m0*448, not itself a record\n");
  std::string deep = "bf16";
  for (int i = 0; i < 30000; ++i) deep += "*1";
  outcome big = run({"params", "--model", "qwen3-8b", "--weights", deep});
  CHECK(big.err ==
        "--weights: a format name of 60004 characters is longer than the limit of 256\n");
  CHECK_THROWS_AS(parse_dtype("fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+"
                              "fp8*1+fp8*1+fp8*1+fp8*1+fp8*1+fp8*1"),
                  std::invalid_argument);
}

TEST_CASE("files: a folder, a long path, an unreadable or endless file, an empty file") {
  auto dir = std::filesystem::temp_directory_path().string();
  outcome m = run({"state", "--model", dir, "--length", "1"});
  CHECK(m.code == 2);
  CHECK(m.err == dir + ": is a folder, not a YAML file\n");
  outcome g = run({"capacity", "--model", "qwen3-8b", "--gpu", dir, "--length", "1"});
  CHECK(g.code == 2);
  CHECK(g.err == dir + ": is a folder, not a YAML file\n");
  outcome longer = run({"state", "--model", "/tmp/" + std::string(5000, 'a'), "--length", "1"});
  CHECK(longer.code == 2);
  CHECK(longer.err == "--model: a path of 5005 characters is longer than the limit of 4096\n");
  // Root reads any file, so an unreadable one is /proc/self/mem (EIO at offset 0).
  outcome mem = run({"state", "--model", "/proc/self/mem", "--length", "1"});
  CHECK(mem.code == 2);
  CHECK(mem.err.rfind("/proc/self/mem: cannot read file (", 0) == 0);
  outcome zero = run({"state", "--model", "/dev/zero", "--length", "1"});
  CHECK(zero.code == 2);
  CHECK(zero.err == "/dev/zero: larger than the limit of 16 MiB\n");
  rejects_model("empty.yaml", "", ": (document): the file is empty; expected a mapping of fields");
  rejects_model("comments.yaml", "# nothing\n",
                ": (document): the file is empty; expected a mapping of fields");
}

TEST_CASE("--set: a bare scalar file, an empty value, a key with a newline") {
  rejects_model("scalar.yaml", "5\n",
                ":1:1: (document): expected a mapping of fields (--set has nothing to change)",
                {"--set", "hidden=5"});
  outcome empty =
      run({"state", "--model", temp_file("tiny.yaml", kTiny), "--length", "8", "--set", "hidden="});
  CHECK(empty.code == 2);
  CHECK(empty.err == "--set: hidden: missing required field\n");
  outcome newline = run({"state", "--model", "qwen3-8b", "--length", "8", "--set", "hid\nden=5"});
  CHECK(newline.code == 2);
  CHECK(newline.err == "--set: hid\\nden: unknown field (did you mean 'hidden'?)\n");
}

TEST_CASE("duplicate keys and a second document are located at the second occurrence") {
  rejects_model("dup.yaml", "name: a\n" + kTiny,
                ":2:1: name: given twice in one mapping (the first would be silently ignored)");
  // Located at the second document's `---` line.
  rejects_model("two-docs.yaml", kTiny + "---\nname: x\n",
                ":8:1: (document): a second YAML document ('---'); a file holds one");
  // The reader skips its look for a second document when no line starts with a marker, so each
  // place a marker can hide is tried: after `...`, after a CR line break and after a byte order
  // mark (yaml-cpp 0.7 reads the last two as malformed: an error either way, never a silent pass).
  std::string cr = kTiny;
  std::replace(cr.begin(), cr.end(), '\n', '\r');
  rejects_model("two-docs-cr.yaml", cr + "---\rname: x\r",
                ":1:17: malformed YAML: illegal map value");
  rejects_model("end-marker.yaml", kTiny + "...\nname: x\n",
                ":9:1: (document): a second YAML document ('---'); a file holds one");
  rejects_model("bom.yaml", kTiny + "\xEF\xBB\xBF---\nname: x\n",
                ":9:5: malformed YAML: illegal map value");
}

TEST_CASE("layers: the pattern is checked before expanding; mtp.layers has the layer limit") {
  std::string text = kTiny;
  std::string pattern = "  pattern: [";
  for (int i = 0; i < 20; ++i) pattern += (i ? ", " : "") + std::string("base*100000");
  text.insert(text.find("  attention"), pattern + "]\n");
  rejects_model("pattern-bomb.yaml", text,
                ":6:12: layers.pattern: pattern of 2000000 layers is longer than count 2");
  outcome mtp = run({"forward", "--model", "deepseek-v4-flash", "--tokens", "1", "--mtp", "--set",
                     "mtp.layers=100000000000"});
  CHECK(mtp.code == 2);
  CHECK(mtp.err == "--set: mtp.layers: 100000000000 layers is more than the limit of 100000\n");
}

TEST_CASE("100,000 distinct layer overrides group in linear time") {
  std::string text = kTiny;
  text.replace(text.find("count: 2"), 8, "count: 100000");
  text += "  overrides:\n";
  for (int i = 0; i < 100000; ++i)
    text += "    - {at: [" + std::to_string(i) +
            "], ffn: {kind: swiglu, intermediate: " + std::to_string(i + 1) + "}}\n";
  model_spec spec = read_model_text(text, "overrides.yaml");
  graph g = build_graph(spec);
  CHECK(g.groups.size() == 100000);
  CHECK(g.groups[99999].name == "gqa 4q/2kv x16 + swiglu 100000");
}

TEST_CASE("zipf routing over more experts than its limit is refused before summing") {
  outcome o = run({"experts", "--model", "deepseek-v3", "--batch", "10", "--routing", "zipf:1",
                   "--set", "layers.ffn.experts=1099511627776"});
  CHECK(o.code == 2);
  CHECK(o.err ==
        "--routing: zipf routing sums one term per expert: 1099511627776 experts is more than the "
        "limit of 1048576\n");
}

TEST_CASE("speculative: nan and inf are refused") {
  outcome n = run({"speculative", "--decode-ms", "nan", "--round-ms", "1", "--accepted", "2"});
  CHECK(n.code == 2);
  CHECK(n.err ==
        "--decode-ms: give the time of one ordinary decode step (a finite number > 0), got nan\n");
  outcome i = run({"speculative", "--decode-ms", "1", "--round-ms", "inf", "--accepted", "2"});
  CHECK(i.err ==
        "--round-ms: give the draft + verify time of one round (a finite number > 0), got inf\n");
  outcome a = run({"speculative", "--decode-ms", "1", "--round-ms", "2", "--accepted", "inf"});
  CHECK(a.err == "--accepted: expected a finite number, got inf\n");
}

TEST_CASE("GPU files: the BF16 peak is required, finite and positive") {
  const std::string head = "name: g\nmemory: 80GB\nbandwidth: 3TB\n";
  auto roofline = [](const std::string& gpu) {
    return run({"roofline", "--model", "qwen3-8b", "--gpu", gpu, "--prompt", "1"});
  };
  std::string missing = temp_file("gpu-missing.yaml", head + "source: test\n");
  CHECK(roofline(missing).err == missing + ":1:1: bf16_tflops: missing required field\n");
  std::string nan = temp_file("gpu-nan.yaml", head + "bf16_tflops: .nan\nsource: test\n");
  CHECK(roofline(nan).err ==
        nan + ":4:14: bf16_tflops: expected a finite positive number of TFLOP/s, got '.nan'\n");
  std::string inf = temp_file("gpu-inf.yaml", head + "bf16_tflops: .inf\nsource: test\n");
  CHECK(roofline(inf).err ==
        inf + ":4:14: bf16_tflops: expected a finite positive number of TFLOP/s, got '.inf'\n");
  std::string fp8 = temp_file("gpu-fp8.yaml", head + "bf16_tflops: 1\nfp8_tflops: -1\nsource: t\n");
  CHECK(roofline(fp8).err ==
        fp8 + ":5:13: fp8_tflops: expected a finite non-negative number of TFLOP/s, got '-1'\n");
}

TEST_CASE("capacity: a shared prefix longer than the length is refused") {
  outcome o = run({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "100",
                   "--shared-prefix", "4294967296"});
  CHECK(o.code == 2);
  CHECK(o.err ==
        "--shared-prefix: 4294967296 tokens is longer than the length 100: the shared prefix is "
        "part of every request\n");
}

TEST_CASE("validate: decode steps and executor memory are capped before allocating") {
  outcome steps = run({"validate", "--model", "qwen3-8b", "--decode-steps", "4294967296"});
  CHECK(steps.code == 2);
  CHECK(steps.err == "--decode-steps: 4294967296 is more than the limit of 4096 steps\n");
  outcome big = run({"validate", "--model", "qwen3-8b", "--scale", "1"});
  CHECK(big.code == 2);
  CHECK(big.err.rfind("--scale: the scaled model needs 32", 0) == 0);
  CHECK(big.err.find("more than the limit of 8 GiB; use a larger scale\n") != std::string::npos);
}

TEST_CASE("results past 2^63 print exactly; a count past 128 bits names the options") {
  outcome o = run({"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "10000000",
                   "--batch", "1000000", "--format", "json"});
  CHECK(o.code == 0);
  CHECK(o.out.find("\"flops\": \"") != std::string::npos);  // digits as a string past 2^63
  outcome over =
      run({"forward", "--model", "qwen3-8b", "--tokens", "1", "--set", "hidden=4611686018427387904",
           "--set", "layers.ffn.intermediate=4611686018427387904"});
  CHECK(over.code == 2);
  CHECK(over.err ==
        "calc forward: an exact count overflows 128 bits (integer overflow in multiplication) "
        "with --model qwen3-8b --set hidden=4611686018427387904 --set "
        "layers.ffn.intermediate=4611686018427387904 --prompt 1 and the model's sizes; use "
        "smaller values\n");
}

TEST_CASE("an unknown command is named") {
  outcome o = run({"stat", "--model", "qwen3-8b"});
  CHECK(o.code == 2);
  CHECK(o.err ==
        "calc: unknown command 'stat' (did you mean 'state'?); `calc --help` lists the "
        "commands\n");
}

TEST_CASE("calc check: self-recursion, deep brackets, big numbers, over-precise expect") {
  nlohmann::ordered_json doc = {{"a", 1}};
  CHECK_THROWS_WITH_AS(
      evaluate_field(doc, std::string(200000, '(') + "1" + std::string(200000, ')')),
      ("field '" + std::string(60, '(') +
       "...': parentheses nested deeper than the limit of 64 at column 66")
          .c_str(),
      std::runtime_error);
  CHECK_THROWS_AS(evaluate_field(doc, std::string(40, '9')), std::runtime_error);
  CHECK_THROWS_AS(evaluate_field(doc, "170141183460469231731687303715884105727 + 1"),
                  std::overflow_error);
  CHECK_THROWS_WITH_AS(compare_printed(1, 3, "0.3333333333333333333333333"),
                       "expect: '0.3333333333333333333333333' has more than 18 decimals or 30 "
                       "digits (the limit)",
                       spec_error);
  std::vector<claim> claims(1);
  claims[0].id = "self";
  claims[0].run = "check scenarios";
  claims[0].field = "/a";
  claims[0].expect = "1";
  auto results = run_claims(claims, [](const std::vector<std::string>&) {
    return nlohmann::ordered_json{{"a", 1}};
  });
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].pass);
  CHECK(results[0].error == "a claim cannot run `check` (it would run itself)");
}

namespace {

/// `args` exits 2 with one line of error that contains `says`.
void check_refused(const std::vector<std::string>& args, const std::string& says) {
  outcome o = run(args);
  CAPTURE(args.front());
  CHECK(o.code == 2);
  CHECK_MESSAGE(o.err.find(says) != std::string::npos, o.err);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);  // one line
}

/// The text of a file.
std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("review probes: accepted-but-ignored options and impossible inputs are refused") {
  using args = std::vector<std::string>;
  const std::vector<std::pair<args, std::string>> cases = {
      // A request of no tokens bounds nothing (plan printed 2^63 - 1 requests).
      {{"plan", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "0", "--requests", "4"},
       "--length: must be at least 1, got 0"},
      {{"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "0"},
       "--length: must be at least 1, got 0"},
      // A typed 0 is not "left out" (it was told the model gives no context limit).
      {{"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
        "--max-model-len", "0"},
       "--max-model-len: must be at least 1, got 0"},
      // The logged KV figure replaces the estimate: its knobs would change nothing.
      {{"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8K",
        "--kv-memory", "10GiB", "--gpu-memory-utilization", "0.5"},
       "--gpu-memory-utilization: is not read with --kv-memory"},
      {{"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8K",
        "--kv-memory", "10GiB", "--activation-memory", "5GiB"},
       "--activation-memory: is not read with --kv-memory"},
      {{"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8K",
        "--kv-memory", "0"},
       "--kv-memory: must be more than 0 bytes"},
      // Charts belong to the Markdown report.
      {{"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "4K", "--format", "json",
        "--plot-dir", calc::testing::scratch_dir("calc-plot-json").string()},
       "--plot-dir: writes the SVG charts"},
      // CUDA-only options on the CPU run.
      {{"validate", "--model", "qwen3-8b", "--scale", "64", "--length", "16", "--gpu", "foo"},
       "--gpu: applies to --device cuda only"},
      {{"validate", "--model", "qwen3-8b", "--scale", "64", "--length", "16", "--jsonl",
        temp_file("v.jsonl", "")},
       "--jsonl: applies to --device cuda only"},
      // Execution paths of layers the model lacks changed nothing (and --execution ced was
      // already refused there).
      {{"forward", "--model", "qwen3-8b", "--tokens", "1K", "--mla-path", "expanded"},
       "--mla-path: 'expanded' changes nothing: qwen3-8b has no MLA layer"},
      {{"forward", "--model", "deepseek-v3", "--tokens", "1K", "--linear", "recurrent"},
       "--linear: 'recurrent' changes nothing"},
      // Mamba-1's selective scan and a short convolution have no chunked form to choose.
      {{"forward", "--model", "mamba-2.8b-hf", "--tokens", "1K", "--linear", "chunked"},
       "--linear: 'chunked' changes nothing: mamba-2.8b-hf has no layer with a chunked form"},
      {{"forward", "--model", "lfm2-700m", "--tokens", "1K", "--linear", "recurrent"},
       "--linear: 'recurrent' changes nothing: lfm2-700m has no layer with a chunked form"},
      {{"forward", "--model", "qwen3-8b", "--tokens", "1K", "--index-scan", "rectangular"},
       "--index-scan: 'rectangular' changes nothing"},
      {{"forward", "--model", "qwen3-8b", "--tokens", "1K", "--execution", "reference"},
       "--execution: 'reference' changes nothing"},
      // The weight budget answers for one card at one length.
      {{"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm,h200", "--length", "8K", "--requests",
        "4"},
       "--requests: sizes the weight budget of one card at one length"},
      // TensorRT-LLM's attention DP is on or off.
      {{"serve", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "trtllm", "--tp", "8",
        "--dp", "2", "--ep", "8", "--isl", "1K", "--osl", "1K", "--concurrency", "8"},
       "attention DP is on or off"},
      // TensorRT-LLM builds on CUDA: not a deployment on AMD or Intel cards.
      {{"serve", "--model", "qwen3-8b", "--gpu", "mi300x", "--engine", "trtllm", "--isl", "1K",
        "--osl", "1K", "--concurrency", "8"},
       "--engine: trtllm runs on NVIDIA cards only"},
      {{"plan", "--sla", "ttft=500,tpot=50", "--rate", "2", "--isl", "1K", "--osl", "256",
        "--model", "qwen3-8b", "--gpu", "gaudi3", "--engine", "trtllm"},
       "vllm and sglang run there"},
  };
  for (const auto& [command, says] : cases) check_refused(command, says);
}

TEST_CASE("review probes: bad calibration, GPU and scenario files are located errors") {
  const std::string text = file_text(models_dir() + "/calibration/default.yaml");
  auto with = [](std::string s, const std::string& from, const std::string& to) {
    auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  auto serve_with = [](const std::string& cal) -> std::vector<std::string> {
    return {"serve", "--model", "qwen3-8b",      "--gpu", "h100-sxm",      "--isl", "1K",
            "--osl", "128",     "--concurrency", "8",     "--calibration", cal};
  };
  // An entry no lookup reaches, and a time past what a double prints.
  check_refused(
      serve_with(temp_file("cal-engine.yaml", with(text, "engine: sglang", "engine: sglng"))),
      ".engine: unknown engine 'sglng'");
  check_refused(
      serve_with(temp_file("cal-family.yaml", with(text, "family: hopper", "family: hoper"))),
      ".family: 'hoper' is not a family");
  std::string huge = text;
  auto at = huge.find("step_overhead_ms: ");
  huge.replace(at, huge.find('\n', at) - at, "step_overhead_ms: 1e308");
  check_refused(serve_with(temp_file("cal-time.yaml", huge)),
                "step_overhead_ms: must be a number in [0, 1e+06]");
  // A runtime total above the memory as sold read as GiB.
  std::string card = with(file_text(models_dir() + "/gpus/h100-sxm.yaml"),
                          "runtime_memory: 85045477376B", "runtime_memory: 999999999999999B");
  check_refused(
      {"capacity", "--model", "qwen3-8b", "--gpu", temp_file("g5.yaml", card), "--length", "8K"},
      "runtime_memory: 999999999999999 bytes is more than");
  // Scenario ids are unique; a folder with no claim is not "0 passed".
  std::string claim =
      "claims:\n  - id: a\n    run: state --model qwen3-8b --length 1K\n"
      "    field: /total_bytes\n    expect: \"1\"\n";
  std::string twice = claim +
                      "  - id: a\n    run: state --model qwen3-8b --length 2K\n"
                      "    field: /total_bytes\n    expect: \"1\"\n";
  check_refused({"check", temp_file("dup.yaml", twice)},
                "id: 'a' is already the id of the claim at");
  auto empty = calc::testing::scratch_dir("calc-no-claims");
  std::filesystem::create_directories(empty);
  std::ofstream(empty / "a.yml") << claim;
  check_refused({"check", empty.string()}, "no claims");
}

TEST_CASE("review probes: knobs that were accepted and changed nothing now act") {
  // The launch line starts the engine on the formats modelled (without them an FP8 KV cache
  // costed would start as the checkpoint's BF16, half the pool).
  outcome s = run({"serve",    "--model", "llama-3.1-70b", "--gpu", "h200",
                   "--engine", "sglang",  "--tp",          "4",     "--weights",
                   "fp8",      "--kv",    "fp8",           "--isl", "1K",
                   "--osl",    "1K",      "--concurrency", "8",     "--format",
                   "json"});
  REQUIRE(s.code == 0);
  CHECK(s.out.find("--tp-size 4 --kv-cache-dtype fp8_e4m3 --quantization fp8") !=
        std::string::npos);
  outcome bare = run({"serve", "--model", "llama-3.1-70b", "--gpu", "h200", "--tp", "4", "--isl",
                      "1K", "--osl", "1K", "--concurrency", "8", "--format", "json"});
  REQUIRE(bare.code == 0);
  CHECK(bare.out.find("\"launch_flags\": \"--tensor-parallel-size 4\"") != std::string::npos);
  // Token counts take K suffixes, as every other token count does.
  outcome k =
      run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "128",
           "--concurrency", "8", "--max-num-batched-tokens", "2K", "--format", "json"});
  outcome n =
      run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "128",
           "--concurrency", "8", "--max-num-batched-tokens", "2048", "--format", "json"});
  REQUIRE(k.code == 0);
  CHECK(k.out == n.out);
  // SGLang sizes its default memory fraction's reserve by the chunked prefill size.
  auto fraction = [](const char* chunk) {
    std::vector<std::string> args = {"capacity", "--engine", "sglang",   "--model",
                                     "qwen3-8b", "--gpu",    "h100-sxm", "--max-model-len",
                                     "32K",      "--format", "json"};
    if (chunk) args.insert(args.end(), {"--chunked-prefill-size", chunk});
    return run(args).out;
  };
  CHECK(fraction(nullptr) == fraction("8192"));  // H100's default chunk
  CHECK(fraction(nullptr) != fraction("32768"));
  // A chunk whose reserve passes the card is named, not a --mem-fraction-static never typed.
  check_refused({"capacity", "--engine", "sglang", "--model", "qwen3-8b", "--gpu", "h100-sxm",
                 "--max-model-len", "8K", "--chunked-prefill-size", "64K"},
                "65536-token prefill chunk");
  // A list applies an execution path to the models that have its layers.
  CHECK(run({"compare", "--model", "deepseek-v3,llama-3.1-8b", "--mla-path", "expanded"}).code ==
        0);
  // --weights other than the bundle's, in a format the engine cannot make online, is named.
  outcome bf16 = run({"serve", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--pp", "2",
                      "--weights", "bf16", "--isl", "1K", "--osl", "1K", "--concurrency", "16",
                      "--format", "json"});
  REQUIRE(bf16.code == 0);
  CHECK(bf16.out.find("a bf16 checkpoint, the weights modelled") != std::string::npos);
}

TEST_CASE("review probes: a key given twice is refused in JSON as in YAML, and in --set") {
  check_refused({"import", temp_file("twice.json",
                                     "{\n  \"hidden_size\": 1024,\n  \"hidden_size\": 2048\n}\n")},
                ":3:1: hidden_size: given twice");
  std::string trace = temp_file(
      "twice.jsonl",
      "{\"arrival_ms\": 0, \"arrival_ms\": 5, \"input_tokens\": 8, \"output_tokens\": 4}\n");
  check_refused({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--trace", trace},
                ":1:1: arrival_ms: given twice");
  check_refused({"state", "--model", "qwen3-8b", "--length", "8K", "--set",
                 "layers.attention.kv_heads=4", "--set", "layers.attention.kv_heads=2"},
                "--set: layers.attention.kv_heads is set twice");
  // Absurd finite inputs to speculative are refused, not printed as 300-digit ratios.
  check_refused({"speculative", "--decode-ms", "20", "--round-ms", "30", "--accepted", "1e308"},
                "accepted: 1e+308 tokens a round is more than the limit");
}
