// The reference executor: CPU twins count what they execute, scaling keeps structure, and the
// validation of a small model is exact.
#include <doctest/doctest.h>

#include <random>

#include "exec/scale.h"
#include "exec/validate.h"
#include "graph/graph.h"
#include "ref.h"
#include "spec/model_reader.h"
#include "tally/rules.h"
#include "tally/tally.h"

using namespace calc;
using ref::mat;

namespace {

mat random(std::mt19937& rng, int r, int c, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  mat m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

}  // namespace

TEST_CASE("the counting GEMM adds 2 m k n") {
  std::mt19937 rng(1);
  std::int64_t flops = 0;
  mat y = ref::gemm(random(rng, 3, 5), random(rng, 5, 7), &flops);
  CHECK(flops == 2 * 3 * 5 * 7);
  CHECK(y.rows() == 3);
  CHECK(y.cols() == 7);
}

TEST_CASE("BF16 rounding is to nearest, ties to even") {
  CHECK(ref::bf16_round(1.0f) == 1.0f);
  CHECK(ref::bf16_round(1.0f + 1.0f / 256) == 1.0f);  // halfway between 1 and 1+2^-7: even
  CHECK(ref::bf16_round(1.0f + 3.0f / 256) == 1.0f + 2.0f / 128);
  ref::state_buffer b(ref::state_buffer::format::bf16);
  b.resize(10);
  CHECK(b.bytes() == 20);
  b.set(3, 0.1f);
  CHECK(b.get(3) == ref::bf16_round(0.1f));
  ref::state_buffer f(ref::state_buffer::format::fp32);
  f.resize(10);
  CHECK(f.bytes() == 40);
}

TEST_CASE("top-k by partial sort equals the brute-force sort") {
  std::mt19937 rng(7);
  std::vector<float> s(1000);
  for (float& v : s) v = std::uniform_real_distribution<float>(0, 1)(rng);
  s[10] = s[20];  // a tie resolves to the lower index in both
  CHECK(ref::top_k(s, 37) == ref::top_k_sorted(s, 37));
  CHECK(ref::top_k(s, 5000).size() == 1000);
}

TEST_CASE("chunked delta rule = recurrent, and counts match the tally's chunk rules") {
  std::mt19937 rng(3);
  const int P = 150, dk = 8, dv = 6, C = 64;
  mat q = random(rng, P, dk), k = random(rng, P, dk), v = random(rng, P, dv);
  ref::l2_normalize_rows(q);
  ref::l2_normalize_rows(k);
  mat ld = random(rng, P, dk, 0.05f).array() - 0.05f;  // log decays <= 0
  ref::vec beta = (random(rng, P, 1, 0.5f).array() + 0.5f).matrix();
  mat S0 = mat::Zero(dk, dv), S1 = S0, S2 = S0;
  std::int64_t step = 0, matrix = 0, solve = 0, vmatrix = 0, vsolve = 0;
  mat a = ref::recurrent_delta(q, k, v, ld, beta, S0, &step);
  mat b = ref::chunked_delta(q, k, v, ld, beta, S1, C, true, &matrix, &solve);
  mat c = ref::chunked_delta(q, k, v, ld, beta, S2, C, false, &vmatrix, &vsolve);
  CHECK((a - b).norm() / a.norm() < 1e-5);
  CHECK((a - c).norm() / a.norm() < 1e-5);
  CHECK((S0 - S1).norm() / S0.norm() < 1e-5);
  CHECK(step == 6LL * P * dk * dv);
  execution_spec e;
  e.chunk = C;
  e.chunk_flops = chunk_rule::padded_gemms;
  CHECK(matrix == chunk_work(e, P, dk, dv).value());
  e.chunk_flops = chunk_rule::valid_triangles;
  CHECK(vmatrix + vsolve == chunk_work(e, P, dk, dv).value());
}

TEST_CASE("scaling divides widths and keeps structure") {
  model_spec k3 = read_model_file(resolve_model_path("kimi-k3"));
  model_spec s = scale_spec(k3, 64);
  CHECK(s.hidden == 112);
  CHECK(s.layers.count == 93);
  CHECK(s.execution.chunk == 64);  // chunk sizes kept
  const auto& moe = std::get<ffn_moe>(*s.layers.base.ffn);
  CHECK(moe.experts == 16);  // 896 / 64, never below top-k
  CHECK(moe.top_k == 16);
  model_spec q = scale_spec(read_model_file(resolve_model_path("qwen3-8b")), 16);
  const auto& a = std::get<attention_gqa>(*q.layers.base.attention);
  CHECK(a.q_heads % a.kv_heads == 0);
  model_spec v = scale_spec(read_model_file(resolve_model_path("deepseek-v4.1-flash")), 16);
  const auto& d = std::get<attention_dsa>(*v.layers.base.attention);
  CHECK(d.window == 128);
  CHECK(d.global->top_k == 512);
  CHECK((d.heads * d.head_dim) % d.o_groups == 0);
}

TEST_CASE("validation of a scaled model is exact, and a broken tally would show") {
  model_spec spec = read_model_file(resolve_model_path("qwen3.6-35b-a3b"));
  validation v = validate_model(spec, 32, 40, 2, 11);
  CHECK(v.pass);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  // Kernels that skip the masked half while the tally assumes the eager rectangle disagree:
  // the comparison can fail.
  model_spec causal = scale_spec(spec, 32);
  causal.execution.pairs = pair_counting::causal;
  model_spec rect = scale_spec(spec, 32);
  measured_run run = execute(causal, 40, 0, 11);
  graph g = build_graph(rect);
  forward_tally f = tally_forward(g, make_call(rect, 1, 0, 40));
  CHECK(run.work.interaction < f.interaction_flops.value());
  CHECK(run.work.linear == f.linear_flops.value());
}

TEST_CASE("equivalences hold with every row through the head and with the eager rectangle") {
  // --vocab-rows all: the full call returns a row per token and the cached decode one; the
  // comparison took the decode's one row against the whole matrix and read past it.
  model_spec dense = read_model_file(resolve_model_path("qwen3-8b"));
  model_spec all_rows = scale_spec(dense, 64);
  all_rows.execution.vocab_all_rows = true;
  for (const equivalence& e : check_equivalences(all_rows, 16, 2, 7)) {
    CAPTURE(e.name);
    CHECK(e.pass);
    CHECK(e.nmse < 1e-6);
  }
  // MLA under --pairs rectangular: eager attention scores the call's whole rectangle, masked
  // afterwards, as the tally counts; the output is the causal one.
  model_spec mla = scale_spec(read_model_file(resolve_model_path("deepseek-v3")), 64);
  model_spec rect = mla, causal = mla;
  rect.execution.pairs = pair_counting::rectangular;
  causal.execution.pairs = pair_counting::causal;
  validation v = validate_model(rect, 1, 24, 1, 5);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  measured_run a = execute(rect, 24, 0, 5), b = execute(causal, 24, 0, 5);
  CHECK(a.work.interaction > b.work.interaction);
  // The masked scores add zeros: the same logits up to float32 summation order.
  CHECK((a.last_logits - b.last_logits).squaredNorm() / b.last_logits.squaredNorm() < 1e-8);
}
