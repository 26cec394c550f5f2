// Benchmark of the discrete-event simulation loop (issue "Time under load", speed: a
// 10,000-request simulation <= 1 s). Not a test: it prints times.
// Run: build/calc_sim_bench [--benchmark_filter=REGEX]  (cases whose label the regex finds)
//
// Cases: a light Poisson load (few running), a saturated one (the request cap running, a long
// queue), one that overflows the KV pool (preemptions and recomputes), and an MoE model at TP 8
// (a costlier step function, so more of the time is the step clock's misses); then long requests
// (ISL/OSL 8K/8K: a million-odd steps of some fifty requests each) on every engine, near the
// card's throughput and beyond it, on a dense, a hybrid (linear attention + MoE) and an MLA MoE
// model; then closed loops of clients (serve --concurrency --simulate) at the same sizes.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "common/dtype.h"
#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/simulate.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"

namespace {

using namespace calc;
using namespace calc::serve;
using clock_type = std::chrono::steady_clock;

batching_config config_of(const std::string& engine, std::int64_t isl, std::int64_t osl) {
  return engine_batching(find_engine(engine), isl, osl, find_gpu("h200"));
}

/// Cases whose label (as printed: model, GPU, TP, engine, rate, ISL/OSL) the filter finds.
std::regex filter(".*");

void run_case(const calibration& cal, const std::string& name, const std::string& weights,
              const std::string& gpu_name, const serve_layout& l, const std::string& engine,
              double rate, std::int64_t isl, std::int64_t osl, std::int64_t clients = 0) {
  std::string load =
      clients > 0 ? fmt::format("{} clients", clients) : fmt::format("{:g} req/s", rate);
  std::string label =
      fmt::format("{} {} tp {} {} {} {}/{}", name, gpu_name, l.tp, engine, load, isl, osl);
  if (!std::regex_search(label, filter)) return;
  model_spec s = read_model_file(resolve_model_path(name));
  if (!weights.empty()) s.precision.set_weights(parse_dtype(weights));
  graph g = build_graph(s);
  gpu_spec gpu = find_gpu(gpu_name);
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), engine);
  deployment d = make_deployment(g, gpu, l);
  // A closed loop's requests at lengths drawn as InferenceX's client draws them (out of step).
  std::vector<arrival> arrivals = clients > 0 ? std::vector<arrival>(10'000, arrival{0, isl, osl})
                                              : poisson_arrivals(rate, 10'000, isl, osl, 1);
  if (clients > 0) draw_lengths(arrivals, 0.8, 1);
  auto start = clock_type::now();
  std::clock_t cpu_start = std::clock();
  batching_config cfg = config_of(engine, isl, osl);
  simulation sim =
      clients > 0 ? simulate_clients(d, cfg, k, clients, arrivals) : simulate(d, cfg, k, arrivals);
  // CPU time is the figure to read on a shared machine; wall time beside it.
  double t = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  double wall = std::chrono::duration<double>(clock_type::now() - start).count();
  std::printf(
      "%-52s  %.3f s CPU (%.3f wall)  %8lld steps (%4.1f %% in runs)  %6.2f us/step  %lld "
      "preemptions  TTFT p50 %.0f ms  ITL p99 %.1f ms  %s\n",
      label.c_str(), t, wall, static_cast<long long>(sim.steps),
      100.0 * static_cast<double>(sim.run_steps) / static_cast<double>(sim.steps),
      1e6 * t / static_cast<double>(sim.steps), static_cast<long long>(sim.preemptions),
      sim.ttft.p50, sim.itl.p99, t <= 1.0 ? "ok" : "OVER 1 s");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const std::string key = "--benchmark_filter=";
    if (a.rfind(key, 0) != 0) {
      std::fprintf(stderr, "usage: calc_sim_bench [--benchmark_filter=REGEX]\n");
      return 2;
    }
    filter = std::regex(a.substr(key.size()));
  }
  calibration cal = read_calibration(default_calibration_path());
  std::printf("10,000-request simulations (target <= 1 s each)\n");
  // Within capacity: a light load, and one near what the card serves.
  run_case(cal, "qwen3-8b", "", "h100-sxm", {}, "vllm", 20, 1024, 256);
  run_case(cal, "qwen3-8b", "", "h100-sxm", {}, "vllm", 3, 1024, 1024);
  run_case(cal, "qwen3-8b", "", "h100-sxm", {}, "sglang", 3, 1024, 1024);
  run_case(cal, "deepseek-v3", "fp8", "h200", {.tp = 8, .ep = 8}, "vllm", 3, 1024, 1024);
  // Overloaded (the queue grows all run long): the request cap or the KV pool full every step,
  // preemptions; the slowest the loop gets.
  run_case(cal, "qwen3-8b", "", "h100-sxm", {}, "vllm", 200, 1024, 1024);
  run_case(cal, "qwen3-8b", "", "h100-sxm", {}, "sglang", 200, 1024, 1024);
  run_case(cal, "llama-3.1-8b", "", "rtx-4090", {}, "vllm", 50, 512, 2048);
  // 8K/8K: some fifty requests of 16K tokens fill an H200's pool, so each step carries few
  // requests and a run takes over a million steps. At 0.2 req/s (about what the card serves)
  // and at 1 req/s (a queue, the pool full, preemptions).
  for (const char* engine : {"vllm", "sglang", "trtllm"})
    for (double rate : {0.2, 1.0})
      run_case(cal, "qwen3-8b", "", "h200", {}, engine, rate, 8192, 8192);
  run_case(cal, "qwen3-next-80b-a3b-thinking", "", "h200", {.tp = 2}, "vllm", 1, 8192, 8192);
  run_case(cal, "qwen3-next-80b-a3b-thinking", "", "h200", {.tp = 2}, "sglang", 1, 8192, 8192);
  run_case(cal, "deepseek-v3", "fp8", "h200", {.tp = 8, .ep = 8}, "vllm", 1, 8192, 8192);
  run_case(cal, "deepseek-v3", "fp8", "h200", {.tp = 8, .ep = 8}, "sglang", 1, 8192, 8192);
  // Closed loops (serve --concurrency --simulate): requests join as others finish.
  for (const char* engine : {"vllm", "sglang", "trtllm"})
    run_case(cal, "qwen3-8b", "", "h100-sxm", {}, engine, 0, 1024, 1024, 64);
  run_case(cal, "deepseek-v3", "fp8", "h200", {.tp = 8, .ep = 8}, "sglang", 0, 1024, 1024, 256);
  run_case(cal, "qwen3-8b", "", "h200", {}, "vllm", 0, 8192, 8192, 32);
  return 0;
}
