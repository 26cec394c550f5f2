// CPU twins of the CUDA decode kernels: same parameters, host pointers, float accumulation.
#pragma once

#include "decode_params.h"

namespace calc::kernels {

float bf16_to_float(bf16_bits b);
bf16_bits float_to_bf16(float f);

void gqa_decode_ref(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                    const gqa_decode_params& p);
void mla_decode_ref(const bf16_bits* q, const bf16_bits* cache, float* out,
                    const mla_decode_params& p);
void delta_step_ref(const float* q, const float* k, const float* v, const float* log_decay,
                    const float* beta, float* state, float* out, const delta_step_params& p);
void delta_chunk_ref(const float* q, const float* k, const float* v, const float* log_decay,
                     const float* beta, float* state, float* out, const delta_chunk_params& p);
void sparse_decode_ref(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                       const int* selected, float* out, const sparse_decode_params& p);
void moe_gemm_ref(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p);

}  // namespace calc::kernels
