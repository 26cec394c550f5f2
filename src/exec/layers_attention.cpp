// Runtimes of the dense-history and recurrent attention kinds: GQA (and MHA/MQA, windows),
// MLA (compact and expanded cache paths), Gated DeltaNet and KDA (chunked and recurrent).
#include <cmath>

#include "exec/runtime.h"
#include "tally/block_sparse.h"

namespace calc::exec {

namespace {

/// One head's scan in the SSD form (a decayed B^T x update of S, a C S readout), shared by Mamba2
/// and lightning: recurrent for a decode step or when the execution asks, else chunked; its
/// state products counted under `kind` as the tally counts them (a recurrent step's only when
/// the execution counts step products).
mat scan_head(const mat& x, const mat& b, const mat& readout, const ref::vec& log_decay, mat& S,
              bool recurrent, std::int64_t chunk, const execution_spec& e, counters& c,
              const char* kind) {
  if (recurrent) {
    std::int64_t step = 0;
    mat y = ref::recurrent_ssd(x, b, readout, log_decay, S, &step);
    (e.step_state_gemms ? c.state : c.uncounted) += step;
    if (e.step_state_gemms) c.by_kind[kind] += step;
    return y;
  }
  std::int64_t matrix = 0;
  mat y = ref::chunked_ssd(x, b, readout, log_decay, S, static_cast<int>(chunk), &matrix);
  c.state += matrix;
  c.by_kind[kind] += matrix;
  return y;
}

using ref::gemm;
using ref::state_buffer;

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20 ? x : std::log1p(std::exp(x)); }

/// Grouped-query attention with a BF16 (or given-format) KV cache, optionally windowed or
/// chunked (chunked local attention: a query sees the keys of its own aligned chunk).
class gqa_runtime final : public layer_runtime {
 public:
  gqa_runtime(const attention_gqa& a, const model_spec& s, std::int64_t layer, std::mt19937_64& rng)
      : a_(a), layer_(layer), k_(storage_of(s.precision.kv)), v_(storage_of(s.precision.kv)) {
    // Keys d_h wide, values and the heads' output d_v (value_dim()).
    std::int64_t qw = a.q_heads * a.head_dim, kvw = a.kv_heads * a.head_dim;
    std::int64_t ow = a.q_heads * a.value_dim(), vw = a.kv_heads * a.value_dim();
    wq_ = random_weight(rng, s.hidden, a.output_gate ? qw + ow : qw);
    if (!a.kv_source) {  // a sharing layer's own K/V weights are never used
      wk_ = random_weight(rng, s.hidden, kvw);
      if (!a.k_is_v) wv_ = random_weight(rng, s.hidden, vw);
    }
    wo_ = random_weight(rng, ow, s.hidden);
    if (a.sinks) sinks_ = random_weight(rng, 1, a.q_heads).row(0).transpose();
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context& ctx, counters& c) override {
    std::int64_t lin = 0, inter = 0;
    const std::int64_t dh = a_.head_dim, qw = a_.q_heads * dh, kvw = a_.kv_heads * dh;
    const std::int64_t dv = a_.value_dim(), ow = a_.q_heads * dv, vw = a_.kv_heads * dv;
    mat q = gemm(x, wq_, &lin);
    // Keys and values as stored (BF16-rounded): earlier positions from the cache, this call's
    // from its own rows. A window keeps a ring of its last W slots; a chunked layer a buffer of
    // C slots, position pos in slot pos mod C, that each chunk overwrites from its start.
    const std::int64_t chunk = a_.chunk.value_or(0);
    const std::int64_t w = a_.window.value_or(chunk), end = p.end();
    auto slot = [&](std::int64_t pos) { return w > 0 ? pos % w : pos; };
    const bool rect = p.exec->pairs == pair_counting::rectangular;
    // The earliest key a query at t sees: its window's start, or its chunk's.
    auto first_key = [&](std::int64_t t) -> std::int64_t {
      if (rect || w == 0) return 0;
      return chunk > 0 ? t / chunk * chunk : std::max<std::int64_t>(0, t - w + 1);
    };
    const std::int64_t base = first_key(p.first);
    mat k, v;
    if (a_.kv_source) {
      // The source layer (earlier, same shape) published what it attended over this call.
      const kv_share& src = ctx.kv_shared.at(*a_.kv_source);
      K_ = src.keys.bottomRows(end - base);
      V_ = src.values.bottomRows(end - base);
    } else {
      k = gemm(x, wk_, &lin);
      v = a_.k_is_v ? k : gemm(x, wv_, &lin);
      K_.resize(end - base, kvw);
      V_.resize(end - base, vw);
      for (std::int64_t pos = base; pos < end; ++pos) {
        bool fresh = pos >= p.context;
        for (std::int64_t e = 0; e < kvw; ++e) {
          std::size_t at = static_cast<std::size_t>(slot(pos) * kvw + e);
          K_(pos - base, e) = fresh ? k_.stored(k(pos - p.context, e)) : k_.get(at);
        }
        for (std::int64_t e = 0; e < vw; ++e) {
          std::size_t at = static_cast<std::size_t>(slot(pos) * vw + e);
          V_(pos - base, e) = a_.k_is_v ? K_(pos - base, e)
                              : fresh   ? v_.stored(v(pos - p.context, e))
                                        : v_.get(at);
        }
      }
      ctx.kv_shared[layer_] = {K_, V_, base};
    }
    const mat& K = K_;
    const mat& V = V_;
    mat out(x.rows(), ow);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      std::int64_t t = p.first + i;
      // Eager attention scores the whole rectangle and masks afterwards; causal skips it.
      std::int64_t lo = first_key(t);
      std::int64_t hi = rect ? end - 1 : t, n = hi - lo + 1;
      for (std::int64_t h = 0; h < a_.q_heads; ++h) {
        std::int64_t g = h / (a_.q_heads / a_.kv_heads);
        if (a_.block_sparse && !rect) {
          // Block-sparse: only the keys of the head's pattern are scored and summed.
          out.block(i, h * dv, 1, dv) = sparse_head(K, V, q, i, h, g, t, lo, base, scale, inter);
          continue;
        }
        Eigen::VectorXf s =
            K.block(lo - base, g * dh, n, dh) * q.block(i, h * dh, 1, dh).transpose() * scale;
        for (std::int64_t j = 0; j < n; ++j)
          if (lo + j > t || !sees(h, t, lo + j)) s(j) = -INFINITY;  // masked after scoring
        // A sink logit joins the softmax's denominator and attends to nothing (gpt-oss).
        float top = a_.sinks ? std::max(s.maxCoeff(), sinks_(h)) : s.maxCoeff();
        s = (s.array() - top).exp();
        float total = s.sum() + (a_.sinks ? std::exp(sinks_(h) - top) : 0.0f);
        out.block(i, h * dv, 1, dv) = (s.transpose() * V.block(lo - base, g * dv, n, dv)) / total;
        inter += 2 * dh * n + 2 * dv * n;  // QK over d_h, then AV over d_v
      }
    }
    if (!a_.kv_source) {  // a sharing layer stores nothing; keys that are values once
      std::int64_t kept = w > 0 ? std::min(end, w) : end;
      k_.resize(static_cast<std::size_t>(kept * kvw));
      if (!a_.k_is_v) v_.resize(static_cast<std::size_t>(kept * vw));
      for (std::int64_t i = 0; i < x.rows(); ++i) {
        for (std::int64_t e = 0; e < kvw; ++e)
          k_.set(static_cast<std::size_t>(slot(p.context + i) * kvw + e), k(i, e));
        if (!a_.k_is_v)
          for (std::int64_t e = 0; e < vw; ++e)
            v_.set(static_cast<std::size_t>(slot(p.context + i) * vw + e), v(i, e));
      }
    }
    if (a_.output_gate)
      for (std::int64_t i = 0; i < x.rows(); ++i)
        for (std::int64_t e = 0; e < ow; ++e) out(i, e) *= sigmoid(q(i, qw + e));
    mat y = gemm(out, wo_, &lin);
    c.linear += lin;
    c.interaction += inter;
    c.by_kind["gqa"] += lin + inter;
    return y;
  }

