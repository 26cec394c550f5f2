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

// Tolerances. Inputs are BF16 (or FP32) and every twin and kernel accumulates in FP32, so the
// sides differ by FP32 reassociation only: errors near 1e-6 relative, while an index, mask or
// softmax mistake moves outputs by O(0.1). The per-element bound atol + |ref| 2^-8 and an NMSE of
// 1e-6 leave two orders of margin on the first and catch the second.
constexpr const char* kReassociation = "FP32 reassociation only (same BF16 inputs, FP32 sums)";

}  // namespace

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
    c.gqa = {s.batch, s.q_heads, s.kv_heads, s.head_dim, s.length, 0, 0, nullptr,
             split_tokens_for(s.batch, s.kv_heads, s.length, s.split_blocks)};
    std::vector<float> ref(sz(B * s.q_heads * s.head_dim));
    gqa_decode_ref(c.bf16["q"].data(), c.bf16["k"].data(), c.bf16["v"].data(), ref.data(), c.gqa);
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
    c.reference.push_back({"out", ref, 1e-5, 1e-6, kReassociation});
  } else if (s.kernel == "mla_decode") {
    const int w = s.rank + s.rope;
    c.bf16["q"] = random_bf16(rng, B * s.heads * w);
    c.bf16["cache"] = random_bf16(rng, B * s.length * w);
    c.mla = {s.batch, s.heads, s.rank, s.rope, s.length};
    std::vector<float> ref(sz(B * s.heads * s.rank));
    mla_decode_ref(c.bf16["q"].data(), c.bf16["cache"].data(), ref.data(), c.mla);
    // The kernel's value GEMM takes the softmax weights in BF16: each weight is off by at most
    // 2^-9 of itself, so an output by at most 2^-9 max|c| = 2^-9 (|c| <= 1), and the NMSE by
    // about (2^-9)^2 / 3 = 1.3e-6: bounds 2^-9 and 1e-5.
    c.reference.push_back({"out", ref, 1.0 / 512, 1e-5,
                           "softmax weights rounded to BF16 before the value GEMM: |err| <= 2^-9"});
  } else if (s.kernel == "delta_step" || s.kernel == "delta_chunk_then_step") {
    const long n = B * s.heads;
    c.delta = {s.batch, s.heads, s.dk, s.dv};
    std::vector<float> state;
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
      std::vector<float> cout(sz(s.heads * T * s.dv));
      delta_chunk_ref(c.f32["cq"].data(), c.f32["ck"].data(), c.f32["cv"].data(),
                      c.f32["clog_decay"].data(), c.f32["cbeta"].data(), state.data(),
                      cout.data(), c.chunk);
      // Chunked vs recurrent reassociates sums through e^(G_i - G_j): a looser absolute bound.
      c.reference.push_back({"prefill_out", cout, 1e-4, 1e-6,
                             "chunked vs recurrent: FP32 sums regrouped through e^(G_i - G_j)"});
      c.reference.push_back({"prefill_state", state, 1e-4, 1e-6,
                             "chunked vs recurrent: FP32 sums regrouped through e^(G_i - G_j)"});
    } else {
      state = random_f32(rng, n * s.dk * s.dv, -0.5f, 0.5f);
      c.f32["state"] = state;
    }
    c.f32["q"] = random_f32(rng, n * s.dk, -0.3f, 0.3f);
    c.f32["k"] = random_f32(rng, n * s.dk, -0.3f, 0.3f);
    c.f32["v"] = random_f32(rng, n * s.dv, -1, 1);
    c.f32["log_decay"] = random_f32(rng, n * s.dk, -0.1f, 0);
    c.f32["beta"] = random_f32(rng, n, 0, 1);
    std::vector<float> out(sz(n * s.dv));
    delta_step_ref(c.f32["q"].data(), c.f32["k"].data(), c.f32["v"].data(),
                   c.f32["log_decay"].data(), c.f32["beta"].data(), state.data(), out.data(),
                   c.delta);
    const double tol = s.kernel == "delta_step" ? 1e-5 : 1e-4;
    c.reference.push_back({"out", out, tol, 1e-6, kReassociation});
    c.reference.push_back({"state", state, tol, 1e-6, kReassociation});
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
    std::vector<float> ref(sz(B * s.heads * s.width));
    sparse_decode_ref(c.bf16["q"].data(), c.bf16["window"].data(), c.bf16["entries"].data(),
                      sel.data(), ref.data(), c.sparse);
    c.reference.push_back({"out", ref, 1e-5, 1e-6, kReassociation});
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
    std::vector<float> ref(sz(long(c.moe_rows) * s.out));
    moe_gemm_ref(c.bf16["x"].data(), c.bf16["w"].data(), ref.data(), hp);
    c.reference.push_back({"y", ref, 1e-5, 1e-6, kReassociation});
  } else {
    throw std::invalid_argument("unknown kernel '" + s.kernel + "'");
  }
  return c;
}

