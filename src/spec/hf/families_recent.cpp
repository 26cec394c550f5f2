// Recent text-only families (2025): one table each, in the form of families.cpp. Defaults are
// those of each family's configuration class (transformers', or the remote code its checkpoints
// ship); a field that would change memory and that the table does not read is pinned in `only`,
// so another value is an error at that field rather than a silent guess.
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// MiMoConfig (XiaomiMiMo/MiMo-7B-Base / -SFT / -RL / -RL-0530, the remote code's
// configuration_mimo.py): Qwen2Config plus num_nextn_predict_layers. The main model is Qwen2's
// (Q/K/V biased, O not, the SwiGLU MLP, two RMSNorms a layer); the MTP layers (mtp_layers.N: a
// Qwen2 decoder layer with token/hidden norms and a 2d -> d input projection) are read as the
// `mtp` block, outside the totals, as DeepSeek's are. The class defaults are Qwen2Config's, and
// num_nextn_predict_layers 0.
family mimo() { return qwen2_like("mimo", {"MiMoForCausalLM"}); }

// AfmoeConfig (arcee-ai/Trinity-Nano / Trinity-Mini / Trinity-Large; transformers'
// configuration_afmoe.py and modeling_afmoe.py): GQA with head_dim given, per-head Q/K RMSNorms,
// and a sigmoid output gate (gate_proj, d -> heads x head_dim, no bias: the `output_gate` count);
// no attention biases (the class sets attention_bias false whatever the config says). Layers
// slide (sliding_window) except every global_attn_every_n_layers-th, or as layer_types lists
// them; RoPE on the sliding layers only (counts nothing). Four RMSNorms a layer (pre and post
// around attention and around the MLP). The first num_dense_layers are the dense SwiGLU of
// intermediate_size; the others num_experts routed experts of moe_intermediate_size, top
// num_experts_per_tok, a shared MLP of moe_intermediate_size x num_shared_experts (counted as that
// many shared experts: the same matrices), a router without bias and the routing bias
// (expert_bias, one value an expert). route_scale, mup_enabled and the group fields count nothing.
family afmoe() {
  return {.model_type = "afmoe",
          .architectures = {"AfmoeForCausalLM"},
          .ffn = ffn_family::moe,
          .layers = layer_rule::sliding_pattern,
          .names = {{"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"sliding_pattern", "global_attn_every_n_layers"},
                    {"first_dense", "num_dense_layers"},
                    {"shared_experts", "num_shared_experts"},
                    {"shared_intermediate", ""},
                    {"moe_freq", ""},
                    {"sparse_step", ""},
                    {"mlp_only", ""},
                    {"mtp_layers", ""}},
          .defaults = gqa_defaults({{"vocab", 200192},
                                    {"hidden", 2048},
                                    {"intermediate", 6144},
                                    {"moe_intermediate", 1408},
                                    {"layers", 32},
                                    {"first_dense", 1},
                                    {"heads", 16},
                                    {"head_dim", 128},
                                    {"max_positions", 16384},
                                    {"experts", 64},
                                    {"top_k", 6},
                                    {"shared_experts", 2},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"router_bias", true},
                                    {"qk_norm", true},
                                    {"output_gate", true},
                                    {"norms", 4},
                                    {"window", 1024},
                                    {"sliding_pattern", 4}})};
}

// MiMoV2FlashConfig (XiaomiMiMo/MiMo-V2-Flash; the remote code's configuration_mimo_v2_flash.py
// and vLLM's mimo_v2_flash.py for the module shapes): GQA whose keys are head_dim (192) wide and
// whose values v_head_dim (128): q_proj d -> heads x 192, k_proj d -> kv x 192, v_proj d -> kv x
// 128, o_proj heads x 128 -> d, no biases, no Q/K norms. hybrid_layer_pattern says per layer
// whether it slides (1) over sliding_window_size tokens or attends fully (0); the sliding layers
// have their own heads, KV heads and widths (swa_num_attention_heads, swa_num_key_value_heads,
// swa_head_dim, swa_v_head_dim) and, with add_swa_attention_sink_bias, a learned sink logit per
// query head (attention_sink_bias); add_full_attention_sink_bias does the same for the full
// layers. moe_layer_freq is a list, 1 MoE and 0 dense per layer: n_routed_experts of
// moe_intermediate_size, top num_experts_per_tok, a sigmoid router d -> E without bias and the
// routing bias (topk_method noaux_tc: e_score_correction_bias, one value an expert); n_shared_
// experts null (none). Dense layers are SwiGLU of intermediate_size. Two RMSNorms a layer, an
// untied head. partial_rotary_factor, swa_rope_theta, attention_value_scale (a scalar on V) and
// attention_chunk_size (not read by the reference, which uses sliding_window_size) count nothing.
// The config does not declare the MTP layers the checkpoint ships (the card's three, 0.33B
// each, read by the reference under model.mtp and skipped by vLLM's main model), so none are
// read: `mtp_layers` has no field here.
family mimo_v2_flash() {
  return {.model_type = "mimo_v2_flash",
          .architectures = {"MiMoV2FlashForCausalLM"},
          .ffn = ffn_family::moe,
          .layers = layer_rule::sliding_flags,
          .names = {{"o_bias", ""},
                    {"mlp_bias", ""},
                    {"experts", "n_routed_experts"},
                    {"window", "sliding_window_size"},
                    {"sliding_flags", "hybrid_layer_pattern"},
                    {"moe_flags", "moe_layer_freq"},
                    {"moe_freq", ""},
                    {"first_dense", ""},
                    {"sparse_step", ""},
                    {"mlp_only", ""},
                    {"mtp_layers", ""},
                    {"v_head_dim", "v_head_dim"},
                    {"swa_heads", "swa_num_attention_heads"},
                    {"swa_kv_heads", "swa_num_key_value_heads"},
                    {"swa_head_dim", "swa_head_dim"},
                    {"swa_v_head_dim", "swa_v_head_dim"},
                    {"sinks", "add_full_attention_sink_bias"},
                    {"swa_sinks", "add_swa_attention_sink_bias"},
                    {"max_positions", "max_position_embeddings"}},
          .defaults = gqa_defaults({{"vocab", 151936},
                                    {"hidden", 4096},
                                    {"intermediate", 16384},
                                    {"moe_intermediate", 2048},
                                    {"layers", 48},
                                    {"heads", 64},
                                    {"kv_heads", 4},
                                    {"head_dim", 192},
                                    {"v_head_dim", 128},
                                    {"swa_heads", 64},
                                    {"swa_kv_heads", 8},
                                    {"swa_head_dim", 192},
                                    {"swa_v_head_dim", 128},
                                    {"swa_sinks", false},
                                    {"experts", 256},
                                    {"top_k", 8},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"router_bias", true},
                                    {"max_positions", 262144}}),
          .not_counted = "the MTP layers the checkpoint ships (model.mtp; the card's three, 0.33B "
                         "each), which the config does not declare"};
}

}  // namespace

std::vector<family> recent_families() { return {mimo(), afmoe(), mimo_v2_flash()}; }

}  // namespace calc::hf
