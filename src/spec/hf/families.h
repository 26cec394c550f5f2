// The Hugging Face architecture families calc reads, one table each (families.cpp).
//
// A family is chosen by `model_type` (or, failing that, by `architectures`). Its table says which
// kind of attention and feed-forward the layers have, how the config marks which layer is which,
// which config field holds each quantity where the name differs from the common one, and the
// family's documented defaults (those of its transformers configuration class) for fields a
// config may leave out. The translator (import.cpp) is the same for every family.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace calc::hf {

class hf_object;

enum class attention_family { gqa, mla };
enum class ffn_family { dense, moe };
/// The kind of a family's linear-attention layers.
/// lightning: MiniMax's lightning attention (`kind: lightning`), a fixed per-head decay.
enum class linear_family { gated_deltanet, kda, lightning };
/// The kind of a family's state-space mixers: Mamba2's SSD, Mamba-1's S6 (Mamba, Falcon-Mamba,
/// Jamba), written `kind: mamba`, or LFM2's gated short convolution, `kind: short_conv`.
enum class ssm_family { mamba2, mamba1, short_conv };

/// The vision tower a multimodal wrapper's vision_config describes (vision.cpp reads each from
/// its reference implementation's layout); none: not counted, said in the YAML header.
enum class vision_family {
  none,
  qwen2_vl,    // Qwen2-VL: LayerNorm blocks, fc1/fc2 MLP, PatchMerger (LayerNorm ln_q)
  qwen2_5_vl,  // Qwen2.5-VL: RMSNorm blocks, gated MLP with biases, PatchMerger (RMSNorm ln_q)
  qwen3_vl,    // Qwen3-VL: patch bias, position table, LayerNorm blocks, merger + DeepStack
  qwen3_5,     // Qwen3.5 / 3.6: Qwen3-VL's tower without DeepStack mergers by default
  siglip,      // Gemma 3: SigLIP without its pooling head, RMSNorm + one projection matrix
  pixtral,     // Mistral 3: Pixtral (RMSNorm, gated MLP) and the patch-merger projector
  llama4,      // Llama 4: class token, LayerNorm pre/post, pixel-shuffle MLP and projector
  moonvit,     // Kimi-K2.5: MoonViT3d (learned 2-D position grid, packed qkv) and its patch merger
  llava,       // LLaVA: CLIP ViT (class token, pre/post LayerNorm) and the two-layer projector
  llava_next,  // LLaVA-NeXT: LLaVA's tower and projector and the image_newline vector
  glm4v,       // GLM-4.5V: Conv3d patches, RMSNorm blocks with a gated MLP, downsample and merger
};

/// How a config marks each layer's attention when it has no `layer_types` list.
enum class layer_rule {
  uniform,            // every layer alike; sliding everywhere when a window is set (Mistral v0.1)
  window_from,        // Qwen2/3: sliding from max_window_layers on, only when use_sliding_window
  alternate_sliding,  // Gemma 2: even layers sliding, odd layers full
  sliding_pattern,    // Gemma 3: every sliding_window_pattern-th layer full, the others sliding
  linear_interval,    // Qwen3-Next: every full_attention_interval-th layer full, the others GDN
  hybrid_pattern,     // Nemotron-H: hybrid_override_pattern, one character per layer
  mixer_only,         // Mamba2: every layer a Mamba2 mixer and nothing else
  parallel_hybrid,    // Falcon-H1: every layer attention and a Mamba2 mixer side by side, then
                      // the feed-forward (attn_layer_indices, where set, is not read: an error)
  layer_lists,        // Kimi Linear: 1-based lists of full-attention and linear (KDA) layers
  typed_hybrid,       // Granite 4.0-H: layer_types says "mamba" (a Mamba2 mixer) or "attention"
                      // per layer; every layer then has the feed-forward (routed experts and
                      // the shared MLP, or the shared MLP alone when there are no experts)
  chunked_nope,       // Llama 4: no_rope_layers (1 = RoPE, 0 = NoPE) per layer, else a NoPE layer
                      // every no_rope_layer_interval-th; RoPE layers attend within their
                      // attention_chunk_size chunk, NoPE layers over the whole history
  // State-space hybrids read since (families_ssm.cpp):
  period_hybrid,   // Jamba: attention where i % attn_layer_period == attn_layer_offset, a Mamba
                   // mixer elsewhere; every layer then has the feed-forward, MoE where
                   // i % expert_layer_period == expert_layer_offset (num_experts > 1), else dense
  indexed_hybrid,  // Bamba: attention on the 0-based attn_layer_indices, a Mamba2 mixer
                   // elsewhere; every layer then has the dense feed-forward
  conv_hybrid,     // LFM2: layer_types says "conv" (a short convolution) or "full_attention",
                   // else full_attn_idxs lists the attention layers; every layer then has the
                   // dense feed-forward
  // Phi-3-small (families_phi3small.cpp):
  dense_every,  // layer i attends densely when (i + 1) % dense_attention_every_n_layers == 0
                // (0: never), block-sparsely otherwise (blocksparse_* fields)
  // Lightning-attention hybrids (families_minimax.cpp):
  type_list,  // MiniMax-Text-01 / M1: attn_type_list, one code per layer, 0 a linear (lightning)
              // layer and 1 softmax attention
  // Recent families (families_recent.cpp):
  sliding_flags,  // MiMo-V2-Flash: hybrid_layer_pattern, one entry per layer, 1 sliding, 0 full
};

