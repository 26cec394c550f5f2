#include "ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

namespace calc::ref {

mat gemm(const mat& x, const mat& w, std::int64_t* flops) {
  if (flops) *flops += 2LL * x.rows() * x.cols() * w.cols();
  return x * w;
}

float bf16_round(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf and nan pass through
  std::uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  bits &= 0xffff0000u;
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

void state_buffer::resize(std::size_t n) {
  size_ = n;
  switch (format_) {
    case format::bf16:
      b16_.resize(n, 0);
      break;
    case format::fp32:
      f32_.resize(n, 0.0f);
      break;
    case format::int64:
      i64_.resize(n, 0);
      break;
  }
}

float state_buffer::get(std::size_t i) const {
  switch (format_) {
    case format::bf16: {
      std::uint32_t bits = static_cast<std::uint32_t>(b16_[i]) << 16;
      float r;
      std::memcpy(&r, &bits, sizeof r);
      return r;
    }
    case format::fp32:
      return f32_[i];
    case format::int64:
      return static_cast<float>(i64_[i]);
  }
  return 0;
}

void state_buffer::set(std::size_t i, float v) {
  switch (format_) {
    case format::bf16: {
      float r = bf16_round(v);
      std::uint32_t bits;
      std::memcpy(&bits, &r, sizeof bits);
      b16_[i] = static_cast<std::uint16_t>(bits >> 16);
      break;
    }
    case format::fp32:
      f32_[i] = v;
      break;
    case format::int64:
      i64_[i] = static_cast<std::int64_t>(v);
      break;
  }
}

float state_buffer::stored(float v) const {
  switch (format_) {
    case format::bf16:
      return bf16_round(v);
    case format::fp32:
      return v;
    case format::int64:
      return static_cast<float>(static_cast<std::int64_t>(v));
  }
  return v;
}

std::int64_t state_buffer::bytes() const {
  switch (format_) {
    case format::bf16:
      return static_cast<std::int64_t>(size_) * 2;
    case format::fp32:
      return static_cast<std::int64_t>(size_) * 4;
    case format::int64:
      return static_cast<std::int64_t>(size_) * 8;
  }
  return 0;
}

bool storage_format(const std::string& name, state_buffer::format& out) {
  if (name == "bf16")
    out = state_buffer::format::bf16;
  else if (name == "fp32")
    out = state_buffer::format::fp32;
  else if (name == "int64")
    out = state_buffer::format::int64;
  else
    return false;
  return true;
}

void l2_normalize_rows(mat& x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    float n = x.row(i).norm();
    if (n > 0) x.row(i) /= n;
  }
}

std::vector<int> top_k(const std::vector<float>& scores, int k) {
  std::vector<int> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, static_cast<int>(idx.size()));
  auto better = [&](int a, int b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

std::vector<int> top_k_sorted(const std::vector<float>& scores, int k) {
  std::vector<std::pair<float, int>> all;
  for (std::size_t i = 0; i < scores.size(); ++i) all.push_back({-scores[i], static_cast<int>(i)});
  std::sort(all.begin(), all.end());
  std::vector<int> out;
  for (int i = 0; i < std::min<int>(k, static_cast<int>(all.size())); ++i)
    out.push_back(all[i].second);
  return out;
}

namespace {

/// Cumulative log decays within a chunk: G[i] = sum_{s<=i} log_decay[s].
mat cumulative(const mat& log_decay) {
  mat g = log_decay;
  for (Eigen::Index i = 1; i < g.rows(); ++i) g.row(i) += g.row(i - 1);
  return g;
}

/// One chunk of c valid rows (padded to `rows` when dense) from state S.
mat delta_chunk(const mat& q, const mat& k, const mat& v, const mat& ld, const vec& beta, mat& S,
                Eigen::Index rows, bool dense, std::int64_t* matrix, std::int64_t* solve) {
  const Eigen::Index c = q.rows(), dk = q.cols(), dv = v.cols();
  mat G = cumulative(ld);  // [c, dk], non-increasing
  // Decayed keys and queries relative to the chunk start (k~ = e^G k, q~ = e^G q) and to its end.
  mat kt = k.array() * G.array().exp();
  mat qt = q.array() * G.array().exp();
  mat kend(c, dk);
  for (Eigen::Index j = 0; j < c; ++j)
    kend.row(j) = k.row(j).array() * (G.row(c - 1) - G.row(j)).array().exp();
  // A_ij = k_j . e^(G_i - G_j) k_i (j < i); B_ij = k_j . e^(G_i - G_j) q_i (j <= i).
  mat A = mat::Zero(c, c), B = mat::Zero(c, c);
  for (Eigen::Index i = 0; i < c; ++i)
    for (Eigen::Index j = 0; j <= i; ++j) {
      Eigen::RowVectorXf w = (G.row(i) - G.row(j)).array().exp();
      if (j < i) A(i, j) = (k.row(j).array() * w.array() * k.row(i).array()).sum();
      B(i, j) = (k.row(j).array() * w.array() * q.row(i).array()).sum();
    }
  const std::int64_t low = c * (c - 1) / 2, causal = c * (c + 1) / 2;
  if (matrix) {
    // Dense: K K^T and Q K^T as full [rows, rows] products, masked after; else valid triangles.
    *matrix += dense ? 2 * 2LL * rows * rows * dk : 2LL * low * dk + 2LL * causal * dk;
  }
  // Forward substitution: (I + diag(beta) A) [W | U0] = diag(beta) [K~ | V].
  mat W(c, dk), U0(c, dv);
  for (Eigen::Index i = 0; i < c; ++i) {
    Eigen::RowVectorXf w = beta(i) * kt.row(i), u = beta(i) * v.row(i);
    for (Eigen::Index j = 0; j < i; ++j) {
      w -= beta(i) * A(i, j) * W.row(j);
      u -= beta(i) * A(i, j) * U0.row(j);
    }
    W.row(i) = w;
    U0.row(i) = u;
  }
  if (solve) *solve += dense ? 2LL * rows * rows * (dk + dv) : 2LL * low * (dk + dv);
  // State predict, query and update: W S, Q~ S, K_end^T U (2 c dk dv each); PV over B.
  mat U = U0 - W * S;
  mat out = qt * S + B * U;
  S = (S.array().colwise() * G.row(c - 1).transpose().array().exp()).matrix() +
      kend.transpose() * U;
  if (matrix)
    *matrix += 3 * 2LL * rows * dk * dv + (dense ? 2LL * rows * rows * dv : 2LL * causal * dv);
  return out;
}

}  // namespace

mat chunked_delta(const mat& q, const mat& k, const mat& v, const mat& log_decay, const vec& beta,
                  mat& S, int chunk, bool dense, std::int64_t* matrix, std::int64_t* solve) {
  mat out(q.rows(), v.cols());
  for (Eigen::Index start = 0; start < q.rows(); start += chunk) {
    Eigen::Index c = std::min<Eigen::Index>(chunk, q.rows() - start);
    // A padded tail chunk computes as a full chunk (zero rows change nothing but the count).
    Eigen::Index rows = dense ? chunk : c;
    out.middleRows(start, c) = delta_chunk(q.middleRows(start, c), k.middleRows(start, c),
                                           v.middleRows(start, c), log_decay.middleRows(start, c),
                                           beta.segment(start, c), S, rows, dense, matrix, solve);
  }
  return out;
}

mat recurrent_delta(const mat& q, const mat& k, const mat& v, const mat& log_decay, const vec& beta,
                    mat& S, std::int64_t* step) {
  mat out(q.rows(), v.cols());
  const Eigen::Index dk = q.cols(), dv = v.cols();
  for (Eigen::Index t = 0; t < q.rows(); ++t) {
    // S' = diag(e^g) S; delta = beta (v - S'^T k); S = S' + k delta^T; o = S^T q.
    S = (S.array().colwise() * log_decay.row(t).transpose().array().exp()).matrix();
    Eigen::RowVectorXf predicted = k.row(t) * S;
    Eigen::RowVectorXf delta = beta(t) * (v.row(t) - predicted);
    S += k.row(t).transpose() * delta;
    out.row(t) = q.row(t) * S;
    if (step) *step += 3 * 2LL * dk * dv;
  }
  return out;
}

mat chunked_ssd(const mat& x, const mat& B, const mat& C, const vec& log_decay, mat& S, int chunk,
                std::int64_t* matrix) {
  const Eigen::Index T = x.rows(), P = x.cols(), N = B.cols(), L = chunk;
  mat y(T, P);
  for (Eigen::Index c0 = 0; c0 < T; c0 += L) {
    const Eigen::Index n = std::min(L, T - c0);
    // The chunk padded to L rows: zero x, B, C and zero log-decay (a factor of 1) add nothing.
    mat xc = mat::Zero(L, P), bc = mat::Zero(L, N), cc = mat::Zero(L, N);
    vec cum = vec::Zero(L);  // inclusive prefix sums of the log-decays
    xc.topRows(n) = x.middleRows(c0, n);
    bc.topRows(n) = B.middleRows(c0, n);
    cc.topRows(n) = C.middleRows(c0, n);
    float run = 0;
    for (Eigen::Index i = 0; i < L; ++i) {
      if (i < n) run += log_decay(c0 + i);
      cum(i) = run;
    }
    // Within the chunk: y_i = sum_{j<=i} e^{cum_i - cum_j} (C_i . B_j) x_j.
    mat scores = gemm(cc, bc.transpose(), matrix);
    for (Eigen::Index i = 0; i < L; ++i)
      for (Eigen::Index j = 0; j < L; ++j)
        scores(i, j) = j <= i ? scores(i, j) * std::exp(cum(i) - cum(j)) : 0.0f;
    mat yc = gemm(scores, xc, matrix);
    // From the carried state: y_i += e^{cum_i} C_i S.
    mat carried = gemm(cc, S, matrix);
    for (Eigen::Index i = 0; i < L; ++i) yc.row(i) += std::exp(cum(i)) * carried.row(i);
    // The state at the chunk's end: e^{cum_L} S + sum_j e^{cum_L - cum_j} B_j^T x_j.
    mat bs = bc;
    for (Eigen::Index j = 0; j < L; ++j) bs.row(j) *= std::exp(cum(L - 1) - cum(j));
    S = std::exp(cum(L - 1)) * S + gemm(bs.transpose(), xc, matrix);
    y.middleRows(c0, n) = yc.topRows(n);
  }
  return y;
}

mat recurrent_ssd(const mat& x, const mat& B, const mat& C, const vec& log_decay, mat& S,
                  std::int64_t* step) {
  mat y(x.rows(), x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    S = std::exp(log_decay(t)) * S + gemm(B.row(t).transpose(), x.row(t), step);  // B^T x
    y.row(t) = gemm(C.row(t), S, step);                                           // C S
  }
  return y;
}

}  // namespace calc::ref
