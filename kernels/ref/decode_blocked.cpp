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
  const int w = p.rank + p.rope, tile = blocking::kSparseTile, per_split = mla_split_records(p);
  const float scale = 1.0f / std::sqrt(static_cast<float>(w));
  for (int b = 0; b < p.batch; ++b) {
    const bf16_bits* c = cache + as_long(b) * p.length * w;
    for (int h = 0; h < p.heads; ++h) {
      const bf16_bits* qh = q + (as_long(b) * p.heads + h) * w;
      std::vector<online_softmax> parts;
      for (int j0 = 0; j0 < p.length; j0 += per_split) {  // one block per split
        online_softmax run(p.rank);
        for (int start = j0; start < std::min(p.length, j0 + per_split); start += tile) {
          const int n = std::min({tile, p.length - start, j0 + per_split - start});
          float s[blocking::kSparseTile], top = run.m;
          for (int r = 0; r < n; ++r) {  // scores over the whole [latent, rope] record
            float dot = 0;
            for (int e = 0; e < w; ++e)
              dot += bf16_to_float(qh[e]) * bf16_to_float(c[as_long(start + r) * w + e]);
            s[r] = dot * scale;
            top = std::max(top, s[r]);
          }
          const float keep = std::exp(run.m - top);  // the tile merged in one rescale
          run.l *= keep;
          for (float& a : run.acc) a *= keep;
          for (int r = 0; r < n; ++r) {
            const float wt = std::exp(s[r] - top);
            run.l += wt;
            for (int e = 0; e < p.rank; ++e)
              run.acc[static_cast<std::size_t>(e)] +=
                  wt * bf16_to_float(c[as_long(start + r) * w + e]);
          }
          run.m = top;
        }
        parts.push_back(run);
      }
      float top = -INFINITY, total = 0;  // the combine over the splits
      for (const online_softmax& x : parts) top = std::max(top, x.m);
      for (const online_softmax& x : parts) total += x.l * std::exp(x.m - top);
      float* o = out + (as_long(b) * p.heads + h) * p.rank;
      for (int e = 0; e < p.rank; ++e) {
        float acc = 0;
        for (const online_softmax& x : parts)
          acc += x.acc[static_cast<std::size_t>(e)] * std::exp(x.m - top);
        o[e] = acc / total;
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

void delta_chunk_blocked(const float* q, const float* k, const float* v, const float* log_decay,
                         const float* beta, float* state, float* out, const delta_chunk_params& p) {
  const int C = p.chunk, dk = p.dk, dv = p.dv, T = p.tokens;
  std::vector<float> A(static_cast<std::size_t>(C) * C), B(A.size()),
      G(static_cast<std::size_t>(C) * dk), W(G.size()), U(static_cast<std::size_t>(C) * dv);
  auto at = [](std::vector<float>& m, long i) -> float& { return m[static_cast<std::size_t>(i)]; };
  for (int h = 0; h < p.heads; ++h) {
    float* S = state + as_long(h) * dk * dv;
    const float* qh = q + as_long(h) * T * dk;
    const float* kh = k + as_long(h) * T * dk;
    const float* vh = v + as_long(h) * T * dv;
    const float* lh = log_decay + as_long(h) * T * dk;
    const float* bh = beta + as_long(h) * T;
    float* oh = out + as_long(h) * T * dv;
    for (int start = 0; start < T; start += C) {
      const int c = std::min(C, T - start);
      for (int e = 0; e < dk; ++e) {  // cumulative log decays within the chunk
        float acc = 0;
        for (int i = 0; i < c; ++i) at(G, i * dk + e) = acc += lh[as_long(start + i) * dk + e];
      }
      // A_ij = k_j . e^(G_i - G_j) k_i (j < i); B_ij = k_j . e^(G_i - G_j) q_i (j <= i).
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < c; ++j) {
          float a = 0, b = 0;
          if (j <= i)
            for (int e = 0; e < dk; ++e) {
              float w =
                  std::exp(at(G, i * dk + e) - at(G, j * dk + e)) * kh[as_long(start + j) * dk + e];
              a += w * kh[as_long(start + i) * dk + e];
              b += w * qh[as_long(start + i) * dk + e];
            }
          at(A, i * C + j) = j < i ? a : 0.0f;
          at(B, i * C + j) = j <= i ? b : 0.0f;
        }
      // Forward substitution: (I + diag(beta) A) [W | U0] = diag(beta) [e^G k | v].
      for (int i = 0; i < c; ++i) {
        const float bi = bh[start + i];
        for (int col = 0; col < dk + dv; ++col) {
          float x = col < dk
                        ? bi * std::exp(at(G, i * dk + col)) * kh[as_long(start + i) * dk + col]
                        : bi * vh[as_long(start + i) * dv + (col - dk)];
          for (int j = 0; j < i; ++j)
            x -=
                bi * at(A, i * C + j) * (col < dk ? at(W, j * dk + col) : at(U, j * dv + col - dk));
          (col < dk ? at(W, i * dk + col) : at(U, i * dv + col - dk)) = x;
        }
      }
      for (int i = 0; i < c; ++i)  // U = U0 - W S
        for (int j = 0; j < dv; ++j) {
          float ws = 0;
          for (int e = 0; e < dk; ++e) ws += at(W, i * dk + e) * S[e * dv + j];
          at(U, i * dv + j) -= ws;
        }
      for (int i = 0; i < c; ++i)  // out_i = (e^G_i q_i) S + sum_{r <= i} B_ir U_r
        for (int j = 0; j < dv; ++j) {
          float o = 0;
          for (int e = 0; e < dk; ++e)
            o += std::exp(at(G, i * dk + e)) * qh[as_long(start + i) * dk + e] * S[e * dv + j];
          for (int r = 0; r <= i; ++r) o += at(B, i * C + r) * at(U, r * dv + j);
          oh[as_long(start + i) * dv + j] = o;
        }
      // S = diag(e^G_last) S + sum_i (e^(G_last - G_i) k_i) U_i^T
      for (int e = 0; e < dk; ++e)
        for (int j = 0; j < dv; ++j) {
          const float last = at(G, (c - 1) * dk + e);
          float s = std::exp(last) * S[e * dv + j];
          for (int i = 0; i < c; ++i)
            s += std::exp(last - at(G, i * dk + e)) * kh[as_long(start + i) * dk + e] *
                 at(U, i * dv + j);
          S[e * dv + j] = s;
        }
    }
  }
}

void sparse_decode_blocked(const bf16_bits* q, const bf16_bits* window, const bf16_bits* entries,
                           const int* selected, float* out, const sparse_decode_params& p) {
  const int w = p.width, n = p.window + p.selected, tile = blocking::kSparseTile;
  const int per_split = sparse_split_records(p);
  const float scale = 1.0f / std::sqrt(static_cast<float>(w));
  std::vector<float> rec(static_cast<std::size_t>(tile) * w);
  for (int b = 0; b < p.batch; ++b) {
    // parts[h][s]: head h's running (max, sum, output) over split s.
    std::vector<std::vector<online_softmax>> parts(static_cast<std::size_t>(p.heads));
    for (int j0 = 0; j0 < n; j0 += per_split) {  // one block per (split, request)
      std::vector<online_softmax> heads(static_cast<std::size_t>(p.heads), online_softmax(w));
      for (int start = j0; start < std::min(n, j0 + per_split); start += tile) {
        const int c = std::min({tile, n - start, j0 + per_split - start});
        for (int r = 0; r < c; ++r) {  // the gather: 16-byte loads of each record
          const int j = start + r;
          const bf16_bits* src =
              j < p.window ? window + (as_long(b) * p.window + j) * w
                           : entries + (as_long(b) * p.n_entries +
                                        selected[as_long(b) * p.selected + (j - p.window)]) *
                                           w;
          for (int e = 0; e < w; ++e)
            rec[static_cast<std::size_t>(r * w + e)] = bf16_to_float(src[e]);
        }
        for (int h = 0; h < p.heads; ++h) {
          const bf16_bits* qh = q + (as_long(b) * p.heads + h) * w;
          online_softmax& run = heads[static_cast<std::size_t>(h)];
          float s[blocking::kSparseTile], top = run.m;
          for (int r = 0; r < c; ++r) {
            float dot = 0;
            for (int e = 0; e < w; ++e)
              dot += bf16_to_float(qh[e]) * rec[static_cast<std::size_t>(r * w + e)];
            s[r] = dot * scale;
            top = std::max(top, s[r]);
          }
          // Merge the tile: rescale the running sums once to the new max, then add the tile.
          const float keep = std::exp(run.m - top);
          run.l *= keep;
          for (float& a : run.acc) a *= keep;
          for (int r = 0; r < c; ++r) {
            const float wt = std::exp(s[r] - top);
            run.l += wt;
            for (int e = 0; e < w; ++e)
              run.acc[static_cast<std::size_t>(e)] += wt * rec[static_cast<std::size_t>(r * w + e)];
          }
          run.m = top;
        }
      }
      for (int h = 0; h < p.heads; ++h)
        parts[static_cast<std::size_t>(h)].push_back(heads[static_cast<std::size_t>(h)]);
    }
    for (int h = 0; h < p.heads; ++h) {  // the combine over the splits
      const std::vector<online_softmax>& hp = parts[static_cast<std::size_t>(h)];
      float top = -INFINITY, total = 0;
      for (const online_softmax& x : hp) top = std::max(top, x.m);
      for (const online_softmax& x : hp) total += x.l * std::exp(x.m - top);
      float* o = out + (as_long(b) * p.heads + h) * w;
      for (int e = 0; e < w; ++e) {
        float acc = 0;
        for (const online_softmax& x : hp)
          acc += x.acc[static_cast<std::size_t>(e)] * std::exp(x.m - top);
        o[e] = acc / total;
      }
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

// Traffic: one entry per load or store stream of the kernel (kernels/cuda), each named.
std::vector<traffic> gqa_decode_traffic(const gqa_decode_params& p) {
  const long rows = as_long(p.batch) * p.length * p.kv_heads * p.head_dim;
  const long q = as_long(p.batch) * p.q_heads * p.head_dim;
  const long parts = as_long(p.batch) * p.q_heads * gqa_splits(p) * (p.head_dim + 2);
  std::vector<traffic> t = {{"K rows, read once per KV head", rows, "bf16", 1, "state"},
                            {"V rows, read once per KV head", rows, "bf16", 1, "state"},
                            {"queries", q, "bf16", 1, "activation"},
                            {"outputs", q, "fp32", 1, "activation"}};
  // Every split's (max, sum, output) is written, then read by the combine kernel.
  t.push_back({"split partials, written and read", parts, "fp32", 2, "scratch"});
  if (p.page_tokens > 0)
    t.push_back({"page table", as_long(p.batch) * p.pages_per_request, "int32", 1, "activation"});
  return t;
}

std::vector<traffic> mla_decode_traffic(const mla_decode_params& p) {
  // A block per (split, head block, request) copies each of its records once into shared
  // memory for up to 64 heads; the splits' partials make an FP32 round trip to the combine.
  const long records = as_long(p.batch) * p.length * (p.rank + p.rope);
  const long parts = as_long(p.batch) * p.heads * mla_splits(p) * (p.rank + 2);
  return {{"latent + rope records, read once per head block", records, "bf16", mla_head_blocks(p),
           "state"},
          {"queries", as_long(p.batch) * p.heads * (p.rank + p.rope), "bf16", 1, "activation"},
          {"outputs", as_long(p.batch) * p.heads * p.rank, "fp32", 1, "activation"},
          {"split partials, written and read", parts, "fp32", 2, "scratch"}};
}

std::vector<traffic> delta_step_traffic(const delta_step_params& p) {
  const long n = as_long(p.batch) * p.heads, state = n * p.dk * p.dv;
  return {{"recurrent state, read once", state, "fp32", 1, "state"},
          {"recurrent state, written once", state, "fp32", 1, "state"},
          {"q, k, decay", 3 * n * p.dk, "fp32", 1, "activation"},
          {"v, outputs", 2 * n * p.dv, "fp32", 1, "activation"},
          {"beta", n, "fp32", 1, "activation"}};
}

std::vector<traffic> sparse_decode_traffic(const sparse_decode_params& p) {
  // A block per (split, head block, request) gathers each of its records once into shared
  // memory for all its heads; the splits' partials make an FP32 round trip to the combine.
  const long hb = sparse_head_blocks(p), q = as_long(p.batch) * p.heads * p.width;
  const long parts = as_long(p.batch) * p.heads * sparse_splits(p) * (p.width + 2);
  return {{"window records, read once per head block", as_long(p.batch) * p.window * p.width,
           "bf16", hb, "state"},
          {"selected entries, read once per head block", as_long(p.batch) * p.selected * p.width,
           "bf16", hb, "state"},
          {"selected indices", as_long(p.batch) * p.selected, "int32", hb, "activation"},
          {"queries", q, "bf16", 1, "activation"},
          {"outputs", q, "fp32", 1, "activation"},
          {"split partials, written and read", parts, "fp32", 2, "scratch"}};
}

std::vector<traffic> moe_gemm_traffic(const moe_gemm_params& p, int rows) {
  long touched = 0;
  for (int e = 0; e < p.experts; ++e) touched += p.offsets[e + 1] > p.offsets[e] ? 1 : 0;
  return {{"touched experts' weights, read once", touched * p.in * p.out, "bf16", 1, "state"},
          {"input rows", as_long(rows) * p.in, "bf16", 1, "activation"},
          {"output rows", as_long(rows) * p.out, "fp32", 1, "activation"},
          {"expert offsets", p.experts + 1, "int32", 1, "activation"},
          {"GEMM pointers, written and read", 3 * touched, "int64", 2, "scratch"}};
}

}  // namespace calc::kernels
