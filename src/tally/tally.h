// Whole-model tallies: parameters by category, FLOPs and weight reads of a call, state at a
// length. Each sums the per-kind rules of rules.h over the graph's layers (§2.6.1: the whole
// model is the layer-count-weighted sum of its layer types).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/fraction.h"
#include "graph/graph.h"
#include "tally/rules.h"

namespace calc {

/// Every stored tensor of the model, layer by layer, then the model-level ones.
std::vector<tensor> model_tensors(const graph& g);

/// The tensors of one layer (attention, feed-forward, norms).
void layer_tensors(const layer& l, const model_context& m, std::vector<tensor>& out);

/// The tensors outside the layers: embedding, head, final norm, connection vectors.
void model_level_tensors(const model_spec& s, const model_context& m, std::vector<tensor>& out);

struct group_params {
  std::string name;
  std::int64_t layers = 0;
  checked attention;        // attention projection parameters per layer
  checked ffn;              // feed-forward parameters per layer
  checked other;            // norms and the rest, per layer
  checked attention_bytes;  // per layer, at the model's precision
  checked ffn_bytes;        // per layer
};

struct params_tally {
  checked total;
  std::map<category, checked> categories;
  checked weight_bytes;       // at the model's precision
  checked bf16_bytes;         // 2 bytes per parameter, as Table 2-B converts
  checked lookup_bytes;       // the embedding table, read by rows rather than whole
  checked shared_read_bytes;  // weights every call reads once: all but the lookup table
  checked active;             // parameters one token uses (all but unselected routed experts)
  checked selected_expert_bytes_per_token;  // Table 2-C's last column, at the weights' format
  std::vector<group_params> groups;
};

params_tally tally_params(const graph& g);

struct module_flops {
  std::string name;
  checked flops;
  checked params;
};

struct forward_tally {
  checked flops;              // all matrix FLOPs of the call
  checked linear_flops;       // weight GEMMs in the layers
  checked interaction_flops;  // QK^T, AV (and index dot products)
  checked state_flops;        // linear-attention state GEMMs and short convolutions
  checked connection_flops;   // AttnRes mixes
  checked rope_flops;         // a counted RoPE table (positions x frequencies)
  checked vocab_flops;        // the vocabulary head on m_out rows
  checked attention_pairs;    // A: window and selected entries read, over every layer
  checked index_scans;        // I: index entries scored, over every layer
  checked mhc_nonmatrix;      // mHC element-wise work, reported apart from `flops`
  checked engram_read_bytes;  // Engram table rows looked up
  checked workspace_bytes;    // temporary store of one forward pass: AttnRes block snapshots
                              // (workspace, not per-request state: released after the pass)
  /// FLOPs by layer kind ("gqa", "moe", "kda", ...; "connection", "engram", "vocab", "rope"),
  /// the keys the reference executor counts its own work under.
  std::map<std::string, checked> by_kind;
  checked weight_read_bytes;     // weights read once per call (the embedding table excluded)
  checked embedding_read_bytes;  // embedding rows looked up: m rows of d values
  std::vector<module_flops> modules;
  std::vector<module_flops> stages;
};

forward_tally tally_forward(const graph& g, const call& c);

/// Sparse-attention work of one layer in a call: what main attention reads and the indexer scans.
struct layer_entries {
  std::int64_t layer = 0;
  checked rows;          // query rows the layer processes
  checked window_pairs;  // window records read
  checked selected;      // compressed entries main attention reads
  checked index_scans;   // index entries scored
};

/// Per-layer entries of every sparse-attention layer for a call (§2.3.3, Table 2-4's A and I).
std::vector<layer_entries> tally_entries(const graph& g, const call& c);

/// One call of the multi-token-prediction block (§2.5.3), which the model's `mtp` describes.
/// Throws spec_error when the model has none.
forward_tally tally_mtp(const graph& g, const call& c);

struct state_item {
  std::string name;
  std::int64_t layers = 0;
  checked bytes;       // at the requested length
  fraction per_token;  // average growth per token while below any cap
  state_class kind = state_class::history;
  bool read_write_each_step = false;
  checked layer_entries;     // entries one layer stores at this length
  checked layer_read_bytes;  // what one query reads of one layer's entries (top-k capped)
};

struct state_tally {
  std::int64_t length = 0;  // N: cached tokens per request
  std::int64_t batch = 1;
  checked total;
  checked fixed;
  checked growing;
  fraction per_token;          // average growth rate of the unbounded components
  fraction history_per_token;  // the same for global history alone (§2.3.6's B/token)
  checked global_history;      // history that grows with every token (no windows, buffers, ids)
  checked window;              // sliding-window records
  checked decode_read;         // KV and index read by one decode query over N cached tokens
  checked decode_state_rw;     // recurrent matrices read + written by one decode step
  checked window_write;        // window records written by one decode step
  std::vector<state_item> items;
};

/// State of `batch` requests with `length` cached tokens each, under the model's execution path.
state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch = 1);

/// The same under another execution path (the MLA cache path changes what is cached).
state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch,
                        const execution_spec& exec);

}  // namespace calc
