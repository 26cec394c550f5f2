// One tally interface for every layer kind: the tensors it stores, the FLOPs a call performs,
// and the per-request state it keeps. Each kind implements these in its own file
// (attention_gqa.cpp, ffn_swiglu.cpp, ...); tally.cpp sums them over the graph.
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
  std::string module;   // "attention", "ffn", "norms", "embedding", "head", "final_norm"
  std::string name;     // e.g. "q_proj"
  category cat;
  checked params;
  const dtype* format;  // storage format, owned by the spec's precision
  bool lookup_only = false;  // read by rows (the embedding table), not whole per call
};

/// Matrix FLOPs of one block for one call.
struct work {
  checked linear;       // weight GEMMs: 2 * rows * weights
  checked interaction;  // QK^T and AV (and index dot products): grows with pairs, not weights
};

/// One kind of per-request state of one layer. bytes(N) = fixed + per_token * min(N, cap).
struct state_component {
  std::string name;                      // e.g. "kv"
  checked fixed;                         // bytes independent of length (recurrent matrices, ...)
  checked per_token;                     // bytes per cached token
  std::optional<std::int64_t> cap;       // tokens kept at most (a sliding window)
  bool read_write_each_step = false;     // recurrent: read and rewritten every decode step

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

// Attention kinds.
void add_tensors(const attention_gqa& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_gqa& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_gqa& a, const model_context& m);

// Feed-forward kinds.
void add_tensors(const ffn_swiglu& f, const model_context& m, std::vector<tensor>& out);
work flops(const ffn_swiglu& f, const model_context& m, const call& c);

}  // namespace calc
