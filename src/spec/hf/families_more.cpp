// The dense and MoE transformer families read since issue 21's fourth round: one table each, in
// the form of families.cpp (defaults are those of each family's transformers configuration
// class, or of the remote code its checkpoints ship). Each maps its layers onto the kinds the
// translator already has; a field that would change memory and that the table does not read is
// pinned in `only`, so another value is an error at that field rather than a silent guess.
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// Cohere2Config (Command R7B, Command A, Tiny Aya): Cohere's layer -- attention and the SwiGLU
// MLP side by side after one LayerNorm without a bias (one weight vector: it counts as an
// RMSNorm does), a tied head scaled by logit_scale (a multiplier: counts nothing) -- with three
// sliding-window layers (RoPE, sliding_window 4096) to one global layer (NoPE: counts the same)
// by sliding_window_pattern (layer i slides unless (i + 1) % pattern == 0), or by layer_types
// where the config lists them. attention_bias puts biases on Q/K/V and O. The checkpoints'
// remote-code flags the reference class does not read are pinned to the one form calc reads:
// parallel block, gated MLP, no Q/K norm, local layers first, a shared embedding, no norm bias.
// layer_switch (an older spelling of the period in the same files) is not read, as transformers
// does not read it.
family cohere2() {
  return {.model_type = "cohere2",
          .architectures = {"Cohere2ForCausalLM"},
          .layers = layer_rule::sliding_pattern,
          .names = {{"mlp_bias", ""}, {"qk_norm", ""}},
          .defaults = gqa_defaults({{"vocab", 256000},
                                    {"hidden", 8192},
                                    {"intermediate", 22528},
                                    {"layers", 40},
                                    {"heads", 64},
                                    {"tie", true},
                                    {"norms", 1},
                                    {"window", 4096},
                                    {"sliding_pattern", 4}}),
          .only = {{"use_parallel_block", true},
                   {"use_gated_activation", true},
                   {"use_qk_norm", false},
                   {"order_of_interleaved_layers", "local_attn_first"},
                   {"use_embedding_sharing", true},
                   {"layer_norm_bias", false}}};
}

// GemmaConfig (Gemma 1: google/gemma-2b, gemma-7b): Llama's layers with head_dim 256 given
// apart from hidden / heads, a tied head, two RMSNorms a layer (weights stored as w, applied as
// 1 + w: the same count), and the GeGLU MLP (gate, up, down: SwiGLU's count); attention_bias
// puts biases on Q/K/V and O. No sliding window.
family gemma() {
  return {.model_type = "gemma",
          .architectures = {"GemmaForCausalLM"},
          .names = {{"mlp_bias", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 256000},
                                    {"hidden", 3072},
                                    {"intermediate", 24576},
                                    {"layers", 28},
                                    {"heads", 16},
                                    {"kv_heads", 16},
                                    {"head_dim", 256},
                                    {"tie", true}})};
}

// Glm4Config (GLM-4-9B-0414, GLM-4-32B-0414) and GlmConfig (glm-4-9b-chat-hf): GQA with
// attention_bias on Q/K/V only (o_proj has none), head_dim given, partial rotary
// (partial_rotary_factor: rotates part of each head, counts nothing), and the gated MLP stored
// fused (gate_up_proj: gate and up, the same count). GLM-4-0414 adds two norms a layer after
// attention and after the MLP (post_self_attn_layernorm, post_mlp_layernorm): four in all.
family glm_like(std::string model_type, std::vector<std::string> archs, std::int64_t norms) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .names = {{"o_bias", ""}, {"mlp_bias", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 151552},
                                    {"hidden", 4096},
                                    {"intermediate", 13696},
                                    {"layers", 40},
                                    {"heads", 32},
                                    {"kv_heads", 2},
                                    {"head_dim", 128},
                                    {"qkv_bias", true},
                                    {"norms", norms}})};
}

