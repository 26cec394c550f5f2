// KDA / Gated DeltaNet chunked prefill over valid triangles (one block per head, chunks in
// order); its final state is what the decode step (delta_step.cu) continues from. Twin:
// delta_chunk_ref (the plain recurrence).
#include "config.h"
#include "launchers.h"

namespace calc::kernels {

namespace {

/// One head; scratch holds A [C, C], B [C, C], G [C, dk], W [C, dk], U [C, dv].
__global__ void delta_chunk_kernel(const float* q, const float* k, const float* v,
                                   const float* log_decay, const float* beta, float* state,
                                   float* out, float* scratch, delta_chunk_params p) {
  const int h = blockIdx.x, C = p.chunk, dk = p.dk, dv = p.dv, T = p.tokens;
  float* A = scratch + (long)h * C * (2 * C + 2 * dk + dv);
  float* B = A + C * C;
  float* G = B + C * C;
  float* W = G + C * dk;
  float* U = W + C * dk;
  float* S = state + (long)h * dk * dv;
  const float* qh = q + (long)h * T * dk;
  const float* kh = k + (long)h * T * dk;
  const float* vh = v + (long)h * T * dv;
  const float* lh = log_decay + (long)h * T * dk;
  const float* bh = beta + (long)h * T;
  float* oh = out + (long)h * T * dv;
  for (int start = 0; start < T; start += C) {
    const int c = min(C, T - start);
    // Cumulative log decays within the chunk.
    for (int e = threadIdx.x; e < dk; e += blockDim.x) {
      float acc = 0;
      for (int i = 0; i < c; ++i) {
        acc += lh[(long)(start + i) * dk + e];
        G[i * dk + e] = acc;
      }
    }
    __syncthreads();
    // A_ij = k_j . e^(G_i - G_j) k_i (j < i); B_ij = k_j . e^(G_i - G_j) q_i (j <= i).
    for (int idx = threadIdx.x; idx < c * c; idx += blockDim.x) {
      int i = idx / c, j = idx % c;
      float a = 0, b = 0;
      if (j <= i)
        for (int e = 0; e < dk; ++e) {
          float w = __expf(G[i * dk + e] - G[j * dk + e]) * kh[(long)(start + j) * dk + e];
          a += w * kh[(long)(start + i) * dk + e];
          b += w * qh[(long)(start + i) * dk + e];
        }
      A[i * C + j] = j < i ? a : 0.0f;
      B[i * C + j] = j <= i ? b : 0.0f;
    }
    __syncthreads();
    // Forward substitution, row by row: (I + diag(beta) A) [W | U0] = diag(beta) [e^G k | v].
    for (int i = 0; i < c; ++i) {
      float bi = bh[start + i];
      for (int col = threadIdx.x; col < dk + dv; col += blockDim.x) {
        float x = col < dk ? bi * __expf(G[i * dk + col]) * kh[(long)(start + i) * dk + col]
                           : bi * vh[(long)(start + i) * dv + (col - dk)];
        for (int j = 0; j < i; ++j)
          x -= bi * A[i * C + j] * (col < dk ? W[j * dk + col] : U[j * dv + (col - dk)]);
        if (col < dk)
          W[i * dk + col] = x;
        else
          U[i * dv + (col - dk)] = x;
      }
      __syncthreads();
    }
    // U = U0 - W S
    for (int idx = threadIdx.x; idx < c * dv; idx += blockDim.x) {
      int i = idx / dv, j = idx % dv;
      float ws = 0;
      for (int e = 0; e < dk; ++e) ws += W[i * dk + e] * S[e * dv + j];
      U[i * dv + j] -= ws;
    }
    __syncthreads();
    // out_i = (e^G_i q_i) S + sum_{j<=i} B_ij U_j
    for (int idx = threadIdx.x; idx < c * dv; idx += blockDim.x) {
      int i = idx / dv, j = idx % dv;
      float o = 0;
      for (int e = 0; e < dk; ++e)
        o += __expf(G[i * dk + e]) * qh[(long)(start + i) * dk + e] * S[e * dv + j];
      for (int r = 0; r <= i; ++r) o += B[i * C + r] * U[r * dv + j];
      oh[(long)(start + i) * dv + j] = o;
    }
    __syncthreads();
    // S = diag(e^G_last) S + sum_i (e^(G_last - G_i) k_i) U_i^T
    for (int idx = threadIdx.x; idx < dk * dv; idx += blockDim.x) {
      int e = idx / dv, j = idx % dv;
      float s = __expf(G[(c - 1) * dk + e]) * S[idx];
      for (int i = 0; i < c; ++i)
        s += __expf(G[(c - 1) * dk + e] - G[i * dk + e]) * kh[(long)(start + i) * dk + e] *
             U[i * dv + j];
      S[idx] = s;
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t delta_chunk(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, float* scratch,
                        const delta_chunk_params& p, cudaStream_t stream) {
  delta_chunk_kernel<<<p.heads, config::kThreads, 0, stream>>>(q, k, v, log_decay, beta, state, out,
                                                               scratch, p);
  return cudaGetLastError();
}

}  // namespace calc::kernels
