// The classic decoders and two 2025 Llama variants, one table each in the form of families.cpp:
// falcon, gpt_bigcode, gpt2, gptj, mpt, bloom, opt, olmo (OLMo-1), apertus, arcee. Defaults are
// those of each family's transformers configuration class; the counts follow the modules of its
// transformers modeling file. Positional schemes that store nothing (ALiBi, rotary, partial
// rotary) and wirings that change no count (parallel attention and MLP, post-norm) are said in
// each table's comment, never read.
#include "spec/hf/families.h"

#include <fmt/format.h>

#include "spec/hf/hf_json.h"

namespace calc::hf {

using nlohmann::json;

namespace {

/// A boolean field of the config, else its class default; `origin` names which.
bool flag_or(const hf_object& cfg, const std::string& key, bool fallback, std::string& origin,
             const std::string& family) {
  if (cfg.has(key)) {
    origin = key;
    return cfg.boolean(key);
  }
  origin = fmt::format("default of {} ({} absent)", family, key);
  return fallback;
}

// FalconAttention (transformers modeling_falcon.py): num_kv_heads if new_decoder_architecture or
// not multi_query, else 1. num_kv_heads defaults to num_attention_heads (FalconConfig), so a
// Falcon-7B config that says num_kv_heads 71 beside multi_query true still has one KV head.
std::int64_t falcon_kv_heads(const hf_object& cfg, std::int64_t heads, std::string& origin) {
  std::string no, mo;
  const bool grouped = flag_or(cfg, "new_decoder_architecture", false, no, "falcon");
  const bool mqa = flag_or(cfg, "multi_query", true, mo, "falcon");
  if (!grouped && mqa) {
    origin = fmt::format("1: multi-query attention ({} true, {} false{})", mo, no,
                         cfg.has("num_kv_heads") ? "; num_kv_heads is not read" : "");
    return 1;
  }
  if (cfg.has("num_kv_heads")) {
    origin = fmt::format("num_kv_heads ({})", grouped ? no + " true" : mo + " false");
    return cfg.integer("num_kv_heads");
  }
  origin = "num_attention_heads (default of falcon, num_kv_heads absent)";
  return heads;
}

// FalconDecoderLayer: ln_attn and ln_mlp when new_decoder_architecture and
// num_ln_in_parallel_attn is 2 (the layer sets None to 2 under the new architecture); else
// input_layernorm, and post_attention_layernorm only when not parallel_attn.
std::int64_t falcon_norms(const hf_object& cfg, std::string& origin) {
  std::string no, po;
  const bool grouped = flag_or(cfg, "new_decoder_architecture", false, no, "falcon");
  if (grouped) {
    std::int64_t n = cfg.has("num_ln_in_parallel_attn") ? cfg.integer("num_ln_in_parallel_attn") : 2;
    if (n == 2) {
      origin = fmt::format("ln_attn and ln_mlp ({} true, num_ln_in_parallel_attn {})", no,
                           cfg.has("num_ln_in_parallel_attn") ? "2" : "absent: 2");
      return 2;
    }
    if (n != 1)
      cfg.fail("num_ln_in_parallel_attn", fmt::format("expected 1 or 2, got {}", n));
  }
  const bool parallel = flag_or(cfg, "parallel_attn", true, po, "falcon");
  origin = parallel ? fmt::format("one input_layernorm before attention and MLP side by side ({})",
                                  po)
                    : fmt::format("input_layernorm and post_attention_layernorm ({} false)", po);
  return parallel ? 1 : 2;
}

// FalconConfig (tiiuae/falcon-7b, -40b, -180B; falcon-rw-1b/7b): the defaults are Falcon-7B's
// (vocab 65024, hidden 4544, 32 layers, 71 heads, multi_query, parallel_attn). query_key_value
// is one Linear d -> (n_Q + 2 n_KV) d_h, dense d -> d, the MLP dense_h_to_4h / dense_4h_to_h
// (ffn_hidden_size, else 4 x hidden) with GELU, all biased only when `bias`; LayerNorms with
// weight and bias; a final ln_f; lm_head without bias, tied by default. ALiBi (`alibi`, the
// RefinedWeb 1B/7B models) stores nothing and rotary counts nothing; max_position_embeddings
// (2048 by default) is the context limit. n_embed (an old spelling of hidden_size) is refused
// rather than read as the default width.
family falcon() {
  return {.model_type = "falcon",
          .architectures = {"FalconForCausalLM"},
          .dense_mlp = true,
          .names = {{"intermediate", "ffn_hidden_size"},
                    {"kv_heads", "num_kv_heads"},
                    {"head_dim", ""},
                    {"qkv_bias", "bias"},
                    {"o_bias", "bias"},
                    {"mlp_bias", "bias"},
                    {"norms", ""},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 65024},
                                    {"hidden", 4544},
                                    {"layers", 32},
                                    {"heads", 71},
                                    {"intermediate", "=4*hidden"},
                                    {"tie", true},
                                    {"layer_norm", true},
                                    {"max_positions", 2048}}),
          .only = {{"n_embed", nullptr}},
          .kv_heads_rule = falcon_kv_heads,
          .norms_rule = falcon_norms};
}