// Qwen2VLConfig / Qwen2_5_VLConfig (Qwen2-VL, Qwen2.5-VL): the language model is Qwen2's (Q/K/V
// biases, sliding only when use_sliding_window), in text_config or, in the configs published
// before transformers split it out, at the top of the document beside vision_config; M-RoPE
// (mrope_section) rotates and counts nothing. The ViT and its patch merger are apart. Qwen's
// FP8 checkpoints keep BF16 block scales.
family qwen2_vl_like(std::string model_type, std::vector<std::string> archs,
                     vision_family vision) {
  return {.model_type = std::move(model_type),
          .architectures = std::move(archs),
          .scope = "text_config",
          .layers = layer_rule::window_from,
          .names = {{"qkv_bias", ""}, {"o_bias", ""}, {"mlp_bias", ""}},
          .defaults = gqa_defaults({{"vocab", 152064},
                                    {"hidden", 8192},
                                    {"intermediate", 29568},
                                    {"layers", 80},
                                    {"heads", 64},
                                    {"kv_heads", 8},
                                    {"qkv_bias", true},
                                    {"window", 4096},
                                    {"window_switch", false},
                                    {"window_from", 80}}),
          .not_counted = "the vision tower and its patch merger (vision_config)",
          .fp8_block_scale = "bf16",
          .vision = vision};
}

// Dots1Config (rednote-hilab/dots.llm1.base, dots.llm1.inst): Qwen3's attention (per-head
// RMSNorms on Q and K, attention_bias on Q/K/V and O) with DeepSeek-V3's feed-forward:
// first_k_dense_replace dense SwiGLU layers of intermediate_size, then n_routed_experts experts
// of moe_intermediate_size, top num_experts_per_tok, n_shared_experts shared experts of
// moe_intermediate_size each, and a router with the e_score_correction_bias (noaux_tc). No
// table default is taken for the expert widths: a config that leaves them out is an error.
family dots1() {
  return {.model_type = "dots1",
          .architectures = {"Dots1ForCausalLM"},
          .ffn = ffn_family::moe,
          .layers = layer_rule::window_from,
          .names = {{"experts", "n_routed_experts"}, {"mlp_bias", ""}},
          .defaults = gqa_defaults({{"qk_norm", true},
                                    {"window", 4096},
                                    {"window_switch", false},
                                    {"window_from", 62},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"router_bias", true}})};
}

// ExaoneConfig (EXAONE 3.0 / 3.5, LGAI-EXAONE's remote code `configuration_exaone.py`): Llama's
// layers under GPT-2's names -- num_layers, ln_1/ln_2 (RMSNorms), c_fc_0/c_fc_1/c_proj (the
// gated MLP: SwiGLU's count) and out_proj -- with no biases anywhere. The class ties the head
// by default (EXAONE-3.5-2.4B does; the 7.8B and 32B configs say false); intermediate_size has
// no default (the class derives 4 x hidden_size when it is absent), so its absence is an error.
family exaone() {
  return {.model_type = "exaone",
          .architectures = {"ExaoneForCausalLM"},
          .names = {{"layers", "num_layers"},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"window", ""}},
          .defaults = gqa_defaults(
              {{"vocab", 102400}, {"hidden", 2048}, {"layers", 32}, {"heads", 32}, {"tie", true}})};
}

