// What a serving engine allocates for the KV cache: vLLM's block pool and SGLang's token pool,
// built on the model's graph and tallies. Each engine version range is one row of data (a
// rule_set); small rule functions below read the row. Nothing here knows a model by name: a
// layer's cache follows from its attention kind (GQA full or sliding, MLA, Gated DeltaNet/KDA,
// Mamba2; none for a mixer-less layer or one that reads another layer's cache).
// docs/engines.md explains every rule with the engine source file it comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/checked.h"
#include "common/dtype.h"
#include "graph/graph.h"

namespace calc::engine {

/// One row of the rules table: what a range of engine versions does.
struct rule_set {
  const char* id;        // "vllm-v1-hybrid", "sglang", ...
  const char* engine;    // "vllm" or "sglang"
  const char* versions;  // the version range, as printed
  int min_version = 0;   // major * 1000 + minor, inclusive
  int max_version = 0;   // inclusive
  const char* source;    // the engine files the rules come from
  enum class pool {
    block_all_layers,  // vLLM V0: one block holds block_size tokens of every layer
    block_uniform,     // vLLM V1 before the hybrid allocator: sliding layers charged as full
    block_hybrid,      // vLLM V1 hybrid allocator: groups of equal layer count, one page size
    token_pool,        // SGLang: a pool of token slots, K and V buffers per layer
  } layout = pool::block_hybrid;
  enum class token_print {
    blocks_x_block_size,  // "GPU KV cache size" = num_blocks * block_size (or # GPU blocks)
    blocks_per_group,     // num_blocks // groups * min block size
    concurrency_x_len,    // int(max_concurrency * max_model_len)
    pool_tokens,          // SGLang's #tokens
  } tokens = token_print::blocks_per_group;
  bool concurrency_in_blocks = true;  // false: tokens / max_model_len (vLLM V0 and 0.8)
  std::int64_t default_block_size = 16;
  /// State pages a recurrent layer holds per request with prefix caching on (vLLM's Mamba
  /// "align" mode keeps the running state and the last block-aligned one); 1 without it.
  std::int64_t state_pages_prefix_caching = 1;
  /// Whether a layer that reads another layer's cache (`kv_source`) allocates nothing of its
  /// own (vLLM V1's kv_sharing_target_layer_name, from 0.9); false: the engine has no such
  /// sharing and calc refuses the model.
  bool kv_sharing = true;
  /// Why the rule set refuses layers that run attention and a Mamba2 mixer in parallel
  /// (`attention: parallel`); null: it allocates them as one KV cache spec plus one Mamba
  /// state spec per layer.
  const char* parallel_refusal = nullptr;
  /// Whether the fits check and its max_model_len estimate use every pipeline stage's layers
  /// (the spec merged from all workers) against one rank's memory: vLLM from PR #29431 (0.14)
  /// until PR #33698. False: each rank is checked against its own stage's layers.
  bool whole_model_check = false;
  /// SGLang's Mamba state pool for hybrid models (a MambaPool of per-request convolution and
  /// recurrent states beside the token pool of the full-attention layers, HybridLinearKVPool);
  /// `ratio_ppm` 0: the rule set has no such pool and refuses recurrent-state layers.
  struct mamba_pool_rules {
    /// --mamba-full-memory-ratio's default (mamba state memory / full KV memory), in parts
    /// per million: the pools' budget is split ratio / (1 + ratio) to the states.
    std::int64_t ratio_ppm = 0;
    /// State slots kept per running request with the radix cache on
    /// (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO), and the ping-pong slots the extra_buffer
    /// strategy adds; with --disable-radix-cache one slot per request.
    std::int64_t slots_per_request = 0;
    std::int64_t extra_buffer_slots = 0;
    /// --max-mamba-cache-size when --disable-radix-cache is given without
    /// --max-running-requests.
    std::int64_t size_without_radix = 0;
    /// --mamba-ssm-dtype's default: the recurrent state's format whatever the model's.
    const char* ssm_format = nullptr;
  } mamba;
  /// VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE's default: true, the hybrid allocator
  /// keeps a chunked local attention layer (Llama 4) as a ChunkedLocalAttentionSpec, charged
  /// min(chunk + max_num_batched_tokens, max_model_len) tokens a request; false, vLLM turns the
  /// hybrid allocator off for such a model (PR #21761), every layer charged as full attention
  /// in one group. Either way EAGLE or MTP drafting turns it off.
  bool chunked_local_hybrid = false;
};

/// The rules table, oldest first per engine.
const std::vector<rule_set>& rule_sets();

/// Where a rule changes between engine versions, pinned to the change that made it (data beside
/// rule_sets(); docs/engines.md, "Version boundaries").
struct rule_boundary {
  const char* engine;
  int version = 0;        // major * 1000 + minor of the first release calc applies it to
  const char* rule;       // what changes, in the rule-set fields' terms
  const char* change;     // the pull request (and release) that introduced it
  const char* evidence;   // what pins the release: a log, a release note, a later report
  bool release_pinned = false;  // false: the PR is known, the first release carrying it is not
};

/// The boundaries, oldest first; every rule-set row but the first of each engine starts at one.
const std::vector<rule_boundary>& rule_boundaries();

/// major.minor of an engine version as one number: "0.10" -> 10, "0.9.2" -> 9, "1.2" -> 1002;
/// none when the text is not a version.
std::optional<int> version_number(const std::string& text);

/// The rule set for `engine` at `version` ("" = the newest); throws spec_error naming
/// --engine or --engine-version.
const rule_set& find_rules(const std::string& engine, const std::string& version);

/// Speculative decoding as vLLM V1 allocates it: the drafter's attention layers register KV
/// cache specs beside the target's and take pages from the same pool (on the last pipeline
/// stage), and recurrent-state layers keep room for the proposed tokens.
struct speculative_config {
  enum class drafter {
    none,   // no draft layers in the pool (n-gram proposals)
    mtp,    // the model's own multi-token-prediction layers (DeepSeek, GLM, Qwen3-Next MTP)
    model,  // a separate draft model's layers (EAGLE, EAGLE-3), read from its config
  } draft = drafter::none;
  std::int64_t tokens = 0;             // num_speculative_tokens; 0 = speculative decoding off
  const graph* draft_model = nullptr;  // drafter::model: the draft's graph
  std::string method;                  // as given, for messages and output
};

/// The engine's knobs, spelled as the engine spells them (the CLI fills this).
struct engine_config {
  std::int64_t tensor_parallel = 1;         // --tensor-parallel-size / --tp
  std::int64_t pipeline_parallel = 1;       // --pipeline-parallel-size
  std::int64_t block_size = 0;              // --block-size / --page-size; 0 = the default
  std::int64_t max_model_len = 0;           // --max-model-len / --context-length
  std::int64_t max_num_batched_tokens = 0;  // --max-num-batched-tokens; 0 = the card's default
  std::int64_t max_num_seqs = 0;            // --max-num-seqs (reported; no KV effect)
  std::optional<dtype> kv_cache_dtype;      // --kv-cache-dtype; none = the model's kv format
  std::optional<dtype> state_dtype;         // --mamba-ssm-cache-dtype; none = the model's
  bool prefix_caching = false;              // --enable-prefix-caching
  checked available_kv_bytes;               // per rank: the log's line, or an estimate
  /// Each rank's own KV memory, in vLLM's rank order (pp_rank x tp + tp_rank), when the ranks
  /// differ; empty: every rank has available_kv_bytes (then the smallest of this list).
  std::vector<checked> rank_kv_bytes;
  speculative_config speculative;  // --speculative-config / --num-speculative-tokens
  // SGLang's Mamba state pool (hybrid models); ignored by rule sets without one.
  bool radix_cache = true;                        // false: --disable-radix-cache
  std::int64_t max_mamba_cache_size = 0;          // --max-mamba-cache-size; 0: sized by SGLang
  std::optional<double> mamba_full_memory_ratio;  // --mamba-full-memory-ratio; none: the rule's
  bool mamba_extra_buffer = false;                // --mamba-scheduler-strategy extra_buffer
  /// VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE as set (1: true); none = the rule
  /// set's default (rule_set::chunked_local_hybrid).
  std::optional<bool> chunked_local_hybrid;
};

/// The KV memory of the ranks of pipeline stage `stage`, the smallest of them (each rank sizes
/// its own pool; the engine keeps the smallest block count).
checked stage_kv_bytes(const engine_config& c, std::int64_t stage);

/// What the engine keeps for one layer on one rank.
struct layer_cache {
  /// chunked: chunked local attention (Llama 4's attention_chunk_size), `window` = the chunk.
  enum class kind { full, sliding, chunked, mla, state } type = kind::full;
  std::int64_t layer = 0;
  checked token_bytes;      // per token on one rank: K + V (GQA) or the latent (MLA)
  checked k_token_bytes;    // the K part alone (SGLang's K buffer); the latent for MLA
  std::int64_t window = 0;  // sliding: tokens attended; chunked: the chunk
  checked state_bytes;      // state layers: conv + recurrent state of one request, one rank
  checked conv_bytes;       // the convolution part of state_bytes (SGLang prints it apart)
  bool operator==(const layer_cache&) const = default;
};

/// Bytes of one Mamba2 state on one rank, as vLLM allocates it (mamba_utils.py,
/// MambaStateShapeCalculator.mamba2_state_shape): a convolution state of conv_kernel - 1 slots
/// over (inner + 2 x groups' x state_dim) / tp channels, where groups that do not divide by tp
/// are replicated up to tp (extra_groups_for_head_shards), in `conv`; and a temporal state of
/// heads / tp x head_dim x state_dim values in `ssm`.
checked mamba2_state_bytes(const attention_mamba2& m, std::int64_t tp, const dtype& conv,
                           const dtype& ssm);

/// Per-rank KV heads (vLLM and SGLang): kv_heads / tp, at least one -- heads fewer than the
/// TP degree are replicated, one per rank.
std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp);