/// One architecture family: the table the translator reads.
struct family {
  std::string model_type;
  std::vector<std::string> architectures;
  std::string scope;  // object holding the text model ("text_config"); "" = the document itself
  attention_family attention = attention_family::gqa;
  ffn_family ffn = ffn_family::dense;
  layer_rule layers = layer_rule::uniform;
  linear_family linear = linear_family::gated_deltanet;
  ssm_family ssm = ssm_family::mamba2;
  bool dense_mlp = false;  // dense feed-forward is up/down without a gate (Nemotron-H's relu2)
  /// Role -> config field where it differs from common_names(); "" = no field (always the
  /// family default); "a.b" = field b of the nested object a (linear_attn_config.num_heads).
  std::map<std::string, std::string> names;
  /// Role -> a second config field the configuration class also accepts for it (its
  /// attribute_map: GPT-2's num_hidden_layers for n_layer), read when the role's own field is
  /// absent. Both given with different values is an error at the second field.
  std::map<std::string, std::string> aliases;
  /// Role -> documented default. A string "=a/b" or "=a" is derived from other roles
  /// (head_dim = hidden / heads). A role with no default and no field value is an error.
  nlohmann::json defaults;
  std::string not_counted;  // parts of the checkpoint the import leaves out, said in the YAML
  /// The format an FP8 block-quantised checkpoint of this family stores its block scales in
  /// (weight_scale_inv): DeepSeek's FP32, Qwen's BF16. The config does not say it.
  std::string fp8_block_scale = "fp32";
  /// The format the family's checkpoints store the MoE routing bias (e_score_correction_bias) in,
  /// when wider than its norms: DeepSeek's reference Gate makes it a float32 Parameter, and the
  /// published files of DeepSeek-V3.x/R1, GLM-4.5, GLM-5.x, MiniMax-M2.5 and Nemotron-3-Nano store
  /// it F32.
  /// "" = the norms' format. The safetensors headers decide when present.
  std::string router_bias_dtype;
  /// The same for a Mamba2 mixer's A_log and D (F32 in Nemotron-H's files); "" = the norms'.
  std::string ssm_params_dtype;
  /// The format the family's FP8 checkpoints store the MoE router (`*.gate.weight`) in, where it
  /// is the only matrix left in `weights` (every other one quantised under its own role):
  /// MiniMax-M2, M2.5 and M2.7 keep it F32. "" = the model dtype. The headers decide when
  /// present.
  std::string router_dtype;
  /// Set for a family calc recognises but cannot read exactly: why, said at the first field of
  /// `refused_at` that the config gives, else at model_type. Never a silent approximation.
  std::string refused;
  std::vector<std::string> refused_at;
  /// Config fields the table reads in one form only: field -> the value it must have when the
  /// config gives it (a list: every element must be that value). Any other value is an error at
  /// the field, never read as this family (MiniMax-M2's qk_norm_type must be per_layer, every
  /// entry of attn_type_list 1, full softmax attention).
  std::map<std::string, nlohmann::json> only;
  /// Roles whose config field may be a list with one entry per layer (Hunyuan's moe_topk,
  /// moe_intermediate_size, num_shared_expert): read when every entry is the same value, an
  /// error at the field when they differ (calc would need a variant per layer).
  std::vector<std::string> per_layer_lists;
  /// The vision tower beside the text model, counted as a component (`components`).
  vision_family vision = vision_family::none;
  /// The quantisation method (quant_method) whose releases of this family store the vision tower
  /// and projector in the model dtype whatever modules the quantisation config targets
  /// (Kimi-K2.5's compressed-tensors int4 release targets every Linear and ignores no vision
  /// module, yet its tensor listing holds every vision_tower and mm_projector tensor in BF16).
  /// Under any other method, or "" (none), the exclusion lists must cover the tower.
  std::string vision_unquantised_method;
  /// A wrapper (families_wrappers.cpp): its text model is another family's, the one
  /// text_config.model_type names, or this one when text_config names none (the configuration
  /// class's default). Empty: the family reads its text model itself.
  std::string text_family;
  /// Set on the family a wrapper's text model is read by: the wrapper's model_type (for the
  /// YAML header). Empty otherwise.
  std::string wrapper;
  /// A family whose KV head count follows flags rather than one field (Falcon's multi_query and
  /// new_decoder_architecture, GPT-BigCode's multi_query): the count given the query heads, and
  /// where it came from in `origin`. Null: the `kv_heads` role.
  std::int64_t (*kv_heads_rule)(const hf_object& cfg, std::int64_t heads,
                                std::string& origin) = nullptr;
  /// A family whose norms per layer follow flags rather than one field (Falcon: one LayerNorm
  /// before parallel attention and MLP, two in the new decoder architecture). Null: `norms`.
  std::int64_t (*norms_rule)(const hf_object& cfg, std::string& origin) = nullptr;
};

