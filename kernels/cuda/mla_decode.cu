// Absorbed MLA decode (the query already in latent space): per request, every head's scores
// against the [latent, rope] records are one GEMM and the weighted latent a second, both BF16
// through cuBLAS with FP32 accumulation, around a softmax that writes BF16 weights. Each GEMM
// reads the request's records once for all heads. Twin: mla_decode_blocked.
#include <cublas_v2.h>

#include "config.h"
#include "launchers.h"
#include "softmax_decode.cuh"

namespace calc::kernels {

namespace {

/// One row of scores -> normalised softmax weights in BF16.
__global__ void mla_softmax(const float* __restrict__ scores, __nv_bfloat16* __restrict__ probs,
                            int n) {
  __shared__ float shared[32];
  const float* s = scores + (long)blockIdx.x * n;
  __nv_bfloat16* pr = probs + (long)blockIdx.x * n;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, s[j]);
  m = detail::block_max(m, shared);
  float total = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) total += __expf(s[j] - m);
  total = detail::block_sum(total, shared);
  for (int j = threadIdx.x; j < n; j += blockDim.x) pr[j] = __float2bfloat16(__expf(s[j] - m) / total);
}

}  // namespace

cudaError_t mla_decode(const bf16_bits* q, const bf16_bits* cache, float* out, float* scratch,
                       const mla_decode_params& p, cublasHandle_t blas, cudaStream_t stream) {
  const int w = p.rank + p.rope, L = p.length, H = p.heads;
  float* scores = scratch;
  auto* probs = reinterpret_cast<__nv_bfloat16*>(scratch + (long)p.batch * H * L);
  if (cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  const float scale = 1.0f / sqrtf((float)w), one = 1, zero = 0;
  // Column-major view: records C_b are [w, L] (ld w), queries Q_b [w, H]; scores S_b [L, H] =
  // C_b^T Q_b, i.e. row-major [H, L].
  cublasStatus_t st = cublasGemmStridedBatchedEx(
      blas, CUBLAS_OP_T, CUBLAS_OP_N, L, H, w, &scale, cache, CUDA_R_16BF, w, (long long)L * w, q,
      CUDA_R_16BF, w, (long long)H * w, &zero, scores, CUDA_R_32F, L, (long long)H * L, p.batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  mla_softmax<<<p.batch * H, config::kThreads, 0, stream>>>(scores, probs, L);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // O_b [rank, H] (row-major [H, rank]) = C_b[:rank, :] P_b, P_b [L, H] (ld L).
  st = cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, p.rank, H, L, &one, cache,
                                  CUDA_R_16BF, w, (long long)L * w, probs, CUDA_R_16BF, L,
                                  (long long)H * L, &zero, out, CUDA_R_32F, p.rank,
                                  (long long)H * p.rank, p.batch, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  return cudaGetLastError();
}

}  // namespace calc::kernels
