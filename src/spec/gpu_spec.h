// GpuSpec: one accelerator of the catalogue in models/gpus/: memory as sold (decimal bytes, what
// plain `capacity` and the chapter use) and, where a public record was found, the memory the CUDA
// runtime reports (what serving engines multiply by their memory fraction).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/limits.h"

namespace calc {

struct gpu_spec {
  std::string name;     // catalogue key, e.g. "rtx-4090"
  std::string display;  // e.g. "NVIDIA GeForce RTX 4090"
  /// Who makes the card: nvidia, amd or intel. It decides which serving engines run on it
  /// (TensorRT-LLM only on NVIDIA's); empty where a file does not say, and then nothing is refused.
  std::string vendor;
  std::int64_t memory = 0;  // bytes, decimal as sold (24 GB = 24e9 B; §2.6.2)
  /// Bytes the CUDA runtime reports as the card's total (cudaMemGetInfo / totalGlobalMem, the
  /// "total_gpu_memory" of vLLM's logs); 0 when no public record of it was found.
  std::int64_t runtime_memory = 0;
  std::string runtime_memory_source;  // where runtime_memory was read; empty when it is 0
  std::int64_t bandwidth = 0;         // memory bandwidth, bytes per second
  double bf16_tflops = 0;             // dense BF16 tensor peak, 1e12 FLOP/s
  double fp8_tflops = 0;              // dense FP8 tensor peak (0 when the GPU has no FP8 units)
  double fp4_tflops = 0;              // dense FP4 tensor peak (0 when the GPU has no FP4 units)
  std::int64_t interconnect = 0;      // GPU-to-GPU bandwidth per direction, bytes per second
  /// The card's PCIe host link per direction, bytes per second, where it is not `interconnect`
  /// already (bridged cards: a tp group past the bridge runs its collectives over PCIe); 0: not
  /// recorded.
  std::int64_t pcie = 0;
  std::int64_t nvlink_domain = 1;  // cards joined by the fast link (NVLink / xGMI): TP spans these
  /// Cards in one server as the card is commonly built into them (8 on HGX boards and PCIe
  /// servers, 1 for a GH200 node, 4 for an MI300A node): where the NVLink domain is narrower, a
  /// tp group may still span the server over its PCIe, never the network between servers. The
  /// default of --node-gpus.
  std::int64_t server_gpus = limits::default_server_gpus;
  std::string source;              // where the figures come from
  std::string file;
};

/// The memory an engine sees on one card: the runtime-visible total where the catalogue has it,
/// else the figure as sold (docs/gpus.md: the fallback rule).
std::int64_t engine_visible_memory(const gpu_spec& g);

/// Cards per server for a plan on `gpu`: `given` (--node-gpus) where set, else the card's own
/// `server_gpus` (a GH200 node holds one superchip, an HGX board eight GPUs).
std::int64_t server_gpus_of(const gpu_spec& gpu, const std::optional<std::int64_t>& given);

/// The cards one tp group may span on `gpu`: its NVLink domain; past it, one server of
/// `server_gpus` over PCIe where the catalogue can cost that link (a card without NVLink, or a
/// bridged one that records `pcie`: engines run tp 8 on PCIe servers, and collective_link costs
/// them at PCIe). An HGX or NVL72 card (no `pcie`) stops at its domain whatever the server.
std::int64_t tp_domain(const gpu_spec& gpu, std::int64_t server_gpus);

/// Reads one GPU file strictly (unknown keys, bad sizes: located spec_error).
gpu_spec read_gpu_file(const std::string& path);

/// Resolves `--gpu`: a path or a catalogue name in models/gpus/.
gpu_spec find_gpu(const std::string& name_or_path);

/// The whole catalogue, sorted by name.
std::vector<gpu_spec> gpu_catalogue();

}  // namespace calc
