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

namespace {

model_context context_of(const graph& g) { return {g.spec->hidden, &g.spec->precision}; }

void layer_tensors(const layer& l, const model_context& m, std::vector<tensor>& out) {
  std::visit([&](const auto& a) { add_tensors(a, m, out); }, l.attention);
  std::visit([&](const auto& f) { add_tensors(f, m, out); }, l.ffn);
  // Input and post-attention RMSNorm: one d-wide vector each.
  out.push_back({"norms", "layer_norms", category::other, checked(l.norms) * m.hidden,
                 &m.precision->norms});
}

void model_level_tensors(const model_spec& s, std::vector<tensor>& out) {
  checked vd = checked(s.vocab) * s.hidden;
  // An untied table is only looked up by rows; a tied one is also the vocabulary head.
  out.push_back({"embedding", "embed_tokens", category::embedding_output, vd,
                 &s.precision.embedding, !s.tie_embeddings});
  if (!s.tie_embeddings)
    out.push_back({"head", "lm_head", category::embedding_output, vd, &s.precision.head});
  if (s.final_norm)
    out.push_back({"final_norm", "norm", category::other, s.hidden, &s.precision.norms});
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

checked sum_params(const std::vector<tensor>& ts, const std::string& module) {
  checked s = 0;
  for (const tensor& t : ts)
    if (t.module == module) s += t.params;
  return s;
}

checked sum_bytes(const std::vector<tensor>& ts, const std::string& module) {
  checked s = 0;
  for (const tensor& t : ts)
    if (t.module == module) s += t.format->bytes(t.params);
  return s;
}

}  // namespace

std::vector<tensor> model_tensors(const graph& g) {
  model_context m = context_of(g);
  std::vector<tensor> out;
  for (const layer& l : g.layers) layer_tensors(l, m, out);
  model_level_tensors(*g.spec, out);
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
  }
  p.bf16_bytes = p.total * 2;
  p.active = p.total - p.categories[category::routed_experts];
  p.selected_expert_bytes_per_token = 0;

  model_context m = context_of(g);
  for (const layer_group& grp : g.groups) {
    std::vector<tensor> ts;
    layer_tensors(g.layers[static_cast<std::size_t>(grp.indices.front())], m, ts);
    group_params gp;
    gp.name = grp.name;
    gp.layers = static_cast<std::int64_t>(grp.indices.size());
    gp.attention = sum_params(ts, "attention");
    gp.ffn = sum_params(ts, "ffn");
    gp.other = sum_params(ts, "norms");
    gp.attention_bytes = sum_bytes(ts, "attention");
    gp.ffn_bytes = sum_bytes(ts, "ffn");
    p.groups.push_back(gp);
  }
  return p;
}

forward_tally tally_forward(const graph& g, const call& c) {
  const model_spec& s = *g.spec;
  model_context m = context_of(g);
  forward_tally f;
  for (const layer& l : g.layers) {
    std::vector<tensor> ts;
    layer_tensors(l, m, ts);
    work a = std::visit([&](const auto& x) { return flops(x, m, c); }, l.attention);
    work ff = std::visit([&](const auto& x) { return flops(x, m, c); }, l.ffn);
    f.linear_flops += a.linear + ff.linear;
    f.interaction_flops += a.interaction + ff.interaction;
    add_module(f.modules, "attention projections", a.linear, sum_params(ts, "attention"));
    add_module(f.modules, "attention interaction (QK, AV)", a.interaction, 0);
    add_module(f.modules, "feed-forward", ff.linear + ff.interaction, sum_params(ts, "ffn"));
    std::visit(
        [&](const attention_gqa& x) { f.pairs += attention_pairs(c, x.window); }, l.attention);
  }
  checked vd = checked(s.vocab) * s.hidden;
  f.vocab_flops = checked(2) * c.vocab_rows() * vd;  // §2.1.4: 2 * m_out * d * V
  add_module(f.modules, "embedding lookup", 0, vd);
  add_module(f.modules, "vocabulary head", f.vocab_flops, s.tie_embeddings ? 0 : vd);
  f.flops = f.linear_flops + f.interaction_flops + f.vocab_flops;
  params_tally p = tally_params(g);
  checked table_params = vd * (s.tie_embeddings ? 1 : 2);
  f.stages.push_back({"layers", f.linear_flops + f.interaction_flops, p.total - table_params});
  f.stages.push_back({"vocabulary head", f.vocab_flops, vd});
  f.weight_read_bytes = p.shared_read_bytes;
  f.embedding_read_bytes = c.rows() * s.precision.embedding.bytes(s.hidden);
  return f;
}

state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch) {
  model_context m = context_of(g);
  state_tally st;
  st.length = length;
  st.batch = batch;
  for (const layer& l : g.layers) {
    auto comps = std::visit([&](const auto& a) { return state(a, m); }, l.attention);
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
      if (sc.read_write_each_step) {
        st.decode_state_rw += bytes * 2;
      } else {
        st.decode_read += bytes;  // the history is read once per step, reused across heads
      }
      if (!sc.cap) st.per_token += checked(batch) * sc.per_token;
    }
  }
  st.total = st.fixed + st.growing;
  return st;
}

}  // namespace calc
