// The reference executor's layer runtimes: one per layer kind, each holding random weights and
// its own state buffers, running a call over the rows it processes and counting what it does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ref.h"
#include "spec/model_spec.h"

namespace calc::exec {

using ref::mat;

/// What the twins executed, in the classes the tally's conventions sort work into.
struct counters {
  std::map<std::string, std::int64_t> by_kind;  // counted matrix FLOPs, keyed like the tally
  std::int64_t linear = 0;                      // weight GEMMs (Y = X W)
  std::int64_t interaction = 0;                 // QK, AV, index dot products
  std::int64_t state = 0;                       // linear-attention work the execution path counts
  std::int64_t uncounted = 0;   // work the chapter's convention leaves out of F (scalar)
  std::int64_t connection = 0;  // mHC projections, AttnRes mixes
  std::int64_t rope = 0;
  std::int64_t vocab = 0;
  std::int64_t attention_pairs = 0;       // window + selected entries read (sparse attention)
  std::int64_t index_scans = 0;           // index entries scored
  std::int64_t selection_mismatches = 0;  // top-k selections differing from brute force
  std::int64_t selections = 0;
  std::int64_t experts_touched = 0;  // distinct experts of the first MoE layer, last call
};

/// One call as a layer sees it (batch 1).
struct pass {
  std::int64_t context = 0;       // S: positions already cached
  std::int64_t tokens = 0;        // P: new positions
  std::int64_t first = 0;         // first position this layer processes (CED replay)
  std::int64_t window_floor = 0;  // earliest position a window may reach
  const execution_spec* exec = nullptr;
  bool decode_step() const { return tokens == 1 && context > 0; }
  std::int64_t end() const { return context + tokens; }
};

/// Sparse-attention entries a source layer stores, shared with the layers that read them.
struct entry_store;

/// Selections handed from an indexer layer to the Reuse layers after it, per query row.
struct selection_state {
  std::vector<std::vector<int>> per_row;     // entry indices chosen for each processed row
  std::vector<std::vector<int>> candidates;  // the candidate pool a Full layer left per row
};

/// The keys and values a GQA layer attended over in this call (positions base.., as stored),
/// published for the later layers that share its cache (kv_source).
struct kv_share {
  mat keys, values;
  std::int64_t base = 0;
};

/// Shared context of one model run.
struct run_context {
  std::map<std::int64_t, std::shared_ptr<entry_store>> sources;  // layer index -> its entries
  std::map<std::int64_t, kv_share> kv_shared;                    // GQA layer index -> its K/V
  selection_state selection;
  const std::vector<std::int64_t>* token_ids = nullptr;  // every token id so far (Engram)
  std::mt19937_64* rng = nullptr;
};

class layer_runtime {
 public:
  virtual ~layer_runtime() = default;
  /// x: the processed rows [m, d]; x_all: every new position [P, d] (source projections).
  virtual mat forward(const mat& x, const mat& x_all, const pass& p, run_context& ctx,
                      counters& c) = 0;
  /// Allocated state, by the component names the tally uses.
  virtual void state_bytes(std::map<std::string, std::int64_t>& out) const = 0;
};

/// Deterministic random weights: N(0, 1/in) so activations stay O(1) through the layers.
mat random_weight(std::mt19937_64& rng, std::int64_t in, std::int64_t out);

/// Runtimes for each kind (layers_attention.cpp, layers_dsa.cpp, layers_ffn.cpp).
std::unique_ptr<layer_runtime> make_attention(const attention_spec& a, const model_spec& s,
                                              std::int64_t layer, std::mt19937_64& rng);
std::unique_ptr<layer_runtime> make_ffn(const ffn_spec& f, const model_spec& s,
                                        std::mt19937_64& rng);
std::unique_ptr<layer_runtime> make_engram(const engram_spec& e, const model_spec& s,
                                           std::mt19937_64& rng);

/// The missing half of a layer (`attention: none`, `ffn: none`): adds zero to the residual,
/// does no work and keeps no state.
std::unique_ptr<layer_runtime> make_absent();

/// The storage format of a state role, or an error naming the unsupported format.
ref::state_buffer::format storage_of(const dtype& t);

}  // namespace calc::exec
