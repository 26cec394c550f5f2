#include "twin_cases.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "decode_blocked.h"
#include "decode_ref.h"

namespace calc::kernels {

namespace {

std::size_t sz(long n) { return static_cast<std::size_t>(n); }

std::vector<bf16_bits> random_bf16(std::mt19937_64& rng, long n, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<bf16_bits> v(sz(n));
  for (auto& x : v) x = float_to_bf16(u(rng));
  return v;
}

std::vector<float> random_f32(std::mt19937_64& rng, long n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(sz(n));
  for (auto& x : v) x = u(rng);
  return v;
}

/// Energy buffer of the shape of `n` outputs.
std::vector<float> energy_of(std::size_t n) { return std::vector<float>(n, 0.0f); }

}  // namespace

// The rounding model. Every output element here is a sum of terms t_j (w_j v_j for attention,
// x_i w_i for a GEMM, S_ij q_i for the delta rule). Two implementations of it see the same
// BF16 or FP32 inputs and differ only in how they round: if each term is off by an independent
// relative error uniform in [-u, u], the difference has variance (u^2 / 3) sum_j t_j^2 -- the
// element's rounding energy, which the plain twin returns (decode_ref.h). The unit u is:
//  - BF16 weights (2^-8: BF16 keeps 8 significant bits, so rounding to nearest is off by at
//    most half an ulp, 2^-8 of the value) where one side rounds the softmax weights to BF16
//    before the value sum (a GEMM taking BF16 operands: the two-GEMM MLA kernel did);
//  - FP32 reassociation: a sum of n FP32 terms in another order is off by about 2^-24 sqrt(n)
//    relative RMS (the stochastic rounding-error model, Higham, Accuracy and Stability, 2.8),
//    for the dot product behind each weight and for the sum over terms; x 4 for the tree shape
//    and x 2 for the two sides: 8 x 2^-24 (sqrt(dot) + sqrt(sum));
//  - exp: a GPU's __expf is within 2 + floor(1.173 |x|) ulp (CUDA C Programming Guide,
//    intrinsic functions); softmax arguments here stay under 10 in magnitude: 13 ulp < 2^-20.
// Uniform in [-u, u] overstates the mean square: values spread over a binade are rounded by
// about u^2 / 6 (measured: BF16 weights at 32K tokens reach half the modelled NMSE). An element
// passes when |got - ref| <= kSigmas (8) modelled standard deviations (a sum of bounded terms: the
// tail past 8 sigma is below 1e-14), and the tensor when its NMSE is at most 2x the modelled NMSE
// sum sigma^2 / sum ref^2. So the bound follows the case's format and size: for BF16 weights
// it is the BF16 limit (2^-16 / 3 x 2 x sum t^2 / sum ref^2: 1.7e-6 at 32K tokens of MLA
// records), for FP32 kernels 1e-8 or below, while dropping one of L tokens moves the NMSE by
// about 1/L (MLA at 32K: 5.4e-6, GQA at 64K: 2.5e-5, kernels_test.cpp). A delta-rule state is a
// running sum: its energy accumulates over the steps (decode_ref.cpp).
double rounding_unit(long dot, long sum, bool exp, bool bf16_weights) {
  const double fp32 = std::ldexp(1.0, -24);
  double u = 8 * fp32 * (std::sqrt(double(dot)) + std::sqrt(double(sum)));
  if (exp) u += std::ldexp(1.0, -20);
  if (bf16_weights) u += std::ldexp(1.0, -8);
  return u;
}

checked_output with_tolerance(std::string name, std::vector<float> values,
                              const std::vector<float>& energy, double unit, std::string why) {
  checked_output c{std::move(name), std::move(values), {}, 0, unit, std::move(why)};
  c.sigma.resize(c.values.size());
  double var = 0, den = 0;
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    // A floor of one FP32 ulp of the value, so a zero-energy element still has a bound.
    double s = std::max(unit / std::sqrt(3.0) * std::sqrt(double(energy[i])),
                        std::ldexp(std::fabs(double(c.values[i])), -24) + 1e-30);
    c.sigma[i] = static_cast<float>(s);
    var += s * s;
    den += double(c.values[i]) * c.values[i];
  }
  c.nmse_max = 2 * (den > 0 ? var / den : var);
  return c;
}

