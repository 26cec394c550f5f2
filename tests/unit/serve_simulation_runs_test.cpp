// The simulation's fast path (simulation_path::runs: decode-only stretches of steps taken at
// once, KV bytes from the compiled state series) against its oracle (simulation_path::stepwise:
// every step scheduled alone, KV bytes from the itemised tally_state): every figure of the
// simulation bit-for-bit equal on random workloads, engines, engine knobs and pool sizes, over
// models of every state kind (full attention, sliding windows, MLA and compressed or sparse
// attention, linear attention and Mamba hybrids, a pure recurrent model, MoE).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "serve/batching.h"
#include "serve/simulate.h"
#include "serve/step.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
using namespace calc::serve;
using testing::model;
using testing::with_pool_bytes;

namespace {

struct workload_source {
  std::mt19937_64 rng{20261202};
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  bool one_in(std::int64_t n) { return uniform(1, n) == 1; }
  /// A length: small, near a page edge, or long.
  std::int64_t length(std::int64_t most) {
    switch (uniform(0, 2)) {
      case 0:
        return uniform(1, 40);
      case 1:
        return std::max<std::int64_t>(1, 16 * uniform(1, most / 16) + uniform(-1, 1));
      default:
        return uniform(1, most);
    }
  }
  std::vector<arrival> arrivals() {
    std::int64_t n = uniform(10, 80);
    bool same = one_in(3);  // one shape for all, as --rate runs
    std::int64_t isl = length(3000), osl = length(1200);
    double gap = static_cast<double>(uniform(0, 4) == 0 ? 0 : uniform(1, 300));  // 0: a burst
    std::exponential_distribution<double> next(1.0);
    std::vector<arrival> out;
    double t = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!same) {
        isl = length(3000);
        osl = one_in(8) ? uniform(1, 2) : length(1200);
      }
      out.push_back({t, isl, osl});
      t += gap * next(rng);
    }
    return out;
  }
  batching_config config() {
    const char* names[] = {"vllm", "sglang", "trtllm"};
    batching_config c = engine_batching(find_engine(names[uniform(0, 2)]), 1, 1, find_gpu("h200"));
    if (one_in(3)) c.max_num_batched_tokens = uniform(1, 2048);
    if (one_in(3)) c.max_num_seqs = uniform(1, 48);
    if (one_in(4)) c.kv_block_tokens = std::vector<std::int64_t>{1, 16, 32, 256}[uniform(0, 3)];
    if (one_in(4)) c.preempted_kv_cached = !c.preempted_kv_cached;
    if (one_in(6)) c.mixed_prefill = !c.mixed_prefill;  // knobs no engine pairs: still equal
    return c;
  }
};

/// Every figure equal, bit for bit (doubles compared with ==).
void check_same(const simulation& fast, const simulation& slow) {
  auto same_stats = [](const latency_stats& a, const latency_stats& b) {
    return a.mean == b.mean && a.p50 == b.p50 && a.p90 == b.p90 && a.p99 == b.p99 &&
           a.max == b.max;
  };
  CHECK(same_stats(fast.ttft, slow.ttft));
  CHECK(same_stats(fast.tpot, slow.tpot));
  CHECK(same_stats(fast.itl, slow.itl));
  CHECK(same_stats(fast.e2e, slow.e2e));
  CHECK(fast.requests == slow.requests);
  CHECK(fast.duration_ms == slow.duration_ms);
  CHECK(fast.requests_per_s == slow.requests_per_s);
  CHECK(fast.output_tokens_per_s == slow.output_tokens_per_s);
  CHECK(fast.steps == slow.steps);
  CHECK(fast.max_waiting == slow.max_waiting);
  CHECK(fast.output_tokens == slow.output_tokens);
  CHECK(fast.itl_gaps == slow.itl_gaps);
  CHECK(fast.kv_pool_bytes == slow.kv_pool_bytes);
  CHECK(fast.preemptions == slow.preemptions);
  CHECK(fast.requests_preempted == slow.requests_preempted);
  CHECK(fast.recomputed_tokens == slow.recomputed_tokens);
  CHECK(fast.requests_waited_for_kv == slow.requests_waited_for_kv);
  CHECK(slow.run_steps == 0);
  // The mean step, summed step by step in the same order either way.
  CHECK(fast.step.total_ms == slow.step.total_ms);
  CHECK(fast.step.weights_ms == slow.step.weights_ms);
  CHECK(fast.step.kv_ms == slow.step.kv_ms);
  CHECK(fast.step.compute_ms == slow.step.compute_ms);
  CHECK(fast.step.communication_ms == slow.step.communication_ms);
  CHECK(fast.step.overhead_ms == slow.step.overhead_ms);
  CHECK(fast.step.op_ms == slow.step.op_ms);
}

