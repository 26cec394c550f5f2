// Continuous batching as the engines do it: each step runs the decode token of every running
// request plus a prefill chunk under the token budget (max-num-batched-tokens) and the request
// cap (max-num-seqs), with the KV pool bounding how many run at once. This file holds the engine
// defaults (data, one row per engine) and the closed-loop steady state at a concurrency C.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "serve/holds.h"
#include "serve/step.h"

namespace calc::serve {

/// What an engine does when its KV pool cannot hold the next tokens of the running requests
/// (docs/commands.md cites the engine code for each).
enum class kv_policy {
  preempt_newest,  // vLLM V1: free the most recently admitted running request's KV, put it back
                   // at the front of the queue; it re-prefills prompt + output so far (less
                   // what the prefix cache kept: preempted_kv_cached)
  retract,         // SGLang: retract the decoding request with the fewest output tokens (the
                   // longest prompt on a tie) to the back of the queue, same recompute
  reserve_whole,   // TensorRT-LLM GUARANTEED_NO_EVICT: admit only what fits at its full length
};

/// What an engine does by default (one row per engine; docs/engines.md cites the sources).
struct engine_defaults {
  const char* name;                         // vllm, sglang, trtllm
  // Token budget of one step and running requests at most; 0: picked by card from the
  // engine's memory-budget rules (engine::default_batch: `vllm serve` keeps 2048 and 256 below
  // 70 GiB and on A100s, 8192 and 1024 elsewhere).
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
  bool mixed_prefill = true;                // prefill chunks share a step with decodes
  double memory_fraction = 0.9;             // of the card the engine may use (weights + KV)
  bool fraction_of_free = false;            // the fraction applies to what the weights leave
  // The engine whose memory-budget rules (engine::budget_rules, the rules `calc capacity`
  // reproduces startup logs with) size the pool: vLLM's deductions, SGLang's fraction by card
  // and layout. nullptr: memory_fraction as above.
  const char* budget_engine = nullptr;
  std::int64_t kv_block_tokens = 16;        // tokens per KV page (block_size / page_size)
  const char* source;
  // When the KV pool runs out; reserve_whole also means a request holds KV for ISL + OSL from
  // admission, where the others page it as it grows.
  kv_policy kv = kv_policy::preempt_newest;
  bool preempted_kv_cached = false;  // a preempted request's freed blocks stay as prefix cache
  // The token budget and the running cap are the instance's, split over its attention-DP
  // groups (SGLang under --enable-dp-attention: chunked_prefill_size //= dp_size in
  // server_args.py, max_running_requests // dp_size per worker), not each group's own.
  bool budget_over_dp = false;
  // Attention DP is on or off, not a size: TensorRT-LLM's enable_attention_dp makes every rank
  // of the tp group its own attention group (attention tp 1; tensorrt_llm/mapping.py).
  bool attention_dp_whole = false;
  // The GPU makers (gpu_spec::vendor) whose cards the engine serves on.
  std::array<const char*, 3> vendors = {"nvidia", "amd", "intel"};
};

/// The rows; throws spec_error naming --engine for an unknown engine.
const engine_defaults& find_engine(const std::string& name);
const std::vector<engine_defaults>& engines();

/// A workload and the engine's knobs, per serving instance.
struct batching_config {
  std::int64_t isl = 0;  // input tokens per request
  std::int64_t osl = 0;  // output tokens per request
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
  bool mixed_prefill = true;
  double memory_fraction = 0.9;
  bool fraction_of_free = false;  // KV pool = fraction x (memory - weights), not fraction x memory
  const char* budget_engine = nullptr;  // see engine_defaults
  // memory_fraction as typed (vLLM's --gpu-memory-utilization, SGLang's --mem-fraction-static):
  // SGLang's is then not computed for the card and layout.
  bool fraction_typed = false;
  // SGLang: the chunked prefill size its memory reserve is sized for, as typed
  // (--max-num-batched-tokens); 0: its default chunk for the card (sglang_default_fraction),
  // which the scheduler modelled here does not follow (it keeps max_num_batched_tokens).
  std::int64_t reserve_chunk = 0;
  std::int64_t kv_block_tokens = 16;  // tokens per KV page
  kv_policy kv = kv_policy::preempt_newest;  // see engine_defaults
  // A preempted request's freed blocks stay in the prefix cache until reused (vLLM V1 with
  // prefix caching, its default): a resume recomputes only what was evicted meanwhile.
  bool preempted_kv_cached = false;
  prompt_holds holds;           // TensorRT-LLM's holds of new prompts (off by default)
  bool budget_over_dp = false;  // see engine_defaults
  bool attention_dp_whole = false;  // see engine_defaults
};

/// Why engine `e` does not run on `gpu` ("" when it does, or when the card's maker is not
/// recorded): TensorRT-LLM builds on CUDA.
std::string engine_gpu_problem(const engine_defaults& e, const gpu_spec& gpu);

/// Why `l` is not a layout the engine can launch ("" when it is): a partial attention DP
/// where the engine's is all or nothing (attention_dp_whole).
std::string engine_layout_problem(const batching_config& cfg, const serve_layout& l);

/// The knobs as one attention-DP group of a layout with `dp` groups runs them: an engine that
/// splits them over the groups (budget_over_dp) gives each its share, at least 1; the others
/// apply them per group.
batching_config per_attention_group(batching_config cfg, std::int64_t dp);

/// Mean decode steps a new prompt is held by batch waiting, with prompts arriving at `per_step`
/// a step: a held group is released after `iters` steps or when `more` prompts have joined its
/// first (their tokens then reach the threshold); 0 when `more` < 1.
double batch_wait_steps(double per_step, double iters, std::int64_t more);

/// Mean steps a new prompt is held by the attention-DP balance, prompts reaching each of `ranks`
/// ranks at `per_step` a step: the engine releases them when every rank has one (then after
/// `batching` steps more) or `timeout` steps after its last release.
double balance_wait_steps(double per_step, std::int64_t ranks, double timeout, double batching);

/// The engine's flags for `l` (launch_flags) and for the knobs `cfg` sets away from the
/// engine's defaults, in its own spelling: vLLM --max-num-batched-tokens / --max-num-seqs,
/// SGLang --chunked-prefill-size / --max-running-requests, TensorRT-LLM (trtllm-serve)
/// --max_num_tokens / --max_batch_size. A line to paste runs what was modelled.
std::string launch_line(const std::string& engine, const serve_layout& l,
                        const batching_config& cfg, const gpu_spec& gpu);

/// The engine's defaults on `gpu` for one workload of `isl` input and `osl` output tokens per
/// request.
batching_config engine_batching(const engine_defaults& e, std::int64_t isl, std::int64_t osl,
                                const gpu_spec& gpu);

/// What one rank's KV pool is made of: the card's runtime-visible memory, the share the engine
/// takes of it, and what it deducts before the cache.
struct kv_pool_terms {
  double card = 0;      // bytes the CUDA runtime reports (engine_visible_memory)
  double fraction = 0;  // of the card, or of what the weights leave (fraction_of_free)
  double weights = 0;   // the rank's weights
  double reserved = 0;  // vLLM: activation peak, non-torch memory and CUDA graph pool
  double pool = 0;      // what is left for the cache; <= 0 when nothing is
  std::string why;      // where the fraction and the deductions come from, in words
  /// The knob to change when the engine's own reserve, not the weights, leaves no pool (SGLang's
  /// fraction for its chunk, vLLM's activation peak for its batch); "" when the weights do.
  std::string knob;
};

/// One rank's KV pool by the engine's memory-budget rules (engine/question.h: vLLM takes
/// gpu_memory_utilization of the card less the weights, the profile run's activation peak, the
/// non-torch memory and the graph pool; SGLang its mem_fraction_static for the card and layout
/// less the weights; TensorRT-LLM free_gpu_memory_fraction of what the weights leave). `cfg`
/// holds the instance's knobs, before per_attention_group splits them.
kv_pool_terms kv_pool(const deployment& d, const batching_config& cfg);

/// kv_pool(d, cfg).pool.
double kv_pool_bytes(const deployment& d, const batching_config& cfg);

/// Refuses an empty pool (spec_error) in one line: naming the knob whose reserve empties it
/// (kv_pool_terms::knob), else `field` (the flag that asks for more ranks) and `hint`.
[[noreturn]] void refuse_empty_pool(const kv_pool_terms& t, const deployment& d,
                                    const std::string& field, const std::string& hint);

/// The step shapes the steady state needs, costed once: decode alone, the prefill chunk (beside
/// the decodes or alone, as the engine runs it), and a full-budget step of the opening burst.
struct scenario {
  deployment d;
  batching_config cfg;
  std::int64_t concurrency = 0;  // clients per attention group (closed loop)
  std::int64_t running = 0;      // requests decoding at once (concurrency within the caps)
  std::int64_t chunk = 0;        // prefill tokens per step
  std::int64_t chunks = 0;       // steps one request's prefill takes
  std::int64_t kv_requests = 0;  // requests whose state fits the KV pool of a rank
  bool kv_pool_fits = true;
  step_costs decode;
  // The decode step at fewer running requests: a closed loop's clients spend part of each cycle
  // waiting for their first token (queue and prefill), out of the decode batch. Costed at
  // 1/4, 1/2 and 3/4 of `decode`'s requests (the full batch is `decode`) and interpolated.
  std::array<step_costs, 3> decode_part{};
  std::array<double, 4> decode_batch{};  // the requests of decode_part[0..2] and of decode
  step_costs mixed;              // decode plus one chunk (engines that mix; empty otherwise)
  step_costs prefill;            // one chunk alone (engines that do not mix; empty otherwise)
  // A cohort: the whole prompts that filled one step of the opening burst (as many as the
  // budget holds), prefilled together in one step, beside the decodes where the engine mixes.
  std::int64_t cohort = 1;  // its prompts (1: a prompt fills the budget alone)
  step_costs cohort_step;
  step_costs burst;              // one full-budget prefill step of the opening burst
  std::int64_t burst_steps = 0;  // steps the opening burst's prefills take
};

/// Costs the steps of `concurrency` clients per attention group (one instance has layout.dp
/// groups); throws spec_error for zero tokens or a model whose weights do not fit.
scenario make_scenario(const deployment& d, const batching_config& cfg, std::int64_t concurrency);

/// The steady state: TTFT includes waiting for prefill budget, TPOT the prefill chunks of other
/// requests interleaved with this one's decodes.
struct steady_state {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double e2e_ms = 0;
  double requests_per_s = 0;       // per instance
  double output_tokens_per_s = 0;  // per instance
  double prefill_busy = 0;         // share of a request's token time spent on others' prefill
  step_time decode_step;           // the decode step's breakdown
};

steady_state solve_steady_state(const scenario& s, const coefficients& k);

}  // namespace calc::serve
