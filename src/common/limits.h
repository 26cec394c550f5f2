// Limits on input, as policy in one place (documented in docs/model-schema.md, "Limits").
//
// calc reads files and flags users write; none of them may crash, hang or exhaust memory. Each
// limit sits far above any real model or deployment and far below what would take more than a
// second or a few GiB, and every error that enforces one names the field or option and the
// limit. Exact counts themselves are not limited: they are 128-bit and checked (checked.h).
#pragma once

#include <cstdint>

namespace calc::limits {

// ---- files ---------------------------------------------------------------------------------
/// Longest path accepted for --model, --gpu or a scenario (Linux PATH_MAX).
inline constexpr std::int64_t path_chars = 4096;
/// Largest model, GPU or scenario file read (the largest bundled model is ~10 KiB).
inline constexpr std::int64_t file_bytes = 16LL << 20;

// ---- YAML ----------------------------------------------------------------------------------
/// Deepest nesting of mappings and sequences (the schema needs 5; recursive aliases hit it).
inline constexpr int yaml_depth = 64;
/// Nodes of a document counted with every alias expanded (alias bombs hit it); 100,000 layer
/// overrides take about 1,000,000.
inline constexpr std::int64_t yaml_nodes = 4'000'000;

// ---- model spec ----------------------------------------------------------------------------
/// Layers of a model (layers.count, the expanded pattern, mtp.layers); checked before expanding.
inline constexpr std::int64_t layers = 100'000;
/// Block-sparse attention's block, local band and vertical stride (Phi-3-small: 64, 16, 8): far
/// above any published pattern, and small enough that a block of positions stays an int64.
inline constexpr std::int64_t max_block_sparse = 1LL << 20;
/// Any one size of a vision tower's config (widths, patch and image sides, merge factors, depth):
/// far above any published tower (SigLIP's image side 896, Qwen's width 1,280), and small enough
/// that the reader's products of three sizes (a merger's hidden x merge x merge) stay an int64.
inline constexpr std::int64_t max_vision_size = 1LL << 20;
/// Longest format name (e.g. fp8:g64:e8m0*448+bf16*64@8 is 25 characters).
inline constexpr std::int64_t format_chars = 256;
/// Parts of a mixed record; each part is a plain or grouped format (records do not nest).
inline constexpr std::int64_t format_parts = 16;

// ---- command-line counts -------------------------------------------------------------------
/// Tokens of a length, prompt, context or shared prefix (2^32: 4.3 billion tokens).
inline constexpr std::int64_t tokens = 1LL << 32;
/// Requests in a batch or a budget (--batch, --requests).
inline constexpr std::int64_t requests = 1LL << 32;
/// Cards of a layout or a search (--tp, --pp, --ep, --gpus, --node-gpus, --max-gpus).
inline constexpr std::int64_t cards = 4096;
/// Rows of `calc sweep`.
inline constexpr std::int64_t sweep_rows = 10'000'000;
/// Experts that zipf routing sums over, one term each (uniform and concentrated are closed form).
inline constexpr std::int64_t zipf_experts = 1LL << 20;

// ---- deployments ---------------------------------------------------------------------------
/// Cards of one server where neither the catalogue (`server_gpus`) nor --node-gpus says: HGX and
/// DGX servers hold 8 GPUs on one NVLink switch, and PCIe servers 8 cards, so tensor parallelism
/// stays within 8 cards unless the GPU's own NVLink domain is wider (NVL72).
inline constexpr std::int64_t default_server_gpus = 8;
/// Most cards a plan searches where no option says (--max-gpus' default): 64 such servers, past
/// any one model's serving instance; the option goes up to `cards`.
inline constexpr std::int64_t default_max_gpus = 512;

// ---- reference executor (calc validate) ----------------------------------------------------
/// Decode calls after the prefill (each is checked against a full recompute).
inline constexpr std::int64_t decode_steps = 4096;
/// Memory the CPU twins may allocate: FP32 weights + state, estimated before allocating.
inline constexpr std::int64_t executor_bytes = 8LL << 30;

// ---- calc check ----------------------------------------------------------------------------
/// Nesting of parentheses in a claim's `field:` expression.
inline constexpr int expression_depth = 64;
/// Decimals of a claim's `expect:` (exact comparison scales by 10^decimals in 128 bits).
inline constexpr int expect_decimals = 18;

}  // namespace calc::limits
