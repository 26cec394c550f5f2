#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <climits>
#include <functional>
#include <memory>
#include <ostream>

#include "check/check.h"
#include "common/units.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

namespace calc {

namespace {

/// Longest context calc accepts: 2^32 tokens, far past any model, well inside exact int64 math.
constexpr std::int64_t kMaxLength = 1LL << 32;

/// Every option any command takes; each command registers the ones it uses.
struct options {
  std::string model;
  std::vector<std::string> sets;
  std::string format = "md";
  std::int64_t length = -1;
  std::vector<std::int64_t> lengths;
  std::int64_t batch = 1;
  std::int64_t tokens = -1;
  std::int64_t context = 0;
  std::string pairs;
  std::string vocab_rows;
  std::string mla_path;
  std::string linear;
  std::string routing = "uniform";
  std::string execution;
  std::string index_scan;
  std::string storage;
  bool mtp = false;
  std::string budget;
  std::int64_t prompt = -1;
  std::int64_t cached = 0;
  std::int64_t generate = 1;
  std::string gpu;
  std::int64_t gpus = 1;
  std::string workspace = "2GiB";
  std::string weight_bytes;
  std::int64_t requests = -1;
  std::string scenarios = "scenarios";
};

struct result {
  ojson body;
  std::string title;
  int exit_code = 0;
  std::string footer;  // a closing line for Markdown output
};

struct command {
  const char* name;
  const char* help;
  std::function<void(CLI::App&, options&)> setup;
  std::function<result(const options&)> run;
};

// ---- shared option helpers -------------------------------------------------------------------

void add_model_options(CLI::App& app, options& o) {
  app.add_option("-m,--model", o.model,
                 "Model: a bundled name (see `calc models`) or a path to a model YAML")
      ->required();
  app.add_option("--set", o.sets,
                 "Override a spec field for a what-if, key.path=value (repeatable), "
                 "e.g. layers.attention.kv_heads=4");
}

void check_count(const std::string& option, std::int64_t v, std::int64_t min) {
  if (v < min)
    throw spec_error(option, min == 0 ? fmt::format("must not be negative, got {}", v)
                                      : fmt::format("must be at least {}, got {}", min, v));
  if (v > kMaxLength)
    throw spec_error(option, fmt::format("{} is beyond the supported {} tokens", v, kMaxLength));
}

/// Execution-path options: each overrides the model's default when given.
void add_execution_options(CLI::App& app, options& o, bool all) {
  app.add_option("--storage", o.storage,
                 "State record formats: reference (BF16 records, FP32 buffers; the default) or "
                 "production (the model's production formats, e.g. FP4/FP8 records)")
      ->check(CLI::IsMember({"reference", "production"}));
  app.add_option("--mla-path", o.mla_path,
                 "MLA cache path: compact (latent + branch cached, up-projections absorbed) or "
                 "expanded (per-head K/V cached); default: the model's")
      ->check(CLI::IsMember({"compact", "expanded"}));
  if (!all) return;
  app.add_option("--pairs", o.pairs,
                 "Attention pair counting: causal (effective) or rectangular (eager, masked "
                 "afterwards); default: the model's")
      ->check(CLI::IsMember({"causal", "rectangular"}));
  app.add_option("--vocab-rows", o.vocab_rows,
                 "Rows through the vocabulary head: last (one per request) or all")
      ->check(CLI::IsMember({"last", "all"}));
  app.add_option("--linear", o.linear,
                 "Linear attention over several new tokens: chunked or recurrent; default: the "
                 "model's (a decode step is always recurrent)")
      ->check(CLI::IsMember({"chunked", "recurrent"}));
  app.add_option("--execution", o.execution,
                 "ced (encoder over the prompt, decoder tail replay, causal candidate indexing) or "
                 "reference (every layer over every position, rectangular index scores)")
      ->check(CLI::IsMember({"ced", "reference"}));
  app.add_option("--index-scan", o.index_scan,
                 "Index scores: causal (completed entries visible to each query) or rectangular "
                 "(the whole rectangle, masked afterwards)")
      ->check(CLI::IsMember({"causal", "rectangular"}));
}

struct loaded_model {
  std::unique_ptr<model_spec> spec;
  graph g;
};

/// Reads the model, applies --set, then the execution-path options over the model's defaults.
loaded_model load(const options& o) {
  loaded_model m;
  m.spec = std::make_unique<model_spec>(read_model_file(resolve_model_path(o.model), o.sets));
  execution_spec& e = m.spec->execution;
  if (o.pairs == "causal") e.pairs = pair_counting::causal;
  if (o.pairs == "rectangular") e.pairs = pair_counting::rectangular;
  if (o.vocab_rows == "last") e.vocab_all_rows = false;
  if (o.vocab_rows == "all") e.vocab_all_rows = true;
  if (o.mla_path == "compact") e.mla = mla_path::compact;
  if (o.mla_path == "expanded") e.mla = mla_path::expanded;
  if (o.linear == "chunked") e.linear = linear_prefill::chunked;
  if (o.linear == "recurrent") e.linear = linear_prefill::recurrent;
  if (o.execution == "reference") {
    e.ced = false;
    e.index_scan = pair_counting::rectangular;
  }
  if (o.execution == "ced") {
    if (!m.spec->ced)
      throw spec_error("--execution", fmt::format("{} has no CED split (no ced block)", m.spec->name));
    e.ced = true;
    e.index_scan = pair_counting::causal;
  }
  if (o.index_scan == "causal") e.index_scan = pair_counting::causal;
  if (o.index_scan == "rectangular") e.index_scan = pair_counting::rectangular;
  if (o.storage == "production") {
    precision_spec& p = m.spec->precision;
    if (p.production.empty())
      throw spec_error("--storage", fmt::format("{} declares no production formats", m.spec->name));
    for (const auto& [role, format] : p.production) {
      if (role == "kv") p.kv = format;
      if (role == "index") p.index = format;
      if (role == "window") p.window = format;
      if (role == "compressor") p.compressor = format;
      if (role == "recurrent") p.recurrent = format;
      if (role == "conv") p.conv = format;
      if (role == "token_history") p.token_history = format;
    }
  }
  m.g = build_graph(*m.spec);
  return m;
}

const char* mla_path_name(const execution_spec& e) {
  return e.mla == mla_path::compact ? "compact" : "expanded";
}

std::int64_t parse_size_option(const std::string& option, const std::string& text) {
  auto bytes = parse_bytes(text);
  if (!bytes) throw spec_error(option, fmt::format("'{}' is not a size such as 2GiB or 512MiB", text));
  return *bytes;
}

ojson fraction_json(const fraction& f) {
  if (f.is_integer()) return exact(f.num);
  return f.value();
}

ojson ratio_json(const std::optional<fraction>& r) {
  if (!r) return nullptr;
  return fraction_json(*r);
}

const char* class_name(state_class k) {
  switch (k) {
    case state_class::history: return "history";
    case state_class::window: return "window";
    case state_class::fixed: return "fixed";
    case state_class::token_history: return "token history";
  }
  return "history";
}

// ---- commands --------------------------------------------------------------------------------

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
    by_name[i.name] = one;
  }
  j["by_component"] = by_name;
  return {j, fmt::format("calc state: {}, {} cached tokens, batch {}", m.spec->name, o.length, o.batch)};
}