// GPTBigCodeAttention: multi_query (the class default, StarCoder's) makes one KV head, else MHA.
std::int64_t bigcode_kv_heads(const hf_object& cfg, std::int64_t heads, std::string& origin) {
  std::string mo;
  const bool mqa = flag_or(cfg, "multi_query", true, mo, "gpt_bigcode");
  origin = mqa ? fmt::format("1: multi-query attention ({})", mo)
               : fmt::format("n_head: multi-head attention ({} false)", mo);
  return mqa ? 1 : heads;
}

// The fields GPT-2 and GPT-BigCode share (GPT2Config, GPTBigCodeConfig): n_embd, n_layer,
// n_head, n_inner (null: 4 x n_embd), n_positions rows of the learned position table wpe and the
// context limit; c_attn, c_proj, c_fc and the MLP's c_proj all biased; ln_1, ln_2 and ln_f
// LayerNorms with biases; lm_head without bias, tied to wte by default.
std::map<std::string, std::string> gpt2_names() {
  return {{"hidden", "n_embd"},      {"layers", "n_layer"},       {"heads", "n_head"},
          {"intermediate", "n_inner"}, {"positions", "n_positions"}, {"max_positions", "n_positions"},
          {"head_dim", ""},          {"kv_heads", ""},            {"qkv_bias", ""},
          {"o_bias", ""},            {"mlp_bias", ""},            {"window", ""}};
}

// GPT2Config's and GPTBigCodeConfig's attribute_map: the common names stand for the n_* fields.
std::map<std::string, std::string> gpt2_aliases() {
  return {{"hidden", "hidden_size"},
          {"layers", "num_hidden_layers"},
          {"heads", "num_attention_heads"},
          {"positions", "max_position_embeddings"},
          {"max_positions", "max_position_embeddings"}};
}

json gpt2_defaults(json extra) {
  json d = gqa_defaults({{"vocab", 50257},
                         {"hidden", 768},
                         {"layers", 12},
                         {"heads", 12},
                         {"intermediate", "=4*hidden"},
                         {"positions", 1024},
                         {"position_offset", 0},
                         {"max_positions", 1024},
                         {"tie", true},
                         {"qkv_bias", true},
                         {"o_bias", true},
                         {"mlp_bias", true},
                         {"layer_norm", true}});
  for (auto& [k, v] : extra.items()) d[k] = v;
  return d;
}