checked_output gqa_reference(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v,
                             const gqa_decode_params& p) {
  const std::size_t n = sz(long(p.batch) * p.q_heads * p.head_dim);
  std::vector<float> out(n), e = energy_of(n);
  gqa_decode_ref(q, k, v, out.data(), p, e.data());
  return with_tolerance("out", std::move(out), e, rounding_unit(p.head_dim, p.length, true, false),
                        "FP32 reassociation (dot head_dim, sum length) + exp");
}

checked_output mla_reference(const bf16_bits* q, const bf16_bits* cache,
                             const mla_decode_params& p) {
  const std::size_t n = sz(long(p.batch) * p.heads * p.rank);
  std::vector<float> out(n), e = energy_of(n);
  mla_decode_ref(q, cache, out.data(), p, e.data());
  return with_tolerance("out", std::move(out), e,
                        rounding_unit(p.rank + p.rope, p.length, true, false),
                        "FP32 reassociation (dot rank + rope, sum length) + exp");
}

checked_output sparse_reference(const bf16_bits* q, const bf16_bits* window,
                                const bf16_bits* entries, const int* selected,
                                const sparse_decode_params& p) {
  const std::size_t n = sz(long(p.batch) * p.heads * p.width);
  std::vector<float> out(n), e = energy_of(n);
  sparse_decode_ref(q, window, entries, selected, out.data(), p, e.data());
  return with_tolerance("out", std::move(out), e,
                        rounding_unit(p.width, p.window + p.selected, true, false),
                        "FP32 reassociation (dot width, sum window + top-k) + exp");
}

checked_output moe_reference(const bf16_bits* x, const bf16_bits* w, const moe_gemm_params& p) {
  const std::size_t n = sz(long(p.offsets[p.experts]) * p.out);
  std::vector<float> y(n), e = energy_of(n);
  moe_gemm_ref(x, w, y.data(), p, e.data());
  return with_tolerance("y", std::move(y), e, rounding_unit(1, p.in, false, false),
                        "FP32 reassociation (sum over the input width)");
}

std::vector<checked_output> delta_step_reference(const float* q, const float* k, const float* v,
                                                 const float* log_decay, const float* beta,
                                                 std::vector<float>& state,
                                                 const delta_step_params& p, double unit,
                                                 std::vector<float> se) {
  const std::size_t n = sz(long(p.batch) * p.heads * p.dv);
  std::vector<float> out(n), e = energy_of(n);
  if (se.size() != state.size()) se = energy_of(state.size());
  delta_step_ref(q, k, v, log_decay, beta, state.data(), out.data(), p, e.data(), se.data());
  std::string why = "FP32 reassociation (dot d_k, sum d_k) + exp";
  if (unit == 0)
    unit = rounding_unit(p.dk, p.dk, true, false);
  else
    why = "the chunked prefill's unit: the state carries its rounding";
  return {with_tolerance("out", std::move(out), e, unit, why),
          with_tolerance("state", state, se, unit, why)};
}

