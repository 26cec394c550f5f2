// KDA / Gated DeltaNet recurrent decode step in one pass over the state: a block per (request,
// head, tile of 128 value columns); each lane holds 4 adjacent columns (16-byte loads) of its
// warp's slice of key rows in registers, so the FP32 state is read once and written once. The
// per-column prediction S'^T k and output S^T q are summed per warp, then over the warps in
// order through shared memory. Twin: delta_step_blocked.
#include "config.h"
#include "launchers.h"

namespace calc::kernels {

namespace {

using blocking::kDeltaCols;
using blocking::kDeltaMaxRows;
using blocking::kDeltaWarps;

__global__ void __launch_bounds__(config::kDeltaThreads)
    delta_step_kernel(const float* __restrict__ q, const float* __restrict__ k,
                      const float* __restrict__ v, const float* __restrict__ log_decay,
                      const float* __restrict__ beta, float* __restrict__ state,
                      float* __restrict__ out, delta_step_params p) {
  __shared__ float k_sh[kDeltaWarps * kDeltaMaxRows], q_sh[kDeltaWarps * kDeltaMaxRows],
      decay_sh[kDeltaWarps * kDeltaMaxRows];
  __shared__ __align__(16) float red[kDeltaWarps][kDeltaCols];
  __shared__ __align__(16) float delta_sh[kDeltaCols];
  const int bh = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rows = (p.dk + kDeltaWarps - 1) / kDeltaWarps;
  const int j0 = blockIdx.y * kDeltaCols + lane * 4;  // this lane's 4 columns
  const bool active = j0 < p.dv;
  for (int i = threadIdx.x; i < p.dk; i += blockDim.x) {
    k_sh[i] = k[(long)bh * p.dk + i];
    q_sh[i] = q[(long)bh * p.dk + i];
    decay_sh[i] = expf(log_decay[(long)bh * p.dk + i]);
  }
  __syncthreads();
  float* S = state + (long)bh * p.dk * p.dv;
  float4 held[kDeltaMaxRows];
  float4 pred = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int r = 0; r < kDeltaMaxRows; ++r) {
    const int i = warp * rows + r;
    if (r < rows && i < p.dk && active) {
      float4 s = *reinterpret_cast<const float4*>(S + (long)i * p.dv + j0);
      const float d = decay_sh[i], kk = k_sh[i];
      s.x *= d, s.y *= d, s.z *= d, s.w *= d;
      held[r] = s;
      pred.x += s.x * kk, pred.y += s.y * kk, pred.z += s.z * kk, pred.w += s.w * kk;
    }
  }
  *reinterpret_cast<float4*>(&red[warp][lane * 4]) = pred;
  __syncthreads();
  for (int c = threadIdx.x; c < kDeltaCols; c += blockDim.x) {
    const int j = blockIdx.y * kDeltaCols + c;
    float total = 0;
    for (int w = 0; w < kDeltaWarps; ++w) total += red[w][c];
    delta_sh[c] = j < p.dv ? beta[bh] * (v[(long)bh * p.dv + j] - total) : 0.0f;
  }
  __syncthreads();
  const float4 delta = *reinterpret_cast<const float4*>(&delta_sh[lane * 4]);
  float4 o = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int r = 0; r < kDeltaMaxRows; ++r) {
    const int i = warp * rows + r;
    if (r < rows && i < p.dk && active) {
      const float kk = k_sh[i], qq = q_sh[i];
      float4 s = held[r];
      s.x += kk * delta.x, s.y += kk * delta.y, s.z += kk * delta.z, s.w += kk * delta.w;
      *reinterpret_cast<float4*>(S + (long)i * p.dv + j0) = s;
      o.x += s.x * qq, o.y += s.y * qq, o.z += s.z * qq, o.w += s.w * qq;
    }
  }
  *reinterpret_cast<float4*>(&red[warp][lane * 4]) = o;
  __syncthreads();
  for (int c = threadIdx.x; c < kDeltaCols; c += blockDim.x) {
    const int j = blockIdx.y * kDeltaCols + c;
    float total = 0;
    for (int w = 0; w < kDeltaWarps; ++w) total += red[w][c];
    if (j < p.dv) out[(long)bh * p.dv + j] = total;
  }
}

}  // namespace

cudaError_t delta_step(const float* q, const float* k, const float* v, const float* log_decay,
                       const float* beta, float* state, float* out, const delta_step_params& p,
                       cudaStream_t stream) {
  if (p.dk > kDeltaWarps * kDeltaMaxRows || p.dv % 4 != 0) return cudaErrorInvalidValue;
  dim3 grid(p.batch * p.heads, (p.dv + kDeltaCols - 1) / kDeltaCols);
  delta_step_kernel<<<grid, config::kDeltaThreads, 0, stream>>>(q, k, v, log_decay, beta, state,
                                                                out, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
