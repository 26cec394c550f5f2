#include "decode_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ref.h"

namespace calc::kernels {

float bf16_to_float(bf16_bits b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bf16_bits float_to_bf16(float f) {
  float r = ref::bf16_round(f);
  std::uint32_t bits;
  std::memcpy(&bits, &r, sizeof bits);
  return static_cast<bf16_bits>(bits >> 16);
}

namespace {

/// Softmax attention of one query row over n records given by accessors; `energy` (optional):
/// sum_j (w_j value_j)^2 per output element, w the normalised weights.
template <typename Score, typename Value>
void attend(int n, int width, Score score, Value value, float* out, float* energy) {
  std::vector<float> s(static_cast<std::size_t>(n));
  float top = -INFINITY;
  for (int j = 0; j < n; ++j) top = std::max(top, s[static_cast<std::size_t>(j)] = score(j));
  float total = 0;
  for (float& x : s) total += (x = std::exp(x - top));
  for (int e = 0; e < width; ++e) {
    float acc = 0;
    for (int j = 0; j < n; ++j) acc += s[static_cast<std::size_t>(j)] * value(j, e);
    out[e] = acc / total;
    if (energy) {
      double sq = 0;
      for (int j = 0; j < n; ++j) {
        double t = double(s[static_cast<std::size_t>(j)]) / total * value(j, e);
        sq += t * t;
      }
      energy[e] = static_cast<float>(sq);
    }
  }
}

}  // namespace

void gqa_decode_ref(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                    const gqa_decode_params& p, float* energy) {
  const int dh = p.head_dim, group = p.q_heads / p.kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.q_heads; ++h) {
      int g = h / group;
      auto at = [&](int t) -> long {  // element offset of token t's head g
        if (p.page_tokens == 0)
          return ((static_cast<long>(b) * p.length + t) * p.kv_heads + g) * dh;
        int page = p.page_table[b * p.pages_per_request + t / p.page_tokens];
        return ((static_cast<long>(page) * p.page_tokens + t % p.page_tokens) * p.kv_heads + g) *
               dh;
      };
      const bf16_bits* qh = q + (static_cast<long>(b) * p.q_heads + h) * dh;
      attend(
          p.length, dh,
          [&](int t) {
            float s = 0;
            for (int e = 0; e < dh; ++e) s += bf16_to_float(qh[e]) * bf16_to_float(k[at(t) + e]);
            return s * scale;
          },
          [&](int t, int e) { return bf16_to_float(v[at(t) + e]); },
          out + (static_cast<long>(b) * p.q_heads + h) * dh,
          energy ? energy + (static_cast<long>(b) * p.q_heads + h) * dh : nullptr);
    }
}

void mla_decode_ref(const bf16_bits* q, const bf16_bits* cache, float* out,
                    const mla_decode_params& p, float* energy) {
  const int w = p.rank + p.rope;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) {
      const bf16_bits* qh = q + (static_cast<long>(b) * p.heads + h) * w;
      const bf16_bits* c = cache + static_cast<long>(b) * p.length * w;
      attend(
          p.length, p.rank,
          [&](int t) {
            float s = 0;
            for (int e = 0; e < w; ++e)
              s += bf16_to_float(qh[e]) * bf16_to_float(c[static_cast<long>(t) * w + e]);
            return s * scale;
          },
          [&](int t, int e) { return bf16_to_float(c[static_cast<long>(t) * w + e]); },
          out + (static_cast<long>(b) * p.heads + h) * p.rank,
          energy ? energy + (static_cast<long>(b) * p.heads + h) * p.rank : nullptr);
    }
}