case_data make_case(const case_shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  case_data c;
  c.shape = s;
  const long B = s.batch;
  if (s.kernel == "gqa_decode" || s.kernel == "gqa_decode_paged") {
    if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) throw std::invalid_argument("gqa heads");
    const long kv = B * s.length * s.kv_heads * s.head_dim;
    c.bf16["q"] = random_bf16(rng, B * s.q_heads * s.head_dim);
    c.bf16["k"] = random_bf16(rng, kv);
    c.bf16["v"] = random_bf16(rng, kv);
    c.gqa = {
        s.batch,    s.q_heads, s.kv_heads,
        s.head_dim, s.length,  0,
        0,          nullptr,   split_tokens_for(s.batch, s.kv_heads, s.length, s.split_blocks)};
    checked_output ref =
        gqa_reference(c.bf16["q"].data(), c.bf16["k"].data(), c.bf16["v"].data(), c.gqa);
    if (s.kernel == "gqa_decode_paged") {
      // The same tokens scattered over pages in a shuffled order; the contiguous copies go.
      const int pt = s.page_tokens, pages = (s.length + pt - 1) / pt;
      std::vector<int> table(sz(B * pages));
      for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int>(i);
      std::shuffle(table.begin(), table.end(), rng);
      const long row = s.kv_heads * s.head_dim;
      std::vector<bf16_bits> pk(sz(B * pages * pt * row), float_to_bf16(NAN)), pv = pk;
      for (long b = 0; b < B; ++b)
        for (long t = 0; t < s.length; ++t) {
          long to = (table[sz(b * pages + t / pt)] * long(pt) + t % pt) * row;
          std::copy_n(c.bf16["k"].begin() + (b * s.length + t) * row, row, pk.begin() + to);
          std::copy_n(c.bf16["v"].begin() + (b * s.length + t) * row, row, pv.begin() + to);
        }
      c.bf16["k"] = std::move(pk);
      c.bf16["v"] = std::move(pv);
      c.i32["page_table"] = table;
      c.gqa.page_tokens = pt;
      c.gqa.pages_per_request = pages;
    }
    c.reference.push_back(std::move(ref));
  } else if (s.kernel == "mla_decode") {
    const int w = s.rank + s.rope;
    c.bf16["q"] = random_bf16(rng, B * s.heads * w);
    c.bf16["cache"] = random_bf16(rng, B * s.length * w);
    c.mla = {s.batch, s.heads, s.rank, s.rope, s.length};
    c.reference.push_back(mla_reference(c.bf16["q"].data(), c.bf16["cache"].data(), c.mla));
  } else if (s.kernel == "delta_step" || s.kernel == "delta_chunk_then_step") {
    const long n = B * s.heads;
    c.delta = {s.batch, s.heads, s.dk, s.dv};
    std::vector<float> state;
    double unit = 0;             // the step's own model, or the prefill's when it continues one
    std::vector<float> carried;  // the prefill state's energy, which the step continues
    if (s.kernel == "delta_chunk_then_step") {
      // A chunked prefill of `tokens` positions (batch 1) whose final state the step consumes.
      if (s.batch != 1) throw std::invalid_argument("delta_chunk_then_step runs batch 1");
      const long T = s.tokens;
      c.f32["cq"] = random_f32(rng, s.heads * T * s.dk, -0.2f, 0.2f);
      c.f32["ck"] = random_f32(rng, s.heads * T * s.dk, -0.2f, 0.2f);
      c.f32["cv"] = random_f32(rng, s.heads * T * s.dv, -1, 1);
      c.f32["clog_decay"] = random_f32(rng, s.heads * T * s.dk, -0.05f, 0);
      c.f32["cbeta"] = random_f32(rng, s.heads * T, 0, 1);
      c.chunk = {s.heads, s.tokens, s.dk, s.dv, s.chunk};
      state.assign(sz(n * s.dk * s.dv), 0.0f);
      c.f32["state"] = state;  // the prefill starts from zeros
      std::vector<float> cout(sz(s.heads * T * s.dv)), oe = energy_of(cout.size()),
                                                       se = energy_of(state.size());
      delta_chunk_ref(c.f32["cq"].data(), c.f32["ck"].data(), c.f32["cv"].data(),
                      c.f32["clog_decay"].data(), c.f32["cbeta"].data(), state.data(), cout.data(),
                      c.chunk, oe.data(), se.data());
      // Chunked vs recurrent regroups the sums through e^(G_i - G_j) and the chunk's
      // substitution: dots of d_k + chunk terms, sums over the prefill's tokens.
      unit = rounding_unit(s.dk + s.chunk, T, true, false);
      const std::string why = "chunked vs recurrent: FP32 (dot d_k + chunk, sum tokens) + exp";
      c.reference.push_back(with_tolerance("prefill_out", cout, oe, unit, why));
      c.reference.push_back(with_tolerance("prefill_state", state, se, unit, why));
      carried = se;
    } else {
      state = random_f32(rng, n * s.dk * s.dv, -0.5f, 0.5f);
      c.f32["state"] = state;
    }
    c.f32["q"] = random_f32(rng, n * s.dk, -0.3f, 0.3f);
    c.f32["k"] = random_f32(rng, n * s.dk, -0.3f, 0.3f);
    c.f32["v"] = random_f32(rng, n * s.dv, -1, 1);
    c.f32["log_decay"] = random_f32(rng, n * s.dk, -0.1f, 0);
    c.f32["beta"] = random_f32(rng, n, 0, 1);
    for (checked_output& o : delta_step_reference(
             c.f32["q"].data(), c.f32["k"].data(), c.f32["v"].data(), c.f32["log_decay"].data(),
             c.f32["beta"].data(), state, c.delta, unit, carried))
      c.reference.push_back(std::move(o));
  } else if (s.kernel == "sparse_decode") {
    c.bf16["q"] = random_bf16(rng, B * s.heads * s.width);
    c.bf16["window"] = random_bf16(rng, B * s.window * s.width);
    c.bf16["entries"] = random_bf16(rng, B * s.n_entries * s.width);
    if (s.selected > s.n_entries) throw std::invalid_argument("sparse: selected > entries");
    std::vector<int> sel(sz(B * s.selected)), all(sz(s.n_entries));
    for (long b = 0; b < B; ++b) {  // distinct entries per request, in a random order
      for (int i = 0; i < s.n_entries; ++i) all[sz(i)] = i;
      std::shuffle(all.begin(), all.end(), rng);
      std::copy_n(all.begin(), s.selected, sel.begin() + b * s.selected);
    }
    c.i32["selected"] = sel;
    c.sparse = {s.batch, s.heads, s.width, s.window, s.n_entries, s.selected};
    c.reference.push_back(sparse_reference(c.bf16["q"].data(), c.bf16["window"].data(),
                                           c.bf16["entries"].data(), sel.data(), c.sparse));
  } else if (s.kernel == "moe_gemm") {
    std::vector<int> offsets = disjoint_routing(s.batch, s.top_k, s.experts);
    c.moe_rows = offsets.back();
    c.i32["offsets"] = offsets;
    c.bf16["x"] = random_bf16(rng, long(c.moe_rows) * s.in);
    // Experts no row uses are never read: NaN there fails the check if the kernel reads them.
    std::vector<bf16_bits> w(sz(long(s.experts) * s.in * s.out), float_to_bf16(NAN));
    std::uniform_real_distribution<float> u(-1, 1);
    for (int e = 0; e < s.experts; ++e)
      if (offsets[sz(e + 1)] > offsets[sz(e)])
        for (long i = 0; i < long(s.in) * s.out; ++i)
          w[sz(long(e) * s.in * s.out + i)] = float_to_bf16(u(rng));
    c.bf16["w"] = std::move(w);
    c.moe = {s.experts, s.in, s.out, nullptr};
    moe_gemm_params hp = c.moe;
    hp.offsets = c.i32["offsets"].data();
    c.reference.push_back(moe_reference(c.bf16["x"].data(), c.bf16["w"].data(), hp));
  } else {
    throw std::invalid_argument("unknown kernel '" + s.kernel + "'");
  }
  return c;
}

