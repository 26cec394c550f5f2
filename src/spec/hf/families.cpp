// The family tables. Defaults are those of each family's transformers configuration class
// (configuration_<model_type>.py), written here so a config that leaves a field out still reads
// the way the reference implementation reads it.
#include "spec/hf/families.h"

#include <algorithm>

#include "spec/hf/nas.h"

namespace calc::hf {

using nlohmann::json;

const std::map<std::string, std::string>& common_names() {
  static const std::map<std::string, std::string> names = {
      {"vocab", "vocab_size"},
      {"hidden", "hidden_size"},
      {"layers", "num_hidden_layers"},
      {"heads", "num_attention_heads"},
      {"kv_heads", "num_key_value_heads"},
      {"head_dim", "head_dim"},
      {"intermediate", "intermediate_size"},
      {"tie", "tie_word_embeddings"},
      {"qkv_bias", "attention_bias"},
      {"o_bias", "attention_bias"},
      {"mlp_bias", "mlp_bias"},
      {"qk_norm", ""},
      {"output_gate", ""},
      {"norms", ""},
      {"window", "sliding_window"},
      {"window_switch", "use_sliding_window"},
      {"window_from", "max_window_layers"},
      {"sliding_pattern", "sliding_window_pattern"},
      {"full_interval", "full_attention_interval"},
      {"experts", "num_experts"},
      {"top_k", "num_experts_per_tok"},
      {"moe_intermediate", "moe_intermediate_size"},
      {"shared_experts", "n_shared_experts"},
      {"shared_intermediate", "shared_expert_intermediate_size"},
      {"shared_gate", ""},
      {"router_bias", ""},
      {"first_dense", "first_k_dense_replace"},
      {"moe_freq", "moe_layer_freq"},
      {"sparse_step", "decoder_sparse_step"},
      {"mlp_only", "mlp_only_layers"},
      {"mtp_layers", "num_nextn_predict_layers"},
      {"q_rank", "q_lora_rank"},
      {"kv_rank", "kv_lora_rank"},
      {"qk_nope", "qk_nope_head_dim"},
      {"qk_rope", "qk_rope_head_dim"},
      {"v_head", "v_head_dim"},
      {"linear_qk_heads", "linear_num_key_heads"},
      {"linear_v_heads", "linear_num_value_heads"},
      {"linear_key_dim", "linear_key_head_dim"},
      {"linear_value_dim", "linear_value_head_dim"},
      {"linear_conv", "linear_conv_kernel_dim"},
      {"sinks", ""},
      {"expert_bias", ""},
      {"hybrid", "hybrid_override_pattern"},
      {"mamba_heads", "mamba_num_heads"},
      {"mamba_head_dim", "mamba_head_dim"},
      {"state_dim", "ssm_state_size"},
      {"groups", "n_groups"},
      {"conv_kernel", "conv_kernel"},
      {"conv_bias", "use_conv_bias"},
      {"proj_bias", "use_bias"},
      // Mamba2 roles only Falcon-H1 spells (no field elsewhere): the inner width, the expansion
      // that gives it when absent, the out_proj bias apart from in_proj's, the gated norm, the
      // SSD chunk, and which layers have attention.
      {"mamba_inner", ""},
      {"mamba_expand", ""},
      {"out_proj_bias", ""},
      {"gated_norm", ""},
      {"ssm_chunk", ""},
      {"attn_layers", ""},
      {"mla_nope", ""},
      {"mla_gate", ""},
      {"full_layers", ""},
      {"linear_layers", ""},
      {"kda_heads", ""},
      {"kda_head_dim", ""},
      {"kda_full_gate", ""},
      // Roles of the families read since: LayerNorm with a bias (StarCoder2, Phi-2), a biased
      // vocabulary head (Phi-2), Q/K norms over all heads (OLMo 2, MiniMax-M2, Cohere), and the
      // context limit every config gives.
      {"layer_norm", ""},
      {"head_bias", ""},
      {"qk_norm_full", ""},
      {"max_positions", "max_position_embeddings"},
      {"last_moe", ""},
      // Llama 4's roles: the chunk of chunked local attention, which layers keep RoPE (and so
      // attend within a chunk), and an explicit list of MoE layers.
      {"chunk", ""},
      {"nope_layers", ""},
      {"nope_interval", ""},
      {"moe_layers", ""},
      // Phi-3-small's roles: biases on the gated MLP, the dense-layer period and the block
      // pattern of the others.
      {"gated_bias", ""},
      {"dense_every", ""},
      {"bs_block", ""},
      {"bs_local", ""},
      {"bs_vert", ""},
      {"bs_homo", ""},
      // The classic decoders' roles (families_classic.cpp): a learned position table of
      // `positions` rows plus `position_offset` (OPT keeps 2 rows past its positions), and
      // whether the final norm has parameters (OLMo-1's non-parametric LayerNorm has none).
      {"positions", ""},
      {"position_offset", ""},
      {"final_norm", ""},
      // BLOOM's LayerNorm right after the token embedding (word_embeddings_layernorm), and
      // OPT's word_embed_proj_dim (the embedding's width, read only equal to hidden_size).
      {"embedding_norm", ""},
      {"embed_proj", ""},
      // MPT's expansion_ratio: the MLP is this many times d_model.
      {"expansion", ""},
      // Learned scalars of an MLP's activation (Apertus' xIELU: alpha_p, alpha_n).
      {"activation_params", ""},
  };
  return names;
}

// Defaults every dense GQA family shares unless its table says otherwise.
json gqa_defaults(json extra) {
  json d = {{"kv_heads", "=heads"},
            {"head_dim", "=hidden/heads"},
            {"tie", false},
            {"qkv_bias", false},
            {"o_bias", false},
            {"mlp_bias", false},
            {"qk_norm", false},
            {"output_gate", false},
            {"norms", 2},
            {"window", nullptr},
            {"window_switch", true},
            {"window_from", 0},
            {"first_dense", 0},
            {"moe_freq", 1},
            {"sparse_step", 1},
            {"mlp_only", json::array()},
            {"shared_experts", 0},
            {"shared_gate", false},
            {"router_bias", false},
            {"mtp_layers", 0},
            {"sinks", false},
            {"expert_bias", false},
            {"mla_nope", false},
            {"mla_gate", false},
            {"layer_norm", false},
            {"head_bias", false},
            {"qk_norm_full", false},
            {"max_positions", nullptr}};
  for (auto& [k, v] : extra.items()) d[k] = v;
  return d;
}

namespace {

// Gemma3TextConfig's class defaults (transformers configuration_gemma3.py, __init__): vocab_size
// 262208, hidden_size 2304, intermediate_size 9216, num_hidden_layers 26, num_attention_heads 8,
// num_key_value_heads 4, head_dim 256, max_position_embeddings 131072, tie_word_embeddings true,
// attention_bias false, sliding_window 4096, sliding_window_pattern 6. The Q/K norms and the four
// norms a layer are the model's (Gemma3Attention, Gemma3DecoderLayer), not config fields. Both
// gemma3_text and gemma3's text_config are this class.
json gemma3_text_defaults() {
  return gqa_defaults({{"vocab", 262208},
                       {"hidden", 2304},
                       {"intermediate", 9216},
                       {"layers", 26},
                       {"heads", 8},
                       {"kv_heads", 4},
                       {"head_dim", 256},
                       {"max_positions", 131072},
                       {"tie", true},
                       {"qk_norm", true},
                       {"norms", 4},
                       {"window", 4096},
                       {"sliding_pattern", 6}});
}

}  // namespace

// Qwen2Config: Q/K/V always carry biases, the output projection none; sliding only when
// use_sliding_window, from max_window_layers on. MiMo publishes the same main model under its
// own model_type (families_recent.cpp).
family qwen2_like(std::string model_type, std::vector<std::string> archs) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .layers = layer_rule::window_from,
          .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}},
          .defaults = gqa_defaults({{"kv_heads", 32},
                                    {"qkv_bias", true},
                                    {"window", 4096},
                                    {"window_switch", false},
                                    {"window_from", 28}})};
}