/// Every layer's cache on one rank as the model declares it (a chunked layer as `chunked`;
/// plan_engine applies the rule set's chunked_local_hybrid), at the engine's formats, then the
/// speculative drafter's
/// layers (indices from the model's layer count on, so they sit on the last pipeline stage).
/// Gated DeltaNet and KDA convolution states keep num_speculative_tokens more slots
/// (vLLM's gated_delta_net_state_shape / kda_state_shape num_spec). Layers that keep nothing of
/// their own have no entry: `attention: none` and layers with a `kv_source` (vLLM V1 gives them no
/// KV cache spec; they read their source layer's pages). A `k_is_v` layer is stored as K and V
/// like any GQA layer (vLLM's Gemma 4 loads the K weights into the V slot and caches both).
/// Throws spec_error for attention kinds the engine rules do not cover (DeepSeek sparse
/// attention) and for Mamba2 groups that do not split over the TP degree.
std::vector<layer_cache> layer_caches(const graph& g, const engine_config& c);

/// The layers pipeline stage `stage` of `pp` holds, as vLLM splits them (get_pp_indices:
/// L / pp each, the remainder to the stages before the last).
std::pair<std::int64_t, std::int64_t> stage_layers(std::int64_t layers, std::int64_t pp,
                                                   std::int64_t stage);

