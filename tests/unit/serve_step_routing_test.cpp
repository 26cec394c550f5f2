// The experts a serving step reads: a router's experts are not equally popular, so a decode step
// touches fewer distinct experts (and gives each more rows) than draws over equally likely
// experts would. The step counts them under a Zipf popularity of exponent 1.2 (serve/step.cpp,
// docs/validation/latency.md), the same for every model.
#include <doctest/doctest.h>

#include "plan/plan.h"
#include "serve/step.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

using namespace calc;
using namespace calc::serve;
using testing::model;

TEST_CASE("serve step: experts touched under a skewed popularity, between equal and concentrated") {
  for (const char* name : {"gpt-oss-120b", "qwen3-235b-a22b", "deepseek-v3"}) {
    CAPTURE(name);
    model m(name);
    deployment d = make_deployment(m.g, find_gpu("h200"), {});
    op_cost moe =  // a copy: the step's costs are a temporary
        cost_step(d, {32, 1024, 0, 0}).ops[static_cast<std::size_t>(op_class::moe_gemm)];
    experts_plan equal = plan_experts(m.g, 32, {routing::kind::zipf, 0.0});
    experts_plan skewed = plan_experts(m.g, 32, {routing::kind::zipf, 1.2});
    experts_plan one = plan_experts(m.g, 32, {routing::kind::concentrated});
    CHECK(moe.bytes == skewed.weight_read_bytes);
    CHECK(moe.rows == skewed.rows_per_expert);
    // 32 tokens x top-k draws: fewer distinct experts than equally likely ones, more than the k
    // a concentrated router sends every token to.
    CHECK(moe.bytes < 0.9 * equal.weight_read_bytes);
    CHECK(moe.bytes > 2 * one.weight_read_bytes);
    CHECK(moe.rows > equal.rows_per_expert);
    // The expert FLOPs do not depend on the routing: every token is multiplied by k experts.
    CHECK(skewed.flops == equal.flops);
  }
}
