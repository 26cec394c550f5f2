// `calc validate`: the reference executor against the tally of the same scaled spec.
#include <fmt/format.h>

#include "cli/support.h"
#include "exec/gpu.h"
#include "exec/validate.h"
#include "graph/graph.h"
#include "spec/model_reader.h"

namespace calc::cli {

result run_validate(const options& o) {
  check_count("--scale", o.scale, 1);
  check_count("--length", o.length, 1);
  check_limit("--decode-steps", o.decode_steps, 0, limits::decode_steps, "steps");
  if (o.length > 4096)
    throw spec_error(
        "--length",
        fmt::format("{} tokens is more than the CPU twins should run (at most 4096)", o.length));
  if (o.device == "cuda") {
    std::string why = gpu::unavailable_reason();
    if (!why.empty()) throw spec_error("--device cuda", why);
  }
  loaded_model m = load(o);
  validation v = validate_model(*m.spec, o.scale, o.length, o.decode_steps, o.seed);
  ojson j;
  j["model"] = m.spec->name;
  j["scaled_model"] = v.scaled.name;
  j["scale"] = o.scale;
  j["device"] = o.device;
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
  if (o.device == "cuda") {
    nlohmann::ordered_json cuda = gpu::run_kernel_checks(o.seed);
    // Markdown shows the kernel checks and the sweep as tables of their own.
    j["cuda_device"] = cuda["device"].dump();
    j["cuda_ceilings"] = cuda["ceilings"].dump();
    j["cuda_correctness"] = cuda["correctness"];
    j["cuda_sweep"] = cuda["sweep"];
    for (const auto& row : cuda["correctness"])
      if (row["verdict"] != "pass") v.pass = false;
    j["pass"] = v.pass;
  }
  return {j,
          fmt::format("calc validate: {} scaled by {}, prefill {} + {} decode steps on {}",
                      m.spec->name, o.scale, o.length, o.decode_steps, o.device),
          v.pass ? 0 : 1};
}

}  // namespace calc::cli
