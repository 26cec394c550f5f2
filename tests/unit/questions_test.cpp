// The plain serving questions as typed calls (issue 19, items 1 and 4): answer_capacity,
// answer_plan, answer_roofline and answer_report, called directly with request structs.
#include <doctest/doctest.h>

#include "common/error.h"
#include "plan/capacity.h"
#include "plan/roofline.h"
#include "report/data.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

using namespace calc;

using testing::model;

namespace {

capacity_request one_card(const std::string& gpu, std::int64_t length, memory_basis basis) {
  capacity_request q;
  q.gpus = {find_gpu(gpu)};
  q.lengths = {length};
  q.workspace = 2LL << 30;
  q.memory = basis;
  return q;
}

}  // namespace

TEST_CASE("answer_capacity: as sold, the chapter's §2.6.2 count; runtime, the card's own") {
  model m("qwen3-8b");
  const checked weights = tally_params(m.g).weight_bytes;
  const checked per_request = tally_state(m.g, 4096).total;

  capacity_result sold = answer_capacity(m.g, one_card("rtx-4090", 4096, memory_basis::as_sold));
  CHECK(sold.memory_basis == "as sold");
  CHECK(sold.memory_bytes.value() == 24'000'000'000);
  CHECK(sold.first().plan.free_bytes == checked(24'000'000'000) - weights - (2LL << 30));
  CHECK(sold.first().plan.requests == 9);

  capacity_result runtime = answer_capacity(m.g, one_card("rtx-4090", 4096, memory_basis::runtime));
  CHECK(runtime.memory_basis == "runtime");
  CHECK(runtime.memory_bytes.value() == 25'386'352'640);  // deviceQuery's total
  checked free = checked(25'386'352'640) - weights - (2LL << 30);
  CHECK(runtime.first().plan.free_bytes == free);
  CHECK(runtime.first().plan.requests == (free / per_request).value());
  CHECK(runtime.first().plan.requests == 11);
}

TEST_CASE("answer_capacity: a card with no runtime figure is counted as sold, and says so") {
  model m("qwen3-8b");
  gpu_spec bare = find_gpu("rtx-4090");
  bare.runtime_memory = 0;
  capacity_request q = one_card("rtx-4090", 4096, memory_basis::runtime);
  q.gpus = {bare};
  capacity_result r = answer_capacity(m.g, q);
  CHECK(r.memory_basis == "as sold");
  CHECK(r.first().plan.requests == 9);
}

TEST_CASE("answer_capacity: one row per card and length, paging and a shared prefix applied") {
  model m("qwen3-8b");
  capacity_request q;
  q.gpus = {find_gpu("rtx-4090"), find_gpu("h100-sxm")};
  q.lengths = {1000, 8192};
  q.workspace = 0;
  q.page_tokens = 16;
  q.memory = memory_basis::as_sold;
  capacity_result r = answer_capacity(m.g, q);
  REQUIRE(r.rows.size() == 4);
  CHECK(r.rows[0].gpu == "rtx-4090");
  CHECK(r.rows[3].gpu == "h100-sxm");
  CHECK(r.rows[3].length == 8192);
  // 1000 tokens are kept as 63 pages of 16: 1008 positions.
  CHECK(r.rows[0].plan.per_request_bytes == tally_state(m.g, 1008).total);

  q.shared_prefix = 512;
  capacity_result shared = answer_capacity(m.g, q);
  CHECK(shared.shared_prefix_bytes == tally_state(m.g, 512).global_history);
  CHECK(shared.rows[0].plan.per_request_bytes ==
        tally_state(m.g, 1008).total - tally_state(m.g, 512).global_history);
  CHECK(shared.rows[0].plan.requests >= r.rows[0].plan.requests);

  q.shared_prefix = 2000;  // longer than the 1000-token length
  try {
    answer_capacity(m.g, q);
    FAIL("a prefix longer than a length was accepted");
  } catch (const spec_error& e) {
    CHECK(e.field() == "shared_prefix");  // a request field, not a flag
  }
}

TEST_CASE("answer_capacity: a layout is counted per card, the weight budget on the lead card") {
  model m("qwen3-8b");
  capacity_request q = one_card("h100-sxm", 8192, memory_basis::as_sold);
  q.lay = layout{2, 1, 1, 1};
  q.budget_requests = 4;
  capacity_result r = answer_capacity(m.g, q);
  CHECK(r.cards == 2);
  CHECK(r.memory_bytes.value() == 160'000'000'000);
  std::vector<card_load> loads = card_loads(m.g, q.lay, 8192);
  CHECK(r.first().plan.requests ==
        layout_requests(loads, q.lay, checked(80'000'000'000), q.workspace));
  REQUIRE(r.weight_budget);
  CHECK(r.weight_budget->max_params ==
        max_params(m.g, find_gpu("h100-sxm"), 2, 8192, q.workspace, 4));

  q.lay = layout{3, 1, 1, 1};  // 32 query heads do not split over 3 cards
  CHECK_THROWS_AS(answer_capacity(m.g, q), spec_error);
}

TEST_CASE("answer_capacity: pages count on a layout; a shared prefix there is refused") {
  model m("qwen3-8b");
  capacity_request q = one_card("h100-sxm", 1000, memory_basis::as_sold);
  q.lay = layout{2, 1, 1, 1};
  q.page_tokens = 256;  // 1000 tokens held as 1024
  capacity_result paged = answer_capacity(m.g, q);
  CHECK(paged.first().plan.requests ==
        layout_requests(card_loads(m.g, q.lay, 1024), q.lay, checked(80'000'000'000),
                        q.workspace));
  q.page_tokens = 0;
  CHECK(answer_capacity(m.g, q).first().plan.requests > paged.first().plan.requests);
  q.shared_prefix = 512;
  try {
    answer_capacity(m.g, q);
    FAIL("a shared prefix on two cards was accepted");
  } catch (const spec_error& e) {
    CHECK(e.field() == "shared_prefix");
  }
}

TEST_CASE("answer_plan: the placement search on the card as counted") {
  model m("qwen3-8b");
  placement_request q;
  q.gpu = find_gpu("rtx-4090");
  q.length = 8192;
  q.requests = 16;
  q.workspace = 2LL << 30;
  q.memory = memory_basis::as_sold;
  placement_result sold = answer_plan(m.g, q);
  placement_plan direct = plan_placement(m.g, q.gpu, 8192, 16, q.workspace, 8, 512);
  REQUIRE(sold.plan.best);
  REQUIRE(direct.best);
  CHECK(sold.plan.best->cards() == direct.best->cards());
  CHECK(sold.card_memory.value() == 24'000'000'000);
  CHECK(sold.memory_basis == "as sold");

  q.memory = memory_basis::runtime;
  placement_result runtime = answer_plan(m.g, q);
  CHECK(runtime.card_memory.value() == 25'386'352'640);
  CHECK(runtime.memory_basis == "runtime");
  REQUIRE(runtime.plan.best);
  // More memory per card never needs more cards; on the same deployment every card has the
  // difference free.
  CHECK(runtime.plan.best->cards() <= sold.plan.best->cards());
  if (deployment_name(*runtime.plan.best) == deployment_name(*sold.plan.best))
    CHECK(runtime.plan.best->worst_free - sold.plan.best->worst_free == checked(1'386'352'640));
}

TEST_CASE("answer_roofline: the bounds of plan_roofline, FP8 refused on a card without it") {
  model m("qwen3-8b");
  roofline_request q{find_gpu("h100-sxm"), 2, 4, 1024, 512, false};
  roofline_result r = answer_roofline(m.g, q);
  roofline_plan direct = plan_roofline(m.g, q.gpu, 2, 4, 1024, 512, false);
  CHECK(r.peak == "bf16");
  CHECK(r.bounds.decode.bytes == direct.decode.bytes);
  CHECK(r.bounds.prefill.bound_s == direct.prefill.bound_s);
  CHECK(r.asked.batch == 4);

  q.gpu = find_gpu("a100-80gb");
  q.fp8 = true;
  try {
    answer_roofline(m.g, q);
    FAIL("FP8 on a card with no FP8 peak was accepted");
  } catch (const spec_error& e) {
    CHECK(e.field() == "fp8");
  }
}

TEST_CASE("answer_report: its figures are the plan layer's answers on the planned deployment") {
  model m("qwen3-8b");
  report_request q;
  q.gpu = find_gpu("h100-sxm");
  q.lengths = {4096, 131072};
  q.workspace = 2LL << 30;
  q.requests = 32;
  q.memory = memory_basis::as_sold;
  report_data r = answer_report({&m.g}, q);
  REQUIRE(r.models.size() == 1);
  const report_model& rm = r.models[0];
  REQUIRE(rm.points.size() == 2);
  // 18 GiB of state at 128K beside 15.3 GiB of weights: one card holds a request.
  CHECK(rm.planned);
  CHECK(rm.deployable);
  CHECK(rm.lay.cards() == 1);
  capacity_result cap = answer_capacity(m.g, one_card("h100-sxm", 131072, memory_basis::as_sold));
  CHECK(rm.points[1].requests == cap.first().plan.requests);
  CHECK(rm.points[1].state_bytes == tally_state(m.g, 131072).total);
  REQUIRE(rm.points[1].cards);
  CHECK(rm.points[1].cards->cards() ==
        plan_placement(m.g, q.gpu, 131072, 32, q.workspace, 8, 512).best->cards());
  REQUIRE(rm.weights.size() == 3);
  CHECK(rm.weights[0].first == "bf16");
  CHECK(rm.weights[1].second < rm.weights[0].second);  // FP8 matrices take half
  CHECK(rm.components.size() == tally_state(m.g, 131072).items.size());
  CHECK(rm.components[0].bytes.size() == 2);
  CHECK(rm.points[0].prefill);
  CHECK(rm.points[0].decode.bound_s ==
        plan_roofline(m.g, q.gpu, 1, 1, 0, 4096, false).decode.bound_s);
}

TEST_CASE("answer_report: past one card the deployment is planned; given, it is used") {
  model m("qwen3-8b");
  report_request q;
  q.gpu = find_gpu("h100-sxm");
  q.lengths = {8192, 1048576};  // 144 GiB of state at 1M: no single card holds it
  q.workspace = 2LL << 30;
  q.memory = memory_basis::as_sold;
  report_model planned = answer_report_model(m.g, q);
  CHECK(planned.deployable);
  CHECK(planned.lay.cards() > 1);
  CHECK(planned.points[1].requests >= 1);
  // The layout is one engines run: a power-of-two tp, the fewest cards that hold a request.
  CHECK(planned.lay.tp == 4);  // 36 GiB of state a card; tp 2 needs 72 GiB plus weights
  CHECK(planned.points[0].decode.bound_s <
        plan_roofline(m.g, q.gpu, 1, 1, 0, 8192, false).decode.bound_s);

  q.lay = layout{2, 1, 1, 1};
  report_model given = answer_report_model(m.g, q);
  CHECK_FALSE(given.planned);
  CHECK(given.lay.tp == 2);
  CHECK(given.points[1].requests == 0);  // 72 GiB a card beside the weights: does not fit
  CHECK(given.points[0].requests ==
        layout_requests(card_loads(m.g, *q.lay, 8192), *q.lay, checked(80'000'000'000),
                        q.workspace));

  q.lay.reset();
  q.max_gpus = 2;  // no deployment of up to 2 cards holds a 1M request
  report_model none = answer_report_model(m.g, q);
  CHECK_FALSE(none.deployable);
  CHECK(none.searched_up_to == 2);
  CHECK(none.points[1].requests == 0);
}
