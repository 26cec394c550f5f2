#include "spec/gpu_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/limits.h"
#include "common/names.h"
#include "common/units.h"
#include "spec/model_reader.h"
#include "spec/yaml_reader.h"

namespace calc {

namespace {

std::int64_t read_size(yaml_map& m, const std::string& key) {
  YAML::Node n = m.required(key);
  auto bytes = n.IsScalar() ? parse_bytes(n.Scalar()) : std::nullopt;
  if (!bytes || *bytes <= 0)
    throw spec_error(location_of(n, m.file()), m.path_of(key),
                     "expected a positive size such as 24GB or 3.35TB");
  return *bytes;
}

/// A dense tensor peak in TFLOP/s: finite and positive (0 or absent only where `required` is
/// false: no such peak). nan, inf and negatives would print nonsense times.
double read_tflops(yaml_map& m, const std::string& key, bool required) {
  YAML::Node n = required ? m.required(key) : m.optional(key);
  if (!n.IsDefined() || n.IsNull()) return 0;
  double v = -1;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
  }
  bool ok = std::isfinite(v) && (required ? v > 0 : v >= 0);
  if (!ok)
    throw spec_error(location_of(n, m.file()), m.path_of(key),
                     fmt::format("expected a finite {} number of TFLOP/s, got '{}'",
                                 required ? "positive" : "non-negative",
                                 n.IsScalar() ? n.Scalar() : "a list or mapping"));
  return v;
}

std::string gpus_dir() { return models_dir() + "/gpus"; }

}  // namespace

gpu_spec read_gpu_file(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  yaml_map m(root, "", path);
  gpu_spec g;
  g.file = path;
  g.name = m.text("name");
  g.display = m.optional_text("display").value_or(g.name);
  g.vendor = lower(m.optional_text("vendor").value_or(""));  // as names are: case aside
  if (m.has("vendor") && g.vendor != "nvidia" && g.vendor != "amd" && g.vendor != "intel")
    m.fail("vendor", fmt::format("'{}' is not one of nvidia, amd, intel", g.vendor));
  g.memory = read_size(m, "memory");
  g.bandwidth = read_size(m, "bandwidth");
  g.bf16_tflops = read_tflops(m, "bf16_tflops", true);
  g.fp8_tflops = read_tflops(m, "fp8_tflops", false);
  g.fp4_tflops = read_tflops(m, "fp4_tflops", false);
  if (m.has("interconnect")) g.interconnect = read_size(m, "interconnect");
  if (m.has("pcie")) g.pcie = read_size(m, "pcie");
  g.nvlink_domain = m.integer("nvlink_domain", 1);
  if (g.nvlink_domain > limits::cards)
    throw spec_error(
        location_of(m.required("nvlink_domain"), m.file()), m.path_of("nvlink_domain"),
        fmt::format("{} cards is more than the limit of {}", g.nvlink_domain, limits::cards));
  g.server_gpus = m.optional_integer("server_gpus", 1).value_or(limits::default_server_gpus);
  if (g.server_gpus > limits::cards)
    throw spec_error(
        location_of(m.required("server_gpus"), m.file()), m.path_of("server_gpus"),
        fmt::format("{} cards is more than the limit of {}", g.server_gpus, limits::cards));
  g.source = m.text("source");
  if (m.has("runtime_memory")) {
    // Both or neither: a runtime figure without its source is a guess (docs/gpus.md).
    g.runtime_memory = read_size(m, "runtime_memory");
    g.runtime_memory_source = m.text("runtime_memory_source");
    // Cards are sold in GB for memory built in GiB (an 80 GB H100 reports 79.2 GiB): the
    // runtime sees at most the figure as sold read as GiB, less what the driver keeps.
    double most = static_cast<double>(g.memory) / 1e9 * 1073741824.0;
    if (static_cast<double>(g.runtime_memory) > most)
      m.fail("runtime_memory",
             fmt::format("{} bytes is more than the card's memory as sold ({} bytes) read as "
                         "GiB: the runtime sees at most what is built",
                         g.runtime_memory, g.memory));
  } else if (m.has("runtime_memory_source")) {
    (void)m.required("runtime_memory");
  }
  m.finish({"name", "display", "vendor", "memory", "bandwidth", "bf16_tflops", "fp8_tflops",
            "fp4_tflops", "interconnect", "pcie", "nvlink_domain", "server_gpus", "source",
            "runtime_memory", "runtime_memory_source"});
  return g;
}

std::int64_t server_gpus_of(const gpu_spec& gpu, const std::optional<std::int64_t>& given) {
  return given.value_or(gpu.server_gpus);
}

namespace {

/// Whether the catalogue can cost a tp group past the card's NVLink domain: a card without NVLink
/// has its PCIe link as `interconnect`; a bridged card records `pcie`. An HGX or NVL72 card has
/// neither: past its domain lies the network.
bool crosses_pcie(const gpu_spec& gpu) { return gpu.nvlink_domain <= 1 || gpu.pcie > 0; }

}  // namespace

std::int64_t tp_domain(const gpu_spec& gpu, std::int64_t server_gpus) {
  std::int64_t domain = std::max<std::int64_t>(gpu.nvlink_domain, 1);
  return crosses_pcie(gpu) ? std::max(domain, server_gpus) : domain;
}

std::int64_t engine_visible_memory(const gpu_spec& g) {
  return g.runtime_memory > 0 ? g.runtime_memory : g.memory;
}

gpu_spec find_gpu(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  if (static_cast<std::int64_t>(name_or_path.size()) > limits::path_chars)
    throw spec_error("gpu", fmt::format("a path of {} characters is longer than the limit of {}",
                                        name_or_path.size(), limits::path_chars));
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml"))
    return read_gpu_file(name_or_path);
  fs::path p = fs::path(gpus_dir()) / (name_or_path + ".yaml");
  std::error_code ec;
  if (fs::exists(p, ec)) return read_gpu_file(p.string());
  std::vector<std::string> known;
  for (const auto& g : gpu_catalogue()) known.push_back(g.name);
  if (auto name = find_ignoring_case(name_or_path, known))  // `H200` is h200
    return read_gpu_file((fs::path(gpus_dir()) / (*name + ".yaml")).string());
  std::string message = fmt::format("unknown GPU '{}'", name_or_path);
  message += did_you_mean(suggest(name_or_path, known));
  message += "; `calc gpus` lists the catalogue";
  throw spec_error("gpu", message);
}

std::vector<gpu_spec> gpu_catalogue() {
  namespace fs = std::filesystem;
  std::vector<gpu_spec> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(gpus_dir(), ec))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      out.push_back(read_gpu_file(entry.path().string()));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace calc
