// Serving questions: capacity on GPUs, placement over cards, roofline time, speculative decoding,
// and the catalogues (models, GPUs).
#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "cli/result_units.h"
#include "cli/support.h"
#include "common/limits.h"
#include "plan/capacity.h"
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

/// Card memory as its basis counts it: as sold in decimal GB as vendors print it, the
/// runtime-visible figure in GiB as the CUDA runtime and the engines' logs print it.
std::string memory_text(const checked& bytes, const std::string& basis) {
  return basis == "runtime" ? human_bytes(bytes.value()) : human_decimal_bytes(bytes.value());
}

/// The basis in a title: "runtime memory" or "memory as sold".
std::string basis_phrase(const std::string& basis) {
  return basis == "runtime" ? "runtime memory" : "memory " + basis;
}

/// The capacity answer as JSON, keys as they have always been.
ojson to_json(const capacity_result& r) {
  auto row_json = [](const capacity_row& row) {
    return ojson{{"gpu", row.gpu},
                 {"length", row.length},
                 {"per_request_bytes", exact(row.plan.per_request_bytes)},
                 {"free_bytes", exact(row.plan.free_bytes)},
                 {"requests", row.plan.requests}};
  };
  const capacity_plan first = r.first().plan;
  ojson j;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["gpus"] = r.cards;
  j["layout"] = layout_name(r.lay);
  j["memory_bytes"] = exact(r.memory_bytes);
  j["memory_basis"] = r.memory_basis;  // runtime-visible or as sold
  j["weight_bytes"] = exact(r.weight_bytes);
  j["weights_format"] = r.formats.weights;
  j["kv_format"] = r.formats.kv;
  j["formats"] = r.formats.summary;  // the storage formats assumed
  j["workspace_bytes"] = exact(r.workspace_bytes);
  if (r.page_tokens > 0) j["page_tokens"] = r.page_tokens;
  if (r.shared_prefix > 0) j["shared_prefix_bytes"] = exact(r.shared_prefix_bytes);
  j["length"] = r.first().length;
  j["per_request_bytes"] = exact(first.per_request_bytes);
  j["free_bytes"] = exact(first.free_bytes);
  j["requests"] = first.requests;
  j["weights_fit"] = first.weights_fit;
  if (!first.weights_fit)
    // In the units a reader expects (weights in GiB, card memory as its basis prints it);
    // weight_bytes and memory_bytes hold the exact integers.
    j["note"] = fmt::format(
        "the weights alone ({}) plus the workspace exceed the {} of memory",
        r.weight_bytes.fits_int64() ? human_bytes(r.weight_bytes.value())
                                    : exact(r.weight_bytes).dump() + " B",
        memory_text(r.memory_bytes, r.memory_basis));
  if (r.weight_budget) {
    j["budget_requests"] = r.weight_budget->requests;
    j["max_params"] = exact(r.weight_budget->max_params);
    j["max_weight_bytes"] = exact(r.weight_budget->max_weight_bytes);
  }
  ojson rows = ojson::array();
  for (const capacity_row& row : r.rows) rows.push_back(row_json(row));
  j["rows"] = rows;
  return j;
}

/// The plan answer as JSON, keys as they have always been.
ojson to_json(const placement_result& r) {
  ojson j;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["memory_basis"] = r.memory_basis;  // runtime-visible or as sold
  j["card_memory_bytes"] = exact(r.card_memory);
  j["length"] = r.length;
  j["requests"] = r.requests;
  j["workspace_bytes"] = exact(r.workspace_bytes);
  j["formats"] = r.formats.summary;  // the storage formats assumed
  j["weight_bytes"] = exact(r.weight_bytes);
  auto loads = [](const fit& f) {
    ojson a = ojson::array();
    for (const card_load& c : f.loads)
      a.push_back({{"stage", c.stage},
                   {"layers", fmt::format("{}-{}", c.first_layer, c.first_layer + c.layers - 1)},
                   {"weight_bytes", exact(c.weight_bytes)},
                   {"state_per_request_bytes", exact(c.state_bytes)}});
    return a;
  };
  const placement_plan& p = r.plan;
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
    // A sentence a reader takes in at once: card memory as its basis prints it, the
    // shortfall (weights + state bytes) in GiB as the chapter counts them; the exact integer is
    // fewer_gpus_shortfall_bytes.
    j["why_not_fewer"] = fmt::format(
        "with {} {} of {} the best layout ({}) leaves its fullest card {} short of "
        "weights + workspace + {} requests' state",
        b.cards(), b.cards() == 1 ? "card" : "cards", memory_text(r.card_memory, r.memory_basis),
        deployment_name(b), human_bytes((checked(0) - b.worst_free).value()), r.requests);
    if (p.best && p.best->cards() - b.cards() > 1) {
      std::int64_t from = b.cards() + 1, to = p.best->cards() - 1;
      j["why_not_fewer"] =
          j["why_not_fewer"].get<std::string>() +
          (from == to
               ? fmt::format("; no layout engines run on {} cards comes closer", from)
               : fmt::format("; no layout engines run on {} to {} cards comes closer", from, to));
    }
  }
  return j;
}