result run_forward(const options& o) {
  check_count("--tokens", o.tokens, 1);
  check_count("--context", o.context, 0);
  check_count("--batch", o.batch, 1);
  loaded_model m = load(o);
  call c = make_call(*m.spec, o.batch, o.context, o.tokens);
  forward_tally f = o.mtp ? tally_mtp(m.g, c) : tally_forward(m.g, c);
  ojson j;
  j["model"] = m.spec->name;
  j["batch"] = o.batch;
  j["context"] = o.context;
  j["tokens"] = o.tokens;
  j["rows"] = exact(c.rows());
  j["vocab_rows"] = exact(c.vocab_rows());
  j["pair_counting"] = c.exec.pairs == pair_counting::causal ? "causal" : "rectangular";
  if (has_attention<attention_mla>(m.g)) j["mla_path"] = mla_path_name(c.exec);
  if (has_attention<attention_gdn>(m.g) || has_attention<attention_kda>(m.g))
    j["linear_attention"] = c.decode_step() ? "recurrent step"
                            : c.exec.linear == linear_prefill::chunked
                                ? fmt::format("chunked, chunk {}", c.exec.chunk)
                                : std::string("recurrent");
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
                         o.batch, o.context, o.tokens)};
}

result run_params(const options& o) {
  loaded_model m = load(o);
  params_tally p = tally_params(m.g);
  ojson j;
  j["model"] = m.spec->name;
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
  ojson tensors = ojson::object();  // parameters by tensor name, summed over layers
  for (const tensor& t : model_tensors(m.g)) {
    std::int64_t prior = tensors.contains(t.name) ? tensors[t.name].get<std::int64_t>() : 0;
    tensors[t.name] = (checked(prior) + t.params).value();
  }
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
  check_count("--cached", o.cached, 0);
  check_count("--generate", o.generate, 1);
  if (o.generate > 1'000'000)
    throw spec_error("--generate", fmt::format("{} decode steps is beyond the supported 1,000,000", o.generate));
  loaded_model m = load(o);
  request_plan r = plan_request(m.g, o.cached, o.prompt, o.generate);
  ojson j;
  j["model"] = m.spec->name;
  j["cached"] = o.cached;
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
  return {j, fmt::format("calc request: {}, S={} P={} G={}", m.spec->name, o.cached, o.prompt,
                         o.generate)};
}