  void state_bytes(std::map<std::string, std::int64_t>& out) const override {
    out["kv"] += k_.bytes() + v_.bytes();
  }

 private:
  /// Whether head h's query at t may see the key at k under the layer's block pattern (always,
  /// without one); the mask is block_sparse_sees, the counts are the executor's own.
  bool sees(std::int64_t h, std::int64_t t, std::int64_t k) const {
    if (!a_.block_sparse) return true;
    return block_sparse_sees(*a_.block_sparse, block_sparse_phase(*a_.block_sparse, a_.q_heads, h),
                             t, k);
  }

  /// One head's output for the query row i at position t, scoring only the keys it sees (a
  /// block-sparse kernel skips the other blocks); adds the QK and AV FLOPs it did to `inter`.
  Eigen::RowVectorXf sparse_head(const mat& K, const mat& V, const mat& q, std::int64_t i,
                                 std::int64_t h, std::int64_t g, std::int64_t t, std::int64_t lo,
                                 std::int64_t base, float scale, std::int64_t& inter) const {
    const std::int64_t dh = a_.head_dim, dv = a_.value_dim();
    std::vector<std::int64_t> keys;
    for (std::int64_t k = lo; k <= t; ++k)
      if (sees(h, t, k)) keys.push_back(k);
    const std::int64_t n = static_cast<std::int64_t>(keys.size());
    Eigen::VectorXf s(n);
    for (std::int64_t j = 0; j < n; ++j)
      s(j) = K.row(keys[static_cast<std::size_t>(j)] - base)
                 .segment(g * dh, dh)
                 .dot(q.row(i).segment(h * dh, dh)) *
             scale;
    float top = a_.sinks ? std::max(s.maxCoeff(), sinks_(h)) : s.maxCoeff();
    s = (s.array() - top).exp();
    float total = s.sum() + (a_.sinks ? std::exp(sinks_(h) - top) : 0.0f);
    Eigen::RowVectorXf o = Eigen::RowVectorXf::Zero(dv);
    for (std::int64_t j = 0; j < n; ++j)
      o += s(j) * V.row(keys[static_cast<std::size_t>(j)] - base).segment(g * dv, dv);
    inter += 2 * dh * n + 2 * dv * n;  // QK over d_h, then AV over d_v, over the keys seen
    return o / total;
  }

  attention_gqa a_;
  std::int64_t layer_;
  mat wq_, wk_, wv_, wo_;
  ref::vec sinks_;
  state_buffer k_, v_;
  mat K_, V_;  // the keys and values of the current call, as stored
};

