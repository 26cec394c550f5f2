// Vision towers from vision_config, one reader per layout (families.h's vision_family). Each
// layout is the module tree of its transformers reference implementation, written as shapes:
// modeling_qwen2_vl.py (Qwen2VisionTransformerPretrainedModel), modeling_qwen2_5_vl.py,
// modeling_qwen3_vl.py (with DeepStack mergers), modeling_qwen3_5.py, modeling_siglip.py with
// modeling_gemma3.py's Gemma3MultiModalProjector, modeling_pixtral.py with modeling_mistral3.py's
// Mistral3MultiModalProjector, modeling_llama4.py (Llama4VisionModel, Llama4MultiModalProjector),
// Kimi-K2.5's own modeling_kimi_k25.py (MoonViT3dPretrainedModel, PatchMergerMLP),
// modeling_clip.py with modeling_llava.py / modeling_llava_next.py, and modeling_glm4v_moe.py.
// A field a published config leaves out takes its configuration class's default, named in the
// comment, where the class's default is known; else it is required. Parameter counts follow in
// src/tally/component.cpp.
#include "spec/hf/vision.h"

#include "common/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace calc::hf {

namespace {

using nlohmann::json;

/// Reads sizes of one vision_config, each with the field it came from.
class vision_fields {
 public:
  vision_fields(const hf_object& o, std::string cls) : o_(o), cls_(std::move(cls)) {}

  /// The first of `keys` the config gives (a positive integer), else `fallback` as the class
  /// default; neither is an error at the first key.
  std::int64_t size(std::initializer_list<const char*> keys, std::optional<std::int64_t> fallback,
                    std::string& origin) const {
    for (const char* k : keys)
      if (o_.has(k)) {
        std::int64_t v = o_.integer(k);
        if (v <= 0) o_.fail(k, fmt::format("must be positive, got {}", v));
        if (v > limits::max_vision_size)
          o_.fail(k, fmt::format("{} is above the limit of {} for a vision tower's size", v,
                                 limits::max_vision_size));
        origin = o_.path_of(k);
        return v;
      }
    const char* first = *keys.begin();
    if (!fallback) o_.fail(first, "missing required field (the vision tower's shapes need it)");
    origin = fmt::format("default of {} ({} absent)", cls_, o_.path_of(first));
    return *fallback;
  }
  /// A boolean field, else the class default.
  bool flag(const char* key, bool fallback, std::string& origin) const {
    if (o_.has(key)) {
      origin = o_.path_of(key);
      return o_.boolean(key);
    }
    origin = fmt::format("default of {} ({} absent)", cls_, o_.path_of(key));
    return fallback;
  }
  /// How many entries a list field has, else `fallback`.
  std::int64_t list_size(const char* key, std::int64_t fallback, std::string& origin) const {
    if (o_.has(key)) {
      o_.integers(key);  // a list of non-negative layer indices, or a located error
      origin = o_.path_of(key);
      return static_cast<std::int64_t>(o_.value(key).size());
    }
    origin = fmt::format("default of {} ({} absent: {} entries)", cls_, o_.path_of(key), fallback);
    return fallback;
  }
  const hf_object& object() const { return o_; }

