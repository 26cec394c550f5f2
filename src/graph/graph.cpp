#include "graph/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace calc {

namespace {

struct describe_visitor {
  std::string operator()(const attention_gqa& a) const {
    std::string s = fmt::format("gqa {}q/{}kv x{}", a.q_heads, a.kv_heads, a.head_dim);
    if (a.v_head_dim) s += fmt::format(" v{}", *a.v_head_dim);
    if (a.output_gate) s += " gated";
    if (a.window) s += fmt::format(" window {}", *a.window);
    if (a.chunk) s += fmt::format(" chunk {}", *a.chunk);
    if (a.block_sparse)
      s += fmt::format(" block-sparse {}x{}/{}{}", a.block_sparse->block,
                       a.block_sparse->local_blocks, a.block_sparse->vert_stride,
                       a.block_sparse->homo_heads ? " homo" : "");
    if (a.sinks) s += " sinks";
    if (a.k_is_v) s += " k=v";
    if (a.kv_source) s += fmt::format(" kv from layer {}", *a.kv_source);
    return s;
  }
  std::string operator()(const attention_mla& a) const {
    return fmt::format("mla {}h latent {}+{}", a.heads, a.kv_rank, a.qk_rope);
  }
  std::string operator()(const attention_gdn& a) const {
    if (a.lightning())
      return fmt::format("lightning {}h {}x{} block {}", a.v_heads, a.key_dim, a.value_dim,
                         a.block);
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
    if (a.selective())
      return fmt::format("mamba {} channels state {} dt rank {}", a.heads, a.state_dim, a.dt_rank);
    if (a.short_conv()) return fmt::format("short conv {} channels x{}", a.heads, a.conv_kernel);
    std::string s = fmt::format("mamba2 {}h x{} state {}", a.heads, a.head_dim, a.state_dim);
    if (a.groups > 1) s += fmt::format(" {} groups", a.groups);
    return s;
  }
  std::string operator()(const attention_none&) const { return "no mixer"; }
  std::string operator()(const attention_parallel& a) const {
    return (*this)(a.attention) + " & " + (*this)(a.mixer);  // no "|": it splits table cells
  }
  std::string operator()(const ffn_none&) const { return "no ffn"; }
  std::string operator()(const ffn_swiglu& f) const {
    return fmt::format("swiglu {}", f.intermediate);
  }
  std::string operator()(const ffn_mlp& f) const { return fmt::format("mlp {}", f.intermediate); }
  std::string operator()(const ffn_moe& f) const {
    std::string s = fmt::format("moe {}e top-{} x{}", f.experts, f.top_k, f.intermediate);
    if (f.shared_experts > 0) s += fmt::format(" + {} shared", f.shared_experts);
    if (f.latent > 0) s += fmt::format(" latent {}", f.latent);
    if (!f.gated) s += " ungated";
    return s;
  }
};

/// Every field of a layer kind as text: the key that groups layers in one hash lookup instead of
/// comparing each layer with every group (100,000 distinct overrides made that quadratic). A
/// field missing here only makes a bucket hold more than one structure: == still decides.
struct signature_visitor {
  static std::string opt(const std::optional<std::int64_t>& v) {
    return v ? std::to_string(*v) : "-";
  }
  std::string operator()(const attention_gqa& a) const {
    std::string bs =
        a.block_sparse
            ? fmt::format("{}/{}/{}/{}", a.block_sparse->block, a.block_sparse->local_blocks,
                          a.block_sparse->vert_stride, a.block_sparse->homo_heads)
            : "-";
    return fmt::format("gqa {} {} {} {}{}{}{}{} {} {} {} {}{} {} {}", a.q_heads, a.kv_heads,
                       a.head_dim, a.qk_norm, a.qk_norm_full, a.output_gate, a.qkv_bias, a.o_bias,
                       opt(a.window), opt(a.chunk), bs, a.sinks, a.k_is_v, opt(a.kv_source),
                       opt(a.v_head_dim));
  }
  std::string operator()(const attention_mamba2& a) const {
    return fmt::format("mamba2 {} {} {} {} {} {}{}{} {} {} {}", a.heads, a.head_dim, a.state_dim,
                       a.groups, a.conv_kernel, a.conv_bias, a.proj_bias, a.gated_norm,
                       static_cast<int>(a.scan), a.dt_rank, a.dt_norms);
  }
  std::string operator()(const attention_none&) const { return "none"; }
  std::string operator()(const attention_parallel& a) const {
    return "parallel " + (*this)(a.attention) + " | " + (*this)(a.mixer);
  }
  std::string operator()(const ffn_none&) const { return "none"; }
  std::string operator()(const attention_mla& a) const {
    return fmt::format("mla {} {} {} {} {} {} {}{}", a.heads, a.q_rank, a.kv_rank, a.qk_nope,
                       a.qk_rope, a.v_head, a.rope_branch, a.output_gate);
  }
  std::string operator()(const attention_gdn& a) const {
    return fmt::format("gdn {} {} {} {} {} {} {}", a.qk_heads, a.v_heads, a.key_dim, a.value_dim,
                       a.conv_kernel, static_cast<int>(a.rule), a.block);
  }
  std::string operator()(const attention_kda& a) const {
    return fmt::format("kda {} {} {} {} {} {} {}", a.heads, a.key_dim, a.value_dim, a.decay_rank,
                       a.conv_kernel, a.output_gate, a.gate_rank);
  }
  std::string operator()(const attention_dsa& a) const {
    std::string s = fmt::format("dsa {} {} {} {} {} {} {}", a.heads, a.head_dim, a.q_rank,
                                a.o_groups, a.o_rank, a.window, a.sink);
    if (a.global)
      s += fmt::format(" g {} {} {} {}{}{}", a.global->ratio, a.global->top_k, a.global->source,
                       a.global->overlap, a.global->gate, a.global->position_bias);
    if (a.indexer)
      s += fmt::format(" i {} {} {} {} {}", a.indexer->heads, a.indexer->dim, a.indexer->top_k,
                       static_cast<int>(a.indexer->keys), a.indexer->candidates);
    return s;
  }
  std::string operator()(const ffn_swiglu& f) const {
    return fmt::format("swiglu {} {}", f.intermediate, f.bias);
  }
  std::string operator()(const ffn_mlp& f) const {
    return fmt::format("mlp {} {} {}", f.intermediate, f.bias, f.activation_params);
  }
  std::string operator()(const ffn_moe& f) const {
    return fmt::format("moe {} {} {} {} {} {}{}{} {} {} {} {}", f.experts, f.top_k,
                       f.intermediate, f.shared_experts, f.shared_intermediate, f.shared_gate,
                       f.router, f.router_bias, f.latent, f.latent_norm, f.expert_bias, f.gated);
  }
};

std::string signature(const layer& l) {
  std::string s = std::visit(signature_visitor{}, l.attention) + " | " +
                  std::visit(signature_visitor{}, l.ffn) + fmt::format(" | {}", l.norms);
  if (l.engram)
    s += fmt::format(" | {} {} {} {}", l.engram->table_rows, l.engram->buckets,
                     l.engram->bucket_dim, l.engram->ways);
  return s;
}

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
  // Layers of equal structure form one group (Table 2-A's layer types): candidates come from a
  // hash of the full structure, so grouping is linear in the layers.
  std::unordered_map<std::string, std::vector<std::size_t>> by_signature;
  std::unordered_map<std::string, int> named;  // groups per described name, for "(variant N)"
  // Layers of one pattern variant without an override are equal by construction: only the first
  // of each is hashed (spelling a signature per layer was most of the time of building a graph).
  std::unordered_map<std::string, std::size_t> variant_group;
  for (const layer& l : g.layers) {
    if (l.variant != "override") {
      auto known = variant_group.find(l.variant);
      if (known != variant_group.end()) {
        g.groups[known->second].indices.push_back(l.index);
        continue;
      }
    }
    std::vector<std::size_t>& bucket = by_signature[signature(l)];
    auto same = [&](std::size_t grp) {
      const layer& o = g.layers[static_cast<std::size_t>(g.groups[grp].indices.front())];
      return o.attention == l.attention && o.ffn == l.ffn && o.norms == l.norms &&
             o.engram == l.engram;
    };
    auto it = std::find_if(bucket.begin(), bucket.end(), same);
    std::size_t grp = 0;
    if (it == bucket.end()) {
      // A layer without one of its halves is named by the half it has (Nemotron-H's M, -, E).
      std::string name = std::holds_alternative<attention_none>(l.attention) ? describe(l.ffn)
                         : std::holds_alternative<ffn_none>(l.ffn)
                             ? describe(l.attention)
                             : fmt::format("{} + {}", describe(l.attention), describe(l.ffn));
      if (l.engram) name += fmt::format(" + engram {} rows", l.engram->table_rows);
      if (l.norms != 2) name += fmt::format(" + {} norms", l.norms);
      int twins = named[name]++;
      if (twins > 0) name += fmt::format(" (variant {})", twins + 1);  // differs in a detail
      g.groups.push_back({name, {}});
      grp = g.groups.size() - 1;
      bucket.push_back(grp);
    } else {
      grp = *it;
    }
    g.groups[grp].indices.push_back(l.index);
    if (l.variant != "override") variant_group.emplace(l.variant, grp);
  }
  return g;
}

}  // namespace calc
