// `calc report`: one document for one or more models on a GPU at a set of lengths. This file
// gathers the exact figures (the JSON body); src/report/document.cpp writes them for people.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/support.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "plan/roofline.h"
#include "report/document.h"
#include "spec/context_limit.h"
#include "spec/format_summary.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

namespace calc::cli {

namespace {

/// Weight bytes of the model under each common format (the other tensors keep theirs).
ojson weight_formats(const options& o) {
  ojson rows = ojson::array();
  for (const char* format : {"bf16", "fp8", "nvfp4"}) {
    options one = o;
    one.weights = format;
    loaded_model m = load(one);
    rows.push_back({{"format", format}, {"bytes", exact(tally_params(m.g).weight_bytes)}});
  }
  return rows;
}

/// One model at every length: state by component, crossovers, capacity, cards, roofline.
ojson model_section(const options& o, const gpu_spec& gpu, std::int64_t workspace) {
  loaded_model m = load(o);
  params_tally p = tally_params(m.g);
  const std::vector<std::int64_t>& lengths = o.lengths;
  crossover_plan first = plan_crossover(m.g, lengths.front());
  state_tally last = tally_state(m.g, lengths.back());
  ojson j;
  j["model"] = m.spec->name;
  j["layers"] = m.spec->layers.count;
  j["total_params"] = exact(p.total);
  j["active_params"] = exact(p.active);
  j["weights_format"] = m.spec->precision.weights.name;
  j["weight_bytes"] = exact(p.weight_bytes);
  j["weights"] = weight_formats(o);
  j["kv_format"] = m.spec->precision.kv.name;
  j["formats"] = format_summary(m.spec->precision);  // the storage formats assumed
  j["fixed_bytes"] = exact(last.fixed);
  j["per_token_bytes"] = fraction_json(last.per_token);
  j["crossover_tokens"] = ratio_json(first.state_crossover_tokens);
  j["weight_read_bytes"] = exact(first.weight_read_bytes);

  // Components: one row per (name, class), its bytes at each length.
  ojson components = ojson::array();
  for (const state_item& i : last.items)
    components.push_back({{"name", i.name},
                          {"class", class_name(i.kind)},
                          {"layers", i.layers},
                          {"per_token_bytes", fraction_json(i.per_token)},
                          {"bytes", ojson::array()}});
  ojson points = ojson::array();
  for (std::int64_t n : lengths) {
    state_tally st = tally_state(m.g, n);
    for (std::size_t k = 0; k < st.items.size() && k < components.size(); ++k)
      components[k]["bytes"].push_back(exact(st.items[k].bytes));
    crossover_plan c = plan_crossover(m.g, n);
    capacity_plan cap = plan_capacity(m.g, gpu, 1, n, workspace, p.weight_bytes);
    placement_plan place =
        plan_placement(m.g, gpu, n, o.requests, workspace, o.node_gpus, o.max_gpus);
    // A prefill of a million tokens on a large model can pass the 64-bit FLOP range of the
    // roofline; the decode step at that context still has a bound.
    std::optional<roofline_plan> full;
    try {
      full = plan_roofline(m.g, gpu, 1, 1, 0, n, false);
    } catch (const overflow_error&) {
    }
    roofline_plan r = full ? *full : plan_roofline(m.g, gpu, 1, 1, n - 1, 1, false);
    ojson pt = {{"length", n},
                {"state_bytes", exact(st.total)},
                {"decode_read_bytes", exact(st.decode_read)},
                {"batch_read_crossover",
                 c.batch_read_crossover ? ojson(*c.batch_read_crossover) : ojson(nullptr)},
                {"requests_per_card", cap.weights_fit ? cap.requests : 0}};
    if (place.best) {
      pt["cards"] = place.best->cards();
      pt["layout"] = deployment_name(*place.best);
    } else {
      pt["cards"] = nullptr;
      pt["layout"] = fmt::format("none of up to {} cards", place.searched_up_to);
    }
    pt["prefill_flops"] = full ? exact(r.prefill.flops) : ojson(nullptr);
    pt["prefill_bound_s"] = full ? ojson(r.prefill.bound_s) : ojson(nullptr);
    pt["prefill_regime"] = full ? r.prefill.regime : "beyond 64-bit FLOPs";
    pt["decode_bytes"] = exact(r.decode.bytes);
    pt["decode_bound_s"] = r.decode.bound_s;
    pt["decode_regime"] = r.decode.regime;
    points.push_back(pt);
  }
  j["components"] = components;
  j["points"] = points;
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
  check_count("--requests", o.requests, 1);
  check_count("--node-gpus", o.node_gpus, 1);
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
  std::int64_t workspace = parse_size_option("--workspace", o.workspace);
  gpu_spec gpu = load_gpu(o.gpu.empty() ? "h100-sxm" : o.gpu);
  ojson j;
  j["gpu"] = gpu.name;
  j["gpu_display"] = gpu.display;
  j["memory_bytes"] = gpu.memory;
  j["bandwidth_bytes"] = gpu.bandwidth;
  j["bf16_tflops"] = gpu.bf16_tflops;
  j["workspace_bytes"] = workspace;
  j["requests"] = o.requests;
  j["lengths"] = v.lengths;
  j["models"] = ojson::array();
  for (const std::string& name : names) {
    options one = v;
    one.model = name;
    j["models"].push_back(model_section(one, gpu, workspace));
  }
  result r{j, "calc report"};
  report_files files{o.plot_dir, o.output};
  if (o.format == "csv") r.text = report_csv(j);
  if (o.format == "md") r.markdown = report_document(j, files);
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
