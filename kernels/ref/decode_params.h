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

}  // namespace calc::kernels
