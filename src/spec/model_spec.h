// ModelSpec: a model as plain typed structs, read once from YAML (model_reader.cpp).
//
// Nothing after src/spec/ sees a YAML node. Every model-specific behaviour is a typed field here;
// code never asks a model's name. Layers are described by a base block, named variants, a
// repeating pattern and per-index overrides; src/graph/ expands them into one entry per layer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"

namespace calc {

/// Grouped-query attention; MHA when q_heads == kv_heads, MQA when kv_heads == 1 (§2.3.1).
struct attention_gqa {
  std::int64_t q_heads = 0;            // n_Q
  std::int64_t kv_heads = 0;           // n_KV; divides q_heads
  std::int64_t head_dim = 0;           // d_h
  bool qk_norm = false;                // per-head RMSNorm on Q and K (d_h weights each)
  bool output_gate = false;            // Q projection also produces a sigmoid gate (width n_Q*d_h)
  std::optional<std::int64_t> window;  // sliding window in tokens; none = full causal attention
};

/// The attention block of a layer; one alternative per layer kind.
using attention_spec = std::variant<attention_gqa>;

/// Dense SwiGLU feed-forward: gate and up d->f, down f->d (§2.1.4).
struct ffn_swiglu {
  std::int64_t intermediate = 0;  // f
};

/// The feed-forward block of a layer; one alternative per layer kind.
using ffn_spec = std::variant<ffn_swiglu>;

/// A partial layer description: what a variant or an override replaces.
struct block_spec {
  std::optional<attention_spec> attention;
  std::optional<ffn_spec> ffn;
  std::optional<std::int64_t> norms;  // RMSNorm vectors of width d per layer (2: input and post)
};

/// Per-index replacement of parts of the layers listed in `at` (0-based indices).
struct override_spec {
  std::vector<std::int64_t> at;
  block_spec block;
  source_location where;
};

struct layers_spec {
  std::int64_t count = 0;                    // L
  block_spec base;                           // complete: attention, ffn and norms all given
  std::map<std::string, block_spec> variants;  // named partial blocks, applied over the base
  std::vector<std::string> pattern;          // repeats to fill `count`; "base" = the base block
  std::vector<override_spec> overrides;      // applied last, in order
  source_location pattern_where;
};

/// Storage format of each tensor role (the byte rule is in common/dtype.h).
struct precision_spec {
  dtype weights;    // projection and FFN matrices
  dtype embedding;  // embedding table
  dtype head;       // vocabulary head (when untied)
  dtype norms;      // normalisation vectors
  dtype kv;         // cached keys and values
};

/// How attention query-key pairs are executed (§2.1.3).
enum class pair_counting {
  causal,       // effective causal: N_pair = B*(P*S + P*(P+1)/2)
  rectangular,  // eager rectangle, masked afterwards: B*P*(S+P)
};

/// The default execution path of a model; a call may override each field.
struct execution_spec {
  pair_counting pairs = pair_counting::causal;
  bool vocab_all_rows = false;  // false: the vocabulary head runs on the last token of each request
};

struct model_spec {
  std::string name;
  std::string file;  // where it was read from
  std::string source;  // free-text citation (which table it reproduces)
  std::int64_t vocab = 0;    // V
  std::int64_t hidden = 0;   // d
  bool tie_embeddings = false;
  bool final_norm = true;
  precision_spec precision;
  execution_spec execution;
  layers_spec layers;
  std::vector<std::string> defaulted;  // field paths that took their default value
};

}  // namespace calc