// BailingMoeConfig (inclusionAI Ling-lite, Ling-plus, Ling-Coder-lite; the remote code
// `configuration_bailing_moe.py`): GQA with Q/K/V fused in query_key_value (biased by
// use_qkv_bias) and the output projection `dense` (biased by use_bias, which also biases the MLPs:
// the class default is true, and calc's gated MLP has no biases, so such a config is an error);
// first_k_dense_replace dense SwiGLU layers of intermediate_size, then num_experts experts of
// moe_intermediate_size, top num_experts_per_tok, num_shared_experts shared experts of
// moe_intermediate_size each, a router without bias. norm_head normalises the head's rows at
// run time and counts nothing. The sliding-window fields are read in one form only: off.
// Ling 2.0 / Ring 2.0 (inclusionAI/Ling-mini-2.0, Ling-flash-2.0, Ring-mini-2.0; the remote
// code's BailingMoeV2ForCausalLM) publish the same model_type: the same layers plus per-head
// Q/K RMSNorms (query_layernorm / key_layernorm, head_dim each) where use_qk_norm, the gate's
// routing bias (expert_bias, one value an expert) where moe_router_enable_expert_bias, and
// num_nextn_predict_layers MTP layers (the `mtp` block, outside the totals). A V1 config has
// neither flag, so both read false. Group-limited routing (n_group, topk_group) and
// partial_rotary_factor count nothing; moe_shared_expert_intermediate_size, which some V2 files
// carry, is not read by the reference (the shared MLP is moe_intermediate_size x
// num_shared_experts).
family bailing_moe() {
  return {.model_type = "bailing_moe",
          .architectures = {"BailingMoeForCausalLM", "BailingMoeV2ForCausalLM"},
          .ffn = ffn_family::moe,
          .names = {{"qkv_bias", "use_qkv_bias"},
                    {"o_bias", "use_bias"},
                    {"mlp_bias", "use_bias"},
                    {"shared_experts", "num_shared_experts"},
                    {"qk_norm", "use_qk_norm"},
                    {"router_bias", "moe_router_enable_expert_bias"},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 30592},
                                    {"hidden", 1024},
                                    {"layers", 24},
                                    {"heads", 16},
                                    {"experts", 16},
                                    {"top_k", 2},
                                    {"shared_intermediate", "=moe_intermediate"},
                                    {"o_bias", true},
                                    {"mlp_bias", true}}),
          .only = {{"use_sliding_window", false}}};
}

// GPTNeoXConfig (EleutherAI GPT-NeoX-20B, Pythia): MHA with Q/K/V fused in query_key_value and
// the output `dense`, both biased (attention_bias, true by default and in every release); the
// ungated GELU MLP dense_h_to_4h / dense_4h_to_h with biases; two LayerNorms with biases a layer
// (input_layernorm, post_attention_layernorm) and a final one; embed_in and an untied embed_out
// without bias. use_parallel_residual (attention and MLP side by side) and rotary_pct (partial
// rotary) change the wiring, not the count.
family gpt_neox() {
  return {.model_type = "gpt_neox",
          .architectures = {"GPTNeoXForCausalLM"},
          .dense_mlp = true,
          .names = {{"mlp_bias", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 50432},
                                    {"hidden", 6144},
                                    {"intermediate", 24576},
                                    {"layers", 44},
                                    {"heads", 64},
                                    {"qkv_bias", true},
                                    {"o_bias", true},
                                    {"mlp_bias", true},
                                    {"layer_norm", true}})};
}

// ChatGLMConfig's defaults less the widths: ChatGLM-6B (v1) shares the model_type under other
// names (vocab_size, inner_hidden_size), and its config must fail at a field, not read
// ChatGLMConfig's defaults. multi_query_group_num has none either (the class's 1 holds only with
// multi_query_attention).
json chatglm_defaults() {
  json d = gqa_defaults({{"qkv_bias", false}, {"max_positions", 2048}});
  d.erase("kv_heads");
  d.erase("head_dim");
  return d;
}

