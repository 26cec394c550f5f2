// The discrete-event simulation (src/serve/simulate.h) against what the engines do when the KV
// pool runs out (vLLM preempts the newest running request, SGLang retracts, TensorRT-LLM holds
// requests back), its conservation laws (every request finishes, tokens returned = tokens
// asked for), ITL as a per-token distribution apart from per-request TPOT, and bad input that
// must end in one clear line rather than a hang.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/simulate.h"
#include "serve/step.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
using testing::error_of;
using testing::run;
using testing::with_pool_bytes;
using testing::write_temp;
using namespace calc::serve;
using testing::model;

namespace {

batching_config engine_config(const std::string& name, std::int64_t isl, std::int64_t osl) {
  return engine_batching(find_engine(name), isl, osl, find_gpu("h200"));
}

/// `n` requests arriving together.
std::vector<arrival> burst(std::int64_t n, std::int64_t isl, std::int64_t osl) {
  return std::vector<arrival>(static_cast<std::size_t>(n), arrival{0, isl, osl});
}

/// Every request finished and returned exactly its tokens; ITL has one gap per token after a
/// request's first.
void check_conservation(const simulation& s, const std::vector<arrival>& a) {
  std::int64_t tokens = 0, gaps = 0;
  for (const arrival& r : a) {
    tokens += r.osl;
    gaps += r.osl - 1;
  }
  CHECK(s.requests == static_cast<std::int64_t>(a.size()));
  CHECK(s.output_tokens == tokens);
  CHECK(s.itl_gaps == gaps);
  CHECK(s.itl.p50 <= s.itl.p90);
  CHECK(s.itl.p90 <= s.itl.p99);
  CHECK(s.ttft.mean > 0);
  CHECK(s.e2e.mean >= s.ttft.mean);
}

}  // namespace

TEST_CASE("serve simulation: a workload that overflows the KV pool preempts; one that fits never") {
  // Llama-3.1-8B in BF16 on a 24 GB card leaves a pool of about 40K tokens of 128 KiB.
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("rtx-4090"), {});
  coefficients k;
  double per_token = tally_state(m.g, 1024).total.to_double() / 1024;
  double pool = kv_pool_bytes(d, engine_config("vllm", 512, 2048));
  REQUIRE(pool / per_token > 20'000);
  REQUIRE(pool / per_token < 80'000);

  // 64 requests of 512 + 2048 tokens need 160K tokens at the end: more than the pool.
  std::vector<arrival> big = burst(64, 512, 2048);
  simulation v = simulate(d, engine_config("vllm", 512, 2048), k, big);
  check_conservation(v, big);
  CHECK(v.preemptions > 0);
  CHECK(v.requests_preempted > 0);
  CHECK(v.requests_preempted <= v.preemptions);
  CHECK(v.recomputed_tokens >= 0);
  // Without vLLM's prefix cache a resume prefills at least its prompt again; with it, only the
  // blocks reused meanwhile.
  batching_config no_cache = engine_config("vllm", 512, 2048);
  no_cache.preempted_kv_cached = false;
  simulation nc = simulate(d, no_cache, k, big);
  check_conservation(nc, big);
  CHECK(nc.preemptions > 0);
  CHECK(nc.recomputed_tokens >= 512 * nc.requests_preempted);
  CHECK(v.recomputed_tokens < nc.recomputed_tokens);
  CHECK(v.kv_limited());
  // A preempted request's next token waits for its whole recompute: the ITL tail shows it,
  // far beyond the median gap.
  // The stalls are few among 130K gaps, beyond p99: the longest gap and the mean show them.
  CHECK(v.itl.max > 20 * v.itl.p50);
  CHECK(v.itl.mean > 1.2 * v.itl.p50);
  CHECK(v.kv_pool_bytes == doctest::Approx(pool));

  // SGLang retracts instead; the same laws hold.
  simulation s = simulate(d, engine_config("sglang", 512, 2048), k, big);
  check_conservation(s, big);
  CHECK(s.preemptions > 0);

  // TensorRT-LLM reserves every request whole: it never preempts, it holds requests back.
  simulation t = simulate(d, engine_config("trtllm", 512, 2048), k, big);
  check_conservation(t, big);
  CHECK(t.preemptions == 0);
  CHECK(t.requests_waited_for_kv > 0);
  CHECK(t.kv_limited());

  // 8 requests of 512 + 256 tokens fit many times over: no waiting, no preemption.
  std::vector<arrival> small = burst(8, 512, 256);
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    CAPTURE(e);
    simulation f = simulate(d, engine_config(e, 512, 256), k, small);
    check_conservation(f, small);
    CHECK(f.preemptions == 0);
    CHECK(f.requests_waited_for_kv == 0);
    CHECK_FALSE(f.kv_limited());
  }
}

