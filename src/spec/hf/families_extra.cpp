// Hunyuan (dense and MoE) and ERNIE 4.5 dense: one table each, in the form of families.cpp
// (defaults are those of each family's configuration class; a field that would change memory and
// that the table does not read is pinned in `only`, so another value is an error at that field).
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// The fields both Hunyuan V1 tables read in one form only. use_cla (cross-layer attention: the
// layers of each cla_share_factor group past the first read the first one's keys and values and
// have no k_proj / v_proj) is false in every published Hunyuan V1 config (Hunyuan-7B, the
// Hunyuan-A13B release in Tencent-Hunyuan/Hunyuan-A13B models/config.json, HunyuanImage-2.1's
// reprompt model), so cla_share_factor, which those files also carry, changes nothing; a config
// with use_cla true is an error at that field rather than read without its sharing. use_mla
// false: the multi-head latent attention fields (kv_lora_rank, ...) are null in the same files.
std::map<std::string, json> hunyuan_pins() {
  return {{"use_cla", false}, {"use_mla", false}, {"kv_lora_rank", nullptr}};
}

// Hunyuan V1's shared defaults: GQA with head_dim given (else hidden / heads), attention_bias
// on Q/K/V and O, per-head RMSNorms on Q and K after RoPE (query_layernorm / key_layernorm,
// head_dim each) where use_qk_norm, the SwiGLU MLP, two RMSNorms a layer. No default is taken
// for the widths or the tie: a config that leaves one out is an error.
json hunyuan_defaults(json extra) {
  json d = gqa_defaults(std::move(extra));
  d.erase("tie");
  return d;
}

// HunYuanDenseV1Config (tencent/Hunyuan-0.5B/1.8B/4B/7B, Hunyuan-MT-7B): Llama's layers with
// the per-head Q/K RMSNorms (use_qk_norm). The dynamic NTK-alpha RoPE (rope_scaling.alpha)
// counts nothing.
family hunyuan_v1_dense() {
  return {.model_type = "hunyuan_v1_dense",
          .architectures = {"HunYuanDenseV1ForCausalLM"},
          .names = {{"qk_norm", "use_qk_norm"}, {"window", ""}},
          .defaults = hunyuan_defaults({{"qk_norm", true}}),
          .only = hunyuan_pins()};
}

// HunYuanMoEV1Config (tencent/Hunyuan-A13B-Instruct / -Pretrain): Hunyuan's attention with a MoE
// on every layer: num_experts routed experts of moe_intermediate_size, top moe_topk, a router
// (wg) without bias, and -- where use_mixed_mlp_moe -- a shared SwiGLU MLP of intermediate_size
// x num_shared_expert (counted as num_shared_expert shared experts of intermediate_size: the same
// matrices). The published configs list moe_topk, moe_intermediate_size and num_shared_expert
// per layer, all alike; a list whose entries differ is an error at the field. Layers without
// experts (moe_layer_num_skipped) and a MoE without the shared MLP are read in one form only.
family hunyuan_v1_moe() {
  std::map<std::string, json> only = hunyuan_pins();
  only["use_mixed_mlp_moe"] = true;
  only["moe_layer_num_skipped"] = 0;
  return {.model_type = "hunyuan_v1_moe",
          .architectures = {"HunYuanMoEV1ForCausalLM"},
          .ffn = ffn_family::moe,
          .names = {{"qk_norm", "use_qk_norm"},
                    {"top_k", "moe_topk"},
                    {"shared_experts", "num_shared_expert"},
                    {"shared_intermediate", ""},
                    {"first_dense", ""},
                    {"moe_freq", ""},
                    {"sparse_step", ""},
                    {"mlp_only", ""},
                    {"mtp_layers", ""},
                    {"window", ""}},
          .defaults = hunyuan_defaults({{"qk_norm", true},
                                        {"shared_experts", 1},
                                        {"shared_intermediate", "=intermediate"}}),
          .only = std::move(only),
          .per_layer_lists = {"top_k", "moe_intermediate", "shared_experts"}};
}

// Ernie4_5Config (baidu/ERNIE-4.5-0.3B-PT / -Base-PT; the remote code's Ernie4_5_ForCausalLM
// alike): Llama's layers -- GQA with head_dim given apart from hidden / heads, the SwiGLU MLP,
// two RMSNorms a layer -- with one use_bias flag for Q/K/V, O and the MLP (calc's gated MLP has
// no biases: true is an error at use_bias), a tied head by the class default. The MoE models
// (ernie4_5_moe, families.cpp) share the attention. No default is taken for KV heads or head_dim:
// the class's own (2 and 128) fit only the 0.3B, so a config that leaves them out is an error.
family ernie4_5() {
  json d = gqa_defaults({{"tie", true}});
  d.erase("kv_heads");
  d.erase("head_dim");
  return {.model_type = "ernie4_5",
          .architectures = {"Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM"},
          .names = {{"qkv_bias", "use_bias"},
                    {"o_bias", "use_bias"},
                    {"mlp_bias", "use_bias"},
                    {"window", ""}},
          .defaults = std::move(d)};
}

}  // namespace

std::vector<family> extra_families() {
  return {hunyuan_v1_dense(), hunyuan_v1_moe(), ernie4_5()};
}

}  // namespace calc::hf
