// Benchmark of time under load (issue "Time under load", speed targets). Not a test: it prints
// rates and times. Run: build/calc_serve_bench
//
// - one `serve` point (deployment tallied once, then make_scenario + solve_steady_state per
//   point): target >= 10^5 points/s for Qwen3-8B, >= 10^4 for DeepSeek-V3 at TP 8;
// - `plan --sla` over every layout and concurrency of a 1T-parameter model (Kimi K3): <= 200 ms;
// - a 10,000-request Poisson simulation: <= 1 s.
#include <chrono>
#include <cstdio>
#include <string>

#include "common/dtype.h"
#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/simulate.h"
#include "serve/sla.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"

namespace {

using namespace calc;
using namespace calc::serve;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

batching_config vllm(std::int64_t isl, std::int64_t osl) {
  const engine_defaults& e = find_engine("vllm");
  return {isl, osl, e.max_num_batched_tokens, e.max_num_seqs, e.mixed_prefill, e.memory_fraction};
}

void points(const std::string& name, const serve_layout& l, const calibration& cal) {
  model_spec s = read_model_file(resolve_model_path(name));
  s.precision.set_weights(parse_dtype("fp8"));  // as served (DeepSeek-V3's checkpoint is FP8)
  graph g = build_graph(s);
  gpu_spec gpu = find_gpu("h200");
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
  deployment d = make_deployment(g, gpu, l);
  int n = 0;
  double sink = 0;
  auto start = clock_type::now();
  while (seconds_since(start) < 1.0) {
    for (std::int64_t c = 1; c <= 256; c *= 2, ++n)
      sink += solve_steady_state(make_scenario(d, vllm(1024 + n % 7, 1024), c), k).tpot_ms;
  }
  double t = seconds_since(start);
  std::printf("serve point  %-16s tp %-2lld  %10.0f points/s  (%.3f ms each; checksum %.3g)\n",
              name.c_str(), static_cast<long long>(l.tp), n / t, 1e3 * t / n, sink);
}

}  // namespace

int main() {
  calibration cal = read_calibration(default_calibration_path());
  points("qwen3-8b", {}, cal);
  points("deepseek-v3", {.tp = 8, .ep = 8}, cal);
  {
    model_spec s = read_model_file(resolve_model_path("kimi-k3"));
    graph g = build_graph(s);
    gpu_spec gpu = find_gpu("h200");
    const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
    sla_request r;
    r.cfg = vllm(1024, 1024);
    r.rate = 10;
    r.ttft_ms = 2000;
    r.tpot_ms = 50;
    auto start = clock_type::now();
    sla_plan p = plan_sla(g, gpu, k, r);
    std::printf("plan --sla   kimi-k3 on h200, 10 req/s: %.1f ms, %lld layouts, %s %lld GPUs\n",
                1e3 * seconds_since(start), static_cast<long long>(p.layouts_tried),
                p.feasible ? "feasible" : "infeasible",
                static_cast<long long>(p.feasible ? p.best->gpus : 0));
  }
  {
    model_spec s = read_model_file(resolve_model_path("qwen3-8b"));
    graph g = build_graph(s);
    gpu_spec gpu = find_gpu("h100-sxm");
    const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
    deployment d = make_deployment(g, gpu, {});
    auto arrivals = poisson_arrivals(20, 10'000, 1024, 256, 1);
    auto start = clock_type::now();
    simulation sim = simulate(d, vllm(1024, 256), k, arrivals);
    std::printf(
        "simulate     qwen3-8b on h100-sxm, 10,000 requests at 20/s: %.3f s, %lld steps, "
        "TTFT p50 %.1f ms\n",
        seconds_since(start), static_cast<long long>(sim.steps), sim.ttft.p50);
  }
  return 0;
}