TEST_CASE("serve engines: each engine pages KV at its documented page size") {
  CHECK(find_engine("vllm").kv_block_tokens == 16);    // block_size
  CHECK(find_engine("sglang").kv_block_tokens == 1);   // page_size
  CHECK(find_engine("trtllm").kv_block_tokens == 32);  // tokens_per_block
  CHECK(engine_batching(find_engine("trtllm"), 8, 8, find_gpu("h200")).kv_block_tokens == 32);
  // The simulation holds KV in whole pages: one page larger than the pool (5.5 GB on an RTX
  // 4090, 128 KiB a token of Llama-3.1-8B) cannot hold even one 2,560-token request.
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("rtx-4090"), {});
  std::vector<arrival> a = burst(4, 512, 2048);
  batching_config fine = engine_config("vllm", 512, 2048);
  batching_config coarse = fine;
  coarse.kv_block_tokens = 65536;
  CHECK(simulate(d, fine, coefficients{}, a).requests == 4);
  CHECK_THROWS_AS(simulate(d, coarse, coefficients{}, a), spec_error);
}

TEST_CASE("serve simulation: more KV never preempts more; a bigger card removes preemption") {
  model m("llama-3.1-8b");
  coefficients k;
  std::vector<arrival> a = burst(64, 512, 2048);
  simulation small = simulate(make_deployment(m.g, find_gpu("rtx-4090"), {}),
                              engine_config("vllm", 512, 2048), k, a);
  simulation big =
      simulate(make_deployment(m.g, find_gpu("h200"), {}), engine_config("vllm", 512, 2048), k, a);
  CHECK(small.preemptions > 0);
  CHECK(big.preemptions == 0);
  CHECK(big.requests_waited_for_kv == 0);
  check_conservation(big, a);
}

TEST_CASE("serve simulation: mixed lengths over dp groups, every engine, conserve tokens") {
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("l40s"), {.tp = 1, .dp = 2});
  coefficients k;
  std::vector<arrival> a;
  for (int i = 0; i < 300; ++i)  // prompts 1 to 8K, answers 1 to 3K, arriving over 3 s
    a.push_back(
        {static_cast<double>(i % 97) * 31.0, 1 + (i * 7919) % 8192, 1 + (i * 104729) % 3000});
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    CAPTURE(e);
    simulation s = simulate(d, engine_config(e, 1, 1), k, a);
    check_conservation(s, a);
    CHECK(s.kv_limited());  // 300 such requests at once overflow two 48 GB cards
    if (std::string(e) == "trtllm") CHECK(s.preemptions == 0);
  }
}

TEST_CASE("serve simulation: at a pool exactly one request's size SGLang refuses, vLLM admits") {
  // SGLang admits while its ask stays below what is free (`total_tokens >= rem_total_tokens`
  // refuses); vLLM while the blocks asked do not exceed the free ones. A pool of exactly the
  // request's whole pages tells the two apart; one byte more admits both.
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("h200"), {});
  std::int64_t weights = static_cast<std::int64_t>(d.weight_bytes_per_rank);
  REQUIRE(static_cast<double>(weights) == d.weight_bytes_per_rank);
  std::int64_t need = tally_state(m.g, 256).total.value();  // 200 + 56: 16 whole pages
  for (const char* e : {"sglang", "vllm"}) {
    for (std::int64_t extra : {std::int64_t{0}, std::int64_t{1}}) {
      CAPTURE(e);
      CAPTURE(extra);
      batching_config cfg = engine_config(e, 200, 56);
      cfg.memory_fraction = 1;
      cfg.fraction_of_free = false;
      cfg.budget_engine = nullptr;  // the pool is the card less the weights, to the byte
      deployment x = d;
      x.gpu.memory = weights + need + extra;
      x.gpu.runtime_memory = 0;
      REQUIRE(kv_pool_bytes(x, cfg) == static_cast<double>(need + extra));
      for (simulation_path path : {simulation_path::runs, simulation_path::stepwise}) {
        std::string err = error_of([&] { simulate(x, cfg, coefficients{}, {{0, 200, 56}}, path); });
        bool refused = std::string(e) == "sglang" && extra == 0;
        CHECK(err.empty() == !refused);
        if (refused) CHECK(err.find("the pool holds") != std::string::npos);
      }
    }
  }
}

