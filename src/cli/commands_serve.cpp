// Time under load: `calc serve` (steady state at concurrencies, or a simulation of a rate or a
// trace), `calc calibrate` (fit the calibration table to measured rows, or evaluate it), and the
// `plan --sla` hook. Options are read into small typed requests in one place (read_serve and
// friends); the answers come from src/serve/.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "cli/support.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/units.h"
#include "plan/capacity.h"
#include "report/data.h"
#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/fit.h"
#include "serve/measured.h"
#include "serve/simulate.h"
#include "serve/sla.h"
#include "spec/context_limit.h"
#include "spec/format_summary.h"
#include "spec/hf/hub.h"
#include "spec/model_reader.h"

namespace calc::cli {

namespace {

using namespace calc::serve;

/// What `serve` is asked, read from the options once.
struct serve_request {
  std::string engine = "vllm";
  serve_layout layout;
  batching_config cfg;
  std::vector<std::int64_t> concurrency;  // steady-state points
  bool simulate = false;                  // the concurrencies simulated, not a steady state
  double rate = 0;                        // or a simulation at this rate
  std::int64_t requests = 1000;           // with --rate; with --simulate, per attention group
  bool requests_given = false;            // with --simulate: else 10 x concurrency
  double range_ratio = 1;                 // the benchmark client's length range
  std::string trace;  // or of this trace
  std::uint64_t seed = 2026;
  std::string calibration;  // file; "" = the shipped default
};

/// The launch line of `engine` for what was modelled: the layout and batching knobs
/// (launch_line), then the formats --weights and --kv set away from the checkpoint's, in the
/// engine's spelling (a line without them would start the engine on the checkpoint's formats:
/// half the modelled KV pool where --kv fp8 was costed).
std::string launch_with_formats(const std::string& engine, const serve_layout& l,
                                const batching_config& cfg, const options& o, const model_spec& s,
                                const gpu_spec& gpu) {
  std::string line = launch_line(engine, l, cfg, gpu);
  std::string notes;
  bool trt = engine == "trtllm";
  if (!o.kv.empty()) {
    const dtype& kv = s.precision.kv;
    bool fp8 = kv.bits == 8 && kv.name.starts_with("fp8");
    if (fp8 && !trt)
      line += engine == "sglang" ? " --kv-cache-dtype fp8_e4m3" : " --kv-cache-dtype fp8";
    else if (fp8)
      notes += "kv_cache_config: {dtype: fp8} in --extra_llm_api_options";
    else if (kv.bits < 16)
      notes += fmt::format("a {} KV cache, which the engine must be built for", kv.name);
  }
  if (!o.weights.empty()) {
    std::string w = model_formats(s).weights;
    // The bundle's own format: a --weights that names it launches as it is.
    std::string own = model_formats(read_model_file(resolve_model_path(o.model), o.sets)).weights;
    std::string note;
    if (w == own) {
    } else if (w.starts_with("fp8") && !trt && (own == "bf16" || own == "fp16")) {
      line += " --quantization fp8";  // online FP8 of a BF16 checkpoint
    } else {
      note = fmt::format("a {} checkpoint, the weights modelled, where the bundle's is {}", w, own);
    }
    if (!note.empty()) notes += (notes.empty() ? "" : "; ") + note;
  }
  return notes.empty() ? line : line + " (" + notes + ")";
}

calibration load_calibration(const std::string& path) {
  if (!path.empty()) return read_calibration(path);
  calibration c = read_calibration(default_calibration_path());
  c.file = "models/calibration/default.yaml";  // as output names it, wherever calc is installed
  return c;
}

/// For mapping measured rows (the only reader of clients): a file written before the `clients`
/// section maps them as it did when written, with the shipped clients, said in the output and
/// carried into a file a fit writes from it.
void with_shipped_clients(calibration& c) {
  if (c.clients_given) return;
  calibration shipped;
  try {
    shipped = read_calibration(default_calibration_path());
  } catch (const spec_error& e) {
    throw spec_error(source_location{c.file, 0, 0}, "clients",
                     fmt::format("the file names no benchmark clients, and the shipped ones "
                                 "could not be read: {}",
                                 e.what()));
  }
  if (!shipped.clients_given) return;
  c.clients = shipped.clients;
  c.clients_given = true;
  c.clients_from = "models/calibration/default.yaml";
}

/// The memory fraction typed for `engine`: vLLM's --gpu-memory-utilization, SGLang's
/// --mem-fraction-static, TensorRT-LLM's --kv-cache-free-gpu-memory-fraction, each in (0, 1]
/// and refused with another engine; none when not typed.
std::optional<double> typed_fraction(const options& o, const std::string& engine) {
  std::optional<double> f;
  const std::tuple<const char*, double, const char*> knobs[] = {
      {"--gpu-memory-utilization", o.gpu_memory_utilization, "vllm"},
      {"--mem-fraction-static", o.mem_fraction_static, "sglang"},
      {"--kv-cache-free-gpu-memory-fraction", o.free_gpu_memory_fraction, "trtllm"}};
  for (const auto& [flag, value, owner] : knobs) {
    if (!was_typed(o, flag)) continue;
    if (engine != owner)
      throw spec_error(flag,
                       fmt::format("is {}'s knob; --engine {} does not read it", owner, engine));
    if (!(value > 0 && value <= 1))
      throw spec_error(flag, fmt::format("must be in (0, 1], got {}", value));
    f = value;
  }
  return f;
}

batching_config engine_config_of(const std::string& engine, std::int64_t isl, std::int64_t osl,
                                 std::int64_t mnbt, std::int64_t seqs, const gpu_spec& gpu,
                                 std::optional<double> fraction) {
  batching_config c = engine_batching(find_engine(engine), isl, osl, gpu);
  if (mnbt > 0) c.max_num_batched_tokens = c.reserve_chunk = mnbt;
  if (seqs > 0) c.max_num_seqs = seqs;
  if (fraction) {
    c.memory_fraction = *fraction;
    c.fraction_typed = true;
  }
  // vLLM refuses to start below one token per running sequence (SchedulerConfig._verify_args in
  // vllm/config/scheduler.py); calc would model an engine that never runs.
  if (engine == "vllm" && c.max_num_batched_tokens < c.max_num_seqs)
    throw spec_error("--max-num-batched-tokens",
                     fmt::format("{}{} is below --max-num-seqs {}{}: vLLM refuses to start "
                                 "(max_num_batched_tokens must be >= max_num_seqs); raise it or "
                                 "lower --max-num-seqs",
                                 c.max_num_batched_tokens,
                                 mnbt > 0 ? "" : fmt::format(" (vLLM's default on {})", gpu.name),
                                 c.max_num_seqs,
                                 seqs > 0 ? "" : fmt::format(" (vLLM's default on {})", gpu.name)));
  return c;
}

/// --max-num-batched-tokens and --max-num-seqs (0: the engine's default), in their own units.
void check_engine_knobs(const options& o) {
  check_limit("--max-num-batched-tokens", o.max_num_batched_tokens,
              least_typed(o, "--max-num-batched-tokens"), limits::tokens, "tokens");
  check_limit("--max-num-seqs", o.max_num_seqs, least_typed(o, "--max-num-seqs"), limits::requests,
              "requests");
}

/// --rate, checked where typed: 0 (not given) or requests per second > 0. A typed 0 is a
/// rate, refused as one, not "no --rate".
double rate_option(const options& o) {
  if (!was_typed(o, "--rate")) return 0;
  if (!(o.rate > 0 && std::isfinite(o.rate)))
    throw spec_error("--rate",
                     fmt::format("{} is not a positive number of requests per second", o.rate));
  return o.rate;
}

/// TensorRT-LLM's holds of new prompts are costed in the closed loop's steady state only: the
/// --rate / --trace / --simulate simulation has no such hold.
void steady_state_only(const char* flag, const serve_request& r) {
  if (r.concurrency.empty() || r.simulate)
    throw spec_error(flag,
                     "is costed in the closed loop's steady state (--concurrency), not in the "
                     "--rate / --trace / --simulate simulation");
}

/// TensorRT-LLM's batch waiting (its batch_wait_timeout_iters and batch_wait_max_tokens_ratio).
void read_batch_wait(const options& o, serve_request& r) {
  auto typed = [&](const char* flag) { return was_typed(o, flag); };
  const char* iters = "--batch-wait-timeout-iters";
  const char* ratio = "--batch-wait-max-tokens-ratio";
  if (!typed(iters) && !typed(ratio)) return;
  const char* flag = typed(iters) ? iters : ratio;
  if (r.engine != "trtllm")
    throw spec_error(flag, "is TensorRT-LLM's scheduler option: give --engine trtllm");
  steady_state_only(flag, r);
  // The engine holds prompts so only without attention DP (its ranks' prompts are held by the
  // balance instead, --attention-dp-balance); both at 0, its default, is off anywhere.
  if (r.layout.dp > 1 && (o.batch_wait_iters > 0 || o.batch_wait_ratio > 0))
    throw spec_error(flag,
                     "TensorRT-LLM holds prompts so only without attention DP (--dp 1); its "
                     "ranks are balanced with --attention-dp-balance");
  check_limit(iters, o.batch_wait_iters, 0, limits::requests, "iterations");
  if (!(o.batch_wait_ratio >= 0 && o.batch_wait_ratio <= 1))
    throw spec_error(ratio, "must be a fraction in [0, 1] of the step's token budget");
  // The hold ends at whichever comes first, so with either at 0 nothing is held.
  if ((o.batch_wait_iters > 0) != (o.batch_wait_ratio > 0))
    throw spec_error(o.batch_wait_iters > 0 ? ratio : iters,
                     "give both above 0: a prompt is held until the iterations pass or the "
                     "tokens reach the ratio, and either at 0 releases it at once");
  r.cfg.holds.batch_wait_iters = o.batch_wait_iters;
  r.cfg.holds.batch_wait_tokens_ratio = o.batch_wait_ratio;
}

/// TensorRT-LLM's attention-DP balance (attention_dp_config): on with --attention-dp-balance,
/// its two waits at the engine's defaults unless typed.
void read_adp_balance(const options& o, serve_request& r) {
  auto typed = [&](const char* flag) { return was_typed(o, flag); };
  const char* on = "--attention-dp-balance";
  const char* timeout = "--attention-dp-balance-timeout-iters";
  const char* batching = "--attention-dp-balance-batching-iters";
  if (!o.adp_balance) {
    for (const char* flag : {timeout, batching})
      if (typed(flag))
        throw spec_error(flag, "sets a wait of the balance: give --attention-dp-balance");
    return;
  }
  if (r.engine != "trtllm")
    throw spec_error(on, "is TensorRT-LLM's scheduler option: give --engine trtllm");
  if (r.layout.dp < 2)
    throw spec_error(on,
                     "balances the prompts of attention-DP ranks: give --dp (2 or more) with "
                     "--tp, as trtllm-serve's enable_attention_dp runs them");
  steady_state_only(on, r);
  check_limit(timeout, o.adp_balance_timeout_iters, 0, limits::requests, "iterations");
  check_limit(batching, o.adp_balance_batching_iters, 0, limits::requests, "iterations");
  r.cfg.holds.adp_balance = true;
  r.cfg.holds.adp_balance_timeout_iters = o.adp_balance_timeout_iters;
  r.cfg.holds.adp_balance_batching_iters = o.adp_balance_batching_iters;
}

serve_request read_serve(const options& o, const gpu_spec& gpu) {
  serve_request r;
  if (!o.engine.empty()) r.engine = o.engine;
  find_engine(r.engine);
  check_limit("--tp", o.tp, 1, limits::cards, "cards");
  check_limit("--ep", o.ep, 1, limits::cards, "cards");
  check_limit("--dp", o.dp, 1, limits::cards, "cards");
  check_limit("--pp", o.pp, 1, limits::cards, "cards");
  // --tp --dp as capacity and plan read them (SGLang's --tp 8 --dp 8: 8 cards, each dp group of
  // tp / dp cards runs attention); the step model counts tp per attention group.
  if (o.tp % o.dp != 0)
    throw spec_error("--tp/--pp/--ep/--dp",
                     fmt::format("dp {} does not divide the tp group of {} cards", o.dp, o.tp));
  r.layout = {o.tp / o.dp, o.ep, o.dp, o.pp};
  // A trace carries each request's lengths: --isl/--osl would be read by nothing (once they only
  // decided whether a request of those lengths fit the KV pool, refusing a trace of short ones).
  std::optional<std::int64_t> unset;
  if (!o.trace.empty()) {
    unset = 0;
    if (o.isl || o.osl)
      throw spec_error(o.isl ? "--isl" : "--osl",
                       "is not read with --trace: each line carries its request's input_tokens "
                       "and output_tokens");
  }
  std::int64_t isl = token_option("--isl", o.isl, unset);
  std::int64_t osl = token_option("--osl", o.osl, unset);
  check_engine_knobs(o);
  r.cfg = engine_config_of(r.engine, isl, osl, o.max_num_batched_tokens, o.max_num_seqs, gpu,
                           typed_fraction(o, r.engine));
  const double rate = rate_option(o);
  int modes = (!o.concurrency.empty()) + (rate > 0) + (!o.trace.empty());
  if (modes != 1)
    throw spec_error("--concurrency",
                     "give exactly one of --concurrency LIST, --rate R or --trace FILE");
  for (const std::string& c : split_items("--concurrency", o.concurrency, "1,8,64")) {
    auto n = parse_token_count(c);
    if (!n || *n < 1 || *n > limits::requests)
      throw spec_error("--concurrency", fmt::format("'{}' is not a count of clients >= 1", c));
    // A repeated count is a typo in a sweep, not a second point to print.
    if (std::find(r.concurrency.begin(), r.concurrency.end(), *n) != r.concurrency.end())
      throw spec_error("--concurrency", fmt::format("{} is given twice", *n));
    r.concurrency.push_back(*n);
  }
  r.rate = rate;
  r.simulate = o.simulate;
  if (r.simulate && r.concurrency.empty())
    throw spec_error("--simulate",
                     "simulates the closed loop of each --concurrency point (--rate and --trace "
                     "are simulated already)");
  bool simulated = rate > 0 || r.simulate;
  // Typed, any value is checked (poisson_arrivals: 1 to 10^6), never dropped.
  if (o.requests_given) {
    if (!simulated)
      throw spec_error("--requests",
                       "applies only with --rate or --simulate (a trace carries its requests; "
                       "--concurrency alone is a steady state)");
    if (o.requests < 1 || o.requests > 1'000'000)
      throw spec_error("--requests", "must be between 1 and 1,000,000");
    r.requests = o.requests;
    r.requests_given = true;
    if (r.simulate)
      for (std::int64_t c : r.concurrency)
        if (r.requests < c)
          throw spec_error("--requests",
                           fmt::format("{} requests per attention group leave some of the {} "
                                       "clients of --concurrency {} nothing to send; give at "
                                       "least as many",
                                       r.requests, c, c));
  }
  if (was_typed(o, "--range-ratio")) {
    if (!simulated)
      throw spec_error("--range-ratio",
                       "applies only with --rate or --simulate (a trace carries its lengths; the "
                       "steady state costs --isl and --osl)");
    if (!(o.range_ratio > 0 && o.range_ratio <= 1))
      throw spec_error("--range-ratio",
                       "must be a fraction in (0, 1]: each length is drawn between ratio x "
                       "--isl (--osl) and --isl (--osl)");
    r.range_ratio = o.range_ratio;
  }
  if (was_typed(o, "--seed") && rate == 0 && !(r.simulate && r.range_ratio < 1))
    throw spec_error("--seed",
                     "applies only with --rate (it seeds the Poisson arrivals and any drawn "
                     "lengths) or with --simulate and --range-ratio below 1 (the lengths)");
  r.trace = o.trace;
  r.seed = o.seed;
  r.calibration = o.calibration;
  read_batch_wait(o, r);
  read_adp_balance(o, r);
  return r;
}

ojson step_json(const step_time& t) {
  ojson ops = ojson::object();
  for (std::size_t i = 0; i < op_classes; ++i) ops[op_name(static_cast<op_class>(i))] = t.op_ms[i];
  return {{"total_ms", t.total_ms},
          {"weights_ms", t.weights_ms},
          {"kv_ms", t.kv_ms},
          {"compute_ms", t.compute_ms},
          {"communication_ms", t.communication_ms},
          {"overhead_ms", t.overhead_ms},
          {"ops_ms", ops}};
}

ojson stats_json(const latency_stats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

std::string ms(double v) { return fmt::format("{:.2f}", v); }

/// A simulated point's figures: means, percentiles, throughput and what the KV pool did.
ojson simulation_json(const simulation& sim, double gpus) {
  ojson p;
  p["requests"] = sim.requests;
  p["ttft_ms"] = sim.ttft.mean;
  p["tpot_ms"] = sim.tpot.mean;
  p["itl_ms"] = sim.itl.mean;
  p["e2e_ms"] = sim.e2e.mean;
  p["ttft"] = stats_json(sim.ttft);
  p["tpot"] = stats_json(sim.tpot);
  p["itl"] = stats_json(sim.itl);
  p["e2e"] = stats_json(sim.e2e);
  p["output_tokens_per_s"] = sim.output_tokens_per_s;
  p["output_tokens_per_s_per_gpu"] = sim.output_tokens_per_s / gpus;
  p["output_tokens_per_s_per_user"] = sim.tpot.mean > 0 ? 1e3 / sim.tpot.mean : 0;
  p["requests_per_s"] = sim.requests_per_s;
  p["kv_pool_fits"] = !sim.kv_limited();
  p["kv_pool_bytes"] = sim.kv_pool_bytes;
  p["preemptions"] = sim.preemptions;
  p["requests_preempted"] = sim.requests_preempted;
  p["recomputed_tokens"] = sim.recomputed_tokens;
  p["requests_waited_for_kv"] = sim.requests_waited_for_kv;
  p["output_tokens"] = sim.output_tokens;
  p["max_waiting"] = sim.max_waiting;
  p["steps"] = sim.steps;
  p["step"] = step_json(sim.step);  // the mean step of the run
  return p;
}

/// The closed loop of `clients` per attention group, simulated: `requests` per group at the
/// asked lengths (drawn in the range ratio when below 1). A request the pool cannot hold is the
/// error of --isl, the lengths the user typed.
simulation simulate_point(const deployment& d, const serve_request& q, const coefficients& k,
                          std::int64_t clients) {
  std::int64_t per_group = q.requests_given ? q.requests : default_requests_per_client * clients;
  std::int64_t n = per_group * d.layout.dp;
  // The run's size is --requests where typed, else 10 x --concurrency: name what the user typed.
  const char* size = q.requests_given ? "--requests" : "--concurrency";
  if (n > 1'000'000)
    throw spec_error(
        size, fmt::format("{} requests per attention group{} x {} groups is more "
                          "than the 1,000,000 a simulation takes; give fewer {}",
                          per_group, q.requests_given ? "" : " (10 x concurrency)", d.layout.dp,
                          q.requests_given ? "--requests"
                                           : "clients, "
                                             "or --requests"));
  std::vector<arrival> requests(static_cast<std::size_t>(n), arrival{0, q.cfg.isl, q.cfg.osl});
  draw_lengths(requests, q.range_ratio, q.seed);
  try {
    return simulate_clients(d, q.cfg, k, clients, std::move(requests));
  } catch (const request_refused& e) {
    throw spec_error("--isl", e.message());
  } catch (const spec_error& e) {
    if (e.field() != "requests") throw;
    throw spec_error(size, e.message());
  }
}

/// How the engine frees KV, for the serve table's note.
const char* kv_policy_words(kv_policy p) {
  switch (p) {
    case kv_policy::preempt_newest:
      return "vLLM preempts the newest running request, which re-prefills from the queue's front "
             "what its prefix cache lost";
    case kv_policy::retract:
      return "SGLang retracts the request with the fewest outputs to the back of the queue";
    case kv_policy::reserve_whole:
      return "TensorRT-LLM reserves each request whole, so it only holds requests back";
  }
  return "";
}

}  // namespace

void add_serve_options(CLI::App& app, options& o) {
  app.get_option("--gpu")->required();
  app.add_option("--engine", o.engine,
                 "Engine whose defaults and calibration apply: vllm, "
                 "sglang or trtllm (default vllm)");
  app.add_option("--isl", o.isl,
                 "Input tokens per request, e.g. 1024 or 8K (required with --concurrency and "
                 "--rate; a --trace carries its own)")
      ->transform(token_suffixes());
  app.add_option("--osl", o.osl,
                 "Output tokens per request, e.g. 256 or 1K (required with --concurrency and "
                 "--rate; a --trace carries its own)")
      ->transform(token_suffixes());
  app.add_option("--node-gpus", o.node_gpus,
                 "Cards per server: a tp group wider than the card's NVLink domain stays within "
                 "one, over its PCIe (default: the card's server_gpus in `calc gpus`, 8 for "
                 "most, 1 for GH200)");
  app.add_option("--concurrency", o.concurrency,
                 "Closed-loop clients per attention group, a list such as 1,8,64: one "
                 "steady-state point each, or a simulated one with --simulate (give one of "
                 "--concurrency, --rate, --trace)");
  app.add_option("--rate", o.rate,
                 "Poisson arrivals, requests per second (> 0, at most 10^7): a simulation of "
                 "--requests arrivals");
  app.add_option("--requests", o.requests,
                 "With --rate: requests simulated, 1 to 10^6 (default 1000); with --simulate: "
                 "requests per attention group at each concurrency (default 10 x concurrency, "
                 "as InferenceX's client sends)");
  app.add_option("--trace", o.trace,
                 "JSON lines {\"arrival_ms\": T, \"input_tokens\": N, \"output_tokens\": M} "
                 "to simulate, in any order (docs/commands.md)");
  app.add_flag("--simulate", o.simulate,
               "With --concurrency: simulate each point's closed loop (every client sends its "
               "next request when the last one ends, all at once to start) with the scheduler "
               "--rate uses, for TTFT, TPOT, ITL and e2e percentiles, instead of the steady "
               "state");
  app.add_option("--range-ratio", o.range_ratio,
                 "With --rate or --simulate: draw each request's lengths uniformly in [ratio x "
                 "--isl, --isl] and [ratio x --osl, --osl], as --random-range-ratio does in "
                 "vLLM's benchmark_serving.py, SGLang's bench_serving and InferenceX's copy "
                 "(`vllm bench serve` now draws in [1 - r, 1 + r] x) (default 1: every request "
                 "the same)");
  app.add_option("--seed", o.seed,
                 "With --rate, or --simulate with --range-ratio: seed of the Poisson arrivals "
                 "and drawn lengths (default 2026)");
  app.add_option("--max-num-batched-tokens,--chunked-prefill-size", o.max_num_batched_tokens,
                 "Token budget of one step (default: the engine's, 8192 in each; vLLM 2048 on "
                 "cards under 70 GiB and on A100s, as `vllm serve` picks it)")
      ->transform(token_suffixes());
  app.add_option("--max-num-seqs,--max-running-requests", o.max_num_seqs,
                 "Running requests at most (default: the engine's: vLLM 1024 (256 on cards under "
                 "70 GiB and on A100s), SGLang 4096, TensorRT-LLM 2048)")
      ->transform(token_suffixes());
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "vLLM: fraction of the card vLLM may use, which sizes the KV pool (default 0.9)");
  app.add_option("--mem-fraction-static", o.mem_fraction_static,
                 "SGLang: fraction of the card for weights and KV pool (default: SGLang's, "
                 "computed from the card, the layout and the chunk)");
  app.add_option("--kv-cache-free-gpu-memory-fraction,--kv_cache_free_gpu_memory_fraction",
                 o.free_gpu_memory_fraction,
                 "TensorRT-LLM: fraction of what the weights leave of the card that the KV pool "
                 "takes (trtllm-serve's --kv_cache_free_gpu_memory_fraction; default 0.9)");
  app.add_option(
      "--batch-wait-timeout-iters", o.batch_wait_iters,
      "TensorRT-LLM without attention DP, with --concurrency (the steady state, not "
      "--simulate): hold new prompts while others decode for up to this many iterations (its "
      "batch_wait_timeout_iters; default 0, off)");
  app.add_option("--batch-wait-max-tokens-ratio", o.batch_wait_ratio,
                 "TensorRT-LLM, with --concurrency (the steady state): ... or until the held "
                 "prompts and the decode tokens reach this fraction of the token budget (its "
                 "batch_wait_max_tokens_ratio; give both)");
  app.add_flag("--attention-dp-balance", o.adp_balance,
               "TensorRT-LLM with --dp, with --concurrency (the steady state): hold each "
               "attention-DP rank's new prompts until every rank has one, or until the timeout "
               "(its attention_dp_config enable_balance; default off)");
  app.add_option("--attention-dp-balance-timeout-iters", o.adp_balance_timeout_iters,
                 "With --attention-dp-balance: iterations, counted from the last release, after "
                 "which held prompts go anyway (its timeout_iters; default 50)");
  app.add_option("--attention-dp-balance-batching-iters", o.adp_balance_batching_iters,
                 "With --attention-dp-balance: iterations more to wait once every rank has a "
                 "prompt, while every rank decodes (its batching_wait_iters; default 10)");
  app.add_option(
      "--calibration", o.calibration,
      "Calibration YAML from `calc calibrate` (default: models/calibration/default.yaml)");
}

void add_calibrate_options(CLI::App& app, options& o) {
  app.add_option("--measurements", o.measurements,
                 "Measured rows to fit: CSV in aiconfigurator's silicon_sample columns "
                 "(docs/commands.md maps each); give this or --evaluate");
  app.add_option("--evaluate", o.evaluate,
                 "Measured rows (the same CSV) to predict with --calibration, never fitting on "
                 "them; a row calc cannot model is that row's error");
  app.add_flag("--cross-validate", o.cross_validate,
               "Also the leave-one-GPU-out, leave-one-GPU-family-out and leave-one-model-out "
               "errors (each refitted without its rows, then predicted); with --measurements "
               "the fitted file records them, and serve, plan --sla and report quote them for "
               "GPUs and models it was not fitted on");
  app.add_flag("--simulate", o.simulate,
               "With --evaluate: predict each row by simulating its closed loop (its clients "
               "sending 10 requests each, lengths drawn as its benchmark client draws them) "
               "instead of the steady state the fit uses");
  app.add_option("--out", o.out, "Where --measurements writes the calibration (default: stdout)");
  app.add_option("--calibration", o.calibration,
                 "Calibration YAML (default: models/calibration/default.yaml); families and "
                 "model aliases come from it when fitting");
}

void add_sla_options(CLI::App& app, options& o) {
  app.add_option("--sla", o.sla,
                 "Latency targets ttft=MS,tpot=MS, both given once: plan the fewest GPUs that "
                 "meet them (time under load, the engine's defaults: --engine, default vllm; "
                 "--max-num-seqs and --max-num-batched-tokens set its batching, with or without "
                 "--engine)");
  app.add_option("--rate", o.rate,
                 "With --sla: requests per second to serve, all instances together (or "
                 "--concurrency)");
  app.add_option("--concurrency", o.concurrency,
                 "With --sla: one count of closed-loop clients to serve, all instances together "
                 "(or --rate)");
  app.add_option("--isl", o.isl, "With --sla: input tokens per request (required), e.g. 1K")
      ->transform(token_suffixes());
  app.add_option("--osl", o.osl, "With --sla: output tokens per request (required), e.g. 1K")
      ->transform(token_suffixes());
  app.add_option("--calibration", o.calibration,
                 "With --sla: calibration YAML (default: models/calibration/default.yaml)");
  app.add_option("--kv-cache-free-gpu-memory-fraction,--kv_cache_free_gpu_memory_fraction",
                 o.free_gpu_memory_fraction,
                 "With --sla --engine trtllm: fraction of what the weights leave of the card that "
                 "the KV pool takes (trtllm-serve's --kv_cache_free_gpu_memory_fraction; default "
                 "0.9)");
}

namespace {

ojson stats_json(const error_stats& s) {
  // No rows has no error: null, not a 0 % that reads as a perfect fit.
  if (s.rows == 0)
    return {{"rows", 0},
            {"ttft_median_pct", nullptr},
            {"ttft_p90_pct", nullptr},
            {"tpot_median_pct", nullptr},
            {"tpot_p90_pct", nullptr}};
  return {{"rows", s.rows},
          {"ttft_median_pct", s.ttft_median},
          {"ttft_p90_pct", s.ttft_p90},
          {"tpot_median_pct", s.tpot_median},
          {"tpot_p90_pct", s.tpot_p90}};
}

/// What a calibration file records of its own accuracy, for one question (models on a GPU under
/// an engine, answered by the entry `used`). The entry that answers says what it has seen: a GPU
/// among its measured runs gets the entry's |error| on them; another GPU, what a fit reached on a
/// GPU it had not seen (one of a family the engine's runs cover, its siblings still in the fit)
/// or on a GPU family it had not seen; a model it has not seen, what a fit reached on a model
/// left out (`calc calibrate --cross-validate`), each the engine's figure where the file has one.
struct accuracy_note {
  ojson json;
  std::string text;  // Markdown sentences; empty when nothing is recorded
};

accuracy_note accuracy_of(const calibration& cal, const std::string& used,
                          const std::vector<asked_model>& models, const asked_gpu& gpu,
                          const std::string& engine, bool simulated) {
  auto among = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  const calibration_entry* entry = nullptr;
  for (const calibration_entry& e : cal.entries)
    if (e.family + "/" + e.engine == used) entry = &e;
  // What the engine's entries have seen measured; a file without the records says nothing.
  std::set<std::string> engine_gpus, engine_models;
  bool recorded = false;
  for (const calibration_entry& e : cal.entries) {
    recorded = recorded || !e.measured_gpus.empty();
    if (e.engine != engine) continue;
    engine_gpus.insert(e.measured_gpus.begin(), e.measured_gpus.end());
    engine_models.insert(e.measured_models.begin(), e.measured_models.end());
  }
  const std::string family = cal.family_of(gpu.name);
  std::vector<std::string> siblings;  // the engine's measured GPUs of its family
  for (const std::string& g : engine_gpus)
    if (family != "any" && g != gpu.name && cal.family_of(g) == family) siblings.push_back(g);
  const bool gpu_measured = gpu.named && entry && among(entry->measured_gpus, gpu.name);
  const bool answered = gpu_measured && entry->in_sample.rows > 0;
  const bool family_measured = gpu_measured || !siblings.empty();
  // The models the answering entry has seen; a pooled entry that answered none, the engine's.
  const std::vector<std::string> seen =
      entry && !entry->measured_models.empty()
          ? entry->measured_models
          : std::vector<std::string>(engine_models.begin(), engine_models.end());
  // A bundle whose repository the file's models table maps onto a measured model (by the
  // repository's shape name, and the two bundles of equal parameters and state) was measured
  // under that name: DeepSeek-R1's runs are costed as deepseek-v3, so deepseek-r1 is measured.
  std::vector<std::string> twins;  // "deepseek-r1 as deepseek-v3"
  ojson twins_json = ojson::object();
  auto measured_as = [&](const std::string& name) -> std::optional<std::string> {
    if (among(seen, name)) return name;
    std::optional<std::pair<checked, checked>> own;  // read once, and only when a row matches
    for (const auto& [id, bundle] : cal.models) {
      if (!among(seen, bundle) || hf::bundles_with_shapes_of(id, models_dir(), {name}).empty())
        continue;
      try {
        if (!own) own = bundle_shapes(name);
        if (*own == bundle_shapes(bundle)) return bundle;
      } catch (const spec_error&) {
        // a name that is no bundle (a file's own model): not measured under another name
      }
    }
    return std::nullopt;
  };
  std::vector<std::string> unmeasured;
  for (const asked_model& m : models) {
    std::optional<std::string> as = measured_as(m.name);
    if (m.named && as) {
      if (*as != m.name) {
        twins.push_back(fmt::format("{} as {}", m.name, *as));
        twins_json[m.name] = *as;
      }
      continue;
    }
    unmeasured.push_back(as ? m.name + " (as given: its own file, or --set)" : m.name);
  }

  // A grouping's held-out figure: the engine's where the file has it, else over the engines it
  // has (named, so that a figure of other engines' runs does not pass for this one's).
  struct figure {
    const error_stats* s = nullptr;
    std::string engines;
  };
  auto held = [&](const char* grouping) {
    figure f;
    if (const held_out_error* h = cal.held_out_by(grouping)) {
      auto it = h->by_engine.find(engine);
      if (it != h->by_engine.end()) return figure{&it->second, engine};
      std::vector<std::string> others;
      for (const auto& [name, st] : h->by_engine) others.push_back(name);
      f = {&h->all, fmt::format("{} runs, none {}", others.empty() ? "all" : list(others), engine)};
    }
    return f;
  };
  auto figures = [](const error_stats& st) {
    return fmt::format("TPOT {:.1f} % (p90 {:.0f} %), TTFT {:.1f} % (p90 {:.0f} %)", st.tpot_median,
                       st.tpot_p90, st.ttft_median, st.ttft_p90);
  };
  auto held_json = [&](const figure& f) {
    if (!f.s) return ojson(nullptr);
    ojson out = stats_json(*f.s);
    out["engines"] = f.engines;
    return out;
  };
  auto flag = [&](bool v) { return recorded ? ojson(v) : ojson(nullptr); };
  figure gpu_out = held(held_out_groupings[0]), family_out = held(held_out_groupings[1]),
         model_out = held(held_out_groupings[2]);

  accuracy_note a;
  a.json = {{"in_sample", answered ? stats_json(entry->in_sample) : ojson(nullptr)},
            {"gpu_measured", flag(gpu_measured)},
            {"gpu_family_measured", flag(family_measured)},
            {"model_measured", flag(unmeasured.empty())},
            {"models_not_measured", recorded ? ojson(unmeasured) : ojson(nullptr)},
            {"models_measured_as", recorded ? twins_json : ojson(nullptr)},
            {"leave_one_gpu_out", held_json(gpu_out)},
            {"leave_one_family_out", held_json(family_out)},
            {"leave_one_model_out", held_json(model_out)}};
  if (!recorded) return a;
  const std::string asked = gpu.named ? gpu.name : gpu.name + " as given (its own file)";
  const std::string with =
      entry ? fmt::format("the {} entry", used) : std::string("calc's built-in coefficients");
  if (answered) {
    a.text += fmt::format("On its {} measured runs the {} entry's median |error| is {}. ",
                          entry->in_sample.rows, used, figures(entry->in_sample));
  } else if (family_measured) {
    a.text += fmt::format("{} has no measured {} runs; its family {} has ({}){}. ", asked, engine,
                          family, list(siblings),
                          gpu_out.s ? fmt::format(", and a GPU left out of the fit is predicted "
                                                  "to a median |error| of {} ({})",
                                                  figures(*gpu_out.s), gpu_out.engines)
                                    : std::string());
  } else {
    // No sibling in the fit: the family-out figure, where the file has it, is the one that
    // applies (the GPU-out one kept a sibling in for most of its folds).
    figure f = family_out.s ? family_out : gpu_out;
    a.text += fmt::format(
        "{} has no measured {} runs{} ({}): it is costed from its datasheet peaks with {}{}. ",
        asked, engine,
        family == "any" ? " and is in no calibrated family"
                        : fmt::format(", nor has its family {}", family),
        engine_gpus.empty()
            ? fmt::format("the file has none of {}", engine)
            : fmt::format("they are on {}",
                          list(std::vector<std::string>(engine_gpus.begin(), engine_gpus.end()))),
        with,
        f.s ? fmt::format("; a GPU {}left out of the fit is predicted to a median |error| of {} "
                          "({}), and a GPU unlike the measured ones may be further off",
                          family_out.s ? "family " : "", figures(*f.s), f.engines)
            : std::string());
  }
  if (!twins.empty())
    a.text += fmt::format("Measured under the calibration's models table, same shapes: {}. ",
                          list(twins));
  if (!unmeasured.empty())
    a.text += fmt::format(
        "{} {} not among {} ({}){}. ", list(unmeasured), unmeasured.size() == 1 ? "is" : "are",
        entry && !entry->measured_models.empty() ? std::string("this entry's measured models")
                                                 : fmt::format("the measured {} models", engine),
        seen.empty() ? "none" : list(seen),
        model_out.s ? fmt::format(": a model left out of the fit is predicted to a median "
                                  "|error| of {} ({})",
                                  figures(*model_out.s), model_out.engines)
                    : std::string());
  if (simulated)
    a.text += "These are the steady state's figures on closed-loop runs, not a simulation's. ";
  if (!a.text.empty()) a.text.pop_back();  // each sentence above ends in a space
  return a;
}

}  // namespace

bool bundled_as_shipped(const options& o, const std::string& given, const std::string& name) {
  // Formats are not the model: the measured runs themselves vary them (--weights, --kv, and
  // --set precision.*); any other --set changes the model.
  for (const std::string& set : o.sets)
    if (!set.starts_with("precision.")) return false;
  namespace fs = std::filesystem;
  std::error_code ec;
  try {
    return fs::equivalent(resolve_model_path(given), resolve_model_path(name), ec) && !ec;
  } catch (const spec_error&) {
    return false;  // `name` is no bundled model (a file's own name)
  }
}

bool gpu_named(const std::string& given) {
  return given.find('/') == std::string::npos && !given.ends_with(".yaml");
}

load_request report_load_of(const options& o, const gpu_spec& gpu, const std::string& gpu_given,
                            const std::vector<asked_model>& models) {
  std::int64_t isl = token_option("--isl", o.isl, 1024);
  std::int64_t osl = token_option("--osl", o.osl, 1024);
  load_request w;
  w.engine = o.engine.empty() ? "vllm" : o.engine;
  // The memory fraction report's capacity rows take sizes its load chart's pool too.
  w.cfg = engine_config_of(w.engine, isl, osl, 0, 0, gpu, typed_fraction(o, w.engine));
  calibration cal = load_calibration(o.calibration);
  std::string used;
  w.k = cal.lookup(cal.family_of(gpu.name), w.engine, &used);
  w.calibration = fmt::format("{} ({})", cal.file, used);
  w.accuracy =
      accuracy_of(cal, used, models, {gpu.name, gpu_named(gpu_given)}, w.engine, false).text;
  return w;
}

/// Whether one rank's KV pool holds a request of the workload (with a trace, whose lengths the
/// simulation checks request by request, whether there is a pool at all).
bool holds_a_request(const deployment& d, const batching_config& cfg) {
  if (kv_pool_bytes(d, cfg) <= 0) return false;
  if (cfg.isl < 1 || cfg.osl < 1) return true;
  return make_scenario(d, cfg, 1).kv_requests >= 1;
}

/// The asked layout cannot hold one request: the error names the first wider layout that can,
/// a wider tensor-parallel group within the GPU's NVLink domain (tp_domain: one server's PCIe for
/// a card without NVLink), then pipeline stages over the widest one (same ep and dp), so the
/// answer is a deployment that runs.
[[noreturn]] void refuse_without_room(const deployment& d, const serve_request& q,
                                      std::int64_t server_gpus) {
  std::string hint = "; use more ranks (`calc plan --sla` picks a layout)";
  std::int64_t widest = tp_domain(d.gpu, server_gpus);
  std::vector<serve_layout> wider;
  serve_layout l = q.layout;
  while ((l.tp * 2) * l.dp <= widest && wider.size() < 16) {
    l.tp *= 2;
    wider.push_back(l);
  }
  for (int i = 0; i < 4; ++i) {
    l.pp *= 2;
    wider.push_back(l);
  }
  for (const serve_layout& w : wider) {
    if (!layout_problem(*d.g, w).empty()) continue;
    deployment x = make_deployment(*d.g, d.gpu, w, 0, d.forms);
    if (!holds_a_request(x, q.cfg)) continue;
    hint = fmt::format("; --tp {}{} holds one ({:.1f} GB of KV pool per rank)", w.tp_group(),
                       w.pp > 1 ? fmt::format(" --pp {}", w.pp) : std::string(),
                       kv_pool_bytes(x, q.cfg) / 1e9);
    break;
  }
  kv_pool_terms terms = kv_pool(d, q.cfg);
  if (terms.pool <= 0) refuse_empty_pool(terms, d, "--tp", hint);
  throw spec_error("--isl", fmt::format("a request of {} + {} tokens needs more KV than the pool "
                                        "of {:.2f} GB per rank holds",
                                        q.cfg.isl, q.cfg.osl, terms.pool / 1e9) +
                                hint);
}

result run_serve(const options& o) {
  gpu_spec gpu = load_gpu(o.gpu);
  serve_request q = read_serve(o, gpu);
  loaded_model m = load(o);
  if (std::string why = engine_gpu_problem(find_engine(q.engine), gpu); !why.empty())
    throw spec_error("--engine", why);
  // The server (--node-gpus, else the catalogue's server_gpus) bounds tensor parallelism over
  // PCIe past the card's NVLink domain.
  const std::int64_t server = server_gpus_of(gpu, node_gpus_option(o));
  if (std::string why = domain_problem(gpu, q.layout, server); !why.empty())
    throw spec_error("--tp", why);
  calibration cal = load_calibration(q.calibration);
  std::string family = cal.family_of(gpu.name), used;
  const coefficients& k = cal.lookup(family, q.engine, &used);
  deployment d = make_deployment(m.g, gpu, q.layout, 0, compile_forms(m.g, k.expert_zipf_s));
  if (!holds_a_request(d, q.cfg)) refuse_without_room(d, q, server);
  double gpus = static_cast<double>(q.layout.gpus());
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpu.name;
  j["engine"] = q.engine;
  j["layout"] = {{"tp", q.layout.tp_group()}, {"attention_tp", q.layout.tp},
                 {"ep", q.layout.ep},           {"dp", q.layout.dp},
                 {"pp", q.layout.pp}};
  j["gpus"] = q.layout.gpus();
  j["launch_flags"] = launch_with_formats(q.engine, q.layout, q.cfg, o, *m.spec, gpu);
  j["weights_format"] = model_formats(*m.spec).weights;
  j["kv_format"] = m.spec->precision.kv.name;
  j["formats"] = format_summary(m.spec->precision);  // every storage format costed
  if (q.trace.empty()) {
    j["isl"] = q.cfg.isl;
    j["osl"] = q.cfg.osl;
  }
  if (q.range_ratio < 1) {
    j["range_ratio"] = q.range_ratio;
    j["seed"] = q.seed;
  }
  j["max_num_batched_tokens"] = q.cfg.max_num_batched_tokens;
  j["max_num_seqs"] = q.cfg.max_num_seqs;
  if (q.cfg.holds.batch_wait_iters > 0) {
    j["batch_wait_timeout_iters"] = q.cfg.holds.batch_wait_iters;
    j["batch_wait_max_tokens_ratio"] = q.cfg.holds.batch_wait_tokens_ratio;
  }
  if (q.cfg.holds.adp_balance)
    j["attention_dp_balance"] = {{"timeout_iters", q.cfg.holds.adp_balance_timeout_iters},
                                 {"batching_wait_iters", q.cfg.holds.adp_balance_batching_iters}};
  accuracy_note accuracy =
      accuracy_of(cal, used, {{m.spec->name, bundled_as_shipped(o, o.model, m.spec->name)}},
                  {gpu.name, gpu_named(o.gpu)}, q.engine, q.simulate || q.concurrency.empty());
  j["calibration"] = {{"file", cal.file}, {"entry", used}, {"accuracy", accuracy.json}};
  j["points"] = ojson::array();
  std::string md = fmt::format(
      "# calc serve: {} on {} x {} ({}), {}{}\n\n", m.spec->name, q.layout.gpus(), gpu.display,
      q.engine, layout_flags(q.layout),
      q.trace.empty() ? fmt::format(", ISL {} OSL {}", q.cfg.isl, q.cfg.osl) : std::string());
  if (q.simulate) {
    md += fmt::format(
        "Closed loop simulated: each client sends its next request when the last one ends, "
        "all at once to start; {} requests per attention group{}.{}\n\n",
        q.requests_given ? std::to_string(q.requests) : std::string("10 x concurrency"),
        q.range_ratio < 1 ? fmt::format(", lengths drawn in [{} x, 1 x] the given ones (seed {})",
                                        q.range_ratio, q.seed)
                          : std::string(),
        q.range_ratio < 1
            ? ""
            : " Every request the same length: the clients that open together finish, send and "
              "prefill together every round, each waiting for the others' prefill; a benchmark "
              "client that draws its lengths (--range-ratio 0.8) puts them out of step.");
    md +=
        "| concurrency | TTFT mean / p50 / p90 / p99 ms | TPOT mean / p90 ms | ITL p90 / p99 ms "
        "| e2e ms | tok/s | tok/s/GPU | tok/s/user | req/s | KV fits | preemptions |\n";
    md += "|---:|---|---|---|---:|---:|---:|---:|---:|:---:|---:|\n";
    for (std::int64_t c : q.concurrency) {
      simulation sim = simulate_point(d, q, k, c);
      ojson p = simulation_json(sim, gpus);
      p["concurrency"] = c;
      j["points"].push_back(p);
      md += fmt::format(
          "| {} | {} / {} / {} / {} | {} / {} | {} / {} | {} | {:.0f} | {:.0f} | {:.1f} | {:.2f} "
          "| {} | {} |\n",
          c, ms(sim.ttft.mean), ms(sim.ttft.p50), ms(sim.ttft.p90), ms(sim.ttft.p99),
          ms(sim.tpot.mean), ms(sim.tpot.p90), ms(sim.itl.p90), ms(sim.itl.p99), ms(sim.e2e.mean),
          sim.output_tokens_per_s, sim.output_tokens_per_s / gpus,
          sim.tpot.mean > 0 ? 1e3 / sim.tpot.mean : 0.0, sim.requests_per_s,
          sim.kv_limited() ? "no" : "yes", sim.preemptions);
    }
  } else if (!q.concurrency.empty()) {
    md +=
        "| concurrency | TTFT ms | TPOT ms | ITL p90 / p99 ms | e2e ms | tok/s | tok/s/GPU | "
        "tok/s/user | req/s | KV fits | step ms (weights / KV / compute / comm / overhead) |\n";
    md += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---|\n";
    for (std::int64_t c : q.concurrency) {
      scenario s = make_scenario(d, q.cfg, c);
      steady_state st = solve_steady_state(s, k);
      latency_stats itl = steady_itl(s, st, k);
      const step_time& t = st.decode_step;
      double per_user = st.tpot_ms > 0 ? 1e3 / st.tpot_ms : 0;
      j["points"].push_back({{"concurrency", c},
                             {"ttft_ms", st.ttft_ms},
                             {"tpot_ms", st.tpot_ms},
                             {"itl_ms", itl.mean},
                             {"itl", stats_json(itl)},
                             {"e2e_ms", st.e2e_ms},
                             {"output_tokens_per_s", st.output_tokens_per_s},
                             {"output_tokens_per_s_per_gpu", st.output_tokens_per_s / gpus},
                             {"output_tokens_per_s_per_user", per_user},
                             {"requests_per_s", st.requests_per_s},
                             {"kv_pool_fits", s.kv_pool_fits},
                             {"kv_pool_requests", s.kv_requests},
                             {"running", s.running},
                             {"prefill_chunk", s.chunk},
                             {"prefill_busy", st.prefill_busy},
                             {"step", step_json(t)}});
      md += fmt::format(
          "| {} | {} | {} | {} / {} | {} | {:.0f} | {:.0f} | {:.1f} | {:.2f} | {} | {} / {} / {} / "
          "{} / {} |\n",
          c, ms(st.ttft_ms), ms(st.tpot_ms), ms(itl.p90), ms(itl.p99), ms(st.e2e_ms),
          st.output_tokens_per_s, st.output_tokens_per_s / gpus, per_user, st.requests_per_s,
          s.kv_pool_fits ? "yes" : "no", ms(t.weights_ms), ms(t.kv_ms), ms(t.compute_ms),
          ms(t.communication_ms), ms(t.overhead_ms));
    }
  } else {
    std::vector<arrival> arrivals =
        q.trace.empty() ? poisson_arrivals(q.rate, q.requests, q.cfg.isl, q.cfg.osl, q.seed)
                        : read_trace(q.trace);
    // The lengths from their own stream (seed + 1), so that the arrival times stay those of
    // the same --seed at a ratio of 1.
    if (q.trace.empty()) draw_lengths(arrivals, q.range_ratio, q.seed + 1);
    // Engines refuse a request whose prompt and output pass the model's context (vLLM's
    // max_model_len defaults to it); the simulation costs it, and says so.
    std::int64_t longest = 0;
    for (const arrival& a : arrivals) longest = std::max(longest, a.isl + a.osl);
    if (auto w = context_limit_warning(*m.spec, longest)) warning_sink::add(*w);
    simulation sim;
    try {
      sim = simulate(d, q.cfg, k, arrivals);
    } catch (const request_refused& e) {
      // A trace's request is named by its line; Poisson arrivals take their lengths from --isl
      // and --osl, which is what the user typed.
      if (q.trace.empty()) throw spec_error("--isl", e.message());
      throw spec_error(source_location{q.trace, e.line, 1}, e.field(), e.message());
    } catch (const spec_error& e) {
      // Too much work to simulate: a trace's own size, not a --requests the user did not give.
      if (q.trace.empty() || e.field() != "requests") throw;
      throw spec_error(source_location{q.trace, 0, 0}, "trace", e.message());
    }
    ojson p;
    if (q.trace.empty())
      p["rate"] = q.rate;
    else
      p["trace"] = q.trace;
    p.update(simulation_json(sim, gpus));
    j["points"].push_back(p);
    md += q.trace.empty()
              ? fmt::format("Poisson arrivals at {} requests/s, {} requests, seed {}{}.\n\n",
                            q.rate, sim.requests, q.seed,
                            q.range_ratio < 1
                                ? fmt::format(", lengths drawn in [{} x, 1 x] the given ones",
                                              q.range_ratio)
                                : std::string())
              : fmt::format("Trace {}: {} requests.\n\n", q.trace, sim.requests);
    md += "| metric (ms) | mean | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|\n";
    for (auto [name, s] : {std::pair{"TTFT", sim.ttft}, std::pair{"TPOT", sim.tpot},
                           std::pair{"ITL", sim.itl}, std::pair{"e2e", sim.e2e}})
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", name, ms(s.mean), ms(s.p50), ms(s.p90),
                        ms(s.p99), ms(s.max));
    md += fmt::format(
        "\n{:.0f} output tokens/s ({:.0f} per GPU), {:.2f} requests/s; longest queue "
        "{} requests.\n",
        sim.output_tokens_per_s, sim.output_tokens_per_s / gpus, sim.requests_per_s,
        sim.max_waiting);
    md += fmt::format("\nKV pool {:.1f} GB per rank: ", sim.kv_pool_bytes / 1e9);
    if (!sim.kv_limited())
      md += "every request fit; none waited for KV or was preempted.\n";
    else
      md += fmt::format(
          "{} requests waited in the queue for KV; {} preemptions ({} requests) freed KV, "
          "{} tokens prefilled again ({}).\n",
          sim.requests_waited_for_kv, sim.preemptions, sim.requests_preempted,
          sim.recomputed_tokens, kv_policy_words(q.cfg.kv));
  }
  if (q.concurrency.empty())
    md += fmt::format(
        "\nMean step {} ms (weights {} / KV {} / compute {} / comm {} / overhead {}) over {} "
        "steps.\n",
        ms(j["points"][0]["step"]["total_ms"].get<double>()),
        ms(j["points"][0]["step"]["weights_ms"].get<double>()),
        ms(j["points"][0]["step"]["kv_ms"].get<double>()),
        ms(j["points"][0]["step"]["compute_ms"].get<double>()),
        ms(j["points"][0]["step"]["communication_ms"].get<double>()),
        ms(j["points"][0]["step"]["overhead_ms"].get<double>()),
        j["points"][0]["steps"].get<std::int64_t>());
  md += fmt::format("\nFormats: {}.\n", j["formats"].get<std::string>());
  md += fmt::format("Calibration: {} ({}). {}{}.\n", cal.file, used,
                    accuracy.text.empty() ? "" : accuracy.text + " ",
                    q.simulate              ? "JSON `step`: each run's mean step"
                    : q.concurrency.empty() ? "Step = the mean step of the simulated run"
                                            : "Step = the decode step at that concurrency");
  md += fmt::format("Launch {} with: {}", q.engine, j["launch_flags"].get<std::string>());
  // Batch waiting is set in the LLM API options file (--extra_llm_api_options), not a flag.
  if (q.cfg.holds.batch_wait_iters > 0)
    md += fmt::format(
        "; extra_llm_api_options: batch_wait_timeout_iters: {}, "
        "batch_wait_max_tokens_ratio: {}",
        q.cfg.holds.batch_wait_iters, q.cfg.holds.batch_wait_tokens_ratio);
  if (q.cfg.holds.adp_balance)
    md += fmt::format(
        "; extra_llm_api_options: attention_dp_config: {{enable_balance: true, timeout_iters: "
        "{}, batching_wait_iters: {}}}",
        q.cfg.holds.adp_balance_timeout_iters, q.cfg.holds.adp_balance_batching_iters);
  md += ".\n";
  result r{j, "calc serve"};
  r.markdown = md;
  return r;
}

