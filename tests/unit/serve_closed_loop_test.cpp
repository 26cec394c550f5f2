// The closed loop simulated (serve::simulate_clients, `calc serve --concurrency C --simulate`):
// C clients per attention group, each sending its next request when its last one ends, all at
// once to start. Checked against what a closed loop must do (one client runs its requests back
// to back; the engine never holds more than C requests; Little's law), what fixed lengths do to
// the opening burst (it stays in step) and what a benchmark client's drawn lengths do (they put
// it out of step), and the command's options.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/simulate.h"
#include "serve/step.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

using namespace calc;
using namespace calc::serve;
using testing::model;
using testing::run;
using testing::serve_args;

namespace {

std::vector<arrival> requests(std::int64_t n, std::int64_t isl, std::int64_t osl) {
  return std::vector<arrival>(static_cast<std::size_t>(n), arrival{0, isl, osl});
}

}  // namespace

TEST_CASE("serve closed loop: one client runs its requests back to back") {
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("h200"), {});
  batching_config cfg = engine_batching(find_engine("vllm"), 1024, 128, find_gpu("h200"));
  coefficients k;
  k.request_latency_ms = 30;
  simulation one = simulate(d, cfg, k, requests(1, 1024, 128));
  simulation loop = simulate_clients(d, cfg, k, 1, requests(5, 1024, 128));
  CHECK(loop.requests == 5);
  CHECK(loop.output_tokens == 5 * 128);
  CHECK(loop.max_waiting == 1);
  // Each request finds the engine idle, as the lone request does.
  CHECK(loop.ttft.p50 == doctest::Approx(one.ttft.mean).epsilon(1e-9));
  CHECK(loop.ttft.max == doctest::Approx(one.ttft.mean).epsilon(1e-9));
  CHECK(loop.tpot.mean == doctest::Approx(one.tpot.mean).epsilon(1e-9));
  // The client's five requests one after another, each sent when the last token of the one
  // before returns and seen by the engine request_latency_ms later: the run lasts five of its
  // lives, sends included.
  CHECK(loop.duration_ms == doctest::Approx(5 * one.e2e.mean));
  CHECK(loop.requests_per_s == doctest::Approx(1e3 / one.e2e.mean));
}

TEST_CASE("serve closed loop: C clients keep C requests in the engine, by Little's law") {
  model m("qwen3-8b");
  coefficients k;
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    CAPTURE(engine);
    for (serve_layout l : {serve_layout{}, serve_layout{.tp = 1, .dp = 2}}) {
      CAPTURE(l.dp);
      deployment d = make_deployment(m.g, find_gpu("h100-sxm"), l);
      batching_config cfg = engine_batching(find_engine(engine), 2048, 256, find_gpu("h200"));
      const std::int64_t clients = 16, rounds = 40;
      std::vector<arrival> a = requests(clients * rounds * l.dp, 2048, 256);
      draw_lengths(a, 0.8, 11);
      simulation s = simulate_clients(d, cfg, k, clients, a);
      CHECK(s.requests == clients * rounds * l.dp);
      // Never more waiting than there are clients of a group.
      CHECK(s.max_waiting <= clients);
      CHECK(s.max_waiting >= 1);
      // Throughput = clients / (time a request takes, sent to last token); the run's start
      // and end, where fewer requests are in flight, keep it a little below.
      double little = static_cast<double>(clients * l.dp) / s.e2e.mean * 1e3;
      CHECK(s.requests_per_s <= little * 1.001);
      CHECK(s.requests_per_s >= little * 0.9);
      CHECK(std::isfinite(s.ttft.max));
      CHECK(std::isfinite(s.e2e.max));
    }
  }
}

TEST_CASE("serve closed loop: fixed lengths keep the opening burst in step, drawn ones do not") {
  // Eight prompts of 1024 tokens fill one 8192-token step: with every request the same length
  // the eight that opened together finish together, send together and prefill together again,
  // round after round, so every request waits for the whole cohort's prefill step. The lengths
  // a benchmark client draws (vLLM's --random-range-ratio 0.8) put them out of step after the
  // first round: most requests then prefill alone.
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  batching_config cfg = engine_batching(find_engine("vllm"), 1024, 128, find_gpu("h200"));
  coefficients k;
  simulation one = simulate(d, cfg, k, requests(1, 1024, 128));
  simulation fixed = simulate_clients(d, cfg, k, 8, requests(80, 1024, 128));
  CHECK(fixed.ttft.p50 == doctest::Approx(fixed.ttft.max).epsilon(1e-9));
  CHECK(fixed.ttft.mean > 2 * one.ttft.mean);
  std::vector<arrival> drawn = requests(80, 1024, 128);
  draw_lengths(drawn, 0.8, 5);
  simulation spread = simulate_clients(d, cfg, k, 8, drawn);
  CHECK(spread.ttft.p50 < 0.6 * fixed.ttft.p50);
  CHECK(spread.ttft.max > 2 * spread.ttft.p50);  // the opening burst, still in the run
}

