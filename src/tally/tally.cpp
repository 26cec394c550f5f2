#include "tally/tally.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace calc {

const char* category_key(category c) {
  switch (c) {
    case category::embedding_output:
      return "embedding_output";
    case category::attention:
      return "attention";
    case category::dense_shared_ffn:
      return "dense_shared_ffn";
    case category::routed_experts:
      return "routed_experts";
    case category::engram:
      return "engram";
    case category::other:
      return "other";
  }
  return "other";
}

checked tensor::rows_in(const call& c) const {
  switch (rows) {
    case row_source::processed:
      return c.rows();
    case row_source::new_positions:
      return c.new_rows();
    case row_source::new_entries:  // entries completed by this call: n/r - S/r per request
      return checked(c.batch) *
             (checked(c.end_position()) / entry_ratio - checked(c.context) / entry_ratio);
  }
  return 0;
}

checked tensor::gemm_weight_rows(const call& c) const {
  if (!gemm) return 0;
  if (per_token == 0) return rows_in(c) * params;
  return rows_in(c) * per_token * (params / instances);
}

checked tensor::bytes() const {
  if (format->row_bits > 0 && inputs == 0)
    throw spec_error("precision",
                     fmt::format("'{}' stores a value per input row of a matrix, but {}.{} is "
                                 "not a matrix (give its role another format)",
                                 format->name, module, name));
  // A record stored once per matrix (compressed-tensors' pack-quantized weight_shape, two
  // int32) is counted per matrix, and the groups of such a format per output row of each
  // matrix, as the checkpoint stores weight_scale [out, ceil(in / group)].
  checked per_matrix = 0;
  if (format->matrix_bits > 0 && inputs == 0 && !shapes.empty())
    // compressed-tensors sizes a scale grid by the weight's sides for nn.Linear modules only and
    // packs two-dimensional weights only: a convolution's taps are never stored pack-quantized.
    throw spec_error("precision",
                     fmt::format("'{}' is compressed-tensors' layout of a Linear weight, but {}.{} "
                                 "is not a Linear (give its role another format: "
                                 "precision.conv_taps for convolution taps)",
                                 format->name, module, name));
  if (format->matrix_bits > 0) {
    checked values = 0, matrices = 0, groups = 0;
    for (const matrix_shape& s : shapes) {
      values += s.count * s.in * s.out;
      matrices += s.count;
      if (format->group > 0) groups += s.count * s.out * ceil_div(s.in, format->group);
    }
    if (shapes.empty() || values != params)
      throw spec_error("precision",
                       fmt::format("'{}' stores a record per matrix, but {}.{} is not a matrix "
                                   "of known sides (give its role another format)",
                                   format->name, module, name));
    per_matrix = format->matrix_bytes(matrices);
    if (format->block_rows == 0 && format->group > 0)
      return format->block_bytes(params, groups, inputs) + per_matrix;
  }
  if (format->block_rows > 0 && !shapes.empty()) {
    // Scale blocks counted per matrix, each side rounded up (576 rows are 5 blocks of 128).
    checked values = 0, blocks = 0;
    for (const matrix_shape& s : shapes) {
      values += s.count * s.in * s.out;
      blocks += s.count * format->blocks(s.in, s.out);
    }
    if (values == params) return format->block_bytes(params, blocks, inputs) + per_matrix;
  }
  // Per-row scales have no group to fall back on: their count is the matrices' output rows.
  if (format->block_rows == 1 && format->block_cols == 0)
    throw spec_error("precision",
                     fmt::format("'{}' stores a scale per output row of a matrix, but {}.{} is "
                                 "not a matrix of known sides (give its role another format)",
                                 format->name, module, name));
  return format->bytes(params, inputs) + per_matrix;
}

checked tensor::instance_bytes() const {
  if (instances == 1) return bytes();
  tensor one = *this;
  one.params = params / instances;
  one.inputs = inputs / instances;
  one.instances = 1;
  for (matrix_shape& s : one.shapes) {
    if ((s.count / instances) * instances != s.count) {  // instances differ: the group rule
      one.shapes.clear();
      break;
    }
    s.count = s.count / instances;
  }
  return one.bytes();
}

checked tensor::read_bytes(const call& c) const {
  if (lookup_only || idle) return 0;
  if (per_token == 0) return bytes();
  // At most m*k distinct experts can be touched (every token choosing different ones).
  checked touched = min(instances, rows_in(c) * per_token);
  return touched * instance_bytes();
}

