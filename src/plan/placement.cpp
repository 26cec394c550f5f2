#include "plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace calc {

namespace {

model_context context_of(const graph& g) {
  return {g.spec->hidden, &g.spec->precision, &g.spec->connection, g.spec->layer_norm};
}

/// Heads that tensor parallelism splits in a layer's attention (tp must divide them); 0 for a
/// layer without a mixer (nothing to split).
std::int64_t attention_heads(const attention_spec& a) {
  if (std::holds_alternative<attention_none>(a)) return 0;
  if (const auto* x = std::get_if<attention_gqa>(&a)) return x->q_heads;
  if (const auto* x = std::get_if<attention_mla>(&a)) return x->heads;
  if (const auto* x = std::get_if<attention_gdn>(&a)) return x->v_heads;
  if (const auto* x = std::get_if<attention_kda>(&a)) return x->heads;
  if (const auto* x = std::get_if<attention_mamba2>(&a)) return x->heads;
  // Both branches split over the same cards: tp must divide the query heads and the SSM heads.
  if (const auto* x = std::get_if<attention_parallel>(&a))
    return std::gcd(x->attention.q_heads, x->mixer.heads);
  return std::get<attention_dsa>(a).heads;
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
  std::int64_t split = t.shards == 0 ? l.tp : std::min(l.tp, t.shards);
  return ceil_div(whole, split);
}

}  // namespace

std::string layout_problem(const graph& g, const layout& l) {
  if (l.tp < 1 || l.pp < 1 || l.ep < 1) return "parallel degrees must be at least 1";
  if (l.pp > static_cast<std::int64_t>(g.layers.size()))
    return fmt::format("pp {} exceeds the {} layers", l.pp, g.layers.size());
  for (const layer& ly : g.layers) {
    std::int64_t heads = attention_heads(ly.attention);
    if (heads % l.tp != 0)
      return fmt::format("tp {} does not divide the {} heads of layer {}", l.tp, heads, ly.index);
    if (const auto* moe = std::get_if<ffn_moe>(&ly.ffn))
      if (moe->experts % l.ep != 0)
        return fmt::format("ep {} does not divide the {} experts of layer {}", l.ep, moe->experts,
                           ly.index);
  }
  if (l.ep > l.tp) return fmt::format("ep {} exceeds the tp group of {} cards", l.ep, l.tp);
  return "";
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
      group_state[gi] += ceil_div(sc.bytes(length), std::min(l.tp, sc.shards));
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
  // The embedding table sits with the first stage, the head, final norm and model-level
  // connection tensors with the last; the tables are split over the vocabulary by tp. A layer's
  // own connection tensors (mHC mixes) were counted with its stage above.
  std::vector<tensor> ts;
  model_level_tensors(s, m, ts);
  for (const tensor& t : ts) {
    if (t.module == "embedding") out.front().weight_bytes += card_bytes(t, l);
    if (t.module == "head" || t.name == "final_norm" || t.module == "connection")
      out.back().weight_bytes += card_bytes(t, l);
  }
  if (s.token_history)  // token ids stay with the first stage (Engram lookups)
    out.front().state_bytes += s.precision.token_history.bytes(length);
  return out;
}

fit evaluate_layout(const graph& g, const gpu_spec& gpu, const layout& l, std::int64_t length,
                    std::int64_t requests, checked workspace) {
  fit f;
  f.l = l;
  f.loads = card_loads(g, l, length);
  bool first = true;
  for (const card_load& c : f.loads) {
    checked free = checked(gpu.memory) - c.weight_bytes - workspace - c.state_bytes * requests;
    if (first || free < f.worst_free) f.worst_free = free;
    first = false;
  }
  f.fits = f.worst_free >= 0;
  return f;
}

placement_plan plan_placement(const graph& g, const gpu_spec& gpu, std::int64_t length,
                              std::int64_t requests, checked workspace, std::int64_t node_gpus,
                              std::int64_t max_cards) {
  placement_plan p;
  bool moe = std::any_of(g.layers.begin(), g.layers.end(),
                         [](const layer& l) { return std::holds_alternative<ffn_moe>(l.ffn); });
  for (std::int64_t n = 1; n <= max_cards; ++n) {
    // Past one node, a deployment takes whole nodes.
    if (n > node_gpus && n % node_gpus != 0) continue;
    p.searched_up_to = n;
    std::optional<fit> best_here;
    for (std::int64_t tp = 1; tp <= std::min(n, node_gpus); ++tp) {
      if (n % tp != 0) continue;
      for (std::int64_t ep :
           moe ? std::vector<std::int64_t>{1, tp} : std::vector<std::int64_t>{1}) {
        layout l{tp, n / tp, ep};
        if (!layout_problem(g, l).empty()) continue;
        fit f = evaluate_layout(g, gpu, l, length, requests, workspace);
        if (!best_here || f.worst_free > best_here->worst_free) best_here = f;
      }
    }
    if (!best_here) continue;
    if (best_here->fits) {
      p.best = best_here;
      return p;
    }
    p.below = best_here;
  }
  return p;
}

}  // namespace calc