TEST_CASE("serve closed loop: drawn lengths stay in the client's range") {
  std::vector<arrival> a = requests(4000, 1000, 101);
  draw_lengths(a, 1, 3);
  for (const arrival& r : a) CHECK((r.isl == 1000 && r.osl == 101));
  draw_lengths(a, 0.8, 3);
  std::int64_t isl_sum = 0, lo = 1000, hi = 0;
  for (const arrival& r : a) {
    CHECK(r.isl >= 800);
    CHECK(r.isl <= 1000);
    CHECK(r.osl >= 80);  // floor(0.8 x 101)
    CHECK(r.osl <= 101);
    isl_sum += r.isl;
    lo = std::min(lo, r.isl);
    hi = std::max(hi, r.isl);
  }
  CHECK(lo == 800);
  CHECK(hi == 1000);
  CHECK(static_cast<double>(isl_sum) / 4000 == doctest::Approx(900).epsilon(0.01));
  std::vector<arrival> again = requests(4000, 1000, 101);
  draw_lengths(again, 0.8, 3);
  CHECK(again.front().isl == a.front().isl);
  CHECK(again.back().osl == a.back().osl);
  // One-token lengths stay at least one.
  std::vector<arrival> tiny = requests(50, 1, 1);
  draw_lengths(tiny, 0.1, 3);
  for (const arrival& r : tiny) CHECK((r.isl == 1 && r.osl == 1));
  for (double bad : {0.0, -0.5, 1.5}) {
    CAPTURE(bad);
    CHECK(testing::error_of([&] { draw_lengths(a, bad, 1); }) ==
          "range_ratio: must be a fraction in (0, 1]: lengths are drawn between ratio x the "
          "given ones and the given ones");
  }
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  CHECK(testing::error_of([&] {
          simulate_clients(d, engine_batching(find_engine("vllm"), 8, 8, find_gpu("h200")),
                           coefficients{}, 0, requests(3, 8, 8));
        }) == "concurrency: must be at least 1");
}

TEST_CASE("serve closed loop: calc serve --concurrency --simulate") {
  std::string out, err;
  auto serve = [&](std::vector<std::string> more) {
    std::vector<std::string> a = {"--isl", "1K", "--osl", "128", "--format", "json"};
    a.insert(a.end(), more.begin(), more.end());
    return run(serve_args("qwen3-8b", "h100-sxm", a), out, err);
  };
  REQUIRE(serve({"--concurrency", "2,8", "--simulate"}) == 0);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["concurrency"] == 2);
  CHECK(j["points"][0]["requests"] == 20);  // 10 x concurrency by default
  CHECK(j["points"][1]["requests"] == 80);
  CHECK(!j.contains("range_ratio"));
  for (const auto& p : j["points"]) {
    CHECK(std::isfinite(p["ttft"]["max"].get<double>()));
    CHECK(p["ttft"]["p50"].get<double>() <= p["ttft"]["p99"].get<double>());
    CHECK(p["ttft_ms"].get<double>() == p["ttft"]["mean"].get<double>());
    CHECK(p["output_tokens_per_s"].get<double>() > 0);
    CHECK(p["kv_pool_fits"] == true);
  }
  // The same seed draws the same lengths; another seed others.
  REQUIRE(serve({"--concurrency", "8", "--simulate", "--range-ratio", "0.8", "--requests", "64",
                 "--seed", "4"}) == 0);
  auto a = nlohmann::json::parse(out);
  CHECK(a["range_ratio"] == 0.8);
  CHECK(a["seed"] == 4);
  CHECK(a["points"][0]["requests"] == 64);
  CHECK(a["points"][0]["output_tokens"].get<std::int64_t>() < 64 * 128);
  REQUIRE(serve({"--concurrency", "8", "--simulate", "--range-ratio", "0.8", "--requests", "64",
                 "--seed", "4"}) == 0);
  CHECK(nlohmann::json::parse(out)["points"][0]["ttft_ms"] == a["points"][0]["ttft_ms"]);
  REQUIRE(serve({"--concurrency", "8", "--simulate", "--range-ratio", "0.8", "--requests", "64",
                 "--seed", "5"}) == 0);
  CHECK(nlohmann::json::parse(out)["points"][0]["output_tokens"] !=
        a["points"][0]["output_tokens"]);
  // Attention DP: each of the 8 groups has its clients and its requests.
  REQUIRE(run(serve_args("deepseek-v3", "h200",
                         {"--tp", "8", "--dp", "8", "--ep", "8", "--isl", "1K", "--osl", "64",
                          "--concurrency", "4", "--simulate", "--format", "json"}),
              out, err) == 0);
  auto dp = nlohmann::json::parse(out);
  CHECK(dp["points"][0]["requests"] == 10 * 4 * 8);
  CHECK(dp["points"][0]["output_tokens"] == 10 * 4 * 8 * 64);
  CHECK(dp["points"][0]["max_waiting"].get<std::int64_t>() <= 4);
  // --range-ratio draws the lengths of --rate's arrivals too.
  REQUIRE(serve({"--rate", "5", "--requests", "50", "--range-ratio", "0.5"}) == 0);
  CHECK(nlohmann::json::parse(out)["points"][0]["output_tokens"].get<std::int64_t>() < 50 * 128);
  struct refusal {
    std::vector<std::string> args;
    std::string error;
  };
  for (const refusal& r : std::vector<refusal>{
           {{"--rate", "2", "--simulate"},
            "--simulate: simulates the closed loop of each --concurrency point (--rate and "
            "--trace are simulated already)"},
           {{"--concurrency", "4", "--range-ratio", "0.8"},
            "--range-ratio: applies only with --rate or --simulate (a trace carries its lengths; "
            "the steady state costs --isl and --osl)"},
           {{"--concurrency", "4", "--simulate", "--range-ratio", "0"},
            "--range-ratio: must be a fraction in (0, 1]: each length is drawn between ratio x "
            "--isl (--osl) and --isl (--osl)"},
           {{"--concurrency", "4", "--simulate", "--range-ratio", "1.2"},
            "--range-ratio: must be a fraction in (0, 1]: each length is drawn between ratio x "
            "--isl (--osl) and --isl (--osl)"},
           {{"--concurrency", "4", "--simulate", "--seed", "3"},
            "--seed: applies only with --rate (it seeds the Poisson arrivals and any drawn "
            "lengths) or with --simulate and --range-ratio below 1 (the lengths)"},
           {{"--concurrency", "4", "--simulate", "--requests", "0"},
            "--requests: must be between 1 and 1,000,000"},
           {{"--concurrency", "1,64", "--simulate", "--requests", "10"},
            "--requests: 10 requests per attention group leave some of the 64 clients of "
            "--concurrency 64 nothing to send; give at least as many"},
           {{"--concurrency", "200000", "--simulate"},
            "--concurrency: 2000000 requests per attention group (10 x concurrency) x 1 groups "
            "is more than the 1,000,000 a simulation takes; give fewer clients, or --requests"},
           {{"--concurrency", "4", "--dp", "2", "--tp", "2", "--simulate", "--requests", "600000"},
            "--requests: 600000 requests per attention group x 2 groups is more than the "
            "1,000,000 a simulation takes; give fewer --requests"},
       }) {
    CAPTURE(r.error);
    CHECK(serve(r.args) == 2);
    CHECK(err == r.error + "\n");
  }
}

