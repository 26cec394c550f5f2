// The benchmark clients of a calibration file: read strictly, written back as read, and matched
// to a row on every condition a launch names.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "serve/calibration.h"
#include "serve/clients.h"
#include "serve_support.h"

using namespace calc;
using namespace calc::serve;
using testing::error_of;
using testing::run;
using testing::write_temp;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* kEntries =
    "entries:\n  - family: any\n    engine: any\n    gemm_compute: 0.5\n    gemm_memory: 0.8\n"
    "    moe_compute: 0.4\n    moe_memory: 0.7\n    attention_compute: 0.3\n"
    "    attention_memory: 0.6\n    comm_bandwidth: 0.5\n    collective_latency_us: 8\n"
    "    step_overhead_ms: 1.5\n    request_overhead_us: 5\n    request_latency_ms: 12\n"
    "    burst_share: 0.1\n    gemm_half_rows: 16\n";

/// A calibration file of one client whose first launch has `launch_lines` (each indented
/// eight spaces) after its engine and model; the error reading it ("" when none), with the
/// file's path in place of `$`.
std::string launch_error(const std::string& name, const std::string& launch_lines,
                         std::string* file = nullptr) {
  std::string text =
      "source: test\n"
      "clients:\n"
      "  - name: bench\n"
      "    source_prefixes: [\"run/\"]\n"
      "    source: a script\n"
      "    launches:\n"
      "      - engine: trtllm\n"
      "        model_path: org/model\n" +
      launch_lines + kEntries;
  std::string path = write_temp(name, text);
  if (file) *file = path;
  std::string e = error_of([&] { read_calibration(path); });
  if (!e.starts_with(path)) return e;
  std::string located(1, '$');
  located.append(e.begin() + static_cast<std::ptrdiff_t>(path.size()), e.end());
  return located;
}

}  // namespace

TEST_CASE("calibration clients: the shipped file is exactly what the writer writes") {
  std::string path = std::string(CALC_SOURCE_DIR) + "/models/calibration/default.yaml";
  std::string text = read_text(path);
  calibration c = read_calibration(path);
  REQUIRE(c.clients.size() == 1);
  CHECK(c.clients[0].launches.size() == 6);
  // Every source survives, so `calc calibrate` regenerating the file keeps its provenance.
  CHECK(write_calibration(c) == text);
}

TEST_CASE("calibration clients: a file without the section maps rows with the shipped clients") {
  std::string shipped =
      read_text(std::string(CALC_SOURCE_DIR) + "/models/calibration/default.yaml");
  auto from = shipped.find("clients:");
  auto to = shipped.find("expert_popularity:");
  REQUIRE(from != std::string::npos);
  REQUIRE(to > from);
  std::string without =
      write_temp("calc_clients_without.yaml", shipped.substr(0, from) + shipped.substr(to));
  std::string none = write_temp("calc_clients_none_given.yaml",
                                shipped.substr(0, from) + "clients: []\n" + shipped.substr(to));
  // An InferenceX row its launch script gave a batch wait (Llama-3.1-70B, TP 2, 1024 x 1024).
  std::string csv =
      read_text(std::string(CALC_SOURCE_DIR) + "/tests/fixtures/latency/measured.csv");
  std::string header = csv.substr(0, csv.find('\n') + 1);
  auto at = csv.find("2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp4_agg_1024x1024_c8_tp2_ep1_257,");
  REQUIRE(at != std::string::npos);
  std::string rows =
      write_temp("calc_clients_rows.csv", header + csv.substr(at, csv.find('\n', at) + 1 - at));
  auto ttft = [&](const std::vector<std::string>& more, nlohmann::json* whole = nullptr) {
    std::string out, err;
    std::vector<std::string> a = {"calibrate", "--evaluate", rows, "--format", "json"};
    a.insert(a.end(), more.begin(), more.end());
    REQUIRE(run(a, out, err) == 0);
    nlohmann::json j = nlohmann::json::parse(out);
    if (whole) *whole = j;
    return j["rows"][0]["ttft_ms"].get<double>();
  };
  nlohmann::json j;
  double own = ttft({});
  CHECK(ttft({"--calibration", without}, &j) == own);
  CHECK(j["clients_from"] == "models/calibration/default.yaml");
  // A file that names none maps the row at its nominal lengths and without the wait.
  CHECK(ttft({"--calibration", none}, &j) < own);
  CHECK_FALSE(j.contains("clients_from"));
  // A fit from the file without them writes the clients it mapped the rows with.
  std::string out, err;
  std::string fitted = write_temp("calc_clients_fitted.yaml", "");
  REQUIRE(run({"calibrate", "--measurements", rows, "--calibration", without, "--out", fitted}, out,
              err) == 0);
  CHECK(out.find("names no benchmark clients: those of models/calibration/default.yaml mapped "
                 "the rows") != std::string::npos);
  CHECK(read_calibration(fitted).clients.size() == 1);
  REQUIRE(run({"calibrate", "--measurements", rows, "--calibration", none, "--out", fitted}, out,
              err) == 0);
  CHECK(read_text(fitted).find("clients: []\n") != std::string::npos);
}

