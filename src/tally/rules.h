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
#include "tally/kinds.h"

namespace calc {

/// Table 2-B's six mutually exclusive parameter categories.
enum class category {
  embedding_output,
  attention,
  dense_shared_ffn,
  routed_experts,
  engram,
  other
};

const char* category_key(category c);  // JSON key, e.g. "dense_shared_ffn"

/// Which rows of a call a weight GEMM runs on.
enum class row_source {
  processed,      // the rows the layer processes (m)
  new_positions,  // every new position of the call (u), e.g. compressor and global KV projections
  new_entries,    // compressed entries completed by this call (n_cmp), e.g. index key projection
};

/// `count` weight matrices of `in` input rows x `out` output columns each.
struct matrix_shape {
  checked in;
  checked out;
  checked count = 1;
};

/// One weight tensor of one layer (or of the model).
struct tensor {
  std::string module;  // "attention", "ffn", "experts", "router", "norms", "conv", ...
  std::string name;    // e.g. "q_proj"
  category cat;
  checked params;
  const dtype* format;  // storage format, owned by the spec's precision
  bool gemm = false;    // a matrix every row it serves multiplies: 2 FLOPs per weight per row
  std::int64_t instances = 1;  // routed experts: E copies, of which each token uses per_token
  std::int64_t per_token = 0;  // instances one token uses; 0 = every row uses the whole tensor
  bool lookup_only = false;    // read by rows (the embedding table), not whole per call
  row_source rows = row_source::processed;
  std::int64_t entry_ratio = 1;  // tokens per entry, for row_source::new_entries
  std::int64_t shards = 0;       // tensor parallelism splits it over at most this many cards
                                 // (its heads); 0 = any degree; 1 = replicated on every card
  bool idle = false;             // stored in the checkpoint but never used by a call (the own K/V
                      // projections of a layer that reads another layer's cache): counted in
                      // parameters and weight bytes, never multiplied or read
  std::string kind = {};  // the by-kind key of its FLOPs when a mixer has parts (a parallel
                          // hybrid's "gqa" and "mamba2"); "" = the layer's own kind
  checked inputs = 0;     // input rows of the matrices it holds, summed (routed experts: over all
                       // E); 0 = not a matrix. A format with a per-row term (GPTQ's g_idx) needs it
  std::vector<matrix_shape> shapes;  // the matrices it holds, side by side: a block-scaled format
                                     // (fp8:b128x128) rounds each one's scale grid up per side.
                                     // Empty, or not summing to params: the group rule

  /// Bytes it stores: the format's bytes of its values plus its per-input-row term.
  checked bytes() const;
  /// Bytes of one instance (one routed expert): values and input rows divided by instances.
  checked instance_bytes() const;