namespace {

ojson summary_json(const evaluation& e) {
  ojson s;
  s["all"] = stats_json(e.all);
  for (auto [key, m] : {std::pair{"by_system", &e.by_system}, std::pair{"by_engine", &e.by_engine},
                        std::pair{"by_model", &e.by_model}}) {
    s[key] = ojson::object();
    for (const auto& [name, st] : *m) s[key][name] = stats_json(st);
  }
  if (!e.fold_expert_zipf_s.empty()) s["fold_expert_zipf_s"] = e.fold_expert_zipf_s;
  return s;
}

std::string stats_table(const std::string& title, const evaluation& e) {
  std::string md = fmt::format(
      "### {}\n\n| group | rows | TPOT median % | TPOT p90 % | TTFT "
      "median % | TTFT p90 % |\n|---|---:|---:|---:|---:|---:|\n",
      title);
  auto row = [&](const std::string& name, const error_stats& s) {
    if (s.rows == 0) {
      md += fmt::format("| {} | 0 | - | - | - | - |\n", name);
      return;
    }
    md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", name, s.rows,
                      s.tpot_median, s.tpot_p90, s.ttft_median, s.ttft_p90);
  };
  row("**all**", e.all);
  for (const auto& [n, s] : e.by_system) row("gpu " + n, s);
  for (const auto& [n, s] : e.by_engine) row("engine " + n, s);
  for (const auto& [n, s] : e.by_model) row("model " + n, s);
  if (!e.fold_expert_zipf_s.empty()) {
    md += "\nExpert popularity exponent (Zipf s) each fold fitted without its group:";
    for (const auto& [n, s] : e.fold_expert_zipf_s) md += fmt::format(" {} {:g};", n, s);
    md.back() = '.';
    md += "\n";
  }
  return md + "\n";
}

