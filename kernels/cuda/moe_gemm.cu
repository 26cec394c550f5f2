// Grouped GEMM of routed experts for decode-size row counts: a thread per output column of a
// row, its expert found from the routing offsets; weight reads coalesce along the columns.
// Twin: moe_gemm_ref.
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using detail::bf;

__global__ void moe_gemm_kernel(const unsigned short* x, const unsigned short* w, float* y,
                                moe_gemm_params p) {
  int r = blockIdx.y, o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= p.out) return;
  int e = 0;
  while (e + 1 <= p.experts && p.offsets[e + 1] <= r) ++e;  // rows [offsets[e], offsets[e+1])
  const unsigned short* we = w + (long)e * p.in * p.out;
  const unsigned short* xr = x + (long)r * p.in;
  float acc = 0;
  for (int i = 0; i < p.in; ++i) acc += bf(xr[i]) * bf(we[(long)i * p.out + o]);
  y[(long)r * p.out + o] = acc;
}

}  // namespace

cudaError_t moe_gemm(const bf16_bits* x, const bf16_bits* w, float* y, int rows,
                     const moe_gemm_params& p, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  dim3 grid((p.out + config::kThreads - 1) / config::kThreads, rows);
  moe_gemm_kernel<<<grid, config::kThreads, 0, stream>>>(x, w, y, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