TEST_CASE("calibration clients: a launch matches on every condition it names") {
  // Three launches, the first that matches a row wins: an attention-DP balance, a batch wait
  // for one format and a band of clients, and a wait from a number of clients up.
  std::string file;
  REQUIRE(launch_error("calc_clients_ok.yaml",
                       "        system: b200_sxm\n        isl: 1024\n        tp_below: 8\n"
                       "        attention_dp: true\n"
                       "        attention_dp_balance: {timeout_iters: 60}\n"
                       "        source: its script\n"
                       "      - engine: trtllm\n        model_path: org/model\n"
                       "        gemm_quant_mode: fp8\n"
                       "        concurrency_at_least: 64\n        concurrency_below: 256\n"
                       "        batch_wait_timeout_iters: 40\n"
                       "        batch_wait_max_tokens_ratio: 0.8\n        source: its script\n"
                       "      - engine: trtllm\n        model_path: org/model\n"
                       "        concurrency_at_least: 300\n        batch_wait_timeout_iters: 7\n"
                       "        batch_wait_max_tokens_ratio: 0.5\n        source: its script\n",
                       &file) == "");
  calibration c = read_calibration(file);
  const benchmark_client* b = client_of(c.clients, "run/7");
  REQUIRE(b != nullptr);
  REQUIRE(b->launches.size() == 3);
  CHECK(b->length_low == 1);  // no length_low: nominal lengths
  const launch_row row{.engine = "trtllm",
                       .model_path = "org/model",
                       .system = "b200_sxm",
                       .gemm_quant = "fp8",
                       .isl = 1024,
                       .osl = 99,
                       .tp = 4,
                       .dp = 2,
                       .concurrency = 8};
  const benchmark_launch* l = launch_of(*b, row);
  REQUIRE(l == &b->launches[0]);
  CHECK(l->holds.adp_balance);
  CHECK(l->holds.adp_balance_timeout_iters == 60);
  CHECK(l->holds.adp_balance_batching_iters == 10);  // the engine's default where none is given
  auto with = [&](auto change) {
    launch_row r = row;
    change(r);
    return launch_of(*b, r);
  };
  // Each condition of the first alone turns it off.
  CHECK(with([](launch_row& r) { r.system = "h200_sxm"; }) == nullptr);
  CHECK(with([](launch_row& r) { r.isl = 2048; }) == nullptr);
  CHECK(with([](launch_row& r) { r.tp = 8; }) == nullptr);
  CHECK(with([](launch_row& r) { r.engine = "vllm"; }) == nullptr);
  CHECK(with([](launch_row& r) { r.model_path = "org/other"; }) == nullptr);
  // Without attention DP, the second: its format, and clients in [64, 256).
  const benchmark_launch* wait = &b->launches[1];
  CHECK(with([](launch_row& r) { r.dp = 1; }) == nullptr);  // 8 clients
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 64; }) == wait);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 255; }) == wait);
  CHECK(wait->holds.batch_wait_iters == 40);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 63; }) == nullptr);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 256; }) == nullptr);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 64, r.gemm_quant = "nvfp4"; }) ==
        nullptr);
  // The third has no upper end and names no format: any number of clients from 300.
  const benchmark_launch* many = &b->launches[2];
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 299; }) == nullptr);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 300; }) == many);
  CHECK(with([](launch_row& r) { r.dp = 1, r.concurrency = 100000, r.gemm_quant = "bf16"; }) ==
        many);
  CHECK(client_of(c.clients, "other/7") == nullptr);
  // Written back and read again, the same launches; a control character in a name survives.
  c.clients[0].name = "line\none\ttab";
  calibration back = read_calibration(write_temp("calc_clients_back.yaml", write_calibration(c)));
  REQUIRE(back.clients.size() == 1);
  CHECK(back.clients[0].name == "line\none\ttab");
  REQUIRE(back.clients[0].launches.size() == 3);
  CHECK(back.clients[0].launches[1].gemm_quant == "fp8");
  CHECK(back.clients[0].launches[1].concurrency_at_least == 64);
  CHECK(back.clients[0].launches[1].concurrency_below == 256);
  CHECK(back.clients[0].launches[2].concurrency_below == 0);
  CHECK(write_calibration(back) == write_calibration(c));
}

