// Serving questions: capacity on GPUs, placement over cards, roofline time, speculative decoding,
// and the catalogues (models, GPUs).
#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "cli/support.h"
#include "common/limits.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "plan/roofline.h"
#include "spec/format_summary.h"
#include "plan/speculative.h"
#include "spec/gpu_spec.h"
#include "spec/hf/hub.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

namespace calc::cli {

namespace {

/// One request's state on the cards, paged and net of a shared prefix (stored once apart).
checked request_state(const graph& g, std::int64_t length, std::int64_t page, std::int64_t prefix) {
  // Paged serving allocates whole blocks of `page` tokens per request.
  std::int64_t kept = page > 0 ? (length + page - 1) / page * page : length;
  checked own = tally_state(g, kept).total;
  if (prefix > 0) own = own - tally_state(g, std::min(prefix, length)).global_history;
  return own;
}

}  // namespace

result run_capacity(const options& o) {
  if (o.lengths.empty()) throw spec_error("--length", "give at least one context length");
  for (std::int64_t l : o.lengths) check_count("--length", l, 0);
  check_limit("--tp", o.tp, 1, limits::cards, "cards");
  check_limit("--dp", o.dp, 1, limits::cards, "cards");
  check_limit("--pp", o.pp, 1, limits::cards, "cards");
  check_limit("--ep", o.ep, 1, limits::cards, "cards");
  check_count("--page-tokens", o.page_tokens, 0);
  check_count("--shared-prefix", o.shared_prefix, 0);
  if (o.requests >= 0) check_limit("--requests", o.requests, 0, limits::requests, "requests");
  for (std::int64_t l : o.lengths)
    if (o.shared_prefix > l)
      throw spec_error("--shared-prefix",
                       fmt::format("{} tokens is longer than the length {}: the shared prefix is "
                                   "part of every request",
                                   o.shared_prefix, l));
  std::int64_t workspace = parse_size_option("--workspace", o.workspace);
  loaded_model m = load(o);
  layout lay{o.tp, o.pp, o.ep, o.dp};
  bool sharded = lay.cards() > 1 || o.ep > 1;
  if (std::string why = layout_problem(m.g, lay); !why.empty())
    throw spec_error("--tp/--pp/--ep/--dp", why);
  std::int64_t cards = lay.cards();
  checked weights = tally_params(m.g).weight_bytes;
  bool given_weights = !o.weight_bytes.empty();
  if (given_weights) weights = parse_size_option("--weight-bytes", o.weight_bytes);
  checked prefix_bytes =
      o.shared_prefix > 0 ? tally_state(m.g, o.shared_prefix).global_history : checked(0);

  ojson rows = ojson::array();
  std::vector<gpu_spec> gpus;
  for (const std::string& name : split_list(o.gpu)) gpus.push_back(load_gpu(name));
  if (gpus.empty()) throw spec_error("--gpu", "name at least one GPU");
  std::optional<capacity_plan> first;
  for (const gpu_spec& gpu : gpus) {
    for (std::int64_t l : o.lengths) {
      capacity_plan c = plan_capacity(m.g, gpu, cards, l, workspace, weights);
      c.per_request_bytes = request_state(m.g, l, o.page_tokens, o.shared_prefix);
      c.free_bytes = c.memory - weights - workspace - prefix_bytes;
      c.weights_fit = c.free_bytes >= 0;
      c.requests = c.weights_fit && c.per_request_bytes > 0
                       ? (c.free_bytes / c.per_request_bytes).value()
                       : 0;
      if (sharded) {
        // Per card: every stage's card must hold its weights, the workspace and its share of
        // each request's state; the tightest stage decides, each dp group holds its own
        // requests. Free bytes are the deployment's: every card's, summed.
        std::vector<card_load> loads = card_loads(m.g, lay, l);
        checked free = 0;
        bool fit_all = true;
        for (const card_load& cl : loads) {
          checked card_free = checked(gpu.memory) - cl.weight_bytes - workspace;
          fit_all = fit_all && card_free >= 0;
          free += card_free * lay.tp;
        }
        c.requests = fit_all ? layout_requests(loads, lay, checked(gpu.memory), workspace) : 0;
        c.free_bytes = free;
        c.weights_fit = fit_all;
      }
      rows.push_back({{"gpu", gpu.name},
                      {"length", l},
                      {"per_request_bytes", exact(c.per_request_bytes)},
                      {"free_bytes", exact(c.free_bytes)},
                      {"requests", c.requests}});
      if (!first) first = c;
    }
  }
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpus.front().name;
  j["gpus"] = cards;
  j["layout"] = layout_name(lay);
  j["memory_bytes"] = exact(checked(gpus.front().memory) * cards);
  j["weight_bytes"] = exact(weights);
  j["weights_format"] = given_weights ? std::string("given") : m.spec->precision.weights.name;
  j["kv_format"] = m.spec->precision.kv.name;
  j["formats"] = format_summary(m.spec->precision);  // the storage formats assumed
  j["workspace_bytes"] = workspace;
  if (o.page_tokens > 0) j["page_tokens"] = o.page_tokens;
  if (o.shared_prefix > 0) j["shared_prefix_bytes"] = exact(prefix_bytes);
  j["length"] = o.lengths.front();
  j["per_request_bytes"] = exact(first->per_request_bytes);
  j["free_bytes"] = exact(first->free_bytes);
  j["requests"] = first->requests;
  j["weights_fit"] = first->weights_fit;
  if (!first->weights_fit)
    // In the units a reader expects (weights in GiB, card memory in decimal GB as vendors print
    // it); weight_bytes and memory_bytes hold the exact integers.
    j["note"] = fmt::format(
        "the weights alone ({}) plus the workspace exceed the {} of memory",
        weights.fits_int64() ? human_bytes(weights.value()) : exact(weights).dump() + " B",
        human_decimal_bytes((checked(gpus.front().memory) * cards).value()));
  if (o.requests >= 0) {
    checked n = max_params(m.g, gpus.front(), cards, o.lengths.front(), workspace, o.requests);
    j["budget_requests"] = o.requests;
    j["max_params"] = exact(n);
    j["max_weight_bytes"] = exact(m.spec->precision.weights.bytes(n));
  }
  j["rows"] = rows;
  return {j,
          fmt::format("calc capacity: {} on {} x {}", m.spec->name, cards, gpus.front().display)};
}

result run_plan(const options& o) {
  check_count("--length", o.length, 0);
  check_limit("--requests", o.requests, 0, limits::requests, "requests");
  check_limit("--node-gpus", o.node_gpus, 1, limits::cards, "cards");
  check_limit("--max-gpus", o.max_gpus, 1, limits::cards, "cards");
  std::int64_t workspace = parse_size_option("--workspace", o.workspace);
  loaded_model m = load(o);
  gpu_spec gpu = load_gpu(o.gpu);
  placement_plan p =
      plan_placement(m.g, gpu, o.length, o.requests, workspace, o.node_gpus, o.max_gpus);
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpu.name;
  j["length"] = o.length;
  j["requests"] = o.requests;
  j["workspace_bytes"] = workspace;
  j["formats"] = format_summary(m.spec->precision);  // the storage formats assumed
  j["weight_bytes"] = exact(tally_params(m.g).weight_bytes);
  auto loads = [](const fit& f) {
    ojson a = ojson::array();
    for (const card_load& c : f.loads)
      a.push_back({{"stage", c.stage},
                   {"layers", fmt::format("{}-{}", c.first_layer, c.first_layer + c.layers - 1)},
                   {"weight_bytes", exact(c.weight_bytes)},
                   {"state_per_request_bytes", exact(c.state_bytes)}});
    return a;
  };
  if (!p.best) {
    j["gpus"] = nullptr;
    j["note"] = fmt::format("no layout of up to {} cards fits", p.searched_up_to);
  } else {
    const fit& f = *p.best;
    j["gpus"] = f.cards();
    j["instances"] = f.instances;
    j["tp"] = f.l.tp;
    j["pp"] = f.l.pp;
    j["ep"] = f.l.ep;
    j["dp"] = f.l.dp;
    j["layout"] = deployment_name(f);
    j["max_requests"] = f.total_requests();
    j["worst_card_free_bytes"] = exact(f.worst_free);
    j["stages"] = loads(f);
  }
  if (p.below) {
    const fit& b = *p.below;
    j["fewer_gpus"] = b.cards();
    j["fewer_gpus_layout"] = deployment_name(b);
    j["fewer_gpus_shortfall_bytes"] = exact(checked(0) - b.worst_free);
    // A sentence a reader takes in at once: card memory in decimal GB as vendors print it, the
    // shortfall (weights + state bytes) in GiB as the chapter counts them; the exact integer is
    // fewer_gpus_shortfall_bytes.
    j["why_not_fewer"] = fmt::format(
        "with {} {} of {} the best layout ({}) leaves its fullest card {} short of "
        "weights + workspace + {} requests' state",
        b.cards(), b.cards() == 1 ? "card" : "cards", human_decimal_bytes(gpu.memory),
        j["fewer_gpus_layout"].get<std::string>(), human_bytes((checked(0) - b.worst_free).value()), o.requests);
  }
  return {j, fmt::format("calc plan: {} on {} cards, {} requests of {} tokens", m.spec->name,
                         gpu.name, o.requests, o.length)};
}

result run_roofline(const options& o) {
  check_count("--prompt", o.prompt, 1);
  check_count("--context", o.context, 0);
  check_count("--batch", o.batch, 1);
  check_limit("--tp", o.tp, 1, limits::cards, "cards");
  loaded_model m = load(o);
  gpu_spec gpu = load_gpu(o.gpu);
  if (o.fp8 && gpu.fp8_tflops <= 0)
    throw spec_error("--fp8", fmt::format("{} has no FP8 tensor peak", gpu.name));
  roofline_plan r = plan_roofline(m.g, gpu, o.tp, o.batch, o.context, o.prompt, o.fp8);
  auto call_json = [](const roofline_call& c) {
    return ojson{{"flops", exact(c.flops)}, {"bytes", exact(c.bytes)}, {"compute_s", c.compute_s},
                 {"memory_s", c.memory_s},  {"bound_s", c.bound_s},    {"regime", c.regime}};
  };
  ojson j;
  j["model"] = m.spec->name;
  j["gpu"] = gpu.name;
  j["gpus"] = o.tp;
  j["tp"] = o.tp;
  j["peak"] = o.fp8 ? "fp8" : "bf16";
  j["batch"] = o.batch;
  j["context"] = o.context;
  j["prompt"] = o.prompt;
  j["prefill"] = call_json(r.prefill);
  j["decode"] = call_json(r.decode);
  j["ttft_lower_bound_s"] = r.ttft_s;
  j["decode_tokens_per_s_upper_bound"] = r.decode_tokens_per_s;
  j["calls"] = ojson::array(
      {ojson{{"call", "prefill"},
             {"bound_ms", r.prefill.bound_s * 1e3},
             {"regime", r.prefill.regime}},
       ojson{
           {"call", "decode"}, {"bound_ms", r.decode.bound_s * 1e3}, {"regime", r.decode.regime}}});
  return {j, fmt::format("calc roofline: {} on {} x {}, B={} S={} P={}", m.spec->name, o.tp,
                         gpu.display, o.batch, o.context, o.prompt)};
}

namespace {

/// The speculative answer as JSON, keys as they have always been.
ojson to_json(const speculative_request& q, const speculative_result& r) {
  ojson j;
  j["decode_ms"] = q.decode;
  j["round_ms"] = q.round;
  j["accepted_per_round"] = q.accepted;
  j["amortised_ms_per_token"] = r.amortised;
  j["speedup"] = r.speedup;
  j["beneficial"] = r.beneficial;
  j["break_even_accepted"] = r.break_even_accepted;
  return j;
}

}  // namespace

result run_speculative(const options& o) {
  speculative_request q{o.decode_ms, o.round_ms, o.accepted};
  return {to_json(q, plan_speculative(q)), "calc speculative"};
}

result run_models(const options&) {
  ojson j;
  j["folder"] = models_dir();
  j["models"] = ojson::array();
  for (const auto& name : bundled_models()) {
    model_spec s = read_model_file(resolve_model_path(name));
    graph g = build_graph(s);
    std::optional<std::string> id = hf::repo_in_source(s.source);  // the Hugging Face id
    j["models"].push_back({{"name", name},
                           {"id", id ? ojson(*id) : ojson(nullptr)},
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
  // The runtime-visible memory's records: an index keyed by card, so JSON has them and the
  // Markdown table keeps a short column (docs/gpus.md).
  ojson runtime = ojson::object();
  for (const gpu_spec& g : gpu_catalogue()) {
    j["gpus"].push_back({{"name", g.name},
                         {"display", g.display},
                         {"memory_bytes", g.memory},
                         {"runtime_memory_bytes",
                          g.runtime_memory > 0 ? ojson(g.runtime_memory) : ojson(nullptr)},
                         {"bandwidth_bytes", g.bandwidth},
                         {"bf16_tflops", g.bf16_tflops},
                         {"fp8_tflops", g.fp8_tflops},
                         {"fp4_tflops", g.fp4_tflops},
                         {"interconnect_bytes", g.interconnect},
                         {"source", g.source}});
    if (g.runtime_memory > 0)
      runtime[g.name] = {{"bytes", g.runtime_memory}, {"source", g.runtime_memory_source}};
  }
  j["runtime_memory_sources"] = runtime;
  return {j,
          "calc gpus: dense tensor peaks; memory as sold and as the CUDA runtime reports it, "
          "bandwidths per second"};
}

}  // namespace calc::cli
