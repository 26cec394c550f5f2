// Finding and loading the CUDA module (gpu.h). The search order lives in module_candidates()
// alone, so a change of install layout changes one function.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "exec/gpu.h"
#include "exec/gpu_abi.h"

namespace calc::gpu {

namespace {

namespace fs = std::filesystem;

/// The folder of the running executable ("" when /proc does not say).
fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

[[noreturn]] void unavailable(const std::string& why) { throw spec_error("cuda", why); }

}  // namespace

std::vector<std::string> module_candidates() {
  if (const char* env = std::getenv("CALC_CUDA_MODULE"); env && *env) return {env};
  fs::path dir = executable_dir();
  if (dir.empty()) return {};
  return {(dir / kModuleName).string(),
          (dir.parent_path() / "lib" / "calc" / kModuleName).lexically_normal().string()};
}

cuda_module cuda_module::open() {
  std::vector<std::string> paths = module_candidates();
  std::string found;
  for (const std::string& p : paths)
    if (std::error_code ec; fs::exists(p, ec)) {
      found = p;
      break;
    }
  if (found.empty())
    unavailable(fmt::format("no CUDA module ({}); build calc where nvcc exists",
                            paths.empty() ? std::string("executable folder unknown")
                                          : fmt::format("looked for {}", fmt::join(paths, ", "))));
  // Never closed: the CUDA runtime tears itself down at process exit.
  void* handle = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) unavailable(fmt::format("cannot load {}: {}", found, dlerror()));
  auto version = reinterpret_cast<calc_cuda_abi_version_fn>(dlsym(handle, "calc_cuda_abi_version"));
  auto probe = reinterpret_cast<calc_cuda_probe_fn>(dlsym(handle, "calc_cuda_probe"));
  void* run = dlsym(handle, "calc_cuda_run");
  if (!version || !probe || !run || version() != CALC_CUDA_ABI_VERSION)
    unavailable(fmt::format("{} is not a CUDA module of this calc (interface version {})", found,
                            CALC_CUDA_ABI_VERSION));
  char why[512] = {};
  if (probe(why, sizeof why) != 0) unavailable(why);
  cuda_module m;
  m.run_ = run;
  return m;
}

bool cuda_module::run(const nlohmann::ordered_json& plan,
                      const std::function<void(const nlohmann::ordered_json&)>& on_row) const {
  struct sink {
    const std::function<void(const nlohmann::ordered_json&)>* on_row;
  } s{&on_row};
  calc_cuda_emit_fn emit = [](void* context, const char* row) {
    (*static_cast<sink*>(context)->on_row)(nlohmann::ordered_json::parse(row));
  };
  std::string text = plan.dump();
  return reinterpret_cast<calc_cuda_run_fn>(run_)(text.c_str(), emit, &s) == 0;
}

}  // namespace calc::gpu
