// Grouped GEMM of routed experts at decode-size row counts, memory-bound on the weights: a block
// per (expert, tile of 256 output columns); each lane reads 16 bytes (8 BF16 columns) of a weight
// row, the 8 warps split the input width, and the block multiplies up to 8 of the expert's rows
// per pass over its weights, so each touched expert's weights are read once per 8 rows. The
// expert index comes from the grid and its row range is checked against the rows given.
// Twin: moe_gemm_blocked.
#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using blocking::kMoeCols;
using blocking::kMoeMaxRows;
using blocking::kMoeSlices;

__global__ void __launch_bounds__(config::kMoeThreads)
    moe_gemm_kernel(const unsigned short* __restrict__ x, const unsigned short* __restrict__ w,
                    float* __restrict__ y, int rows, moe_gemm_params p) {
  __shared__ float red[kMoeSlices][kMoeCols];
  const int e = blockIdx.y;
  if (e >= p.experts) return;
  const int r0 = p.offsets[e], r1 = p.offsets[e + 1];
  if (r0 < 0 || r1 > rows || r1 <= r0) return;  // a bad range leaves the rows unwritten (NaN)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int c0 = blockIdx.x * kMoeCols + lane * 8;  // this lane's 8 output columns
  const int slice = (p.in + kMoeSlices - 1) / kMoeSlices;
  const int i0 = warp * slice, i1 = min(p.in, i0 + slice);
  const unsigned short* we = w + (long)e * p.in * p.out;
  for (int rp = r0; rp < r1; rp += kMoeMaxRows) {
    const int n = min(kMoeMaxRows, r1 - rp);
    float acc[kMoeMaxRows][8];
#pragma unroll
    for (int r = 0; r < kMoeMaxRows; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[r][c] = 0;
    if (c0 < p.out)
      for (int i = i0; i < i1; ++i) {
        uint4 raw = __ldg(reinterpret_cast<const uint4*>(we + (long)i * p.out + c0));
        const unsigned short* h = reinterpret_cast<const unsigned short*>(&raw);
        float wf[8];
#pragma unroll
        for (int c = 0; c < 8; ++c) wf[c] = detail::bf(h[c]);
#pragma unroll
        for (int r = 0; r < kMoeMaxRows; ++r) {
          if (r >= n) break;
          const float xv = detail::bf(x[(long)(rp + r) * p.in + i]);
#pragma unroll
          for (int c = 0; c < 8; ++c) acc[r][c] += xv * wf[c];
        }
      }
#pragma unroll
    for (int r = 0; r < kMoeMaxRows; ++r) {
      if (r >= n) break;
#pragma unroll
      for (int c = 0; c < 8; ++c) red[warp][lane * 8 + c] = acc[r][c];
      __syncthreads();
      for (int col = threadIdx.x; col < kMoeCols; col += blockDim.x) {
        float total = 0;
        for (int s = 0; s < kMoeSlices; ++s) total += red[s][col];
        const int o = blockIdx.x * kMoeCols + col;
        if (o < p.out) y[(long)(rp + r) * p.out + o] = total;
      }
      __syncthreads();
    }
  }
}

}  // namespace

cudaError_t moe_gemm(const bf16_bits* x, const bf16_bits* w, float* y, int rows,
                     const moe_gemm_params& p, cudaStream_t stream) {
  if (p.out % 8 != 0 || p.experts <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  dim3 grid((p.out + kMoeCols - 1) / kMoeCols, p.experts);
  moe_gemm_kernel<<<grid, config::kMoeThreads, 0, stream>>>(x, w, y, rows, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
