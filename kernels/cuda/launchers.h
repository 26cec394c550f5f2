// Launchers of the CUDA kernels: device pointers, the same parameter structs as the CPU twins
// (kernels/ref/decode_ref.h), a stream; each returns the launch's cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include "decode_params.h"

namespace calc::kernels {

/// scratch: batch * q_heads * length floats.
cudaError_t gqa_decode(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                       float* scratch, const gqa_decode_params& p, cudaStream_t stream);
/// scratch: batch * heads * length floats.
cudaError_t mla_decode(const bf16_bits* q, const bf16_bits* cache, float* out, float* scratch,
                       const mla_decode_params& p, cudaStream_t stream);
cudaError_t delta_step(const float* q, const float* k, const float* v, const float* log_decay,
                       const float* beta, float* state, float* out, const delta_step_params& p,
                       cudaStream_t stream);
/// scratch: heads * chunk * (2 * chunk + 2 * dk + dv) floats.
cudaError_t delta_chunk(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, float* scratch,
                        const delta_chunk_params& p, cudaStream_t stream);
/// scratch: batch * heads * (window + selected) floats.
cudaError_t sparse_decode(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                          const int* selected, float* out, float* scratch,
                          const sparse_decode_params& p, cudaStream_t stream);
/// offsets must be a device pointer in p.offsets; rows = offsets[experts] on the host.
cudaError_t moe_gemm(const bf16_bits* x, const bf16_bits* w, float* y, int rows,
                     const moe_gemm_params& p, cudaStream_t stream);

/// Bandwidth probes: a read-only reduction over n floats into *sum.
cudaError_t read_probe(const float* data, long n, float* sum, cudaStream_t stream);

}  // namespace calc::kernels