TEST_CASE("calibration clients: a bad launch is a located one-line error") {
  CHECK(launch_error("calc_clients_key.yaml", "        tp_bellow: 8\n        source: s\n") ==
        "$:9:9: clients[0].launches[0].tp_bellow: unknown field (did you mean 'tp_below'?)");
  CHECK(launch_error("calc_clients_ratio.yaml",
                     "        batch_wait_timeout_iters: 20\n"
                     "        batch_wait_max_tokens_ratio: 1.5\n        source: s\n") ==
        "$:10:38: clients[0].launches[0].batch_wait_max_tokens_ratio: "
        "must be a fraction in (0, 1] of the step's token budget");
  CHECK(launch_error("calc_clients_pair.yaml",
                     "        batch_wait_timeout_iters: 20\n        source: s\n")
            .find("batch_wait_max_tokens_ratio: give a fraction") != std::string::npos);
  CHECK(launch_error("calc_clients_dp.yaml",
                     "        attention_dp_balance: {timeout_iters: 60}\n        source: s\n")
            .find("give attention_dp: true") != std::string::npos);
  CHECK(launch_error("calc_clients_none.yaml", "        isl: 1024\n        source: s\n") ==
        "$:7:9: clients[0].launches[0]: sets no launch option (batch_wait_timeout_iters or "
        "attention_dp_balance)");
  CHECK(launch_error("calc_clients_src.yaml", "        isl: 1024\n")
            .find("clients[0].launches[0].source: missing required field") != std::string::npos);
  CHECK(launch_error("calc_clients_lone.yaml",
                     "        batch_wait_max_tokens_ratio: 0.9\n        source: s\n") ==
        "$:9:38: clients[0].launches[0].batch_wait_max_tokens_ratio: give "
        "batch_wait_timeout_iters (1 or more) with it");
  // TensorRT-LLM holds prompts so only without attention DP: with it, the balance does.
  CHECK(launch_error("calc_clients_wait_dp.yaml",
                     "        attention_dp: true\n        batch_wait_timeout_iters: 20\n"
                     "        batch_wait_max_tokens_ratio: 0.9\n        source: s\n")
            .starts_with("$:10:35: clients[0].launches[0].batch_wait_timeout_iters: "
                         "TensorRT-LLM holds prompts so only without attention DP"));
  CHECK(launch_error("calc_clients_system.yaml",
                     "        system: \"\"\n        isl: 1\n        source: s\n") ==
        "$:9:17: clients[0].launches[0].system: must not be empty");
  const std::string wait =
      "        batch_wait_timeout_iters: 20\n        batch_wait_max_tokens_ratio: 0.9\n"
      "        source: s\n";
  CHECK(launch_error("calc_clients_conc.yaml",
                     "        concurrency_at_least: 64\n        concurrency_below: 64\n" + wait) ==
        "$:10:28: clients[0].launches[0].concurrency_below: must be above concurrency_at_least "
        "(64)");
  CHECK(launch_error("calc_clients_below.yaml", "        concurrency_below: 1\n" + wait)
            .starts_with("$:9:28: clients[0].launches[0].concurrency_below:"));
  CHECK(launch_error("calc_clients_least.yaml", "        concurrency_at_least: 0\n" + wait)
            .starts_with("$:9:31: clients[0].launches[0].concurrency_at_least:"));
  // A band counts batch_size, one attention-DP group's clients, not a script's CONC.
  CHECK(launch_error("calc_clients_band_dp.yaml",
                     "        attention_dp: true\n        concurrency_below: 64\n"
                     "        attention_dp_balance: {}\n        source: s\n")
            .starts_with("$:10:28: clients[0].launches[0].concurrency_below: a band of clients is "
                         "read from batch_size"));
  CHECK(launch_error("calc_clients_quant.yaml",
                     "        gemm_quant_mode: \"\"\n        isl: 1\n        source: s\n") ==
        "$:9:26: clients[0].launches[0].gemm_quant_mode: must not be empty");
  CHECK(launch_error("calc_clients_tp.yaml",
                     "        tp_below: 1\n        attention_dp: true\n"
                     "        attention_dp_balance: {}\n        source: s\n")
            .find("clients[0].launches[0].tp_below") != std::string::npos);
}