/// One way of holding rows out (held_out_groupings), as --cross-validate runs it: every group
/// refitted without its rows and predicted. A grouping is run only where the rows hold two
/// groups or more: the one fold of a single GPU would have nothing left to fit and answer from
/// the built-in priors.
struct held_out_run {
  const char* grouping;
  const char* title;
  const char* unit;
  std::string (*group)(const mapped_row&);
  std::optional<evaluation> result;  // none when the rows hold one group
};

std::vector<held_out_run> run_cross_validation(const std::vector<mapped_row>& rows,
                                               const calibration& base) {
  // By the catalogue GPU, not the file's system name: two names of one card are one GPU.
  std::vector<held_out_run> runs = {
      {held_out_groupings[0],
       "Leave one GPU out (fit without the GPU, predict it)",
       "GPU",
       [](const mapped_row& m) { return m.gpu; },
       {}},
      {held_out_groupings[1],
       "Leave one GPU family out (fit without the family, predict its GPUs)",
       "GPU family",
       [](const mapped_row& m) { return m.family == "any" ? m.gpu : m.family; },
       {}},
      {held_out_groupings[2],
       "Leave one model out (fit without the model, predict it)",
       "model",
       [](const mapped_row& m) { return m.model; },
       {}}};
  for (held_out_run& run : runs) {
    std::set<std::string> groups;
    for (const mapped_row& m : rows)
      if (usable(m)) groups.insert(run.group(m));
    if (groups.size() > 1) run.result = cross_validate(rows, base, run.group);
  }
  return runs;
}