/// The roofline answer as JSON, keys as they have always been.
ojson to_json(const roofline_result& r) {
  auto call_json = [](const roofline_call& c) {
    return ojson{{"flops", exact(c.flops)}, {"bytes", exact(c.bytes)}, {"compute_s", c.compute_s},
                 {"memory_s", c.memory_s},  {"bound_s", c.bound_s},    {"regime", c.regime}};
  };
  const roofline_plan& b = r.bounds;
  ojson j;
  j["model"] = r.model;
  j["gpu"] = r.asked.gpu.name;
  j["gpus"] = r.asked.tp;
  j["tp"] = r.asked.tp;
  j["peak"] = r.peak;
  j["batch"] = r.asked.batch;
  j["context"] = r.asked.context;
  j["prompt"] = r.asked.prompt;
  j["prefill"] = call_json(b.prefill);
  j["decode"] = call_json(b.decode);
  j["ttft_lower_bound_s"] = b.ttft_s;
  j["decode_tokens_per_s_upper_bound"] = b.decode_tokens_per_s;
  j["calls"] = ojson::array(
      {ojson{{"call", "prefill"},
             {"bound_ms", b.prefill.bound_s * 1e3},
             {"regime", b.prefill.regime}},
       ojson{
           {"call", "decode"}, {"bound_ms", b.decode.bound_s * 1e3}, {"regime", b.decode.regime}}});
  return j;
}

}  // namespace

result run_capacity(const options& o) {
  if (o.lengths.empty()) throw spec_error("--length", "give at least one context length");
  // A request of no tokens holds no state: nothing would bound how many fit.
  for (std::int64_t l : o.lengths) check_count("--length", l, 1);
  check_limit("--tp", o.tp, 1, limits::cards, "cards");
  check_limit("--dp", o.dp, 1, limits::cards, "cards");
  check_limit("--pp", o.pp, 1, limits::cards, "cards");
  check_limit("--ep", o.ep, 1, limits::cards, "cards");
  check_count("--page-tokens", o.page_tokens, 0);
  check_count("--shared-prefix", o.shared_prefix, 0);
  if (o.requests_given) check_limit("--requests", o.requests, 0, limits::requests, "requests");
  for (std::int64_t l : o.lengths)
    if (o.shared_prefix > l)
      throw spec_error("--shared-prefix",
                       fmt::format("{} tokens is longer than the length {}: the shared prefix is "
                                   "part of every request",
                                   o.shared_prefix, l));
  if (o.shared_prefix > 0 && (o.tp * o.pp > 1 || o.ep > 1))
    throw spec_error("--shared-prefix", kSharedPrefixOnOneCard);
  capacity_request q;
  q.workspace = parse_size_option("--workspace", o.workspace);
  q.lay = layout{o.tp, o.pp, o.ep, o.dp};
  q.lengths = o.lengths;
  q.page_tokens = o.page_tokens;
  q.shared_prefix = o.shared_prefix;
  q.memory = parse_memory_basis("--memory", o.memory);
  if (!o.weight_bytes.empty()) q.weight_bytes = parse_size_option("--weight-bytes", o.weight_bytes);
  if (o.requests_given) q.budget_requests = o.requests;
  loaded_model m = load(o);
  if (std::string why = layout_problem(m.g, q.lay); !why.empty())
    throw spec_error("--tp/--pp/--ep/--dp", why);
  for (const std::string& name : split_items("--gpu", o.gpu, "h100-sxm,h200"))
    q.gpus.push_back(load_gpu(name));
  if (q.gpus.empty()) throw spec_error("--gpu", "name at least one GPU");
  // The budget answers for one card at one length (its rows carry it); on a list it would
  // answer for the first pair alone and say nothing of the rest.
  if (o.requests_given && (q.gpus.size() > 1 || q.lengths.size() > 1))
    throw spec_error("--requests",
                     fmt::format("sizes the weight budget of one card at one length; got {} "
                                 "GPUs and {} lengths: give one of each",
                                 q.gpus.size(), q.lengths.size()));
  capacity_result r = answer_capacity(m.g, q);
  result out{to_json(r), fmt::format("calc capacity: {} on {} x {}, {}", r.model, r.cards,
                                     r.gpu_display, basis_phrase(r.memory_basis))};
  // The runtime figure is what the CUDA runtime reports, a binary quantity (H100: 79.19 GiB):
  // printed in GiB as the engines' logs print it; the figure as sold stays in decimal GB.
  if (r.memory_basis == "runtime") {
    out.units = units_of("capacity");
    out.units.of["memory_bytes"] = unit::bytes;
  }
  return out;
}

