// Parameters of the decode kernels, shared by the CUDA kernels (kernels/cuda/) and their CPU
// twins (kernels/ref/decode_ref.cpp). BF16 tensors travel as their 16-bit patterns.
#pragma once

#include <cstdint>

namespace calc::kernels {

using bf16_bits = std::uint16_t;

/// GQA decode: one new query per request over a cache of `length` tokens.
///   q [batch, q_heads, head_dim]; out [batch, q_heads, head_dim] (float)
///   contiguous k, v [batch, length, kv_heads, head_dim]
///   paged k, v [pages, page_tokens, kv_heads, head_dim] with page_table [batch, pages_per_request]
struct gqa_decode_params {
  int batch;              // B
  int q_heads;            // n_Q
  int kv_heads;           // n_KV; divides q_heads
  int head_dim;           // d_h
  int length;             // cached tokens per request
  int page_tokens;        // 0: contiguous cache; else tokens per page
  int pages_per_request;  // = ceil(length / page_tokens) when paged
  const int* page_table;  // page index of each request's i-th page (device or host memory)
  int split_tokens;       // tokens per split of the sequence (> 0; split_tokens_for())
};

/// Compact MLA decode: scores over [latent, rope] (score width), aggregates the latent.
///   q [batch, heads, rank + rope] (query already absorbed into latent space)
///   cache [batch, length, rank + rope]; out [batch, heads, rank] (float)
struct mla_decode_params {
  int batch;
  int heads;
  int rank;  // kv_rank (512)
  int rope;  // positional branch (64)
  int length;
};

/// One recurrent delta-rule step per head with per-channel decay (GDN: equal channels).
///   q, k [batch, heads, dk] float; v [batch, heads, dv]; log_decay [batch, heads, dk];
///   beta [batch, heads]; state [batch, heads, dk, dv] float (read and rewritten);
///   out [batch, heads, dv]
struct delta_step_params {
  int batch;
  int heads;
  int dk;
  int dv;
};

/// Chunked delta rule over `tokens` positions of one request (prefill), valid triangles.
///   q, k [heads, tokens, dk]; v [heads, tokens, dv]; log_decay [heads, tokens, dk];
///   beta [heads, tokens]; state [heads, dk, dv]; out [heads, tokens, dv];
///   scratch: heads * chunk * (chunk + dk + dv + dk) floats
struct delta_chunk_params {
  int heads;
  int tokens;
  int dk;
  int dv;
  int chunk;
};

/// Sparse decode over one shared record per entry (K = V): each query reads `window` recent
/// records plus `selected` compressed entries given by index.
///   q [batch, heads, width]; window_cache [batch, window, width]; entries [batch, n_entries,
///   width]; selected [batch, selected] (entry indices); out [batch, heads, width] (float)
struct sparse_decode_params {
  int batch;
  int heads;
  int width;
  int window;     // records in the window (already filled)
  int n_entries;  // compressed entries stored
  int selected;   // entries each query reads
};

/// Grouped GEMM of routed experts at decode-size rows: for expert e, rows
///   [offsets[e], offsets[e+1]) of x [rows, in] times w[e] [in, out] -> y [rows, out] (float).
struct moe_gemm_params {
  int experts;
  int in;
  int out;
  const int* offsets;  // [experts + 1], host and device copies
};

/// How the kernels are blocked, shared by each CUDA kernel and its blocked CPU twin
/// (decode_blocked.h) so the twin performs the same partial sums in the same groups.
namespace blocking {
constexpr int kGqaMaxGroup = 8;         // query heads one GQA block serves (its KV head's group)
constexpr int kGqaMaxHeadDim = 256;     // 16-byte loads: head_dim / 8 lanes per token row (<= 32)
constexpr int kGqaSplitAlign = 64;      // split lengths are multiples of this many tokens
constexpr int kDeltaWarps = 8;          // the state's key rows are split over 8 warps ...
constexpr int kDeltaMaxRows = 16;       // ... of at most 16 rows each: d_k <= 128
constexpr int kDeltaCols = 128;         // value columns per block: 32 lanes x float4
constexpr int kMoeSlices = 8;           // the input width is split over 8 warps
constexpr int kMoeCols = 256;           // output columns per block: 32 lanes x 8 BF16 (16 bytes)
constexpr int kMoeMaxRows = 8;          // rows of one expert multiplied per pass over its weights
constexpr int kSparseTile = 32;         // records a sparse-decode block gathers per pass
constexpr int kSparseWarps = 16;        // warps of a sparse-decode block ...
constexpr int kSparseHeadsPerWarp = 4;  // ... each serving 4 heads: 64 heads per block
constexpr int kMlaWarps = 16;           // warps of an MLA decode block ...
constexpr int kMlaHeadsPerWarp = 4;     // ... each serving 4 heads: 64 heads per block
constexpr int kSparseBlocks = 264;      // blocks wanted over the GPU (2 x 132 SMs on an H200)
}  // namespace blocking

/// Splits of a GQA decode's sequence.
inline int gqa_splits(const gqa_decode_params& p) {
  return (p.length + p.split_tokens - 1) / p.split_tokens;
}

/// Split length giving at least `blocks` blocks over batch x kv_heads (e.g. 2 x the SMs), so a
/// single long request still spreads over the GPU; at least one split, aligned (short sequences
/// get one aligned split per kGqaSplitAlign tokens at most).
inline int split_tokens_for(int batch, int kv_heads, int length, int blocks) {
  int per = batch * kv_heads, splits = per >= blocks ? 1 : (blocks + per - 1) / per;
  // Rounded down to the alignment, so the splits are at least as many as asked for.
  int t = (length + splits - 1) / splits / blocking::kGqaSplitAlign * blocking::kGqaSplitAlign;
  return t > 0 ? t : blocking::kGqaSplitAlign;
}

/// Blocks of heads of a sparse decode (each reads the request's records once).
inline int sparse_head_blocks(const sparse_decode_params& p) {
  const int per = blocking::kSparseWarps * blocking::kSparseHeadsPerWarp;
  return (p.heads + per - 1) / per;
}

/// Records per split of a sparse decode: whole tiles, enough splits for kSparseBlocks blocks
/// over (request, head block) where the records allow.
inline int sparse_split_records(const sparse_decode_params& p) {
  const int per = p.batch * sparse_head_blocks(p), n = p.window + p.selected;
  const int splits = per >= blocking::kSparseBlocks ? 1 : (blocking::kSparseBlocks + per - 1) / per;
  const int tiles = (n + blocking::kSparseTile - 1) / blocking::kSparseTile;
  const int tiles_per = (tiles + splits - 1) / splits;
  return (tiles_per > 0 ? tiles_per : 1) * blocking::kSparseTile;
}

/// Splits of a sparse decode's records (none empty).
inline int sparse_splits(const sparse_decode_params& p) {
  const int per = sparse_split_records(p);
  return (p.window + p.selected + per - 1) / per;
}

/// Scratch of a sparse decode: per (request, head, split) the output, max and sum.
inline long sparse_scratch_floats(const sparse_decode_params& p) {
  return static_cast<long>(p.batch) * p.heads * sparse_splits(p) * (p.width + 2);
}

/// Scratch of a GQA decode: per (request, query head, split) the running max, sum and the
/// unnormalised output (head_dim + 2 floats).
inline long gqa_scratch_floats(const gqa_decode_params& p) {
  return static_cast<long>(p.batch) * p.q_heads * gqa_splits(p) * (p.head_dim + 2);
}

/// Blocks of heads of an MLA decode (each reads the request's latent records once).
inline int mla_head_blocks(const mla_decode_params& p) {
  const int per = blocking::kMlaWarps * blocking::kMlaHeadsPerWarp;
  return (p.heads + per - 1) / per;
}

/// Records per split of an MLA decode: whole tiles, enough splits for kSparseBlocks blocks
/// over (request, head block) where the records allow.
inline int mla_split_records(const mla_decode_params& p) {
  const int per = p.batch * mla_head_blocks(p);
  const int splits = per >= blocking::kSparseBlocks ? 1 : (blocking::kSparseBlocks + per - 1) / per;
  const int tiles = (p.length + blocking::kSparseTile - 1) / blocking::kSparseTile;
  const int tiles_per = (tiles + splits - 1) / splits;
  return (tiles_per > 0 ? tiles_per : 1) * blocking::kSparseTile;
}

/// Splits of an MLA decode's records (none empty).
inline int mla_splits(const mla_decode_params& p) {
  const int per = mla_split_records(p);
  return (p.length + per - 1) / per;
}

/// Scratch of an MLA decode: per (request, head, split) the output, max and sum.
inline long mla_scratch_floats(const mla_decode_params& p) {
  return static_cast<long>(p.batch) * p.heads * mla_splits(p) * (p.rank + 2);
}

}  // namespace calc::kernels
