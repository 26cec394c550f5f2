// CPU twins of the CUDA decode kernels, blocked the way the kernels are (decode_params.h's
// `blocking`): split-sequence GQA with online softmax and a combine, MLA as two GEMMs around a
// softmax rounded to BF16, the delta-rule step over column tiles and key-row slices, and the MoE
// grouped GEMM over input slices. CI compares each with the plain twin of decode_ref.h, so the
// kernels' arithmetic is checked without a GPU; on a GPU, the kernels are compared with the same
// plain twins.
#pragma once

#include "decode_params.h"

namespace calc::kernels {

/// Split over the sequence (p.split_tokens), one-pass online softmax per split, then the
/// combine of the splits' (max, sum, unnormalised output).
void gqa_decode_blocked(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                        const gqa_decode_params& p);
/// Scores of every head against the latent records (one GEMM per request), softmax weights
/// rounded to BF16, then the weighted latent (a second GEMM), as the cuBLAS path does.
void mla_decode_blocked(const bf16_bits* q, const bf16_bits* cache, float* out,
                        const mla_decode_params& p);
/// One pass over the state: each column's prediction and output summed per slice of
/// blocking::kDeltaMaxRows-sized key rows, the slices then added in order.
void delta_step_blocked(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, const delta_step_params& p);
/// Each output summed per slice of the input width (blocking::kMoeSlices), then the slices.
void moe_gemm_blocked(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p);

/// Rows of the key dimension one warp of the delta-rule step holds (ceil(d_k / warps)).
inline int delta_rows_per_warp(int dk) {
  return (dk + blocking::kDeltaWarps - 1) / blocking::kDeltaWarps;
}
/// Input elements one warp of the MoE GEMM sums (ceil(in / slices)).
inline int moe_slice(int in) { return (in + blocking::kMoeSlices - 1) / blocking::kMoeSlices; }

/// Bytes each kernel reads and writes at its parameters, counted from its own loads and stores
/// (to compare with the tally's prediction of the same call).
struct kernel_bytes {
  double state_read = 0;  // cached KV, latents, records or recurrent state read
  double state_write = 0; // recurrent state written back
  double weights = 0;     // expert weights read
  double other = 0;       // queries, outputs, indices, small operands
};
kernel_bytes gqa_decode_bytes(const gqa_decode_params& p);
kernel_bytes mla_decode_bytes(const mla_decode_params& p);
kernel_bytes delta_step_bytes(const delta_step_params& p);
kernel_bytes sparse_decode_bytes(const sparse_decode_params& p);
/// `rows` rows in all; experts with no row are not read.
kernel_bytes moe_gemm_bytes(const moe_gemm_params& p, int rows);

}  // namespace calc::kernels