  /// Rows this tensor's GEMM runs on in the call.
  checked rows_in(const call& c) const;
  /// Rows x weights this tensor multiplies in the call (no token drops: sum t_e = m*k).
  checked gemm_weight_rows(const call& c) const;
  /// Bytes of this tensor the call reads: routed experts only those that can be touched.
  checked read_bytes(const call& c) const;
};

/// A weight matrix of `in` input rows and `out` output columns: in*out parameters, a GEMM
/// operand, its input rows known for formats that store a value per row (GPTQ's g_idx).
inline tensor matrix(std::string module, std::string name, category cat, checked in, checked out,
                     const dtype* format) {
  tensor t{std::move(module), std::move(name), cat, in * out, format, true};
  t.inputs = in;
  t.shapes = {{in, out, 1}};
  return t;
}

/// A depthwise convolution's taps, `channels` x `kernel` values (a short conv's conv1d): not a
/// GEMM operand, in the `conv_taps` role, else `weights` (docs/model-schema.md, Precision roles),
/// so `--weights` sets them as it sets every weight unless its layout is a Linear's only
/// (pack-quantized's per-matrix record, GPTQ's g_idx). Their sides are known: a per-row format
/// stores one scale per channel (output row) of `kernel` taps, a block format its grid rounded
/// up per side, as for a matrix of `channels` outputs and `kernel` inputs. `channels` lists the convolutions a
/// layer keeps apart (Kimi Linear's q, k and v), one shape each; no input-row term (no GEMM).
inline tensor conv_taps(std::string name, std::vector<checked> channels, checked kernel,
                        const dtype* format) {
  checked values = 0;
  std::vector<matrix_shape> shapes;
  for (checked c : channels) {
    values += c * kernel;
    shapes.push_back({kernel, c, 1});
  }
  tensor t{"conv", std::move(name), category::other, values, format};
  t.shapes = std::move(shapes);
  return t;
}

/// Non-weight matrix FLOPs of one block for one call.
struct work {
  checked interaction;  // QK^T and AV (and index dot products): grows with pairs
  checked state;        // linear-attention state GEMMs (chunked or recurrent) and convolution
};

/// What a piece of state is, for the sums a reader asks for.
enum class state_class {
  history,        // global history: grows with every token (KV, latents, compressed entries)
  window,         // a sliding window: stops growing once full, then overwrites
  fixed,          // recurrent matrices, convolution slots, compressor buffers
  token_history,  // token ids kept per request
};

/// One kind of per-request state of one layer.
/// bytes(N) = fixed + per_entry * floor(min(N, cap) / ratio).
struct state_component {
  std::string name;                 // e.g. "kv", "recurrent", "csa_main"
  checked fixed;                    // bytes independent of length
  checked per_entry;                // bytes per stored entry
  std::int64_t ratio = 1;           // tokens per entry (compression ratio)
  std::optional<std::int64_t> cap;  // tokens kept at most (a sliding window)
  state_class kind = state_class::history;
  bool read_write_each_step = false;  // recurrent matrices: read and rewritten every decode step
  std::int64_t read_cap = 0;          // entries one query reads at most (top-k); 0 = all
  std::int64_t shards = 1;            // heads it splits over under tensor parallelism (§2.6.2:
                                      // 4 KV heads on 8 cards are each stored twice)

  checked entries(checked length) const { return (cap ? min(length, *cap) : length) / ratio; }
  checked bytes(checked length) const {
    checked kept = cap ? min(length, *cap) : length;
    return fixed + per_entry * (kept / ratio);
  }
};

/// Model-wide facts a block rule needs.
struct model_context {
  std::int64_t hidden;  // d
  const precision_spec* precision;
  const connection_spec* connection = nullptr;
  bool layer_norm = false;  // norms carry a bias too (LayerNorm): 2 vectors per norm

