// The engine questions as typed calls: "what does the engine hold on these cards?" (capacity)
// and "on how few cards does it hold K requests?" (plan). A request struct in, a result struct
// out; the CLI only binds options into the request and serialises the result. The memory budget
// (the engine's logged KV memory per rank, or an estimate from the card's runtime-visible memory)
// is worked here, beside the allocation rules of engine.h it feeds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/limits.h"
#include "engine/engine.h"
#include "graph/graph.h"
#include "spec/gpu_spec.h"

namespace calc::engine {

/// What an engine version deducts from its share of the card besides the weights when no KV
/// figure is logged: one row per version range (docs/engines.md, "Available memory"), as data
/// beside the allocation rules of engine.h.
struct budget_rules {
  const char* engine;  // "vllm" or "sglang"
  const char* versions;
  int min_version = 0;  // major * 1000 + minor, inclusive
  int max_version = 0;
  /// Memory outside PyTorch's allocator per rank (CUDA context, NCCL and custom all-reduce
  /// buffers), at TP 1 and at TP > 1, in bytes.
  std::int64_t non_torch_tp1 = 0;
  std::int64_t non_torch_tp_many = 0;
  /// Bytes the profile run's sampler keeps per request row and vocabulary entry (bf16 logits,
  /// their fp32 copy, the probabilities, ...); the rows are min(max_num_seqs, batched tokens).
  std::int64_t sampler_bytes_per_logit = 0;
  /// max_num_seqs when not given: `vllm serve` on a card of at least 70 GiB, and on smaller.
  std::int64_t default_seqs_large_card = 256;
  std::int64_t default_seqs = 256;
  /// The CUDA graph pool deducted before the cache is sized (vLLM >= 0.21 estimates it during
  /// profiling); 0: graphs are captured after sizing and come out of the utilisation margin.
  std::int64_t cuda_graph = 0;
  /// SGLang: the default --mem-fraction-static is computed from the card and the layout
  /// (server_args.py), not a constant.
  bool computed_fraction = false;
  const char* source = "";
  /// vLLM: --limit-mm-per-prompt with every modality at 0 runs a multimodal checkpoint
  /// text-only and skips loading its vision tower (PR #22299); false: the tower is loaded
  /// whatever the limits.
  bool text_only_skips_vision = false;
  /// max_num_batched_tokens when not given, on a card of at least 70 GiB and on smaller, and
  /// the cards kept on the smaller defaults whatever their memory: a lower-case part of the
  /// card's name (vLLM matches its device name; 0 / "": no such rule, the large-card value).
  std::int64_t default_batched_large_card = 8192;
  std::int64_t default_batched = 8192;
  const char* small_defaults_names = "";
};

/// The budget rules, oldest first per engine.
const std::vector<budget_rules>& budget_rule_sets();

/// The scheduler's batch defaults on `card` when neither is given.
struct batch_defaults {
  std::int64_t batched_tokens = 0;  // max_num_batched_tokens
  std::int64_t seqs = 0;            // max_num_seqs
};

/// `vllm serve`'s defaults on `card` (EngineArgs.get_batch_defaults): the large-card values on
/// a card of at least 70 GiB as the runtime reports it whose name does not hold one of
/// `small_defaults_names`, else the smaller ones.
batch_defaults default_batch(const budget_rules& b, const gpu_spec& card);

/// The budget rules of `engine` at `version` ("" = the newest).
const budget_rules& find_budget_rules(const std::string& engine, const std::string& version);

/// Where the KV memory of each rank comes from.
struct memory_request {
  /// The engine's logged "Available KV cache memory": one value for every rank, or one per
  /// rank in vLLM's rank order (pp_rank x tp + tp_rank). Empty: estimate it from `gpu`.
  std::vector<checked> logged;
  std::optional<gpu_spec> gpu;  // the card, for the estimate
  std::string engine_version;   // picks the budget rules ("" = the newest)
  /// vLLM's --gpu-memory-utilization; SGLang's --mem-fraction-static (none: SGLang's computed
  /// default). Each must lie in (0, 1].
  double gpu_memory_utilization = 0.9;
  std::optional<double> mem_fraction_static;
  /// vLLM: replaces the estimate of everything besides the weights (activation peak, non-torch
  /// memory, CUDA graph pool).
  std::optional<checked> activation;
  /// The vision tower and projector of a multimodal checkpoint, as stored (the checkpoint's
  /// named difference, spec/hf/checkpoint.h); 0: none, or no headers to count it from. The
  /// engines load it beside the text model, split over the TP ranks of the first stage.
  checked vision_bytes;
  /// vLLM's --limit-mm-per-prompt with every modality the tower takes at 0 (text-only mode).
  bool text_only = false;
  std::string modalities = "image";  // what the tower takes, for its note: "image and video"
};

/// The capacity question: a model on one layout under one rule set.
struct capacity_request {
  const rule_set* rules = nullptr;
  engine_config config;  // the knobs; available_kv_bytes is worked out from `memory`
  memory_request memory;
};

/// The budget of one rank without a logged figure, term by term (all 0 with --kv-memory).
struct budget_terms {
  checked card_memory;        // what the CUDA runtime reports (or the figure as sold)
  double fraction = 0;        // --gpu-memory-utilization / --mem-fraction-static as applied
  std::string fraction_source;
  checked engine_share;       // card x fraction: vLLM's requested_memory
  checked activation_peak;    // vLLM: the profile run's peak (forward pass or sampler)
  checked forward_peak;       // its forward-pass candidate
  checked sampler_peak;       // its sampler candidate (on the last pipeline stage)
  checked non_torch;          // vLLM: CUDA context and communication buffers
  checked cuda_graph;         // vLLM >= 0.21: the graph pool deducted before sizing
  std::int64_t batched_tokens = 0;  // the profile run's tokens
  std::int64_t sampler_rows = 0;    // its sampler rows
};

/// The answer: the knobs as applied, the memory budget and the engine's allocation.
struct capacity_result {
  const rule_set* rules = nullptr;
  const budget_rules* budget = nullptr;  // the deductions' rules (estimate only)
  engine_config config;       // with available_kv_bytes (and rank_kv_bytes) filled
  std::string memory_source;  // where available_kv_bytes came from, in words
  checked weight_bytes_per_rank;  // the tightest stage's text model, plus the vision tower
  checked vision_bytes_per_rank;  // the vision tower's share on a first-stage rank
  std::string vision_note;        // why the tower is not counted, when a checkpoint holds one
  checked activation_bytes;  // vLLM: every deduction besides the weights (0 with --kv-memory)
  checked card_memory;       // the card memory the estimate started from (0 with --kv-memory)
  budget_terms terms;
  engine_capacity capacity;
  /// True when the estimate left no memory for the cache (weights and reservations ate it).
  bool no_memory_left() const { return capacity.available_kv_bytes <= 0; }
};

/// Works out the memory budget of every rank and the engine's allocation. Throws spec_error
/// for layouts the model cannot take, a missing card, a fraction outside (0, 1], or a memory
/// list whose length is neither 1 nor tp x pp.
capacity_result answer_capacity(const graph& g, const capacity_request& q);

/// The plan question: the fewest cards whose engine concurrency holds `requests` requests of
/// max_model_len, over the layouts plain `plan` deploys (plan/placement.h deployable_layouts:
/// TP a power of two within the card's NVLink domain dividing the heads, PP only across
/// domains, replicas of a layout past one instance), so both plans choose among the same
/// layouts by the same preferences.
struct plan_request {
  capacity_request capacity;  // its config's tensor/pipeline degrees are searched over
  std::optional<gpu_spec> card;  // the card whose NVLink domain bounds TP (else node_gpus)
  std::int64_t requests = 1;
  std::optional<std::int64_t> node_gpus;  // cards per server; none: the card's server_gpus
  std::int64_t max_gpus = limits::default_max_gpus;
};

struct plan_result {
  std::optional<capacity_result> best;  // none: no layout up to max_gpus holds the requests
  std::int64_t gpus = 0;                // tp x pp x instances of `best`
  std::int64_t instances = 1;           // replicas of the layout sharing the requests
};

plan_result answer_plan(const graph& g, const plan_request& q);

/// The profile run's activation peak on one rank (vLLM's profile_run: a forward pass of
/// `batched` tokens, then the sampler on one row per request), as budget_terms fills it.
budget_terms activation_terms(const graph& g, const budget_rules& b, std::int64_t batched,
                              std::int64_t seqs, std::int64_t tp);

/// SGLang's default --mem-fraction-static for a card of `card_mib` MiB at tp x pp
/// (server_args.py, _handle_gpu_memory_settings): 1 - reserved / card, rounded to 3 decimals.
/// The reserve grows with the chunked prefill size: `chunked_prefill` when given (> 0), else the
/// card's default bucket.
double sglang_default_fraction(std::int64_t card_mib, std::int64_t tp, std::int64_t pp,
                               std::int64_t chunked_prefill = 0);

}  // namespace calc::engine