std::vector<std::vector<float>> blocked_outputs(const case_data& c) {
  const case_shape& s = c.shape;
  auto size_of = [&](const std::string& name) {
    for (const checked_output& r : c.reference)
      if (r.name == name) return r.values.size();
    return std::size_t(0);
  };
  if (s.kernel == "gqa_decode" || s.kernel == "gqa_decode_paged") {
    std::vector<float> out(size_of("out"));
    gqa_decode_params p = c.gqa;
    if (p.page_tokens) p.page_table = c.i32.at("page_table").data();
    gqa_decode_blocked(c.bf16.at("q").data(), c.bf16.at("k").data(), c.bf16.at("v").data(),
                       out.data(), p);
    return {out};
  }
  if (s.kernel == "mla_decode") {
    std::vector<float> out(size_of("out"));
    mla_decode_blocked(c.bf16.at("q").data(), c.bf16.at("cache").data(), out.data(), c.mla);
    return {out};
  }
  if (s.kernel == "delta_step" || s.kernel == "delta_chunk_then_step") {
    std::vector<std::vector<float>> outs;
    std::vector<float> state = c.f32.at("state");
    if (s.kernel == "delta_chunk_then_step") {
      // The chunked prefill has no second twin: the plain recurrence is its reference.
      std::vector<float> cout(size_of("prefill_out"));
      delta_chunk_ref(c.f32.at("cq").data(), c.f32.at("ck").data(), c.f32.at("cv").data(),
                      c.f32.at("clog_decay").data(), c.f32.at("cbeta").data(), state.data(),
                      cout.data(), c.chunk);
      outs.push_back(cout);
      outs.push_back(state);
    }
    std::vector<float> out(size_of("out"));
    delta_step_blocked(c.f32.at("q").data(), c.f32.at("k").data(), c.f32.at("v").data(),
                       c.f32.at("log_decay").data(), c.f32.at("beta").data(), state.data(),
                       out.data(), c.delta);
    outs.push_back(out);
    outs.push_back(state);
    return outs;
  }
  if (s.kernel == "sparse_decode") {
    // The sparse kernel's design is the plain twin's (scores, then softmax and aggregate).
    std::vector<float> out(size_of("out"));
    sparse_decode_ref(c.bf16.at("q").data(), c.bf16.at("window").data(),
                      c.bf16.at("entries").data(), c.i32.at("selected").data(), out.data(),
                      c.sparse);
    return {out};
  }
  if (s.kernel == "moe_gemm") {
    std::vector<float> y(size_of("y"));
    moe_gemm_params p = c.moe;
    p.offsets = c.i32.at("offsets").data();
    moe_gemm_blocked(c.bf16.at("x").data(), c.bf16.at("w").data(), y.data(), p);
    return {y};
  }
  throw std::invalid_argument("unknown kernel '" + s.kernel + "'");
}

comparison compare_outputs(const std::vector<float>& got, const checked_output& ref) {
  comparison r;
  if (got.size() != ref.values.size()) {
    r.out_of_tolerance = static_cast<long>(std::max(got.size(), ref.values.size()));
    return r;
  }
  const double eps = 1.0 / 256;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref.values[i])) {
      ++r.non_finite;
      continue;
    }
    double d = std::fabs(double(got[i]) - ref.values[i]);
    r.max_abs_error = std::max(r.max_abs_error, d);
    if (d > ref.atol + std::fabs(ref.values[i]) * eps) ++r.out_of_tolerance;
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