  std::int64_t norm_vectors() const { return layer_norm ? 2 : 1; }
};

/// One KV head's cached record of a GQA layer (K and V of head_dim), for a block-sparse layer
/// whose KV heads read different keys (block_sparse.h).
checked block_sparse_head_record(const attention_gqa& a, const model_context& m);

/// Bytes one decode query reads from a layer's history of `length` tokens: attention KV,
/// selected entries and index keys scanned. Recurrent state is counted apart (read + write).
checked decode_read(const attention_gqa& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_mla& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_gdn& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_kda& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_dsa& a, const model_context& m, const execution_spec& e,
                    checked length);

checked decode_read(const attention_mamba2& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_none& a, const model_context& m, const execution_spec& e,
                    checked length);
checked decode_read(const attention_parallel& a, const model_context& m, const execution_spec& e,
                    checked length);

/// Bytes a decode step writes into a layer's sliding window (one record per layer per token).
checked window_write(const attention_spec& a, const model_context& m);

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

void add_tensors(const attention_dsa& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_dsa& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_dsa& a, const model_context& m,
                                   const execution_spec& e);

void add_tensors(const attention_mamba2& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_mamba2& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_mamba2& a, const model_context& m,
                                   const execution_spec& e);

// No mixer, no feed-forward (layer_none.cpp): nothing stored, computed or kept.
void add_tensors(const attention_none& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_none& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_none& a, const model_context& m,
                                   const execution_spec& e);
void add_tensors(const ffn_none& f, const model_context& m, std::vector<tensor>& out);

// A parallel hybrid (attention_parallel.cpp): the sum of its GQA and Mamba2 parts; its tensors
// carry the kind of their part, so FLOPs by kind keep "gqa" and "mamba2" apart.
void add_tensors(const attention_parallel& a, const model_context& m, std::vector<tensor>& out);
work flops(const attention_parallel& a, const model_context& m, const call& c);
std::vector<state_component> state(const attention_parallel& a, const model_context& m,
                                   const execution_spec& e);

/// Query-key pairs and index scans of one sparse-attention layer for one call (attention_dsa.cpp).
struct dsa_counts {
  checked window_pairs;  // window positions read, summed over processed queries
  checked global_pairs;  // compressed entries main attention reads
  checked index_scans;   // index entries scored
};
dsa_counts dsa_work(const attention_dsa& a, const call& c);

/// sum over k in [lo, hi] of min(floor(k / r), cap), cap < 0 meaning no cap; exact, O(1).
checked sum_floor_div(checked lo, checked hi, std::int64_t r, std::int64_t cap);

// Extras of a layer: Engram (connection.cpp).
void add_tensors(const engram_spec& e, const model_context& m, std::vector<tensor>& out);

// Feed-forward kinds: ffn_swiglu.cpp, ffn_moe.cpp. Their work is all weight GEMMs.
void add_tensors(const ffn_swiglu& f, const model_context& m, std::vector<tensor>& out);
void add_tensors(const ffn_moe& f, const model_context& m, std::vector<tensor>& out);
void add_tensors(const ffn_mlp& f, const model_context& m, std::vector<tensor>& out);

/// Chunked linear-attention FLOPs of one head over P new tokens (attention_linear.cpp).
checked chunk_work(const execution_spec& e, checked tokens, checked key_dim, checked value_dim);

/// Chunked SSD (Mamba2) FLOPs of one head over P new tokens (attention_mamba2.cpp).
checked ssd_chunk_work(const execution_spec& e, checked tokens, checked head_dim,
                       checked state_dim);

/// Depthwise short-convolution FLOPs of a call over `channels` with `kernel` taps
/// (attention_linear.cpp; shared by Gated DeltaNet, KDA and Mamba2).
checked conv_work(checked channels, std::int64_t kernel, const call& c);

/// The recurrent state and the convolution slots of a linear-attention or SSM layer (kinds.h):
/// heads x key_dim x value_dim at precision.recurrent, channels x kernel at precision.conv.
std::vector<state_component> linear_state(const recurrent_shape& r, const model_context& m);

/// State GEMMs and convolution of a recurrent mixer for one call (attention_linear.cpp): a
/// recurrent step per token, or the shape's chunked scan for a prefill.
checked recurrent_flops(const recurrent_shape& r, const call& c);

/// Block AttnRes: candidates summed over every mix of one token's forward pass (connection.cpp).
checked attnres_candidates(std::int64_t layers, std::int64_t block_layers);

/// mHC's per-layer tensors (two sublayer mixes) and the model's head mix (connection.cpp).
void add_mhc_layer_tensors(const connection_spec& c, const model_context& m,
                           std::vector<tensor>& out);
void add_mhc_head_tensors(const connection_spec& c, const model_context& m,
                          std::vector<tensor>& out);

/// mHC element-wise work per row (norms, Sinkhorn, mixing; §2.5.2), reported apart from F.
checked mhc_nonmatrix_per_row(const connection_spec& c, std::int64_t hidden,
                              std::int64_t sublayers);

// Per connection kind (connection.cpp): every kind named in each, so a new kind must answer.
/// Tensors each layer adds for its connection (mHC's two sublayer mixes).
void add_connection_layer_tensors(const connection_spec& c, const model_context& m,
                                  std::vector<tensor>& out);
/// Tensors outside the layers (AttnRes' mix vectors, mHC's head mix).
void add_connection_model_tensors(const model_spec& s, const model_context& m,
                                  std::vector<tensor>& out);
/// Matrix FLOPs per new row that no tensor carries: AttnRes' mixes, 2*d per candidate.
checked connection_mix_flops_per_row(const model_spec& s);
/// Element-wise work per new row, reported apart from F (mHC's norms, Sinkhorn and mixes).
checked connection_nonmatrix_per_row(const model_spec& s);
/// Residual streams a layer reads and writes (mHC's ways; 1 otherwise).
std::int64_t residual_streams(const connection_spec& c);

}  // namespace calc
