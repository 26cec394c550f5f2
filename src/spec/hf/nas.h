// Llama-3.x-Nemotron Super/Ultra (model_type nemotron-nas, DeciLMForCausalLM): a Llama whose
// layers were searched one by one (NAS), so each layer's `block_configs` entry says its own
// attention (grouped-query with its own KV grouping, or none) and its own SwiGLU width (or
// none). Every layer maps onto the existing kinds: a no_op attention is `attention: none` (and
// no input norm), a no_op FFN is `ffn: none` (and no post-attention norm).
#pragma once

#include <string>

#include "spec/hf/hf_json.h"
#include "spec/hf/import.h"

namespace calc::hf {

/// Translates a nemotron-nas config (the document `doc`) to model YAML; `name` and `repo` as
/// for every import. Throws spec_error at the field of anything it cannot map exactly
/// (replace_with_linear, sparsify, windows and sink tokens, a quantization_config).
/// The model_type whose layers nas.cpp reads from `block_configs` rather than a family table.
inline constexpr const char* block_configs_model_type = "nemotron-nas";

imported translate_block_configs(const hf_json& doc, const std::string& name,
                                 const std::string& repo);

}  // namespace calc::hf
