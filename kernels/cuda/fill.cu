// Device-side seeded fills for the timed shapes (gigabytes of inputs would take the host too long)
// and NaN poison for outputs: a counter-based hash, so any element is reproducible from
// (seed, index) and the host can regenerate a slice to check.
#include "launchers.h"

namespace calc::kernels {

namespace {

__host__ __device__ inline unsigned long long mix(unsigned long long z) {  // splitmix64
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [lo, hi) from (seed, i).
__device__ inline float uniform(unsigned long long seed, long i, float lo, float hi) {
  float u = (mix(seed ^ mix((unsigned long long)i)) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

__global__ void fill_bf16_kernel(unsigned short* p, long n, unsigned long long seed, float lo,
                                 float hi) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    p[i] = __bfloat16_as_ushort(__float2bfloat16(uniform(seed, i, lo, hi)));
}

__global__ void fill_f32_kernel(float* p, long n, unsigned long long seed, float lo, float hi) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    p[i] = lo == hi ? lo : uniform(seed, i, lo, hi);
}

}  // namespace

cudaError_t fill_uniform_bf16(bf16_bits* p, long n, unsigned long long seed, float lo, float hi,
                              cudaStream_t stream) {
  fill_bf16_kernel<<<1024, 256, 0, stream>>>(p, n, seed, lo, hi);
  return cudaGetLastError();
}

cudaError_t fill_uniform_f32(float* p, long n, unsigned long long seed, float lo, float hi,
                             cudaStream_t stream) {
  fill_f32_kernel<<<1024, 256, 0, stream>>>(p, n, seed, lo, hi);
  return cudaGetLastError();
}

cudaError_t fill_nan_f32(float* p, long n, cudaStream_t stream) {
  return fill_uniform_f32(p, n, 0, NAN, NAN, stream);
}

}  // namespace calc::kernels
