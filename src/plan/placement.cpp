#include "plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace calc {

namespace {

model_context context_of(const graph& g) {
  return {g.spec->hidden, &g.spec->precision, &g.spec->connection, g.spec->layer_norm};
}

/// One card's bytes of a tensor under the layout.
checked card_bytes(const tensor& t, const layout& l) {
  checked whole = t.bytes();
  if (t.per_token > 0) {
    // Routed experts: ep spreads whole experts; without ep each expert is split by tp.
    checked one = t.instance_bytes();
    if (l.ep > 1) return ceil_div(t.instances, l.ep) * one;
    return ceil_div(whole, l.tp);
  }
  if (!t.gemm && !t.idle && !t.lookup_only && t.module != "head") return whole;  // small: all
  // Under dp attention each group of tp / dp cards holds a whole copy of the attention weights.
  std::int64_t over = t.module == "attention" ? l.attention_tp() : l.tp;
  std::int64_t split = t.shards == 0 ? over : std::min(over, t.shards);
  return ceil_div(whole, split);
}

}  // namespace

std::string layout_name(const layout& l) {
  std::string out = fmt::format("tp {} x pp {}", l.tp, l.pp);
  if (l.ep > 1 || l.dp > 1) out += fmt::format(" (ep {}{})", l.ep, l.dp > 1 ? fmt::format(", dp {}", l.dp) : "");
  return out;
}

std::string layout_problem(const graph& g, const layout& l) {
  if (l.tp < 1 || l.pp < 1 || l.ep < 1 || l.dp < 1) return "parallel degrees must be at least 1";
  if (l.tp % l.dp != 0)
    return fmt::format("dp {} does not divide the tp group of {} cards", l.dp, l.tp);
  if (l.pp > static_cast<std::int64_t>(g.layers.size()))
    return fmt::format("pp {} exceeds the {} layers", l.pp, g.layers.size());
  for (const layer& ly : g.layers) {
    // One attention group splits each layer's heads over its tp / dp cards.
    std::int64_t heads = split_heads(ly.attention);  // tally/kinds.h; 0 without a mixer
    if (heads % l.attention_tp() != 0)
      return l.dp > 1 ? fmt::format(
                            "the attention group's tp {} (tp {} / dp {}) does not divide the {} "
                            "heads of layer {}",
                            l.attention_tp(), l.tp, l.dp, heads, ly.index)
                      : fmt::format("tp {} does not divide the {} heads of layer {}", l.tp, heads,
                                    ly.index);
    if (const auto* moe = std::get_if<ffn_moe>(&ly.ffn))
      if (moe->experts % l.ep != 0)
        return fmt::format("ep {} does not divide the {} experts of layer {}", l.ep, moe->experts,
                           ly.index);
  }
  if (l.ep > l.tp) return fmt::format("ep {} exceeds the tp group of {} cards", l.ep, l.tp);
  // The engines carve expert parallelism out of the tp group, each ep rank over tp / ep of its
  // cards (vLLM's ep is the whole tp x dp; SGLang's --ep-size divides --tp-size): an ep that
  // leaves cards over describes no deployment, and card_bytes would share experts among them.
  if (l.tp % l.ep != 0)
    return fmt::format("ep {} does not divide the tp group of {} cards", l.ep, l.tp);
  // Expert parallelism of a dense model splits nothing: taken silently, the answer would claim a
  // layout the flag does not change, and serve would launch a flag that does nothing.
  if (l.ep > 1 && !has_ffn<ffn_moe>(g))
    return fmt::format("ep {}: the model has no routed experts", l.ep);
  return "";
}

layout layout_for(const graph& g, layout l) {
  if (!has_ffn<ffn_moe>(g)) l.ep = 1;
  return l;
}

