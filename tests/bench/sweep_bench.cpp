// Benchmark: how fast calc sweeps configurations (state and one decode call per configuration).
// Run: build/calc_bench [configurations] [model]. Prints configurations per second; not a test.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/graph.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

int main(int argc, char** argv) {
  using namespace calc;
  long n = argc > 1 ? std::atol(argv[1]) : 100'000;
  std::string name = argc > 2 ? argv[2] : "qwen3-8b";
  model_spec spec = read_model_file(resolve_model_path(name));
  graph g = build_graph(spec);

  auto start = std::chrono::steady_clock::now();
  checked sink = 0;
  for (long i = 0; i < n; ++i) {
    std::int64_t length = 1 + (i * 7919) % 1'048'576;  // spread over 1..1M tokens
    std::int64_t batch = 1 + i % 64;
    sink += tally_state(g, length, batch).total;
    sink += tally_forward(g, make_call(spec, batch, length, 1)).flops;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "model %s: %ld configurations (state + decode forward) in %.3f s = %.0f per second"
      " (checksum %lld)\n",
      name.c_str(), n, seconds, static_cast<double>(n) / seconds,
      static_cast<long long>(sink.wide() % 1000003));
  return 0;
}