// ChatGLMConfig (THUDM/glm-4-9b-chat, chatglm3-6b, chatglm2-6b; the remote code
// `configuration_chatglm.py`): GLM's layer under Megatron's names -- num_layers,
// padded_vocab_size, ffn_hidden_size (the gated MLP: dense_h_to_4h holds gate and up), kv_channels
// (head_dim), multi_query_group_num KV heads, add_qkv_bias on query_key_value, add_bias_linear on
// dense and the MLP (calc's gated MLP has none, so true is an error) -- two RMSNorms a layer and a
// final one, an untied output_layer, seq_length the context limit. The flags that would change
// the count or the cache are read in their released form only: grouped-query attention
// (multi_query_attention true; false would mean one KV head per query head), RMSNorm, and the
// final norm (post_layer_norm). A config that gives multi_query_group_num but leaves
// multi_query_attention out (false by the class default) would be read with that many KV heads;
// every published ChatGLM2/3/4 config gives both.
family chatglm() {
  return {.model_type = "chatglm",
          .architectures = {"ChatGLMModel", "ChatGLMForConditionalGeneration"},
          .names = {{"vocab", "padded_vocab_size"},
                    {"layers", "num_layers"},
                    {"intermediate", "ffn_hidden_size"},
                    {"head_dim", "kv_channels"},
                    {"kv_heads", "multi_query_group_num"},
                    {"qkv_bias", "add_qkv_bias"},
                    {"o_bias", "add_bias_linear"},
                    {"mlp_bias", "add_bias_linear"},
                    {"max_positions", "seq_length"},
                    {"window", ""}},
          .defaults = chatglm_defaults(),
          .only = {{"multi_query_attention", true}, {"rmsnorm", true}, {"post_layer_norm", true}}};
}

// PhiMoEConfig (microsoft/Phi-3.5-MoE-instruct): Mixtral's layer -- num_local_experts experts of
// intermediate_size, top num_experts_per_tok, a router without bias, Mistral's sliding window on
// every layer (131072 in the release: the whole context) -- with attention_bias on Q/K/V and O,
// LayerNorms with biases (two a layer and a final one) and a biased lm_head (lm_head_bias).
// longrope's factors (rope_scaling) count nothing.
family phimoe() {
  return {.model_type = "phimoe",
          .architectures = {"PhiMoEForCausalLM"},
          .ffn = ffn_family::moe,
          .names = {{"experts", "num_local_experts"},
                    {"moe_intermediate", "intermediate_size"},
                    {"shared_experts", ""},
                    {"mlp_bias", ""},
                    {"head_bias", "lm_head_bias"}},
          .defaults = gqa_defaults({{"vocab", 32064},
                                    {"hidden", 4096},
                                    {"moe_intermediate", 6400},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"experts", 16},
                                    {"top_k", 2},
                                    {"layer_norm", true}})};
}

// NemotronConfig (Nemotron-4, Minitron-4B/8B, Nemotron-Mini-4B): GQA with head_dim given apart
// from hidden / heads (biases by attention_bias), an ungated relu2 MLP up_proj / down_proj
// (biases by mlp_bias), LayerNorm1P -- a LayerNorm with a bias, stored as w and applied as 1 + w
// -- twice a layer and once at the end, an untied head. partial_rotary_factor (or rope_percent)
// counts nothing; kv_channels, which some of these files carry, is not read, as transformers
// does not read it.
family nemotron() {
  return {.model_type = "nemotron",
          .architectures = {"NemotronForCausalLM"},
          .dense_mlp = true,
          .names = {{"window", ""}},
          .defaults = gqa_defaults({{"vocab", 256000},
                                    {"hidden", 6144},
                                    {"intermediate", 24576},
                                    {"layers", 32},
                                    {"heads", 48},
                                    {"layer_norm", true}})};
}

// DeepseekConfig (deepseek-ai/deepseek-moe-16b, the remote code `configuration_deepseek.py`;
// also GigaChat-20B-A3B): Llama's attention (attention_bias on Q/K/V and O) with DeepSeekMoE:
// first_k_dense_replace dense SwiGLU layers of intermediate_size, then every moe_layer_freq-th
// layer n_routed_experts experts of moe_intermediate_size, top num_experts_per_tok,
// n_shared_experts shared experts of moe_intermediate_size each, a softmax router without bias.
// DeepSeek-V2's first upload used the same model_type with MLA fields: kv_lora_rank is read in
// one form only, absent or null, so such a config is an error there, never read as GQA.
family deepseek_moe() {
  return {.model_type = "deepseek",
          .architectures = {"DeepseekForCausalLM"},
          .ffn = ffn_family::moe,
          .names = {{"experts", "n_routed_experts"}, {"mlp_bias", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 102400},
                                    {"hidden", 4096},
                                    {"intermediate", 11008},
                                    {"moe_intermediate", 1407},
                                    {"layers", 30},
                                    {"heads", 32},
                                    {"shared_intermediate", "=moe_intermediate"}}),
          .only = {{"kv_lora_rank", nullptr}, {"q_lora_rank", nullptr}}};
}