namespace {

// DeepSeek-V3's table (DeepseekV3Config): MLA with query compression, 256 routed experts top-8
// with one shared expert and the routing bias, 3 dense layers first. Kimi K2 and K2.5 publish
// the same architecture under their own model_type.
family deepseek_v3_like(std::string model_type, std::vector<std::string> archs,
                        std::string scope = "", std::string not_counted = "") {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .scope = std::move(scope),
          .attention = attention_family::mla,
          .ffn = ffn_family::moe,
          .names = {{"experts", "n_routed_experts"}, {"qkv_bias", ""}, {"o_bias", ""}},
          .defaults = gqa_defaults({{"q_rank", 1536},
                                    {"kv_rank", 512},
                                    {"qk_nope", 128},
                                    {"qk_rope", 64},
                                    {"v_head", 128},
                                    {"experts", 256},
                                    {"top_k", 8},
                                    {"moe_intermediate", 2048},
                                    {"shared_experts", 1},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"first_dense", 3},
                                    {"router_bias", true}}),
          .not_counted = std::move(not_counted)};
}

// DeepSeek-V3's table plus the lightning indexer's roles (DeepseekV32Config: index_n_heads 64,
// index_head_dim 128, index_topk 2048); `extra` replaces defaults per family.
family dsa_mla_like(std::string model_type, std::vector<std::string> archs, json extra) {
  family f = deepseek_v3_like(std::move(model_type), std::move(archs));
  f.names["index_heads"] = "index_n_heads";
  f.names["index_dim"] = "index_head_dim";
  f.names["index_top_k"] = "index_topk";
  f.defaults["index_heads"] = 64;
  f.defaults["index_dim"] = 128;
  f.defaults["index_top_k"] = 2048;
  for (auto& [k, v] : extra.items()) f.defaults[k] = v;
  return f;
}

// Llama4TextConfig: interleaved RoPE and NoPE layers (no_rope_layers, else every
// no_rope_layer_interval = 4th layer NoPE); a RoPE layer attends only within its aligned
// attention_chunk_size (8192) chunk -- chunked local attention, `chunk` in calc's schema -- and a
// NoPE layer over the whole history (with attention temperature tuning: no parameters). The
// feed-forward is MoE on moe_layers, else every interleave_moe_layer_step-th layer (Scout: all,
// Maverick: every 2nd): num_local_experts experts of intermediate_size, top num_experts_per_tok
// (1), a sigmoid-scored router d -> E without bias, and one shared expert of intermediate_size
// on every token; the other layers are dense SwiGLU of intermediate_size_mlp. use_qk_norm is an
// L2 norm without weights (Llama4TextL2Norm), so nothing is counted for it; the vocabulary head
// is untied.
family llama4_like(std::string model_type, std::vector<std::string> archs, std::string scope,
                   std::string not_counted) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .scope = std::move(scope),
          .ffn = ffn_family::moe,
          .layers = layer_rule::chunked_nope,
          .names = {{"experts", "num_local_experts"},
                    {"moe_intermediate", "intermediate_size"},
                    {"intermediate", "intermediate_size_mlp"},
                    {"shared_experts", ""},
                    {"shared_intermediate", ""},
                    {"sparse_step", "interleave_moe_layer_step"},
                    {"moe_layers", "moe_layers"},
                    {"first_dense", ""},
                    {"moe_freq", ""},
                    {"mlp_only", ""},
                    {"mlp_bias", ""},
                    {"window", ""},
                    {"window_switch", ""},
                    {"window_from", ""},
                    {"mtp_layers", ""},
                    {"chunk", "attention_chunk_size"},
                    {"nope_layers", "no_rope_layers"},
                    {"nope_interval", "no_rope_layer_interval"}},
          .defaults = gqa_defaults({{"vocab", 202048},
                                    {"kv_heads", 8},
                                    {"head_dim", 128},
                                    {"experts", 16},
                                    {"top_k", 1},
                                    {"moe_intermediate", 8192},
                                    {"intermediate", 16384},
                                    {"shared_experts", 1},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"sparse_step", 1},
                                    {"moe_layers", nullptr},
                                    {"chunk", 8192},
                                    {"nope_layers", nullptr},
                                    {"nope_interval", 4}}),
          .not_counted = std::move(not_counted)};
}

/// A family whose checkpoints store the MoE routing bias in `format` (families.h).
family with_router_bias(family f, std::string format) {
  f.router_bias_dtype = std::move(format);
  return f;
}

/// A multimodal wrapper whose vision tower vision.cpp reads as a component.
family with_vision(family f, vision_family vision) {
  f.vision = vision;
  return f;
}

/// A wrapper whose releases under `method` store the vision tower in the model dtype whatever
/// the quantisation config targets (families.h, vision_unquantised_method).
family kept_unquantised(family f, std::string method) {
  f.vision_unquantised_method = std::move(method);
  return f;
}