/// `d` on a card whose KV pool holds `percent` % of the longest request of `a` (from one
/// request at a time, preempting, to most of them at once).
deployment with_pool(deployment d, const graph& g, batching_config& cfg,
                     const std::vector<arrival>& a, std::int64_t percent) {
  std::int64_t longest = 0;
  for (const arrival& r : a) longest = std::max(longest, r.isl + r.osl);
  double request = tally_state(g, longest + cfg.kv_block_tokens).total.to_double() * d.kv_share /
                   static_cast<double>(d.layout.pp);
  return with_pool_bytes(d, cfg, request * static_cast<double>(percent) / 100);
}

const coefficients& k_default() {
  static const coefficients k;
  return k;
}

}  // namespace

TEST_CASE("serve simulation: decode runs give exactly the step-by-step simulation") {
  const std::vector<std::string> names = {
      "qwen3-8b",         "gemma-2-9b",         "gpt-oss-20b",
      "qwen3-next-80b-a3b-thinking", "deepseek-v3.2", "deepseek-v4-flash",
      "nemotron-h-56b-base-8k",      "falcon-mamba-7b", "kimi-linear-48b-a3b-instruct",
      "jamba-v0.1",       "gemma-3-1b-it",      "llama-3.1-8b"};
  workload_source src;
  coefficients k;
  std::int64_t cases = 0, steps = 0, run_steps = 0, preempting = 0, waiting = 0, refused = 0;
  for (const std::string& name : names) {
    CAPTURE(name);
    model m(name);
    for (int c = 0; c < 12; ++c) {
      CAPTURE(c);
      serve_layout l;
      if (src.one_in(4)) l = {.tp = 2, .dp = 2};
      deployment d = make_deployment(m.g, find_gpu("h200"), l);
      batching_config cfg = src.config();
      std::vector<arrival> a = src.arrivals();
      // A pool for 1 to 3, or up to 30, of the longest requests (the card's memory set to fit):
      // from one request at a time, preempting, to most of them at once.
      d = with_pool(d, m.g, cfg, a, src.one_in(2) ? src.uniform(105, 300) : src.uniform(105, 3000));
      CAPTURE(cfg.kv_block_tokens);
      CAPTURE(cfg.max_num_batched_tokens);
      CAPTURE(cfg.max_num_seqs);
      CAPTURE(cfg.mixed_prefill);
      CAPTURE(static_cast<int>(cfg.kv));
      CAPTURE(a.size());
      simulation fast, slow;
      std::string fast_error, slow_error;
      try {
        fast = simulate(d, cfg, k, a, simulation_path::runs);
      } catch (const spec_error& e) {
        fast_error = e.what();
      }
      try {
        slow = simulate(d, cfg, k, a, simulation_path::stepwise);
      } catch (const spec_error& e) {
        slow_error = e.what();
      }
      CHECK(fast_error == slow_error);
      if (!slow_error.empty()) {
        ++refused;
        continue;
      }
      check_same(fast, slow);
      ++cases;
      steps += slow.steps;
      run_steps += fast.run_steps;
      if (slow.preemptions > 0) ++preempting;
      if (slow.requests_waited_for_kv > 0) ++waiting;
    }
  }
  // The comparison covered what it should: most steps in runs, pools that preempt and pools
  // that hold requests back, and few refusals.
  MESSAGE(cases, " simulations, ", steps, " steps, ", run_steps, " in decode runs, ",
          preempting, " preempting, ", waiting, " holding requests for KV, ", refused,
          " refused");
  CHECK(cases >= 120);
  CHECK(run_steps * 2 > steps);
  CHECK(preempting >= 20);
  CHECK(waiting >= 40);
}

TEST_CASE("serve simulation: decode runs stop where the queue's front would be admitted") {
  // The two admissions a run must foresee: SGLang's, whose reserve for the running requests'
  // outputs shrinks every step (the ratio falls, and outputs under 4096 left shrink by a token
  // each), so a request refused now may fit a few steps on; and vLLM's, whose preempted front
  // finds fewer of its blocks cached as the run's allocations reuse them, so with a small token
  // budget it needs more, or less, of the pool.
  workload_source src;
  coefficients k;
  std::int64_t steps = 0, run_steps = 0;
  for (const char* name : {"llama-3.1-8b", "gemma-2-9b", "qwen3-next-80b-a3b-thinking"}) {
    CAPTURE(name);
    model m(name);
    deployment base = make_deployment(m.g, find_gpu("h200"), {});
    for (int c = 0; c < 16; ++c) {
      CAPTURE(c);
      bool sglang = c % 2 == 0;
      batching_config cfg =
          engine_batching(find_engine(sglang ? "sglang" : "vllm"), 1, 1, find_gpu("h200"));
      if (!sglang) cfg.max_num_batched_tokens = src.uniform(32, 512);
      std::vector<arrival> a;
      double t = 0;
      for (std::int64_t i = 0, n = src.uniform(20, 50); i < n; ++i) {
        a.push_back({t, src.uniform(100, 2500),
                     sglang ? src.uniform(1500, 4000) : src.uniform(100, 1500)});
        t += static_cast<double>(src.uniform(0, 400));
      }
      std::int64_t longest = 0;
      for (const arrival& r : a) longest = std::max(longest, r.isl + r.osl);
      deployment d = base;
      double request = tally_state(m.g, longest + 16).total.to_double() * d.kv_share;
      d = with_pool_bytes(d, cfg, request * static_cast<double>(src.uniform(105, 500)) / 100);
      simulation fast = simulate(d, cfg, k, a, simulation_path::runs);
      simulation slow = simulate(d, cfg, k, a, simulation_path::stepwise);
      check_same(fast, slow);
      steps += slow.steps;
      run_steps += fast.run_steps;
    }
  }
  CHECK(run_steps * 2 > steps);
}