result run_capacity(const options& o) {
  if (o.lengths.empty()) throw spec_error("--length", "give at least one context length");
  for (std::int64_t l : o.lengths) check_count("--length", l, 0);
  check_count("--gpus", o.gpus, 1);
  std::int64_t workspace = parse_size_option("--workspace", o.workspace);
  loaded_model m = load(o);
  gpu_spec gpu = find_gpu(o.gpu);
  checked weights = tally_params(m.g).weight_bytes;
  if (!o.weight_bytes.empty()) weights = parse_size_option("--weight-bytes", o.weight_bytes);
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpu.name;
  j["gpus"] = o.gpus;
  j["memory_bytes"] = (checked(gpu.memory) * o.gpus).value();
  j["weight_bytes"] = exact(weights);
  j["workspace_bytes"] = workspace;
  ojson rows = ojson::array();
  for (std::int64_t l : o.lengths) {
    capacity_plan c = plan_capacity(m.g, gpu, o.gpus, l, workspace, weights);
    rows.push_back({{"length", l},
                    {"per_request_bytes", exact(c.per_request_bytes)},
                    {"free_bytes", exact(c.free_bytes)},
                    {"requests", c.requests}});
  }
  const ojson& first = rows.front();
  j["length"] = first["length"];
  j["per_request_bytes"] = first["per_request_bytes"];
  j["free_bytes"] = first["free_bytes"];
  j["requests"] = first["requests"];
  j["weights_fit"] = plan_capacity(m.g, gpu, o.gpus, o.lengths.front(), workspace, weights).weights_fit;
  if (!j["weights_fit"].get<bool>())
    j["note"] = fmt::format("the weights alone ({} B) plus the workspace exceed {} B of memory",
                            weights.value(), j["memory_bytes"].get<std::int64_t>());
  if (o.requests >= 0) {
    checked n = max_params(m.g, gpu, o.gpus, o.lengths.front(), workspace, o.requests);
    j["budget_requests"] = o.requests;
    j["max_params"] = exact(n);
    j["max_weight_bytes"] = exact(m.spec->precision.weights.bytes(n));
  }
  j["rows"] = rows;
  return {j, fmt::format("calc capacity: {} on {} x {}", m.spec->name, o.gpus, gpu.display)};
}

result run_crossover(const options& o) {
  check_count("--length", o.length, 1);
  loaded_model m = load(o);
  crossover_plan c = plan_crossover(m.g, o.length);
  ojson j;
  j["model"] = m.spec->name;
  j["length"] = o.length;
  j["state_crossover_tokens"] = ratio_json(c.state_crossover_tokens);
  j["weight_read_bytes"] = exact(c.weight_read_bytes);
  j["context_read_bytes"] = exact(c.context_read_bytes);
  j["batch_read_crossover"] =
      c.batch_read_crossover ? ojson(*c.batch_read_crossover) : ojson(nullptr);
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
  return {j, fmt::format("calc crossover: {} at {} cached tokens", m.spec->name, o.length)};
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
  return {j, fmt::format("calc experts: {}, {} tokens, {} routing", m.spec->name, o.batch,
                         o.routing)};
}

