// Grouped GEMM of routed experts at decode-size row counts on tensor cores: cuBLAS grouped
// batched GEMM (BF16 inputs, FP32 accumulation and output), one problem per touched expert
// (its weights [in, out] times its rows of x), problems with equal row counts in one group.
// Each touched expert's weights are read once; experts no row uses are never read. A small
// kernel writes the problems' device pointers from the device offsets, so a launch moves no
// host data. Where the library refuses the grouped form, one GEMM per expert does the same
// work. Twin: moe_gemm_blocked.
#include <cublas_v2.h>

#include <vector>

#include "config.h"
#include "launchers.h"

namespace calc::kernels {

namespace {

/// ptrs[i], ptrs[n + i], ptrs[2n + i]: the weights, input rows and output rows of the i-th
/// touched expert (n touched experts, in expert order).
__global__ void moe_pointers(const unsigned short* x, const unsigned short* w, float* y,
                             moe_gemm_params p, int touched, const void** ptrs) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int i = 0;
  for (int e = 0; e < p.experts && i < touched; ++e) {
    const int r0 = p.offsets[e], r1 = p.offsets[e + 1];
    if (r1 <= r0) continue;
    ptrs[i] = w + (long)e * p.in * p.out;
    ptrs[touched + i] = x + (long)r0 * p.in;
    ptrs[2 * touched + i] = y + (long)r0 * p.out;
    ++i;
  }
}

cudaError_t blas_error(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace

cudaError_t moe_gemm(const bf16_bits* x, const bf16_bits* w, float* y, const int* host_offsets,
                     const moe_gemm_params& p, const void** ptrs, cublasHandle_t blas,
                     cudaStream_t stream) {
  if (p.experts <= 0 || p.in <= 0 || p.out <= 0) return cudaErrorInvalidValue;
  // The groups: runs of touched experts with equal row counts, in expert order.
  std::vector<int> rows_of_group, size_of_group;
  int touched = 0;
  for (int e = 0; e < p.experts; ++e) {
    const int n = host_offsets[e + 1] - host_offsets[e];
    if (n < 0) return cudaErrorInvalidValue;
    if (n == 0) continue;
    ++touched;
    if (!rows_of_group.empty() && rows_of_group.back() == n)
      ++size_of_group.back();
    else
      rows_of_group.push_back(n), size_of_group.push_back(1);
  }
  if (touched == 0) return cudaSuccess;
  if (cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  moe_pointers<<<1, 32, 0, stream>>>(x, w, y, p, touched, ptrs);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // Column-major view: C_i [out, rows] = W_e [out, in] (ld out) x X_i [in, rows] (ld in).
  const int groups = static_cast<int>(rows_of_group.size());
  std::vector<cublasOperation_t> op(groups, CUBLAS_OP_N);
  std::vector<int> m(groups, p.out), k(groups, p.in), lda(groups, p.out), ldb(groups, p.in),
      ldc(groups, p.out);
  std::vector<float> alpha(groups, 1.0f), beta(groups, 0.0f);
  cublasStatus_t st = cublasGemmGroupedBatchedEx(
      blas, op.data(), op.data(), m.data(), rows_of_group.data(), k.data(), alpha.data(), ptrs,
      CUDA_R_16BF, lda.data(), ptrs + touched, CUDA_R_16BF, ldb.data(), beta.data(),
      const_cast<void* const*>(reinterpret_cast<const void* const*>(ptrs + 2 * touched)),
      CUDA_R_32F, ldc.data(), groups, size_of_group.data(), CUBLAS_COMPUTE_32F);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) {  // one GEMM per touched expert instead
    const float one = 1, zero = 0;
    for (int e = 0; e < p.experts; ++e) {
      const int r0 = host_offsets[e], n = host_offsets[e + 1] - r0;
      if (n == 0) continue;
      st = cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, p.out, n, p.in, &one,
                        w + (long)e * p.in * p.out, CUDA_R_16BF, p.out, x + (long)r0 * p.in,
                        CUDA_R_16BF, p.in, &zero, y + (long)r0 * p.out, CUDA_R_32F, p.out,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (st != CUBLAS_STATUS_SUCCESS) break;
    }
  }
  if (cudaError_t e = blas_error(st); e != cudaSuccess) return e;
  return cudaGetLastError();
}

}  // namespace calc::kernels
