// The two passes every decode kernel here shares: scores of one query against n records (with
// the block's maximum), then exp, sum and the weighted aggregate of the values.
#pragma once

#include <cuda_bf16.h>

#include "config.h"

namespace calc::kernels::detail {

__device__ inline float bf(const unsigned short b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}

/// Block-wide maximum (blockDim.x threads, a multiple of 32).
__device__ inline float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = -INFINITY;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) r = fmaxf(r, shared[w]);
  __syncthreads();
  return r;
}

/// Block-wide sum.
__device__ inline float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) r += shared[w];
  __syncthreads();
  return r;
}

/// scores[0..n) already hold raw scores: turns them into softmax weights in place and writes
/// out[e] = sum_j w_j * value(j, e) for e < width.
template <typename Value>
__device__ void softmax_aggregate(float* scores, int n, int width, Value value, float* out) {
  __shared__ float shared[32];
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, scores[j]);
  m = block_max(m, shared);
  float s = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float w = __expf(scores[j] - m);
    scores[j] = w;
    s += w;
  }
  s = block_sum(s, shared);
  __syncthreads();
  for (int e = threadIdx.x; e < width; e += blockDim.x) {
    float acc = 0;
    for (int j = 0; j < n; ++j) acc += scores[j] * value(j, e);
    out[e] = acc / s;
  }
}

}  // namespace calc::kernels::detail
