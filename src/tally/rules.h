// One tally interface for every layer kind: the tensors it stores (from which weight GEMM FLOPs
// and weight reads follow), the non-weight matrix work of a call (attention interaction,
// linear-attention state and convolution), and the per-request state it keeps. Each kind
// implements these in its own file; tally.cpp sums them over the graph.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/checked.h"
#include "common/dtype.h"
#include "spec/model_spec.h"
#include "tally/call.h"

namespace calc {

/// Table 2-B's six mutually exclusive parameter categories.
enum class category { embedding_output, attention, dense_shared_ffn, routed_experts, engram, other };

const char* category_key(category c);  // JSON key, e.g. "dense_shared_ffn"

/// One weight tensor of one layer (or of the model).
struct tensor {
  std::string module;   // "attention", "ffn", "experts", "router", "norms", "conv", ...
  std::string name;     // e.g. "q_proj"
  category cat;
  checked params;
  const dtype* format;  // storage format, owned by the spec's precision
  bool gemm = false;    // a matrix every row it serves multiplies: 2 FLOPs per weight per row
  std::int64_t instances = 1;  // routed experts: E copies, of which each token uses per_token
  std::int64_t per_token = 0;  // instances one token uses; 0 = every row uses the whole tensor
  bool lookup_only = false;    // read by rows (the embedding table), not whole per call

  /// Rows x weights this tensor multiplies in a call of m rows (no token drops: sum t_e = m*k).
  checked gemm_weight_rows(checked m) const;
  /// Bytes of this tensor a call of m rows reads: routed experts only those that can be touched.
  checked read_bytes(checked m) const;
};

/// Non-weight matrix FLOPs of one block for one call.
struct work {
  checked interaction;  // QK^T and AV (and index dot products): grows with pairs
  checked state;        // linear-attention state GEMMs (chunked or recurrent) and convolution
};

/// One kind of per-request state of one layer. bytes(N) = fixed + per_token * min(N, cap).
struct state_component {
  std::string name;                   // e.g. "kv", "recurrent", "conv"
  checked fixed;                      // bytes independent of length
  checked per_token;                  // bytes per cached token
  std::optional<std::int64_t> cap;    // tokens kept at most (a sliding window)
  bool read_write_each_step = false;  // recurrent matrices: read and rewritten every decode step
  bool read_each_step = true;         // attention history: read by every decode query

  checked bytes(checked length) const {
    checked kept = cap ? min(length, *cap) : length;
    return fixed + per_token * kept;
  }
};

/// Model-wide facts a block rule needs.
struct model_context {
  std::int64_t hidden;  // d
  const precision_spec* precision;
};

// Attention kinds: attention_gqa.cpp, attention_mla.cpp, attention_linear.cpp.
void add_tensors(const attention_gqa& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_gqa& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_gqa& a, const model_context& m,
                                   const execution_spec& e);

void add_tensors(const attention_mla& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_mla& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_mla& a, const model_context& m,
                                   const execution_spec& e);

void add_tensors(const attention_gdn& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_gdn& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_gdn& a, const model_context& m,
                                   const execution_spec& e);

void add_tensors(const attention_kda& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_kda& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_kda& a, const model_context& m,
                                   const execution_spec& e);

// Feed-forward kinds: ffn_swiglu.cpp, ffn_moe.cpp. Their work is all weight GEMMs.
void add_tensors(const ffn_swiglu& f, const model_context& m, std::vector<tensor>& out);
void add_tensors(const ffn_moe& f, const model_context& m, std::vector<tensor>& out);

/// Chunked linear-attention FLOPs of one head over P new tokens (attention_linear.cpp).
checked chunk_work(const execution_spec& e, checked tokens, checked key_dim, checked value_dim);

/// Block AttnRes: candidates summed over every mix of one token's forward pass (connection.cpp).
checked attnres_candidates(std::int64_t layers, std::int64_t block_layers);

}  // namespace calc