TEST_CASE("calibration clients: an unknown engine, an empty prefix, a prefix another shadows") {
  auto read = [](const std::string& name, const std::string& clients) {
    std::string path = write_temp(name, "source: test\nclients:\n" + clients + kEntries);
    return std::make_pair(path, error_of([&] { read_calibration(path); }));
  };
  auto [a, ea] = read("calc_clients_engine.yaml",
                      "  - name: b\n    source_prefixes: [x]\n    source: s\n    launches:\n"
                      "      - engine: tgi\n        model_path: m\n        isl: 1\n"
                      "        batch_wait_timeout_iters: 1\n"
                      "        batch_wait_max_tokens_ratio: 0.5\n        source: s\n");
  CHECK(ea.starts_with(a + ":7:17: clients[0].launches[0].engine: unknown engine 'tgi'"));
  auto [b, eb] =
      read("calc_clients_prefix.yaml", "  - name: b\n    source_prefixes: [\"\"]\n    source: s\n");
  CHECK(eb == b + ":4:23: clients[0].source_prefixes: expected a non-empty prefix");
  auto [c, ec] = read("calc_clients_shadow.yaml",
                      "  - name: first\n    source_prefixes: [run/]\n    source: s\n"
                      "  - name: second\n    source_prefixes: [run/a]\n    source: s\n");
  CHECK(ec == c + ":7:23: clients[1].source_prefixes: 'run/a' starts with 'run/' of client "
                  "'first', which would take its rows");
  auto [n, en] = read("calc_clients_twice.yaml",
                      "  - name: b\n    source_prefixes: [x]\n    source: s\n"
                      "  - name: b\n    source_prefixes: [y]\n    source: s\n");
  CHECK(en == n + ":6:11: clients[1].name: a second client named 'b'");
  auto [v, ev] = read("calc_clients_vllm.yaml",
                      "  - name: b\n    source_prefixes: [x]\n    source: s\n    launches:\n"
                      "      - engine: vllm\n        model_path: m\n        attention_dp: true\n"
                      "        attention_dp_balance: {}\n        source: s\n");
  CHECK(ev == v + ":7:17: clients[0].launches[0].engine: 'vllm' has no attention_dp_balance: it "
                  "is TensorRT-LLM's (engine: trtllm)");
  auto [d, ed] = read("calc_clients_low.yaml",
                      "  - name: b\n    source_prefixes: [x]\n    length_low: 0\n    source: s\n");
  CHECK(ed == d + ":5:17: clients[0].length_low: must be a fraction in (0, 1]");
}
