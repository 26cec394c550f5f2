// Benchmark of time under load (issue "Time under load", speed targets). Not a test: it prints
// rates and times, in CPU seconds of this process (the targets are CPU time; on a shared
// machine the wall clock also counts other processes) and, beside them, wall seconds.
// Run: build/calc_serve_bench
//
// - one `serve` point (deployment tallied once, then make_scenario + solve_steady_state per
//   point): target >= 10^5 points/s for Qwen3-8B, >= 10^4 for DeepSeek-V3 at TP 8;
// - `plan --sla` over every layout and concurrency of a 1T-parameter model (Kimi K2, Kimi K3):
//   <= 200 ms;
// - a 10,000-request Poisson simulation: <= 1 s.
#include <chrono>
#include <cstdio>
#include <ctime>
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

/// CPU seconds of this process and wall seconds since a start.
struct stopwatch {
  std::clock_t cpu0 = std::clock();
  std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
  double cpu() const { return static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC; }
  double wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }
};

/// vLLM's defaults on an H200, as `calc serve --engine vllm` runs them (its token budget and
/// running cap are the card's: an aggregate of engine_defaults' fields read them as 0).
batching_config vllm(std::int64_t isl, std::int64_t osl) {
  static const gpu_spec h200 = find_gpu("h200");  // read once: the catalogue is YAML
  return engine_batching(find_engine("vllm"), isl, osl, h200);
}

void points(const std::string& name, const serve_layout& l, const calibration& cal) {
  model_spec s = read_model_file(resolve_model_path(name));
  s.precision.set_weights(parse_dtype("fp8"));  // as served (DeepSeek-V3's checkpoint is FP8)
  graph g = build_graph(s);
  gpu_spec gpu = find_gpu("h200");
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
  deployment d = make_deployment(g, gpu, l);
  int n = 0;
  double sink = 0;  // TPOT summed over the first 9,000 points: equal before and after a change
  stopwatch w;
  while (w.cpu() < 1.0 || n < 9000) {
    // Every point a new shape: prompts of 1024 to 9215 tokens, concurrencies 1 to 256.
    for (std::int64_t c = 1; c <= 256; c *= 2, ++n) {
      double tpot = solve_steady_state(make_scenario(d, vllm(1024 + n % 8192, 1024), c), k).tpot_ms;
      if (n < 9000) sink += tpot;
    }
  }
  double t = w.cpu();
  std::printf(
      "serve point  %-16s tp %-2lld  %10.0f points/s CPU  (%.4f ms CPU each, %.4f ms wall; "
      "checksum %.17g)\n",
      name.c_str(), static_cast<long long>(l.tp), n / t, 1e3 * t / n, 1e3 * w.wall() / n, sink);
}

void plan(const std::string& name, const calibration& cal, const std::string& card = "h200") {
  model_spec s = read_model_file(resolve_model_path(name));
  graph g = build_graph(s);
  gpu_spec gpu = find_gpu(card);
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
  sla_request r;
  r.cfg = vllm(1024, 1024);
  r.rate = 10;
  r.ttft_ms = 2000;
  r.tpot_ms = 50;
  stopwatch w;
  sla_plan p = plan_sla(g, gpu, k, r);
  std::printf(
      "plan --sla   %-16s on %s, 10 req/s: %.1f ms CPU (%.1f ms wall), %lld layouts, %s %lld "
      "GPUs\n",
      name.c_str(), card.c_str(), 1e3 * w.cpu(), 1e3 * w.wall(),
      static_cast<long long>(p.layouts_tried), p.feasible ? "feasible" : "infeasible",
      static_cast<long long>(p.feasible ? p.best->gpus : 0));
}

void simulation_of(const std::string& name, const serve_layout& l, double rate,
                   const calibration& cal) {
  model_spec s = read_model_file(resolve_model_path(name));
  s.precision.set_weights(parse_dtype("fp8"));
  graph g = build_graph(s);
  gpu_spec gpu = find_gpu("h200");
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), "vllm");
  deployment d = make_deployment(g, gpu, l);
  auto arrivals = poisson_arrivals(rate, 10'000, 1024, 256, 1);
  stopwatch w;
  simulation sim = simulate(d, vllm(1024, 256), k, arrivals);
  std::printf(
      "simulate     %-16s tp %-2lld on h200, 10,000 requests at %g/s: %.3f s CPU (%.3f s wall), "
      "%lld steps, TTFT p50 %.1f ms, longest queue %lld\n",
      name.c_str(), static_cast<long long>(l.tp), rate, w.cpu(), w.wall(),
      static_cast<long long>(sim.steps), sim.ttft.p50, static_cast<long long>(sim.max_waiting));
}

}  // namespace

int main() {
  calibration cal = read_calibration(default_calibration_path());
  points("qwen3-8b", {}, cal);
  points("deepseek-v3", {.tp = 8, .ep = 8}, cal);
  plan("kimi-k2-instruct", cal);
  plan("kimi-k3", cal);
  // An NVL72 rack: tp x dp groups up to 64 within its NVLink domain, 7 widths more to search.
  plan("kimi-k2-instruct", cal, "gb200");
  simulation_of("qwen3-8b", {}, 20, cal);
  simulation_of("deepseek-v3", {.tp = 8, .ep = 8}, 10, cal);  // beyond its throughput: a queue
  return 0;
}
