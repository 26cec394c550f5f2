// A discrete-event simulation of the same scheduler the steady state models (continuous
// batching, chunked prefill under the token budget, the request cap and the KV pool), stepping
// with the same step-time function, for Poisson arrivals at a rate or a trace of requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/batching.h"

namespace calc::serve {

/// One request of a workload.
struct arrival {
  double time_ms = 0;
  std::int64_t isl = 0;
  std::int64_t osl = 0;
};

/// `requests` arrivals of a Poisson process of `rate` requests per second, seeded.
std::vector<arrival> poisson_arrivals(double rate, std::int64_t requests, std::int64_t isl,
                                      std::int64_t osl, std::uint64_t seed);

/// A trace: JSON lines {"arrival_ms": T, "input_tokens": N, "output_tokens": M}, arrivals in
/// any order. A malformed line is a spec_error `file:line: field: why`.
std::vector<arrival> read_trace(const std::string& path);

struct latency_stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct simulation {
  std::int64_t requests = 0;
  latency_stats ttft, tpot, itl, e2e;  // ms
  double duration_ms = 0;              // first arrival to last token
  double requests_per_s = 0;           // per instance
  double output_tokens_per_s = 0;      // per instance
  std::int64_t steps = 0;
  std::int64_t max_waiting = 0;  // longest queue seen
  bool kv_limited = false;       // the KV pool (not max-num-seqs) held requests back
};

/// Runs every arrival to completion on one instance (its dp groups take arrivals in turn).
simulation simulate(const deployment& d, const batching_config& cfg, const coefficients& k,
                    std::vector<arrival> arrivals);

}  // namespace calc::serve