/// Multi-head latent attention. Compact: the latent and the positional branch are cached and
/// the up-projections are absorbed into the query and the aggregated output; expanded: per-head
/// K and V are restored from the latent for new tokens and cached.
class mla_runtime final : public layer_runtime {
 public:
  mla_runtime(const attention_mla& a, const model_spec& s, std::mt19937_64& rng)
      : a_(a), compact_(s.execution.mla == mla_path::compact), cache_(storage_of(s.precision.kv)) {
    std::int64_t qh = a.qk_nope + a.qk_rope;
    if (a.q_rank > 0) {
      q_a_ = random_weight(rng, s.hidden, a.q_rank);
      q_b_ = random_weight(rng, a.q_rank, a.heads * qh);
    } else {
      q_b_ = random_weight(rng, s.hidden, a.heads * qh);
    }
    kv_a_ = random_weight(rng, s.hidden, a.kv_rank + a.qk_rope);
    kv_b_ = random_weight(rng, a.kv_rank, a.heads * (a.qk_nope + a.v_head));
    wo_ = random_weight(rng, a.heads * a.v_head, s.hidden);
    if (a.output_gate) g_ = random_weight(rng, s.hidden, a.heads * a.v_head);
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, inter = 0;
    const std::int64_t H = a_.heads, nope = a_.qk_nope, rope = a_.qk_rope, r = a_.kv_rank,
                       vh = a_.v_head, qh = nope + rope, m = x.rows();
    mat q = a_.q_rank > 0 ? gemm(gemm(x, q_a_, &lin), q_b_, &lin) : gemm(x, q_b_, &lin);
    mat ckv = gemm(x, kv_a_, &lin);  // [m, r + rope]
    const std::int64_t width = compact_ ? r + rope : H * (qh + vh);
    cache_.resize(static_cast<std::size_t>(p.end() * width));
    if (compact_) {
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t e = 0; e < r + rope; ++e)
          cache_.set(static_cast<std::size_t>((p.context + i) * width + e), ckv(i, e));
    } else {
      mat kv = gemm(ckv.leftCols(r), kv_b_, &lin);  // restore per-head K_nope and V
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t h = 0; h < H; ++h) {
          std::size_t base = static_cast<std::size_t>((p.context + i) * width + h * (qh + vh));
          for (std::int64_t e = 0; e < nope; ++e) cache_.set(base + e, kv(i, h * (nope + vh) + e));
          for (std::int64_t e = 0; e < rope; ++e) cache_.set(base + nope + e, ckv(i, r + e));
          for (std::int64_t e = 0; e < vh; ++e)
            cache_.set(base + qh + e, kv(i, h * (nope + vh) + nope + e));
        }
    }
    mat cache(p.end(), width);  // decoded once per call
    for (std::int64_t pos = 0; pos < p.end(); ++pos)
      for (std::int64_t e = 0; e < width; ++e)
        cache(pos, e) = cache_.get(static_cast<std::size_t>(pos * width + e));
    mat out(m, H * vh);
    const float scale = 1.0f / std::sqrt(static_cast<float>(qh));
    const bool rect = p.exec->pairs == pair_counting::rectangular;
    for (std::int64_t h = 0; h < H; ++h) {
      mat uk = kv_b_.block(0, h * (nope + vh), r, nope);       // W_UK of head h: [r, nope]
      mat uv = kv_b_.block(0, h * (nope + vh) + nope, r, vh);  // W_UV of head h: [r, vh]
      mat q_lat;
      if (compact_) q_lat = gemm(q.block(0, h * qh, m, nope), uk.transpose(), &lin);  // absorbed
      mat o_lat(m, compact_ ? r : vh);
      for (std::int64_t i = 0; i < m; ++i) {
        std::int64_t t = p.first + i;
        // Eager attention scores the call's whole rectangle and masks the future afterwards;
        // causal scores the keys up to t.
        const std::int64_t n = rect ? p.end() : t + 1;
        Eigen::VectorXf s;
        if (compact_) {
          Eigen::RowVectorXf qq(r + rope);
          qq << q_lat.row(i), q.block(i, h * qh + nope, 1, rope);
          s = cache.topRows(n) * qq.transpose();
        } else {
          s = cache.block(0, h * (qh + vh), n, qh) * q.block(i, h * qh, 1, qh).transpose();
        }
        s *= scale;
        for (std::int64_t j = t + 1; j < n; ++j) s(j) = -INFINITY;  // masked after scoring
        s = (s.array() - s.maxCoeff()).exp();
        inter += 2 * n * (compact_ ? r + rope : qh);
        const mat& values = compact_ ? mat(cache.block(0, 0, n, r))
                                     : mat(cache.block(0, h * (qh + vh) + qh, n, vh));
        o_lat.row(i) = (s.transpose() * values) / s.sum();
        inter += 2 * n * (compact_ ? r : vh);
      }
      out.block(0, h * vh, m, vh) = compact_ ? gemm(o_lat, uv, &lin) : o_lat;  // absorbed W_UV
    }
    if (a_.output_gate) {
      mat gate = gemm(x, g_, &lin);
      out = out.array() * gate.unaryExpr([](float v) { return sigmoid(v); }).array();
    }
    mat y = gemm(out, wo_, &lin);
    c.linear += lin;
    c.interaction += inter;
    c.by_kind["mla"] += lin + inter;
    return y;
  }

  void state_bytes(std::map<std::string, std::int64_t>& out) const override {
    out[compact_ ? "mla_latent" : "mla_kv"] += cache_.bytes();
  }

 private:
  attention_mla a_;
  bool compact_;
  mat q_a_, q_b_, kv_a_, kv_b_, wo_, g_;
  state_buffer cache_;
};

