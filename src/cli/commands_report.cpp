// `calc report`: one document for one or more models on a GPU at a set of lengths. This file
// gathers the exact figures (the JSON body); src/report/document.cpp writes them for people.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "cli/support.h"
#include "common/limits.h"
#include "plan/capacity.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "plan/roofline.h"
#include "report/data.h"
#include "report/document.h"
#include "spec/context_limit.h"
#include "spec/format_summary.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

namespace calc::cli {

namespace {

/// One model's figures as JSON, keys as they have always been.
ojson to_json(const report_model& m) {
  ojson j;
  j["model"] = m.name;
  j["layers"] = m.layers;
  j["total_params"] = exact(m.total_params);
  j["active_params"] = exact(m.active_params);
  j["weights_format"] = m.formats.weights;
  j["weight_bytes"] = exact(m.weight_bytes);
  j["weights"] = ojson::array();
  for (const auto& [format, bytes] : m.weights)
    j["weights"].push_back({{"format", format}, {"bytes", exact(bytes)}});
  j["kv_format"] = m.formats.kv;
  j["formats"] = m.formats.summary;  // the storage formats assumed
  j["fixed_bytes"] = exact(m.fixed_bytes);
  j["per_token_bytes"] = fraction_json(m.per_token);
  j["crossover_tokens"] = ratio_json(m.crossover_tokens);
  j["weight_read_bytes"] = exact(m.weight_read_bytes);
  // The deployment the requests and time bounds are for.
  j["deployable"] = m.deployable;
  j["layout"] = m.deployable ? ojson(layout_name(m.lay)) : ojson(nullptr);
  j["gpus"] = m.deployable ? ojson(m.lay.cards()) : ojson(nullptr);
  j["layout_planned"] = m.planned;
  if (!m.deployable) j["searched_up_to"] = m.searched_up_to;
  ojson components = ojson::array();
  for (const report_component& c : m.components) {
    ojson bytes = ojson::array();
    for (const checked& b : c.bytes) bytes.push_back(exact(b));
    components.push_back({{"name", c.name},
                          {"class", class_name(c.kind)},
                          {"layers", c.layers},
                          {"per_token_bytes", fraction_json(c.per_token)},
                          {"bytes", bytes}});
  }
  ojson points = ojson::array();
  for (const report_point& p : m.points) {
    ojson pt = {{"length", p.length},
                {"state_bytes", exact(p.state_bytes)},
                {"decode_read_bytes", exact(p.decode_read_bytes)},
                {"batch_read_crossover",
                 p.batch_read_crossover ? ojson(*p.batch_read_crossover) : ojson(nullptr)},
                {"requests", p.requests}};
    // The fewest cards for the report's requests at this length.
    if (p.cards) {
      pt["cards"] = p.cards->cards();
      pt["cards_layout"] = deployment_name(*p.cards);
    } else {
      pt["cards"] = nullptr;
      pt["cards_layout"] = fmt::format("none of up to {} cards", p.searched_up_to);
    }
    pt["prefill_flops"] = p.prefill ? exact(p.prefill->flops) : ojson(nullptr);
    pt["prefill_bound_s"] = p.prefill ? ojson(p.prefill->bound_s) : ojson(nullptr);
    pt["prefill_regime"] = p.prefill ? p.prefill->regime : "beyond 64-bit FLOPs";
    pt["decode_bytes"] = exact(p.decode.bytes);
    pt["decode_bound_s"] = p.decode.bound_s;
    pt["decode_regime"] = p.decode.regime;
    points.push_back(pt);
  }
  j["components"] = components;
  j["points"] = points;
  // Throughput per GPU against per user on the deployment (the Pareto frontier over clients).
  ojson load = ojson::array();
  for (const load_point& p : m.load)
    load.push_back({{"concurrency", p.concurrency},
                    {"output_tokens_per_s_per_user", p.tokens_per_s_per_user},
                    {"output_tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                    {"ttft_ms", p.ttft_ms},
                    {"tpot_ms", p.tpot_ms}});
  j["load"] = load;
  if (!m.load_note.empty()) j["load_note"] = m.load_note;
  return j;
}

/// The report's figures as JSON, keys as they have always been.
ojson to_json(const report_data& r) {
  ojson j;
  j["gpu"] = r.gpu.name;
  j["gpu_display"] = r.gpu.display;
  j["memory_bytes"] = r.gpu.memory;
  j["memory_basis"] = r.memory_basis;  // runtime-visible or as sold
  j["bandwidth_bytes"] = r.gpu.bandwidth;
  j["bf16_tflops"] = r.gpu.bf16_tflops;
  j["workspace_bytes"] = exact(r.workspace_bytes);
  j["requests"] = r.requests;
  j["lengths"] = r.lengths;
  if (!r.engine.empty()) j["requests_by"] = r.engine;  // the engine's rules; absent: plain
  if (r.lay) j["layout"] = layout_name(*r.lay);  // given; else each model's own
  if (r.load)
    j["load_workload"] = {{"engine", r.load->engine},
                          {"isl", r.load->cfg.isl},
                          {"osl", r.load->cfg.osl},
                          {"calibration", r.load->calibration},
                          {"calibration_accuracy", r.load->accuracy}};
  j["models"] = ojson::array();
  for (const report_model& m : r.models) j["models"].push_back(to_json(m));
  return j;
}

/// Writes the report to --output, creating its folder; a file that cannot be written is bad
/// input, named.
void write_output_file(const std::string& path, const std::string& text) {
  std::string shown =
      path.size() <= 160 ? path : path.substr(0, 60) + "..." + path.substr(path.size() - 60);
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw spec_error("--output", fmt::format("cannot write {}: {}", shown, ec.message()));
  std::ofstream out(path, std::ios::binary);
  if (out) out << text;
  if (!out || !out.flush())
    throw spec_error("--output", fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
}

}  // namespace

result run_report(const options& o) {
  if (!o.plot_dir.empty() && o.format != "md")
    throw spec_error("--plot-dir", fmt::format("writes the SVG charts the Markdown report links "
                                               "to; -f {} has no charts: use -f md or leave "
                                               "--plot-dir out",
                                               o.format));
  check_count("--requests", o.requests, 1);
  check_count("--max-gpus", o.max_gpus, 1);
  options v = o;
  const std::vector<std::string> names = v.models.empty() ? std::vector{o.model} : v.models;
  if (v.lengths.empty()) {  // up to the longest context limit of the models, or 1M
    std::vector<loaded_model> ms;
    std::vector<const model_spec*> specs;
    for (const std::string& name : names) {
      options one = v;
      one.model = name;
      specs.push_back(ms.emplace_back(load(one)).spec.get());
    }
    v.lengths = default_lengths(default_length_end(specs));
  }
  for (std::int64_t n : v.lengths) check_count("--length", n, 1);
  report_request q;
  q.workspace = parse_size_option("--workspace", o.workspace);
  q.lengths = v.lengths;
  q.requests = o.requests;
  q.node_gpus = node_gpus_option(o);  // none: each card's own server (server_gpus)
  q.max_gpus = o.max_gpus;
  q.memory = parse_memory_basis("--memory", o.memory);
  if (o.layout_given) {
    for (const auto& [name, n] : {std::pair{"--tp", o.tp}, std::pair{"--pp", o.pp},
                                  std::pair{"--ep", o.ep}, std::pair{"--dp", o.dp}})
      check_limit(name, n, 1, limits::cards, "cards");
    q.lay = layout{o.tp, o.pp, o.ep, o.dp};
  }
  std::optional<loaded_model> draft;  // an EAGLE draft, alive while the question runs
  std::vector<loaded_model> loaded;
  std::vector<const graph*> graphs;
  loaded.reserve(names.size());
  for (const std::string& name : names) {
    options one = v;
    one.model = name;
    graphs.push_back(&loaded.emplace_back(load(one)).g);
    if (!o.engine.empty()) q.vision_bytes.push_back(vision_bytes_of(one, loaded.back()));
    if (q.lay)
      if (std::string why = layout_problem(loaded.back().g, layout_for(loaded.back().g, *q.lay));
          !why.empty())
        throw spec_error("--tp/--pp/--ep/--dp", fmt::format("{}: {}", name, why));
  }
  // --ep splits the experts of the models that have them; with none, it would change nothing.
  if (q.lay && q.lay->ep > 1 &&
      std::none_of(graphs.begin(), graphs.end(),
                   [&](const graph* g) { return layout_for(*g, *q.lay).ep > 1; }))
    throw spec_error("--ep", fmt::format("{}: no model has routed experts to split",
                                         q.lay->ep));
  // One section per GPU: a document each, their figures side by side in JSON and CSV.
  std::vector<std::string> gpus =
      split_items("--gpu", o.gpu.empty() ? "h100-sxm" : o.gpu, "h100-sxm,h200");
  if (gpus.empty()) throw spec_error("--gpu", "name at least one GPU");
  ojson all = ojson::array();
  std::vector<report_data> reports;
  std::string markdown;
  for (const std::string& gpu : gpus) {
    q.gpu = load_gpu(gpu);
    std::vector<asked_model> asked;
    for (std::size_t i = 0; i < names.size(); ++i)
      asked.push_back(
          {loaded[i].spec->name, bundled_as_shipped(o, names[i], loaded[i].spec->name)});
    q.load = report_load_of(o, q.gpu, gpu, asked);
    if (!o.engine.empty()) q.engine = engine_request_of(o, v.lengths.front(), gpu, draft);
    report_data data = answer_report(graphs, q);
    ojson body = to_json(data);
    std::string stem = chart_stem(body, o.output);
    if (gpus.size() > 1) stem += "-" + data.gpu.name;  // one output file, a chart set per GPU
    report_files files{o.plot_dir, o.output, stem};
    if (o.format == "md") markdown += (markdown.empty() ? "" : "\n") + report_document(data, files);
    all.push_back(body);
    reports.push_back(std::move(data));
  }
  // One GPU: the body as it always was; several: one body per GPU.
  ojson j = gpus.size() == 1 ? all.front() : ojson{{"reports", all}};
  result r{j, "calc report"};
  r.markdown = markdown;
  if (o.format == "csv") r.text = report_csv(reports);
  if (!o.output.empty()) {
    // The document goes to the file (its chart links are relative to it); standard output says
    // where it went.
    std::string text = o.format == "md"    ? r.markdown
                       : o.format == "csv" ? r.text
                                           : j.dump(2) + "\n";
    write_output_file(o.output, text);
    r.markdown = r.text = fmt::format("calc report: wrote {}\n", o.output);
  }
  return r;
}

}  // namespace calc::cli
