// The experts a serving step reads: a router's experts are not equally popular, so a decode step
// touches fewer distinct experts (and gives each more rows) than draws over equally likely
// experts would. The step counts them under a Zipf popularity whose exponent is a calibration
// coefficient (coefficients::expert_zipf_s: 0.625 built in, fitted by `calc calibrate`), the same
// for every model.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "plan/plan.h"
#include "common/error.h"
#include "serve/calibration.h"
#include "serve/measured.h"
#include "serve/step.h"
#include "spec/gpu_spec.h"
#include "test_model.h"
#include "serve_support.h"

using namespace calc;
using testing::write_temp;
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
    experts_plan skewed =
        plan_experts(m.g, 32, {routing::kind::zipf, coefficients{}.expert_zipf_s});
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

TEST_CASE("serve step: the expert popularity is the calibration's, and costs follow it") {
  model m("gpt-oss-120b");
  const gpu_spec& h200 = find_gpu("h200");
  auto moe_of = [&](double s) {
    deployment d = make_deployment(m.g, h200, {}, 0, compile_forms(m.g, s));
    CHECK(d.forms.expert_zipf_s == s);
    step_costs c = cost_step(d, {32, 1024, 0, 0});
    // The itemised oracle reads the same exponent from the deployment.
    step_costs o = cost_step_itemised(d, {32, 1024, 0, 0});
    auto i = static_cast<std::size_t>(op_class::moe_gemm);
    CHECK(c.ops[i].bytes == doctest::Approx(o.ops[i].bytes).epsilon(1e-12));
    experts_plan e = plan_experts(m.g, 32, {routing::kind::zipf, s});
    CHECK(c.ops[i].bytes == doctest::Approx(e.weight_read_bytes).epsilon(1e-12));
    return c.ops[i];
  };
  op_cost flat = moe_of(0), mid = moe_of(0.7), steep = moe_of(2);
  // A steeper popularity touches fewer experts, each with more rows; the FLOPs do not change.
  CHECK(mid.bytes < flat.bytes);
  CHECK(steep.bytes < mid.bytes);
  CHECK(steep.rows > mid.rows);
  CHECK(mid.flops == flat.flops);
  // The same forms under another exponent share the tallies and change only the experts.
  model_forms f = compile_forms(m.g, 0.7);
  model_forms g = with_expert_popularity(m.g, f, 1.5);
  CHECK(g.tallies == f.tallies);
  CHECK(g.experts != f.experts);
  CHECK(g.expert_zipf_s == 1.5);
}

namespace {

std::string error_of(const std::string& path) {
  try {
    read_calibration(path);
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("calibration file: the expert popularity exponent, its provenance and its bounds") {
  std::string head = "source: test\nentries:\n  - family: any\n    engine: any\n";
  for (const char* k : {"gemm_compute", "gemm_memory", "moe_compute", "moe_memory",
                        "attention_compute", "attention_memory", "comm_bandwidth", "burst_share"})
    head += std::string("    ") + k + ": 0.5\n";
  for (const char* k : {"collective_latency_us", "step_overhead_ms", "request_overhead_us",
                        "request_latency_ms", "gemm_half_rows"})
    head += std::string("    ") + k + ": 4\n";
  // A file without it takes the built-in prior, in every entry.
  calibration old = read_calibration(write_temp("calc_zipf_old.yaml", head));
  CHECK(old.expert_zipf_s == coefficients{}.expert_zipf_s);
  CHECK(old.lookup("hopper", "vllm").expert_zipf_s == coefficients{}.expert_zipf_s);
  calibration c = read_calibration(write_temp(
      "calc_zipf_ok.yaml", head + "expert_popularity:\n  zipf_s: 0.85\n  source: \"fit\"\n"));
  CHECK(c.expert_zipf_s == 0.85);
  CHECK(c.expert_zipf_source == "fit");
  CHECK(c.lookup("hopper", "vllm").expert_zipf_s == 0.85);
  calibration back = read_calibration(write_temp("calc_zipf_back.yaml", write_calibration(c)));
  CHECK(back.expert_zipf_s == 0.85);
  CHECK(back.expert_zipf_source == "fit");
  // A file the fit wrote before its search came down to [0, 1] still reads.
  calibration before = read_calibration(write_temp(
      "calc_zipf_before.yaml", head + "expert_popularity:\n  zipf_s: 1.875\n  source: \"fit\"\n"));
  CHECK(before.lookup("hopper", "vllm").expert_zipf_s == 1.875);
  std::string steep =
      write_temp("calc_zipf_steep.yaml", head + "expert_popularity:\n  zipf_s: 2.5\n");
  CHECK(error_of(steep) ==
        steep + ":19:11: expert_popularity.zipf_s: a Zipf exponent must be a number in [0, 2]");
  std::string neg = write_temp("calc_zipf_neg.yaml", head + "expert_popularity:\n  zipf_s: -1\n");
  CHECK(error_of(neg).find("expert_popularity.zipf_s") != std::string::npos);
  std::string odd =
      write_temp("calc_zipf_odd.yaml", head + "expert_popularity:\n  zipf_s: 1\n  skew: 2\n");
  CHECK(error_of(odd).find("skew") != std::string::npos);
}

TEST_CASE("calibrate: rows mapped under one expert popularity are costed again under another") {
  calibration cal = read_calibration(default_calibration_path());
  cal.set_expert_popularity(1.0, "test");
  measured_row r;
  r.id = "t";
  r.fields = {{"backend", "vllm"},          {"model_path", "openai/gpt-oss-120b"},
              {"system", "h200_sxm"},       {"precision", "fp4"},
              {"gemm_quant_mode", "nvfp4"}, {"moe_quant_mode", "nvfp4"},
              {"mode", "agg"},              {"isl", "1024"},
              {"osl", "1024"},              {"batch_size", "32"},
              {"tp_size", "1"},             {"pp_size", "1"},
              {"attention_dp_size", "1"},   {"moe_tp_size", "1"},
              {"moe_ep_size", "1"}};
  r.ttft_ms = 100;
  r.tpot_ms = 10;
  // The mapper is gone when the row is costed again: the row keeps its model alive.
  mapped_row m = row_mapper(cal).map(r);
  REQUIRE_MESSAGE(m.s, m.error);
  CHECK(m.s->d.forms.expert_zipf_s == 1.0);
  std::vector<mapped_row> again = at_expert_popularity({m}, 1.6);
  CHECK(again.front().s->d.forms.expert_zipf_s == 1.6);
  auto moe = static_cast<std::size_t>(op_class::moe_gemm);
  CHECK(again.front().s->decode.ops[moe].bytes < m.s->decode.ops[moe].bytes);
  // predict costs the row under the calibration's own exponent, whatever it was mapped under.
  calibration steep = cal;
  steep.set_expert_popularity(1.6, "test");
  steady_state direct = solve_steady_state(*again.front().s, steep.lookup(m.family, m.engine));
  CHECK(predict(m, steep).tpot_ms == doctest::Approx(direct.tpot_ms));
  CHECK(predict(m, steep).tpot_ms < predict(m, cal).tpot_ms);
}

TEST_CASE("calibration: the built-in defaults a lookup falls back to follow the file's popularity") {
  calibration c;  // a hand-written file without an any/any entry
  c.set_expert_popularity(0.5, "test");
  std::string used;
  const coefficients& k = c.lookup("hopper", "vllm", &used);
  CHECK(used == "built-in defaults");
  CHECK(k.expert_zipf_s == 0.5);
}
