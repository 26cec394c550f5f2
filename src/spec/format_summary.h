// The storage formats a command assumed for a model, in one line, so output names them: a
// bundled model defaults to its published checkpoint's formats (DeepSeek-V3's FP8 blocks), which
// --weights / --kv / --storage may replace.
#pragma once

#include <string>

#include "spec/model_spec.h"

namespace calc {

/// Roles grouped by format in order of first appearance: `weights` (every matrix without a role
/// of its own: router, latent and mHC projections, and the embedding and head unless listed),
/// the per-module weight roles given, `embedding` / `head` when they differ from `weights`, and
/// `kv`. E.g. DeepSeek-V3's "weights, kv bf16; attention, experts, shared_experts, dense_ffn
/// fp8:g16384:fp32", or Qwen3-8B's "weights, kv bf16".
std::string format_summary(const precision_spec& p);

}  // namespace calc
