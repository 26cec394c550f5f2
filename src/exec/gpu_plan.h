// What `calc validate --device cuda` runs, as data: correctness cases (small and production
// width) and timed cases taken from the layers of models the caller loaded, each timed case's
// predicted bytes and FLOPs from the tally rules of the same spec and shape (src/tally: decode
// reads, state, expert reads) and the kernel's own traffic priced by the same byte rule
// (common/dtype.h). The CUDA module runs the plan; without a GPU (`--dry-run`) the CPU side of
// every case runs here and the GPU rows are written as skipped, in the same JSON-lines form.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "spec/gpu_spec.h"
#include "spec/model_spec.h"

namespace calc::gpu {

/// A model whose layers the run times, loaded by the caller, with the calls to time: the
/// first layer of each kernel kind it has (full GQA, MLA, sparse with top-k, KDA or Gated
/// DeltaNet, routed experts) at these shapes.
struct timed_model {
  std::string name;        // in row ids and sources
  const model_spec* spec;  // owned by the caller, alive while the plan is made
  std::vector<std::pair<std::int64_t, std::int64_t>> decode;  // (batch, context), attention
  std::vector<std::int64_t> state_batches;                    // delta-rule step batches
  std::vector<std::int64_t> moe_batches;                      // routed-expert GEMM batches
};

struct plan_options {
  std::uint64_t seed = 2026;
  bool correctness_only = false;  // checks only: short enough for compute-sanitizer
  gpu_spec gpu;                   // its BF16 peak bounds tensor-core kernels
  int repeats = 20;               // timed repeats per case (at least 20)
  std::vector<timed_model> models;
};

/// The plan: {seed, correctness_only, repeats, catalogue, cases: [{id, role (check|timed),
/// shape, source, predicted: {bytes, flops, unit}, kernel_traffic, kernel_bytes}]}. Throws
/// spec_error naming the model when a timed model has no layer any kernel here runs.
nlohmann::ordered_json make_plan(const plan_options& o);

/// The CPU side of every case, as rows: for a check, the blocked twin against the plain twin
/// (the arithmetic the kernel implements), unfaulted and under each fault it must catch; for a
/// timed case, the kernel's traffic against the tally's prediction; then the GPU's part of each
/// case as a row marked skipped.
void run_cpu_side(const nlohmann::ordered_json& plan,
                  const std::function<void(const nlohmann::ordered_json&)>& on_row);

}  // namespace calc::gpu