 private:
  const hf_object& o_;
  std::string cls_;
};

/// A width (or position count) the reader makes as a product of config sizes (a merger's hidden x
/// merge x merge), each within max_vision_size but not their product: above that limit too, an
/// error at `key`, the factor the product grows by, rather than a tower of absurd size.
std::int64_t bounded(const hf_object& o, const char* key, std::int64_t product,
                     const std::string& what) {
  if (product > limits::max_vision_size)
    o.fail(key, fmt::format("makes {} {}, above the limit of {} for a vision tower's size", what,
                            product, limits::max_vision_size));
  return product;
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

vision_line line(std::string key, std::int64_t v, std::string why) {
  return {std::move(key), std::to_string(v), std::move(why)};
}
vision_line line(std::string key, bool v, std::string why) {
  return {std::move(key), bool_text(v), std::move(why)};
}
/// A line of a size read through `f`: the value first, then its origin (function arguments are
/// evaluated in no fixed order, so the origin is never read beside the call that sets it).
vision_line sized(const vision_fields& f, std::string key, std::initializer_list<const char*> keys,
                  std::optional<std::int64_t> fallback) {
  std::string origin;
  std::int64_t v = f.size(keys, fallback, origin);
  return line(std::move(key), v, origin);
}

vision_line word(std::string key, std::string v, std::string why) {
  return {std::move(key), std::move(v), std::move(why)};
}

vision_line linear(std::int64_t in, std::int64_t out, bool bias, std::string why,
                   std::int64_t count = 1) {
  std::string v = fmt::format("{{linear: [{}, {}]{}{}}}", in, out, bias ? ", bias: true" : "",
                              count != 1 ? fmt::format(", count: {}", count) : "");
  return {"", v, std::move(why)};
}
vision_line norm(std::int64_t width, bool bias, std::string why, std::int64_t count = 1) {
  std::string v = fmt::format("{{norm: {}{}{}}}", width, bias ? ", bias: true" : "",
                              count != 1 ? fmt::format(", count: {}", count) : "");
  return {"", v, std::move(why)};
}

vision_line vector(std::int64_t width, std::string why) {
  return {"", fmt::format("{{vector: {}}}", width), std::move(why)};
}

/// The shared encoder fields: the block widths and the block's fixed layout.
struct encoder {
  std::int64_t layers, hidden, intermediate, heads;
  std::string layers_o, hidden_o, intermediate_o, heads_o;
  bool gated, layer_norm, attention_bias, mlp_bias;
  std::string layout;  // the modules the flags stand for, said once
};

void push_encoder(vision_read& r, const encoder& e) {
  r.fields.push_back(line("layers", e.layers, e.layers_o));
  r.fields.push_back(line("hidden", e.hidden, e.hidden_o));
  r.fields.push_back(line("intermediate", e.intermediate, e.intermediate_o));
  r.fields.push_back(line("heads", e.heads, e.heads_o));
  r.fields.push_back(word("mlp", e.gated ? "gated" : "plain", e.layout));
  r.fields.push_back(word("norm", e.layer_norm ? "layernorm" : "rmsnorm", e.layout));
  r.fields.push_back(line("attention_bias", e.attention_bias, e.layout));
  r.fields.push_back(line("mlp_bias", e.mlp_bias, e.layout));
}

/// The encoder's attention heads (`key`, else `fallback`), which must divide its width.
std::int64_t heads_of(const vision_fields& f, const char* key,
                      std::optional<std::int64_t> fallback, std::int64_t hidden,
                      std::string& origin) {
  std::int64_t heads = f.size({key}, fallback, origin);
  if (hidden % heads != 0)
    f.object().fail(key, fmt::format("{} heads do not divide the width {}", heads, hidden));
  return heads;
}

/// A ViT of LayerNorms and plain MLPs with biases everywhere (SigLIP, Llama 4), sized by
/// num_hidden_layers, hidden_size, intermediate_size and num_attention_heads (else the class
/// defaults given).
encoder biased_encoder(const vision_fields& f, std::int64_t layers, std::int64_t hidden,
                       std::int64_t intermediate, std::int64_t heads, std::string layout) {
  encoder e{};
  e.layers = f.size({"num_hidden_layers"}, layers, e.layers_o);
  e.hidden = f.size({"hidden_size"}, hidden, e.hidden_o);
  e.intermediate = f.size({"intermediate_size"}, intermediate, e.intermediate_o);
  e.heads = heads_of(f, "num_attention_heads", heads, e.hidden, e.heads_o);
  e.gated = false;
  e.layer_norm = true;
  e.attention_bias = true;
  e.mlp_bias = true;
  e.layout = std::move(layout);
  return e;
}

/// A square image's patches: (image_size / patch_size)^2, each size else its class default.
struct patch_grid {
  std::int64_t patch, patches;
  std::string patch_o, patches_o;
};
patch_grid grid_of(const vision_fields& f, std::int64_t image_default,
                   std::int64_t patch_default) {
  std::string image_o, patch_o;
  std::int64_t image = f.size({"image_size"}, image_default, image_o);
  std::int64_t patch = f.size({"patch_size"}, patch_default, patch_o);
  bounded(f.object(), "image_size", (image / patch) * (image / patch),
          "a position table of (image / patch)^2");
  return {patch, (image / patch) * (image / patch), patch_o,
          fmt::format("({} / {})^2 patches", image_o, patch_o)};
}

/// Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5: a Conv3d patch embedding of in_channels x
/// temporal_patch_size x patch_size^2, `depth` blocks, and a merger from spatial_merge_size^2
/// patches (LayerNorm or RMSNorm of the tower's width, fc1 of m^2 w -> m^2 w, fc2 -> out).
void read_qwen(vision_family fam, const hf_object& vc, vision_read& r) {
  const bool q2 = fam == vision_family::qwen2_vl, q25 = fam == vision_family::qwen2_5_vl;
  const bool q3 = fam == vision_family::qwen3_vl || fam == vision_family::qwen3_5;
  const std::string cls = q2    ? "Qwen2VLVisionConfig"
                          : q25 ? "Qwen2_5_VLVisionConfig"
                          : fam == vision_family::qwen3_vl ? "Qwen3VLVisionConfig"
                                                           : "Qwen3_5VisionConfig";
  vision_fields f(vc, cls);
  std::string o;
  encoder e{};
  e.layers = f.size({"depth"}, q3 ? 27 : 32, e.layers_o);
  if (q2) {
    e.hidden = f.size({"embed_dim"}, 1280, e.hidden_o);
    std::string ratio_o;
    std::int64_t ratio = f.size({"mlp_ratio"}, 4, ratio_o);
    e.intermediate = e.hidden * ratio;
    e.intermediate_o = fmt::format("{} x {}", e.hidden_o, ratio_o);
  } else {
    e.hidden = f.size({"hidden_size"}, q25 ? 3584 : 1152, e.hidden_o);
    e.intermediate = f.size({"intermediate_size"}, q25 ? 3420 : 4304, e.intermediate_o);
  }
  e.heads = heads_of(f, "num_heads", 16, e.hidden, e.heads_o);
  e.gated = q25;
  e.layer_norm = !q25;
  e.attention_bias = true;
  e.mlp_bias = true;
  e.layout = q2    ? "Qwen2VLVisionBlock: LayerNorms, qkv/proj and fc1/fc2 with biases"
             : q25 ? "Qwen2_5_VLVisionBlock: RMSNorms, qkv/proj and gate/up/down with biases"
                   : "Qwen3VLVisionBlock: LayerNorms, qkv/proj and linear_fc1/fc2 with biases";
  r.fields.push_back(sized(f, "channels", {"in_channels", "in_chans"}, 3));
  r.fields.push_back(sized(f, "patch", {"patch_size", "spatial_patch_size"}, q3 ? 16 : 14));
  r.fields.push_back(sized(f, "temporal_patch", {"temporal_patch_size"}, 2));
  r.fields.push_back(line("patch_bias", q3, q3 ? "Conv3d with a bias (Qwen3VLVisionPatchEmbed)"
                                               : "Conv3d without bias (PatchEmbed)"));
  if (q3) r.fields.push_back(sized(f, "positions", {"num_position_embeddings"}, 2304));
  push_encoder(r, e);
  std::int64_t merge = f.size({"spatial_merge_size"}, 2, o);
  const std::string merge_o = o;
  std::int64_t out = q2 ? f.size({"hidden_size"}, 3584, o)
                        : f.size({"out_hidden_size"}, 3584, o);
  const std::string out_o = o;
  const std::int64_t wide = bounded(f.object(), "spatial_merge_size", e.hidden * merge * merge,
                                    "the merger's width hidden x merge^2");
  r.projector.push_back(norm(e.hidden, !q25, q25 ? "merger ln_q: RMSNorm of the width"
                                                 : "merger norm: LayerNorm of the width"));
  r.projector.push_back(linear(wide, wide, true, "merger fc1: " + merge_o + "^2 patches"));
  r.projector.push_back(linear(wide, out, true, "merger fc2 to " + out_o));
  if (q3) {
    // Qwen3-VL's DeepStack: one merger per listed layer, its LayerNorm after the shuffle (m^2 w).
    std::int64_t deep = f.list_size("deepstack_visual_indexes",
                                    fam == vision_family::qwen3_vl ? 3 : 0, o);
    if (deep > 0) {
      if (fam == vision_family::qwen3_5)
        r.not_counted = fmt::format(
            "the vision tower (vision_config): {} lists DeepStack layers, which Qwen3.5's "
            "tower is not read with",
            vc.path_of("deepstack_visual_indexes"));
      r.projector.push_back(norm(wide, true, "DeepStack mergers: " + o, deep));
      r.projector.push_back(linear(wide, wide, true, "their fc1", deep));
      r.projector.push_back(linear(wide, out, true, "their fc2", deep));
    }
  }
}

/// Gemma 3: SiglipVisionModel (Conv2d patches with a bias, a position table of
/// (image_size / patch_size)^2 rows, LayerNorm blocks with biases, post_layernorm) and
/// Gemma3MultiModalProjector (an RMSNorm of the tower's width and a matrix onto the text model).
void read_siglip(const hf_object& vc, std::int64_t text_hidden, vision_read& r) {
  vision_fields f(vc, "SiglipVisionConfig");
  std::string use_head_o;
  if (f.flag("vision_use_head", true, use_head_o)) {
    r.not_counted = fmt::format(
        "the vision tower and projector (vision_config): SigLIP's pooling head ({}) is not read",
        use_head_o);
    return;
  }
  encoder e = biased_encoder(f, 12, 768, 3072, 12,
                             "SiglipEncoderLayer: LayerNorms, q/k/v/out_proj and fc1/fc2 with biases");
  patch_grid g = grid_of(f, 224, 16);
  r.fields.push_back(sized(f, "channels", {"num_channels"}, 3));
  r.fields.push_back(line("patch", g.patch, g.patch_o));
  r.fields.push_back(line("patch_bias", true, "SiglipVisionEmbeddings: Conv2d with a bias"));
  r.fields.push_back(line("positions", g.patches, g.patches_o));
  push_encoder(r, e);
  r.fields.push_back(line("post_norm", true, "post_layernorm"));
  r.projector.push_back(norm(e.hidden, false, "mm_soft_emb_norm: RMSNorm of the width"));
  r.projector.push_back(
      linear(e.hidden, text_hidden, false, "mm_input_projection_weight onto text_config.hidden_size"));
}

/// How many of the tower's layers feed the projector: vision_feature_layer is one layer (an
/// index) or a list whose features are concatenated (`cls` defaults to the one layer `index`).
std::int64_t feature_layers_of(const hf_object& root, const char* cls, int index,
                               std::string& origin) {
  origin = fmt::format("default of {} (vision_feature_layer absent: {})", cls, index);
  if (!root.has("vision_feature_layer")) return 1;
  const json& v = root.value("vision_feature_layer");
  origin = root.path_of("vision_feature_layer");
  if (v.is_array() && !v.empty()) return static_cast<std::int64_t>(v.size());
  if (!v.is_number_integer())
    root.fail("vision_feature_layer", "expected a layer index or a list of them");
  return 1;
}

/// Where a class-token ViT's unbiased patch projection and its two outer norms come from.
struct trunk_origins {
  std::string patch, pre_norm, post_norm;
};

/// The trunk CLIP's and Llama 4's towers share: an unbiased patch projection, a class token with
/// its own position ((image / patch)^2 + 1 positions), a LayerNorm before the encoder and one
/// after.
void push_class_token_trunk(vision_read& r, const vision_fields& f, const patch_grid& g,
                            const encoder& e, const trunk_origins& o) {
  r.fields.push_back(sized(f, "channels", {"num_channels"}, 3));
  r.fields.push_back(line("patch", g.patch, g.patch_o));
  r.fields.push_back(line("patch_bias", false, o.patch));
  r.fields.push_back(line("positions", g.patches + 1, g.patches_o + " + the class token"));
  r.fields.push_back(line("class_token", true, "class_embedding"));
  r.fields.push_back(line("pre_norm", true, o.pre_norm));
  push_encoder(r, e);
  r.fields.push_back(line("post_norm", true, o.post_norm));
}

/// LLaVA and LLaVA-NeXT: CLIPVisionModel (modeling_clip.py: a class embedding, a Conv2d patch
/// embedding without bias, (image_size / patch_size)^2 + 1 positions, pre_layrnorm, LayerNorm
/// blocks with biases everywhere, post_layernorm) and LlavaMultiModalProjector (linear_1 from the
/// tower's width times the feature layers onto the text model, linear_2, biased when
/// multimodal_projector_bias); LLaVA-NeXT adds image_newline, a learned vector of the text width.
void read_clip_llava(const hf_object& root, const hf_object& vc, std::int64_t text_hidden,
                     bool next, vision_read& r) {
  if (vc.has("model_type") && vc.text("model_type") != "clip_vision_model")
    vc.fail("model_type", fmt::format("'{}' is not a tower calc reads under {} (it reads "
                                      "clip_vision_model)",
                                      vc.text("model_type"), next ? "llava_next" : "llava"));
  const char* cls = next ? "LlavaNextConfig" : "LlavaConfig";
  vision_fields f(vc, "CLIPVisionConfig"), top(root, cls);
  encoder e =
      biased_encoder(f, 12, 768, 3072, 12,
                     "CLIPEncoderLayer: LayerNorms, q/k/v/out_proj and fc1/fc2 with biases");
  patch_grid g = grid_of(f, 224, 32);
  push_class_token_trunk(r, f, g, e,
                        {"CLIPVisionEmbeddings: Conv2d without bias", "pre_layrnorm",
                         "post_layernorm"});
  std::string o;
  bool bias = top.flag("multimodal_projector_bias", true, o);
  const std::string bias_o = o;
  std::int64_t layers = feature_layers_of(root, cls, -2, o);
  bounded(root, "vision_feature_layer", e.hidden * layers, "linear_1's input hidden x layers");
  r.projector.push_back(linear(e.hidden * layers, text_hidden, bias,
                               fmt::format("linear_1 ({} layers: {}) onto the text width; "
                                           "bias: {}",
                                           layers, o, bias_o)));
  r.projector.push_back(linear(text_hidden, text_hidden, bias, "linear_2; bias: " + bias_o));
  if (next)
    r.projector.push_back(vector(text_hidden, "image_newline: one vector of the text width"));
}

/// GLM-4.5V: Glm4vMoeVisionModel (modeling_glm4v_moe.py: a Conv3d patch embedding with a bias,
/// post_conv_layernorm, an RMSNorm before the blocks, (image_size / patch_size)^2 learned
/// positions, RMSNorm blocks with qkv and proj without biases and a gated MLP of out_hidden_size,
/// post_layernorm) and its projector: downsample, a Conv2d of spatial_merge_size^2 patches onto
/// out_hidden_size with a bias, then the merger (proj, a LayerNorm, gate/up of
/// intermediate_size and down, no biases). No field takes a class default: each is required.
void read_glm4v(const hf_object& vc, vision_read& r) {
  vision_fields f(vc, "Glm4vMoeVisionConfig");
  std::string o;
  // qkv takes attention_bias, proj never a bias: a layout the block's one flag cannot write.
  if (f.flag("attention_bias", false, o))
    vc.fail("attention_bias", "a qkv bias beside a proj without one is not a layout calc reads "
                              "(the published GLM-4.5V tower has none)");
  encoder e{};
  e.layers = f.size({"depth"}, std::nullopt, e.layers_o);
  e.hidden = f.size({"hidden_size"}, std::nullopt, e.hidden_o);
  std::string out_o;
  const std::int64_t out = f.size({"out_hidden_size"}, std::nullopt, out_o);
  e.intermediate = out;
  e.intermediate_o = out_o + " (the blocks' MLP is out_hidden_size wide)";
  e.heads = heads_of(f, "num_heads", std::nullopt, e.hidden, e.heads_o);
  e.gated = true;
  e.layer_norm = false;
  e.attention_bias = false;
  e.mlp_bias = false;
  e.layout = "Glm4vMoeVisionBlock: RMSNorms, qkv/proj and gate/up/down without biases";
  std::string image_o, patch_o;
  std::int64_t image = f.size({"image_size"}, std::nullopt, image_o);
  std::int64_t patch = f.size({"patch_size"}, std::nullopt, patch_o);
  r.fields.push_back(sized(f, "channels", {"in_channels"}, 3));
  r.fields.push_back(line("patch", patch, patch_o));
  r.fields.push_back(sized(f, "temporal_patch", {"temporal_patch_size"}, std::nullopt));
  r.fields.push_back(line("patch_bias", true, "patch_embed.proj: Conv3d with a bias"));
  bounded(vc, "image_size", (image / patch) * (image / patch),
          "a position table of (image / patch)^2");
  r.fields.push_back(line("positions", (image / patch) * (image / patch),
                          fmt::format("({} / {})^2 patches", image_o, patch_o)));
  r.fields.push_back(line("pre_norm", true, "post_conv_layernorm: an RMSNorm before the blocks"));
  push_encoder(r, e);
  r.fields.push_back(line("post_norm", true, "post_layernorm"));
  std::string merge_o, ctx_o;
  std::int64_t merge = f.size({"spatial_merge_size"}, std::nullopt, merge_o);
  std::int64_t ctx = f.size({"intermediate_size"}, std::nullopt, ctx_o);
  bounded(f.object(), "spatial_merge_size", e.hidden * merge * merge,
          "the downsample's input hidden x merge^2");
  r.projector.push_back(linear(e.hidden * merge * merge, out, true,
                               "downsample: Conv2d of " + merge_o + "^2 patches, with a bias"));
  r.projector.push_back(linear(out, out, false, "merger.proj"));
  r.projector.push_back(norm(out, true, "merger.post_projection_norm: LayerNorm"));
  r.projector.push_back(linear(out, ctx, false, "merger gate_proj and up_proj to " + ctx_o, 2));
  r.projector.push_back(linear(ctx, out, false, "merger down_proj"));
}

/// Mistral 3: PixtralVisionModel (Conv2d patches without bias, ln_pre, RMSNorm blocks with a
/// gated MLP, no biases, 2-D RoPE) and Mistral3MultiModalProjector (an RMSNorm, the patch
/// merger of spatial_merge_size^2 patches, linear_1 and linear_2 onto the text model).
void read_pixtral(const hf_object& root, const hf_object& vc, std::int64_t text_hidden,
                  vision_read& r) {
  vision_fields f(vc, "PixtralVisionConfig"), top(root, "Mistral3Config");
  std::string o;
  encoder e{};
  e.layers = f.size({"num_hidden_layers"}, 24, e.layers_o);
  e.hidden = f.size({"hidden_size"}, 1024, e.hidden_o);
  e.intermediate = f.size({"intermediate_size"}, 4096, e.intermediate_o);
  e.heads = heads_of(f, "num_attention_heads", 16, e.hidden, e.heads_o);
  e.gated = true;
  e.layer_norm = false;
  e.attention_bias = false;
  e.mlp_bias = false;
  e.layout = "PixtralAttentionLayer: RMSNorms, q/k/v/o and gate/up/down without biases";
  r.fields.push_back(sized(f, "channels", {"num_channels"}, 3));
  r.fields.push_back(sized(f, "patch", {"patch_size"}, 16));
  r.fields.push_back(line("patch_bias", false, "patch_conv: Conv2d without bias"));
  r.fields.push_back(line("pre_norm", true, "ln_pre: an RMSNorm before the blocks"));
  push_encoder(r, e);
  std::int64_t merge = top.size({"spatial_merge_size"}, 2, o);
  const std::string merge_o = o;
  bool bias = top.flag("multimodal_projector_bias", false, o);
  const std::string bias_o = o;
  std::string feature_o;
  std::int64_t feature_layers = feature_layers_of(root, "Mistral3Config", -1, feature_o);
  r.projector.push_back(norm(e.hidden, false, "multi_modal_projector.norm: RMSNorm"));
  bounded(top.object(), "spatial_merge_size", e.hidden * merge * merge,
          "the patch merger's input hidden x merge^2");
  bounded(root, "vision_feature_layer", e.hidden * feature_layers,
          "linear_1's input hidden x layers");
  r.projector.push_back(linear(e.hidden * merge * merge, e.hidden, false,
                               "patch_merger.merging_layer: " + merge_o + "^2 patches"));
  r.projector.push_back(linear(e.hidden * feature_layers, text_hidden, bias,
                               fmt::format("linear_1 ({} layers: {}); bias: {}", feature_layers,
                                           feature_o, bias_o)));
  r.projector.push_back(linear(text_hidden, text_hidden, bias, "linear_2; bias: " + bias_o));
}

/// Llama 4: Llama4VisionModel (an unfolded patch projection without bias, a class embedding,
/// (image_size / patch_size)^2 + 1 positions, LayerNorms before and after, blocks with biases
/// everywhere), its pixel-shuffle MLP (fc1 intermediate_size -> projector_input_dim, fc2
/// projector_output_dim square, no biases) and Llama4MultiModalProjector (vision_output_dim onto
/// the text model, no bias).
void read_llama4(const hf_object& vc, std::int64_t text_hidden, vision_read& r) {
  vision_fields f(vc, "Llama4VisionConfig");
  std::string o;
  encoder e = biased_encoder(f, 34, 768, 5632, 16,
                             "Llama4VisionEncoderLayer: LayerNorms, q/k/v/o and fc1/fc2 with biases");
  patch_grid g = grid_of(f, 448, 14);
  push_class_token_trunk(r, f, g, e,
                        {"Llama4UnfoldConvolution: a Linear without bias", "layernorm_pre",
                         "layernorm_post"});
  std::int64_t in = f.size({"projector_input_dim"}, 4096, o);
  const std::string in_o = o;
  std::int64_t out = f.size({"projector_output_dim"}, 4096, o);
  const std::string out_o = o;
  std::int64_t vision_out = f.size({"vision_output_dim"}, 7680, o);
  r.projector.push_back(linear(e.intermediate, in, false,
                               "vision_adapter fc1: intermediate_size -> " + in_o));
  r.projector.push_back(linear(out, out, false, "vision_adapter fc2: " + out_o));
  r.projector.push_back(linear(vision_out, text_hidden, false,
                               "multi_modal_projector.linear_1: " + o + " -> text hidden"));
}

/// A text field that must be one of `known` when given (the reference raises on any other).
void pinned_text(const hf_object& o, const char* key, std::initializer_list<const char*> known) {
  if (!o.has(key)) return;
  std::string v = o.text(key);
  std::string names;
  for (const char* k : known) {
    if (v == k) return;
    names += (names.empty() ? "" : " or ") + std::string(k);
  }
  o.fail(key, fmt::format("'{}' is not a layout calc reads (expected {})", v, names));
}

/// Kimi-K2.5: MoonViT3dPretrainedModel (modeling_kimi_k25.py: a Conv2d patch embedding with a
/// bias, a learned init_pos_emb_height x init_pos_emb_width position grid beside a fixed sin-cos
/// time table that is a non-persistent buffer, blocks of LayerNorms, a packed wqkv and wo with
/// biases, fc0/fc1 with biases, a final LayerNorm; 2-D RoPE has no weights) and its projector:
/// PatchMergerMLP (a LayerNorm of mm_hidden_size, then merge_kernel_size patches concatenated
/// through two biased Linears) or the plain MLP projector (a LayerNorm and two Linears).
void read_moonvit(const hf_object& vc, std::int64_t text_hidden, vision_read& r) {
  vision_fields f(vc, "the MoonViT vision_config");
  pinned_text(vc, "pos_emb_type", {"divided_fixed"});
  pinned_text(vc, "merge_type", {"sd2_tpool"});
  pinned_text(vc, "mm_projector_type", {"patchmerger", "mlp", "identity"});
  encoder e{};
  e.layers = f.size({"vt_num_hidden_layers"}, std::nullopt, e.layers_o);
  e.hidden = f.size({"vt_hidden_size"}, std::nullopt, e.hidden_o);
  e.intermediate = f.size({"vt_intermediate_size"}, std::nullopt, e.intermediate_o);
  e.heads = heads_of(f, "vt_num_attention_heads", std::nullopt, e.hidden, e.heads_o);
  e.gated = false;
  e.layer_norm = true;
  e.attention_bias = true;
  e.mlp_bias = true;
  e.layout = "MoonViTEncoderLayer: LayerNorms, wqkv/wo and fc0/fc1 with biases";
  std::string h_o, w_o;
  std::int64_t h = f.size({"init_pos_emb_height"}, std::nullopt, h_o);
  std::int64_t w = f.size({"init_pos_emb_width"}, std::nullopt, w_o);
  r.fields.push_back(line("channels", std::int64_t{3}, "MoonVision3dPatchEmbed: in_dim 3"));
  r.fields.push_back(sized(f, "patch", {"patch_size"}, std::nullopt));
  r.fields.push_back(line("patch_bias", true, "proj: Conv2d with a bias"));
  bounded(vc, "init_pos_emb_width", h * w, "a position grid of height x width");
  r.fields.push_back(line("positions", h * w,
                          fmt::format("pos_emb: {} x {} (the time table is a fixed buffer, not "
                                      "stored)",
                                      h_o, w_o)));
  push_encoder(r, e);
  r.fields.push_back(line("post_norm", true, "encoder.final_layernorm"));
  std::string type = vc.has("mm_projector_type") ? vc.text("mm_projector_type") : "patchmerger";
  if (type == "identity") return;
  std::string mm_o, out_o;
  std::int64_t mm = f.size({"mm_hidden_size"}, e.hidden, mm_o);
  std::int64_t out = f.size({"text_hidden_size"}, text_hidden, out_o);
  if (!vc.has("text_hidden_size")) out_o = "text_config.hidden_size";
  std::int64_t kernel = 4;
  std::string kernel_o = "default 2 x 2 (merge_kernel_size absent)";
  if (vc.has("merge_kernel_size")) {
    std::vector<std::int64_t> k = vc.integers("merge_kernel_size");
    if (k.size() != 2 || k[0] <= 0 || k[1] <= 0 || k[0] > limits::max_vision_size ||
        k[1] > limits::max_vision_size)
      vc.fail("merge_kernel_size", "expected two positive sides [height, width]");
    kernel = bounded(vc, "merge_kernel_size", k[0] * k[1], "a kernel of height x width");
    kernel_o = vc.path_of("merge_kernel_size");
  }
  r.projector.push_back(norm(mm, true, "mm_projector.pre_norm: LayerNorm of " + mm_o));
  if (type == "mlp") {
    r.projector.push_back(linear(mm, out, true, "proj.0 onto " + out_o));
    r.projector.push_back(linear(out, out, true, "proj.2"));
    return;
  }
  const std::int64_t wide = bounded(vc, vc.has("merge_kernel_size") ? "merge_kernel_size"
                                                                    : "mm_hidden_size",
                                    mm * kernel, "the projector's width mm_hidden_size x kernel");
  r.projector.push_back(linear(wide, wide, true, "proj.0: " + kernel_o + " patches"));
  r.projector.push_back(linear(wide, out, true, "proj.2 onto " + out_o));
}

/// The module roots a checkpoint names its tower and projector by (the quantisers' exclusion
/// lists must cover each for the tower to stay in the model dtype).
std::vector<std::string> roots_of(vision_family fam) {
  switch (fam) {
    case vision_family::siglip:
    case vision_family::pixtral:
      return {"vision_tower", "multi_modal_projector"};
    case vision_family::llama4:
      return {"vision_model", "multi_modal_projector"};
    case vision_family::moonvit:
      return {"vision_tower", "mm_projector"};
    case vision_family::llava:
    case vision_family::llava_next:
      return {"vision_tower", "multi_modal_projector"};
    default:
      return {"visual"};
  }
}

/// An exclusion entry as the module root it covers: "re:.*visual.*", "model.visual" and
/// "visual." all read "visual".
std::string root_of_entry(std::string e) {
  if (e.starts_with("re:")) e = e.substr(3);
  if (e.starts_with(".*")) e = e.substr(2);
  while (!e.empty() && (e.ends_with(".*") || e.ends_with(".") || e.ends_with("*")))
    e.resize(e.size() - (e.ends_with(".*") ? 2 : 1));
  if (e.starts_with("model.")) e = e.substr(6);
  return e;
}

/// The first root a quantised checkpoint leaves out of its exclusion lists ("" when it covers
/// every root, or the checkpoint is not quantised).
std::string quantised_root(vision_family fam, const hf_object& root, const hf_json* modelopt) {
  std::vector<const json*> lists;
  bool quantised = false;
  if (root.has("quantization_config") && root.value("quantization_config").is_object()) {
    quantised = true;
    const json& q = root.value("quantization_config");
    for (const char* k : {"ignore", "modules_to_not_convert", "exclude_modules"})
      if (q.contains(k)) lists.push_back(&q[k]);
  }
  if (modelopt) {
    quantised = true;
    const json& m = modelopt->root();
    if (m.contains("quantization") && m["quantization"].is_object() &&
        m["quantization"].contains("exclude_modules"))
      lists.push_back(&m["quantization"]["exclude_modules"]);
  }
  if (!quantised) return "";
  for (const std::string& want : roots_of(fam)) {
    bool covered = false;
    for (const json* l : lists)
      if (l->is_array())
        for (const json& e : *l)
          covered = covered || (e.is_string() && root_of_entry(e.get<std::string>()) == want);
    if (!covered) return want;
  }
  return "";
}

}  // namespace

vision_read read_vision(const family& fam, const hf_object& root,
                        std::int64_t text_hidden, const std::string& dtype,
                        const std::string& dtype_origin, const hf_json* modelopt) {
  const vision_family kind = fam.vision;
  vision_read r;
  if (!root.has("vision_config")) {
    r.not_counted = "the vision tower and projector: the file has no vision_config";
    return r;
  }
  const hf_object vc = root.object("vision_config");
  switch (kind) {
    case vision_family::siglip:
      read_siglip(vc, text_hidden, r);
      break;
    case vision_family::pixtral:
      read_pixtral(root, vc, text_hidden, r);
      break;
    case vision_family::llama4:
      read_llama4(vc, text_hidden, r);
      break;
    case vision_family::moonvit:
      read_moonvit(vc, text_hidden, r);
      break;
    case vision_family::llava:
    case vision_family::llava_next:
      read_clip_llava(root, vc, text_hidden, kind == vision_family::llava_next, r);
      break;
    case vision_family::glm4v:
      read_glm4v(vc, r);
      break;
    default:
      read_qwen(kind, vc, r);
  }
  if (!r.not_counted.empty()) return r;
  // The family's releases under one quant_method keep the tower in the model dtype whatever the
  // config targets; under any other method its exclusion lists must say so.
  const bool kept =
      !fam.vision_unquantised_method.empty() && root.has("quantization_config") &&
      root.value("quantization_config").is_object() &&
      root.object("quantization_config").has("quant_method") &&
      root.object("quantization_config").text("quant_method") == fam.vision_unquantised_method;
  std::string left = kept ? "" : quantised_root(kind, root, modelopt);
  if (!left.empty()) {
    r.not_counted = fmt::format(
        "the vision tower and projector (vision_config): the quantisation config does not "
        "exclude `{}`, and calc counts the tower only in the model dtype",
        left);
    return r;
  }
  if (dtype != "bf16" && dtype != "fp16" && dtype != "fp32") {
    r.not_counted = fmt::format(
        "the vision tower and projector (vision_config): the model dtype {} is not one calc "
        "counts a component in",
        dtype);
    return r;
  }
  r.fields.insert(r.fields.begin(),
                  {word("kind", "vit", "a vision encoder and its projector (vision_config)"),
                   word("weights", dtype,
                        dtype_origin + (kept
                                            ? " (" + fam.model_type + "'s " +
                                                  fam.vision_unquantised_method +
                                                  " releases store the tower unquantised, "
                                                  "in the model dtype)"
                                            : " (the tower is stored unquantised, in the model "
                                              "dtype)"))});
  return r;
}

std::string emit_vision(const vision_read& v, bool annotate) {
  if (!v.not_counted.empty()) return "";
  std::string out = "components:\n";
  auto put = [&](std::string text, const std::string& comment) {
    if (annotate && !comment.empty()) {
      text.resize(std::max<std::size_t>(text.size() + 2, 36), ' ');
      text += "# " + comment;
    }
    out += text + "\n";
  };
  put("  - name: vision_tower", "counted apart from the text model's totals");
  for (const vision_line& l : v.fields) put("    " + l.key + ": " + l.value, l.comment);
  // A tower whose projector has no weights (Kimi's `identity`) writes an empty list.
  put(v.projector.empty() ? "    projector: []" : "    projector:", "");
  for (const vision_line& l : v.projector) put("      - " + l.value, l.comment);
  return out;
}

}  // namespace calc::hf