std::vector<card_load> card_loads(const graph& g, const layout& l, std::int64_t length) {
  model_context m = context_of(g);
  const model_spec& s = *g.spec;
  std::int64_t total = static_cast<std::int64_t>(g.layers.size());
  std::int64_t per_stage = (total + l.pp - 1) / l.pp;
  // Every layer of a group stores the same tensors and state: size one layer per group.
  std::vector<checked> group_weights(g.groups.size()), group_state(g.groups.size());
  std::vector<std::size_t> group_of(g.layers.size());
  for (std::size_t gi = 0; gi < g.groups.size(); ++gi) {
    for (std::int64_t i : g.groups[gi].indices) group_of[static_cast<std::size_t>(i)] = gi;
    const layer& ly = g.layers[static_cast<std::size_t>(g.groups[gi].indices.front())];
    std::vector<tensor> ts;
    layer_tensors(ly, m, ts);
    for (const tensor& t : ts) group_weights[gi] += card_bytes(t, l);
    auto comps = std::visit([&](const auto& a) { return state(a, m, s.execution); }, ly.attention);
    for (const state_component& sc : comps)
      group_state[gi] += ceil_div(sc.bytes(length), std::min(l.attention_tp(), sc.shards));
  }
  std::vector<card_load> out;
  for (std::int64_t stage = 0; stage < l.pp; ++stage) {
    card_load c;
    c.stage = stage;
    c.first_layer = stage * per_stage;
    c.layers =
        std::max<std::int64_t>(0, std::min(total, c.first_layer + per_stage) - c.first_layer);
    for (std::int64_t i = c.first_layer; i < c.first_layer + c.layers; ++i) {
      c.weight_bytes += group_weights[group_of[static_cast<std::size_t>(i)]];
      c.state_bytes += group_state[group_of[static_cast<std::size_t>(i)]];
    }
    out.push_back(c);
  }
  // The embedding table (and a norm right after it) sits with the first stage, the head, final norm and model-level
  // connection tensors with the last; the tables are split over the vocabulary by tp. A layer's
  // own connection tensors (mHC mixes) were counted with its stage above.
  std::vector<tensor> ts;
  model_level_tensors(s, m, ts);
  for (const tensor& t : ts) {
    if (t.module == "embedding" || t.name == "embedding_norm")  // BLOOM's norm after it
      out.front().weight_bytes += card_bytes(t, l);
    if (t.module == "head" || t.name == "final_norm" || t.module == "connection")
      out.back().weight_bytes += card_bytes(t, l);
  }
  if (s.token_history)  // token ids stay with the first stage (Engram lookups)
    out.front().state_bytes += s.precision.token_history.bytes(length);
  return out;
}

std::string deployment_name(const fit& f) {
  if (f.instances == 1) return layout_name(f.l);
  return fmt::format("{} x ({})", f.instances, layout_name(f.l));
}

std::int64_t fit::total_requests() const {
  if (max_requests == INT64_MAX) return max_requests;
  checked all = checked(max_requests) * instances;
  return all.fits_int64() ? all.value() : INT64_MAX;
}

std::int64_t layout_requests(const std::vector<card_load>& loads, const layout& l, checked memory,
                             checked workspace) {
  std::int64_t fewest = INT64_MAX;
  for (const card_load& c : loads) {
    checked free = memory - c.weight_bytes - workspace;
    if (free < 0) return 0;
    if (c.state_bytes > 0) fewest = std::min(fewest, (free / c.state_bytes).value());
  }
  if (fewest == INT64_MAX) return fewest;
  return (checked(fewest) * l.dp).fits_int64() ? fewest * l.dp : INT64_MAX;
}

fit evaluate_layout(const graph& g, const gpu_spec& gpu, const layout& l, std::int64_t length,
                    std::int64_t requests, checked workspace) {
  fit f;
  f.l = l;
  f.loads = card_loads(g, l, length);
  // The requests spread over the dp groups; the fullest group holds ceil(requests / dp).
  std::int64_t per_group = (requests + l.dp - 1) / l.dp;
  bool first = true;
  for (const card_load& c : f.loads) {
    checked free = checked(gpu.memory) - c.weight_bytes - workspace - c.state_bytes * per_group;
    if (first || free < f.worst_free) f.worst_free = free;
    first = false;
  }
  f.fits = f.worst_free >= 0;
  f.max_requests = layout_requests(f.loads, l, checked(gpu.memory), workspace);
  return f;
}

