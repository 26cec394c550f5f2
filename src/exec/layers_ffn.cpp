// Runtimes of the feed-forward kinds (dense SwiGLU; MoE with a router, a routing histogram and
// grouped expert GEMMs, shared experts, latent space) and of Engram lookups.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.h"
#include "exec/runtime.h"

namespace calc::exec {

namespace {

using ref::gemm;

float silu(float x) { return x / (1.0f + std::exp(-x)); }

/// gate, up, down: y = (silu(x Wg) * x Wu) Wd.
struct swiglu_weights {
  mat gate, up, down;
  swiglu_weights() = default;
  swiglu_weights(std::mt19937_64& rng, std::int64_t in, std::int64_t f)
      : gate(random_weight(rng, in, f)),
        up(random_weight(rng, in, f)),
        down(random_weight(rng, f, in)) {}
  mat run(const mat& x, std::int64_t* flops) const {
    mat g = gemm(x, gate, flops), u = gemm(x, up, flops);
    mat h = g.unaryExpr([](float v) { return silu(v); }).array() * u.array();
    return gemm(h, down, flops);
  }
};

/// One MoE expert: SwiGLU when gated, else up, squared ReLU, down (Nemotron-H's relu2 experts:
/// two matrices, so two GEMMs where SwiGLU runs three).
struct expert_weights {
  swiglu_weights swiglu;
  mat up, down;
  bool gated = true;
  expert_weights(std::mt19937_64& rng, std::int64_t in, std::int64_t f, bool is_gated)
      : gated(is_gated) {
    if (gated) {
      swiglu = swiglu_weights(rng, in, f);
    } else {
      up = random_weight(rng, in, f);
      down = random_weight(rng, f, in);
    }
  }
  mat run(const mat& x, std::int64_t* flops) const {
    if (gated) return swiglu.run(x, flops);
    mat h = gemm(x, up, flops).unaryExpr([](float v) { return v > 0.0f ? v * v : 0.0f; });
    return gemm(h, down, flops);
  }
};

class swiglu_runtime final : public layer_runtime {
 public:
  swiglu_runtime(const ffn_swiglu& f, const model_spec& s, std::mt19937_64& rng)
      : w_(rng, s.hidden, f.intermediate) {}
  mat forward(const mat& x, const mat&, const pass&, run_context&, counters& c) override {
    std::int64_t lin = 0;
    mat y = w_.run(x, &lin);
    c.linear += lin;
    c.by_kind["swiglu"] += lin;
    return y;
  }
  void state_bytes(std::map<std::string, std::int64_t>&) const override {}

 private:
  swiglu_weights w_;
};

/// GPT-2's MLP: up, GELU, down (biases are element-wise).
class mlp_runtime final : public layer_runtime {
 public:
  mlp_runtime(const ffn_mlp& f, const model_spec& s, std::mt19937_64& rng)
      : up_(random_weight(rng, s.hidden, f.intermediate)),
        down_(random_weight(rng, f.intermediate, s.hidden)) {}
  mat forward(const mat& x, const mat&, const pass&, run_context&, counters& c) override {
    std::int64_t lin = 0;
    mat h = gemm(x, up_, &lin).unaryExpr([](float v) {
      return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    });
    mat y = gemm(h, down_, &lin);
    c.linear += lin;
    c.by_kind["mlp"] += lin;
    return y;
  }
  void state_bytes(std::map<std::string, std::int64_t>&) const override {}