TEST_CASE("serve simulation: a request the pool cannot hold alone is refused, not looped on") {
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("rtx-4090"), {});
  std::string e = error_of([&] {
    simulate(d, engine_config("vllm", 200'000, 10), coefficients{}, burst(2, 200'000, 10));
  });
  CHECK(e.rfind("input_tokens: a request of 200000 + 10 tokens needs ", 0) == 0);
  CHECK(e.find("the engine would refuse it") != std::string::npos);
  CHECK(error_of([&] {
          simulate(d, engine_config("vllm", 1, 1), coefficients{}, {{0, 1, 0}});
        }) == "output_tokens: a request returns at least one token");
}

TEST_CASE("serve simulation: SGLang prefills a prompt far past its chunk budget, asking KV whole") {
  // Qwen3-8B on a 24 GB card holds one 20,000 + 500 token request but not two. SGLang admits a
  // request only when the pool holds its whole prompt and its outputs (PrefillAdder.add_one_req
  // counts extend_input_len before chunking), so the second waits for the first rather than
  // taking a 300-token chunk at a time until the pool runs dry. Before, calc admitted it by its
  // chunk; the two then retracted and re-admitted the second forever (the prefill batch always
  // ran first, so the first never decoded): "the simulation stopped making progress".
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("rtx-4090"), {});
  batching_config cfg = engine_config("sglang", 20'000, 500);
  cfg.max_num_batched_tokens = 300;
  cfg.max_num_seqs = 8;
  double one = tally_state(m.g, 20'500).total.to_double() * d.kv_share;
  double pool = kv_pool_bytes(d, cfg);
  REQUIRE(pool > one);
  REQUIRE(pool < 2 * one);
  std::vector<arrival> a = burst(2, 20'000, 500);
  simulation s = simulate(d, cfg, coefficients{}, a);
  check_conservation(s, a);
  CHECK(s.preemptions == 0);
  CHECK(s.requests_waited_for_kv == 1);
  // The second's first token comes after the first's last: it waited for the whole pool.
  CHECK(s.ttft.max > s.e2e.p50);  // p50 of two: the first's
  // The command of the report, as a user runs it.
  std::string out, err;
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--engine", "sglang", "--isl",
             "20000", "--osl", "500", "--rate", "1", "--requests", "2",
             "--max-num-batched-tokens", "300", "--max-num-seqs", "8", "--format", "json"},
            out, err) == 0);
  CHECK(err.empty());
  auto j = nlohmann::json::parse(out);
  CHECK(j["points"][0]["output_tokens"] == 1000);
  // Two that fit together are admitted together, chunk by chunk: nobody waits.
  std::vector<arrival> short_ones = burst(2, 8'000, 500);
  simulation t = simulate(d, cfg, coefficients{}, short_ones);
  check_conservation(t, short_ones);
  CHECK(t.preemptions == 0);
  CHECK(t.requests_waited_for_kv == 0);
}

