// The lightning-attention families: MiniMax-Text-01 (minimax_text_01) and MiniMax-M1
// (minimax_m1), one architecture under two model_types. Defaults are those of MiniMax's own
// configuration classes (configuration_minimax_text_01.py / configuration_minimax_m1.py, remote
// code shipped with the checkpoints: Mixtral's class defaults), as in families.cpp. The roles
// only these families use (attn_type_list, the lightning block) are named in the table.
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// MiniMaxText01Config / MiniMaxM1Config: attn_type_list puts lightning attention (0) or softmax
// attention (1) on each layer (the published 80-layer configs: seven lightning layers, then one
// softmax, repeated). A lightning layer (MiniMaxText01LightningAttention) is qkv_proj
// d -> 3 x heads x head_dim, a sigmoid output_gate d -> heads x head_dim, an RMSNorm over
// heads x head_dim and out_proj back to d; its per-head decay slopes are computed from the head
// and layer index (a buffer, no parameter); the modeling code runs its prefill in blocks of 256
// (block_size where a config gives it, as transformers' MiniMaxConfig does). A softmax layer is
// GQA without biases; RoPE turns rotary_dim of each head (64 of 128: partial rotary counts
// nothing). Every layer has a MoE of num_local_experts SwiGLU experts of intermediate_size, top
// num_experts_per_tok, a router d -> E without bias; shared_intermediate_size > 0 would add a
// shared expert with its shared_moe_mode gate, which calc does not read (an error at the field;
// the published configs have 0). postnorm (the residual taken after the norm) and the
// layernorm_*_alpha / _beta residual scalars are multipliers and count nothing. Two norms per
// layer, an untied head.
family minimax_like(std::string model_type, std::vector<std::string> archs) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .ffn = ffn_family::moe,
          .layers = layer_rule::type_list,
          .linear = linear_family::lightning,
          .names = {{"experts", "num_local_experts"},
                    {"moe_intermediate", "intermediate_size"},
                    {"shared_experts", ""},
                    {"mlp_bias", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"type_list", "attn_type_list"},
                    {"lightning_block", "block_size"}},
          .defaults = gqa_defaults({{"vocab", 32000},
                                    {"hidden", 4096},
                                    {"moe_intermediate", 14336},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"experts", 8},
                                    {"top_k", 2},
                                    {"type_list", nullptr},
                                    {"lightning_block", 256}}),
          .only = {{"shared_intermediate_size", 0}}};
}

}  // namespace

std::vector<family> minimax_families() {
  return {
      // MiniMaxAI/MiniMax-Text-01 (456B total, 45.9B activated).
      minimax_like("minimax_text_01", {"MiniMaxText01ForCausalLM"}),
      // MiniMaxAI/MiniMax-M1-40k and -80k: the same architecture and shapes.
      minimax_like("minimax_m1", {"MiniMaxM1ForCausalLM"}),
  };
}

}  // namespace calc::hf
