// Bandwidth ceiling probe: a read-only reduction (every byte read once, one float written per
// block), measured before the kernels in the same run.
#include "config.h"
#include "launchers.h"

namespace calc::kernels {

namespace {

__global__ void read_kernel(const float4* data, long n4, float* sum) {
  float acc = 0;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4;
       i += (long)gridDim.x * blockDim.x) {
    float4 v = __ldg(&data[i]);
    acc += v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

}  // namespace

cudaError_t read_probe(const float* data, long n, float* sum, cudaStream_t stream) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  read_kernel<<<sms * 8, config::kReduceThreads, 0, stream>>>(reinterpret_cast<const float4*>(data),
                                                              n / 4, sum);
  return cudaGetLastError();
}

}  // namespace calc::kernels