std::vector<layout> deployable_layouts(const graph& g, const gpu_spec& gpu, std::int64_t cards,
                                       std::int64_t node_gpus) {
  // The tp group spans the NVLink domain, or the server over PCIe where the card crosses it
  // (PCIe cards and bridged pairs run tp 8 per server, as engines do): the same bound serve
  // and plan --sla cost a layout by.
  const std::int64_t domain = tp_domain(gpu, node_gpus);
  std::int64_t layers = static_cast<std::int64_t>(g.layers.size());
  // Pipeline stages start past the largest valid tp within the domain; on bridged cards also
  // past the bridge (tp 2 x pp 3 on three H100 NVL pairs: stages over PCIe, each pair's
  // all-reduces over NVLink), never from tp 1 on cards that could run a wider group.
  const std::int64_t bridge = gpu.nvlink_domain > 1 ? gpu.nvlink_domain : 0;
  std::int64_t widest_tp = 0, widest_bridged = 0;
  for (std::int64_t tp = 1; tp <= domain; tp *= 2)
    if (layout_problem(g, layout{tp, 1, 1, 1}).empty()) {
      widest_tp = tp;
      if (tp <= bridge) widest_bridged = tp;
    }
  std::vector<layout> out;
  for (std::int64_t tp = 1; tp <= std::min(cards, domain); tp *= 2) {
    if (cards % tp != 0) continue;
    std::int64_t pp = cards / tp;
    bool stages_start = tp == widest_tp || (tp == widest_bridged && tp > 1);
    if (pp > layers || (pp > 1 && !stages_start)) continue;
    std::vector<layout> shapes = {layout{tp, pp, 1, 1}};
    if (tp > 1 && has_ffn<ffn_moe>(g)) shapes.push_back(layout{tp, pp, tp, 1});
    if (tp > 1 && has_attention<attention_mla>(g))
      shapes.push_back(layout{tp, pp, has_ffn<ffn_moe>(g) ? tp : 1, tp});
    for (const layout& l : shapes)
      if (layout_problem(g, l).empty()) out.push_back(l);
  }
  return out;
}

placement_plan plan_placement(const graph& g, const gpu_spec& gpu, std::int64_t length,
                              std::int64_t requests, checked workspace, std::int64_t node_gpus,
                              std::int64_t max_cards) {
  placement_plan p;
  // Serves better: fits, then holds more requests, then fewer stages, then more free memory.
  auto better = [](const fit& a, const fit& b) {
    if (a.fits != b.fits) return a.fits;
    if (a.total_requests() != b.total_requests()) return a.total_requests() > b.total_requests();
    if (a.l.pp != b.l.pp) return a.l.pp < b.l.pp;
    return a.worst_free > b.worst_free;
  };
  for (std::int64_t n = 1; n <= max_cards; ++n) {
    // Past one node, a deployment takes whole nodes.
    if (n > node_gpus && n % node_gpus != 0) continue;
    p.searched_up_to = n;
    std::optional<fit> best_here;
    for (std::int64_t c = 1; c <= n; ++c) {  // cards of one instance
      if (n % c != 0 || (c > node_gpus && c % node_gpus != 0)) continue;
      std::int64_t instances = n / c;
      if (instances > std::max<std::int64_t>(requests, 1)) continue;  // an idle replica
      std::int64_t each = (requests + instances - 1) / instances;
      for (const layout& l : deployable_layouts(g, gpu, c, node_gpus)) {
        fit f = evaluate_layout(g, gpu, l, length, each, workspace);
        f.instances = instances;
        if (!best_here || better(f, *best_here)) best_here = f;
      }
    }
    if (!best_here) continue;
    if (best_here->fits) {
      p.best = best_here;
      return p;
    }
    // "Why not fewer" names the deployment that comes closest below the answer: with 7 H200s
    // the only layouts engines run are replicas of narrower groups, and seven single cards
    // 400 GiB short each explain less than tp 4 on four cards a few GiB short.
    if (!p.below || best_here->worst_free >= p.below->worst_free) p.below = best_here;
  }
  return p;
}

}  // namespace calc
