// The state-space families read after the first hybrids: Jamba (Mamba-1 + attention + MoE),
// Mamba and Falcon-Mamba (Mamba-1 only), Bamba (Mamba2 + attention), LFM2 (gated short
// convolutions + attention). Defaults are those of each
// family's transformers configuration class, as in families.cpp. The roles only these families
// use (the layer periods, dt's rank, Jamba's dt/B/C norms) are named in each table rather than in
// common_names(), since no other family has a field for them.
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// MambaConfig / FalconMambaConfig: every layer one Mamba-1 mixer and one RMSNorm, the head tied
// by default. The inner width is intermediate_size (the class stores int(expand x hidden_size)
// there; Falcon-Mamba-7B's config says expand 16 beside intermediate_size 8192 = 2 x 4096, and
// its weights are 8192 wide), time_step_rank "auto" is ceil(hidden_size / 16). Falcon-Mamba's
// extra RMS norms on B, C and dt (mixer_rms_eps) have no weights: the same count as Mamba's.
family mamba1_only(std::string model_type, std::vector<std::string> archs, bool tie) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .layers = layer_rule::mixer_only,
          .ssm = ssm_family::mamba1,
          .names = {{"mamba_inner", "intermediate_size"},
                    {"mamba_expand", "expand"},
                    {"state_dim", "state_size"},
                    {"dt_rank", "time_step_rank"},
                    {"dt_norms", ""},
                    {"intermediate", ""},
                    {"heads", ""},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 50280},
                                       {"hidden", 768},
                                       {"layers", 32},
                                       {"norms", 1},
                                       {"tie", tie},
                                       {"mamba_inner", nullptr},
                                       {"mamba_expand", 2},
                                       {"state_dim", 16},
                                       {"conv_kernel", 4},
                                       {"dt_rank", "auto"},
                                       {"conv_bias", true},
                                       {"proj_bias", false},
                                       {"dt_norms", false}})};
}

}  // namespace

