// Launchers of the CUDA kernels: device pointers, the same parameter structs as the CPU twins
// (kernels/ref/decode_ref.h, decode_blocked.h), a stream; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for parameters the kernel's blocking does not cover).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "decode_params.h"

namespace calc::kernels {

/// Split-sequence decode; scratch: gqa_scratch_floats(p). head_dim 64, 128 or 256; at most
/// blocking::kGqaMaxGroup query heads per KV head.
cudaError_t gqa_decode(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                       float* scratch, const gqa_decode_params& p, cudaStream_t stream);
/// Absorbed decode in one kernel reading the latent once per 64 heads; rank 64 or 512, rank +
/// rope a multiple of 8; scratch: mla_scratch_floats(p).
cudaError_t mla_decode(const bf16_bits* q, const bf16_bits* cache, float* out, float* scratch,
                       const mla_decode_params& p, cudaStream_t stream);
/// One-pass recurrent step; d_k <= 128, d_v a multiple of 4.
cudaError_t delta_step(const float* q, const float* k, const float* v, const float* log_decay,
                       const float* beta, float* state, float* out, const delta_step_params& p,
                       cudaStream_t stream);
/// scratch: heads * chunk * (2 * chunk + 2 * dk + dv) floats.
cudaError_t delta_chunk(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, float* scratch,
                        const delta_chunk_params& p, cudaStream_t stream);
/// scratch: sparse_scratch_floats(p); width 64, 128, 256 or 512.
cudaError_t sparse_decode(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                          const int* selected, float* out, float* scratch,
                          const sparse_decode_params& p, cudaStream_t stream);
/// Routed experts on tensor cores (cuBLAS grouped GEMM). p.offsets: the device copy of the
/// offsets, host_offsets the host copy; ptrs: device scratch of moe_pointer_count(p) pointers.
cudaError_t moe_gemm(const bf16_bits* x, const bf16_bits* w, float* y, const int* host_offsets,
                     const moe_gemm_params& p, const void** ptrs, cublasHandle_t blas,
                     cudaStream_t stream);
/// Pointers the MoE launch writes: weights, inputs and outputs of each expert.
inline long moe_pointer_count(const moe_gemm_params& p) { return 3L * p.experts; }

/// Seeded uniform fills in [lo, hi) (BF16-rounded for BF16), reproducible per element.
cudaError_t fill_uniform_bf16(bf16_bits* p, long n, unsigned long long seed, float lo, float hi,
                              cudaStream_t stream);
cudaError_t fill_uniform_f32(float* p, long n, unsigned long long seed, float lo, float hi,
                             cudaStream_t stream);
/// NaN poison: an output the kernel fails to write stays NaN and fails its check.
cudaError_t fill_nan_f32(float* p, long n, cudaStream_t stream);

/// Blocks (and so partial sums) of the read probe on this device.
int read_probe_blocks();
/// Read-only reduction over n floats (n a multiple of 4): one partial sum per block.
cudaError_t read_probe(const float* data, long n, float* partials, cudaStream_t stream);

}  // namespace calc::kernels
