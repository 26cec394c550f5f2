// What `calc validate --device cuda` runs, as data: correctness cases (small and production
// width) and timed cases taken from bundled models, each timed case's predicted bytes and FLOPs
// from the tally rules of the same spec and shape (src/tally: decode reads, state, expert
// reads). The CUDA module runs the plan; without a GPU (`--dry-run`) the CPU side of every case
// runs here and the GPU rows are written as skipped, in the same JSON-lines form.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace calc::gpu {

struct plan_options {
  std::uint64_t seed = 2026;
  bool correctness_only = false;  // checks only: short enough for compute-sanitizer
  std::string gpu = "h200";       // catalogue entry whose BF16 peak bounds tensor-core kernels
  int repeats = 20;               // timed repeats per case (at least 20)
};

/// The plan: {seed, correctness_only, repeats, catalogue, cases: [{id, role (check|timed),
/// shape, source, predicted: {bytes, flops, unit}}]}.
nlohmann::ordered_json make_plan(const plan_options& o);

/// The CPU side of every case, as rows: for a check, the blocked twin against the plain twin
/// (the arithmetic the kernel implements); for a timed case, the kernel's byte count against
/// the tally's prediction; then the GPU's part of each case as a row marked skipped.
void run_cpu_side(const nlohmann::ordered_json& plan,
                  const std::function<void(const nlohmann::ordered_json&)>& on_row);

}  // namespace calc::gpu
