// SWA / CSA sparse gather decode: each query reads its window records and the selected
// compressed entries, one shared record per entry serving as key and value (twin:
// sparse_decode_ref).
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using detail::bf;

__device__ inline const unsigned short* record(const unsigned short* window,
                                               const unsigned short* entries, const int* selected,
                                               const sparse_decode_params& p, int b, int j) {
  if (j < p.window) return window + ((long)b * p.window + j) * p.width;
  int e = selected[(long)b * p.selected + (j - p.window)];
  return entries + ((long)b * p.n_entries + e) * p.width;
}

__global__ void sparse_scores(const unsigned short* q, const unsigned short* window,
                              const unsigned short* entries, const int* selected, float* scratch,
                              sparse_decode_params p) {
  int bh = blockIdx.x, b = bh / p.heads, n = p.window + p.selected;
  const unsigned short* qh = q + (long)bh * p.width;
  float scale = rsqrtf((float)p.width);
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const unsigned short* r = record(window, entries, selected, p, b, j);
    float s = 0;
    for (int e = 0; e < p.width; ++e) s += bf(qh[e]) * bf(r[e]);
    scratch[(long)bh * n + j] = s * scale;
  }
}

__global__ void sparse_aggregate(const unsigned short* window, const unsigned short* entries,
                                 const int* selected, float* out, float* scratch,
                                 sparse_decode_params p) {
  int bh = blockIdx.x, b = bh / p.heads, n = p.window + p.selected;
  detail::softmax_aggregate(
      scratch + (long)bh * n, n, p.width,
      [&](int j, int e) { return bf(record(window, entries, selected, p, b, j)[e]); },
      out + (long)bh * p.width);
}

}  // namespace

cudaError_t sparse_decode(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                          const int* selected, float* out, float* scratch,
                          const sparse_decode_params& p, cudaStream_t stream) {
  dim3 grid(p.batch * p.heads);
  sparse_scores<<<grid, config::kThreads, 0, stream>>>(q, window, entries, selected, scratch, p);
  sparse_aggregate<<<grid, config::kThreads, 0, stream>>>(window, entries, selected, out, scratch,
                                                          p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