void delta_step_ref(const float* q, const float* k, const float* v, const float* log_decay,
                    const float* beta, float* state, float* out, const delta_step_params& p,
                    float* energy, float* state_energy) {
  for (int bh = 0; bh < p.batch * p.heads; ++bh) {
    float* S = state + static_cast<long>(bh) * p.dk * p.dv;
    const float* kk = k + static_cast<long>(bh) * p.dk;
    const float* qq = q + static_cast<long>(bh) * p.dk;
    const float* ld = log_decay + static_cast<long>(bh) * p.dk;
    for (int j = 0; j < p.dv; ++j) {
      // S' = diag(e^g) S; delta = beta (v - S'^T k); S = S' + k delta; o = S^T q (per column j)
      float pred = 0;
      for (int i = 0; i < p.dk; ++i) {
        S[i * p.dv + j] *= std::exp(ld[i]);
        pred += S[i * p.dv + j] * kk[i];
      }
      float delta = beta[bh] * (v[static_cast<long>(bh) * p.dv + j] - pred);
      float o = 0;
      double sq = 0;
      for (int i = 0; i < p.dk; ++i) {
        const long at = static_cast<long>(bh) * p.dk * p.dv + i * p.dv + j;
        double carried = 0;  // the energy the state already carries, decayed with it
        if (state_energy) {
          // The state is a running sum: its energy is the decayed energy it carried plus the
          // two terms of this step (the decayed state and the update).
          const double a = S[i * p.dv + j], u = double(kk[i]) * delta, d = std::exp(2.0 * ld[i]);
          carried = d * state_energy[at] + a * a + u * u;
          state_energy[at] = static_cast<float>(carried);
        }
        S[i * p.dv + j] += kk[i] * delta;
        o += S[i * p.dv + j] * qq[i];
        const double t = double(S[i * p.dv + j]) * qq[i];
        sq += t * t + carried * double(qq[i]) * qq[i];
      }
      out[static_cast<long>(bh) * p.dv + j] = o;
      if (energy) energy[static_cast<long>(bh) * p.dv + j] = static_cast<float>(sq);
    }
  }
}

void delta_chunk_ref(const float* q, const float* k, const float* v, const float* log_decay,
                     const float* beta, float* state, float* out, const delta_chunk_params& p,
                     float* energy, float* state_energy) {
  // The twin of the chunked kernel is the recurrence itself: chunking must not change results.
  for (int h = 0; h < p.heads; ++h)
    for (int t = 0; t < p.tokens; ++t) {
      delta_step_params sp{1, 1, p.dk, p.dv};
      long qk = (static_cast<long>(h) * p.tokens + t) * p.dk,
           vo = (static_cast<long>(h) * p.tokens + t) * p.dv;
      delta_step_ref(
          q + qk, k + qk, v + vo, log_decay + qk, beta + static_cast<long>(h) * p.tokens + t,
          state + static_cast<long>(h) * p.dk * p.dv, out + vo, sp, energy ? energy + vo : nullptr,
          state_energy ? state_energy + static_cast<long>(h) * p.dk * p.dv : nullptr);
    }
}

void sparse_decode_ref(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                       const int* selected, float* out, const sparse_decode_params& p,
                       float* energy) {
  const int w = p.width;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) {
      const bf16_bits* qh = q + (static_cast<long>(b) * p.heads + h) * w;
      auto record = [&](int j) -> const bf16_bits* {
        if (j < p.window) return window + (static_cast<long>(b) * p.window + j) * w;
        int e = selected[static_cast<long>(b) * p.selected + (j - p.window)];
        return entries + (static_cast<long>(b) * p.n_entries + e) * w;
      };
      attend(
          p.window + p.selected, w,
          [&](int j) {
            float s = 0;
            for (int e = 0; e < w; ++e) s += bf16_to_float(qh[e]) * bf16_to_float(record(j)[e]);
            return s * scale;
          },
          [&](int j, int e) { return bf16_to_float(record(j)[e]); },
          out + (static_cast<long>(b) * p.heads + h) * w,
          energy ? energy + (static_cast<long>(b) * p.heads + h) * w : nullptr);
    }
}

void moe_gemm_ref(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p,
                  float* energy) {
  for (int e = 0; e < p.experts; ++e)
    for (int r = p.offsets[e]; r < p.offsets[e + 1]; ++r)
      for (int o = 0; o < p.out; ++o) {
        float acc = 0;
        double sq = 0;
        for (int i = 0; i < p.in; ++i) {
          float t = bf16_to_float(x[static_cast<long>(r) * p.in + i]) *
                    bf16_to_float(w[(static_cast<long>(e) * p.in + i) * p.out + o]);
          acc += t;
          sq += double(t) * t;
        }
        y[static_cast<long>(r) * p.out + o] = acc;
        if (energy) energy[static_cast<long>(r) * p.out + o] = static_cast<float>(sq);
      }
}

}  // namespace calc::kernels