/// The table of families() followed by the families of families_more.cpp.
std::vector<family> with_more_families(std::vector<family> table) {
  for (family& f : more_families()) table.push_back(std::move(f));
  for (family& f : extra_families()) table.push_back(std::move(f));
  return table;
}

}  // namespace

namespace {

/// The families whose tables are in this file, then those of families_more.cpp.
const std::vector<family>& own_families() {
  static const std::vector<family> table = with_more_families({
      {.model_type = "llama", .architectures = {"LlamaForCausalLM"}, .defaults = gqa_defaults({})},
      // MistralConfig: num_key_value_heads=8, sliding_window=4096 (v0.1 slides on every layer).
      {.model_type = "mistral",
       .architectures = {"MistralForCausalLM"},
       .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}},
       .defaults = gqa_defaults({{"kv_heads", 8}, {"window", 4096}})},
      // MixtralConfig: 8 local experts, top-2, each expert of intermediate_size; no window.
      {.model_type = "mixtral",
       .architectures = {"MixtralForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"qkv_bias", ""},
                 {"o_bias", ""},
                 {"mlp_bias", ""},
                 {"experts", "num_local_experts"},
                 {"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""}},
       .defaults = gqa_defaults({{"kv_heads", 8}, {"experts", 8}, {"top_k", 2}})},
      qwen2_like("qwen2", {"Qwen2ForCausalLM"}),
      // Qwen2MoeConfig: 60 experts, top-4, one gated shared expert of 5632.
      {.model_type = "qwen2_moe",
       .architectures = {"Qwen2MoeForCausalLM"},
       .ffn = ffn_family::moe,
       .layers = layer_rule::window_from,
       .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}, {"shared_experts", ""}},
       .defaults = gqa_defaults({{"kv_heads", 16},
                                 {"qkv_bias", true},
                                 {"window", 4096},
                                 {"window_switch", false},
                                 {"window_from", 28},
                                 {"experts", 60},
                                 {"top_k", 4},
                                 {"moe_intermediate", 1408},
                                 {"shared_experts", 1},
                                 {"shared_intermediate", 5632},
                                 {"shared_gate", true}})},
      // Qwen3Config: per-head Q/K RMSNorm, head_dim 128, attention_bias on Q/K/V and O. Qwen's
      // FP8 checkpoints (Qwen3-8B-FP8) store the 128 x 128 block scales in BF16, as do the other
      // Qwen3 families below.
      {.model_type = "qwen3",
       .architectures = {"Qwen3ForCausalLM"},
       .layers = layer_rule::window_from,
       .names = {{"mlp_bias", ""}},
       .defaults = gqa_defaults({{"kv_heads", 32},
                                 {"head_dim", 128},
                                 {"qk_norm", true},
                                 {"window", 4096},
                                 {"window_switch", false},
                                 {"window_from", 28}}),
       .fp8_block_scale = "bf16"},
      // Qwen3MoeConfig: 128 experts, top-8, experts of 768, no shared expert.
      {.model_type = "qwen3_moe",
       .architectures = {"Qwen3MoeForCausalLM"},
       .ffn = ffn_family::moe,
       .layers = layer_rule::window_from,
       .names = {{"mlp_bias", ""}, {"shared_experts", ""}},
       .defaults = gqa_defaults({{"kv_heads", 4},
                                 {"head_dim", 128},
                                 {"qk_norm", true},
                                 {"window", 4096},
                                 {"window_switch", false},
                                 {"window_from", 28},
                                 {"experts", 128},
                                 {"top_k", 8},
                                 {"moe_intermediate", 768}}),
       .fp8_block_scale = "bf16"},
      // Qwen3VLConfig / Qwen3VLMoeConfig: the language model in text_config is Qwen3's (dense) or
      // Qwen3-MoE's; the ViT and its DeepStack mergers (vision_config) are apart.
      {.model_type = "qwen3_vl",
       .architectures = {"Qwen3VLForConditionalGeneration"},
       .scope = "text_config",
       .layers = layer_rule::window_from,
       .names = {{"mlp_bias", ""}},
       .defaults = gqa_defaults({{"head_dim", 128},
                                 {"qk_norm", true},
                                 {"window", nullptr},
                                 {"window_switch", false}}),
       .not_counted = "the vision tower and its DeepStack mergers (vision_config)",
       .fp8_block_scale = "bf16",
       .vision = vision_family::qwen3_vl},
      {.model_type = "qwen3_vl_moe",
       .architectures = {"Qwen3VLMoeForConditionalGeneration"},
       .scope = "text_config",
       .ffn = ffn_family::moe,
       .layers = layer_rule::window_from,
       .names = {{"mlp_bias", ""}, {"shared_experts", ""}},
       .defaults = gqa_defaults({{"head_dim", 128},
                                 {"qk_norm", true},
                                 {"window", nullptr},
                                 {"window_switch", false}}),
       .not_counted = "the vision tower and its DeepStack mergers (vision_config)",
       .fp8_block_scale = "bf16",
       .vision = vision_family::qwen3_vl},
      // Qwen3NextConfig: every 4th layer gated full attention, the others Gated DeltaNet; 512
      // experts, top-10, one gated shared expert.
      {.model_type = "qwen3_next",
       .architectures = {"Qwen3NextForCausalLM"},
       .ffn = ffn_family::moe,
       .layers = layer_rule::linear_interval,
       .names = {{"mlp_bias", ""}, {"shared_experts", ""}, {"window", ""}},
       .defaults = gqa_defaults({{"kv_heads", 2},
                                 {"head_dim", 256},
                                 {"qk_norm", true},
                                 {"output_gate", true},
                                 {"full_interval", 4},
                                 {"linear_qk_heads", 16},
                                 {"linear_v_heads", 32},
                                 {"linear_key_dim", 128},
                                 {"linear_value_dim", 128},
                                 {"linear_conv", 4},
                                 {"experts", 512},
                                 {"top_k", 10},
                                 {"moe_intermediate", 512},
                                 {"shared_experts", 1},
                                 {"shared_intermediate", 512},
                                 {"shared_gate", true}}),
       // Qwen3-Next-80B-A3B-Instruct-FP8's listing stores every weight_scale_inv F32
       // (tests/fixtures/hf/SOURCES.md), unlike Qwen3's FP8 releases' BF16.
       .fp8_block_scale = "fp32"},
      // Qwen3_5MoeConfig (Qwen3.5/3.6 MoE): the language model in text_config, as Qwen3-Next's
      // (layer_types lists full_attention and linear_attention layers, gated full attention,
      // one gated shared expert) with its MTP block spelt mtp_num_hidden_layers. No default is
      // taken for the widths: the published configs give every one.
      {.model_type = "qwen3_5_moe",
       .architectures = {"Qwen3_5MoeForConditionalGeneration"},
       .scope = "text_config",
       .ffn = ffn_family::moe,
       .layers = layer_rule::linear_interval,
       .names = {{"mlp_bias", ""},
                 {"shared_experts", ""},
                 {"window", ""},
                 {"output_gate", "attn_output_gate"},
                 {"mtp_layers", "mtp_num_hidden_layers"}},
       .defaults = gqa_defaults({{"qk_norm", true},
                                 {"output_gate", true},
                                 {"full_interval", 4},
                                 {"shared_experts", 1},
                                 {"shared_gate", true}}),
       .not_counted = "the vision tower and its merger (vision_config)",
       .fp8_block_scale = "bf16",
       // The Qwen3.5 releases store each Gated DeltaNet layer's A_log and gated norm F32
       // (Qwen3.5-35B-A3B's listing; the dense 0.8B, 4B and 27B alike); the Qwen3.6 releases
       // BF16, which their headers (or the bundle) say (tests/fixtures/hf/SOURCES.md).
       .ssm_params_dtype = "fp32",
       .vision = vision_family::qwen3_5},
      // Qwen3_5Config (Qwen3.5/3.6 dense): the same layers with a dense SwiGLU feed-forward.
      {.model_type = "qwen3_5",
       .architectures = {"Qwen3_5ForConditionalGeneration"},
       .scope = "text_config",
       .layers = layer_rule::linear_interval,
       .names = {{"mlp_bias", ""},
                 {"window", ""},
                 {"output_gate", "attn_output_gate"},
                 {"mtp_layers", "mtp_num_hidden_layers"}},
       .defaults = gqa_defaults({{"qk_norm", true}, {"output_gate", true}, {"full_interval", 4}}),
       .not_counted = "the vision tower and its merger (vision_config)",
       .fp8_block_scale = "bf16",
       .ssm_params_dtype = "fp32",  // A_log and the gated norm: as qwen3_5_moe's
       .vision = vision_family::qwen3_5},
      // Gemma2Config: head_dim 256, tied head, four norms per layer (pre/post attention and
      // feed-forward), sliding window 4096 on even layers.
      {.model_type = "gemma2",
       .architectures = {"Gemma2ForCausalLM"},
       .layers = layer_rule::alternate_sliding,
       .names = {{"mlp_bias", ""}},
       .defaults = gqa_defaults(
           {{"kv_heads", 16}, {"head_dim", 256}, {"tie", true}, {"norms", 4}, {"window", 4096}})},
      // Gemma3TextConfig: as Gemma 2 with per-head Q/K norms; five sliding layers then one full.
      {.model_type = "gemma3_text",
       .architectures = {"Gemma3ForCausalLM"},
       .layers = layer_rule::sliding_pattern,
       .names = {{"mlp_bias", ""}},
       .defaults = gemma3_text_defaults()},
      // Gemma3Config (multimodal): the language model lives in text_config, a Gemma3TextConfig
      // whose class defaults fill what Google's files leave out (gemma-3-4b-it names neither
      // heads, KV heads nor head_dim).
      {.model_type = "gemma3",
       .architectures = {"Gemma3ForConditionalGeneration"},
       .scope = "text_config",
       .layers = layer_rule::sliding_pattern,
       .names = {{"mlp_bias", ""}},
       .defaults = gemma3_text_defaults(),
       .not_counted = "the vision tower and projector (vision_config)",
       .vision = vision_family::siglip},
      // DeepseekV2Config: MLA (q_lora_rank null = no query compression), shared experts,
      // first_k_dense_replace dense layers, then MoE every moe_layer_freq layers.
      {.model_type = "deepseek_v2",
       .architectures = {"DeepseekV2ForCausalLM"},
       .attention = attention_family::mla,
       .ffn = ffn_family::moe,
       .names = {{"experts", "n_routed_experts"}, {"qkv_bias", ""}, {"o_bias", ""}},
       .defaults = gqa_defaults({{"q_rank", 1536},
                                 {"kv_rank", 512},
                                 {"qk_nope", 128},
                                 {"qk_rope", 64},
                                 {"v_head", 128},
                                 {"moe_intermediate", 1407},
                                 {"shared_intermediate", "=moe_intermediate"}})},
      // DeepseekV3Config: as V2 with a routing bias (e_score_correction_bias) and MTP layers.
      // Its reference Gate (DeepSeek-V3 inference/model.py) makes the bias a float32 Parameter,
      // and the V3.1 and R1 files store it F32 (tests/fixtures/hf/SOURCES.md).
      with_router_bias(deepseek_v3_like("deepseek_v3", {"DeepseekV3ForCausalLM"}), "fp32"),
      // Kimi K2 (moonshotai/Kimi-K2-Instruct): DeepSeek-V3's architecture and configuration class
      // (configuration_deepseek.DeepseekV3Config) under its own model_type. The routing bias F32
      // as in V3: Kimi-K2-Instruct's tensor listing (tests/fixtures/hf/SOURCES.md).
      with_router_bias(deepseek_v3_like("kimi_k2", {}), "fp32"),
      // KimiK25Config (moonshotai/Kimi-K2.5): the language model is a DeepseekV3Config in
      // text_config; the MoonViT vision tower and its patch-merger projector are a component
      // (vision.cpp), BF16 in the int4 (compressed-tensors) release's listing although its
      // quantisation config ignores no vision module; only that method is known to keep it so
      // (the NVFP4 release's config excludes the tower itself). The routing bias F32 in
      // Kimi-K2.5's tensor listing.
      kept_unquantised(
          with_vision(with_router_bias(deepseek_v3_like(
                                           "kimi_k25", {"KimiK25ForConditionalGeneration"},
                                           "text_config",
                                           "the MoonViT vision tower and its projector "
                                           "(vision_config)"),
                                       "fp32"),
                      vision_family::moonvit),
          "compressed-tensors"),
      // DeepseekV32Config (DeepSeek-V3.2): DeepSeek-V3's MLA and MoE plus DeepSeek sparse
      // attention's lightning indexer on every layer (index_n_heads query heads, one
      // index_head_dim key per token cached beside the latent, top index_topk tokens read).
      // The routing bias F32, as in V3 (the V3.2 tensor listing).
      with_router_bias(
          dsa_mla_like("deepseek_v32", {"DeepseekV32ForCausalLM"}, {{"index_heads", 64}}), "fp32"),
      // GlmMoeDsaConfig (GLM-5, GLM-5.1): the same layer with GLM's widths (q_lora_rank 2048,
      // qk_nope_head_dim 192, v_head_dim 256) and a 32-head indexer.
      // The routing bias is F32 in both GLM-5.1 releases' listings, BF16 and FP8.
      with_router_bias(dsa_mla_like("glm_moe_dsa", {"GlmMoeDsaForCausalLM"},
                                    {{"index_heads", 32},
                                     {"q_rank", 2048},
                                     {"qk_nope", 192},
                                     {"v_head", 256},
                                     {"mtp_layers", 1}}),
                       "fp32"),
      // Glm4MoeLiteConfig (zai-org/GLM-4.7-Flash): DeepSeek-V3's MLA and routed MoE with the
      // routing bias; no table default is taken for the MLA widths or expert counts, so a
      // config that leaves them out is an error rather than a guess.
      {.model_type = "glm4_moe_lite",
       .architectures = {"Glm4MoeLiteForCausalLM"},
       .attention = attention_family::mla,
       .ffn = ffn_family::moe,
       .names = {{"experts", "n_routed_experts"}, {"qkv_bias", ""}, {"o_bias", ""}},
       .defaults = gqa_defaults(
           {{"shared_intermediate", "=moe_intermediate"}, {"router_bias", true}}),
       // F32 in zai-org/GLM-4.7-Flash's tensor listing (mlp.gate.e_score_correction_bias).
       .router_bias_dtype = "fp32"},
      // Glm4MoeConfig: Q/K/V biases only (attention_bias), optional per-head Q/K norm, routing
      // bias, first_k_dense_replace dense layers, MTP layers.
      {.model_type = "glm4_moe",
       .architectures = {"Glm4MoeForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"experts", "n_routed_experts"},
                 {"o_bias", ""},
                 {"qk_norm", "use_qk_norm"},
                 {"mlp_bias", ""}},
       .defaults = gqa_defaults({{"kv_heads", 8},
                                 {"head_dim", 128},
                                 {"experts", 128},
                                 {"top_k", 8},
                                 {"moe_intermediate", 1408},
                                 {"shared_experts", 1},
                                 {"shared_intermediate", "=moe_intermediate"},
                                 {"first_dense", 1},
                                 {"router_bias", true}}),
       // F32 in zai-org/GLM-4.5-FP8's tensor listing (mlp.gate.e_score_correction_bias).
       .router_bias_dtype = "fp32"},
      // Phi3Config: fused QKV and gate/up projections (the same counts), no biases.
      {.model_type = "phi3",
       .architectures = {"Phi3ForCausalLM"},
       .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}},
       .defaults = gqa_defaults({})},
      // GptOssConfig: attention with per-head sinks and biases on Q/K/V and O, sliding and full
      // layers by layer_types (window 128); 32 experts, top-4, with biases and a biased router.
      {.model_type = "gpt_oss",
       .architectures = {"GptOssForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"experts", "num_local_experts"},
                 {"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""}},
       .defaults = gqa_defaults({{"kv_heads", 8},
                                 {"head_dim", 64},
                                 {"qkv_bias", true},
                                 {"o_bias", true},
                                 {"window", 128},
                                 {"experts", 32},
                                 {"top_k", 4},
                                 {"sinks", true},
                                 {"router_bias", true},
                                 {"expert_bias", true}})},
      // NemotronHConfig: one block per layer from hybrid_override_pattern (Mamba2 mixer,
      // attention, relu2 MLP or MoE), one norm per layer. MoE blocks (E, Nemotron-3-Nano) hold
      // ungated relu2 experts and shared experts, and DeepSeek-V3's router: a d x E gate and an
      // E-wide e_score_correction_bias.
      {.model_type = "nemotron_h",
       .architectures = {"NemotronHForCausalLM"},
       .layers = layer_rule::hybrid_pattern,
       .dense_mlp = true,
       .names = {{"head_dim", "attention_head_dim"},
                 {"o_bias", "attention_bias"},
                 {"experts", "n_routed_experts"},
                 {"shared_intermediate", "moe_shared_expert_intermediate_size"}},
       .defaults = gqa_defaults({{"norms", 1},
                                 {"head_dim", 128},
                                 {"mamba_heads", 128},
                                 {"mamba_head_dim", 64},
                                 {"state_dim", 128},
                                 {"groups", 8},
                                 {"conv_kernel", 4},
                                 {"conv_bias", true},
                                 {"proj_bias", false},
                                 {"router_bias", true}}),
       // The BF16 checkpoint of Nemotron-3-Nano keeps A_log, D and the routing bias F32.
       .router_bias_dtype = "fp32",
       .ssm_params_dtype = "fp32",
       // Experts in a latent space (moe_latent_size: fc1/fc2 latent projections around them,
       // Nemotron-3-Super) are not read yet: such a config is an error at that field.
       .only = {{"moe_latent_size", nullptr}}},
      // Mamba2Config: every layer a Mamba2 mixer with one norm; tied head by default.
      {.model_type = "mamba2",
       .architectures = {"Mamba2ForCausalLM"},
       .layers = layer_rule::mixer_only,
       .names = {{"mamba_heads", "num_heads"},
                 {"mamba_head_dim", "head_dim"},
                 {"state_dim", "state_size"},
                 {"intermediate", ""}},
       .defaults = gqa_defaults({{"norms", 1},
                                 {"tie", true},
                                 {"mamba_head_dim", 64},
                                 {"state_dim", 128},
                                 {"groups", 1},
                                 {"conv_kernel", 4},
                                 {"conv_bias", true},
                                 {"proj_bias", false}})},
      // FalconH1Config: every layer runs GQA attention and a Mamba2 mixer in parallel, then a
      // SwiGLU MLP; two norms per layer (input, pre-feed-forward). The mixer's inner width is
      // mamba_d_ssm (else mamba_expand x hidden_size), mamba_d_head may be "auto" (inner /
      // heads); in_proj's bias is mamba_proj_bias, out_proj's projectors_bias; the gated norm
      // exists when mamba_rms_norm. The µP multipliers scale activations and count nothing.
      {.model_type = "falcon_h1",
       .architectures = {"FalconH1ForCausalLM"},
       .layers = layer_rule::parallel_hybrid,
       .names = {{"mamba_heads", "mamba_n_heads"},
                 {"mamba_head_dim", "mamba_d_head"},
                 {"state_dim", "mamba_d_state"},
                 {"groups", "mamba_n_groups"},
                 {"conv_kernel", "mamba_d_conv"},
                 {"conv_bias", "mamba_conv_bias"},
                 {"proj_bias", "mamba_proj_bias"},
                 {"mamba_inner", "mamba_d_ssm"},
                 {"mamba_expand", "mamba_expand"},
                 {"out_proj_bias", "projectors_bias"},
                 {"gated_norm", "mamba_rms_norm"},
                 {"ssm_chunk", "mamba_chunk_size"},
                 {"attn_layers", "attn_layer_indices"}},
       .defaults = gqa_defaults({{"vocab", 128000},
                                 {"hidden", 4096},
                                 {"intermediate", 14336},
                                 {"layers", 32},
                                 {"heads", 32},
                                 {"kv_heads", 8},
                                 {"mamba_inner", 1024},
                                 {"mamba_heads", 128},
                                 {"mamba_head_dim", "auto"},
                                 {"state_dim", 256},
                                 {"groups", 1},
                                 {"conv_kernel", 4},
                                 {"mamba_expand", 2},
                                 {"conv_bias", true},
                                 {"proj_bias", false},
                                 {"out_proj_bias", false},
                                 {"gated_norm", false},
                                 {"ssm_chunk", 256}})},
      // KimiLinearConfig (moonshotai/Kimi-Linear-48B-A3B): linear_attn_config lists the 1-based
      // full-attention (MLA) and KDA layers; KDA heads of head_dim keys and values, the decay and
      // (unless use_full_rank_gate) the output gate low rank through head_dim, as the checkpoint
      // stores f_a/f_b and g_a/g_b; MLA without RoPE (mla_use_nope); DeepSeek-style MoE with the
      // routing bias (e_score_correction_bias) from first_k_dense_replace on.
      {.model_type = "kimi_linear",
       .architectures = {"KimiLinearForCausalLM"},
       .attention = attention_family::mla,
       .ffn = ffn_family::moe,
       .layers = layer_rule::layer_lists,
       .linear = linear_family::kda,
       .names = {{"qkv_bias", ""},
                 {"o_bias", ""},
                 {"mlp_bias", ""},
                 {"top_k", "num_experts_per_token"},
                 {"shared_experts", "num_shared_experts"},
                 {"shared_intermediate", ""},
                 {"mla_nope", "mla_use_nope"},
                 {"mla_gate", "mla_use_output_gate"},
                 {"full_layers", "linear_attn_config.full_attn_layers"},
                 {"linear_layers", "linear_attn_config.kda_layers"},
                 {"kda_heads", "linear_attn_config.num_heads"},
                 {"kda_head_dim", "linear_attn_config.head_dim"},
                 {"linear_conv", "linear_attn_config.short_conv_kernel_size"},
                 {"kda_full_gate", "linear_attn_config.use_full_rank_gate"}},
       .defaults = gqa_defaults({{"shared_intermediate", "=moe_intermediate"},
                                 {"router_bias", true},
                                 {"kda_full_gate", false}})},
      // GraniteConfig (IBM Granite 3.x dense): Llama's layers, attention_bias on Q/K/V and O,
      // the SwiGLU MLP (mlp_bias, where set, is refused: calc's gated MLP has no biases); the µP
      // multipliers (embedding, attention, residual, logits_scaling) count nothing.
      {.model_type = "granite",
       .architectures = {"GraniteForCausalLM"},
       .names = {{"window", ""}},
       .defaults = gqa_defaults({})},
      // GraniteMoeConfig (IBM Granite 3.x MoE): Llama's attention (attention_bias on Q/K/V and
      // O), num_local_experts experts of intermediate_size (stored fused: input_linear holds gate
      // and up, output_linear down; the same counts), a router without bias, no shared expert.
      // embedding_multiplier, attention_multiplier, residual_multiplier and logits_scaling scale
      // activations and count nothing.
      {.model_type = "granitemoe",
       .architectures = {"GraniteMoeForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"experts", "num_local_experts"},
                 {"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""}},
       .defaults = gqa_defaults({})},
      // SmolLM3Config (HuggingFaceTB/SmolLM3-3B): Llama's layers with a tied head (the published
      // config leaves tie_word_embeddings to the class default, and the checkpoint stores no
      // lm_head); no_rope_layers marks the NoPE layers, which rotate nothing and count the same.
      {.model_type = "smollm3",
       .architectures = {"SmolLM3ForCausalLM"},
       .defaults = gqa_defaults({{"tie", true}})},
      // PhiConfig (microsoft/phi-2): attention and the MLP side by side after one LayerNorm
      // (one norm per layer, weight and bias; the parallel sum counts nothing), biases on Q/K/V
      // and the dense output, an ungated GELU MLP fc1/fc2 with biases, a final LayerNorm, and
      // an untied lm_head with a bias. Partial rotary (partial_rotary_factor) rotates part of
      // each head and counts nothing; qk_layernorm adds per-head LayerNorms on Q and K.
      {.model_type = "phi",
       .architectures = {"PhiForCausalLM"},
       .dense_mlp = true,
       .names = {{"qkv_bias", ""},
                 {"o_bias", ""},
                 {"mlp_bias", ""},
                 {"qk_norm", "qk_layernorm"},
                 {"window", ""}},
       .defaults = gqa_defaults({{"vocab", 51200},
                                 {"hidden", 2048},
                                 {"intermediate", 8192},
                                 {"layers", 24},
                                 {"heads", 32},
                                 {"qkv_bias", true},
                                 {"o_bias", true},
                                 {"mlp_bias", true},
                                 {"norms", 1},
                                 {"layer_norm", true},
                                 {"head_bias", true}})},
      // Starcoder2Config (bigcode/starcoder2-*): LayerNorm with bias (two per layer and a final
      // one), use_bias on Q/K/V, the output and the ungated GELU MLP c_fc/c_proj, GQA with a
      // sliding window on every layer, a tied head by default (the class's
      // tie_word_embeddings).
      {.model_type = "starcoder2",
       .architectures = {"Starcoder2ForCausalLM"},
       .dense_mlp = true,
       .names = {{"qkv_bias", "use_bias"}, {"o_bias", "use_bias"}, {"mlp_bias", "use_bias"}},
       .defaults = gqa_defaults({{"vocab", 49152},
                                 {"hidden", 3072},
                                 {"intermediate", 12288},
                                 {"layers", 30},
                                 {"heads", 24},
                                 {"kv_heads", 2},
                                 {"tie", true},
                                 {"qkv_bias", true},
                                 {"o_bias", true},
                                 {"mlp_bias", true},
                                 {"layer_norm", true}})},
      // Olmo2Config (allenai/OLMo-2-*): Llama's projections with RMSNorms on Q and K over all
      // heads (q_norm n_Q*d_h, k_norm n_KV*d_h) and two norms per layer after attention and the
      // feed-forward (post-norm, the same count as Llama's pre-norms).
      {.model_type = "olmo2",
       .architectures = {"Olmo2ForCausalLM"},
       .names = {{"mlp_bias", ""}, {"window", ""}},
       .defaults = gqa_defaults({{"qk_norm", true}, {"qk_norm_full", true}})},
      // OlmoeConfig (allenai/OLMoE-1B-7B): OLMo's attention with RMSNorms on Q and K over all
      // heads (q_norm hidden-wide, k_norm n_KV*d_h), pre-norms, and num_experts experts of
      // intermediate_size, top num_experts_per_tok, a router without bias, no shared expert;
      // clip_qkv clamps activations and counts nothing.
      {.model_type = "olmoe",
       .architectures = {"OlmoeForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""},
                 {"qk_norm", ""},
                 {"window", ""}},
       .defaults = gqa_defaults({{"qk_norm", true},
                                 {"qk_norm_full", true},
                                 {"experts", 64},
                                 {"top_k", 8}})},
      // CohereConfig (Command R, Aya 23): attention and the SwiGLU MLP side by side after one
      // LayerNorm without a bias (one weight vector per norm: it counts as an RMSNorm does), a
      // tied head scaled by logit_scale (a multiplier, counted nothing); use_qk_norm adds
      // LayerNorms without bias over every head (n_Q*d_h and n_KV*d_h weights).
      {.model_type = "cohere",
       .architectures = {"CohereForCausalLM"},
       .names = {{"mlp_bias", ""}, {"qk_norm", "use_qk_norm"}, {"window", ""}},
       .defaults = gqa_defaults({{"vocab", 256000},
                                 {"tie", true},
                                 {"norms", 1},
                                 {"qk_norm_full", true}})},
      // InternLM2Config (internlm/internlm2-*, internlm2_5-*): Llama's layers with Q/K/V fused
      // into wqkv (the same counts) and one `bias` flag for wqkv and wo; the MLP w1/w2/w3 has
      // none.
      {.model_type = "internlm2",
       .architectures = {"InternLM2ForCausalLM"},
       .names = {{"qkv_bias", "bias"}, {"o_bias", "bias"}, {"mlp_bias", ""}, {"window", ""}},
       .defaults = gqa_defaults({{"qkv_bias", true}, {"o_bias", true}})},
      // GraniteMoeHybridConfig (IBM Granite 4.0): layer_types puts a Mamba2 mixer or GQA attention
      // (position_embedding_type nope or rope: counts the same) on each layer, and
      // every layer ends in the feed-forward: num_local_experts routed experts of
      // intermediate_size (top num_experts_per_tok, router without bias) plus the shared SwiGLU
      // MLP of shared_intermediate_size, or the shared MLP alone when num_local_experts is 0
      // (H-Micro, the H nano models). The mixer's inner width is mamba_n_heads x mamba_d_head
      // (mamba_expand x hidden_size in the published configs), with the gated RMSNorm. The µP
      // multipliers count nothing.
      {.model_type = "granitemoehybrid",
       .architectures = {"GraniteMoeHybridForCausalLM"},
       .ffn = ffn_family::moe,
       .layers = layer_rule::typed_hybrid,
       .names = {{"experts", "num_local_experts"},
                 {"moe_intermediate", "intermediate_size"},
                 {"intermediate", "shared_intermediate_size"},
                 {"shared_intermediate", "shared_intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""},
                 {"window", ""},
                 {"mamba_heads", "mamba_n_heads"},
                 {"mamba_head_dim", "mamba_d_head"},
                 {"state_dim", "mamba_d_state"},
                 {"groups", "mamba_n_groups"},
                 {"conv_kernel", "mamba_d_conv"},
                 {"conv_bias", "mamba_conv_bias"},
                 {"proj_bias", "mamba_proj_bias"},
                 {"ssm_chunk", "mamba_chunk_size"}},
       .defaults = gqa_defaults({{"experts", 0},
                                 {"shared_experts", 1},
                                 {"mamba_heads", 128},
                                 {"mamba_head_dim", 64},
                                 {"state_dim", 256},
                                 {"groups", 1},
                                 {"conv_kernel", 4},
                                 {"conv_bias", true},
                                 {"proj_bias", false},
                                 {"ssm_chunk", 256}}),
       .only = {{"normalization_function", "rmsnorm"}}},
      // Exaone4Config (LGAI-EXAONE/EXAONE-4.0-*): post-norm (two norms a layer, after attention
      // and the feed-forward), per-head RMSNorms on Q and K, and where sliding_window is set a
      // local/global pattern (sliding_window_pattern: a period, or letters such as "LLLG"; or
      // layer_types); the global layers are NoPE and count the same.
      {.model_type = "exaone4",
       .architectures = {"Exaone4ForCausalLM"},
       .layers = layer_rule::sliding_pattern,
       .names = {{"mlp_bias", ""}, {"qkv_bias", ""}, {"o_bias", ""}, {"qk_norm", ""}},
       .defaults = gqa_defaults({{"qk_norm", true}, {"sliding_pattern", 4}})},
      // SeedOssConfig (ByteDance-Seed/Seed-OSS-36B): Llama's layers with biases on Q/K/V
      // (attention_bias) and none on the output (attention_out_bias), head_dim given apart from
      // hidden / heads.
      {.model_type = "seed_oss",
       .architectures = {"SeedOssForCausalLM"},
       .names = {{"o_bias", "attention_out_bias"}, {"window", ""}},
       .defaults = gqa_defaults({{"qkv_bias", true}})},
      // Ernie4_5_MoeConfig (baidu/ERNIE-4.5-*-A*B): GQA with use_bias on Q/K/V and O;
      // moe_num_experts experts of moe_intermediate_size, top moe_k, on the layers from
      // moe_layer_start_index to moe_layer_end_index every moe_layer_interval-th ((i + 1) %
      // interval), with moe_num_shared_experts shared experts of moe_intermediate_size each (one
      // MLP of their sum, the same count) and the router's e_score_correction_bias
      // (moe_statics); the other layers a SwiGLU of intermediate_size.
      {.model_type = "ernie4_5_moe",
       .architectures = {"Ernie4_5_MoeForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"experts", "moe_num_experts"},
                 {"top_k", "moe_k"},
                 {"shared_experts", "moe_num_shared_experts"},
                 {"shared_intermediate", ""},
                 {"first_dense", "moe_layer_start_index"},
                 {"sparse_step", "moe_layer_interval"},
                 {"moe_freq", ""},
                 {"last_moe", "moe_layer_end_index"},
                 {"qkv_bias", "use_bias"},
                 {"o_bias", "use_bias"},
                 {"mlp_bias", "use_bias"},
                 {"window", ""}},
       .defaults = gqa_defaults({{"shared_intermediate", "=moe_intermediate"},
                                 {"router_bias", true},
                                 {"tie", true}})},
      // Mistral3Config (Mistral Small 3.1 / 3.2, Magistral, Devstral Small): the language model in
      // text_config is Mistral's (a sliding window only where the text config sets one); the
      // Pixtral vision tower and the patch-merger projector (vision_config) are apart.
      {.model_type = "mistral3",
       .architectures = {"Mistral3ForConditionalGeneration"},
       .scope = "text_config",
       .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}},
       .defaults = gqa_defaults({{"kv_heads", 8}, {"window", 4096}}),
       .not_counted = "the Pixtral vision tower and its multimodal projector (vision_config)",
       .vision = vision_family::pixtral},
      // MiniMaxM2Config (MiniMaxAI/MiniMax-M2, M2.1, M2.5): GQA with RMSNorms on Q and K over all
      // heads (qk_norm_type per_layer), partial rotary (rotary_dim; counts nothing), every layer
      // full softmax attention (attn_type_list all 1) and a MoE of num_local_experts experts of
      // intermediate_size, sigmoid routing with e_score_correction_bias (use_routing_bias), no
      // shared expert. use_qk_norm and use_routing_bias are fields of MiniMax's own remote-code
      // class only (both default true there); transformers' MiniMaxM2Config has neither, and its
      // MiniMaxM2Attention and MiniMaxM2SparseMoeBlock always build q_norm/k_norm and the
      // correction bias, so a config without them (the Hub's transformers-5 conversion of
      // MiniMax-M2) reads both as true.
      {.model_type = "minimax_m2",
       .architectures = {"MiniMaxM2ForCausalLM"},
       .ffn = ffn_family::moe,
       .names = {{"experts", "num_local_experts"},
                 {"moe_intermediate", "intermediate_size"},
                 {"shared_experts", ""},
                 {"mlp_bias", ""},
                 {"qkv_bias", ""},
                 {"o_bias", ""},
                 {"qk_norm", "use_qk_norm"},
                 {"router_bias", "use_routing_bias"},
                 {"mtp_layers", ""},
                 {"window", ""}},
       // transformers' MiniMaxM2Config class defaults (configuration_minimax_m2.py): MiniMax-M2's
       // own shapes.
       .defaults = gqa_defaults({{"vocab", 200064},
                                 {"hidden", 3072},
                                 {"moe_intermediate", 1536},
                                 {"layers", 62},
                                 {"heads", 48},
                                 {"kv_heads", 8},
                                 {"head_dim", 128},
                                 {"max_positions", 196608},
                                 {"experts", 256},
                                 {"top_k", 8},
                                 {"qk_norm", true},
                                 {"qk_norm_full", true},
                                 {"router_bias", true}}),
       .not_counted = "the MTP modules (num_mtp_modules, use_mtp): calc does not read them",
       .router_bias_dtype = "fp32",  // F32 in MiniMax-M2.5's files
       // block_sparse_moe.gate.weight: F32 in the listings of MiniMax-M2.5 and M2.7, and
       // MiniMax-M2's headers sum to M2.5's bytes (tests/fixtures/hf/SOURCES.md).
       .router_dtype = "fp32",
       .only = {{"qk_norm_type", "per_layer"},
                {"attn_type_list", 1},
                {"shared_intermediate_size", 0}}},
      // Llama4Config (meta-llama/Llama-4-Scout / Maverick; the language model in text_config)
      // and Llama4TextConfig (Llama4ForCausalLM, the document itself).
      with_vision(llama4_like("llama4", {"Llama4ForConditionalGeneration"}, "text_config",
                              "the vision tower and its multimodal projector (vision_config)"),
                  vision_family::llama4),
      llama4_like("llama4_text", {"Llama4ForCausalLM"}, "", ""),
  });
  return table;
}

}  // namespace

