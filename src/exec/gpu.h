// The CUDA side of the reference executor, compiled where nvcc exists (kernels/cuda/). Without
// CUDA, or without a device, it says why in one line and runs nothing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace calc::gpu {

/// "" when a CUDA device is usable; otherwise why not (no CUDA in this build, no device, ...).
std::string unavailable_reason();

/// Each CUDA kernel against its CPU twin on random inputs, with timings (kernels/cuda/).
nlohmann::ordered_json run_kernel_checks(std::uint64_t seed);

}  // namespace calc::gpu