/// The defaults every dense GQA family shares, `extra` replacing some (families.cpp).
nlohmann::json gqa_defaults(nlohmann::json extra);

/// Qwen2's table under `model_type` and `archs`: families publishing Qwen2's main model under
/// their own name (MiMo) share it rather than copy it.
family qwen2_like(std::string model_type, std::vector<std::string> archs);

/// The dense and MoE transformer families read since issue 21's fourth round (cohere2, glm4,
/// glm, gemma, ...; families_more.cpp), listed after the others.
std::vector<family> more_families();

/// Hunyuan and ERNIE 4.5 dense (hunyuan_v1_dense, hunyuan_v1_moe, ernie4_5;
/// families_extra.cpp), listed after those of more_families().
std::vector<family> extra_families();

/// The config field of each role, shared by most families (e.g. heads -> num_attention_heads).
const std::map<std::string, std::string>& common_names();

/// Every family, in the order `calc import` lists them.
const std::vector<family>& families();

/// The source file under src/spec/hf/ that holds `model_type`'s table (families.cpp,
/// families_more.cpp, families_extra.cpp, families_ssm.cpp, families_classic.cpp, ...), for the
/// header `calc import` writes.
std::string family_table_file(const std::string& model_type);

/// The lightning-attention families (families_minimax.cpp): minimax_text_01, minimax_m1;
/// families() lists them after the state-space ones.
std::vector<family> minimax_families();

/// Phi-3-small (families_phi3small.cpp): phi3small; families() lists it after the minimax ones.
std::vector<family> phi3small_families();

/// Recent text-only families (families_recent.cpp): mimo, afmoe, mimo_v2_flash, ...; families()
/// lists them after the phi3small one.
std::vector<family> recent_families();
/// The classic decoders (families_classic.cpp): falcon, gpt_bigcode, gpt2, gptj, olmo, ...;
/// families() lists them last of all, after the wrappers.
std::vector<family> classic_families();

/// The state-space families read since the first hybrids (families_ssm.cpp): jamba, mamba,
/// falcon_mamba, bamba, lfm2; families() lists them first after the own and more/extra tables
/// (then minimax, phi3small, recent, wrappers, classic).
std::vector<family> ssm_families();

/// The multimodal wrappers whose text model is another family's (families_wrappers.cpp): llava,
/// llava_next, glm4v_moe; families() lists them after the recent ones.
std::vector<family> wrapper_families();

/// The family that reads a wrapper's text model: the table text_config.model_type names (else
/// the wrapper's default), reading text_config, with the wrapper's vision tower and the text
/// configuration class's defaults where the table has none (a wrapper's text_config often lists
/// only what differs from them). A text model_type calc does not read as a plain text family is
/// an error at text_config.model_type.
family wrapped_text_family(const family& wrapper, const hf_object& root);

/// The family of a config: by model_type, else by its first architecture; null when none fits.
const family* find_family(const std::string& model_type, const std::vector<std::string>& archs);

/// The family whose architecture class the config's `architectures` names (the first that one
/// knows), and that class in `matched`; null when none. For a model_type calc does not know.
const family* find_family_by_architecture(const std::vector<std::string>& archs,
                                          std::string& matched);

/// "llama, mistral, ..." for error messages: the families read (refused ones left out).
std::string family_names();

}  // namespace calc::hf
