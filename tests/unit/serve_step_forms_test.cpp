// The serving step's fast path (cost_step over the compiled tallies: tally/closed_form.h and
// plan/plan.h's experts_form) against its itemised oracle (cost_step_itemised over tally_forward,
// tally_state and plan_experts): every F, R, collective and row count bit-for-bit equal on random
// step shapes of every bundled model under several layouts. And plan_experts' zipf routing,
// which now shares one power among equally popular experts, against the plain per-expert sum.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "plan/plan.h"
#include "serve/step.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

using namespace calc;
using namespace calc::serve;

namespace {

struct shape_source {
  std::mt19937_64 rng{20261201};
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  /// A context: near a power of two (windows, blocks, chunks, top-k edges), small, or long.
  std::int64_t length() {
    switch (uniform(0, 3)) {
      case 0:
        return std::max<std::int64_t>(0, (std::int64_t{1} << uniform(0, 17)) + uniform(-1, 1));
      case 1:
        return uniform(0, 300);
      case 2:
        return uniform(0, 200'000);
      default:
        return uniform(0, 2'000'000);
    }
  }
  step_shape shape() {
    step_shape s;
    if (uniform(0, 3) > 0) {
      s.decode = uniform(1, 1024);
      s.decode_context = length();
    }
    if (s.decode == 0 || uniform(0, 1) == 0) {
      s.prefill = std::max<std::int64_t>(1, uniform(0, 1) == 0 ? uniform(1, 16384) : length());
      s.prefill_context = uniform(0, 2) == 0 ? 0 : length();
      s.prefill_requests = uniform(0, 2) == 0 ? uniform(1, 8) : 1;
    }
    return s;
  }
};

/// plan_experts' zipf expectation as one sum over the experts, each term with its own power.
/// Expected distinct experts of `tokens` tokens, each picking `k` distinct of `experts` with
/// popularity ~ i^-s: expert i is among a token's k with probability min(1, c p_i), c making
/// them sum to k (the most popular capped first), independently over tokens.
double distinct_by_sum(std::int64_t experts, std::int64_t k, std::int64_t tokens, double s) {
  double norm = 0;
  for (std::int64_t i = 1; i <= experts; ++i) norm += std::pow(i, -s);
  std::vector<double> p;
  for (std::int64_t i = 1; i <= experts; ++i) p.push_back(std::pow(i, -s) / norm);
  double want = static_cast<double>(std::min(k, experts));
  std::vector<bool> capped(p.size(), false);
  for (bool again = true; again;) {  // cap whatever the scale pushes past 1, then rescale
    again = false;
    double left = want, rest = 0;
    for (std::size_t i = 0; i < p.size(); ++i) (capped[i] ? left -= 1 : rest += p[i]);
    for (std::size_t i = 0; i < p.size(); ++i)
      if (!capped[i] && rest > 0 && left / rest * p[i] >= 1) capped[i] = again = true;
    if (!again) {
      double distinct = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        double pi = capped[i] ? 1.0 : left / rest * p[i];
        distinct += 1 - std::pow(1 - pi, static_cast<double>(tokens));
      }
      return distinct;
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("serve step: the compiled tallies give every op's F and R exactly as the itemised ones") {
  std::vector<std::string> files = testing::bundled_model_files();
  REQUIRE(files.size() >= 10);
  gpu_spec h200 = find_gpu("h200");
  shape_source src;
  int compared = 0;
  for (const std::string& file : files) {
    CAPTURE(file);
    model_spec spec = read_model_file(file);
    graph g = build_graph(spec);
    bool moe = has_ffn<ffn_moe>(g);
    std::vector<serve_layout> layouts = {{}, {.tp = 8, .ep = moe ? 8 : 1}};
    if (moe) layouts.push_back({.tp = 2, .ep = 8, .dp = 4, .pp = 2});
    layouts.push_back({.tp = 4, .pp = 4});
    model_forms forms = compile_forms(g);
    for (const serve_layout& l : layouts) {
      if (!layout_problem(g, l).empty()) continue;
      CAPTURE(l.tp);
      CAPTURE(l.ep);
      CAPTURE(l.dp);
      CAPTURE(l.pp);
      deployment d = make_deployment(g, h200, l, 0, forms);
      for (int i = 0; i < 60; ++i) {
        step_shape s = src.shape();
        INFO("decode ", s.decode, " at ", s.decode_context, ", prefill ", s.prefill, " x ",
             s.prefill_requests, " at ", s.prefill_context);
        step_costs fast = cost_step(d, s);
        step_costs slow = cost_step_itemised(d, s);
        REQUIRE(fast.requests == slow.requests);
        for (std::size_t k = 0; k < op_classes; ++k) {
          CAPTURE(op_name(static_cast<op_class>(k)));
          // Bit-for-bit: the same integers reach the same double arithmetic.
          REQUIRE(fast.ops[k].flops == slow.ops[k].flops);
          REQUIRE(fast.ops[k].bytes == slow.ops[k].bytes);
          REQUIRE(fast.ops[k].collectives == slow.ops[k].collectives);
          REQUIRE(fast.ops[k].rows == slow.ops[k].rows);
        }
        ++compared;
      }
    }
  }
  CHECK(compared > 100 * static_cast<int>(files.size()));
}

TEST_CASE("serve step: a deployment given the model's forms equals one that compiles its own") {
  testing::model m("deepseek-v3");
  gpu_spec h200 = find_gpu("h200");
  deployment own = make_deployment(m.g, h200, {.tp = 8, .ep = 8});
  deployment shared = make_deployment(m.g, h200, {.tp = 8, .ep = 8}, 0, compile_forms(m.g));
  CHECK(own.dense_weight_bytes == shared.dense_weight_bytes);
  CHECK(own.routed_weight_bytes == shared.routed_weight_bytes);
  CHECK(own.moe_layers == shared.moe_layers);
  step_costs a = cost_step(own, {64, 3000, 512, 1000});
  step_costs b = cost_step(shared, {64, 3000, 512, 1000});
  for (std::size_t k = 0; k < op_classes; ++k) CHECK(a.ops[k].bytes == b.ops[k].bytes);
}

TEST_CASE("plan_experts: zipf routing equals the sum over experts of their inclusion in k") {
  for (const char* name : {"deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b"}) {
    CAPTURE(name);
    testing::model m(name);
    for (double s : {0.0, 0.7, 1.2}) {
      CAPTURE(s);
      routing r{routing::kind::zipf, s};
      experts_form form(m.g, r);
      for (std::int64_t tokens : {1, 3, 64, 1000, 65536}) {
        CAPTURE(tokens);
        experts_plan p = plan_experts(m.g, tokens, r);
        double want = distinct_by_sum(p.experts, p.top_k, tokens, s);
        CHECK(p.distinct_experts == doctest::Approx(want).epsilon(1e-12));
        CHECK(p.distinct_experts >= static_cast<double>(p.top_k) * (1 - 1e-12));
        CHECK(form.at(tokens).weight_read_bytes == p.weight_read_bytes);
        CHECK(p.layer_weight_read_bytes ==
              doctest::Approx(want * p.expert_bytes.to_double()).epsilon(1e-12));
      }
    }
    // No tokens touch no expert, under a popularity steep enough to make some certain (whose
    // log miss is -inf): 0, not 0 x -inf.
    for (double s : {0.0, 20.0}) {
      experts_plan none = experts_form(m.g, {routing::kind::zipf, s}).at(0);
      CHECK(none.distinct_experts == 0);
      CHECK(none.weight_read_bytes == 0);
      CHECK(none.rows_per_expert == 0);
    }
  }
}
