// CPU twins of the CUDA decode kernels: same parameters, host pointers, float accumulation.
// Each twin can also return, per output element, its rounding energy: the sum of the squares of
// the terms the element is summed from (sum_j (w_j v_j)^2 for attention, sum_i (x_i w_i)^2 for a
// GEMM). The checks' tolerances scale with it (twin_cases.h: the rounding model).
#pragma once

#include "decode_params.h"

namespace calc::kernels {

float bf16_to_float(bf16_bits b);
bf16_bits float_to_bf16(float f);

/// `energy` (optional) has the shape of `out`.
void gqa_decode_ref(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                    const gqa_decode_params& p, float* energy = nullptr);
void mla_decode_ref(const bf16_bits* q, const bf16_bits* cache, float* out,
                    const mla_decode_params& p, float* energy = nullptr);
/// `energy` (optional) of `out`; `state_energy` (optional): on entry the energy the state
/// carries (zeros for an exact state), on return the new state's.
void delta_step_ref(const float* q, const float* k, const float* v, const float* log_decay,
                    const float* beta, float* state, float* out, const delta_step_params& p,
                    float* energy = nullptr, float* state_energy = nullptr);
void delta_chunk_ref(const float* q, const float* k, const float* v, const float* log_decay,
                     const float* beta, float* state, float* out, const delta_chunk_params& p,
                     float* energy = nullptr, float* state_energy = nullptr);
void sparse_decode_ref(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                       const int* selected, float* out, const sparse_decode_params& p,
                       float* energy = nullptr);
void moe_gemm_ref(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p,
                  float* energy = nullptr);

}  // namespace calc::kernels