/// The shared part of Gated DeltaNet and KDA: short convolution with cached slots, then the
/// delta rule per value head, chunked over a prompt or recurrent for a decode step.
class linear_runtime : public layer_runtime {
 protected:
  linear_runtime(const model_spec& s, std::int64_t heads, std::int64_t dk, std::int64_t dv,
                 std::int64_t channels, std::int64_t kernel, std::string kind)
      : heads_(heads),
        dk_(dk),
        dv_(dv),
        channels_(channels),
        kernel_(kernel),
        kind_(std::move(kind)),
        state_(storage_of(s.precision.recurrent)),
        slots_(storage_of(s.precision.conv)) {
    state_.resize(static_cast<std::size_t>(heads * dk * dv));
    if (kernel > 0) slots_.resize(static_cast<std::size_t>(channels * kernel));
  }

  /// Depthwise causal convolution over time, keeping `kernel` slots (MODELS A14), SiLU on its
  /// output unless `activate` is false (LFM2's short convolution has none).
  mat convolve(const mat& x, const mat& w, const pass& p, std::int64_t* flops,
               bool activate = true) {
    if (kernel_ == 0) return x;
    const std::int64_t P = x.rows(), K = kernel_;
    // A fresh sequence is padded with K-1 zeros on both sides (P+K-1 outputs, the first P kept);
    // with a cache, the K slots precede the P new columns (P+1 outputs, the last P kept).
    bool fresh = p.context == 0;
    std::int64_t len = fresh ? P + 2 * (K - 1) : K + P, lead = fresh ? K - 1 : K;
    mat seq = mat::Zero(len, channels_);
    if (!fresh)
      for (std::int64_t s = 0; s < K; ++s)
        for (std::int64_t ch = 0; ch < channels_; ++ch)
          seq(s, ch) = slots_.get(static_cast<std::size_t>(ch * K + s));
    seq.middleRows(lead, P) = x;
    std::int64_t outputs = len - K + 1;
    mat all(outputs, channels_);
    for (std::int64_t o = 0; o < outputs; ++o)
      for (std::int64_t ch = 0; ch < channels_; ++ch) {
        float acc = 0;
        for (std::int64_t j = 0; j < K; ++j) acc += w(ch, j) * seq(o + j, ch);
        all(o, ch) = activate ? silu(acc) : acc;
      }
    *flops += 2 * channels_ * K * outputs;
    // The slots keep the last K input columns (zeros before a short fresh prompt).
    std::int64_t last = lead + P;
    for (std::int64_t s = 0; s < K; ++s)
      for (std::int64_t ch = 0; ch < channels_; ++ch)
        slots_.set(static_cast<std::size_t>(ch * K + s),
                   last - K + s >= 0 ? seq(last - K + s, ch) : 0.0f);
    return fresh ? mat(all.topRows(P)) : mat(all.bottomRows(P));
  }

  /// Runs the delta rule for head h on [P, dk] q, k, [P, dv] v, [P, dk] log decays, [P] beta.
  mat delta(std::int64_t h, const mat& q, const mat& k, const mat& v, const mat& log_decay,
            const ref::vec& beta, const pass& p, counters& c) {
    mat S(dk_, dv_);
    for (std::int64_t i = 0; i < dk_; ++i)
      for (std::int64_t j = 0; j < dv_; ++j)
        S(i, j) = state_.get(static_cast<std::size_t>((h * dk_ + i) * dv_ + j));
    mat out;
    const execution_spec& e = *p.exec;
    if (p.decode_step() || e.linear == linear_prefill::recurrent) {
      std::int64_t step = 0;
      out = ref::recurrent_delta(q, k, v, log_decay, beta, S, &step);
      (e.step_state_gemms ? c.state : c.uncounted) += step;
      if (e.step_state_gemms) c.by_kind[kind_] += step;
    } else {
      std::int64_t matrix = 0, solve = 0;
      bool dense = e.chunk_flops == chunk_rule::padded_gemms;
      out = ref::chunked_delta(q, k, v, log_decay, beta, S, static_cast<int>(e.chunk), dense,
                               &matrix, &solve);
      // The chapter counts the triangular solves only in the valid-triangle stage list.
      c.state += matrix + (dense ? 0 : solve);
      if (dense) c.uncounted += solve;
      c.by_kind[kind_] += matrix + (dense ? 0 : solve);
    }
    for (std::int64_t i = 0; i < dk_; ++i)
      for (std::int64_t j = 0; j < dv_; ++j)
        state_.set(static_cast<std::size_t>((h * dk_ + i) * dv_ + j), S(i, j));
    return out;
  }

  void count_conv(std::int64_t flops, const pass& p, counters& c) {
    (p.exec->conv_flops ? c.state : c.uncounted) += flops;
    if (p.exec->conv_flops) c.by_kind[kind_] += flops;
  }

 public:
  void state_bytes(std::map<std::string, std::int64_t>& out) const override {
    if (heads_ * dk_ * dv_ > 0) out["recurrent"] += state_.bytes();  // none in a short conv
    if (kernel_ > 0) out["conv"] += slots_.bytes();
  }

