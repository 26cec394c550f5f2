#include "graph/graph.h"

#include <fmt/format.h>

#include <algorithm>

namespace calc {

namespace {

struct describe_visitor {
  std::string operator()(const attention_gqa& a) const {
    std::string s = fmt::format("gqa {}q/{}kv x{}", a.q_heads, a.kv_heads, a.head_dim);
    if (a.output_gate) s += " gated";
    if (a.window) s += fmt::format(" window {}", *a.window);
    if (a.sinks) s += " sinks";
    if (a.k_is_v) s += " k=v";
    if (a.kv_source) s += fmt::format(" kv from layer {}", *a.kv_source);
    return s;
  }
  std::string operator()(const attention_mla& a) const {
    return fmt::format("mla {}h latent {}+{}", a.heads, a.kv_rank, a.qk_rope);
  }
  std::string operator()(const attention_gdn& a) const {
    return fmt::format("gated deltanet {}qk/{}v {}x{}", a.qk_heads, a.v_heads, a.key_dim,
                       a.value_dim);
  }
  std::string operator()(const attention_kda& a) const {
    return fmt::format("kda {}h {}x{}", a.heads, a.key_dim, a.value_dim);
  }
  std::string operator()(const attention_dsa& a) const {
    std::string s = fmt::format("dsa {}h x{} window {}", a.heads, a.head_dim, a.window);
    if (a.global) {
      s += fmt::format(" + 1:{}", a.global->ratio);
      if (a.global->source >= 0) s += fmt::format(" from layer {}", a.global->source);
      if (a.global->top_k > 0) s += fmt::format(" top-{}", a.global->top_k);
    }
    if (a.indexer) s += " indexed";
    return s;
  }
  std::string operator()(const attention_mamba2& a) const {
    std::string s = fmt::format("mamba2 {}h x{} state {}", a.heads, a.head_dim, a.state_dim);
    if (a.groups > 1) s += fmt::format(" {} groups", a.groups);
    return s;
  }
  std::string operator()(const attention_none&) const { return "no mixer"; }
  std::string operator()(const ffn_none&) const { return "no ffn"; }
  std::string operator()(const ffn_swiglu& f) const {
    return fmt::format("swiglu {}", f.intermediate);
  }
  std::string operator()(const ffn_mlp& f) const { return fmt::format("mlp {}", f.intermediate); }
  std::string operator()(const ffn_moe& f) const {
    std::string s = fmt::format("moe {}e top-{} x{}", f.experts, f.top_k, f.intermediate);
    if (f.shared_experts > 0) s += fmt::format(" + {} shared", f.shared_experts);
    if (f.latent > 0) s += fmt::format(" latent {}", f.latent);
    return s;
  }
};

void apply(const block_spec& b, layer& l) {
  if (b.attention) l.attention = *b.attention;
  if (b.ffn) l.ffn = *b.ffn;
  if (b.norms) l.norms = *b.norms;
  if (b.engram) l.engram = b.engram;
}

}  // namespace

std::string describe(const attention_spec& a) { return std::visit(describe_visitor{}, a); }
std::string describe(const ffn_spec& f) { return std::visit(describe_visitor{}, f); }

graph build_graph(const model_spec& spec) {
  graph g;
  g.spec = &spec;
  const layers_spec& ls = spec.layers;
  g.layers.reserve(static_cast<std::size_t>(ls.count));
  for (std::int64_t i = 0; i < ls.count; ++i) {
    layer l;
    l.index = i;
    l.variant = "base";
    apply(ls.base, l);
    if (!ls.pattern.empty()) {
      l.variant = ls.pattern[static_cast<std::size_t>(i) % ls.pattern.size()];
      if (l.variant != "base") apply(ls.variants.at(l.variant), l);
    }
    g.layers.push_back(l);
  }
  for (const override_spec& ov : ls.overrides) {
    for (std::int64_t i : ov.at) {
      layer& l = g.layers[static_cast<std::size_t>(i)];
      apply(ov.block, l);
      l.variant = "override";
    }
  }
  // Layers of equal structure form one group (Table 2-A's layer types).
  for (const layer& l : g.layers) {
    auto same = [&](const layer_group& grp) {
      const layer& o = g.layers[static_cast<std::size_t>(grp.indices.front())];
      return o.attention == l.attention && o.ffn == l.ffn && o.norms == l.norms &&
             o.engram == l.engram;
    };
    auto it = std::find_if(g.groups.begin(), g.groups.end(), same);
    if (it == g.groups.end()) {
      // A layer without one of its halves is named by the half it has (Nemotron-H's M, -, E).
      std::string name = std::holds_alternative<attention_none>(l.attention) ? describe(l.ffn)
                         : std::holds_alternative<ffn_none>(l.ffn)
                             ? describe(l.attention)
                             : fmt::format("{} + {}", describe(l.attention), describe(l.ffn));
      if (l.engram) name += fmt::format(" + engram {} rows", l.engram->table_rows);
      if (l.norms != 2) name += fmt::format(" + {} norms", l.norms);
      int twins = static_cast<int>(
          std::count_if(g.groups.begin(), g.groups.end(),
                        [&](const layer_group& grp) { return grp.name.rfind(name, 0) == 0; }));
      if (twins > 0) name += fmt::format(" (variant {})", twins + 1);  // differs in a detail
      g.groups.push_back({name, {}});
      it = g.groups.end() - 1;
    }
    it->indices.push_back(l.index);
  }
  return g;
}

}  // namespace calc
