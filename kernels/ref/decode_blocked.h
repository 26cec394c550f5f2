// CPU twins of the CUDA decode kernels, blocked the way the kernels are (decode_params.h's
// `blocking`): split-sequence GQA with online softmax and a combine, MLA over tiles of latent
// records with a combine, the delta-rule step over column tiles and key-row slices, and the MoE
// grouped GEMM over input slices, sparse decode over gathered tiles of records, and the chunked
// delta rule (WY form) the prefill kernel implements. CI compares each with the plain twin of
// decode_ref.h, so the kernels' arithmetic is checked without a GPU; on a GPU, the kernels are
// compared with the same plain twins.
#pragma once

#include <vector>

#include "decode_params.h"

namespace calc::kernels {

/// Split over the sequence (p.split_tokens), one-pass online softmax per split, then the
/// combine of the splits' (max, sum, unnormalised output).
void gqa_decode_blocked(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                        const gqa_decode_params& p);
/// Split over the records as the kernel splits them (mla_split_records); per split, tiles of
/// blocking::kSparseTile records scored against the whole [latent, rope] record and merged into
/// a running (max, sum, latent output) in FP32; then the combine of the splits.
void mla_decode_blocked(const bf16_bits* q, const bf16_bits* cache, float* out,
                        const mla_decode_params& p);
/// One pass over the state: each column's prediction and output summed per slice of
/// blocking::kDeltaMaxRows-sized key rows, the slices then added in order.
void delta_step_blocked(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, const delta_step_params& p);
/// Chunked delta rule over `tokens` positions (prefill), blocked as linear_attention.cu is:
/// per chunk the cumulative log decays G, the masked products A and B through e^(G_i - G_j),
/// forward substitution for W and U, then the outputs and the state through e^(G_last - G_i).
void delta_chunk_blocked(const float* q, const float* k, const float* v, const float* log_decay,
                         const float* beta, float* state, float* out, const delta_chunk_params& p);
/// The records split as the kernel splits them (sparse_split_records); per split, records
/// gathered in tiles of blocking::kSparseTile (window records first, then the selected entries
/// in index order), each tile's scores for every head, a one-pass merge of the tile into a
/// running (max, sum, output) per head; then the combine of the splits.
void sparse_decode_blocked(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                           const int* selected, float* out, const sparse_decode_params& p);
/// Each output summed per slice of the input width (blocking::kMoeSlices), then the slices:
/// a second implementation beside the plain twin (the kernel itself is cuBLAS's grouped GEMM).
void moe_gemm_blocked(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p);

/// Rows of the key dimension one warp of the delta-rule step holds (ceil(d_k / warps)).
inline int delta_rows_per_warp(int dk) {
  return (dk + blocking::kDeltaWarps - 1) / blocking::kDeltaWarps;
}
/// Input elements one warp of the MoE GEMM sums (ceil(in / slices)).
inline int moe_slice(int in) { return (in + blocking::kMoeSlices - 1) / blocking::kMoeSlices; }

/// One stream of a kernel's memory traffic, as the kernel's loads and stores make it: `values`
/// values in `format` (a calc format name, priced by the byte rule of common/dtype.h in
/// src/exec), moved `times` times. `cls` says what the tally calls it: "state" (cache, latents,
/// records, recurrent state or expert weights: what the tally's read rule counts), "activation"
/// (queries, outputs, indices: outside that rule) or "scratch" (an HBM round trip between two
/// launches of one kernel: a design cost the tally does not predict).
struct traffic {
  const char* what;
  long values;
  const char* format;
  long times;
  const char* cls;
};
std::vector<traffic> gqa_decode_traffic(const gqa_decode_params& p);
std::vector<traffic> mla_decode_traffic(const mla_decode_params& p);
std::vector<traffic> delta_step_traffic(const delta_step_params& p);
std::vector<traffic> sparse_decode_traffic(const sparse_decode_params& p);
/// `rows` rows in all; experts with no row are not read.
std::vector<traffic> moe_gemm_traffic(const moe_gemm_params& p, int rows);

}  // namespace calc::kernels