 private:
  mat up_, down_;
};

/// MoE: every row picks top_k experts; the executor routes uniformly (row t takes experts
/// t*k, t*k+1, ... mod E) so experts touched are predictable, while still computing the router.
class moe_runtime final : public layer_runtime {
 public:
  moe_runtime(const ffn_moe& f, const model_spec& s, std::mt19937_64& rng) : f_(f) {
    std::int64_t width = f.latent > 0 ? f.latent : s.hidden;
    if (f.router) router_ = random_weight(rng, s.hidden, f.experts);
    if (f.latent > 0) {
      latent_in_ = random_weight(rng, s.hidden, f.latent);
      latent_out_ = random_weight(rng, f.latent, s.hidden);
    }
    for (std::int64_t e = 0; e < f.experts; ++e)
      experts_.emplace_back(rng, width, f.intermediate, f.gated);
    for (std::int64_t e = 0; e < f.shared_experts; ++e)
      shared_.emplace_back(rng, s.hidden, f.shared_intermediate, f.gated);
    if (f.shared_gate) gate_ = random_weight(rng, s.hidden, 1);
  }

  mat forward(const mat& x, const mat&, const pass& p, run_context&, counters& c) override {
    std::int64_t lin = 0;
    if (f_.router) gemm(x, router_, &lin);  // scores computed; the uniform rule picks
    mat in = f_.latent > 0 ? gemm(x, latent_in_, &lin) : x;
    // Routing histogram: rows per expert (sum = m * k, no drops).
    std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(f_.experts));
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      std::int64_t t = p.first + i;
      for (std::int64_t j = 0; j < f_.top_k; ++j)
        rows[static_cast<std::size_t>((t * f_.top_k + j) % f_.experts)].push_back(i);
    }
    mat acc = mat::Zero(x.rows(), in.cols());
    std::int64_t touched = 0;
    for (std::int64_t e = 0; e < f_.experts; ++e) {
      const auto& r = rows[static_cast<std::size_t>(e)];
      if (r.empty()) continue;
      ++touched;
      mat gathered(static_cast<Eigen::Index>(r.size()), in.cols());
      for (std::size_t j = 0; j < r.size(); ++j)
        gathered.row(static_cast<Eigen::Index>(j)) = in.row(r[j]);
      mat y = experts_[static_cast<std::size_t>(e)].run(gathered, &lin);  // grouped GEMM
      for (std::size_t j = 0; j < r.size(); ++j)
        acc.row(r[j]) += y.row(static_cast<Eigen::Index>(j)) / static_cast<float>(f_.top_k);
    }
    last_touched_ = touched;
    mat out = f_.latent > 0 ? gemm(acc, latent_out_, &lin) : acc;
    for (const expert_weights& s : shared_) {
      mat y = s.run(x, &lin);
      if (f_.shared_gate) {
        mat g = gemm(x, gate_, &lin);
        for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) *= 1.0f / (1.0f + std::exp(-g(i, 0)));
      }
      out += y;
    }
    c.linear += lin;
    c.by_kind["moe"] += lin;
    if (c.experts_touched == 0) c.experts_touched = touched;
    return out;
  }
  void state_bytes(std::map<std::string, std::int64_t>&) const override {}

 private:
  ffn_moe f_;
  mat router_, latent_in_, latent_out_, gate_;
  std::vector<expert_weights> experts_, shared_;
  std::int64_t last_touched_ = 0;
};