TEST_CASE("serve simulation: a request SGLang refuses, then admits as its reserve falls") {
  // Two requests decode; a third waits for the pool less new_token_ratio of everyone's outputs
  // still to write. The ratio falls each step from 0.7 and each output under 4096 shrinks by a
  // token, faster than the two requests' growth takes the pool: at some pools the third is
  // admitted in the middle of a stretch of decode steps, which a run must stop before.
  model m("llama-3.1-8b");
  deployment base = make_deployment(m.g, find_gpu("h200"), {});
  batching_config cfg = engine_batching(find_engine("sglang"), 1, 1, find_gpu("h200"));
  std::vector<arrival> a = {{0, 200, 3000}, {0, 200, 3000}, {0, 200, 3000}};
  double request = tally_state(m.g, 3200).total.to_double();
  std::int64_t admitted_in_decode = 0;
  for (int step = 0; step <= 36; ++step) {
    CAPTURE(step);
    deployment d = base;
    d = with_pool_bytes(d, cfg, request * (1.2 + 0.05 * step));
    simulation fast = simulate(d, cfg, k_default(), a, simulation_path::runs);
    simulation slow = simulate(d, cfg, k_default(), a, simulation_path::stepwise);
    check_same(fast, slow);
    // The third's first token came neither with the others' nor after one finished.
    if (slow.ttft.max > slow.ttft.p50 * 3 && slow.ttft.max < slow.e2e.p50 * 0.9) ++admitted_in_decode;
  }
  MESSAGE(admitted_in_decode, " pools admit the third request mid-decode");
  CHECK(admitted_in_decode > 0);
}

TEST_CASE("serve simulation: a long run at 8K/8K takes most steps in decode runs, same figures") {
  // Qwen3-8B on an H200 at 8K/8K: some fifty requests fill the pool; vLLM preempts.
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h200"), {});
  coefficients k;
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    CAPTURE(e);
    batching_config cfg = engine_batching(find_engine(e), 8192, 8192, find_gpu("h200"));
    std::vector<arrival> a = poisson_arrivals(1, 150, 8192, 8192, 3);
    simulation fast = simulate(d, cfg, k, a, simulation_path::runs);
    simulation slow = simulate(d, cfg, k, a, simulation_path::stepwise);
    check_same(fast, slow);
    CHECK(fast.run_steps * 10 > fast.steps * 9);
  }
}

TEST_CASE("serve simulation: a closed loop's decode runs give exactly the step-by-step one") {
  // Requests join as others finish (simulate_clients): a run ends at a finish, and the request
  // it sends arrives request_latency_ms later, while a run may be under way.
  workload_source src;
  coefficients k;
  std::int64_t cases = 0, steps = 0, run_steps = 0, preempting = 0;
  for (const char* name :
       {"llama-3.1-8b", "gpt-oss-20b", "qwen3-next-80b-a3b-thinking", "deepseek-v3.2"}) {
    CAPTURE(name);
    model m(name);
    for (int c = 0; c < 8; ++c) {
      CAPTURE(c);
      serve_layout l;
      if (src.one_in(4)) l = {.tp = 2, .dp = 2};
      deployment d = make_deployment(m.g, find_gpu("h200"), l);
      batching_config cfg = src.config();
      k.request_latency_ms = static_cast<double>(src.uniform(0, 60));
      std::vector<arrival> a = src.arrivals();
      std::int64_t clients = src.uniform(1, 12);
      d = with_pool(d, m.g, cfg, a, src.uniform(105, 800));
      CAPTURE(clients);
      CAPTURE(a.size());
      simulation fast, slow;
      std::string fast_error, slow_error;
      try {
        fast = simulate_clients(d, cfg, k, clients, a, simulation_path::runs);
      } catch (const spec_error& e) {
        fast_error = e.what();
      }
      try {
        slow = simulate_clients(d, cfg, k, clients, a, simulation_path::stepwise);
      } catch (const spec_error& e) {
        slow_error = e.what();
      }
      CHECK(fast_error == slow_error);
      if (!slow_error.empty()) continue;
      check_same(fast, slow);
      CHECK(slow.max_waiting <= clients);
      ++cases;
      steps += slow.steps;
      run_steps += fast.run_steps;
      if (slow.preemptions > 0) ++preempting;
    }
  }
  CHECK(cases >= 24);
  CHECK(run_steps * 2 > steps);
  CHECK(preempting >= 2);
}
