// Commands about one model: state, forward, params, request, crossover, experts, layers.
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "cli/support.h"
#include "plan/plan.h"
#include "spec/component_reader.h"
#include "spec/format_summary.h"
#include "spec/hf/checkpoint.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"
#include "tally/component.h"
#include "tally/tally.h"

namespace calc::cli {

result run_state(const options& o) {
  check_count("--length", o.length, 0);
  check_count("--batch", o.batch, 1);
  loaded_model m = load(o);
  state_tally st = tally_state(m.g, o.length, o.batch);
  crossover_plan cp = plan_crossover(m.g, o.length);
  ojson j;
  j["model"] = m.spec->name;
  j["length"] = o.length;
  j["batch"] = o.batch;
  if (has_attention<attention_mla>(m.g)) j["mla_path"] = mla_path_name(m.spec->execution);
  if (!m.spec->precision.production.empty())
    j["storage"] = o.storage.empty() ? "reference" : o.storage;
  j["total_bytes"] = exact(st.total);
  j["fixed_bytes"] = exact(st.fixed);
  j["growing_bytes"] = exact(st.growing);
  j["per_token_bytes"] = fraction_json(st.per_token);
  j["crossover_tokens"] = ratio_json(cp.state_crossover_tokens);
  j["decode_read_bytes"] = exact(st.decode_read);
  j["decode_state_rw_bytes"] = exact(st.decode_state_rw);
  j["global_history_bytes"] = exact(st.global_history);
  j["history_per_token_bytes"] = fraction_json(st.history_per_token);
  j["window_bytes"] = exact(st.window);
  j["window_write_bytes"] = exact(st.window_write);
  // The stair steps of compressed history: what the next token adds (§2.3.6's 356 / 1,424 B).
  j["next_token_history_bytes"] =
      exact(tally_state(m.g, o.length + 1, o.batch).global_history - st.global_history);
  j["components"] = ojson::array();
  ojson by_name = ojson::object();
  for (const state_item& i : st.items) {
    j["components"].push_back({{"name", i.name},
                               {"layers", i.layers},
                               {"bytes", exact(i.bytes)},
                               {"fixed", i.kind == state_class::fixed},
                               {"class", class_name(i.kind)},
                               {"per_token_bytes", fraction_json(i.per_token)}});
    // Stable pointers for scripts: /by_component/recurrent/bytes.
    ojson one = {{"bytes", exact(i.bytes)}, {"layers", i.layers}};
    if ((i.bytes / i.layers) * i.layers == i.bytes) one["layer_bytes"] = exact(i.bytes / i.layers);
    if (i.kind != state_class::fixed) {
      one["layer_entries"] = exact(i.layer_entries);
      one["layer_read_bytes"] = exact(i.layer_read_bytes);
    }
    // A name kept in two classes (windowed beside global KV): the global history keeps the
    // plain key, the other class gets its class in the key (/by_component/kv_window).
    std::string key = i.name;
    bool shared = std::count_if(st.items.begin(), st.items.end(),
                                [&](const state_item& x) { return x.name == i.name; }) > 1;
    if (shared && i.kind != state_class::history) {
      key += std::string("_") + class_name(i.kind);
      std::replace(key.begin(), key.end(), ' ', '_');
    }
    by_name[key] = one;
  }
  j["by_component"] = by_name;
  return {j, fmt::format("calc state: {}, {} cached tokens, batch {}", m.spec->name,
                         human_tokens(o.length), o.batch)};
}

result run_forward(const options& o) {
  check_count("--prompt", o.prompt, 1);
  check_count("--context", o.context, 0);
  check_count("--batch", o.batch, 1);
  loaded_model m = load(o);
  call c = make_call(*m.spec, o.batch, o.context, o.prompt);
  forward_tally f = o.mtp ? tally_mtp(m.g, c) : tally_forward(m.g, c);
  ojson j;
  j["model"] = m.spec->name;
  j["batch"] = o.batch;
  j["context"] = o.context;
  j["tokens"] = o.prompt;
  j["rows"] = exact(c.rows());
  j["vocab_rows"] = exact(c.vocab_rows());
  j["pair_counting"] = c.exec.pairs == pair_counting::causal ? "causal" : "rectangular";
  if (has_attention<attention_mla>(m.g)) j["mla_path"] = mla_path_name(c.exec);
  if (has_attention<attention_gdn>(m.g) || has_attention<attention_kda>(m.g)) {
    // Lightning attention runs over its own blocks, not the call's chunk.
    std::string chunk = fmt::format("chunk {}", c.exec.chunk);
    for (const layer& l : m.g.layers)
      if (const auto* a = std::get_if<attention_gdn>(&l.attention); a && a->lightning())
        chunk = fmt::format("block {}", a->block);
    j["linear_attention"] = c.decode_step() ? "recurrent step"
                            : c.exec.linear == linear_prefill::chunked
                                ? fmt::format("chunked, {}", chunk)
                                : std::string("recurrent");
  }
  j["n_pair"] = exact(n_pair(c));
  j["flops"] = exact(f.flops);
  j["linear_flops"] = exact(f.linear_flops);
  j["interaction_flops"] = exact(f.interaction_flops);
  j["state_flops"] = exact(f.state_flops);
  if (has_attention<attention_dsa>(m.g)) {
    j["attention_pairs"] = exact(f.attention_pairs);
    j["index_scans"] = exact(f.index_scans);
    j["index_scan"] = c.exec.index_scan == pair_counting::causal ? "causal" : "rectangular";
  }
  if (m.spec->ced) j["execution"] = c.exec.ced ? "ced" : "reference";
  if (f.mhc_nonmatrix > 0) j["mhc_nonmatrix_flops"] = exact(f.mhc_nonmatrix);
  if (f.engram_read_bytes > 0) j["engram_read_bytes"] = exact(f.engram_read_bytes);
  if (f.workspace_bytes > 0) j["workspace_bytes"] = exact(f.workspace_bytes);
  j["connection_flops"] = exact(f.connection_flops);
  j["rope_flops"] = exact(f.rope_flops);
  j["vocab_flops"] = exact(f.vocab_flops);
  j["weight_read_bytes"] = exact(f.weight_read_bytes);
  j["embedding_read_bytes"] = exact(f.embedding_read_bytes);
  auto rows = [](const std::vector<module_flops>& v) {
    ojson a = ojson::array();
    for (const auto& x : v)
      a.push_back({{"name", x.name}, {"flops", exact(x.flops)}, {"params", exact(x.params)}});
    return a;
  };
  j["stages"] = rows(f.stages);
  if (has_attention<attention_dsa>(m.g) && !o.mtp) {
    // Table 2-4's A (entries main attention reads) and I (index entries scanned), per layer.
    ojson layers = ojson::array();
    for (const layer_entries& e : tally_entries(m.g, c))
      layers.push_back({{"layer", e.layer},
                        {"rows", exact(e.rows)},
                        {"window_records_read", exact(e.window_pairs)},
                        {"selected_entries_read", exact(e.selected)},
                        {"index_entries_scanned", exact(e.index_scans)}});
    j["sparse_layers"] = layers;
  }
  ojson by_stage = ojson::object();  // stable pointers: /stage_flops/decoder_body
  for (const auto& st : f.stages) {
    std::string key = st.name;
    if (key == "decoder global KV and index-key projections") key = "decoder_global_projections";
    for (char& ch : key)
      if (ch == ' ') ch = '_';
    by_stage[key] = exact(st.flops);
  }
  j["stage_flops"] = by_stage;
  j["modules"] = rows(f.modules);
  return {j, fmt::format("calc forward{}: {}, B={} S={} P={}", o.mtp ? " --mtp" : "", m.spec->name,
                         o.batch, o.context, o.prompt)};
}

result run_params(const options& o) {
  loaded_model m = load(o);
  params_tally p = tally_params(m.g);
  ojson j;
  j["model"] = m.spec->name;
  j["formats"] = format_summary(m.spec->precision);  // the storage formats assumed
  j["total_params"] = exact(p.total);
  ojson cats;
  for (const auto& [c, v] : p.categories) cats[category_key(c)] = exact(v);
  j["categories"] = cats;
  j["weight_bytes"] = exact(p.weight_bytes);
  j["bf16_bytes"] = exact(p.bf16_bytes);
  j["active_params"] = exact(p.active);
  j["selected_expert_bytes_per_token"] = exact(p.selected_expert_bytes_per_token);
  j["embedding_table_bytes"] = exact(p.lookup_bytes);
  j["shared_read_bytes"] = exact(p.shared_read_bytes);
  // Components beside the text model (a vision tower and its projector): counted from their
  // shapes and reported apart, in none of the totals above.
  checked component_total;
  const std::vector<component_spec> components =
      read_model_components(resolve_model_path(o.model), m.file_embedding, o.sets);
  if (!components.empty()) {
    ojson comps = ojson::array();
    checked component_params;
    for (const component_spec& cs : components) {
      component_tally t = tally_component(cs);
      comps.push_back({{"name", t.name},
                       {"kind", "vit"},
                       {"format", cs.weights.name},
                       {"params", exact(t.params)},
                       {"bytes", exact(t.bytes)},
                       {"embedding_params", exact(t.parts[0].params)},
                       {"block_params", exact(t.parts[1].params)},
                       {"projector_params", exact(t.parts[2].params)}});
      component_params += t.params;
      component_total += t.bytes;
    }
    j["components"] = comps;
    j["component_params"] = exact(component_params);
    j["component_bytes"] = exact(component_total);
  }
  // A model folder with safetensors: the bytes its files store beside calc's weight_bytes and
  // component bytes, each difference named (spec/hf/checkpoint.h); headers only, never tensor
  // data.
  if (std::string path = resolve_model_path(o.model); hf::is_hf_config(path))
    if (auto ck = hf::read_checkpoint(path)) {
      hf::checkpoint_comparison c =
          hf::compare_checkpoint(*ck, p.weight_bytes.value(), m.spec->layers.count,
                                 m.spec->tie_embeddings, component_total.value());
      j["checkpoint_bytes"] = c.checkpoint_bytes;
      if (component_total > 0 && c.headers_complete)
        j["checkpoint_component_bytes"] = c.component_stored_bytes;
      ojson diffs = ojson::array();
      for (const hf::checkpoint_difference& d : c.differences)
        diffs.push_back({{"name", d.name}, {"bytes", d.bytes}, {"tensors", d.tensors}});
      j["checkpoint_differences"] = diffs;
      j["checkpoint_unexplained_bytes"] = c.unexplained_bytes;
      if (!c.headers_complete)
        j["checkpoint_note"] =
            ck->shards.empty() ? "index total_size only: no safetensors file to name the parts"
                               : fmt::format("{} shard(s) the index names are not in the folder",
                                             ck->missing_shards.size());
    }
  // Parameters by tensor name, summed over layers (one layer per group, times its size), in
  // order of first appearance.
  std::vector<std::pair<std::string, checked>> by_name;
  auto add = [&](const tensor& t, checked count) {
    auto it = std::find_if(by_name.begin(), by_name.end(),
                           [&](const auto& e) { return e.first == t.name; });
    if (it == by_name.end()) {
      by_name.emplace_back(t.name, t.params * count);
    } else {
      it->second += t.params * count;
    }
  };
  model_context mc{m.spec->hidden, &m.spec->precision, &m.spec->connection, m.spec->layer_norm};
  for (const layer_group& grp : m.g.groups) {
    std::vector<tensor> ts;
    layer_tensors(m.g.layers[static_cast<std::size_t>(grp.indices.front())], mc, ts);
    for (const tensor& t : ts) add(t, static_cast<std::int64_t>(grp.indices.size()));
  }
  std::vector<tensor> head;
  model_level_tensors(*m.spec, mc, head);
  for (const tensor& t : head) add(t, 1);
  ojson tensors = ojson::object();
  for (const auto& [name, params] : by_name) tensors[name] = params.value();
  j["tensors"] = tensors;
  j["groups"] = ojson::array();
  for (const group_params& g : p.groups)
    j["groups"].push_back({{"name", g.name},
                           {"layers", g.layers},
                           {"attention_params", exact(g.attention)},
                           {"ffn_params", exact(g.ffn)},
                           {"other_params", exact(g.other)},
                           {"attention_bytes", exact(g.attention_bytes)},
                           {"ffn_bytes", exact(g.ffn_bytes)}});
  return {j, fmt::format("calc params: {}", m.spec->name)};
}

result run_request(const options& o) {
  check_count("--prompt", o.prompt, 1);
  check_count("--context", o.context, 0);
  // The decode steps close over the model's series, so G costs nothing.
  check_count("--generate", o.generate, 1);
  loaded_model m = load(o);
  request_plan r = plan_request(m.g, o.context, o.prompt, o.generate);
  ojson j;
  j["model"] = m.spec->name;
  j["cached"] = o.context;
  j["prompt"] = o.prompt;
  j["generate"] = o.generate;
  j["prefill_calls"] = r.prefill_calls;
  j["decode_calls"] = r.decode_calls;
  j["flops"] = exact(r.flops);
  j["prefill_flops"] = exact(r.prefill_flops);
  j["decode_flops"] = exact(r.decode_flops);
  j["kv_written_bytes"] = exact(r.kv_written_bytes);
  j["decode_written_bytes"] = exact(r.decode_written_bytes);
  j["final_state_bytes"] = exact(r.final_state_bytes);
  j["final_positions"] = r.final_positions;
  j["cumulative_read_bytes"] = exact(r.cumulative_read_bytes);
  j["cumulative_read_tokens"] = exact(r.cumulative_read_tokens);
  return {j, fmt::format("calc request: {}, S={} P={} G={}", m.spec->name, o.context, o.prompt,
                         o.generate)};
}

result run_crossover(const options& o) {
  // The batch read crossover needs a length; H* and a budget's longest context do not.
  bool at_length = o.length >= 0;
  if (!at_length && o.budget.empty())
    throw spec_error("--length", "give a length (for the batch read crossover) or a --budget");
  if (at_length) check_count("--length", o.length, 1);
  loaded_model m = load(o);
  crossover_plan c = plan_crossover(m.g, at_length ? o.length : 1);
  ojson j;
  j["model"] = m.spec->name;
  j["length"] = at_length ? ojson(o.length) : ojson(nullptr);
  j["state_crossover_tokens"] = ratio_json(c.state_crossover_tokens);
  j["weight_read_bytes"] = exact(c.weight_read_bytes);
  if (at_length) j["context_read_bytes"] = exact(c.context_read_bytes);
  j["batch_read_crossover"] =
      at_length && c.batch_read_crossover ? ojson(*c.batch_read_crossover) : ojson(nullptr);
  if (!o.budget.empty()) {
    std::int64_t budget = parse_size_option("--budget", o.budget);
    j["budget_bytes"] = budget;
    auto longest = max_tokens_within(m.g, budget);
    if (!longest) {
      j["max_tokens"] = nullptr;
      j["note"] = fmt::format("the fixed state alone ({} B) does not fit in {} B",
                              tally_state(m.g, 0).fixed.value(), budget);
    } else if (*longest == INT64_MAX) {
      j["max_tokens"] = nullptr;
      j["note"] = "the state does not grow with length: any context fits";
    } else {
      j["max_tokens"] = *longest;
    }
  }
  if (!at_length)
    return {j, fmt::format("calc crossover: {}, state budget {}", m.spec->name, o.budget)};
  return {j, fmt::format("calc crossover: {} at {} cached tokens", m.spec->name,
                         human_tokens(o.length))};
}

result run_experts(const options& o) {
  check_count("--batch", o.batch, 1);
  routing r = parse_routing(o.routing);
  loaded_model m = load(o);
  experts_plan p = plan_experts(m.g, o.batch, r);
  ojson j;
  j["model"] = m.spec->name;
  j["routing"] = o.routing;
  j["tokens"] = exact(p.tokens);
  j["moe_layers"] = p.moe_layers;
  j["experts"] = p.experts;
  j["top_k"] = p.top_k;
  j["dispatches"] = exact(p.dispatches);
  j["distinct_experts"] = p.distinct_experts;
  j["rows_per_expert"] = p.rows_per_expert;
  j["expert_params"] = exact(p.expert_params);
  j["expert_bytes"] = exact(p.expert_bytes);
  j["layer_expert_bytes"] = exact(p.layer_expert_bytes);
  j["layer_weight_read_bytes"] = p.layer_weight_read_bytes;
  j["weight_read_bytes"] = p.weight_read_bytes;
  j["uniform_layer_read_bytes"] = exact(p.uniform_layer_read_bytes);
  j["concentrated_layer_read_bytes"] = exact(p.concentrated_layer_read_bytes);
  j["all_routed_bytes"] = exact(p.all_routed_bytes);
  j["flops"] = exact(p.flops);
  return {j,
          fmt::format("calc experts: {}, {} tokens, {} routing", m.spec->name, o.batch, o.routing)};
}

result run_layers(const options& o) {
  loaded_model m = load(o);
  ojson j;
  j["model"] = m.spec->name;
  j["layers_count"] = m.spec->layers.count;
  ojson modes = ojson::object();
  std::int64_t global = 0, pool = 0;
  ojson rows = ojson::array();
  for (const layer& l : m.g.layers) {
    std::string mode = attention_mode(l.attention);  // tally/kinds.h
    modes[mode] = (modes.contains(mode) ? modes[mode].get<std::int64_t>() : 0) + 1;
    if (const auto* d = std::get_if<attention_dsa>(&l.attention)) {
      if (d->global) ++global;
      if (d->indexer) pool = std::max(pool, d->indexer->candidates);
    }
    ojson row = {{"layer", l.index},
                 {"variant", l.variant},
                 {"mode", mode},
                 {"attention", describe(l.attention)},
                 {"ffn", describe(l.ffn)}};
    if (m.spec->ced) row["stage"] = l.index < m.spec->ced->encoder_layers ? "encoder" : "decoder";
    if (l.engram) row["extra"] = "engram";
    rows.push_back(row);
  }
  if (global > 0) modes["global"] = global;
  j["modes"] = modes;
  if (pool > 0) j["candidate_pool"] = pool;
  j["layers"] = rows;
  return {j, fmt::format("calc layers: {}", m.spec->name)};
}

}  // namespace calc::cli