/// The cross-validations' JSON (null for one not run) and Markdown tables.
void add_cross_validation(const std::vector<held_out_run>& runs, ojson& j, std::string& md) {
  j["cross_validation"] = ojson::object();
  for (const held_out_run& run : runs) {
    j["cross_validation"][run.grouping] = run.result ? summary_json(*run.result) : ojson(nullptr);
    md += run.result
              ? stats_table(run.title, *run.result)
              : fmt::format("### {}\n\nNot run: the rows are of one {}.\n\n", run.title, run.unit);
  }
}

}  // namespace

result run_calibrate(const options& o) {
  if (o.measurements.empty() == o.evaluate.empty())
    throw spec_error("--measurements", "give one of --measurements FILE (fit) or --evaluate FILE");
  std::string file = o.measurements.empty() ? o.evaluate : o.measurements;
  std::vector<measured_row> rows = read_measured(file);
  calibration base = load_calibration(o.calibration);
  with_shipped_clients(base);
  row_mapper mapper(base);
  std::vector<mapped_row> mapped;
  mapped.reserve(rows.size());
  for (const measured_row& r : rows) mapped.push_back(mapper.map(r));
  std::int64_t refused = 0;
  for (const mapped_row& m : mapped) refused += m.s ? 0 : 1;
  if (o.simulate && (!o.measurements.empty() || o.cross_validate))
    throw spec_error("--simulate",
                     "applies only with --evaluate, without --cross-validate: the fit and its "
                     "folds cost the steady state");
  if (!o.measurements.empty()) {
    // A fit learns from rows calc models that carry both measured times (serve/fit.cpp); with
    // none, the "fitted" file would be the built-in priors under a fitted file's name.
    std::size_t fits = 0;
    for (const mapped_row& m : mapped) fits += usable(m) ? 1 : 0;
    if (fits == 0) {
      std::string why = rows.empty() ? "it has no rows"
                        : refused == static_cast<std::int64_t>(mapped.size())
                            ? fmt::format("calc models none of its {} rows (the first: {})",
                                          mapped.size(), mapped.front().error)
                        : !rows.front().fields.count("silicon_ttft_ms") ||
                                !rows.front().fields.count("silicon_tpot_ms")
                            ? std::string(
                                  "its header lacks silicon_ttft_ms or silicon_tpot_ms, "
                                  "the measured times a fit learns from")
                            : "no modelled row has both silicon_ttft_ms and silicon_tpot_ms";
      throw spec_error(source_location{file, 0, 0}, "measurements",
                       "nothing to fit: " + why);
    }
    calibration fitted = fit_calibration(
        mapped, base,
        fmt::format("fitted by `calc calibrate --measurements {}` on {} rows ({} refused)", file,
                    mapped.size() - static_cast<std::size_t>(refused), refused));
    // A (GPU family, engine) the rows do not inform keeps the base file's entry: a user's H100
    // vLLM runs leave the shipped Blackwell SGLang entry standing, rather than answering B200
    // SGLang from a pooled fit of their dense vLLM rows. (Every group of the shipped rows is
    // informed, so a refit of them keeps none and stays the same table.)
    std::set<std::pair<std::string, std::string>> informed;
    for (const mapped_row& m : mapped)
      if (usable(m)) informed.insert({m.family, m.engine});
    std::int64_t kept = 0;
    for (const calibration_entry& e : base.entries) {
      bool fitted_here = std::any_of(
          fitted.entries.begin(), fitted.entries.end(),
          [&](const calibration_entry& f) { return f.family == e.family && f.engine == e.engine; });
      if (e.family == "any" || fitted_here || informed.count({e.family, e.engine})) continue;
      calibration_entry k = e;
      k.source =
          fmt::format("kept from {} (no row of this family and engine): {}", base.file, e.source);
      fitted.entries.push_back(k);
      ++kept;
    }
    // Rows without a mixture-of-experts model cannot inform the expert popularity: the base
    // file's exponent stands (its kept entries were fitted under it), not the built-in prior.
    bool moe_rows = std::any_of(mapped.begin(), mapped.end(), [](const mapped_row& m) {
      return m.s && m.s->d.forms.experts != nullptr;
    });
    if (moe_rows)
      fitted.set_expert_popularity(fitted.expert_zipf_s, fitted.expert_zipf_source);
    else
      fitted.set_expert_popularity(
          base.expert_zipf_s,
          fmt::format("kept from {}: the rows hold no mixture-of-experts model", base.file));
    // What a user of the table may expect, recorded in it: each entry's error on its own rows,
    // and with --cross-validate on rows a fit never saw (the folds do not read the coefficients
    // of the table they are given, so these are the figures `--evaluate --cross-validate` of the
    // written file prints).
    evaluation e = evaluate(mapped, fitted);
    record_in_sample(fitted, e);
    std::vector<held_out_run> cv;
    if (o.cross_validate) cv = run_cross_validation(mapped, fitted);
    for (const held_out_run& run : cv)
      if (run.result) record_held_out(fitted, run.grouping, *run.result);
    std::string yaml = write_calibration(fitted);
    ojson j;
    j["rows"] = static_cast<std::int64_t>(mapped.size());
    j["refused"] = refused;
    j["entries"] = static_cast<std::int64_t>(fitted.entries.size());
    j["entries_kept_from_base"] = kept;
    if (!base.clients_from.empty()) j["clients_from"] = base.clients_from;
    j["summary"] = summary_json(e);
    std::string cv_tables;
    if (o.cross_validate) add_cross_validation(cv, j, cv_tables);
    result r{j, "calc calibrate"};
    if (o.out.empty()) {
      r.markdown = yaml;
    } else {
      std::ofstream out(o.out);
      if (!out) throw spec_error("--out", fmt::format("cannot write '{}'", o.out));
      out << yaml;
      r.markdown = fmt::format(
                       "# calc calibrate\n\nFitted {} entries on {} rows ({} refused){}; "
                       "wrote {}.{}\n\n",
                       fitted.entries.size() - static_cast<std::size_t>(kept),
                       mapped.size() - static_cast<std::size_t>(refused), refused,
                       kept > 0 ? fmt::format(", kept {} of {} for GPU families and engines "
                                              "the rows lack",
                                              kept, base.file)
                                : std::string(),
                       o.out,
                       base.clients_from.empty()
                           ? ""
                           : fmt::format(" {} names no benchmark clients: those of {} mapped "
                                         "the rows, and the file written carries them.",
                                         base.file, base.clients_from)) +
                   stats_table("In-sample |error|", e) + cv_tables;
    }
    return r;
  }
  if (!o.out.empty())
    throw spec_error("--out",
                     "applies only with --measurements (a fit's file); --evaluate writes its "
                     "table to stdout (--format json for every row)");
  if (rows.empty())
    throw spec_error(source_location{file, 0, 0}, "evaluate",
                     "nothing to evaluate: the file has a header and no rows");
  evaluation e = evaluate(mapped, base, o.simulate);
  ojson j;
  j["calibration"] = base.file;
  if (!base.clients_from.empty()) j["clients_from"] = base.clients_from;
  if (o.simulate) j["predicted_by"] = "closed-loop simulation";
  j["rows"] = ojson::array();
  std::size_t next = 0;
  for (const mapped_row& m : mapped) {
    if (!m.s) {
      j["rows"].push_back({{"id", m.id}, {"error", m.error}});
      continue;
    }
    if (next < e.rows.size() && e.rows[next].row == &m) {
      const row_prediction& p = e.rows[next++];
      j["rows"].push_back({{"id", m.id},
                           {"ttft_ms", p.ttft_ms},
                           {"tpot_ms", p.tpot_ms},
                           {"measured_ttft_ms", m.ttft_ms},
                           {"measured_tpot_ms", m.tpot_ms}});
    } else if (!o.simulate) {
      steady_state s = predict(m, base);
      j["rows"].push_back({{"id", m.id}, {"ttft_ms", s.ttft_ms}, {"tpot_ms", s.tpot_ms}});
    } else {
      // A row without both measurements, or one the simulation refuses (then its reason).
      try {
        simulation s = simulate_row(m, base);
        j["rows"].push_back({{"id", m.id}, {"ttft_ms", s.ttft.mean}, {"tpot_ms", s.tpot.mean}});
      } catch (const spec_error& x) {
        j["rows"].push_back({{"id", m.id}, {"error", std::string("simulation: ") + x.what()}});
      }
    }
  }
  j["summary"] = summary_json(e);
  // Rows modelled without both measured times are predicted (in --format json) but not compared.
  std::size_t uncompared = mapped.size() - static_cast<std::size_t>(refused) - e.rows.size();
  std::string md = fmt::format(
      "# calc calibrate --evaluate {}\n\nCalibration: {}{}. {} rows, {} "
      "modelled, {} refused.{}{}\n\n",
      file, base.file,
      base.clients_from.empty()
          ? ""
          : fmt::format(" (it names no benchmark clients: those of {} map the rows)",
                        base.clients_from),
      mapped.size(), e.rows.size(), refused,
      uncompared == 0 ? ""
                      : fmt::format(" {} more not compared: without both measured times, or "
                                    "refused by the simulation (`--format json` lists them).",
                                    uncompared),
      o.simulate ? " Each row predicted by simulating its closed loop." : "");
  if (e.rows.empty())
    md +=
        "No row has both a prediction and its measured times to compare: each refused "
        "row's reason is in `--format json` (`rows[].error`).\n\n";
  md += stats_table(o.simulate ? "Simulated (the calibration's steady-state fit, each row's "
                                 "closed loop played out)"
                               : "In sample (the calibration's own fit)",
                    e);
  if (o.cross_validate) add_cross_validation(run_cross_validation(mapped, base), j, md);
  std::map<std::string, std::int64_t> reasons;
  for (const mapped_row& m : mapped)
    if (!m.s) ++reasons[m.error];
  if (!reasons.empty()) {
    md += "### Rows refused\n\n| rows | why |\n|---:|---|\n";
    for (const auto& [why, n] : reasons) md += fmt::format("| {} | {} |\n", n, why);
  }
  result r{j, "calc calibrate --evaluate"};
  r.markdown = md;
  return r;
}

