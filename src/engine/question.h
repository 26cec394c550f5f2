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

#include "engine/engine.h"
#include "graph/graph.h"
#include "spec/gpu_spec.h"

namespace calc::engine {

/// Where the KV memory of each rank comes from.
struct memory_request {
  /// The engine's logged "Available KV cache memory": one value for every rank, or one per
  /// rank in vLLM's rank order (pp_rank x tp + tp_rank). Empty: estimate it from `gpu`.
  std::vector<checked> logged;
  std::optional<gpu_spec> gpu;  // the card, for the estimate
  /// vLLM's --gpu-memory-utilization or SGLang's --mem-fraction-static, by the rule set's
  /// engine; each must lie in (0, 1].
  double gpu_memory_utilization = 0.9;
  double mem_fraction_static = 0.88;
  std::optional<checked> activation;  // vLLM: replaces the activation estimate
};

/// The capacity question: a model on one layout under one rule set.
struct capacity_request {
  const rule_set* rules = nullptr;
  engine_config config;  // the knobs; available_kv_bytes is worked out from `memory`
  memory_request memory;
};

/// The answer: the knobs as applied, the memory budget and the engine's allocation.
struct capacity_result {
  const rule_set* rules = nullptr;
  engine_config config;       // with available_kv_bytes (and rank_kv_bytes) filled
  std::string memory_source;  // where available_kv_bytes came from, in words
  checked weight_bytes_per_rank;
  checked activation_bytes;  // the vLLM estimate's activation + graph term (0 with --kv-memory)
  checked card_memory;       // the card memory the estimate started from (0 with --kv-memory)
  engine_capacity capacity;
  /// True when the estimate left no memory for the cache (weights and reservations ate it).
  bool no_memory_left() const { return capacity.available_kv_bytes <= 0; }
};

/// Works out the memory budget of every rank and the engine's allocation. Throws spec_error
/// for layouts the model cannot take, a missing card, a fraction outside (0, 1], or a memory
/// list whose length is neither 1 nor tp x pp.
capacity_result answer_capacity(const graph& g, const capacity_request& q);

/// The plan question: the fewest cards (TP within a node, then PP) whose engine concurrency
/// holds `requests` requests of max_model_len.
struct plan_request {
  capacity_request capacity;  // its config's tensor/pipeline degrees are searched over
  std::int64_t requests = 1;
  std::int64_t node_gpus = 8;
  std::int64_t max_gpus = 512;
};

struct plan_result {
  std::optional<capacity_result> best;  // none: no layout up to max_gpus holds the requests
  std::int64_t gpus = 0;                // tp x pp of `best`
};

plan_result answer_plan(const graph& g, const plan_request& q);

/// The rough activation + CUDA-graph reservation of the vLLM estimate (docs/engines.md): one
/// profiling batch of max_num_batched_tokens through the widest layer in bf16, plus 1 GiB.
checked activation_estimate(const graph& g, std::int64_t batched, std::int64_t tp);

}  // namespace calc::engine
