// GQA decode over a contiguous or paged BF16 KV cache, split over the sequence (flash decoding):
// one block per (split, KV head, request) serves the KV head's whole query group, so each K/V
// row is read once; lanes read 16 bytes (8 BF16) each, a token row spread over head_dim / 8
// lanes, config::kGqaUnroll row groups loaded before any is used (several KB in flight per
// warp), with shuffle reductions for the dot products and a one-pass online softmax. A combine
// kernel merges the splits' (max, sum, unnormalised output). Twin: gqa_decode_blocked.
#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using blocking::kGqaMaxGroup;

__device__ inline long token_offset(const gqa_decode_params& p, int b, int g, int t) {
  if (p.page_tokens == 0) return ((long)(b * (long)p.length + t) * p.kv_heads + g) * p.head_dim;
  int page = p.page_table[b * p.pages_per_request + t / p.page_tokens];
  return ((long)((long)page * p.page_tokens + t % p.page_tokens) * p.kv_heads + g) * p.head_dim;
}

/// Eight BF16 values from one 16-byte load.
__device__ inline void load8(const unsigned short* __restrict__ src, float* dst) {
  uint4 raw = __ldg(reinterpret_cast<const uint4*>(src));
  const unsigned short* h = reinterpret_cast<const unsigned short*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) dst[i] = detail::bf(h[i]);
}

/// Merges running softmax (m, l, acc) with another's; an empty side has m = -inf.
__device__ inline void merge(float& m, float& l, float* acc, float m2, float l2,
                             const float* acc2) {
  float top = fmaxf(m, m2);
  if (top == -INFINITY) return;
  float c1 = __expf(m - top), c2 = __expf(m2 - top);
  l = l * c1 + l2 * c2;
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = acc[i] * c1 + acc2[i] * c2;
  m = top;
}

