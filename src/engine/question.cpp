// The engine capacity and plan questions (question.h): the memory budget per rank, then the
// allocation rules of engine.cpp.
#include "engine/question.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "plan/placement.h"

namespace calc::engine {

checked activation_estimate(const graph& g, std::int64_t batched, std::int64_t tp) {
  std::int64_t widest = 0;
  for (const layer& l : g.layers) {
    if (const auto* f = std::get_if<ffn_swiglu>(&l.ffn)) widest = std::max(widest, f->intermediate);
    if (const auto* f = std::get_if<ffn_mlp>(&l.ffn)) widest = std::max(widest, f->intermediate);
    if (const auto* f = std::get_if<ffn_moe>(&l.ffn))
      widest = std::max(widest, f->intermediate * f->top_k);
  }
  checked row = checked(4) * g.spec->hidden + checked(2) * widest / tp;  // values per token
  return checked(batched) * row * 2 + (1LL << 30);
}

namespace {

/// The budget from the engine's own log: one figure for all ranks, or one per rank, of which
/// vLLM keeps the smallest block count (get_kv_cache_configs) and SGLang the smallest pool
/// (its TP ranks all-reduce the minimum of their available memory).
void logged_budget(const memory_request& m, capacity_result& r) {
  engine_config& c = r.config;
  auto ranks = static_cast<std::size_t>(c.tensor_parallel * c.pipeline_parallel);
  if (m.logged.size() == 1) {
    c.available_kv_bytes = m.logged.front();
    r.memory_source = "--kv-memory (the engine's logged value, per rank)";
    return;
  }
  if (m.logged.size() != ranks)
    throw spec_error("--kv-memory",
                     fmt::format("{} values for {} ranks (tp {} x pp {}): give one value for "
                                 "every rank, or one per rank",
                                 m.logged.size(), ranks, c.tensor_parallel, c.pipeline_parallel));
  c.rank_kv_bytes = m.logged;
  c.available_kv_bytes = *std::min_element(m.logged.begin(), m.logged.end());
  r.memory_source = fmt::format(
      "--kv-memory (the engine's logged value of each of the {} ranks; the smallest decides)",
      ranks);
}

/// The estimate without a log: the card's runtime-visible memory x the engine's fraction, less
/// the weights per rank (and, for vLLM, the activation estimate).
void estimated_budget(const graph& g, const memory_request& m, capacity_result& r) {
  if (!m.gpu)
    throw spec_error("--kv-memory", "give --kv-memory (the engine's logged KV memory) or --gpu");
  engine_config& c = r.config;
  bool sglang = std::string(r.rules->engine) == "sglang";
  double fraction = sglang ? m.mem_fraction_static : m.gpu_memory_utilization;
  const char* knob = sglang ? "--mem-fraction-static" : "--gpu-memory-utilization";
  if (!(fraction > 0 && fraction <= 1))
    throw spec_error(knob, fmt::format("must be in (0, 1], got {}", fraction));
  // Both engines take the fraction of the total the CUDA runtime reports (vLLM's
  // total_gpu_memory, SGLang's get_available_gpu_memory), not of the figure as sold.
  r.card_memory = engine_visible_memory(*m.gpu);
  std::string memory_words =
      m.gpu->runtime_memory > 0 ? "runtime-visible memory" : "memory as sold (no runtime figure)";
  // card x fraction, exact to the byte: the fraction as parts per million.
  checked budget = r.card_memory * static_cast<std::int64_t>(fraction * 1e6 + 0.5) / 1000000;
  if (sglang) {
    // SGLang's fraction covers weights and the pool; activations live in the rest.
    c.available_kv_bytes = budget - r.weight_bytes_per_rank;
    r.memory_source =
        fmt::format("estimate: {} {} x {} - weights per rank", m.gpu->name, memory_words, fraction);
    return;
  }
  std::int64_t batched = c.max_num_batched_tokens > 0 ? c.max_num_batched_tokens : 8192;
  r.activation_bytes =
      m.activation ? *m.activation : activation_estimate(g, batched, c.tensor_parallel);
  c.available_kv_bytes = budget - r.weight_bytes_per_rank - r.activation_bytes;
  r.memory_source =
      fmt::format("estimate: {} {} x {} - weights per rank - activation and graph estimate",
                  m.gpu->name, memory_words, fraction);
}

/// The layout's weights per rank and every rank's KV memory, before any allocation.
capacity_result budget(const graph& g, const capacity_request& q) {
  capacity_result r;
  r.rules = q.rules;
  r.config = q.config;
  layout lay{r.config.tensor_parallel, r.config.pipeline_parallel, 1};
  if (std::string why = layout_problem(g, lay); !why.empty())
    throw spec_error("--tensor-parallel-size", why);
  for (const card_load& cl : card_loads(g, lay, 0))
    r.weight_bytes_per_rank = max(r.weight_bytes_per_rank, cl.weight_bytes);
  if (!q.memory.logged.empty()) {
    logged_budget(q.memory, r);
  } else {
    estimated_budget(g, q.memory, r);
  }
  return r;
}

}  // namespace

capacity_result answer_capacity(const graph& g, const capacity_request& q) {
  capacity_result r = budget(g, q);
  r.capacity = plan_engine(g, *q.rules, r.config);
  return r;
}

plan_result answer_plan(const graph& g, const plan_request& q) {
  if (q.capacity.memory.logged.size() > 1)
    throw spec_error("--kv-memory", "plan tries several layouts: give one value for every rank");
  plan_result out;
  auto layers = static_cast<std::int64_t>(g.layers.size());
  for (std::int64_t cards = 1; cards <= q.max_gpus; ++cards) {
    if (cards > q.node_gpus && cards % q.node_gpus != 0) continue;
    for (std::int64_t tp = std::min(cards, q.node_gpus); tp >= 1; --tp) {
      if (cards % tp != 0) continue;
      std::int64_t pp = cards / tp;
      if (pp > layers) continue;
      if (!layout_problem(g, layout{tp, pp, 1}).empty()) continue;
      capacity_request one = q.capacity;
      one.config.tensor_parallel = tp;
      one.config.pipeline_parallel = pp;
      // Budget first: a layout whose weights leave nothing is skipped before the allocator.
      capacity_result r = budget(g, one);
      if (r.config.available_kv_bytes <= 0) continue;
      r.capacity = plan_engine(g, *one.rules, r.config);
      if (!r.capacity.fits || r.capacity.max_concurrency < static_cast<double>(q.requests))
        continue;
      out.best = r;
      out.gpus = cards;
      return out;
    }
  }
  return out;
}

}  // namespace calc::engine
