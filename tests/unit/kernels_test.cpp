// The CUDA kernels' arithmetic without a GPU: each blocked CPU twin (blocked as its kernel is)
// against the plain twin, the checks' ability to fail, and the timed cases' byte counts against
// the tally's predictions (exec/gpu_plan.h).
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "decode_blocked.h"
#include "decode_ref.h"
#include "exec/gpu_plan.h"
#include "twin_cases.h"

using namespace calc;
using namespace calc::kernels;

namespace {

/// Every output of the blocked twin within the reference's stated tolerance.
void blocked_matches(const case_shape& s) {
  CAPTURE(s.kernel);
  case_data c = make_case(s, 7);
  std::vector<std::vector<float>> got = blocked_outputs(c);
  REQUIRE(got.size() == c.reference.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(c.reference[i].name);
    comparison r = compare_outputs(got[i], c.reference[i]);
    CHECK(r.non_finite == 0);
    CHECK(r.out_of_tolerance == 0);
    CHECK(r.nmse <= c.reference[i].nmse_max);
    CHECK(r.pass);
  }
}

}  // namespace

TEST_CASE("split-sequence GQA decode (online softmax + combine) equals the plain twin") {
  // Two splits, many splits, head_dim 64/128/256, groups 4 and 8, and a paged cache.
  blocked_matches({.kernel = "gqa_decode",
                   .batch = 2,
                   .q_heads = 8,
                   .kv_heads = 2,
                   .head_dim = 64,
                   .length = 300,
                   .split_blocks = 8});
  blocked_matches({.kernel = "gqa_decode",
                   .batch = 2,
                   .q_heads = 32,
                   .kv_heads = 8,
                   .head_dim = 128,
                   .length = 1000});
  blocked_matches({.kernel = "gqa_decode",
                   .batch = 1,
                   .q_heads = 16,
                   .kv_heads = 2,
                   .head_dim = 256,
                   .length = 777});
  blocked_matches({.kernel = "gqa_decode_paged",
                   .batch = 2,
                   .q_heads = 8,
                   .kv_heads = 2,
                   .head_dim = 64,
                   .length = 300,
                   .page_tokens = 16,
                   .split_blocks = 8});
}

TEST_CASE("the GQA split length spreads a long single request and covers every token") {
  int t = split_tokens_for(1, 8, 65536, 264);  // Qwen3-8B, one request: 8 blocks without splits
  gqa_decode_params p{1, 32, 8, 128, 65536, 0, 0, nullptr, t};
  CHECK(t % blocking::kGqaSplitAlign == 0);
  CHECK(gqa_splits(p) * 8 >= 264);                    // at least the blocks asked for
  CHECK((gqa_splits(p) - 1) * t < p.length);          // no empty split
  CHECK(split_tokens_for(64, 8, 8192, 264) == 8192);  // 512 blocks already: one split
}

TEST_CASE("absorbed MLA, one-pass delta step and MoE grouped GEMM equal their plain twins") {
  blocked_matches(
      {.kernel = "mla_decode", .batch = 2, .length = 200, .heads = 4, .rank = 64, .rope = 16});
  blocked_matches(
      {.kernel = "mla_decode", .batch = 1, .length = 100, .heads = 4, .rank = 512, .rope = 64});
  blocked_matches({.kernel = "delta_step", .batch = 3, .heads = 4, .dk = 32, .dv = 24});
  blocked_matches({.kernel = "delta_step", .batch = 1, .heads = 2, .dk = 128, .dv = 128});
  blocked_matches({.kernel = "delta_step", .batch = 1, .heads = 1, .dk = 100, .dv = 8});
  blocked_matches({.kernel = "delta_chunk_then_step",
                   .batch = 1,
                   .heads = 2,
                   .dk = 32,
                   .dv = 24,
                   .tokens = 70,
                   .chunk = 32});
  blocked_matches(
      {.kernel = "moe_gemm", .batch = 20, .experts = 3, .top_k = 2, .in = 100, .out = 264});
  blocked_matches({.kernel = "sparse_decode",
                   .batch = 2,
                   .heads = 2,
                   .width = 64,
                   .window = 16,
                   .n_entries = 100,
                   .selected = 32});
}

