// The layer-typed graph: one entry per layer, each with a typed attention and feed-forward block,
// plus the model-level extras (embedding lookup, final norm, vocabulary head).
//
// build() expands the spec's base block, variants, pattern and overrides; tallies then walk the
// layers in a plain loop. Layers of identical structure form groups (Table 2-A's "layer types").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/model_spec.h"

namespace calc {

struct layer {
  std::int64_t index = 0;
  std::string variant;  // pattern name ("base" when none), or "override" when overridden
  attention_spec attention;
  ffn_spec ffn;
  std::int64_t norms = 2;
  std::optional<engram_spec> engram;
};

/// Layers that share one structure, in order of first appearance.
struct layer_group {
  std::string name;                   // e.g. "gqa q32/kv8 d128 + swiglu 12288"
  std::vector<std::int64_t> indices;  // which layers
};

struct graph {
  const model_spec* spec = nullptr;  // the model the graph was built from (outlives the graph)
  std::vector<layer> layers;
  std::vector<layer_group> groups;
};

/// Expands the spec into one entry per layer. The graph points at `spec`, which must outlive
/// it: a temporary spec does not compile.
graph build_graph(const model_spec& spec);
graph build_graph(const model_spec&& spec) = delete;

/// Whether any layer's attention is of kind T (e.g. attention_mla).
template <typename T>
bool has_attention(const graph& g) {
  for (const layer& l : g.layers)
    if (std::holds_alternative<T>(l.attention)) return true;
  return false;
}

/// Whether any layer's feed-forward is of kind T (e.g. ffn_moe: the model routes to experts).
template <typename T>
bool has_ffn(const graph& g) {
  for (const layer& l : g.layers)
    if (std::holds_alternative<T>(l.ffn)) return true;
  return false;
}

/// A short structural description of a block, e.g. "gqa 32q/8kv x128".
std::string describe(const attention_spec& a);
std::string describe(const ffn_spec& f);

}  // namespace calc
