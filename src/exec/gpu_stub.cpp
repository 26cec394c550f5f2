// Built when no CUDA compiler is found: the executor's CUDA side is absent.
#include "exec/gpu.h"

#ifndef CALC_WITH_CUDA

namespace calc::gpu {

std::string unavailable_reason() {
  return "this calc was built without CUDA (no nvcc at configure time); rebuild where nvcc exists";
}

nlohmann::ordered_json run_kernel_checks(std::uint64_t) { return nullptr; }

}  // namespace calc::gpu

#endif