namespace {

model_context context_of(const graph& g) {
  return {g.spec->hidden, &g.spec->precision, &g.spec->connection, g.spec->layer_norm};
}

/// Display names of the modules a call's FLOPs are itemised by.
std::string module_label(const std::string& module) {
  if (module == "attention") return "attention projections";
  if (module == "ffn") return "feed-forward";
  if (module == "experts") return "routed experts";
  if (module == "shared_experts") return "shared experts";
  if (module == "router") return "router";
  if (module == "latent") return "latent projections";
  if (module == "engram") return "engram projections";
  if (module == "connection") return "connections (mHC mixes)";
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
  if (l.engram) add_tensors(*l.engram, m, out);
  if (m.connection) add_connection_layer_tensors(*m.connection, m, out);
  // Input and post-attention norms: one d-wide vector each (two with LayerNorm's bias).
  out.push_back({"norms", "layer_norms", category::other,
                 checked(l.norms) * m.hidden * m.norm_vectors(), &m.precision->norms});
}

void model_level_tensors(const model_spec& s, const model_context& m, std::vector<tensor>& out) {
  checked vd = checked(s.vocab) * s.hidden;
  // An untied table is only looked up by rows; a tied one is also the vocabulary head.
  out.push_back({"embedding", "embed_tokens", category::embedding_output, vd,
                 &s.precision.embedding, false, 1, 0, !s.tie_embeddings});
  if (!s.tie_embeddings) {
    tensor head{"head", "lm_head", category::embedding_output, vd, &s.precision.head};
    head.inputs = s.hidden;  // a hidden x vocab matrix (its FLOPs are counted apart)
    head.shapes = {{checked(s.hidden), checked(s.vocab), 1}};
    out.push_back(head);
    if (s.head_bias)  // added to the logits, not multiplied
      out.push_back({"head", "lm_head_bias", category::embedding_output, checked(s.vocab),
                     &s.precision.head});
  }
  if (s.position_embeddings > 0) {  // learned positions: looked up by rows like the token table
    out.push_back({"embedding", "position_embeddings", category::embedding_output,
                   checked(s.position_embeddings) * s.hidden, &s.precision.embedding, false, 1, 0,
                   true});
    // Whole on every card: engines split the token table by vocabulary but build the position
    // table as a plain embedding (vLLM's gpt2.py: wte VocabParallelEmbedding, wpe nn.Embedding).
    out.back().shards = 1;
  }
  if (s.final_norm)
    out.push_back({"norms", "final_norm", category::other, checked(s.hidden) * m.norm_vectors(),
                   &s.precision.norms});
  if (s.embedding_norm)  // BLOOM's word_embeddings_layernorm, as wide as the final norm
    out.push_back({"norms", "embedding_norm", category::other,
                   checked(s.hidden) * m.norm_vectors(), &s.precision.norms});
  add_connection_model_tensors(s, m, out);
}

std::vector<tensor> model_tensors(const graph& g) {
  model_context m = context_of(g);
  std::vector<tensor> out;
  for (const layer& l : g.layers) layer_tensors(l, m, out);
  model_level_tensors(*g.spec, m, out);
  return out;
}

params_tally tally_params(const graph& g) {
  params_tally p;
  for (category c : {category::embedding_output, category::attention, category::dense_shared_ffn,
                     category::routed_experts, category::engram, category::other})
    p.categories[c] = 0;
  auto add = [&](const tensor& t, checked count) {
    checked params = t.params * count;
    checked bytes = t.bytes() * count;
    p.total += params;
    p.categories[t.cat] += params;
    p.weight_bytes += bytes;
    if (t.lookup_only) {
      p.lookup_bytes += bytes;
    } else if (!t.idle) {
      p.shared_read_bytes += bytes;
    }
    // Active: what one token multiplies with; the looked-up table and unselected experts are not.
    if (t.per_token > 0) {
      checked one = t.params / t.instances;
      p.active += one * t.per_token * count;
      p.selected_expert_bytes_per_token += t.instance_bytes() * t.per_token * count;
    } else if (!t.lookup_only && !t.idle) {
      p.active += params;
    }
  };
  // Every layer of a group stores the same tensors: tally one, times the group's size.
  model_context mc = context_of(g);
  for (const layer_group& grp : g.groups) {
    std::vector<tensor> ts;
    layer_tensors(g.layers[static_cast<std::size_t>(grp.indices.front())], mc, ts);
    for (const tensor& t : ts) add(t, static_cast<std::int64_t>(grp.indices.size()));
  }
  std::vector<tensor> head;
  model_level_tensors(*g.spec, mc, head);
  for (const tensor& t : head) add(t, 1);
  p.bf16_bytes = p.total * 2;

  model_context m = context_of(g);
  for (const layer_group& grp : g.groups) {
    std::vector<tensor> ts;
    layer_tensors(g.layers[static_cast<std::size_t>(grp.indices.front())], m, ts);
    group_params gp;
    gp.name = grp.name;
    gp.layers = static_cast<std::int64_t>(grp.indices.size());
    for (const tensor& t : ts) {
      checked bytes = t.bytes();
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

namespace {

/// Table 2-D's stages: with a CED split, encoder / decoder source projections / decoder body.
const char* stage_of(const model_spec& s, std::int64_t layer, const tensor* t) {
  if (!s.ced) return "layers";
  if (layer < s.ced->encoder_layers) return "encoder";
  if (t && t->rows != row_source::processed) return "decoder global KV and index-key projections";
  return "decoder body";
}

/// The call one layer sees: under CED, a decoder layer of a fresh prompt replays only the
/// last `replay` positions and its window cannot reach before them (§2.3.6, MODELS II A9).
call layer_call(const model_spec& s, const call& c, std::int64_t layer) {
  call lc = c;
  if (c.exec.ced && s.ced && layer >= s.ced->encoder_layers && c.context == 0) {
    lc.first = std::max<std::int64_t>(0, c.end_position() - s.ced->replay);
    lc.window_floor = lc.first;
  }
  return lc;
}

/// Adds a mixer's non-weight work (interaction, state) to the FLOPs by kind: under the layer's
/// own kind; a parallel hybrid's parts under theirs, as its tensors' FLOPs are; nothing for a
/// layer without a mixer. One overload per kind, so a new kind must say where its work goes.
struct work_by_kind {
  const model_context& m;
  const call& c;
  checked count;
  std::map<std::string, checked>& by_kind;

  template <typename kind>
  void own(const kind& a) const {  // called by each single-mixer overload below
    work w = flops(a, m, c);
    by_kind[kind_name(attention_spec(a))] += (w.interaction + w.state) * count;
  }
  void operator()(const attention_gqa& a) const { own(a); }
  void operator()(const attention_mla& a) const { own(a); }
  void operator()(const attention_gdn& a) const { own(a); }
  void operator()(const attention_kda& a) const { own(a); }
  void operator()(const attention_dsa& a) const { own(a); }
  void operator()(const attention_mamba2& a) const { own(a); }
  void operator()(const attention_parallel& a) const {
    own(a.attention);
    own(a.mixer);
  }
  void operator()(const attention_none&) const {}  // no mixer, no kind
};

/// Adds `count` identical layers' work (same structure, same call) to the tally.
void add_layer_work(const layer& l, const model_context& m, const call& lc, const char* body_stage,
                    const model_spec& s, forward_tally& f, checked count = 1) {
  std::vector<tensor> ts;
  layer_tensors(l, m, ts);
  for (const tensor& t : ts) {
    checked flops = checked(2) * t.gemm_weight_rows(lc) * count;
    if (t.module == "connection") {
      f.connection_flops += flops;
      f.by_kind["connection"] += flops;
    } else {
      f.linear_flops += flops;
      std::string kind = !t.kind.empty()                                 ? t.kind
                         : t.module == "attention" || t.module == "conv" ? kind_name(l.attention)
                         : t.module == "engram"                          ? std::string("engram")
                                                                         : kind_name(l.ffn);
      if (kind != "none") f.by_kind[kind] += flops;  // norms of a layer without an FFN
    }
    f.weight_read_bytes += t.read_bytes(lc) * count;
    if (t.gemm) add_module(f.modules, module_label(t.module), flops, t.params * count);
    add_module(f.stages, stage_of(s, l.index, &t), flops, t.params * count);
  }
  work w = std::visit([&](const auto& a) { return flops(a, m, lc); }, l.attention);
  checked interaction = w.interaction * count, state = w.state * count;
  f.interaction_flops += interaction;
  f.state_flops += state;
  std::visit(work_by_kind{m, lc, count, f.by_kind}, l.attention);
  add_module(f.modules, "attention interaction (QK, AV, index)", interaction, 0);
  if (state > 0) add_module(f.modules, "linear-attention state and conv", state, 0);
  add_module(f.stages, body_stage, interaction + state, 0);
  if (const auto* d = std::get_if<attention_dsa>(&l.attention)) {
    dsa_counts n = dsa_work(*d, lc);
    f.attention_pairs += (n.window_pairs + n.global_pairs) * count;
    f.index_scans += n.index_scans * count;
  }
  if (l.engram)
    f.engram_read_bytes +=
        lc.rows() * l.engram->buckets * m.precision->weights.bytes(l.engram->bucket_dim) * count;
}

void add_head_work(const model_spec& s, const model_context& m, const call& c, forward_tally& f) {
  checked rows = c.new_rows();
  const char* body = s.ced ? "decoder body" : "layers";
  checked vd = checked(s.vocab) * s.hidden;
  f.vocab_flops = checked(2) * c.vocab_rows() * vd;  // §2.1.4: 2 * m_out * d * V
  std::vector<tensor> ts;
  model_level_tensors(s, m, ts);
  for (const tensor& t : ts) {
    f.weight_read_bytes += t.read_bytes(c);  // the head whole, norms, connection vectors
    if (t.module != "connection" || !t.gemm) continue;
    checked flops = checked(2) * t.gemm_weight_rows(c);  // mHC head mix
    f.connection_flops += flops;
    f.by_kind["connection"] += flops;
    add_module(f.modules, module_label(t.module), flops, t.params);
    add_module(f.stages, body, flops, 0);
  }
  switch (s.connection.type) {
    case connection_spec::kind::residual:
    case connection_spec::kind::mhc:  // its mixes are tensors: the layers' and the head's above
      break;
    case connection_spec::kind::attnres: {
      checked flops = connection_mix_flops_per_row(s) * rows;
      f.connection_flops += flops;
      f.by_kind["connection"] += flops;
      add_module(f.modules, "connections (AttnRes mixes)", flops, 0);
      // Every block snapshot of every row stays until the output mix (§2.5.2).
      f.workspace_bytes = ceil_div(s.layers.count, s.connection.block_layers) * rows *
                          s.precision.activations.bytes(s.hidden);
      add_module(f.stages, body, flops, 0);
      break;
    }
  }
  if (s.rope_table_frequencies > 0) {
    f.rope_flops = checked(2) * rows * s.rope_table_frequencies;  // positions x frequencies
    f.by_kind["rope"] += f.rope_flops;
    add_module(f.modules, "rope table", f.rope_flops, 0);
    add_module(f.stages, body, f.rope_flops, 0);
  }
  add_module(f.modules, "embedding lookup", 0, vd);
  add_module(f.modules, "vocabulary head", f.vocab_flops, s.tie_embeddings ? 0 : vd);
  add_module(f.stages, "vocabulary head", f.vocab_flops, vd);
  f.by_kind["vocab"] += f.vocab_flops;
  f.embedding_read_bytes = rows * s.precision.embedding.bytes(s.hidden);
}

}  // namespace

forward_tally tally_forward(const graph& g, const call& c) {
  const model_spec& s = *g.spec;
  model_context m = context_of(g);
  forward_tally f;
  // Layers of one structure seeing the same call do the same work: tally each such run once.
  // Under CED the encoder and decoder halves of a group see different calls and stages.
  for (const layer_group& grp : g.groups) {
    std::size_t i = 0;
    while (i < grp.indices.size()) {
      const layer& l = g.layers[static_cast<std::size_t>(grp.indices[i])];
      call lc = layer_call(s, c, l.index);
      const char* stage = stage_of(s, l.index, nullptr);
      std::size_t j = i + 1;
      while (j < grp.indices.size()) {
        std::int64_t other = grp.indices[j];
        call oc = layer_call(s, c, other);
        if (oc.first != lc.first || oc.window_floor != lc.window_floor ||
            std::string(stage_of(s, other, nullptr)) != stage)
          break;
        ++j;
      }
      add_layer_work(l, m, lc, stage, s, f, static_cast<std::int64_t>(j - i));
      i = j;
    }
  }
  add_head_work(s, m, c, f);
  f.flops = f.linear_flops + f.interaction_flops + f.state_flops + f.connection_flops +
            f.rope_flops + f.vocab_flops;
  f.mhc_nonmatrix = connection_nonmatrix_per_row(s) * c.new_rows();
  return f;
}

std::vector<layer_entries> tally_entries(const graph& g, const call& c) {
  std::vector<layer_entries> out;
  for (const layer& l : g.layers) {
    const auto* d = std::get_if<attention_dsa>(&l.attention);
    if (!d) continue;
    call lc = layer_call(*g.spec, c, l.index);
    dsa_counts n = dsa_work(*d, lc);
    out.push_back({l.index, lc.rows(), n.window_pairs, n.global_pairs, n.index_scans});
  }
  return out;
}

forward_tally tally_mtp(const graph& g, const call& c) {
  const model_spec& s = *g.spec;
  if (!s.mtp)
    throw spec_error("mtp", fmt::format("{} has no multi-token prediction block", s.name));
  model_context m = context_of(g);
  forward_tally f;
  checked d = s.hidden;
  // e_proj on the token embedding, h_proj on each residual stream of the backbone feature.
  checked streams = residual_streams(s.connection);
  checked proj = checked(2) * d * d * c.rows() * (streams + 1);
  f.linear_flops += proj;
  add_module(f.modules, "mtp e_proj and h_proj", proj, d * d * 2);
  layer block;
  block.attention = *s.layers.base.attention;
  block.ffn = *s.layers.base.ffn;
  if (s.mtp->variant != "base") {
    const block_spec& v = s.layers.variants.at(s.mtp->variant);
    if (v.attention) block.attention = *v.attention;
    if (v.ffn) block.ffn = *v.ffn;
  }
  for (std::int64_t i = 0; i < s.mtp->layers; ++i) add_layer_work(block, m, c, "layers", s, f);
  // The block's own head mix (mHC's; the model-level tensors of the other connections are
  // vectors, no GEMM) and the shared vocabulary head.
  {
    std::vector<tensor> head;
    add_connection_model_tensors(s, m, head);
    for (const tensor& t : head) f.connection_flops += checked(2) * t.gemm_weight_rows(c);
  }
  f.vocab_flops = checked(2) * c.vocab_rows() * s.vocab * d;
  add_module(f.modules, "vocabulary head (shared)", f.vocab_flops, 0);
  f.flops =
      f.linear_flops + f.interaction_flops + f.state_flops + f.connection_flops + f.vocab_flops;
  f.stages = {{"mtp block", f.flops - f.vocab_flops, 0}, {"vocabulary head", f.vocab_flops, 0}};
  return f;
}

state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch,
                        const execution_spec& exec) {
  const model_spec& s = *g.spec;
  model_context m = context_of(g);
  state_tally st;
  st.length = length;
  st.batch = batch;
  auto add = [&](const state_component& sc, checked count) {
    checked bytes = checked(batch) * sc.bytes(length) * count;
    checked fixed_part = checked(batch) * sc.fixed * count;
    // One row per component and class: windowed and global KV of one kind stay apart.
    auto it = std::find_if(st.items.begin(), st.items.end(), [&](const state_item& i) {
      return i.name == sc.name && i.kind == sc.kind;
    });
    if (it == st.items.end()) {
      checked entries = sc.entries(length);
      checked read = sc.read_cap > 0 ? min(entries, sc.read_cap) : entries;
      st.items.push_back(
          {sc.name, 0, 0, {}, sc.kind, sc.read_write_each_step, entries, read * sc.per_entry});
      it = st.items.end() - 1;
    }
    it->layers += count.value();
    it->bytes += bytes;
    st.fixed += fixed_part;
    st.growing += bytes - fixed_part;
    if (sc.read_write_each_step) st.decode_state_rw += bytes * 2;
    if (sc.kind == state_class::history) st.global_history += bytes;
    if (sc.kind == state_class::window) st.window += bytes;
    if (!sc.cap && sc.per_entry > 0) {
      fraction growth(checked(batch) * sc.per_entry * count, sc.ratio);
      it->per_token += growth;
      st.per_token += growth;
      if (sc.kind == state_class::history) st.history_per_token += growth;
    }
  };
  // Every layer of a group keeps the same state: tally one, times the group's size.
  for (const layer_group& grp : g.groups) {
    const layer& l = g.layers[static_cast<std::size_t>(grp.indices.front())];
    checked count = static_cast<std::int64_t>(grp.indices.size());
    auto comps = std::visit([&](const auto& a) { return state(a, m, exec); }, l.attention);
    for (const state_component& sc : comps) add(sc, count);
    // The history is read once per decode step and reused across heads (§2.3.6).
    st.decode_read +=
        checked(batch) * count *
        std::visit([&](const auto& a) { return decode_read(a, m, exec, length); }, l.attention);
    st.window_write += checked(batch) * count * window_write(l.attention, m);
  }
  if (s.token_history) {
    state_component ids;
    ids.name = "token_history";
    ids.per_entry = s.precision.token_history.bytes(1);
    ids.kind = state_class::token_history;
    add(ids, 1);
  }
  st.total = st.fixed + st.growing;
  return st;
}

state_tally tally_state(const graph& g, std::int64_t length, std::int64_t batch) {
  return tally_state(g, length, batch, g.spec->execution);
}

}  // namespace calc
