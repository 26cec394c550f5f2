// The report's figures: the plan layer's answers (state, crossovers, capacity, placement,
// roofline) gathered per model and length.
#include "report/data.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "common/dtype.h"
#include "common/error.h"
#include "plan/plan.h"
#include "serve/step.h"

namespace calc {

namespace {

/// Weight bytes of the model with its matrices in each common format (the other tensors keep
/// theirs).
std::vector<std::pair<std::string, checked>> weight_formats(const model_spec& spec) {
  std::vector<std::pair<std::string, checked>> out;
  for (const char* format : {"bf16", "fp8", "nvfp4"}) {
    model_spec one = spec;
    one.precision.set_weights(parse_dtype(format));
    graph g = build_graph(one);
    out.emplace_back(format, tally_params(g).weight_bytes);
  }
  return out;
}

/// Requests of `length` tokens the engine holds at once on one instance of `lay` (tp x pp ranks;
/// EP within the tp group keeps the same bytes per rank): floor(max_concurrency), 0 when one
/// request does not fit. A model the engine's rules cannot take is named.
std::int64_t engine_requests(const graph& g, engine::capacity_request q, const layout& lay,
                             const gpu_spec& card, std::int64_t length) {
  q.config.max_model_len = length;
  q.config.tensor_parallel = lay.tp;
  q.config.pipeline_parallel = lay.pp;
  if (q.memory.logged.empty()) q.memory.gpu = card;
  try {
    engine::capacity_result r = engine::answer_capacity(g, q);
    if (!r.capacity.fits || r.no_memory_left() || !(r.capacity.max_concurrency >= 1)) return 0;
    return static_cast<std::int64_t>(std::floor(r.capacity.max_concurrency));
  } catch (const spec_error& e) {
    throw spec_error(e.field(), fmt::format("{}: {}", g.spec->name, e.message()));
  }
}

/// The fewest cards whose engine holds `requests` of `length` (engine::answer_plan, the layouts
/// `plan --engine` chooses among), as a placement fit: with --engine the report's deployment
/// and its cards table are the engine's, as its requests are, not the textbook plan's.
std::optional<fit> engine_cards(const graph& g, engine::capacity_request eq,
                                const report_request& q, std::int64_t length,
                                std::int64_t requests) {
  engine::plan_request pq;
  eq.config.max_model_len = length;
  if (eq.memory.logged.empty()) eq.memory.gpu = q.gpu;
  pq.capacity = eq;
  pq.card = q.gpu;
  pq.requests = requests;
  pq.node_gpus = q.node_gpus;
  pq.max_gpus = q.max_gpus;
  engine::plan_result r;
  try {
    r = engine::answer_plan(g, pq);
  } catch (const spec_error& e) {
    throw spec_error(e.field(), fmt::format("{}: {}", g.spec->name, e.message()));
  }
  if (!r.best) return std::nullopt;
  fit f;
  f.l =
      layout_for(g, {.tp = r.best->config.tensor_parallel, .pp = r.best->config.pipeline_parallel});
  f.fits = true;
  f.instances = r.instances;
  f.max_requests = static_cast<std::int64_t>(std::floor(r.best->capacity.max_concurrency));
  return f;
}

}  // namespace

const char* state_class_name(state_class k) {
  switch (k) {
    case state_class::history:
      return "history";
    case state_class::window:
      return "window";
    case state_class::fixed:
      return "fixed";
    case state_class::token_history:
      return "token history";
  }
  return "history";
}

planned_deployment plan_deployment(const graph& g, const gpu_spec& card, std::int64_t length,
                                   checked workspace, std::int64_t node_gpus,
                                   std::int64_t max_gpus, bool dp_attention) {
  planned_deployment p;
  for (std::int64_t n = 1; n <= max_gpus; ++n) {
    if (n > node_gpus && n % node_gpus != 0) continue;  // past one server, whole servers
    p.searched_up_to = n;
    for (const layout& l : deployable_layouts(g, card, n, node_gpus)) {
      if (!dp_attention && l.dp > 1) continue;
      fit f = evaluate_layout(g, card, l, length, 1, workspace);
      if (f.fits && (!p.best || f.max_requests > p.best->max_requests)) p.best = f;
    }
    if (p.best) return p;
  }
  return p;
}

/// The model's throughput per GPU against per user on its deployment (`calc serve`'s steady
/// state), concurrency 1, 2, 4, ... up to the requests the engine runs at once, keeping the
/// points no other beats on both axes (the Pareto frontier).
void answer_load(const graph& g, const report_request& q, report_model& m) {
  const load_request& w = *q.load;
  if (!m.deployable) {
    m.load_note = "no deployment holds the model";
    return;
  }
  // The report's layout counts tp over the stage's cards, dp groups among them; the step model
  // counts tp per attention group (as `calc serve --tp --dp` reads them).
  serve::serve_layout l{m.lay.tp / m.lay.dp, m.lay.ep, m.lay.dp, m.lay.pp};
  // A tp group past the NVLink domain has no time `calc serve` would give (it refuses it): the
  // byte counts above stand, the load chart says why it is left out.
  if (std::string why = serve::domain_problem(q.gpu, l, server_gpus_of(q.gpu, q.node_gpus));
      !why.empty()) {
    m.load_note = why;
    return;
  }
  try {
    serve::deployment d =
        serve::make_deployment(g, q.gpu, l, 0, serve::compile_forms(g, w.k.expert_zipf_s));
    auto gpus = static_cast<double>(l.gpus());
    std::int64_t cap = std::min(w.cfg.max_num_seqs, serve::make_scenario(d, w.cfg, 1).kv_requests);
    if (cap < 1) {
      m.load_note = "not one request fits the KV pool";
      return;
    }
    double best = -1;
    for (std::int64_t c = 1;; c = std::min(2 * c, cap)) {
      serve::steady_state st = serve::solve_steady_state(serve::make_scenario(d, w.cfg, c), w.k);
      double per_gpu = st.output_tokens_per_s / gpus;
      // More clients give each a slower token; a point is on the frontier when it also gives
      // more throughput per GPU than every point before it.
      if (per_gpu > best) {
        m.load.push_back({c, 1e3 / st.tpot_ms, per_gpu, st.ttft_ms, st.tpot_ms});
        best = per_gpu;
      }
      if (c == cap) break;
    }
  } catch (const spec_error& e) {
    m.load_note = e.what();
  }
}

report_model answer_report_model(const graph& g, const report_request& q, checked vision_bytes) {
  const model_spec& s = *g.spec;
  const std::vector<std::int64_t>& lengths = q.lengths;
  if (lengths.empty()) throw spec_error("lengths", "give at least one context length");
  params_tally p = tally_params(g);
  crossover_plan first = plan_crossover(g, lengths.front());
  state_tally last = tally_state(g, lengths.back());
  report_model m;
  m.name = s.name;
  m.layers = s.layers.count;
  m.total_params = p.total;
  m.active_params = p.active;
  m.formats = model_formats(s);
  m.weight_bytes = p.weight_bytes;
  m.weights = weight_formats(s);
  m.fixed_bytes = last.fixed;
  m.per_token = last.per_token;
  m.crossover_tokens = first.state_crossover_tokens;
  m.weight_read_bytes = first.weight_read_bytes;
  gpu_spec card = card_as_planned(q.gpu, q.memory);
  if (q.lay) {
    // The models compared share the layout; --ep splits only those with routed experts.
    layout lay = layout_for(g, *q.lay);
    if (std::string why = layout_problem(g, lay); !why.empty()) throw spec_error("layout", why);
    m.lay = lay;
  } else if (q.engine) {
    engine::capacity_request eq = *q.engine;
    eq.memory.vision_bytes = vision_bytes;
    std::optional<fit> f = engine_cards(g, eq, q, lengths.back(), 1);
    m.planned = true;
    m.deployable = f.has_value();
    m.searched_up_to = q.max_gpus;
    if (f) m.lay = f->l;
  } else {
    planned_deployment d = plan_deployment(g, card, lengths.back(), q.workspace,
                                           server_gpus_of(q.gpu, q.node_gpus), q.max_gpus, true);
    m.planned = true;
    m.deployable = d.best.has_value();
    m.searched_up_to = d.searched_up_to;
    if (d.best) m.lay = d.best->l;
  }
  // Components: one per (name, class) of the state at the longest length, its bytes at each.
  for (const state_item& i : last.items)
    m.components.push_back({i.name, i.kind, i.layers, i.per_token, {}});

  capacity_request cq;
  cq.gpus = {q.gpu};
  cq.lengths = lengths;
  cq.lay = m.lay;
  cq.workspace = q.workspace;
  cq.memory = q.memory;
  capacity_result cap = answer_capacity(g, cq);
  // One request's time runs on the tp cards of a stage, stage after stage: at the tp cards'
  // peaks and bandwidth added, the stages' bounds sum to the whole model's (dp groups and
  // replicas serve other requests).
  const std::int64_t cards = m.lay.tp;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::int64_t n = lengths[i];
    state_tally st = tally_state(g, n);
    for (std::size_t k = 0; k < st.items.size() && k < m.components.size(); ++k)
      m.components[k].bytes.push_back(st.items[k].bytes);
    crossover_plan c = plan_crossover(g, n);
    report_point pt;
    pt.length = n;
    pt.state_bytes = st.total;
    pt.decode_read_bytes = st.decode_read;
    pt.batch_read_crossover = c.batch_read_crossover;
    const capacity_plan& held = cap.rows[i].plan;
    pt.requests = held.weights_fit ? held.requests : 0;
    if (q.engine) {
      engine::capacity_request eq = *q.engine;
      eq.memory.vision_bytes = vision_bytes;
      pt.requests = m.deployable ? engine_requests(g, eq, m.lay, q.gpu, n) : 0;
      pt.cards = engine_cards(g, eq, q, n, q.requests);
      pt.searched_up_to = q.max_gpus;
    } else {
      placement_plan place = plan_placement(g, card, n, q.requests, q.workspace,
                                            server_gpus_of(q.gpu, q.node_gpus), q.max_gpus);
      pt.cards = place.best;
      pt.searched_up_to = place.searched_up_to;
    }
    // A prefill of a million tokens on a large model can pass the 64-bit FLOP range of the
    // roofline; the decode step at that context still has a bound.
    try {
      roofline_plan full = plan_roofline(g, card, cards, 1, 0, n, false);
      pt.prefill = full.prefill;
      pt.decode = full.decode;
    } catch (const overflow_error&) {
      pt.decode = plan_roofline(g, card, cards, 1, n - 1, 1, false).decode;
    }
    m.points.push_back(pt);
  }
  if (q.load) answer_load(g, q, m);
  return m;
}

report_data answer_report(const std::vector<const graph*>& models, const report_request& q) {
  report_data r;
  r.gpu = card_as_planned(q.gpu, q.memory);
  r.memory_basis = memory_basis_used(q.gpu, q.memory);
  r.lay = q.lay;
  r.workspace_bytes = q.workspace;
  r.requests = q.requests;
  r.lengths = q.lengths;
  if (q.engine) r.engine = fmt::format("{} {}", q.engine->rules->engine, q.engine->rules->versions);
  r.load = q.load;
  if (!q.vision_bytes.empty() && q.vision_bytes.size() != models.size())
    throw std::logic_error("answer_report: one vision figure per model");
  for (std::size_t i = 0; i < models.size(); ++i)
    r.models.push_back(answer_report_model(
        *models[i], q, q.vision_bytes.empty() ? checked{0} : q.vision_bytes[i]));
  return r;
}

}  // namespace calc
