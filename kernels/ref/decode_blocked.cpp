#include "decode_blocked.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "decode_ref.h"

namespace calc::kernels {

namespace {

long as_long(int v) { return static_cast<long>(v); }

/// Running (max, sum, unnormalised output) of a one-pass softmax over some records.
struct online_softmax {
  float m = -INFINITY;
  float l = 0;
  std::vector<float> acc;
  explicit online_softmax(int width) : acc(static_cast<std::size_t>(width), 0.0f) {}
  /// Adds one record of score s with value row `value(e)`.
  template <typename Value>
  void add(float s, Value value) {
    float m_new = std::max(m, s);
    float c = std::exp(m - m_new);  // 0 while m is -inf
    float w = std::exp(s - m_new);
    l = l * c + w;
    for (std::size_t e = 0; e < acc.size(); ++e)
      acc[e] = acc[e] * c + w * value(static_cast<int>(e));
    m = m_new;
  }
};

}  // namespace

void gqa_decode_blocked(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v, float* out,
                        const gqa_decode_params& p) {
  const int dh = p.head_dim, group = p.q_heads / p.kv_heads, splits = gqa_splits(p);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.q_heads; ++h) {
      const int g = h / group;
      auto at = [&](int t) -> long {  // element offset of token t's head g
        if (p.page_tokens == 0) return ((as_long(b) * p.length + t) * p.kv_heads + g) * dh;
        int page = p.page_table[b * p.pages_per_request + t / p.page_tokens];
        return ((as_long(page) * p.page_tokens + t % p.page_tokens) * p.kv_heads + g) * dh;
      };
      const bf16_bits* qh = q + (as_long(b) * p.q_heads + h) * dh;
      std::vector<online_softmax> parts;
      for (int s = 0; s < splits; ++s) {  // one block per (split, KV head, request)
        online_softmax part(dh);
        for (int t = s * p.split_tokens; t < std::min(p.length, (s + 1) * p.split_tokens); ++t) {
          float dot = 0;
          for (int e = 0; e < dh; ++e) dot += bf16_to_float(qh[e]) * bf16_to_float(k[at(t) + e]);
          part.add(dot * scale, [&](int e) { return bf16_to_float(v[at(t) + e]); });
        }
        parts.push_back(part);
      }
      // The combine step: rescale each split to the global max.
      float top = -INFINITY;
      for (const online_softmax& s : parts) top = std::max(top, s.m);
      float total = 0;
      for (const online_softmax& s : parts) total += s.l * std::exp(s.m - top);
      float* o = out + (as_long(b) * p.q_heads + h) * dh;
      for (int e = 0; e < dh; ++e) {
        float acc = 0;
        for (const online_softmax& s : parts)
          acc += s.acc[static_cast<std::size_t>(e)] * std::exp(s.m - top);
        o[e] = acc / total;
      }
    }
}

void mla_decode_blocked(const bf16_bits* q, const bf16_bits* cache, float* out,
                        const mla_decode_params& p) {
  const int w = p.rank + p.rope;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w));
  std::vector<float> s(static_cast<std::size_t>(p.length));
  for (int b = 0; b < p.batch; ++b) {
    const bf16_bits* c = cache + as_long(b) * p.length * w;
    for (int h = 0; h < p.heads; ++h) {
      const bf16_bits* qh = q + (as_long(b) * p.heads + h) * w;
      // GEMM 1: scores over the whole [latent, rope] record.
      float top = -INFINITY;
      for (int t = 0; t < p.length; ++t) {
        float dot = 0;
        for (int e = 0; e < w; ++e)
          dot += bf16_to_float(qh[e]) * bf16_to_float(c[as_long(t) * w + e]);
        s[static_cast<std::size_t>(t)] = dot * scale;
        top = std::max(top, dot * scale);
      }
      // Softmax, normalised, rounded to BF16: the second GEMM's input format.
      float total = 0;
      for (float& x : s) total += (x = std::exp(x - top));
      for (float& x : s) x = bf16_to_float(float_to_bf16(x / total));
      // GEMM 2: the weighted latent.
      float* o = out + (as_long(b) * p.heads + h) * p.rank;
      for (int r = 0; r < p.rank; ++r) {
        float acc = 0;
        for (int t = 0; t < p.length; ++t)
          acc += s[static_cast<std::size_t>(t)] * bf16_to_float(c[as_long(t) * w + r]);
        o[r] = acc;
      }
    }
  }
}