/// One KV cache group of vLLM's hybrid allocator.
struct cache_group {
  std::string kind;  // "full", "sliding 4096", "mla", "state"
  std::int64_t block_size = 0;
  std::vector<std::int64_t> layers;  // model layer indices
  std::int64_t padding = 0;          // empty slots of the group (padding layers)
  checked request_bytes;             // what one max_model_len request needs in one layer
};

/// The answer in the engine's own terms.
struct engine_capacity {
  const rule_set* rules = nullptr;
  checked available_kv_bytes;
  checked page_bytes;  // bytes of one block of one layer (vLLM) or one token (SGLang)
  std::int64_t block_size = 0;
  std::int64_t blocks = 0;              // num_gpu_blocks (vLLM) or pages (SGLang)
  std::int64_t kv_cache_tokens = 0;     // the number the engine prints
  std::int64_t blocks_per_request = 0;  // blocks one max_model_len request takes
  double max_concurrency = 0;           // requests of max_model_len at once
  checked max_model_len_kv_bytes;       // "X GiB KV cache is needed" for one request
  checked k_pool_bytes, v_pool_bytes;   // SGLang: the K and V buffers as allocated
  std::int64_t group_size = 0;          // layers per group (vLLM hybrid)
  std::vector<cache_group> groups;
  bool fits = true;
  std::string reason;                        // why not, when one request cannot fit
  std::int64_t estimated_max_model_len = 0;  // when it does not fit: the longest that would
  // SGLang's Mamba state pool (hybrid models; all 0 without one).
  std::int64_t mamba_slots = 0;           // max_mamba_cache_size: requests' states the pool holds
  checked mamba_request_bytes;            // one request's states over the rank's layers
  checked conv_pool_bytes, ssm_pool_bytes;  // the pool as allocated (slots + 1 padding slot)
  std::int64_t max_running_requests = 0;  // the scheduler's cap, the state slots' share included
  std::vector<std::string> log;              // the lines the engine prints, as it prints them
};

/// vLLM or SGLang capacity under the rule set and knobs.
engine_capacity plan_engine(const graph& g, const rule_set& rules, const engine_config& c);

/// "1,234" as the engine prints counts; "4.15" for two decimals, Python's rounding.
std::string two_decimals(double v);

}  // namespace calc::engine