const std::vector<family>& families() {
  // This file's tables, then the state-space families (families_ssm.cpp).
  static const std::vector<family> all = [] {
    std::vector<family> t = own_families();
    for (family& f : ssm_families()) t.push_back(std::move(f));
    for (family& f : minimax_families()) t.push_back(std::move(f));
    for (family& f : phi3small_families()) t.push_back(std::move(f));
    for (family& f : recent_families()) t.push_back(std::move(f));
    for (family& f : wrapper_families()) t.push_back(std::move(f));
    for (family& f : classic_families()) t.push_back(std::move(f));
    return t;
  }();
  return all;
}

std::string family_table_file(const std::string& model_type) {
  auto in = [&](const std::vector<family>& table) {
    return std::any_of(table.begin(), table.end(),
                       [&](const family& f) { return f.model_type == model_type; });
  };
  if (in(ssm_families())) return "families_ssm.cpp";
  if (in(minimax_families())) return "families_minimax.cpp";
  if (in(phi3small_families())) return "families_phi3small.cpp";
  if (in(recent_families())) return "families_recent.cpp";
  if (in(wrapper_families())) return "families_wrappers.cpp";
  if (in(classic_families())) return "families_classic.cpp";
  if (in(more_families())) return "families_more.cpp";
  if (in(extra_families())) return "families_extra.cpp";
  return "families.cpp";
}

const family* find_family(const std::string& model_type, const std::vector<std::string>& archs) {
  for (const family& f : families())
    if (f.model_type == model_type) return &f;
  if (!model_type.empty()) return nullptr;
  std::string matched;
  return find_family_by_architecture(archs, matched);
}

const family* find_family_by_architecture(const std::vector<std::string>& archs,
                                          std::string& matched) {
  for (const std::string& a : archs)
    for (const family& f : families())
      for (const std::string& fa : f.architectures)
        if (fa == a) {
          matched = a;
          return &f;
        }
  return nullptr;
}

std::string family_names() {
  std::string s;
  for (const family& f : families())
    if (f.refused.empty()) s += (s.empty() ? "" : ", ") + f.model_type;
  return s + ", " + block_configs_model_type;  // read by nas.cpp, not a table
}

}  // namespace calc::hf