template <int D>
__global__ void __launch_bounds__(config::kGqaWarps * 32)
    gqa_split_kernel(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                     const unsigned short* __restrict__ v, float* __restrict__ scratch,
                     gqa_decode_params p) {
  constexpr int kLanesPerRow = D / 8, kRowsPerWarp = 32 / kLanesPerRow;
  constexpr int kRows = config::kGqaWarps * kRowsPerWarp;  // token rows in flight per block
  __shared__ float part_sh[config::kGqaWarps][kGqaMaxGroup][D + 2];
  const int s = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int group = p.q_heads / p.kv_heads, splits = gridDim.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = lane / kLanesPerRow, slice = lane % kLanesPerRow;
  const float scale = rsqrtf((float)D);
  float qr[kGqaMaxGroup][8], acc[kGqaMaxGroup][8], m[kGqaMaxGroup], l[kGqaMaxGroup];
#pragma unroll
  for (int h = 0; h < kGqaMaxGroup; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0;
    if (h < group) {
      load8(q + ((long)b * p.q_heads + g * group + h) * D + slice * 8, qr[h]);
#pragma unroll
      for (int i = 0; i < 8; ++i) qr[h][i] *= scale;
    }
  }
  const int t0 = s * p.split_tokens, t1 = min(p.length, t0 + p.split_tokens);
  // Each warp issues kGqaUnroll row groups of K and V loads (16 bytes per lane each) before
  // using any: with head_dim 128 that is 4 KB in flight per warp, enough to cover HBM latency.
  // Every lane of a warp runs the same iterations, so the shuffles see the whole warp.
  constexpr int kU = config::kGqaUnroll;
  for (int base = t0 + warp * kRowsPerWarp * kU; base < t1; base += kRows * kU) {
    float kf[kU][8], vf[kU][8];
    bool valid[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int t = base + u * kRowsPerWarp + sub;
      valid[u] = t < t1;
      if (valid[u]) {
        long off = token_offset(p, b, g, t) + slice * 8;
        load8(k + off, kf[u]);
        load8(v + off, vf[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int h = 0; h < kGqaMaxGroup; ++h) {
        if (h >= group) break;
        float d = 0;
        if (valid[u])
#pragma unroll
          for (int i = 0; i < 8; ++i) d += qr[h][i] * kf[u][i];
#pragma unroll
        for (int o = kLanesPerRow / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (valid[u]) {
          float m_new = fmaxf(m[h], d), c = __expf(m[h] - m_new), w = __expf(d - m_new);
          l[h] = l[h] * c + w;
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[h][i] = acc[h][i] * c + w * vf[u][i];
          m[h] = m_new;
        }
      }
    }
  }
  // Merge the token rows of the warp (lanes holding the same slice), then the warps.
#pragma unroll
  for (int h = 0; h < kGqaMaxGroup; ++h) {
    if (h >= group) break;
#pragma unroll
    for (int o = kLanesPerRow; o < 32; o <<= 1) {
      float m2 = __shfl_xor_sync(0xffffffffu, m[h], o), l2 = __shfl_xor_sync(0xffffffffu, l[h], o);
      float a2[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) a2[i] = __shfl_xor_sync(0xffffffffu, acc[h][i], o);
      merge(m[h], l[h], acc[h], m2, l2, a2);
    }
    if (sub == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) part_sh[warp][h][slice * 8 + i] = acc[h][i];
      if (slice == 0) {
        part_sh[warp][h][D] = m[h];
        part_sh[warp][h][D + 1] = l[h];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < group * (D + 2); idx += blockDim.x) {
    const int h = idx / (D + 2), e = idx % (D + 2);
    float top = -INFINITY;
    for (int w = 0; w < config::kGqaWarps; ++w) top = fmaxf(top, part_sh[w][h][D]);
    float val = top;  // e == D: the split's max
    if (e != D) {
      val = 0;
      if (top != -INFINITY)
        for (int w = 0; w < config::kGqaWarps; ++w)
          val += part_sh[w][h][e] * __expf(part_sh[w][h][D] - top);
    }
    scratch[(((long)b * p.q_heads + g * group + h) * splits + s) * (D + 2) + e] = val;
  }
}

/// out[b, h] = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the splits' maximum.
__global__ void gqa_combine_kernel(const float* __restrict__ scratch, float* __restrict__ out,
                                   int splits, int d) {
  const long bh = blockIdx.x;
  const float* part = scratch + bh * splits * (d + 2);
  float top = -INFINITY;
  for (int s = 0; s < splits; ++s) top = fmaxf(top, part[s * (d + 2) + d]);
  float total = 0;
  for (int s = 0; s < splits; ++s)
    total += part[s * (d + 2) + d + 1] * __expf(part[s * (d + 2) + d] - top);
  for (int e = threadIdx.x; e < d; e += blockDim.x) {
    float acc = 0;
    for (int s = 0; s < splits; ++s)
      acc += part[s * (d + 2) + e] * __expf(part[s * (d + 2) + d] - top);
    out[bh * d + e] = acc / total;
  }
}

}  // namespace

cudaError_t gqa_decode(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                       float* scratch, const gqa_decode_params& p, cudaStream_t stream) {
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0 || p.q_heads / p.kv_heads > kGqaMaxGroup ||
      p.split_tokens <= 0 || p.length <= 0)
    return cudaErrorInvalidValue;
  dim3 grid(gqa_splits(p), p.kv_heads, p.batch);
  const int threads = config::kGqaWarps * 32;
  switch (p.head_dim) {
    case 64:
      gqa_split_kernel<64><<<grid, threads, 0, stream>>>(q, k, v, scratch, p);
      break;
    case 128:
      gqa_split_kernel<128><<<grid, threads, 0, stream>>>(q, k, v, scratch, p);
      break;
    case 256:
      gqa_split_kernel<256><<<grid, threads, 0, stream>>>(q, k, v, scratch, p);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  gqa_combine_kernel<<<p.batch * p.q_heads, config::kGqaCombineThreads, 0, stream>>>(
      scratch, out, gqa_splits(p), p.head_dim);
  return cudaGetLastError();
}

}  // namespace calc::kernels