TEST_CASE("serve simulation: long prompts, tiny budgets, small cards: a result or one clear line") {
  // The neighbourhood of the case above, every engine: prompts of many chunks (budgets from one
  // token), near and past what the pool holds, outputs short and long, requests together or
  // apart, on cards that hold the weights with little room or none. Each either runs every
  // request to its end or is refused in one line naming the input at fault, never the internal
  // "stopped making progress".
  std::int64_t ran = 0, refused = 0, waited = 0, preempted = 0;
  auto one = [&](const deployment& d, const batching_config& cfg, const std::vector<arrival>& a) {
    std::string error = error_of([&] {
      simulation s = simulate(d, cfg, coefficients{}, a);
      check_conservation(s, a);
      if (s.requests_waited_for_kv > 0) ++waited;
      if (s.preemptions > 0) ++preempted;
      ++ran;
    });
    if (error.empty()) return;
    ++refused;
    CHECK_MESSAGE(error.find("internal error") == std::string::npos, error);
    CHECK_MESSAGE(error.find('\n') == std::string::npos, error);
    CHECK_MESSAGE((error.rfind("input_tokens: a request of ", 0) == 0 ||
                   error.rfind("gpu: no KV pool is left on ", 0) == 0),
                  error);
  };
  model m("qwen3-8b");
  for (const char* gpu : {"rtx-4090", "l4", "t4"}) {
    deployment d = make_deployment(m.g, find_gpu(gpu), {});
    for (const char* e : {"vllm", "sglang", "trtllm"})
      for (std::int64_t budget : {1, 16, 300})
        for (std::int64_t isl : {3'000, 20'000, 60'000})
          for (std::int64_t osl : {1, 500, 6'000})
            for (double gap : {0.0, 400.0}) {
              if (budget == 1 && isl > 3'000) continue;  // time: 16 tokens covers the long ones
              CAPTURE(gpu);
              CAPTURE(e);
              CAPTURE(budget);
              CAPTURE(isl);
              CAPTURE(osl);
              CAPTURE(gap);
              batching_config cfg = engine_config(e, isl, osl);
              cfg.max_num_batched_tokens = budget;
              cfg.max_num_seqs = 8;
              // One long prompt among short ones, then the long one again.
              std::vector<arrival> a = {{0, isl, osl}, {gap, 700, 300}, {2 * gap, isl, osl}};
              one(d, cfg, a);
            }
  }
  // Random workloads on pools sized around the longest request (0.9 to 4 of it), with the
  // knobs no engine pairs too (prefill apart under vLLM's preemption, and the reverse).
  std::mt19937_64 rng(20261202);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (const char* name : {"gemma-2-9b", "gpt-oss-20b", "jamba-v0.1"}) {
    model r(name);
    for (int c = 0; c < 40; ++c) {
      CAPTURE(name);
      CAPTURE(c);
      const char* engines[] = {"vllm", "sglang", "trtllm"};
      batching_config cfg = engine_config(engines[uniform(0, 2)], 1, 1);
      cfg.max_num_batched_tokens = uniform(0, 1) ? uniform(1, 8) : uniform(9, 2000);
      cfg.max_num_seqs = uniform(1, 40);
      if (uniform(0, 3) == 0) cfg.mixed_prefill = !cfg.mixed_prefill;
      if (uniform(0, 3) == 0) cfg.preempted_kv_cached = !cfg.preempted_kv_cached;
      std::int64_t longest_isl = uniform(1000, 30'000);
      std::vector<arrival> a;
      double t = 0;
      for (std::int64_t i = 0, n = uniform(2, 30); i < n; ++i) {
        a.push_back({t, uniform(0, 2) == 0 ? longest_isl : uniform(1, longest_isl),
                     uniform(0, 3) == 0 ? uniform(1, 3) : uniform(1, 6000)});
        t += uniform(0, 2) == 0 ? 0 : static_cast<double>(uniform(1, 3000));
      }
      std::int64_t longest = 0;
      for (const arrival& x : a) longest = std::max(longest, x.isl + x.osl);
      deployment d = make_deployment(r.g, find_gpu("h200"), {});
      double request = tally_state(r.g, longest + cfg.kv_block_tokens).total.to_double() *
                       d.kv_share;
      d = with_pool_bytes(d, cfg, request * static_cast<double>(uniform(90, 400)) / 100);
      one(d, cfg, a);
    }
  }
  MESSAGE(ran, " ran (", waited, " holding requests for KV, ", preempted, " preempting), ",
          refused, " refused");
  CHECK(ran > 200);
  CHECK(refused > 20);
  CHECK(waited > 50);
  CHECK(preempted > 20);
}

TEST_CASE("serve simulation: ITL is per token, TPOT per request") {
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  coefficients k;
  // One request alone: every gap is one decode step, so ITL and TPOT agree.
  std::vector<arrival> one = burst(1, 1024, 64);
  simulation s = simulate(d, engine_config("vllm", 1024, 64), k, one);
  check_conservation(s, one);
  CHECK(s.itl.mean == doctest::Approx(s.tpot.mean).epsilon(1e-9));
  CHECK(s.itl.p99 == doctest::Approx(s.itl.p50).epsilon(0.05));
  // Requests that arrive while others decode: their prefill chunks stretch the others' steps,
  // which the ITL tail shows while the per-request mean smooths it.
  std::vector<arrival> a = poisson_arrivals(20, 400, 4096, 256, 11);
  simulation busy = simulate(d, engine_config("vllm", 4096, 256), k, a);
  check_conservation(busy, a);
  CHECK(busy.itl.p99 > 1.5 * busy.itl.p50);
  CHECK(busy.itl.p99 > busy.tpot.p99);
  // Token-weighted: with equal OSL the ITL mean equals the TPOT mean.
  CHECK(busy.itl.mean == doctest::Approx(busy.tpot.mean).epsilon(1e-6));
}

TEST_CASE("serve steady state: ITL mean is TPOT, its tail the steps that carry a prefill chunk") {
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  coefficients k;
  for (const char* e : {"vllm", "sglang"}) {
    CAPTURE(e);
    scenario sc = make_scenario(d, engine_config(e, 2048, 256), 64);
    steady_state st = solve_steady_state(sc, k);
    latency_stats itl = steady_itl(sc, st, k);
    CHECK(st.prefill_busy > 0);
    CHECK(itl.mean == doctest::Approx(st.tpot_ms).epsilon(1e-12));
    CHECK(itl.p50 <= itl.mean);
    CHECK(itl.p99 > itl.mean);
    CHECK(itl.p50 <= itl.p90);
    CHECK(itl.p90 <= itl.p99);
  }
}

TEST_CASE("serve simulation from the command line: preemption fields, bad input exits 2") {
  std::string out, err;
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--isl", "512", "--osl",
               "2048", "--rate", "1000", "--requests", "64", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  auto p = j["points"][0];
  for (const char* key : {"preemptions", "requests_preempted", "recomputed_tokens",
                          "requests_waited_for_kv", "kv_pool_bytes", "output_tokens", "itl"})
    CHECK_MESSAGE(p.contains(key), key);
  CHECK(p["preemptions"].get<std::int64_t>() > 0);
  CHECK(p["kv_pool_fits"] == false);
  CHECK(p["output_tokens"] == 64 * 2048);
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--isl", "512", "--osl",
               "2048", "--rate", "1000", "--requests", "64"},
              out, err) == 0);
  CHECK(out.find("preemptions (") != std::string::npos);
  // The steady state gives ITL percentiles too.
  REQUIRE(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "2K", "--osl", "256",
               "--concurrency", "64", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["points"][0]["itl"]["p99"].get<double>() > j["points"][0]["itl"]["p50"].get<double>());
  CHECK(j["points"][0]["itl_ms"].get<double>() ==
        doctest::Approx(j["points"][0]["tpot_ms"].get<double>()));

  // Bad input: a malformed trace line is file:line, exit 2.
  std::string trace = write_temp("calc_sim_bad.jsonl",
                                 "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 5}\n"
                                 "{\"arrival_ms\": 3, \"input_tokens\": 10}\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--trace", trace}, out, err) ==
        2);
  CHECK(err == trace + ":2:1: output_tokens: missing or not a number\n");
  std::string zero = write_temp(
      "calc_sim_zero.jsonl", "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 0}\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--trace", zero}, out, err) == 2);
  CHECK(err == zero + ":1:1: output_tokens: must be a number >= 1\n");
  std::string empty = write_temp("calc_sim_empty.jsonl", "\n\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--trace", empty}, out, err) ==
        2);
  CHECK(err == empty + ":2:1: trace: no requests\n");
  // Absurd rates and counts: one line, exit 2.
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "1K",
             "--rate", "1e9"},
            out, err) == 2);
  CHECK(err == "--rate: 1000000000 requests/s is beyond 10^7\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "1K",
             "--rate", "-3"},
            out, err) == 2);
  CHECK(err == "--rate: -3 is not a positive number of requests per second\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "1K",
             "--rate", "5", "--requests", "0"},
            out, err) == 2);
  CHECK(err == "--requests: must be between 1 and 1,000,000\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "0",
             "--rate", "5"},
            out, err) == 2);
  CHECK(err == "--osl: must be at least 1, got 0\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--rate", "5"},
            out, err) == 2);
  CHECK(err == "--osl: is required: give a count of tokens, e.g. 1024 or 8K\n");
  // Work beyond what a simulation should take: refused up front, never a run of minutes.
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "64K",
             "--rate", "5", "--requests", "20000"},
            out, err) == 2);
  CHECK(err.rfind("--requests: 1.31e+09 output tokens to simulate is more than the limit", 0) == 0);
  // A token budget so small that the prompts alone take 10^8 steps: refused up front too.
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "100K", "--osl", "8",
             "--rate", "5", "--requests", "1000", "--max-num-batched-tokens", "1", "--max-num-seqs",
             "1"},
            out, err) == 2);
  CHECK(err ==
        "--max-num-batched-tokens: 1.02e+08 prefill steps to simulate is more than the limit of "
        "1e7; raise the token budget or simulate fewer requests\n");
  // vLLM refuses a budget below its running cap: so does calc, naming both.
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "8",
             "--concurrency", "4", "--max-num-batched-tokens", "512"},
            out, err) == 2);
  CHECK(err.rfind("--max-num-batched-tokens: 512 is below --max-num-seqs 1024 (vLLM's default "
                  "on h100-sxm)",
                  0) == 0);
  // On an A100 the default budget is 2048: a typed cap above it is refused with both named.
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "a100-80gb", "--isl", "1K", "--osl", "8",
             "--concurrency", "4", "--max-num-seqs", "4096"},
            out, err) == 2);
  CHECK(err.rfind("--max-num-batched-tokens: 2048 (vLLM's default on a100-80gb) is below "
                  "--max-num-seqs 4096: vLLM refuses to start",
                  0) == 0);
  // The knobs typed are in the launch line, in each engine's spelling.
  REQUIRE(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "8",
               "--concurrency", "4", "--max-num-batched-tokens", "2048", "--max-num-seqs", "256",
               "--format", "json"},
              out, err) == 0);
  CHECK(nlohmann::json::parse(out)["launch_flags"] ==
        "--tensor-parallel-size 1 --max-num-batched-tokens 2048 --max-num-seqs 256");
  REQUIRE(
      run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--isl", "1K",
           "--osl", "8", "--concurrency", "4", "--max-num-seqs", "64", "--format", "json"},
          out, err) == 0);
  CHECK(nlohmann::json::parse(out)["launch_flags"] == "--tp-size 1 --max-running-requests 64");
  // A huge rate of a few requests is a burst: it runs, quickly.
  auto start = std::chrono::steady_clock::now();
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "64",
             "--rate", "1e7", "--requests", "500"},
            out, err) == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));

  // An SLA below the physical bound: infeasible, the binding target named, at once.
  start = std::chrono::steady_clock::now();
  REQUIRE(run({"plan", "--sla", "ttft=0.01,tpot=0.01", "--rate", "2", "--isl", "1024", "--osl",
               "256", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["feasible"] == false);
  CHECK(j["binding"] == "tpot");
  CHECK(j["reason"].get<std::string>().rfind("tpot 0.01 ms is below the fastest step", 0) == 0);
  // An absurd rate: refused in one line.
  CHECK(run({"plan", "--sla", "ttft=2000,tpot=50", "--rate", "1e9", "--isl", "1024", "--osl", "256",
             "--model", "qwen3-8b", "--gpu", "h100-sxm"},
            out, err) == 2);
  CHECK(err == "--rate: beyond 10^7 requests/s\n");
  // A rate past every GPU allowed: infeasible, the GPUs named as the binding constraint.
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=50", "--rate", "1e6", "--isl", "1024", "--osl",
               "256", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["feasible"] == false);
  CHECK(j["binding"] == "gpus");
  // It says how many GPUs would meet the targets, here more than calc plans at all ...
  std::string why = j["reason"].get<std::string>();
  CHECK(why.rfind("the load needs more than --max-gpus 512 GPUs: ", 0) == 0);
  CHECK(why.find("more than calc plans (4096 cards)") != std::string::npos);
  // ... and where that is within reach, raising --max-gpus to it plans them (or fewer, with the
  // wider instances it then also searches).
  REQUIRE(
      run({"plan", "--sla", "ttft=2000,tpot=50", "--rate", "300", "--isl", "1024", "--osl", "256",
           "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-gpus", "2", "--format", "json"},
          out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["binding"] == "gpus");
  why = j["reason"].get<std::string>();
  auto at = why.find(": ");
  REQUIRE(at != std::string::npos);
  std::int64_t needed = std::stoll(why.substr(at + 2));
  CHECK(needed > 2);
  CHECK(why.find("raise --max-gpus to plan them") != std::string::npos);
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=50", "--rate", "300", "--isl", "1024", "--osl",
               "256", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-gpus",
               std::to_string(needed), "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["feasible"] == true);
  CHECK(j["gpus"].get<std::int64_t>() <= needed);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("serve --rate: a request the pool cannot hold is refused at --isl, a trace's at its line") {
  std::string out, err;
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "l4", "--engine", "vllm", "--isl", "40000",
             "--osl", "500", "--rate", "1", "--requests", "2"},
            out, err) == 2);
  CHECK(err.rfind("--isl: a request of 40000 + 500 tokens needs ", 0) == 0);
  std::string trace = write_temp("calc_serve_long_trace.jsonl",
                                 "{\"arrival_ms\": 0, \"input_tokens\": 40000, "
                                 "\"output_tokens\": 500}\n");
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "l4", "--engine", "vllm", "--trace", trace},
            out, err) == 2);
  CHECK(err.rfind(trace + ":1:1: input_tokens: a request of 40000 + 500 tokens needs ", 0) == 0);
}