const char* fault_name(fault f) {
  switch (f) {
    case fault::none:
      return "none";
    case fault::drop_token:
      return "drop one token";
    case fault::swap_heads:
      return "swap two heads";
    case fault::skip_decay:
      return "skip a decay";
    case fault::unwritten:
      return "leave an output unwritten";
  }
  return "?";
}

std::vector<fault> faults_of(const std::string& kernel) {
  if (kernel == "delta_step") return {fault::swap_heads, fault::skip_decay, fault::unwritten};
  if (kernel == "delta_chunk_then_step")
    return {fault::drop_token, fault::swap_heads, fault::skip_decay, fault::unwritten};
  return {fault::drop_token, fault::swap_heads, fault::unwritten};
}

namespace {

/// Rows [outer, n, row] without the last of the n: the layout of a run one token shorter.
template <typename T>
std::vector<T> drop_last(const std::vector<T>& v, long outer, long n, long row) {
  std::vector<T> r;
  r.reserve(sz(outer * (n - 1) * row));
  for (long o = 0; o < outer; ++o)
    r.insert(r.end(), v.begin() + o * n * row, v.begin() + (o * n + n - 1) * row);
  return r;
}

/// Exchanges heads 0 and 1 of request 0 in an output laid out [.., heads, per_head].
void swap_first_heads(std::vector<float>& v, long per_head) {
  std::swap_ranges(v.begin(), v.begin() + per_head, v.begin() + per_head);
}

}  // namespace

