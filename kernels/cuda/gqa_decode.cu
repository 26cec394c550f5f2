// GQA decode over a contiguous or paged BF16 KV cache: one block per (request, query head);
// pass 1 scores every cached token, pass 2 softmax-aggregates the values (twin:
// kernels/ref/decode_ref.cpp gqa_decode_ref).
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

using detail::bf;

__device__ inline long token_offset(const gqa_decode_params& p, int b, int g, int t) {
  if (p.page_tokens == 0) return ((long)(b * (long)p.length + t) * p.kv_heads + g) * p.head_dim;
  int page = p.page_table[b * p.pages_per_request + t / p.page_tokens];
  return ((long)((long)page * p.page_tokens + t % p.page_tokens) * p.kv_heads + g) * p.head_dim;
}

__global__ void gqa_scores(const unsigned short* q, const unsigned short* k, float* scratch,
                           gqa_decode_params p) {
  int bh = blockIdx.x, b = bh / p.q_heads, h = bh % p.q_heads, g = h / (p.q_heads / p.kv_heads);
  const unsigned short* qh = q + (long)bh * p.head_dim;
  float scale = rsqrtf((float)p.head_dim);
  for (int t = threadIdx.x; t < p.length; t += blockDim.x) {
    const unsigned short* kt = k + token_offset(p, b, g, t);
    float s = 0;
    for (int e = 0; e < p.head_dim; ++e) s += bf(qh[e]) * bf(kt[e]);
    scratch[(long)bh * p.length + t] = s * scale;
  }
}

__global__ void gqa_aggregate(const unsigned short* v, float* out, float* scratch,
                              gqa_decode_params p) {
  int bh = blockIdx.x, b = bh / p.q_heads, h = bh % p.q_heads, g = h / (p.q_heads / p.kv_heads);
  detail::softmax_aggregate(
      scratch + (long)bh * p.length, p.length, p.head_dim,
      [&](int t, int e) { return bf(v[token_offset(p, b, g, t) + e]); },
      out + (long)bh * p.head_dim);
}

}  // namespace

cudaError_t gqa_decode(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                       float* scratch, const gqa_decode_params& p, cudaStream_t stream) {
  dim3 grid(p.batch * p.q_heads);
  gqa_scores<<<grid, config::kThreads, 0, stream>>>(q, k, scratch, p);
  gqa_aggregate<<<grid, config::kThreads, 0, stream>>>(v, out, scratch, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