std::vector<family> ssm_families() {
  return {
      // JambaConfig (ai21labs/Jamba-v0.1, AI21-Jamba-Mini/Large-1.5/1.6/1.7): attention (GQA,
      // no biases, no RoPE) on every attn_layer_period-th layer from attn_layer_offset, a Mamba-1
      // mixer on the others, each with dt_layernorm, b_layernorm and c_layernorm (RMSNorms of
      // dt_rank, d_state, d_state); every layer then has its feed-forward, num_experts SwiGLU
      // experts of intermediate_size (top num_experts_per_tok, a router d -> E without bias) on
      // every expert_layer_period-th layer from expert_layer_offset, a dense SwiGLU of
      // intermediate_size on the others; two norms per layer; an untied head by default. The
      // mixer's inner width is mamba_expand x hidden_size and mamba_dt_rank "auto" is
      // ceil(hidden_size / 16). The dt/B/C norms are always there in transformers' JambaMambaMixer;
      // the first Jamba-v0.1 remote code switched them by mamba_inner_layernorms, read where
      // given.
      {.model_type = "jamba",
       .architectures = {"JambaForCausalLM"},
       .ffn = ffn_family::moe,
       .layers = layer_rule::period_hybrid,
       .ssm = ssm_family::mamba1,
       .names = {{"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""},
                 {"qkv_bias", ""},
                 {"o_bias", ""},
                 {"attn_period", "attn_layer_period"},
                 {"attn_offset", "attn_layer_offset"},
                 {"expert_period", "expert_layer_period"},
                 {"expert_offset", "expert_layer_offset"},
                 {"mamba_inner", ""},
                 {"mamba_expand", "mamba_expand"},
                 {"state_dim", "mamba_d_state"},
                 {"conv_kernel", "mamba_d_conv"},
                 {"conv_bias", "mamba_conv_bias"},
                 {"proj_bias", "mamba_proj_bias"},
                 {"dt_rank", "mamba_dt_rank"},
                 {"dt_norms", "mamba_inner_layernorms"}},
       .defaults = gqa_defaults({{"vocab", 65536},
                                    {"hidden", 4096},
                                    {"intermediate", 14336},
                                    {"moe_intermediate", 14336},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"experts", 16},
                                    {"top_k", 2},
                                    {"attn_period", 8},
                                    {"attn_offset", 4},
                                    {"expert_period", 2},
                                    {"expert_offset", 1},
                                    {"mamba_inner", nullptr},
                                    {"mamba_expand", 2},
                                    {"state_dim", 16},
                                    {"conv_kernel", 4},
                                    {"conv_bias", true},
                                    {"proj_bias", false},
                                    {"dt_rank", "auto"},
                                    {"dt_norms", true}})},
      mamba1_only("mamba", {"MambaForCausalLM"}, true),
      // FalconMambaConfig: tie_word_embeddings True (the 7B release sets false).
      mamba1_only("falcon_mamba", {"FalconMambaForCausalLM"}, true),
      // BambaConfig (ibm-ai-platform/Bamba-9B and its v2): GQA attention (no biases; partial
      // rotary counts nothing) on the 0-based attn_layer_indices, a Mamba2 mixer with the gated
      // RMSNorm on the others, mamba_n_heads x mamba_d_head wide (mamba_d_head "auto": the
      // mamba_expand x hidden_size inner width over the heads); every layer then has the dense
      // SwiGLU of intermediate_size; two norms per layer. mamba_dt_rank is not read by the
      // Mamba2 mixer (dt is per head, from in_proj).
      {.model_type = "bamba",
       .architectures = {"BambaForCausalLM"},
       .layers = layer_rule::indexed_hybrid,
       .names = {{"mlp_bias", ""},
                 {"o_bias", "attention_bias"},
                 {"window", ""},
                 {"attn_layers", "attn_layer_indices"},
                 {"mamba_heads", "mamba_n_heads"},
                 {"mamba_head_dim", "mamba_d_head"},
                 {"state_dim", "mamba_d_state"},
                 {"groups", "mamba_n_groups"},
                 {"conv_kernel", "mamba_d_conv"},
                 {"conv_bias", "mamba_conv_bias"},
                 {"proj_bias", "mamba_proj_bias"},
                 {"mamba_inner", ""},
                 {"mamba_expand", "mamba_expand"},
                 {"ssm_chunk", "mamba_chunk_size"}},
       .defaults = gqa_defaults({{"vocab", 128000},
                                    {"hidden", 4096},
                                    {"intermediate", 14336},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"attn_layers", nullptr},
                                    {"mamba_heads", 128},
                                    {"mamba_head_dim", "auto"},
                                    {"groups", 1},
                                    {"state_dim", 256},
                                    {"conv_kernel", 4},
                                    {"mamba_inner", nullptr},
                                    {"mamba_expand", 2},
                                    {"conv_bias", true},
                                    {"proj_bias", false},
                                    {"ssm_chunk", 256}})},
      // Lfm2Config (LiquidAI/LFM2-350M, -700M, -1.2B, -2.6B, LFM2.5): layer_types puts a gated
      // short convolution ("conv": in_proj d -> 3 conv_dim, a depthwise convolution of
      // conv_L_cache taps, out_proj; biases where conv_bias) or GQA attention with per-head Q/K
      // RMSNorms ("full_attention") on each layer, else full_attn_idxs lists the attention
      // layers; every layer then has a SwiGLU of block_ff_dim (or intermediate_size) that
      // block_auto_adjust_ff_dim shrinks to int(2f / 3), times block_ffn_dim_multiplier, rounded
      // up to block_multiple_of (Lfm2MLP). Two norms per layer; tied by default.
      {.model_type = "lfm2",
       .architectures = {"Lfm2ForCausalLM"},
       .layers = layer_rule::conv_hybrid,
       .ssm = ssm_family::short_conv,
       .names = {{"mlp_bias", ""},
                 {"qkv_bias", ""},
                 {"o_bias", ""},
                 {"qk_norm", ""},
                 {"window", ""},
                 {"intermediate", "block_ff_dim"},
                 {"ff_size", "intermediate_size"},
                 {"ff_auto_adjust", "block_auto_adjust_ff_dim"},
                 {"ff_multiplier", "block_ffn_dim_multiplier"},
                 {"ff_multiple_of", "block_multiple_of"},
                 {"attn_layers", "full_attn_idxs"},
                 {"conv_channels", "conv_dim"},
                 {"conv_kernel", "conv_L_cache"},
                 {"conv_bias", "conv_bias"}},
       .defaults = gqa_defaults({{"vocab", 65536},
                                    {"hidden", 2560},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"tie", true},
                                    {"qk_norm", true},
                                    {"intermediate", "=ff_size"},
                                    {"ff_size", 12288},
                                    {"ff_auto_adjust", true},
                                    {"ff_multiplier", 1.0},
                                    {"ff_multiple_of", 256},
                                    {"attn_layers", nullptr},
                                    {"conv_channels", "=hidden"},
                                    {"conv_kernel", 3},
                                    {"conv_bias", false}}),
       // Lfm2Config takes the tie from its own key, tie_embedding (True by default): only
       // the tied form is read, an untied head would be a table of its own.
       .only = {{"tie_embedding", true}}},
  };
}

}  // namespace calc::hf