// GPTBigCodeConfig (bigcode/starcoder, starcoderbase, santacoder; granite-*-code-base): GPT-2's
// layer with multi-query attention, c_attn d -> d + 2 d_h when multi_query. attention_softmax_
// in_fp32 and the scaling flags count nothing.
family gpt_bigcode() {
  return {.model_type = "gpt_bigcode",
          .architectures = {"GPTBigCodeForCausalLM"},
          .dense_mlp = true,
          .names = gpt2_names(),
          .aliases = gpt2_aliases(),
          .defaults = gpt2_defaults({}),
          .kv_heads_rule = bigcode_kv_heads};
}

// GPT2Config (openai-community/gpt2, -medium, -large, -xl; distilgpt2): multi-head attention.
// add_cross_attention (a second attention per layer, an encoder-decoder use) is read only as
// false. The causal-mask buffers (attn.bias, attn.masked_bias) older checkpoints store are not
// parameters.
family gpt2() {
  return {.model_type = "gpt2",
          .architectures = {"GPT2LMHeadModel"},
          .dense_mlp = true,
          .names = gpt2_names(),
          .aliases = gpt2_aliases(),
          .defaults = gpt2_defaults({}),
          .not_counted = "the causal-mask buffers (attn.bias, attn.masked_bias) older checkpoints "
                         "store beside the weights",
          .only = {{"add_cross_attention", false}}};
}

// GPTJConfig (EleutherAI/gpt-j-6b): attention and the MLP side by side after one LayerNorm
// (ln_1: one norm a layer, weight and bias), q/k/v/out_proj without biases, fc_in / fc_out with
// biases (n_inner, null: 4 x n_embd), ln_f, and an untied lm_head with a bias
// (tie_word_embeddings false by default). Partial rotary (rotary_dim of each head) counts
// nothing; n_positions is the context limit only.
family gptj() {
  return {.model_type = "gptj",
          .architectures = {"GPTJForCausalLM"},
          .dense_mlp = true,
          .names = {{"hidden", "n_embd"},
                    {"layers", "n_layer"},
                    {"heads", "n_head"},
                    {"intermediate", "n_inner"},
                    {"max_positions", "n_positions"},
                    {"head_dim", ""},
                    {"kv_heads", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"window", ""}},
          // GPTJConfig's attribute_map.
          .aliases = {{"hidden", "hidden_size"},
                      {"layers", "num_hidden_layers"},
                      {"heads", "num_attention_heads"},
                      {"max_positions", "max_position_embeddings"}},
          .defaults = gqa_defaults({{"vocab", 50400},
                                    {"hidden", 4096},
                                    {"layers", 28},
                                    {"heads", 16},
                                    {"intermediate", "=4*hidden"},
                                    {"max_positions", 2048},
                                    {"mlp_bias", true},
                                    {"norms", 1},
                                    {"layer_norm", true},
                                    {"head_bias", true}})};
}

// MPT's attention is multi-head in transformers' MptAttention, which reads neither a grouped
// attn_config.attn_type (llm-foundry's grouped_query_attention, kv_n_heads) nor Q/K LayerNorms
// (attn_config.qk_ln): either is an error at that field rather than read as plain MHA.
std::int64_t mpt_kv_heads(const hf_object& cfg, std::int64_t heads, std::string& origin) {
  if (cfg.has("attn_config") && cfg.value("attn_config").is_object()) {
    hf_object a = cfg.object("attn_config");
    if (a.has("attn_type") && a.text("attn_type") != "multihead_attention")
      a.fail("attn_type", fmt::format("mpt is read only with multihead_attention (got \"{}\")",
                                      a.text("attn_type")));
    if (a.has("qk_ln") && a.boolean("qk_ln"))
      a.fail("qk_ln", "Q/K LayerNorms are not read for mpt (expected false)");
  }
  origin = "n_heads: multi-head attention";
  return heads;
}