std::vector<std::vector<float>> blocked_outputs(const case_data& c, fault f) {
  const case_shape& s = c.shape;
  auto size_of = [&](const std::string& name) {
    for (const checked_output& r : c.reference)
      if (r.name == name) return r.values.size();
    return std::size_t(0);
  };
  const bool drop = f == fault::drop_token;
  std::vector<std::vector<float>> outs;
  if (s.kernel == "gqa_decode" || s.kernel == "gqa_decode_paged") {
    std::vector<float> out(size_of("out"));
    gqa_decode_params p = c.gqa;
    if (p.page_tokens) p.page_table = c.i32.at("page_table").data();
    std::vector<bf16_bits> k = c.bf16.at("k"), v = c.bf16.at("v");
    if (drop) {  // paged: the table still covers the shorter run; contiguous: re-laid out
      if (!p.page_tokens) {
        k = drop_last(k, s.batch, s.length, long(s.kv_heads) * s.head_dim);
        v = drop_last(v, s.batch, s.length, long(s.kv_heads) * s.head_dim);
      }
      p.length -= 1;
    }
    gqa_decode_blocked(c.bf16.at("q").data(), k.data(), v.data(), out.data(), p);
    if (f == fault::swap_heads) swap_first_heads(out, s.head_dim);
    outs = {out};
  } else if (s.kernel == "mla_decode") {
    std::vector<float> out(size_of("out"));
    mla_decode_params p = c.mla;
    std::vector<bf16_bits> cache = c.bf16.at("cache");
    if (drop) cache = drop_last(cache, s.batch, s.length, s.rank + s.rope), p.length -= 1;
    mla_decode_blocked(c.bf16.at("q").data(), cache.data(), out.data(), p);
    if (f == fault::swap_heads) swap_first_heads(out, s.rank);
    outs = {out};
  } else if (s.kernel == "delta_step" || s.kernel == "delta_chunk_then_step") {
    std::vector<float> state = c.f32.at("state");
    std::vector<float> log_decay = c.f32.at("log_decay");
    if (s.kernel == "delta_chunk_then_step") {
      std::vector<float> cout(size_of("prefill_out"));
      delta_chunk_params p = c.chunk;
      std::vector<float> cq = c.f32.at("cq"), ck = c.f32.at("ck"), cv = c.f32.at("cv"),
                         cl = c.f32.at("clog_decay"), cb = c.f32.at("cbeta");
      if (f == fault::skip_decay)  // head 0's last prefill position keeps its state undecayed
        std::fill_n(cl.begin() + long(s.tokens - 1) * s.dk, s.dk, 0.0f);
      if (drop) {
        cq = drop_last(cq, s.heads, s.tokens, s.dk), ck = drop_last(ck, s.heads, s.tokens, s.dk);
        cv = drop_last(cv, s.heads, s.tokens, s.dv), cl = drop_last(cl, s.heads, s.tokens, s.dk);
        cb = drop_last(cb, s.heads, s.tokens, 1);
        p.tokens -= 1;
        cout.resize(sz(long(s.heads) * p.tokens * s.dv));
      }
      delta_chunk_blocked(cq.data(), ck.data(), cv.data(), cl.data(), cb.data(), state.data(),
                          cout.data(), p);
      if (drop) {  // the missing position's outputs read as zeros
        std::vector<float> full(size_of("prefill_out"), 0.0f);
        for (long h = 0; h < s.heads; ++h)
          std::copy_n(cout.begin() + h * p.tokens * s.dv, long(p.tokens) * s.dv,
                      full.begin() + h * s.tokens * s.dv);
        cout = std::move(full);
      }
      outs.push_back(cout);
      outs.push_back(state);
    } else if (f == fault::skip_decay) {
      std::fill_n(log_decay.begin(), s.dk, 0.0f);  // request 0, head 0: no decay this step
    }
    std::vector<float> out(size_of("out"));
    delta_step_blocked(c.f32.at("q").data(), c.f32.at("k").data(), c.f32.at("v").data(),
                       log_decay.data(), c.f32.at("beta").data(), state.data(), out.data(),
                       c.delta);
    outs.push_back(out);
    outs.push_back(state);
    if (f == fault::swap_heads)
      for (std::size_t i = 0; i < outs.size(); i += 2) {  // [out, state] pairs
        const bool prefill = s.kernel == "delta_chunk_then_step" && i == 0;
        swap_first_heads(outs[i], prefill ? long(s.tokens) * s.dv : s.dv);
        swap_first_heads(outs[i + 1], long(s.dk) * s.dv);
      }
  } else if (s.kernel == "sparse_decode") {
    std::vector<float> out(size_of("out"));
    sparse_decode_params p = c.sparse;
    std::vector<int> sel = c.i32.at("selected");
    if (drop) sel = drop_last(sel, s.batch, s.selected, 1), p.selected -= 1;
    sparse_decode_blocked(c.bf16.at("q").data(), c.bf16.at("window").data(),
                          c.bf16.at("entries").data(), sel.data(), out.data(), p);
    if (f == fault::swap_heads) swap_first_heads(out, s.width);
    outs = {out};
  } else if (s.kernel == "moe_gemm") {
    std::vector<float> y(size_of("y"), NAN);  // poisoned, as the GPU output is
    moe_gemm_params p = c.moe;
    std::vector<int> offsets = c.i32.at("offsets");
    std::vector<bf16_bits> w = c.bf16.at("w");
    if (f == fault::swap_heads) {  // the first two experts with rows exchange their weights
      std::vector<long> used;
      for (int e = 0; e < s.experts && used.size() < 2; ++e)
        if (offsets[sz(e + 1)] > offsets[sz(e)]) used.push_back(e);
      const long m = long(s.in) * s.out;
      if (used.size() == 2)
        std::swap_ranges(w.begin() + used[0] * m, w.begin() + (used[0] + 1) * m,
                         w.begin() + used[1] * m);
    }
    if (drop) {  // the last routed row (of the last expert with rows) is never multiplied
      int last = s.experts - 1;
      while (last > 0 && offsets[sz(last + 1)] == offsets[sz(last)]) --last;
      for (int e = last + 1; e <= s.experts; ++e) offsets[sz(e)] -= 1;
    }
    p.offsets = offsets.data();
    moe_gemm_blocked(c.bf16.at("x").data(), w.data(), y.data(), p);
    outs = {y};
  } else {
    throw std::invalid_argument("unknown kernel '" + s.kernel + "'");
  }
  if (f == fault::unwritten) outs.front().back() = NAN;  // the poison left in place
  return outs;
}