 protected:
  std::int64_t heads_, dk_, dv_, channels_, kernel_;
  std::string kind_;
  state_buffer state_, slots_;
};

class gdn_runtime final : public linear_runtime {
 public:
  gdn_runtime(const attention_gdn& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.v_heads, a.key_dim, a.value_dim,
                       2 * a.qk_heads * a.key_dim + a.v_heads * a.value_dim, a.conv_kernel,
                       "gated_deltanet"),
        a_(a) {
    w_qkv_ = random_weight(rng, s.hidden, channels_);
    w_z_ = random_weight(rng, s.hidden, a.v_heads * a.value_dim);
    w_a_ = random_weight(rng, s.hidden, a.v_heads);
    w_b_ = random_weight(rng, s.hidden, a.v_heads);
    w_out_ = random_weight(rng, a.v_heads * a.value_dim, s.hidden);
    conv_ = random_weight(rng, channels_, std::max<std::int64_t>(1, a.conv_kernel));
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, conv = 0;
    mat mixed = convolve(gemm(x, w_qkv_, &lin), conv_, p, &conv);
    count_conv(conv, p, c);
    mat z = gemm(x, w_z_, &lin), ga = gemm(x, w_a_, &lin), gb = gemm(x, w_b_, &lin);
    const std::int64_t P = x.rows(), dk = a_.key_dim, dv = a_.value_dim, qk = a_.qk_heads * dk;
    mat out(P, a_.v_heads * dv);
    for (std::int64_t h = 0; h < a_.v_heads; ++h) {
      std::int64_t src = h / (a_.v_heads / a_.qk_heads);
      mat q = mixed.block(0, src * dk, P, dk), k = mixed.block(0, qk + src * dk, P, dk);
      mat v = mixed.block(0, 2 * qk + h * dv, P, dv);
      ref::l2_normalize_rows(q);
      ref::l2_normalize_rows(k);
      mat ld(P, dk);
      ref::vec beta(P);
      for (std::int64_t t = 0; t < P; ++t) {
        ld.row(t).setConstant(-0.5f * softplus(ga(t, h)));  // one decay per head
        beta(t) = sigmoid(gb(t, h));
      }
      out.block(0, h * dv, P, dv) = delta(h, q, k, v, ld, beta, p, c);
    }
    out = out.array() * z.unaryExpr([](float v) { return silu(v); }).array();
    mat y = gemm(out, w_out_, &lin);
    c.linear += lin;
    c.by_kind["gated_deltanet"] += lin;
    return y;
  }

 private:
  attention_gdn a_;
  mat w_qkv_, w_z_, w_a_, w_b_, w_out_, conv_;
};

/// Lightning attention (MiniMax; a Gated DeltaNet spec with rule = lightning): qkv_proj and
/// SiLU; per head the decayed linear attention S = e^-s S + k^T v, y = q S, with a fixed slope s
/// per head, which is SSD's scan with C = q, B = k, x = v: chunked over the model's blocks for a
/// prompt (the lightning block scheme: masked decayed q k^T times v inside a block, q S from the
/// carried state, the block's k^T v into the state), recurrent for a decode step; an RMSNorm over
/// all heads, the sigmoid output gate, out_proj.
class lightning_runtime final : public linear_runtime {
 public:
  lightning_runtime(const attention_gdn& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.v_heads, a.key_dim, a.value_dim,
                       2 * a.qk_heads * a.key_dim + a.v_heads * a.value_dim, 0, "lightning"),
        a_(a) {
    w_qkv_ = random_weight(rng, s.hidden, channels_);
    w_gate_ = random_weight(rng, s.hidden, a.v_heads * a.value_dim);
    w_out_ = random_weight(rng, a.v_heads * a.value_dim, s.hidden);
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0;
    const std::int64_t m = x.rows(), H = a_.v_heads, dk = a_.key_dim, dv = a_.value_dim,
                       kw = H * dk;
    mat qkv = gemm(x, w_qkv_, &lin).unaryExpr([](float v) { return silu(v); });
    mat out(m, H * dv);
    const execution_spec& e = *p.exec;
    const bool recurrent = p.decode_step() || e.linear == linear_prefill::recurrent;
    for (std::int64_t h = 0; h < H; ++h) {
      mat q = qkv.block(0, h * dk, m, dk), k = qkv.block(0, kw + h * dk, m, dk);
      mat v = qkv.block(0, 2 * kw + h * dv, m, dv);
      // ALiBi-style slopes 2^(-8(h+1)/H): a fixed decay per head (MiniMax also scales them
      // per layer; the values change no count).
      ref::vec ld = ref::vec::Constant(
          m, -std::exp2(-8.0f * static_cast<float>(h + 1) / static_cast<float>(H)));
      mat S(dk, dv);
      for (std::int64_t i = 0; i < dk; ++i)
        for (std::int64_t j = 0; j < dv; ++j)
          S(i, j) = state_.get(static_cast<std::size_t>((h * dk + i) * dv + j));
      mat y = scan_head(v, k, q, ld, S, recurrent, a_.block, e, c, "lightning");
      for (std::int64_t i = 0; i < dk; ++i)
        for (std::int64_t j = 0; j < dv; ++j)
          state_.set(static_cast<std::size_t>((h * dk + i) * dv + j), S(i, j));
      out.block(0, h * dv, m, dv) = y;
    }
    // RMSNorm over all heads x head_dim, then the sigmoid output gate (element-wise).
    for (std::int64_t i = 0; i < m; ++i) {
      auto row = out.row(i);
      row /= std::sqrt(row.squaredNorm() / static_cast<float>(H * dv) + 1e-5f);
    }
    mat gate = gemm(x, w_gate_, &lin);
    out = out.array() * gate.unaryExpr([](float v) { return sigmoid(v); }).array();
    mat y = gemm(out, w_out_, &lin);
    c.linear += lin;
    c.by_kind["lightning"] += lin;
    return y;
  }