result run_plan_sla(const options& o) {
  sla_request q;
  // split_items drops the spaces around an item ("ttft=500, tpot=30" as a shell user quotes it).
  for (const std::string& part : split_items("--sla", o.sla, "ttft=500,tpot=30")) {
    auto eq = part.find('=');
    std::string key = part.substr(0, eq);
    double v = NAN;
    if (eq != std::string::npos) {
      try {
        std::size_t used = 0;
        v = std::stod(part.substr(eq + 1), &used);
        if (used != part.size() - eq - 1) v = NAN;
      } catch (const std::exception&) {
      }
    }
    if (!std::isfinite(v) || v <= 0)
      throw spec_error("--sla", fmt::format("'{}' is not ttft=MS or tpot=MS with MS > 0", part));
    double* target = key == "ttft" ? &q.ttft_ms : key == "tpot" ? &q.tpot_ms : nullptr;
    if (!target)
      throw spec_error("--sla", fmt::format("unknown target '{}' (known: ttft, tpot)", key));
    // ttft=500,tpot=30,ttft=50: which one was meant is not for calc to guess.
    if (*target > 0) throw spec_error("--sla", fmt::format("{} is given twice", key));
    *target = v;
  }
  if (q.ttft_ms <= 0 || q.tpot_ms <= 0)
    throw spec_error("--sla", "give both targets, e.g. ttft=500,tpot=30");
  std::int64_t isl = token_option("--isl", o.isl);
  std::int64_t osl = token_option("--osl", o.osl);
  // The load is --rate or --concurrency; plain plan's question (--requests held at --length)
  // is not asked with --sla, and would otherwise be read as neither.
  if (o.requests_given)
    throw spec_error("--requests",
                     "is not read with --sla: give the load as --rate R or --concurrency C");
  if (o.length != -1 || !o.lengths.empty())
    throw spec_error("--length", "is not read with --sla: give --isl N --osl N");
  // Plain plan's engine and memory options (--gpu-memory-utilization, --block-size, ...) size
  // its KV question; the time model takes the engine's defaults and the calibration, so each
  // would be silently ignored here.
  static const std::set<std::string> read = {"--model",
                                             "--set",
                                             "--gpu",
                                             "--node-gpus",
                                             "--max-gpus",
                                             "--weights",
                                             "--embeddings",
                                             "--kv",
                                             "--engine",
                                             "--sla",
                                             "--rate",
                                             "--concurrency",
                                             "--isl",
                                             "--osl",
                                             "--calibration",
                                             "--format",
                                             "--max-num-seqs",
                                             "--max-num-batched-tokens",
                                             "--gpu-memory-utilization",
                                             "--mem-fraction-static",
                                             "--kv-cache-free-gpu-memory-fraction"};
  for (const std::string& name : o.given)
    if (!read.count(name))
      throw spec_error(name,
                       "is not read with --sla (the time model takes the engine's defaults "
                       "and the calibration; --max-num-seqs and --max-num-batched-tokens "
                       "set its batching, --gpu-memory-utilization, --mem-fraction-static and "
                       "--kv-cache-free-gpu-memory-fraction its KV pool)");
  const double rate = rate_option(o);
  if ((rate > 0) == !o.concurrency.empty())
    throw spec_error("--rate", "give one of --rate R or --concurrency C with --sla");
  q.rate = rate;
  if (!o.concurrency.empty()) {
    auto n = parse_token_count(o.concurrency);
    if (!n || *n < 1 || *n > limits::requests)
      throw spec_error("--concurrency",
                       fmt::format("'{}' is not one count of clients >= 1 (the clients of every "
                                   "instance together)",
                                   o.concurrency));
    q.concurrency = *n;
  }
  check_limit("--max-gpus", o.max_gpus, 1, limits::cards, "cards");
  std::string engine = o.engine.empty() ? "vllm" : o.engine;
  check_engine_knobs(o);
  gpu_spec gpu = load_gpu(o.gpu);
  q.cfg = engine_config_of(engine, isl, osl, o.max_num_batched_tokens, o.max_num_seqs, gpu,
                           typed_fraction(o, engine));
  q.max_gpus = o.max_gpus;
  loaded_model m = load(o);
  if (std::string why = engine_gpu_problem(find_engine(engine), gpu); !why.empty())
    throw spec_error("--engine", why);
  q.node_gpus = node_gpus_option(o);
  calibration cal = load_calibration(o.calibration);
  std::string used;
  const coefficients& k = cal.lookup(cal.family_of(gpu.name), engine, &used);
  sla_plan p = plan_sla(m.g, gpu, k, q);
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpu.name;
  j["engine"] = engine;
  accuracy_note accuracy =
      accuracy_of(cal, used, {{m.spec->name, bundled_as_shipped(o, o.model, m.spec->name)}},
                  {gpu.name, gpu_named(o.gpu)}, engine, false);
  j["calibration"] = {{"file", cal.file}, {"entry", used}, {"accuracy", accuracy.json}};
  j["sla"] = {{"ttft_ms", q.ttft_ms}, {"tpot_ms", q.tpot_ms}};
  if (q.rate > 0)
    j["rate"] = q.rate;
  else
    j["concurrency"] = q.concurrency;
  j["feasible"] = p.feasible;
  j["layouts_tried"] = p.layouts_tried;
  std::string md = fmt::format(
      "# calc plan --sla: {} on {} ({}), TTFT <= {} ms, TPOT <= {} ms, {}\n\n", m.spec->name,
      gpu.display, engine, q.ttft_ms, q.tpot_ms,
      q.rate > 0 ? fmt::format("{} requests/s", q.rate) : fmt::format("{} clients", q.concurrency));
  if (!p.feasible) {
    j["binding"] = p.binding;
    j["reason"] = p.reason;
    md += fmt::format("Infeasible ({}): {}.\n", p.binding, p.reason);
  } else {
    const sla_option& b = *p.best;
    j["gpus"] = b.gpus;
    j["tp"] = b.layout.tp_group();
    j["attention_tp"] = b.layout.tp;
    j["pp"] = b.layout.pp;
    j["ep"] = b.layout.ep;
    j["dp"] = b.layout.dp;
    j["instances"] = b.instances;
    j["gpus_per_instance"] = b.layout.gpus();
    // The load asked for, spread over the instances, and the most each takes within targets.
    j["concurrency_per_instance"] = b.load_per_group * b.layout.dp;
    j["concurrency_per_attention_group"] = b.load_per_group;  // serve's --concurrency
    j["max_concurrency_per_instance"] = b.concurrency_per_group * b.layout.dp;
    j["max_concurrency_per_attention_group"] = b.concurrency_per_group;
    j["launch_flags"] = launch_with_formats(engine, b.layout, q.cfg, o, *m.spec, gpu);
    j["ttft_ms"] = b.at_load.ttft_ms;
    j["tpot_ms"] = b.at_load.tpot_ms;
    j["requests_per_s_per_instance"] = b.at_load.requests_per_s;
    j["max_requests_per_s_per_instance"] = b.at.requests_per_s;
    j["reason"] = p.reason;
    md +=
        "| GPUs | instances | tp | ep | dp | pp | clients / instance | TTFT ms | TPOT ms | req/s / "
        "instance | most clients / instance (TTFT, TPOT ms) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {} ({}, {}) |\n\n",
                      b.gpus, b.instances, b.layout.tp_group(), b.layout.ep, b.layout.dp,
                      b.layout.pp, b.load_per_group * b.layout.dp, ms(b.at_load.ttft_ms),
                      ms(b.at_load.tpot_ms), b.at_load.requests_per_s,
                      b.concurrency_per_group * b.layout.dp, ms(b.at.ttft_ms), ms(b.at.tpot_ms));
    md += fmt::format("Launch {} with: {}.\n\n", engine, j["launch_flags"].get<std::string>());
    md += fmt::format("Why not fewer: {}.\n", p.reason);
  }
  md += fmt::format("\nCalibration: {} ({}).{}\n", cal.file, used,
                    accuracy.text.empty() ? "" : " " + accuracy.text);
  result r{j, "calc plan --sla"};
  r.markdown = md;
  return r;
}

}  // namespace calc::cli