/// How a layer attends, as `calc layers` reports it (§2.3.6's Full / Reindex / Reuse).
std::string mode_of(const attention_spec& a) {
  if (const auto* g = std::get_if<attention_gqa>(&a)) return g->window ? "swa" : "gqa";
  if (std::holds_alternative<attention_mla>(a)) return "mla";
  if (std::holds_alternative<attention_gdn>(a)) return "gated_deltanet";
  if (std::holds_alternative<attention_kda>(a)) return "kda";
  const auto& d = std::get<attention_dsa>(a);
  if (!d.global) return "window";
  if (d.global->source < 0) return "full";      // stores its own entries
  return d.indexer ? "reindex" : "reuse";       // reads a source's entries
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
    std::string mode = mode_of(l.attention);
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
    if (m.spec->ced)
      row["stage"] = l.index < m.spec->ced->encoder_layers ? "encoder" : "decoder";
    if (l.engram) row["extra"] = "engram";
    rows.push_back(row);
  }
  if (global > 0) modes["global"] = global;
  j["modes"] = modes;
  if (pool > 0) j["candidate_pool"] = pool;
  j["layers"] = rows;
  return {j, fmt::format("calc layers: {}", m.spec->name)};
}

result run_models(const options&) {
  ojson j;
  j["folder"] = models_dir();
  j["models"] = ojson::array();
  for (const auto& name : bundled_models()) {
    model_spec s = read_model_file(resolve_model_path(name));
    graph g = build_graph(s);
    j["models"].push_back({{"name", name},
                           {"layers", s.layers.count},
                           {"hidden", s.hidden},
                           {"total_params", exact(tally_params(g).total)},
                           {"source", s.source}});
  }
  return {j, "calc models"};
}

result run_gpus(const options&) {
  ojson j;
  j["gpus"] = ojson::array();
  for (const gpu_spec& g : gpu_catalogue())
    j["gpus"].push_back({{"name", g.name},
                         {"display", g.display},
                         {"memory_bytes", g.memory},
                         {"bandwidth_bytes", g.bandwidth},
                         {"bf16_tflops", g.bf16_tflops},
                         {"fp8_tflops", g.fp8_tflops},
                         {"interconnect_bytes", g.interconnect},
                         {"source", g.source}});
  return {j, "calc gpus (bandwidths in bytes per second)"};
}

result run_check(const options& o) {
  std::vector<claim> claims = read_scenarios(o.scenarios);
  std::vector<claim_result> results = run_claims(claims, evaluate);
  ojson j;
  std::int64_t passed = 0, failed = 0, open = 0;
  ojson rows = ojson::array(), open_rows = ojson::array();
  for (const claim_result& r : results) {
    ojson row = {{"id", r.c->id},
                {"where", r.c->where},
                {"expected", r.c->expect},
                {"got", r.got},
                {"pass", r.pass}};
    if (!r.error.empty()) row["error"] = r.error;
    if (r.c->open) {
      ++open;
      row["analysis"] = r.c->analysis;
      open_rows.push_back(row);
    } else {
      r.pass ? ++passed : ++failed;
      rows.push_back(row);
    }
  }
  j["claims"] = static_cast<std::int64_t>(results.size());
  j["passed"] = passed;
  j["failed"] = failed;
  j["open"] = open;
  j["results"] = rows;
  j["open_claims"] = open_rows;
  return {j, fmt::format("calc check: {} claims, {} passed, {} failed, {} open", results.size(),
                         passed, failed, open),
          failed > 0 ? 1 : 0,
          fmt::format("\n{} open claims listed apart (not failures)\n{} passed, {} failed\n", open,
                      passed, failed)};
}

// ---- the command table -----------------------------------------------------------------------

