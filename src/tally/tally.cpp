#include "tally/tally.h"

#include <algorithm>

namespace calc {

const char* category_key(category c) {
  switch (c) {
    case category::embedding_output: return "embedding_output";
    case category::attention: return "attention";
    case category::dense_shared_ffn: return "dense_shared_ffn";
    case category::routed_experts: return "routed_experts";
    case category::engram: return "engram";
    case category::other: return "other";
  }
  return "other";
}

checked tensor::gemm_weight_rows(checked m) const {
  if (!gemm) return 0;
  if (per_token == 0) return m * params;
  return m * per_token * (params / instances);
}

checked tensor::read_bytes(checked m) const {
  if (lookup_only) return 0;
  if (per_token == 0) return format->bytes(params);
  // At most m*k distinct experts can be touched (every token choosing different ones).
  checked touched = min(instances, m * per_token);
  return touched * format->bytes(params / instances);
}

namespace {

model_context context_of(const graph& g) { return {g.spec->hidden, &g.spec->precision}; }

/// Display names of the modules a call's FLOPs are itemised by.
std::string module_label(const std::string& module) {
  if (module == "attention") return "attention projections";
  if (module == "ffn") return "feed-forward";
  if (module == "experts") return "routed experts";
  if (module == "shared_experts") return "shared experts";
  if (module == "router") return "router";
  if (module == "latent") return "latent projections";
  return module;
}

void add_module(std::vector<module_flops>& modules, const std::string& name, checked flops,
                checked params) {
  auto it = std::find_if(modules.begin(), modules.end(),
                         [&](const module_flops& m) { return m.name == name; });
  if (it == modules.end()) {
    modules.push_back({name, flops, params});
  } else {
    it->flops += flops;
    it->params += params;
  }
}

bool is_ffn_module(const std::string& module) {
  return module == "ffn" || module == "experts" || module == "shared_experts" ||
         module == "router" || module == "latent";
}

}  // namespace

void layer_tensors(const layer& l, const model_context& m, std::vector<tensor>& out) {
  std::visit([&](const auto& a) { add_tensors(a, m, out); }, l.attention);
  std::visit([&](const auto& f) { add_tensors(f, m, out); }, l.ffn);
  // Input and post-attention RMSNorm: one d-wide vector each.
  out.push_back({"norms", "layer_norms", category::other, checked(l.norms) * m.hidden,
                 &m.precision->norms});
}

std::vector<tensor> model_tensors(const graph& g) {
  const model_spec& s = *g.spec;
  model_context m = context_of(g);
  std::vector<tensor> out;
  for (const layer& l : g.layers) layer_tensors(l, m, out);
  checked vd = checked(s.vocab) * s.hidden;
  // An untied table is only looked up by rows; a tied one is also the vocabulary head.
  out.push_back({"embedding", "embed_tokens", category::embedding_output, vd,
                 &s.precision.embedding, false, 1, 0, !s.tie_embeddings});
  if (!s.tie_embeddings)
    out.push_back({"head", "lm_head", category::embedding_output, vd, &s.precision.head});
  if (s.final_norm)
    out.push_back({"norms", "final_norm", category::other, s.hidden, &s.precision.norms});
  if (s.connection.type == connection_spec::kind::attnres) {
    // A norm and a projection vector per sublayer mix, plus the output mix.
    checked mixes = checked(2) * s.layers.count + 1;
    out.push_back({"connection", "attnres", category::other, mixes * 2 * s.hidden,
                   &s.precision.norms});
  }
  return out;
}

params_tally tally_params(const graph& g) {
  params_tally p;
  for (category c : {category::embedding_output, category::attention, category::dense_shared_ffn,
                     category::routed_experts, category::engram, category::other})
    p.categories[c] = 0;
  for (const tensor& t : model_tensors(g)) {
    checked bytes = t.format->bytes(t.params);
    p.total += t.params;
    p.categories[t.cat] += t.params;
    p.weight_bytes += bytes;
    if (t.lookup_only) {
      p.lookup_bytes += bytes;
    } else {
      p.shared_read_bytes += bytes;
    }
    if (t.per_token > 0) {
      checked one = t.params / t.instances;
      p.active += one * t.per_token;
      p.selected_expert_bytes_per_token += t.format->bytes(one) * t.per_token;
    } else {
      p.active += t.params;
    }
  }
  p.bf16_bytes = p.total * 2;

  model_context m = context_of(g);
  for (const layer_group& grp : g.groups) {
    std::vector<tensor> ts;
    layer_tensors(g.layers[static_cast<std::size_t>(grp.indices.front())], m, ts);
    group_params gp;
    gp.name = grp.name;
    gp.layers = static_cast<std::int64_t>(grp.indices.size());
    for (const tensor& t : ts) {
      checked bytes = t.format->bytes(t.params);
      if (t.module == "attention") {
        gp.attention += t.params;
        gp.attention_bytes += bytes;
      } else if (is_ffn_module(t.module)) {
        gp.ffn += t.params;
        gp.ffn_bytes += bytes;
      } else {
        gp.other += t.params;
      }
    }
    p.groups.push_back(gp);
  }
  return p;
}

forward_tally tally_forward(const graph& g, const call& c) {
  const model_spec& s = *g.spec;
  model_context m = context_of(g);
  forward_tally f;
  checked rows = c.rows();
  for (const layer& l : g.layers) {
    std::vector<tensor> ts;
    layer_tensors(l, m, ts);
    for (const tensor& t : ts) {
      checked flops = checked(2) * t.gemm_weight_rows(rows);
      f.linear_flops += flops;
      f.weight_read_bytes += t.read_bytes(rows);
      if (t.gemm) add_module(f.modules, module_label(t.module), flops, t.params);
    }
    work w = std::visit([&](const auto& a) { return flops(a, m, c); }, l.attention);
    f.interaction_flops += w.interaction;
    f.state_flops += w.state;
    add_module(f.modules, "attention interaction (QK, AV)", w.interaction, 0);
    if (w.state > 0) add_module(f.modules, "linear-attention state and conv", w.state, 0);
  }
  if (s.connection.type == connection_spec::kind::attnres) {
    f.connection_flops = checked(2) * s.hidden *
                         attnres_candidates(s.layers.count, s.connection.block_layers) * rows;
    add_module(f.modules, "connections (AttnRes mixes)", f.connection_flops, 0);
  }
  if (s.rope_table_frequencies > 0) {
    f.rope_flops = checked(2) * rows * s.rope_table_frequencies;  // positions x frequencies
    add_module(f.modules, "rope table", f.rope_flops, 0);
  }
  checked vd = checked(s.vocab) * s.hidden;
  f.vocab_flops = checked(2) * c.vocab_rows() * vd;  // §2.1.4: 2 * m_out * d * V
  add_module(f.modules, "embedding lookup", 0, vd);
  add_module(f.modules, "vocabulary head", f.vocab_flops, s.tie_embeddings ? 0 : vd);
  checked body = f.linear_flops + f.interaction_flops + f.state_flops + f.connection_flops +
                 f.rope_flops;
  f.flops = body + f.vocab_flops;
  params_tally p = tally_params(g);
  checked table_params = vd * (s.tie_embeddings ? 1 : 2);
  f.stages.push_back({"layers", body, p.total - table_params});
  f.stages.push_back({"vocabulary head", f.vocab_flops, vd});
  // Model-level tensors read once per call: the head (whole), final norm, connection vectors.
  for (const tensor& t : model_tensors(g))
    if (t.module == "head" || t.module == "connection" || t.name == "final_norm" ||
        (t.module == "embedding" && !t.lookup_only))
      f.weight_read_bytes += t.read_bytes(rows);
  f.embedding_read_bytes = rows * s.precision.embedding.bytes(s.hidden);
  return f;
}

state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch,
                        const execution_spec& exec) {
  model_context m = context_of(g);
  state_tally st;
  st.length = length;
  st.batch = batch;
  for (const layer& l : g.layers) {
    auto comps = std::visit([&](const auto& a) { return state(a, m, exec); }, l.attention);
    for (const state_component& sc : comps) {
      checked bytes = checked(batch) * sc.bytes(length);
      checked fixed_part = checked(batch) * sc.fixed;
      auto it = std::find_if(st.items.begin(), st.items.end(),
                             [&](const state_item& i) { return i.name == sc.name; });
      if (it == st.items.end()) {
        st.items.push_back({sc.name, 0, 0, 0, sc.per_token == 0, sc.read_write_each_step});
        it = st.items.end() - 1;
      }
      it->layers += 1;
      it->bytes += bytes;
      if (!sc.cap) it->per_token += checked(batch) * sc.per_token;
      st.fixed += fixed_part;
      st.growing += bytes - fixed_part;
      if (sc.read_write_each_step) st.decode_state_rw += bytes * 2;
      // The history is read once per decode step and reused across heads (§2.3.6).
      if (sc.read_each_step) st.decode_read += bytes;
      if (!sc.cap) st.per_token += checked(batch) * sc.per_token;
    }
  }
  st.total = st.fixed + st.growing;
  return st;
}

state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch) {
  return tally_state(g, length, batch, g.spec->execution);
}

}  // namespace calc
