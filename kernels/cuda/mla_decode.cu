// Absorbed MLA decode (the query already in latent space) in one kernel that reads the latent
// once, FlashMLA's structure on CUDA cores: a block per (split, request, up to 64 heads); per
// tile of blocking::kSparseTile records the block copies the [latent, rope] records into shared
// memory with coalesced 16-byte loads, each warp scores the tile for its 4 heads (queries in
// shared memory, outputs in registers) and merges it into a running (max, sum, output) in FP32;
// a combine kernel merges the splits. Twin: mla_decode_blocked.
#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using blocking::kSparseTile;
constexpr int kWarps = blocking::kMlaWarps;
constexpr int kHeadsPerWarp = blocking::kMlaHeadsPerWarp;

/// Grid (splits, head blocks, batch). R: the latent rank (a multiple of 32); records are
/// R + p.rope wide (a multiple of 8).
template <int R>
__global__ void __launch_bounds__(kWarps * 32)
    mla_split_kernel(const unsigned short* __restrict__ q, const unsigned short* __restrict__ cache,
                     float* __restrict__ scratch, mla_decode_params p, int per_split) {
  constexpr int E = R / 32;  // output values per lane: latent columns lane + 32 i
  const int w = R + p.rope, chunks = w / 8;
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* qs = smem;                                 // [heads per block][w]
  unsigned short* tile = smem + kWarps * kHeadsPerWarp * w;  // [kSparseTile][w]
  const int s = blockIdx.x, hb = blockIdx.y, b = blockIdx.z, splits = gridDim.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j0 = s * per_split, j1 = min(p.length, j0 + per_split);
  const float scale = rsqrtf((float)w);
  auto head = [&](int i) { return (hb * kWarps + warp) * kHeadsPerWarp + i; };
  float acc[kHeadsPerWarp][E], m[kHeadsPerWarp], l[kHeadsPerWarp];
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[i][e] = 0;
    const unsigned short* qh = q + ((long)b * p.heads + min(head(i), p.heads - 1)) * w;
    for (int e = lane; e < w; e += 32) qs[(warp * kHeadsPerWarp + i) * w + e] = qh[e];
  }
  const unsigned short* records = cache + (long)b * p.length * w;
  for (int t0 = j0; t0 < j1; t0 += kSparseTile) {
    const int c = min(kSparseTile, j1 - t0);
    // The tile's records are contiguous: consecutive threads copy consecutive 16 bytes.
    for (int i = threadIdx.x; i < c * chunks; i += blockDim.x)
      reinterpret_cast<uint4*>(tile)[i] =
          __ldg(reinterpret_cast<const uint4*>(records + (long)t0 * w) + i);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
      if (head(i) >= p.heads) break;  // the same for every lane of the warp
      const unsigned short* qh = qs + (warp * kHeadsPerWarp + i) * w;
      float mine = -INFINITY;  // lane r keeps record r's score
      for (int r = 0; r < c; ++r) {
        float d = 0;
        for (int e = lane; e < w; e += 32) d += detail::bf(qh[e]) * detail::bf(tile[r * w + e]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (lane == r) mine = d * scale;
      }
      float top = mine;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
      const float m_new = fmaxf(m[i], top), keep = __expf(m[i] - m_new);
      const float wt = lane < c ? __expf(mine - m_new) : 0.0f;
      float sum = wt;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      l[i] = l[i] * keep + sum;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[i][e] *= keep;
      for (int r = 0; r < c; ++r) {
        const float wr = __shfl_sync(0xffffffffu, wt, r);
#pragma unroll
        for (int e = 0; e < E; ++e) acc[i][e] += wr * detail::bf(tile[r * w + lane + 32 * e]);
      }
      m[i] = m_new;
    }
    __syncthreads();
  }
  // The split's (output, max, sum) per head.
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    if (head(i) >= p.heads) break;
    float* part = scratch + (((long)b * p.heads + head(i)) * splits + s) * (R + 2);
#pragma unroll
    for (int e = 0; e < E; ++e) part[lane + 32 * e] = acc[i][e];
    if (lane == 0) {
      part[R] = m[i];
      part[R + 1] = l[i];
    }
  }
}

/// out[b, h] = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the splits' maximum.
__global__ void mla_combine_kernel(const float* __restrict__ scratch, float* __restrict__ out,
                                   int splits, int rank) {
  const long bh = blockIdx.x;
  const float* part = scratch + bh * splits * (rank + 2);
  float top = -INFINITY;
  for (int s = 0; s < splits; ++s) top = fmaxf(top, part[s * (rank + 2) + rank]);
  float total = 0;
  for (int s = 0; s < splits; ++s)
    total += part[s * (rank + 2) + rank + 1] * __expf(part[s * (rank + 2) + rank] - top);
  for (int e = threadIdx.x; e < rank; e += blockDim.x) {
    float acc = 0;
    for (int s = 0; s < splits; ++s)
      acc += part[s * (rank + 2) + e] * __expf(part[s * (rank + 2) + rank] - top);
    out[bh * rank + e] = acc / total;
  }
}

template <int R>
cudaError_t launch_split(const bf16_bits* q, const bf16_bits* cache, float* scratch,
                         const mla_decode_params& p, cudaStream_t stream) {
  dim3 grid(mla_splits(p), mla_head_blocks(p), p.batch);
  const int bytes = (kWarps * kHeadsPerWarp + kSparseTile) * (R + p.rope) * 2;
  if (cudaError_t e = cudaFuncSetAttribute(mla_split_kernel<R>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
      e != cudaSuccess)
    return e;
  mla_split_kernel<R>
      <<<grid, kWarps * 32, bytes, stream>>>(q, cache, scratch, p, mla_split_records(p));
  return cudaGetLastError();
}

}  // namespace

cudaError_t mla_decode(const bf16_bits* q, const bf16_bits* cache, float* out, float* scratch,
                       const mla_decode_params& p, cudaStream_t stream) {
  if (p.length <= 0 || (p.rank + p.rope) % 8 != 0) return cudaErrorInvalidValue;
  cudaError_t e = cudaErrorInvalidValue;
  switch (p.rank) {
    case 64:
      e = launch_split<64>(q, cache, scratch, p, stream);
      break;
    case 512:
      e = launch_split<512>(q, cache, scratch, p, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  mla_combine_kernel<<<p.batch * p.heads, config::kThreads, 0, stream>>>(scratch, out,
                                                                         mla_splits(p), p.rank);
  return cudaGetLastError();
}

}  // namespace calc::kernels