 private:
  attention_gdn a_;
  mat w_qkv_, w_gate_, w_out_;
};

class kda_runtime final : public linear_runtime {
 public:
  kda_runtime(const attention_kda& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.heads, a.key_dim, a.value_dim,
                       2 * a.heads * a.key_dim + a.heads * a.value_dim, a.conv_kernel, "kda"),
        a_(a) {
    std::int64_t kw = a.heads * a.key_dim, vw = a.heads * a.value_dim;
    wq_ = random_weight(rng, s.hidden, kw);
    wk_ = random_weight(rng, s.hidden, kw);
    wv_ = random_weight(rng, s.hidden, vw);
    f_a_ = random_weight(rng, s.hidden, a.decay_rank);
    f_b_ = random_weight(rng, a.decay_rank, kw);
    w_beta_ = random_weight(rng, s.hidden, a.heads);
    if (a.output_gate && a.gate_rank > 0) {  // low-rank gate: g_a then g_b
      g_ = random_weight(rng, s.hidden, a.gate_rank);
      g_b_ = random_weight(rng, a.gate_rank, vw);
    } else if (a.output_gate) {
      g_ = random_weight(rng, s.hidden, vw);
    }
    wo_ = random_weight(rng, vw, s.hidden);
    conv_ = random_weight(rng, channels_, std::max<std::int64_t>(1, a.conv_kernel));
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, conv = 0;
    const std::int64_t P = x.rows(), dk = a_.key_dim, dv = a_.value_dim, kw = a_.heads * dk;
    mat qkv(P, channels_);
    qkv << gemm(x, wq_, &lin), gemm(x, wk_, &lin), gemm(x, wv_, &lin);
    mat mixed = convolve(qkv, conv_, p, &conv);
    count_conv(conv, p, c);
    mat decay = gemm(gemm(x, f_a_, &lin), f_b_, &lin);  // per-channel decay, low rank
    mat beta_all = gemm(x, w_beta_, &lin);
    mat out(P, a_.heads * dv);
    for (std::int64_t h = 0; h < a_.heads; ++h) {
      mat q = mixed.block(0, h * dk, P, dk), k = mixed.block(0, kw + h * dk, P, dk);
      mat v = mixed.block(0, 2 * kw + h * dv, P, dv);
      ref::l2_normalize_rows(q);
      ref::l2_normalize_rows(k);
      mat ld(P, dk);
      ref::vec beta(P);
      for (std::int64_t t = 0; t < P; ++t) {
        for (std::int64_t e = 0; e < dk; ++e) ld(t, e) = -0.5f * softplus(decay(t, h * dk + e));
        beta(t) = sigmoid(beta_all(t, h));
      }
      out.block(0, h * dv, P, dv) = delta(h, q, k, v, ld, beta, p, c);
    }
    if (a_.output_gate) {
      mat gate = a_.gate_rank > 0 ? gemm(gemm(x, g_, &lin), g_b_, &lin) : gemm(x, g_, &lin);
      out = out.array() * gate.unaryExpr([](float v) { return sigmoid(v); }).array();
    }
    mat y = gemm(out, wo_, &lin);
    c.linear += lin;
    c.by_kind["kda"] += lin;
    return y;
  }

 private:
  attention_kda a_;
  mat wq_, wk_, wv_, f_a_, f_b_, w_beta_, g_, g_b_, wo_, conv_;
};