void delta_step_blocked(const float* q, const float* k, const float* v, const float* log_decay,
                        const float* beta, float* state, float* out, const delta_step_params& p) {
  const int rows = delta_rows_per_warp(p.dk);
  for (int bh = 0; bh < p.batch * p.heads; ++bh) {
    float* S = state + as_long(bh) * p.dk * p.dv;
    const float* kk = k + as_long(bh) * p.dk;
    const float* qq = q + as_long(bh) * p.dk;
    const float* ld = log_decay + as_long(bh) * p.dk;
    for (int j = 0; j < p.dv; ++j) {  // a lane's column; its key rows split over the warps
      float pred_part[blocking::kDeltaWarps] = {}, out_part[blocking::kDeltaWarps] = {};
      float held[blocking::kDeltaWarps][blocking::kDeltaMaxRows];  // the state in registers
      for (int wp = 0; wp < blocking::kDeltaWarps; ++wp)
        for (int r = 0; r < rows; ++r) {
          int i = wp * rows + r;
          if (i >= p.dk) break;
          held[wp][r] = S[as_long(i) * p.dv + j] * std::exp(ld[i]);
          pred_part[wp] += held[wp][r] * kk[i];
        }
      float pred = 0;
      for (float x : pred_part) pred += x;
      float delta = beta[bh] * (v[as_long(bh) * p.dv + j] - pred);
      for (int wp = 0; wp < blocking::kDeltaWarps; ++wp)
        for (int r = 0; r < rows; ++r) {
          int i = wp * rows + r;
          if (i >= p.dk) break;
          float s = held[wp][r] + kk[i] * delta;
          S[as_long(i) * p.dv + j] = s;
          out_part[wp] += s * qq[i];
        }
      float o = 0;
      for (float x : out_part) o += x;
      out[as_long(bh) * p.dv + j] = o;
    }
  }
}

void moe_gemm_blocked(const bf16_bits* x, const bf16_bits* w, float* y, const moe_gemm_params& p) {
  const int slice = moe_slice(p.in);
  for (int e = 0; e < p.experts; ++e)
    for (int r = p.offsets[e]; r < p.offsets[e + 1]; ++r)
      for (int o = 0; o < p.out; ++o) {
        float part[blocking::kMoeSlices] = {};
        for (int sl = 0; sl < blocking::kMoeSlices; ++sl)
          for (int i = sl * slice; i < std::min(p.in, (sl + 1) * slice); ++i)
            part[sl] += bf16_to_float(x[as_long(r) * p.in + i]) *
                        bf16_to_float(w[(as_long(e) * p.in + i) * p.out + o]);
        float acc = 0;
        for (float s : part) acc += s;
        y[as_long(r) * p.out + o] = acc;
      }
}

// Byte counts: each term names the loads or stores it counts.
kernel_bytes gqa_decode_bytes(const gqa_decode_params& p) {
  kernel_bytes b;
  double tokens = double(p.batch) * p.length;
  b.state_read = 2.0 * tokens * p.kv_heads * p.head_dim * 2;  // K and V rows, BF16, read once
  b.other = double(p.batch) * p.q_heads * p.head_dim * (2 + 4);  // q in, out (float)
  if (p.page_tokens > 0) b.other += 4.0 * p.batch * p.pages_per_request;  // page table
  return b;
}

kernel_bytes mla_decode_bytes(const mla_decode_params& p) {
  kernel_bytes b;
  b.state_read = double(p.batch) * p.length * (p.rank + p.rope) * 2;  // latent + rope records
  b.other = double(p.batch) * p.heads * ((p.rank + p.rope) * 2.0 + p.rank * 4.0);
  return b;
}

kernel_bytes delta_step_bytes(const delta_step_params& p) {
  kernel_bytes b;
  double n = double(p.batch) * p.heads;
  b.state_read = n * p.dk * p.dv * 4;   // FP32 state read once ...
  b.state_write = n * p.dk * p.dv * 4;  // ... and written once
  b.other = n * (3.0 * p.dk + 2.0 * p.dv + 1) * 4;  // q, k, decay, v, out, beta
  return b;
}

kernel_bytes sparse_decode_bytes(const sparse_decode_params& p) {
  kernel_bytes b;
  b.state_read = double(p.batch) * (p.window + p.selected) * p.width * 2;  // records read
  b.other = double(p.batch) * (p.heads * p.width * (2.0 + 4.0) + 4.0 * p.selected);
  return b;
}

kernel_bytes moe_gemm_bytes(const moe_gemm_params& p, int rows) {
  kernel_bytes b;
  int touched = 0;
  for (int e = 0; e < p.experts; ++e) touched += p.offsets[e + 1] > p.offsets[e] ? 1 : 0;
  b.weights = double(touched) * p.in * p.out * 2;  // each touched expert's BF16 weights once
  b.other = double(rows) * (p.in * 2.0 + p.out * 4.0) + 4.0 * (p.experts + 1);
  return b;
}

}  // namespace calc::kernels
