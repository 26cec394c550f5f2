// The CUDA side of the reference executor, as seen from calc: a module (libcalc_cuda.so, built
// where nvcc exists) that `validate --device cuda` loads at run time. Plain commands never load
// it, so they load no GPU library (issue 10). Without the module, or without a device, opening
// it throws one line saying why.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace calc::gpu {

/// The module's file name.
inline constexpr const char* kModuleName = "libcalc_cuda.so";

/// Where the module is looked for, in order: $CALC_CUDA_MODULE when set (then only there);
/// beside the running executable (a build folder); <executable's folder>/../lib/calc (an
/// installed tree, where `cmake --install` puts it).
std::vector<std::string> module_candidates();

/// A loaded module with a usable device; kept loaded for the rest of the process.
class cuda_module {
 public:
  /// Loads the module and checks that a device is usable; throws spec_error("cuda",
  /// why) naming the paths tried, the loader's error or the CUDA runtime's.
  static cuda_module open();

  /// Runs a plan (gpu_plan.h), calling `on_row` with each row as soon as it is measured.
  /// Returns false when a sticky CUDA error stopped the run early.
  bool run(const nlohmann::ordered_json& plan,
           const std::function<void(const nlohmann::ordered_json&)>& on_row) const;

 private:
  void* run_ = nullptr;  // calc_cuda_run_fn
};

}  // namespace calc::gpu