/// Mamba2 (SSD): in_proj to z, x, B, C, dt; the depthwise convolution over x, B, C with its
/// slots; per head the SSD scan (chunked over a prompt, recurrent for a decode step) plus the D
/// skip; the gate silu(z) and a per-group RMSNorm; out_proj.
class mamba2_runtime final : public linear_runtime {
 public:
  mamba2_runtime(const attention_mamba2& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.heads, a.head_dim, a.state_dim,
                       a.heads * a.head_dim + 2 * a.groups * a.state_dim, a.conv_kernel, "mamba2"),
        a_(a) {
    const std::int64_t inner = a.heads * a.head_dim;
    w_in_ = random_weight(rng, s.hidden, inner + channels_ + a.heads);
    w_out_ = random_weight(rng, inner, s.hidden);
    conv_ = random_weight(rng, channels_, std::max<std::int64_t>(1, a.conv_kernel));
    mat per_head = random_weight(rng, 3, a.heads);  // dt_bias, A_log, D
    dt_bias_ = per_head.row(0).transpose();
    a_log_ = per_head.row(1).transpose();
    d_skip_ = per_head.row(2).transpose();
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, conv = 0;
    const std::int64_t m = x.rows(), H = a_.heads, P = a_.head_dim, N = a_.state_dim, inner = H * P,
                       gn = a_.groups * N;
    mat zxbcdt = gemm(x, w_in_, &lin);
    mat mixed = convolve(zxbcdt.middleCols(inner, channels_), conv_, p, &conv);
    count_conv(conv, p, c);
    mat out(m, inner);
    const execution_spec& e = *p.exec;
    const bool recurrent = p.decode_step() || e.linear == linear_prefill::recurrent;
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t g = h / (H / a_.groups);
      mat xh = mixed.block(0, h * P, m, P), b = mixed.block(0, inner + g * N, m, N),
          cc = mixed.block(0, inner + gn + g * N, m, N);
      const float A = -std::exp(a_log_(h));
      ref::vec ld(m);
      mat xdt = xh;
      for (std::int64_t t = 0; t < m; ++t) {
        float dt = softplus(zxbcdt(t, inner + channels_ + h) + dt_bias_(h));
        ld(t) = dt * A;
        xdt.row(t) *= dt;
      }
      mat S(N, P);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t q = 0; q < P; ++q)
          S(n, q) = state_.get(static_cast<std::size_t>((h * P + q) * N + n));
      mat y = scan_head(xdt, b, cc, ld, S, recurrent, e.chunk, e, c, "mamba2");
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t q = 0; q < P; ++q)
          state_.set(static_cast<std::size_t>((h * P + q) * N + n), S(n, q));
      out.block(0, h * P, m, P) = y + d_skip_(h) * xh;  // the D skip (element-wise)
    }
    // Gate by silu(z), then RMSNorm per group of inner / groups channels (element-wise).
    out = out.array() * zxbcdt.leftCols(inner).unaryExpr([](float v) { return silu(v); }).array();
    if (a_.gated_norm) {
      const std::int64_t width = inner / a_.groups;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t g = 0; g < a_.groups; ++g) {
          auto slice = out.block(i, g * width, 1, width);
          slice /= std::sqrt(slice.squaredNorm() / static_cast<float>(width) + 1e-5f);
        }
    }
    mat y = gemm(out, w_out_, &lin);
    c.linear += lin;
    c.by_kind["mamba2"] += lin;
    return y;
  }

 private:
  attention_mamba2 a_;
  mat w_in_, w_out_, conv_;
  ref::vec dt_bias_, a_log_, d_skip_;
};

/// Mamba-1 (S6; a Mamba2 spec with scan = selective): in_proj to x and z; the depthwise
/// convolution over x with its slots; x_proj to the low-rank dt, B and C (each RMS-normed where
/// dt_norms, Jamba), dt_proj back to every channel; per channel and state the selective scan
/// h = exp(dt A) h + (dt x) B, y = C h, plus the D skip; the gate silu(z); out_proj. The scan has
/// no chunked form, so a prompt runs it token by token in either prefill mode.
class mamba1_runtime final : public linear_runtime {
 public:
  mamba1_runtime(const attention_mamba2& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.heads, 1, a.state_dim, a.heads, a.conv_kernel, "mamba"), a_(a) {
    const std::int64_t n = a.heads, N = a.state_dim;
    w_in_ = random_weight(rng, s.hidden, 2 * n);
    w_x_ = random_weight(rng, n, a.dt_rank + 2 * N);
    w_dt_ = random_weight(rng, a.dt_rank, n);
    w_out_ = random_weight(rng, n, s.hidden);
    conv_ = random_weight(rng, n, std::max<std::int64_t>(1, a.conv_kernel));
    a_log_ = random_weight(rng, n, N);
    mat per_channel = random_weight(rng, 2, n);  // dt_proj's bias, D
    dt_bias_ = per_channel.row(0).transpose();
    d_skip_ = per_channel.row(1).transpose();
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, conv = 0;
    const std::int64_t m = x.rows(), n = a_.heads, N = a_.state_dim, R = a_.dt_rank;
    mat xz = gemm(x, w_in_, &lin);
    mat xc = convolve(xz.leftCols(n), conv_, p, &conv);
    count_conv(conv, p, c);
    mat dbc = gemm(xc, w_x_, &lin);
    mat dtr = dbc.leftCols(R), B = dbc.middleCols(R, N), C = dbc.rightCols(N);
    if (a_.dt_norms)
      for (mat* v : {&dtr, &B, &C})  // RMSNorm per row (element-wise, not counted)
        for (std::int64_t t = 0; t < m; ++t)
          v->row(t) /= std::sqrt(v->row(t).squaredNorm() / static_cast<float>(v->cols()) + 1e-6f);
    mat dt = gemm(dtr, w_dt_, &lin);
    mat out(m, n);
    ref::vec h(N);
    for (std::int64_t ch = 0; ch < n; ++ch) {
      for (std::int64_t k = 0; k < N; ++k) h(k) = state_.get(static_cast<std::size_t>(ch * N + k));
      for (std::int64_t t = 0; t < m; ++t) {
        const float delta = softplus(dt(t, ch) + dt_bias_(ch)), u = xc(t, ch);
        float y = 0;
        for (std::int64_t k = 0; k < N; ++k) {
          h(k) = std::exp(-delta * std::exp(a_log_(ch, k))) * h(k) + delta * u * B(t, k);
          y += C(t, k) * h(k);
        }
        out(t, ch) = y + d_skip_(ch) * u;  // the D skip (element-wise)
      }
      for (std::int64_t k = 0; k < N; ++k) state_.set(static_cast<std::size_t>(ch * N + k), h(k));
    }
    // Per token, channel and state: the update (dt x) B and the readout C h, 2 FLOPs each.
    const std::int64_t step = 4 * m * n * N;
    (p.exec->step_state_gemms ? c.state : c.uncounted) += step;
    if (p.exec->step_state_gemms) c.by_kind["mamba"] += step;
    out = out.array() * xz.rightCols(n).unaryExpr([](float v) { return silu(v); }).array();
    mat y = gemm(out, w_out_, &lin);
    c.linear += lin;
    c.by_kind["mamba"] += lin;
    return y;
  }