const std::vector<command>& commands() {
  static const std::vector<command> table = {
      {"state", "Per-request state at a length: components, fixed part, growth, H*, decode reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-n,--length", o.length, "Cached tokens per request (N), in tokens")->required();
         app.add_option("-b,--batch", o.batch, "Requests (B), each with its own state");
         add_execution_options(app, o, false);
       },
       run_state},
      {"forward", "Matrix FLOPs, parameters and weight reads of one call, per module and stage",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-p,--tokens", o.tokens, "New tokens per request this call (P)")->required();
         app.add_option("-s,--context", o.context, "Tokens already cached per request (S)");
         app.add_option("-b,--batch", o.batch, "Requests in the batch (B)");
         add_execution_options(app, o, true);
         app.add_flag("--mtp", o.mtp, "One call of the multi-token-prediction block instead of the backbone");
       },
       run_forward},
      {"params", "Parameters by Table 2-B category, weight bytes, per-layer groups",
       [](CLI::App& app, options& o) { add_model_options(app, o); }, run_params},
      {"request", "A whole request: prefill plus G-1 decodes, FLOPs, state written, cumulative reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-p,--prompt", o.prompt, "New input tokens (P)")->required();
         app.add_option("-s,--cached", o.cached, "Prefix tokens already cached (S)");
         app.add_option("-g,--generate", o.generate, "Tokens returned (G); G-1 decode calls follow prefill");
         add_execution_options(app, o, true);
       },
       run_request},
      {"capacity", "Concurrent requests that fit on GPUs; with --requests, the weight budget",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` or a path")->required();
         app.add_option("--gpus", o.gpus, "Number of cards whose memory is pooled");
         app.add_option("-n,--length", o.lengths, "Context length(s) per request, in tokens, comma-separated")
             ->required()
             ->delimiter(',');
         app.add_option("--workspace", o.workspace,
                        "Reserved bytes (activations, buffers), e.g. 2GiB (default 2GiB)");
         app.add_option("--weight-bytes", o.weight_bytes,
                        "Use this weight size instead of the model's, e.g. 39.5GB");
         app.add_option("--requests", o.requests,
                        "Requests to reserve state for; reports the largest parameter count that fits");
         add_execution_options(app, o, false);
       },
       run_capacity},
      {"crossover", "H* (fixed state = growing state) and the batch where context reads pass weight reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-n,--length", o.length, "Cached tokens per request (H), in tokens")->required();
         app.add_option("--budget", o.budget,
                        "State budget per request, e.g. 256MiB: reports the longest context that fits");
         add_execution_options(app, o, false);
       },
       run_crossover},
      {"experts", "Routed experts for a batch: experts touched, rows per expert, FLOPs, bytes read",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-b,--batch", o.batch, "Token rows routed (B requests in one decode step)")
             ->required();
         app.add_option("--routing", o.routing,
                        "How tokens spread: uniform (evenly), concentrated (all pick the same k) or "
                        "zipf:S (expert popularity ~ rank^-S)");
       },
       run_experts},
      {"layers", "Every layer of the expanded graph: kind, mode (Full/Reindex/Reuse), stage",
       [](CLI::App& app, options& o) { add_model_options(app, o); }, run_layers},
      {"models", "The bundled models", [](CLI::App&, options&) {}, run_models},
      {"gpus", "The accelerator catalogue with sources", [](CLI::App&, options&) {}, run_gpus},
      {"check", "Every chapter claim in scenarios/, re-derived and compared at printed precision",
       [](CLI::App& app, options& o) {
         app.add_option("path", o.scenarios, "Scenario file or folder (default: scenarios)");
       },
       run_check},
  };
  return table;
}

/// Parses args into a command and its options; returns the command, or null for --help output.
struct parsed {
  const command* cmd = nullptr;
  options opts;
  output_format format = output_format::md;
};

void build_app(CLI::App& app, parsed& p, std::vector<CLI::App*>& subs) {
  app.require_subcommand(1);
  for (const command& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    c.setup(*sub, p.opts);
    sub->add_option("-f,--format", p.opts.format, "Output: md (default), ojson or csv")
        ->check(CLI::IsMember({"md", "json", "csv"}));
    subs.push_back(sub);
  }
}

result dispatch(parsed& p, const std::vector<CLI::App*>& subs) {
  for (std::size_t i = 0; i < subs.size(); ++i)
    if (subs[i]->parsed()) p.cmd = &commands()[i];
  if (p.opts.format == "json") p.format = output_format::json;
  if (p.opts.format == "csv") p.format = output_format::csv;
  return p.cmd->run(p.opts);
}

}  // namespace

ojson evaluate(const std::vector<std::string>& args) {
  CLI::App app("calc");
  parsed p;
  std::vector<CLI::App*> subs;
  build_app(app, p, subs);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw spec_error("", e.what());
  }
  return dispatch(p, subs).body;
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app("calc: exact weights, FLOPs, state, reads and GPU capacity of LLMs, from YAML "
               "model descriptions. Every number is an exact integer, rounded only when printed.");
  parsed p;
  std::vector<CLI::App*> subs;
  build_app(app, p, subs);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();  // delegates to the subcommand that was named
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "calc: " << e.what() << "\n";
    return 2;
  }
  try {
    result r = dispatch(p, subs);
    out << render(r.body, p.format, r.title);
    if (p.format == output_format::md) out << r.footer;
    return r.exit_code;
  } catch (const spec_error& e) {
    err << e.what() << "\n";
    return 2;
  } catch (const overflow_error& e) {
    err << "calc: " << e.what() << ": the answer exceeds exact 64-bit range for these inputs\n";
    return 2;
  } catch (const std::exception& e) {
    err << "calc: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace calc
