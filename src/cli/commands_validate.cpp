// `calc validate`: the reference executor against the tally of the same scaled spec; with
// `--device cuda`, instead the CUDA module's run of the kernel plan (exec/gpu_plan.h) over the
// layers of the models models/validate/cuda-timed.yaml lists, each row written to --jsonl as
// soon as it is measured and the report rendered from those rows. The CPU executor is not run
// there: on a GPU machine every second goes to the kernels, and CI validates every bundled model
// on the CPU.
#include <fmt/format.h>

#include <fstream>

#include "cli/support.h"
#include "exec/gpu.h"
#include "exec/gpu_plan.h"
#include "exec/validate.h"
#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "spec/timed_models.h"

namespace calc::cli {

namespace {

/// "out: pass (max 1.2e-07, nmse 3.4e-14)" for each compared output of a row.
std::string outputs_summary(const ojson& row) {
  std::string s;
  for (const ojson& o : row.value("outputs", ojson::array()))
    s += fmt::format(
        "{}{}: {} (max {:.3g}, nmse {:.3g}{})", s.empty() ? "" : "; ", o.value("output", ""),
        o.value("verdict", ""), o.value("max_abs_error", 0.0), o.value("nmse", 0.0),
        o.value("non_finite", 0) ? fmt::format(", {} non-finite", o.value("non_finite", 0)) : "");
  return s;
}

/// The Markdown tables of a CUDA run, from its rows.
void tables_from_rows(const std::vector<ojson>& rows, ojson& j) {
  ojson checks = ojson::array(), timed = ojson::array(), ceilings = ojson::array(),
        clocks = ojson::array(), errors = ojson::array();
  std::map<std::string, std::string> twin, bytes;  // dry-run rows, by case id
  for (const ojson& r : rows) {
    const std::string kind = r.value("row", "");
    if (kind == "twin") {
      std::string caught;
      for (const ojson& f : r.value("faults", ojson::array()))
        caught += fmt::format("{}{} {}", caught.empty() ? "" : ", ", f.value("fault", ""),
                              f.value("caught", false) ? "caught" : "MISSED");
      twin[r.at("id")] = r.value("verdict", "") + ": " + outputs_summary(r) +
                         (caught.empty() ? "" : "; faults: " + caught);
    }
    if (kind == "bytes")
      bytes[r.at("id")] = fmt::format(
          "{} ({} predicted, {} state + {} scratch by the kernel)", r.value("verdict", ""),
          r.value("predicted_bytes", ojson()).dump(), r.value("kernel_state_bytes", ojson()).dump(),
          r.value("kernel_scratch_bytes", ojson()).dump());
  }
  auto shape_text = [](const ojson& r) {  // "batch 8, q_heads 32, ..." from the shape fields
    std::string t;
    const ojson shape = r.value("shape", ojson::object());
    for (const auto& [k, v] : shape.items())
      if (k != "kernel" && k != "split_blocks")
        t += fmt::format("{}{} {}", t.empty() ? "" : ", ", k, v.dump());
    return t;
  };
  for (const ojson& r : rows) {
    const std::string kind = r.value("row", "");
    if (kind == "device") j["cuda_device"] = r.dump();
    if (kind == "clocks")
      clocks.push_back({{"when", r.value("when", "")},
                        {"nvidia_smi", r.value("nvidia_smi", r.value("error", ""))},
                        {"fields", r.value("fields", "")}});
    if (kind == "ceiling") {
      const ojson& t = r.at("timing");
      ceilings.push_back(
          {{"ceiling", r.value("name", "")},
           {"rate", r.contains("gb_s") ? fmt::format("{:.0f} GB/s", r.value("gb_s", 0.0))
                                       : fmt::format("{:.1f} TFLOP/s", r.value("tflop_s", 0.0))},
           {"median_us", t.value("median_us", 0.0)},
           {"p10_p90_us",
            fmt::format("{:.1f}-{:.1f}", t.value("p10_us", 0.0), t.value("p90_us", 0.0))},
           {"repeats", t.value("repeats", 0)}});
    }
    if (kind == "check") {
      ojson row = {{"case", r.at("id")},
                   {"kernel", r.value("kernel", "")},
                   {"shape", shape_text(r)},
                   {"gpu", r.value("gpu", "")}};
      if (twin.count(r.at("id"))) row["blocked_twin_vs_plain_twin"] = twin[r.at("id")];
      if (r.contains("outputs")) row["gpu_vs_plain_twin"] = outputs_summary(r);
      row["verdict"] = r.value("verdict", "");
      checks.push_back(row);
    }
    if (kind == "timed") {
      ojson row = {{"case", r.at("id")}, {"shape", shape_text(r)}, {"gpu", r.value("gpu", "ran")}};
      if (bytes.count(r.at("id"))) row["bytes_vs_tally"] = bytes[r.at("id")];
      if (r.contains("timing")) {
        const ojson& t = r.at("timing");
        row["predicted_bytes"] = r.value("predicted_bytes", ojson());
        row["kernel_bytes"] = r.value("kernel_bytes", ojson());
        row["median_us"] = t.value("median_us", 0.0);
        row["p10_p90_us"] =
            fmt::format("{:.1f}-{:.1f}", t.value("p10_us", 0.0), t.value("p90_us", 0.0));
        row["achieved_gb_s"] = r.value("achieved_gb_s", 0.0);
        row["achieved_tflop_s"] = r.value("achieved_tflop_s", 0.0);
        row["unit"] = r.value("unit", "");
        row["roofline_us"] = r.value("roofline_us", 0.0);
        row["of_roofline"] = r.value("fraction_of_roofline", 0.0);
      }
      row["verdict"] = r.value("verdict", "");
      timed.push_back(row);
    }
    if (kind == "error")
      errors.push_back({{"case", r.value("id", "")},
                        {"error", r.value("error", "")},
                        {"stopped_the_run", r.value("sticky", false)}});
  }
  if (!ceilings.empty()) j["cuda_ceilings"] = ceilings;
  if (!clocks.empty()) j["cuda_clocks"] = clocks;
  j["cuda_checks"] = checks;
  if (!timed.empty()) j["cuda_timed"] = timed;
  if (!errors.empty()) j["cuda_errors"] = errors;
}

}  // namespace

result run_validate(const options& o) {
  check_count("--scale", o.scale, 1);
  check_count("--length", o.length, 1);
  check_limit("--decode-steps", o.decode_steps, 0, limits::decode_steps, "steps");
  if (o.length > 4096)
    throw spec_error(
        "--length",
        fmt::format("{} tokens is more than the CPU twins should run (at most 4096)", o.length));
  const bool cuda = o.device == "cuda";
  if (o.dry_run && !cuda) throw spec_error("--dry-run", "applies to --device cuda only");
  if (o.correctness_only && !cuda)
    throw spec_error("--correctness-only", "applies to --device cuda only");
  if (!o.jsonl.empty() && !cuda)
    throw spec_error("--jsonl", "applies to --device cuda only (the CUDA rows it appends)");
  if (!o.gpu.empty() && !cuda)
    throw spec_error("--gpu",
                     "applies to --device cuda only (the card the kernels' "
                     "roofline is priced on)");
  // Open the module first, so a machine without one fails before any work, in one line.
  std::optional<gpu::cuda_module> module;
  if (cuda && !o.dry_run) module = gpu::cuda_module::open();
  loaded_model m = load(o);
  ojson j;
  j["model"] = m.spec->name;
  j["device"] = o.device;
  bool pass = true;
  if (!cuda) {
    validation v = validate_model(*m.spec, o.scale, o.length, o.decode_steps, o.seed);
    j["scaled_model"] = v.scaled.name;
    j["scale"] = o.scale;
    j["length"] = o.length;
    j["decode_steps"] = o.decode_steps;
    j["hidden"] = v.scaled.hidden;
    j["vocab"] = v.scaled.vocab;
    j["pass"] = v.pass;
    graph g = build_graph(v.scaled);
    ojson groups = ojson::array();
    for (const layer_group& grp : g.groups)
      groups.push_back(
          {{"layers", static_cast<std::int64_t>(grp.indices.size())}, {"structure", grp.name}});
    j["scaled_layers"] = groups;
    ojson rows = ojson::array();
    for (const validation_row& r : v.rows)
      rows.push_back({{"quantity", r.quantity},
                      {"kind", r.kind},
                      {"predicted", r.predicted},
                      {"measured", r.measured},
                      {"verdict", r.pass ? "exact" : "MISMATCH"}});
    j["checks"] = rows;
    ojson eq = ojson::array();
    for (const equivalence& e : v.equivalences)
      eq.push_back({{"equivalence", e.name},
                    {"nmse", e.nmse},
                    {"max_abs_error", e.max_abs_error},
                    {"tolerance", e.tolerance},
                    {"verdict", e.pass ? "pass" : "FAIL"},
                    {"tolerance_from", e.why}});
    j["equivalences"] = eq;
    pass = v.pass;
  } else {
    // The kernel plan over the layers of the timed models (data: models/validate/
    // cuda-timed.yaml), loaded here (exec/ names none), and of --model when it is not one of
    // them.
    const timed_list timed = read_timed_models(timed_models_path());
    std::vector<std::unique_ptr<model_spec>> specs;
    gpu::plan_options po;
    po.seed = o.seed;
    po.correctness_only = o.correctness_only;
    po.gpu = find_gpu(o.gpu.empty() ? "h200" : o.gpu);
    bool listed = false;
    for (const timed_source& t : timed.models) {
      specs.push_back(std::make_unique<model_spec>(read_model_file(resolve_model_path(t.model))));
      listed = listed || specs.back()->name == m.spec->name;
      po.models.push_back({t.model, specs.back().get(), t.calls.decode, t.calls.state_batches,
                           t.calls.moe_batches});
    }
    if (!listed)
      po.models.push_back({m.spec->name, m.spec.get(), timed.other.decode,
                           timed.other.state_batches, timed.other.moe_batches});
    ojson plan = gpu::make_plan(po);
    j["cpu_executor"] =
        "not run with --device cuda (--device cpu runs it; CI validates every "
        "bundled model)";
    std::ofstream jsonl;
    if (!o.jsonl.empty()) {
      jsonl.open(o.jsonl, std::ios::app);
      if (!jsonl) throw spec_error("--jsonl", fmt::format("cannot write '{}'", o.jsonl));
    }
    std::vector<ojson> got;
    bool failed = false;
    auto on_row = [&](const ojson& row) {
      if (jsonl.is_open()) jsonl << row.dump() << std::endl;  // flushed: survives an interrupt
      const std::string verdict = row.value("verdict", "");
      if (verdict == "FAIL" || verdict == "MISMATCH") failed = true;
      got.push_back(row);
    };
    bool completed =
        o.dry_run ? (gpu::run_cpu_side(plan, on_row), true) : module->run(plan, on_row);
    j["cuda_run"] = o.dry_run ? "dry run: CPU side only, GPU rows skipped"
                              : (completed ? "complete" : "stopped early by a CUDA error");
    if (o.format == "json")
      j["cuda_rows"] = got;
    else
      tables_from_rows(got, j);
    pass = !failed && completed;
    j["pass"] = pass;
  }
  return {j,
          cuda ? fmt::format("calc validate: the CUDA kernel plan{}",
                             o.dry_run ? " (dry run: CPU side only)" : "")
               : fmt::format("calc validate: {} scaled by {}, prefill {} + {} decode steps on cpu",
                             m.spec->name, o.scale, o.length, o.decode_steps),
          pass ? 0 : 1};
}

}  // namespace calc::cli
