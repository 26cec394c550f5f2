// Capacity and placement answers: the §2.6.2 arithmetic of plan.h and placement.h put together
// for one question, with paged caches, a shared prefix, layouts and the card memory basis.
#include "plan/capacity.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "spec/format_summary.h"

namespace calc {

namespace {

/// The positions a request holds: paged serving allocates whole blocks of `page` tokens.
std::int64_t kept_positions(std::int64_t length, std::int64_t page) {
  return page > 0 ? (length + page - 1) / page * page : length;
}

/// One request's state on the cards, paged and net of a shared prefix (stored once apart).
checked request_state(const graph& g, std::int64_t length, std::int64_t page, std::int64_t prefix) {
  checked own = tally_state(g, kept_positions(length, page)).total;
  if (prefix > 0) own = own - tally_state(g, std::min(prefix, length)).global_history;
  return own;
}

/// One length on one card type: requests, per-request and free bytes of the deployment.
capacity_plan capacity_at(const graph& g, const gpu_spec& card, const capacity_request& q,
                          std::int64_t length, checked weights, checked prefix_bytes) {
  const layout& lay = q.lay;
  capacity_plan c;
  c.length = length;
  c.memory = checked(card.memory) * lay.cards();
  c.weight_bytes = weights;
  c.workspace_bytes = q.workspace;
  c.per_request_bytes = request_state(g, length, q.page_tokens, q.shared_prefix);
  if (lay.cards() == 1 && lay.ep == 1) {
    // §2.6.2 on one card: a partial state holds no request, so round down.
    c.free_bytes = c.memory - weights - q.workspace - prefix_bytes;
    c.weights_fit = c.free_bytes >= 0;
    if (c.weights_fit && c.per_request_bytes > 0)
      c.requests = (c.free_bytes / c.per_request_bytes).value();
    return c;
  }
  // Per card: every stage's card must hold its weights, the workspace and its share of each
  // request's state; the tightest stage decides, each dp group holds its own requests. Free
  // bytes are the deployment's: every card's, summed.
  std::vector<card_load> loads = card_loads(g, lay, kept_positions(length, q.page_tokens));
  checked free = 0;
  bool fit_all = true;
  for (const card_load& cl : loads) {
    checked card_free = checked(card.memory) - cl.weight_bytes - q.workspace;
    fit_all = fit_all && card_free >= 0;
    free += card_free * lay.tp;
  }
  c.requests = fit_all ? layout_requests(loads, lay, checked(card.memory), q.workspace) : 0;
  c.free_bytes = free;
  c.weights_fit = fit_all;
  return c;
}

}  // namespace

memory_basis parse_memory_basis(const std::string& field, const std::string& text) {
  if (text == "runtime") return memory_basis::runtime;
  if (text == "as-sold") return memory_basis::as_sold;
  throw spec_error(field, fmt::format("'{}' is neither runtime nor as-sold", text));
}

gpu_spec card_as_planned(const gpu_spec& gpu, memory_basis basis) {
  gpu_spec card = gpu;
  if (basis == memory_basis::runtime) card.memory = engine_visible_memory(gpu);
  return card;
}

std::string memory_basis_used(const gpu_spec& gpu, memory_basis basis) {
  return basis == memory_basis::runtime && gpu.runtime_memory > 0 ? "runtime" : "as sold";
}

formats_used model_formats(const model_spec& s) {
  // The weight matrices' format: the one they share, else "mixed" (the summary says which is
  // which): DeepSeek-V3's matrices are all FP8 blocks though its `weights` default is BF16,
  // gpt-oss keeps BF16 attention beside MXFP4 experts.
  const precision_spec& p = s.precision;
  const dtype* one = matrices_format(p);
  return {one ? one->name : std::string("mixed"), p.kv.name, format_summary(p)};
}

capacity_result answer_capacity(const graph& g, const capacity_request& q) {
  if (q.gpus.empty()) throw spec_error("gpus", "name at least one GPU");
  if (q.lengths.empty()) throw spec_error("lengths", "give at least one context length");
  for (std::int64_t l : q.lengths)
    if (q.shared_prefix > l)
      throw spec_error("shared_prefix",
                       fmt::format("{} tokens is longer than the length {}", q.shared_prefix, l));
  if (std::string why = layout_problem(g, q.lay); !why.empty()) throw spec_error("layout", why);
  if (q.shared_prefix > 0 && (q.lay.cards() > 1 || q.lay.ep > 1))
    throw spec_error("shared_prefix", kSharedPrefixOnOneCard);
  const model_spec& s = *g.spec;
  capacity_result r;
  r.model = s.name;
  r.formats = model_formats(s);
  r.given_weights = q.weight_bytes.has_value();
  if (r.given_weights) r.formats.weights = "given";
  r.weight_bytes = q.weight_bytes ? *q.weight_bytes : tally_params(g).weight_bytes;
  r.lay = q.lay;
  r.cards = q.lay.cards();
  r.workspace_bytes = q.workspace;
  r.page_tokens = q.page_tokens;
  r.shared_prefix = q.shared_prefix;
  r.shared_prefix_bytes =
      q.shared_prefix > 0 ? tally_state(g, q.shared_prefix).global_history : checked(0);
  gpu_spec lead = card_as_planned(q.gpus.front(), q.memory);
  r.gpu = lead.name;
  r.gpu_display = lead.display;
  r.memory_basis = memory_basis_used(q.gpus.front(), q.memory);
  r.memory_bytes = checked(lead.memory) * r.cards;
  for (const gpu_spec& gpu : q.gpus) {
    gpu_spec card = card_as_planned(gpu, q.memory);
    for (std::int64_t l : q.lengths)
      r.rows.push_back(
          {card.name, l, capacity_at(g, card, q, l, r.weight_bytes, r.shared_prefix_bytes)});
  }
  if (q.budget_requests) {
    capacity_result::budget b;
    b.requests = *q.budget_requests;
    b.max_params = max_params(g, lead, r.cards, q.lengths.front(), q.workspace, b.requests);
    b.max_weight_bytes = budget_bytes(g, b.max_params);
    r.weight_budget = b;
  }
  return r;
}

placement_result answer_plan(const graph& g, const placement_request& q) {
  gpu_spec card = card_as_planned(q.gpu, q.memory);
  placement_result r;
  r.model = g.spec->name;
  r.formats = model_formats(*g.spec);
  r.gpu = card.name;
  r.memory_basis = memory_basis_used(q.gpu, q.memory);
  r.card_memory = card.memory;
  r.length = q.length;
  r.requests = q.requests;
  r.workspace_bytes = q.workspace;
  r.weight_bytes = tally_params(g).weight_bytes;
  r.plan = plan_placement(g, card, q.length, q.requests, q.workspace,
                          server_gpus_of(q.gpu, q.node_gpus), q.max_gpus);
  return r;
}

}  // namespace calc
