// A discrete-event simulation of the same scheduler the steady state models (continuous
// batching, chunked prefill under the token budget, the request cap and the KV pool), stepping
// with the same step-time function, for Poisson arrivals at a rate or a trace of requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "serve/batching.h"

namespace calc::serve {

/// One request of a workload.
struct arrival {
  double time_ms = 0;
  std::int64_t isl = 0;
  std::int64_t osl = 0;
  int line = 0;  // the trace line it was read from (0: generated), for errors about it
};

/// `requests` arrivals of a Poisson process of `rate` requests per second, seeded.
std::vector<arrival> poisson_arrivals(double rate, std::int64_t requests, std::int64_t isl,
                                      std::int64_t osl, std::uint64_t seed);

/// Redraws each request's lengths as a benchmark client with a range ratio does (vLLM's
/// benchmark_serving.py, `--random-range-ratio`, sample_random_requests): uniformly among the
/// whole numbers in [floor(ratio x isl), isl] and [floor(ratio x osl), osl], at least 1 each,
/// seeded. A ratio of 1 keeps the lengths; a ratio outside (0, 1] is a spec_error.
void draw_lengths(std::vector<arrival>& requests, double range_ratio, std::uint64_t seed);

/// A trace: JSON lines {"arrival_ms": T, "input_tokens": N, "output_tokens": M}, arrivals in
/// any order, token counts whole numbers >= 1. A malformed line is a spec_error
/// `file:line: field: why`.
std::vector<arrival> read_trace(const std::string& path);

/// Mean and percentiles of a latency, ms. A percentile q is the smallest sample with at least
/// q of the samples at or below it.
struct latency_stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  double max = 0;  // the longest: a rare stall (a preemption's recompute) beyond p99
};

/// What a simulation measured. TPOT is per request: (e2e - TTFT) / (OSL - 1), averaged over the
/// requests of more than one token. ITL is per token: every gap between two consecutive output
/// tokens of a request, over all tokens, so its tail shows the steps stretched by other
/// requests' prefill chunks and the stalls of a preempted request (its mean is TPOT weighted by
/// tokens).
struct simulation {
  std::int64_t requests = 0;
  latency_stats ttft, tpot, itl, e2e;  // ms
  double duration_ms = 0;              // first arrival to last token
  double requests_per_s = 0;           // per instance
  double output_tokens_per_s = 0;      // per instance
  std::int64_t steps = 0;
  std::int64_t max_waiting = 0;         // longest queue seen
  std::int64_t output_tokens = 0;       // tokens returned: the sum of the requests' OSL
  std::int64_t itl_gaps = 0;            // gaps in `itl`: the sum of OSL - 1
  double kv_pool_bytes = 0;             // one rank's KV pool
  std::int64_t preemptions = 0;         // times a running request lost its KV (preempt or retract)
  std::int64_t requests_preempted = 0;  // requests preempted at least once
  std::int64_t recomputed_tokens = 0;   // tokens prefilled again after a preemption
  std::int64_t requests_waited_for_kv = 0;  // requests held in the queue for want of KV
  std::int64_t run_steps = 0;  // of `steps`, those taken in decode runs (simulation_path::runs)
  step_time step;  // the mean step of the run (ms), split as time_step splits one
  /// The KV pool shaped the run: a request waited for KV or was preempted.
  bool kv_limited() const { return preemptions > 0 || requests_waited_for_kv > 0; }
};

/// A request the KV pool cannot hold even alone (field "input_tokens": its prompt and outputs
/// together), with the trace line it came from (0 for generated arrivals), so that the caller,
/// who knows the file, can name file:line.
class request_refused : public spec_error {
 public:
  request_refused(const std::string& message, int trace_line)
      : spec_error("input_tokens", message), line(trace_line) {}
  int line;
};

/// How `simulate` walks the steps. Both give the same simulation, bit for bit (tested):
/// - `runs`: a stretch of steps in which every running request only decodes and nothing else can
///   happen (no arrival it would admit, no finish, no preemption or retraction, proven from the
///   pool and the queue's front before the stretch) is taken at once: the clock still adds each
///   step's time, but the requests are updated once per stretch; KV bytes come from the compiled
///   state series (closed_form). Long requests (8K/8K: a million steps) take well under 1 s.
/// - `stepwise`: every step scheduled alone, KV bytes from the itemised tally (tally_state): the
///   oracle.
enum class simulation_path { runs, stepwise };

/// Runs every arrival to completion on one instance (its dp groups take arrivals in turn), as
/// the engine's scheduler does: each step first serves the running requests (a decode token, or
/// the next prefill chunk under the token budget), then admits waiting ones while the budget,
/// the request cap and the KV pool allow. The pool is counted per request in blocks of
/// kv_block_tokens; when it cannot hold the next tokens the engine's kv_policy applies. A
/// request that cannot fit the pool even alone is a spec_error (engines refuse it too).
simulation simulate(const deployment& d, const batching_config& cfg, const coefficients& k,
                    std::vector<arrival> arrivals,
                    simulation_path path = simulation_path::runs);

/// Requests each client of a simulated closed loop sends unless told otherwise: InferenceX's
/// client sends 10 x concurrency prompts (`--num-prompts $((CONC * 10))`).
inline constexpr std::int64_t default_requests_per_client = 10;

/// A closed loop: `clients` clients per attention group send `requests` (their lengths; their
/// arrival times are not read) in order, each client its next request as soon as the last
/// token of its previous one returns, all of them at once at the start (the opening burst a
/// benchmark run begins with). The engine sees a request request_latency_ms after it is sent,
/// the time the steady state and the TTFT of a simulation add for the API server. The same
/// scheduler and step times as `simulate`; the measured file's rows were taken this way (`calc
/// serve --concurrency C --simulate`).
simulation simulate_clients(const deployment& d, const batching_config& cfg, const coefficients& k,
                            std::int64_t clients, std::vector<arrival> requests,
                            simulation_path path = simulation_path::runs);

/// The steady state's ITL (ms): a token waits one decode step, and some steps also carry (or
/// wait behind) another request's prefill chunk. `m` = (TPOT - base step) / stall is the mean
/// count of chunk stalls per gap, where the base step is TPOT x (1 - prefill share) and a stall
/// is what one chunk adds (mixed engines: the mixed step less the decode step; others: the
/// prefill step). Gaps take floor(m) or floor(m) + 1 stalls, in the shares that make the mean
/// exactly TPOT; the percentiles follow from that two-point mix.
latency_stats steady_itl(const scenario& s, const steady_state& st, const coefficients& k);

}  // namespace calc::serve