result run_plan(const options& o) {
  check_count("--length", o.length, 1);  // as capacity: a request of no tokens bounds nothing
  check_limit("--requests", o.requests, 0, limits::requests, "requests");
  check_limit("--max-gpus", o.max_gpus, 1, limits::cards, "cards");
  placement_request q;
  q.workspace = parse_size_option("--workspace", o.workspace);
  q.length = o.length;
  q.requests = o.requests;
  q.max_gpus = o.max_gpus;
  q.memory = parse_memory_basis("--memory", o.memory);
  loaded_model m = load(o);
  q.gpu = load_gpu(o.gpu);
  q.node_gpus = node_gpus_option(o);
  placement_result r = answer_plan(m.g, q);
  return {to_json(r),
          fmt::format("calc plan: {} on {} cards ({}), {} requests of {} tokens", r.model,
                      r.gpu, basis_phrase(r.memory_basis), r.requests, r.length)};
}

result run_roofline(const options& o) {
  check_count("--prompt", o.prompt, 1);
  check_count("--context", o.context, 0);
  check_count("--batch", o.batch, 1);
  check_limit("--tp", o.tp, 1, limits::cards, "cards");
  loaded_model m = load(o);
  // The bound is for cards that split the model as engines do: a tp the heads cannot take is
  // refused here as capacity and serve refuse it.
  if (std::string why = layout_problem(m.g, layout{.tp = o.tp}); !why.empty())
    throw spec_error("--tp", why);
  roofline_request q{load_gpu(o.gpu), o.tp, o.batch, o.context, o.prompt, o.fp8};
  if (q.fp8 && q.gpu.fp8_tflops <= 0)
    throw spec_error("--fp8", fmt::format("{} has no FP8 tensor peak", q.gpu.name));
  roofline_result r = answer_roofline(m.g, q);
  return {to_json(r), fmt::format("calc roofline: {} on {} x {}, B={} S={} P={}", r.model, q.tp,
                                  q.gpu.display, q.batch, q.context, q.prompt)};
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
    j["gpus"].push_back(
        {{"name", g.name},
         {"display", g.display},
         {"vendor", g.vendor.empty() ? ojson(nullptr) : ojson(g.vendor)},
         {"memory_bytes", g.memory},
         {"runtime_memory_bytes", g.runtime_memory > 0 ? ojson(g.runtime_memory) : ojson(nullptr)},
         {"bandwidth_bytes", g.bandwidth},
         {"bf16_tflops", g.bf16_tflops},
         {"fp8_tflops", g.fp8_tflops},
         {"fp4_tflops", g.fp4_tflops},
         {"interconnect_bytes", g.interconnect},
         {"pcie_bytes", g.pcie > 0 ? ojson(g.pcie) : ojson(nullptr)},
         {"nvlink_domain", g.nvlink_domain},
         {"server_gpus", g.server_gpus},
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