/// Engram: 24 table rows chosen by hashing the n-gram ending at each position, concatenated and
/// projected to `ways` keys and one value; the lookups are bytes, the projection FLOPs.
class engram_runtime final : public layer_runtime {
 public:
  engram_runtime(const engram_spec& e, const model_spec& s, std::mt19937_64& rng)
      : e_(e), table_(random_weight(rng, e.table_rows, e.bucket_dim)) {
    wkv_ = random_weight(rng, e.buckets * e.bucket_dim, (e.ways + 1) * s.hidden);
  }
  mat forward(const mat& x, const mat&, const pass& p, run_context& ctx, counters& c) override {
    std::int64_t lin = 0;
    mat looked(x.rows(), e_.buckets * e_.bucket_dim);
    const auto& ids = *ctx.token_ids;
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      std::int64_t t = p.first + i;
      for (std::int64_t b = 0; b < e_.buckets; ++b) {
        // n-gram of the last (b % 3) + 1 tokens, hashed per bucket
        std::uint64_t h = 1469598103934665603ULL + static_cast<std::uint64_t>(b) * 1099511628211ULL;
        for (std::int64_t j = 0; j <= b % 3 && t - j >= 0; ++j)
          h = (h ^ static_cast<std::uint64_t>(ids[static_cast<std::size_t>(t - j)])) *
              1099511628211ULL;
        std::int64_t row = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(e_.table_rows));
        looked.block(i, b * e_.bucket_dim, 1, e_.bucket_dim) = table_.row(row);
      }
    }
    mat kv = gemm(looked, wkv_, &lin);
    // Gate the shared value into the residual by its agreement with the first key (scalar work).
    const std::int64_t d = x.cols();
    mat y(x.rows(), d);
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      float agree = (x.row(i).array() * kv.block(i, 0, 1, d).array()).sum();
      float g = 1.0f / (1.0f + std::exp(-agree / std::sqrt(static_cast<float>(d))));
      y.row(i) = g * kv.block(i, e_.ways * d, 1, d);
    }
    c.linear += lin;
    c.by_kind["engram"] += lin;
    return y;
  }
  void state_bytes(std::map<std::string, std::int64_t>&) const override {}

 private:
  engram_spec e_;
  mat table_, wkv_;
};

/// A missing block: its contribution to the residual is zero.
class absent_runtime final : public layer_runtime {
 public:
  mat forward(const mat& x, const mat&, const pass&, run_context&, counters&) override {
    return mat::Zero(x.rows(), x.cols());
  }
  void state_bytes(std::map<std::string, std::int64_t>&) const override {}
};

}  // namespace

std::unique_ptr<layer_runtime> make_absent() { return std::make_unique<absent_runtime>(); }

namespace {

/// The runtime of each feed-forward kind: one overload per kind, so a new kind does not compile
/// until the executor runs it.
struct ffn_maker {
  const model_spec& s;
  std::mt19937_64& rng;
  using made = std::unique_ptr<layer_runtime>;
  made operator()(const ffn_swiglu& f) const { return std::make_unique<swiglu_runtime>(f, s, rng); }
  made operator()(const ffn_mlp& f) const { return std::make_unique<mlp_runtime>(f, s, rng); }
  made operator()(const ffn_moe& f) const { return std::make_unique<moe_runtime>(f, s, rng); }
  made operator()(const ffn_none&) const { return make_absent(); }
};

}  // namespace

std::unique_ptr<layer_runtime> make_ffn(const ffn_spec& f, const model_spec& s,
                                        std::mt19937_64& rng) {
  return std::visit(ffn_maker{s, rng}, f);
}

std::unique_ptr<layer_runtime> make_engram(const engram_spec& e, const model_spec& s,
                                           std::mt19937_64& rng) {
  return std::make_unique<engram_runtime>(e, s, rng);
}

mat random_weight(std::mt19937_64& rng, std::int64_t in, std::int64_t out) {
  // Uniform on [-a, a] with a = sqrt(3 / in): variance 1/in, and fast (splitmix from one draw),
  // since a scaled trillion-parameter model still has hundreds of millions of weights.
  const float a = std::sqrt(3.0f / static_cast<float>(std::max<std::int64_t>(1, in)));
  std::uint64_t state = rng();
  mat w(in, out);
  for (Eigen::Index i = 0; i < w.size(); ++i) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    w.data()[i] = (2.0f * u - 1.0f) * a;
  }
  return w;
}

ref::state_buffer::format storage_of(const dtype& t) {
  ref::state_buffer::format f;
  if (!ref::storage_format(t.name, f))
    throw spec_error("storage",
                     fmt::format("the reference executor stores bf16, fp32 or int64 state, "
                                 "not {}; validate the reference storage",
                                 t.name));
  return f;
}

}  // namespace calc::exec
