// Compact MLA decode: the query is already absorbed into latent space, so each head scores the
// cached [latent, rope] records and aggregates the latent (twin: mla_decode_ref).
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using detail::bf;

__global__ void mla_scores(const unsigned short* q, const unsigned short* cache, float* scratch,
                           mla_decode_params p) {
  int bh = blockIdx.x, b = bh / p.heads, w = p.rank + p.rope;
  const unsigned short* qh = q + (long)bh * w;
  float scale = rsqrtf((float)w);
  for (int t = threadIdx.x; t < p.length; t += blockDim.x) {
    const unsigned short* c = cache + ((long)b * p.length + t) * w;
    float s = 0;
    for (int e = 0; e < w; ++e) s += bf(qh[e]) * bf(c[e]);
    scratch[(long)bh * p.length + t] = s * scale;
  }
}

__global__ void mla_aggregate(const unsigned short* cache, float* out, float* scratch,
                              mla_decode_params p) {
  int bh = blockIdx.x, b = bh / p.heads, w = p.rank + p.rope;
  detail::softmax_aggregate(
      scratch + (long)bh * p.length, p.length, p.rank,
      [&](int t, int e) { return bf(cache[((long)b * p.length + t) * w + e]); },
      out + (long)bh * p.rank);
}

}  // namespace

cudaError_t mla_decode(const bf16_bits* q, const bf16_bits* cache, float* out, float* scratch,
                       const mla_decode_params& p, cudaStream_t stream) {
  dim3 grid(p.batch * p.heads);
  mla_scores<<<grid, config::kThreads, 0, stream>>>(q, cache, scratch, p);
  mla_aggregate<<<grid, config::kThreads, 0, stream>>>(cache, out, scratch, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
