// Quantised checkpoints: the weight and cache formats that a config's quantization_config, or
// NVIDIA ModelOpt's hf_quant_config.json beside it, describes, per calc precision role.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "spec/hf/hf_json.h"

namespace calc::hf {

/// The weight and cache formats a checkpoint's quantisation describes: quantization_config in
/// config.json (Hugging Face) or hf_quant_config.json beside it (NVIDIA ModelOpt).
struct quant_formats {
  std::string weights;  // format of the quantised matrices
  std::string origin;
  std::string kv;                       // cache format, when the checkpoint names one
  std::string kv_origin;                // the field that names it
  std::vector<std::string> kept_dtype;  // modules left in the model dtype (said in the YAML)
  /// Whole roles left unquantised ("attention": self_attn, "router": mlp.gate / mlp.router):
  /// the layers that list them (every layer must, "*" says all), and where the first is.
  struct kept_role {
    std::set<std::int64_t> layers;
    bool all = false;
    source_location where;
    std::string field;
    std::string why;  // the quantiser's rule, when no list names the role (said in the YAML)
  };
  std::map<std::string, kept_role> kept_roles;
  /// The input projections of self_attn left unquantised (ModelOpt's DeepSeek NVFP4 keeps
  /// q_a/q_b/kv_a/kv_b in the model dtype and quantises o_proj), per layer index ("*" = all):
  /// role "attention_in" of kept_roles says which layers list them.
  std::map<std::string, std::set<std::string>> kept_attention_inputs;
  std::int64_t excluded_from_layer = -1;  // "model.layers.N*": layers from N on stay unconverted
  source_location excluded_where;
  std::string excluded_field;
};

/// Reads a checkpoint's quantisation (`modelopt`: the hf_quant_config.json, or null to read
/// root's quantization_config, where quant_method "modelopt" names ModelOpt's quant_algo);
/// none when the checkpoint is not quantised. A ModelOpt checkpoint of a model `has_routers`
/// keeps every MoE router in the model dtype, listed or not (ModelOpt's default configs never
/// quantise one); a dense model has none to keep. Modules left
/// unconverted may be the head, the embedding, norms, the MTP layers, or a whole role of every
/// layer (self_attn, the router), or every layer's attention input projections (all of
/// self_attn but o_proj); anything else would need a per-module format and is an error rather
/// than a silently wrong byte count.
/// `block_scale` is the format of the per-block scales of an FP8 block-quantised checkpoint
/// (`weight_block_size` [rows, columns]: fp8:b<rows>x<columns>:<scale>, the scale grid of each
/// matrix rounded up per side), whose config does not say it: the family's documented default
/// ("fp32" for DeepSeek's, "bf16" for Qwen's), or what the checkpoint's headers store.
/// compressed-tensors checkpoints take their scale dtype from `stored_scale` (what the
/// safetensors headers store as weight_scale; "" when no headers) before the config's
/// scale_dtype; an integer scheme with neither keeps `model_dtype` (its weights' dtype).
/// `stored_zero` is the safetensors dtype of weight_zero_point ("I32", "I8"; "" when no
/// headers), which says how an asymmetric compressed-tensors checkpoint packs its zero points.
std::optional<quant_formats> read_quant(const hf_object& root, const hf_json* modelopt,
                                        bool has_routers, const std::string& block_scale,
                                        const std::string& stored_scale = "",
                                        const std::string& model_dtype = "bf16",
                                        const std::string& stored_zero = "");

}  // namespace calc::hf
