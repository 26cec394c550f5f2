// Benchmark: how fast calc tallies (issue 10's targets; docs/performance.md records the figures).
// Run: build/calc_bench [configurations] [model]. Not a test: it prints rates and times.
//
// - configurations per second: the state of B requests at N tokens plus one decode call
//   (B, N, 1), over N spread on 1..1M and B on 1..64; closed form (state and decode series, what
//   sweeps and requests use) and the itemised tallies (what reports use), whose sums must agree;
// - a request generating 1,000,000 tokens: the closed-form tally time (compile included), and
//   the step-by-step sum over 10,000 generated tokens for comparison.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "spec/model_reader.h"
#include "tally/closed_form.h"
#include "tally/tally.h"

namespace {

using namespace calc;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::int64_t length_of(long i) { return 1 + (i * 7919) % 1'048'576; }  // spread over 1..1M
std::int64_t batch_of(long i) { return 1 + i % 64; }

/// The median of `runs` timings of f().
template <typename F>
double median_seconds(int runs, F f) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto start = clock_type::now();
    f();
    t.push_back(seconds_since(start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void bench_model(const std::string& name, long n) {
  model_spec spec = read_model_file(resolve_model_path(name));
  graph g = build_graph(spec);

  checked fast_sum = 0;
  double fast = median_seconds(5, [&] {
    closed_form cf(g);  // compiled once per model, inside the timing
    fast_sum = 0;
    for (long i = 0; i < n; ++i) {
      fast_sum += cf.state(length_of(i), batch_of(i)).total;
      fast_sum += cf.decode(batch_of(i), length_of(i)).flops;
    }
  });
  long slow_n = std::max(1L, n / 20);  // the itemised path is slower: a sample of the same points
  checked slow_sum = 0, check_sum = 0;
  double slow = median_seconds(3, [&] {
    slow_sum = 0;
    for (long i = 0; i < slow_n; ++i) {
      slow_sum += tally_state(g, length_of(i), batch_of(i)).total;
      slow_sum += tally_forward(g, make_call(spec, batch_of(i), length_of(i), 1)).flops;
    }
  });
  closed_form cf(g);
  for (long i = 0; i < slow_n; ++i) {
    check_sum += cf.state(length_of(i), batch_of(i)).total;
    check_sum += cf.decode(batch_of(i), length_of(i)).flops;
  }
  std::printf("%-22s closed form %10.0f configurations/s   itemised %9.0f/s   (%s)\n", name.c_str(),
              static_cast<double>(n) / fast, static_cast<double>(slow_n) / slow,
              check_sum == slow_sum ? "same sums" : "SUMS DIFFER");

  request_plan r;
  double request = median_seconds(21, [&] { r = plan_request(g, 0, 8, 1'000'000); });
  std::printf("%-22s request --prompt 8 --generate 1000000: %.3f ms tally (%lld decode calls)\n",
              name.c_str(), request * 1e3, static_cast<long long>(r.decode_calls));
  // The step-by-step sum (the tests' oracle, and what calc request did before) grows with G.
  request_plan slow_r;
  double stepwise = median_seconds(3, [&] { slow_r = plan_request_stepwise(g, 0, 8, 10'000); });
  request_plan fast_r = plan_request(g, 0, 8, 10'000);
  std::printf(
      "%-22s request --prompt 8 --generate 10000 step by step: %.1f ms (%s)\n", name.c_str(),
      stepwise * 1e3,
      fast_r.flops == slow_r.flops && fast_r.cumulative_read_bytes == slow_r.cumulative_read_bytes
          ? "same totals"
          : "TOTALS DIFFER");
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  std::vector<std::string> models = {"qwen3-8b", "kimi-k3", "deepseek-v4-flash",
                                     "deepseek-v4.1-flash"};
  if (argc > 2) models = {argv[2]};
  std::printf("calc_bench: %ld configurations per model (state + one decode call each), medians\n",
              n);
  for (const std::string& m : models) bench_model(m, n);
  return 0;
}