 private:
  attention_mamba2 a_;
  mat w_in_, w_x_, w_dt_, w_out_, conv_, a_log_;
  ref::vec dt_bias_, d_skip_;
};

/// A gated short convolution (LFM2; a Mamba2 spec with scan = short_conv): in_proj to B, C and
/// x; the depthwise convolution (no activation) over B x with its slots; C times its output;
/// out_proj. No state matrix: the slots are the whole state.
class short_conv_runtime final : public linear_runtime {
 public:
  short_conv_runtime(const attention_mamba2& a, const model_spec& s, std::mt19937_64& rng)
      : linear_runtime(s, a.heads, 1, 0, a.heads, a.conv_kernel, "short_conv"), a_(a) {
    w_in_ = random_weight(rng, s.hidden, 3 * a.heads);
    w_out_ = random_weight(rng, a.heads, s.hidden);
    conv_ = random_weight(rng, a.heads, std::max<std::int64_t>(1, a.conv_kernel));
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0, conv = 0;
    const std::int64_t n = a_.heads;
    mat bcx = gemm(x, w_in_, &lin);
    mat bx = (bcx.leftCols(n).array() * bcx.rightCols(n).array()).matrix();  // element-wise
    mat y = convolve(bx, conv_, p, &conv, false);
    count_conv(conv, p, c);
    mat gated = (bcx.middleCols(n, n).array() * y.array()).matrix();
    mat out = gemm(gated, w_out_, &lin);
    c.linear += lin;
    c.by_kind["short_conv"] += lin;
    return out;
  }

 private:
  attention_mamba2 a_;
  mat w_in_, w_out_, conv_;
};

/// A parallel hybrid (Falcon-H1): the GQA and Mamba2 runtimes on the same rows, outputs summed.
/// Each part counts its own work under its own kind and keeps its own state buffers.
class parallel_runtime final : public layer_runtime {
 public:
  parallel_runtime(const attention_parallel& a, const model_spec& s, std::int64_t layer,
                   std::mt19937_64& rng)
      : attention_(a.attention, s, layer, rng), mixer_(a.mixer, s, rng) {}

  mat forward(const mat& x, const mat& x_all, const pass& p, run_context& ctx,
              counters& c) override {
    mat y = attention_.forward(x, x_all, p, ctx, c);
    return y + mixer_.forward(x, x_all, p, ctx, c);  // the sum is element-wise, not counted
  }

  void state_bytes(std::map<std::string, std::int64_t>& out) const override {
    attention_.state_bytes(out);  // "kv"
    mixer_.state_bytes(out);      // "recurrent", "conv"
  }

 private:
  gqa_runtime attention_;
  mamba2_runtime mixer_;
};

}  // namespace

std::unique_ptr<layer_runtime> make_dsa(const attention_dsa& a, const model_spec& s,
                                        std::int64_t layer, std::mt19937_64& rng);

namespace {

/// The runtime of each mixer kind: one overload per kind, so a new kind does not compile until
/// the executor runs it.
struct attention_maker {
  const model_spec& s;
  std::int64_t layer;
  std::mt19937_64& rng;
  using made = std::unique_ptr<layer_runtime>;
  made operator()(const attention_gqa& a) const {
    return std::make_unique<gqa_runtime>(a, s, layer, rng);
  }
  made operator()(const attention_mla& a) const {
    // Sparse MLA's indexer and top-k selection are not executed: refuse rather than count a
    // dense MLA layer the tally does not describe.
    if (a.indexer)
      throw spec_error("attention.indexer",
                       "the reference executor does not run sparse MLA (a lightning indexer)");
    return std::make_unique<mla_runtime>(a, s, rng);
  }
  made operator()(const attention_gdn& a) const {
    if (a.lightning()) return std::make_unique<lightning_runtime>(a, s, rng);
    return std::make_unique<gdn_runtime>(a, s, rng);
  }
  made operator()(const attention_kda& a) const { return std::make_unique<kda_runtime>(a, s, rng); }
  made operator()(const attention_mamba2& a) const {
    if (a.selective()) return std::make_unique<mamba1_runtime>(a, s, rng);
    if (a.short_conv()) return std::make_unique<short_conv_runtime>(a, s, rng);
    return std::make_unique<mamba2_runtime>(a, s, rng);
  }
  made operator()(const attention_none&) const { return make_absent(); }
  made operator()(const attention_parallel& a) const {
    return std::make_unique<parallel_runtime>(a, s, layer, rng);
  }
  made operator()(const attention_dsa& a) const { return make_dsa(a, s, layer, rng); }
};

}  // namespace

std::unique_ptr<layer_runtime> make_attention(const attention_spec& a, const model_spec& s,
                                              std::int64_t layer, std::mt19937_64& rng) {
  return std::visit(attention_maker{s, layer, rng}, a);
}

}  // namespace calc::exec