comparison compare_outputs(const std::vector<float>& got, const checked_output& ref) {
  comparison r;
  if (got.size() != ref.values.size()) {
    r.out_of_tolerance = static_cast<long>(std::max(got.size(), ref.values.size()));
    return r;
  }
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref.values[i])) {
      ++r.non_finite;
      continue;
    }
    double d = std::fabs(double(got[i]) - ref.values[i]);
    r.max_abs_error = std::max(r.max_abs_error, d);
    const double sigma = i < ref.sigma.size() ? double(ref.sigma[i]) : 0.0;
    if (sigma > 0) r.max_sigmas = std::max(r.max_sigmas, d / sigma);
    if (!(d <= kSigmas * sigma)) ++r.out_of_tolerance;
    num += d * d;
    den += double(ref.values[i]) * ref.values[i];
  }
  r.nmse = den > 0 ? num / den : num;
  r.pass = r.out_of_tolerance == 0 && r.non_finite == 0 && r.nmse <= ref.nmse_max;
  return r;
}

std::vector<int> disjoint_routing(int tokens, int top_k, int experts) {
  std::vector<int> count(sz(experts), 0);
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < top_k; ++j) ++count[sz((long(t) * top_k + j) % experts)];
  std::vector<int> offsets(sz(experts + 1), 0);
  for (int e = 0; e < experts; ++e) offsets[sz(e + 1)] = offsets[sz(e)] + count[sz(e)];
  return offsets;
}

}  // namespace calc::kernels
