// Bandwidth ceiling probe: a read-only reduction, every byte read once with unrolled 16-byte
// loads (kReduceUnroll in flight per thread), one block-wide reduction per block writing one
// partial sum (no atomics), measured before the kernels in the same run.
#include <algorithm>

#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

__global__ void __launch_bounds__(config::kReduceThreads)
    read_kernel(const float4* __restrict__ data, long n4, float* __restrict__ partials) {
  __shared__ float shared[32];
  constexpr int U = config::kReduceUnroll;
  const long stride = (long)gridDim.x * blockDim.x;
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  float acc = 0;
  for (; i + (U - 1) * stride < n4; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldg(&data[i + u * stride]);
#pragma unroll
    for (int u = 0; u < U; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < n4; i += stride) {
    float4 v = __ldg(&data[i]);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  acc = detail::block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

}  // namespace

int read_probe_blocks() {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) sms = 1;
  return std::min(sms * config::kReduceBlocksPerSm, config::kReduceMaxBlocks);
}

cudaError_t read_probe(const float* data, long n, float* partials, cudaStream_t stream) {
  if (n % 4 != 0) return cudaErrorInvalidValue;
  read_kernel<<<read_probe_blocks(), config::kReduceThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(data), n / 4, partials);
  return cudaGetLastError();
}

}  // namespace calc::kernels