// DbrxConfig (databricks/dbrx-base, dbrx-instruct): d_model, n_heads, n_layers, max_seq_len at the
// top and the attention and experts in nested objects -- attn_config.kv_n_heads KV heads (Q/K/V
// fused in Wqkv, no biases), ffn_config.moe_num_experts GLU experts (w1, v1, w2: SwiGLU's count)
// of ffn_config.ffn_hidden_size, top ffn_config.moe_top_k, a router without bias, no shared
// expert and no dense layer -- two LayerNorms without bias a layer (one weight vector each: an
// RMSNorm's count) and an untied head. clip_qkv clamps activations and counts nothing. Defaults
// are DbrxConfig's and its DbrxAttentionConfig's / DbrxFFNConfig's.
family dbrx() {
  return {.model_type = "dbrx",
          .architectures = {"DbrxForCausalLM"},
          .ffn = ffn_family::moe,
          .names = {{"hidden", "d_model"},
                    {"layers", "n_layers"},
                    {"heads", "n_heads"},
                    {"kv_heads", "attn_config.kv_n_heads"},
                    {"experts", "ffn_config.moe_num_experts"},
                    {"top_k", "ffn_config.moe_top_k"},
                    {"moe_intermediate", "ffn_config.ffn_hidden_size"},
                    {"intermediate", ""},
                    {"shared_experts", ""},
                    {"first_dense", ""},
                    {"moe_freq", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"max_positions", "max_seq_len"},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 32000},
                                    {"hidden", 2048},
                                    {"layers", 24},
                                    {"heads", 16},
                                    {"kv_heads", 1},
                                    {"experts", 4},
                                    {"top_k", 1},
                                    {"moe_intermediate", 3584},
                                    {"max_positions", 2048}})};
}

// StableLmConfig (stabilityai/stablelm-2-1_6b, stablelm-3b-4e1t, stablelm-zephyr-3b): Llama's
// projections with biases on Q/K/V only (use_qkv_bias; o_proj and the SwiGLU MLP have none),
// LayerNorms with biases (two a layer and a final one), an untied head; partial_rotary_factor
// counts nothing. Three flags of StableLM 2 12B are read in one form only: use_parallel_residual
// false (true drops post_attention_layernorm), qk_layernorm false (true adds a LayerNorm per head
// on Q and K), use_norm_bias true (false drops every norm's bias).
family stablelm() {
  return {
      .model_type = "stablelm",
      .architectures = {"StableLmForCausalLM"},
      .names = {{"qkv_bias", "use_qkv_bias"},
                {"o_bias", ""},
                {"mlp_bias", ""},
                {"qk_norm", ""},
                {"window", ""}},
      .defaults = gqa_defaults({{"vocab", 50304},
                                {"hidden", 2560},
                                {"intermediate", 6912},
                                {"layers", 32},
                                {"heads", 32},
                                {"kv_heads", 32},
                                {"layer_norm", true}}),
      .only = {{"use_parallel_residual", false}, {"qk_layernorm", false}, {"use_norm_bias", true}}};
}