// MptConfig (mosaicml/mpt-7b, mpt-30b; transformers modeling_mpt.py): Wqkv d -> 3d and out_proj,
// up_proj / down_proj of expansion_ratio x d_model, all without biases (no_bias, read only as
// true); norm_1, norm_2 and norm_f are LayerNorms whose bias the model removes, so each stores
// one weight vector (counted as calc's weight-only norm); a tied head. ALiBi (attn_config.alibi)
// stores nothing, so no position table is counted (transformers' MptModel builds none);
// clip_qkv and softmax_scale count nothing. max_seq_len is the context limit.
family mpt() {
  return {.model_type = "mpt",
          .architectures = {"MptForCausalLM", "MPTForCausalLM"},
          .dense_mlp = true,
          .names = {{"hidden", "d_model"},
                    {"layers", "n_layers"},
                    {"heads", "n_heads"},
                    {"intermediate", ""},
                    {"expansion", "expansion_ratio"},
                    {"max_positions", "max_seq_len"},
                    {"head_dim", ""},
                    {"kv_heads", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"window", ""}},
          // MptConfig's attribute_map.
          .aliases = {{"hidden", "hidden_size"},
                      {"layers", "num_hidden_layers"},
                      {"heads", "num_attention_heads"}},
          .defaults = gqa_defaults({{"vocab", 50368},
                                    {"hidden", 2048},
                                    {"layers", 24},
                                    {"heads", 16},
                                    {"expansion", 4},
                                    {"intermediate", "=expansion*hidden"},
                                    {"max_positions", 2048},
                                    {"tie", true}}),
          .only = {{"no_bias", true}},
          .kv_heads_rule = mpt_kv_heads};
}

// BloomConfig (bigscience/bloom, bloom-560m ... bloom-7b1, bloomz): query_key_value d -> 3d and
// dense d -> d with biases, dense_h_to_4h / dense_4h_to_h of 4 x hidden with biases,
// input_layernorm and post_attention_layernorm, word_embeddings_layernorm after the embedding
// (embedding_norm) and ln_f, all LayerNorms with biases; lm_head tied to the embedding. ALiBi
// stores nothing. n_layer and n_head are the config's names; BLOOM gives no context limit
// (ALiBi extrapolates), so none is written.
family bloom() {
  return {.model_type = "bloom",
          .architectures = {"BloomForCausalLM"},
          .dense_mlp = true,
          .names = {{"layers", "n_layer"},
                    {"heads", "n_head"},
                    {"intermediate", ""},
                    {"head_dim", ""},
                    {"kv_heads", ""},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"max_positions", ""},
                    {"window", ""}},
          // BloomConfig's attribute_map.
          .aliases = {{"layers", "num_hidden_layers"}, {"heads", "num_attention_heads"}},
          .defaults = gqa_defaults({{"vocab", 250880},
                                    {"hidden", 64},
                                    {"layers", 2},
                                    {"heads", 8},
                                    {"intermediate", "=4*hidden"},
                                    {"tie", true},
                                    {"qkv_bias", true},
                                    {"o_bias", true},
                                    {"mlp_bias", true},
                                    {"layer_norm", true},
                                    {"embedding_norm", true}}),
          .only = {{"n_embed", nullptr}}};
}

// OPTConfig (facebook/opt-125m ... opt-66b): q/k/v/out_proj and fc1 / fc2 (ffn_dim) biased by
// enable_bias; self_attn_layer_norm and final_layer_norm in every layer (LayerNorms with biases,
// layer_norm_elementwise_affine read only as true); the decoder's final_layer_norm only when
// do_layer_norm_before (OPT-350m's post-norm has none); embed_positions, a learned table of
// max_position_embeddings + 2 rows (OPTLearnedPositionalEmbedding's offset); a tied head.
// word_embed_proj_dim other than hidden_size (OPT-350m's project_in / project_out, d <-> 512)
// is an error at that field: the projections are not read.
family opt() {
  return {.model_type = "opt",
          .architectures = {"OPTForCausalLM"},
          .dense_mlp = true,
          .names = {{"intermediate", "ffn_dim"},
                    {"positions", "max_position_embeddings"},
                    {"final_norm", "do_layer_norm_before"},
                    {"embed_proj", "word_embed_proj_dim"},
                    {"head_dim", ""},
                    {"kv_heads", ""},
                    {"qkv_bias", "enable_bias"},
                    {"o_bias", "enable_bias"},
                    {"mlp_bias", "enable_bias"},
                    {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 50272},
                                    {"hidden", 768},
                                    {"layers", 12},
                                    {"heads", 12},
                                    {"intermediate", 3072},
                                    {"positions", 2048},
                                    {"position_offset", 2},
                                    {"max_positions", 2048},
                                    {"final_norm", true},
                                    {"embed_proj", "=hidden"},
                                    {"tie", true},
                                    {"qkv_bias", true},
                                    {"o_bias", true},
                                    {"mlp_bias", true},
                                    {"layer_norm", true}}),
          .only = {{"layer_norm_elementwise_affine", true}, {"_remove_final_layer_norm", false}}};
}