TEST_CASE("serve closed loop: calc calibrate --evaluate --simulate") {
  // The same run twice, InferenceX's client (lengths drawn in [0.8 x, 1 x]) and an unnamed
  // one (every request the nominal lengths); a row to predict only; a row too big to simulate.
  std::string rows = testing::write_temp(
      "calc_closed_loop_rows.csv",
      "id,silicon_data_source,backend,model_path,system,isl,osl,batch_size,tp_size,pp_size,"
      "gemm_quant_mode,moe_quant_mode,silicon_ttft_ms,silicon_tpot_ms\n"
      "ix,db-dump/2026-01-01,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n"
      "aic,source_file=/runs/x.csv,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n"
      "open,db-dump/2026-01-01,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,,\n"
      "huge,db-dump/2026-01-01,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,1024,30000,1,1,,,50,"
      "7\n");
  std::string out, err;
  REQUIRE(run({"calibrate", "--evaluate", rows, "--format", "json"}, out, err) == 0);
  auto steady = nlohmann::json::parse(out);
  REQUIRE(run({"calibrate", "--evaluate", rows, "--simulate", "--format", "json"}, out, err) == 0);
  auto sim = nlohmann::json::parse(out);
  CHECK(sim["predicted_by"] == "closed-loop simulation");
  CHECK(!steady.contains("predicted_by"));
  REQUIRE(sim["rows"].size() == 4);
  // Four clients at 1024 tokens share a step: the decode step is the same physics.
  CHECK(sim["rows"][0]["tpot_ms"].get<double>() ==
        doctest::Approx(steady["rows"][0]["tpot_ms"].get<double>()).epsilon(0.25));
  // At the same nominal lengths the four prompts stay in step round after round and each waits
  // for the others' prefill; drawn lengths put them out of step.
  CHECK(sim["rows"][1]["ttft_ms"].get<double>() > 1.5 * sim["rows"][0]["ttft_ms"].get<double>());
  CHECK(sim["rows"][2].contains("ttft_ms"));
  CHECK(!sim["rows"][2].contains("measured_ttft_ms"));
  CHECK(sim["rows"][3]["error"] ==
        "simulation: requests: 2.76e+08 output tokens to simulate is more than the limit of 2e8; "
        "simulate fewer requests");
  CHECK(sim["summary"]["all"]["rows"] == 2);
  CHECK(steady["summary"]["all"]["rows"] == 3);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"calibrate", "--measurements", rows, "--simulate"},
        std::vector<std::string>{"calibrate", "--evaluate", rows, "--simulate",
                                 "--cross-validate"}}) {
    CHECK(run(args, out, err) == 2);
    CHECK(err ==
          "--simulate: applies only with --evaluate, without --cross-validate: the fit and its "
          "folds cost the steady state\n");
  }
}