// BaichuanConfig (baichuan-inc Baichuan-7B/13B, Baichuan2-7B/13B; the remote code
// `configuration_baichuan.py`): Llama's layers with Q/K/V fused in W_pack, MHA, no biases, an
// untied head (Baichuan2's NormHead normalises its rows at run time: counts nothing). The 13B
// models use ALiBi instead of RoPE and give model_max_length instead of max_position_embeddings;
// neither changes the count or the cache.
family baichuan() {
  return {.model_type = "baichuan",
          .architectures = {"BaichuanForCausalLM", "BaiChuanForCausalLM"},
          .names = {{"kv_heads", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 64000},
                                    {"hidden", 4096},
                                    {"intermediate", 11008},
                                    {"layers", 32},
                                    {"heads", 32}})};
}

// MiniCPMConfig (openbmb MiniCPM-1B / 2B; the remote code `configuration_minicpm.py`; the
// released 2B configs give no model_type, so MiniCPMForCausalLM in `architectures` picks the
// table): Llama's layers with a tied head by default; scale_emb, dim_model_base and scale_depth
// scale activations and count nothing. attention_type and ffn_type are read in their released
// form only ("vanilla"). MiniCPM3 (MLA, model_type minicpm3) is another class.
family minicpm() {
  return {.model_type = "minicpm",
          .architectures = {"MiniCPMForCausalLM"},
          .names = {{"mlp_bias", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 32000},
                                    {"hidden", 4096},
                                    {"intermediate", 11008},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"tie", true}}),
          .only = {{"attention_type", "vanilla"}, {"ffn_type", "vanilla"}}};
}

// InternLM3Config (internlm/internlm3-8b-instruct; the remote code `configuration_internlm3.py`):
// Llama's layers with head_dim given, qkv_bias on Q/K/V and `bias` on o_proj and the SwiGLU MLP
// (calc's gated MLP has no biases: true is an error at `bias`), an untied head.
family internlm3() {
  return {
      .model_type = "internlm3",
      .architectures = {"InternLM3ForCausalLM"},
      .names = {{"qkv_bias", "qkv_bias"}, {"o_bias", "bias"}, {"mlp_bias", "bias"}, {"window", ""}},
      .defaults = gqa_defaults({{"vocab", 128512},
                                {"hidden", 4096},
                                {"intermediate", 11008},
                                {"layers", 32},
                                {"heads", 32}})};
}

// Olmo3Config (allenai/Olmo-3-1025-7B, Olmo-3-32B): OLMo 2's layer -- RMSNorms on Q and K over
// all heads, two post-norms -- with three sliding-window layers (sliding_window 4096) to one full
// layer, by layer_types, or by the class's default list (every 4th layer full) when absent.
family olmo3() {
  return {.model_type = "olmo3",
          .architectures = {"Olmo3ForCausalLM"},
          .layers = layer_rule::sliding_pattern,
          .names = {{"mlp_bias", ""}, {"qk_norm", ""}, {"sliding_pattern", ""}},
          .defaults = gqa_defaults({{"vocab", 50304},
                                    {"hidden", 4096},
                                    {"intermediate", 11008},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"qk_norm", true},
                                    {"qk_norm_full", true},
                                    {"window", 4096},
                                    {"sliding_pattern", 4}})};
}

}  // namespace

std::vector<family> more_families() {
  return {cohere2(),
          gemma(),
          glm_like("glm4", {"Glm4ForCausalLM"}, 4),
          glm_like("glm", {"GlmForCausalLM"}, 2),
          qwen2_vl_like("qwen2_vl", {"Qwen2VLForConditionalGeneration"}, vision_family::qwen2_vl),
          qwen2_vl_like("qwen2_5_vl", {"Qwen2_5_VLForConditionalGeneration"},
                        vision_family::qwen2_5_vl),
          dots1(),
          exaone(),
          bailing_moe(),
          gpt_neox(),
          chatglm(),
          phimoe(),
          nemotron(),
          deepseek_moe(),
          dbrx(),
          stablelm(),
          baichuan(),
          minicpm(),
          internlm3(),
          olmo3()};
}

}  // namespace calc::hf