// OlmoConfig (allenai/OLMo-1B-hf, OLMo-7B-hf, OLMo-7B-0424/0724-hf): Llama's projections and
// SwiGLU MLP with OlmoLayerNorm, a LayerNorm without weight or bias: the two norms a layer and
// the final one store nothing (norms 0, final_norm false). attention_bias on Q/K/V and O;
// clip_qkv clamps activations and counts nothing.
family olmo() {
  return {.model_type = "olmo",
          .architectures = {"OlmoForCausalLM"},
          .names = {{"mlp_bias", ""}, {"norms", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 50304},
                                    {"hidden", 4096},
                                    {"intermediate", 11008},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"max_positions", 2048},
                                    {"norms", 0},
                                    {"final_norm", false}})};
}

// ArceeConfig (arcee-ai/AFM-4.5B): Llama's layers with an ungated MLP, up_proj and down_proj
// around ReLU^2 (hidden_act relu2, read in that form only): two matrices where SwiGLU has three.
// head_dim given, else hidden / heads; mlp_bias on up/down; attention_bias on Q/K/V and O. No
// class default is taken for the widths: a config that leaves one out is an error.
family arcee() {
  return {.model_type = "arcee",
          .architectures = {"ArceeForCausalLM"},
          .dense_mlp = true,
          .names = {{"window", ""}},
          .defaults = gqa_defaults({}),
          .only = {{"hidden_act", "relu2"}}};
}

// ApertusConfig (swiss-ai/Apertus-8B, -70B; transformers modeling_apertus.py): Llama's
// attention with per-head RMSNorms on Q and K (q_norm, k_norm of head_dim), which
// ApertusAttention builds whatever the config says (the published configs' `qk_norm` is not
// read: the norms are fixed, never taken from that field); an ungated MLP up_proj / down_proj
// around xIELU (hidden_act xielu, read in that form only), whose XIELUActivation holds two learned scalars per layer, alpha_p
// and alpha_n (activation_params 2), and two buffers beta and eps that checkpoints store but are
// not parameters. attention_layernorm and feedforward_layernorm, a final norm, an untied head.
// post_norm moves the norms and counts the same. Defaults: ApertusConfig's.
family apertus() {
  return {.model_type = "apertus",
          .architectures = {"ApertusForCausalLM"},
          .dense_mlp = true,
          .names = {{"qk_norm", ""}, {"window", ""}},
          .defaults = gqa_defaults({{"vocab", 131072},
                                    {"hidden", 4096},
                                    {"intermediate", 14336},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"max_positions", 65536},
                                    {"qk_norm", true},
                                    {"activation_params", 2}}),
          .not_counted = "xIELU's beta and eps buffers (two scalars a layer the checkpoint stores)",
          .only = {{"hidden_act", "xielu"}}};
}

}  // namespace

std::vector<family> classic_families() {
  return {falcon(), gpt_bigcode(), gpt2(), gptj(), mpt(), bloom(), opt(), olmo(), apertus(),
          arcee()};
}

}  // namespace calc::hf