TEST_CASE("a check fails on an unwritten (NaN-poisoned) or wrong output") {
  case_data c = make_case({.kernel = "delta_step", .batch = 1, .heads = 1, .dk = 8, .dv = 8}, 3);
  std::vector<float> got = c.reference[0].values;
  got[3] = NAN;  // one element the kernel did not write
  comparison r = compare_outputs(got, c.reference[0]);
  CHECK(r.non_finite == 1);
  CHECK_FALSE(r.pass);
  got[3] = c.reference[0].values[3] + 0.01f;  // one element off by an indexing-size error
  CHECK_FALSE(compare_outputs(got, c.reference[0]).pass);
  CHECK_FALSE(compare_outputs({1.0f}, c.reference[0]).pass);  // wrong size
}

TEST_CASE("MoE routing touches min(tokens x top-k, experts) experts; unused experts are NaN") {
  std::vector<int> off = disjoint_routing(4, 8, 256);
  int touched = 0;
  for (std::size_t e = 0; e + 1 < off.size(); ++e) touched += off[e + 1] > off[e];
  CHECK(touched == 32);
  CHECK(off.back() == 32);
  off = disjoint_routing(40, 8, 256);
  touched = 0;
  for (std::size_t e = 0; e + 1 < off.size(); ++e) touched += off[e + 1] > off[e];
  CHECK(touched == 256);
  // Weights of experts no row uses are NaN: a kernel reading them fails its check.
  case_data c =
      make_case({.kernel = "moe_gemm", .batch = 1, .experts = 4, .top_k = 1, .in = 8, .out = 8}, 1);
  CHECK(std::isnan(bf16_to_float(c.bf16.at("w")[8 * 8])));  // expert 1
  CHECK_FALSE(std::isnan(bf16_to_float(c.bf16.at("w")[0])));
}

TEST_CASE("every timed case's kernel bytes equal the tally's prediction where one exists") {
  gpu::plan_options o;
  nlohmann::ordered_json plan = gpu::make_plan(o);
  int timed = 0, exact = 0, none = 0, checks = 0;
  gpu::run_cpu_side(plan, [&](const nlohmann::ordered_json& row) {
    const std::string kind = row.value("row", "");
    if (kind == "bytes") {
      ++timed;
      CAPTURE(row.dump());
      CHECK(row.at("verdict") != "MISMATCH");
      exact += row.at("verdict") == "exact";
      none += row.at("verdict") == "no prediction";
    }
    if (kind == "twin") {
      ++checks;
      CAPTURE(row.dump());
      CHECK(row.at("verdict") == "pass");
    }
    if (kind == "check" || kind == "timed") CHECK(row.at("gpu") == "skipped");
  });
  CHECK(timed >= 10);
  CHECK(none == 2);  // the sparse kernel reads BF16 records; V4 stores FP8 ones
  CHECK(exact == timed - none);
  CHECK(checks >= 10);
}

TEST_CASE("the plan checks every kernel at production width and times the bundled models") {
  gpu::plan_options o;
  o.correctness_only = true;
  nlohmann::ordered_json plan = gpu::make_plan(o);
  CHECK(plan.at("repeats") == 20);
  CHECK(plan.at("catalogue").at("bf16_flops") == doctest::Approx(989.4e12));
  std::set<std::string> widths;
  for (const auto& c : plan.at("cases")) {
    const auto& s = c.at("shape");
    const std::string k = s.at("kernel");
    if (k == "gqa_decode") widths.insert("head_dim " + std::to_string(int(s.at("head_dim"))));
    if (k == "mla_decode" && s.at("rank") == 512 && s.at("rope") == 64) widths.insert("mla 512+64");
    if (k == "sparse_decode" && s.at("width") == 512)
      widths.insert("top-k " + std::to_string(int(s.at("selected"))));
    if (k == "moe_gemm" && s.at("experts") == 256 && s.at("top_k") == 8) widths.insert("moe 256/8");
    if (k == "delta_step" && s.at("dk") == 128 && s.at("dv") == 128) widths.insert("delta 128");
    if (k == "delta_chunk_then_step") widths.insert("chunk then step");
  }
  for (const char* w : {"head_dim 128", "head_dim 256", "mla 512+64", "top-k 512", "top-k 2048",
                        "moe 256/8", "delta 128", "chunk then step"}) {
    CAPTURE(w);
    CHECK(widths.count(w) == 1);
  }
}
