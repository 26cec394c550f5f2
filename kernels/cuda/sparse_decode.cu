// SWA / CSA sparse gather decode: each query reads its window records and the selected
// compressed entries, one shared record per entry serving as key and value. A block serves all
// heads of a request (up to kSparseHeadsPerBlock; more heads take more blocks) over one split
// of its records: per tile of blocking::kSparseTile records, the block gathers the records into
// shared memory with 16-byte loads (consecutive threads read consecutive 16 bytes of a record,
// so each gathered record is one coalesced run), then each warp scores the tile for its heads
// (a lane holds width / 32 of the query and output; shuffle reductions) and merges the tile
// into a running (max, sum, output). Each record is read from memory once per request and head
// block; a combine kernel merges the splits. Twin: sparse_decode_blocked.
#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using blocking::kSparseTile;
constexpr int kWarps = config::kSparseWarps;
constexpr int kHeadsPerWarp = config::kSparseHeadsPerWarp;

__device__ inline const unsigned short* record(const unsigned short* window,
                                               const unsigned short* entries, const int* selected,
                                               const sparse_decode_params& p, int b, int j) {
  if (j < p.window) return window + ((long)b * p.window + j) * p.width;
  int e = selected[(long)b * p.selected + (j - p.window)];
  return entries + ((long)b * p.n_entries + e) * p.width;
}

/// Grid (splits, head blocks, batch). W: the record width (64, 128, 256 or 512).
template <int W>
__global__ void __launch_bounds__(kWarps * 32)
    sparse_split_kernel(const unsigned short* __restrict__ q,
                        const unsigned short* __restrict__ window,
                        const unsigned short* __restrict__ entries,
                        const int* __restrict__ selected, float* __restrict__ scratch,
                        sparse_decode_params p, int per_split) {
  constexpr int E = W / 32;       // query and output values per lane
  constexpr int kChunks = W / 8;  // 16-byte chunks per record
  // Dynamic shared memory: the block's queries [heads per block][W], then the tile [32][W].
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short(*qs)[W] = reinterpret_cast<unsigned short(*)[W]>(smem);
  unsigned short(*tile)[W] =
      reinterpret_cast<unsigned short(*)[W]>(smem + kWarps * kHeadsPerWarp * W);
  const int s = blockIdx.x, hb = blockIdx.y, b = blockIdx.z, splits = gridDim.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n = p.window + p.selected;
  const int j0 = s * per_split, j1 = min(n, j0 + per_split);
  const float scale = rsqrtf((float)W);
  auto head = [&](int i) { return (hb * kWarps + warp) * kHeadsPerWarp + i; };
  // The queries wait in shared memory, so 4 heads' outputs fit the 128 registers a 512-thread
  // block allows.
  float acc[kHeadsPerWarp][E], m[kHeadsPerWarp], l[kHeadsPerWarp];
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[i][e] = 0;
    const unsigned short* qh = q + ((long)b * p.heads + min(head(i), p.heads - 1)) * W;
#pragma unroll
    for (int e = 0; e < E; ++e) qs[warp * kHeadsPerWarp + i][lane * E + e] = qh[lane * E + e];
  }
  for (int t0 = j0; t0 < j1; t0 += kSparseTile) {
    const int c = min(kSparseTile, j1 - t0);
    // The gather: chunk i of the tile is 16 bytes of record i / kChunks.
    for (int i = threadIdx.x; i < c * kChunks; i += blockDim.x) {
      const int r = i / kChunks, k = i % kChunks;
      const uint4* src =
          reinterpret_cast<const uint4*>(record(window, entries, selected, p, b, t0 + r) + k * 8);
      *reinterpret_cast<uint4*>(&tile[r][k * 8]) = __ldg(src);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
      if (head(i) >= p.heads) break;  // the same for every lane of the warp
      float mine = -INFINITY;         // lane r keeps record r's score
      for (int r = 0; r < c; ++r) {
        float d = 0;
        const unsigned short* qh = qs[warp * kHeadsPerWarp + i];
#pragma unroll
        for (int e = 0; e < E; ++e)
          d += detail::bf(qh[lane * E + e]) * detail::bf(tile[r][lane * E + e]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (lane == r) mine = d * scale;
      }
      float top = mine;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
      const float m_new = fmaxf(m[i], top), keep = __expf(m[i] - m_new);
      const float w = lane < c ? __expf(mine - m_new) : 0.0f;
      float sum = w;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      l[i] = l[i] * keep + sum;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[i][e] *= keep;
      for (int r = 0; r < c; ++r) {
        const float wr = __shfl_sync(0xffffffffu, w, r);
#pragma unroll
        for (int e = 0; e < E; ++e) acc[i][e] += wr * detail::bf(tile[r][lane * E + e]);
      }
      m[i] = m_new;
    }
    __syncthreads();
  }
  // The split's (output, max, sum) per head, as the GQA combine reads them.
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    if (head(i) >= p.heads) break;
    float* part = scratch + (((long)b * p.heads + head(i)) * splits + s) * (W + 2);
#pragma unroll
    for (int e = 0; e < E; ++e) part[lane * E + e] = acc[i][e];
    if (lane == 0) {
      part[W] = m[i];
      part[W + 1] = l[i];
    }
  }
}

/// out[b, h] = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the splits' maximum.
__global__ void sparse_combine_kernel(const float* __restrict__ scratch, float* __restrict__ out,
                                      int splits, int w) {
  const long bh = blockIdx.x;
  const float* part = scratch + bh * splits * (w + 2);
  float top = -INFINITY;
  for (int s = 0; s < splits; ++s) top = fmaxf(top, part[s * (w + 2) + w]);
  float total = 0;
  for (int s = 0; s < splits; ++s)
    if (part[s * (w + 2) + w] != -INFINITY)
      total += part[s * (w + 2) + w + 1] * __expf(part[s * (w + 2) + w] - top);
  for (int e = threadIdx.x; e < w; e += blockDim.x) {
    float acc = 0;
    for (int s = 0; s < splits; ++s)
      if (part[s * (w + 2) + w] != -INFINITY)
        acc += part[s * (w + 2) + e] * __expf(part[s * (w + 2) + w] - top);
    out[bh * w + e] = acc / total;
  }
}

template <int W>
void launch_split(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                  const int* selected, float* scratch, const sparse_decode_params& p,
                  cudaStream_t stream) {
  dim3 grid(sparse_splits(p), sparse_head_blocks(p), p.batch);
  const int bytes = (kWarps * kHeadsPerWarp + kSparseTile) * W * 2;  // 96 KB at width 512
  cudaFuncSetAttribute(sparse_split_kernel<W>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  sparse_split_kernel<W><<<grid, kWarps * 32, bytes, stream>>>(q, window, entries, selected,
                                                               scratch, p, sparse_split_records(p));
}

}  // namespace

cudaError_t sparse_decode(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                          const int* selected, float* out, float* scratch,
                          const sparse_decode_params& p, cudaStream_t stream) {
  if (p.window + p.selected <= 0) return cudaErrorInvalidValue;
  switch (p.width) {
    case 64:
      launch_split<64>(q, window, entries, selected, scratch, p, stream);
      break;
    case 128:
      launch_split<128>(q, window, entries, selected, scratch, p, stream);
      break;
    case 256:
      launch_split<256>(q, window, entries, selected, scratch, p, stream);
      break;
    case 512:
      launch_split<512>(q, window, entries, selected, scratch, p, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  sparse_combine_kernel<<<p.batch * p.heads, config::kThreads, 0, stream>>>(
      scratch, out, sparse_splits(p), p.width);
  return cudaGetLastError();
}

}  // namespace calc::kernels
