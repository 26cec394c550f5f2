// Multimodal wrappers whose text model is a family calc already reads: the wrapper names its
// tower (vision.cpp reads it as a component) and text_config.model_type names the table that
// reads the text model. LlavaConfig and LlavaNextConfig build their text_config through
// CONFIG_MAPPING[text_config.model_type], so a field the published text_config leaves out takes
// that text configuration class's default; the classes' defaults are kept here, beside the
// wrappers that need them, for the text tables that have none. A wrapper whose configuration
// class names its text class by a model_type of its own (glm4v_moe_text) maps it to the table of
// the layout that class builds.
#include <fmt/format.h>

#include <optional>

#include "spec/hf/families.h"
#include "spec/hf/hf_json.h"

namespace calc::hf {

using nlohmann::json;

namespace {

/// The configuration class defaults of a text family a wrapper may name, for the roles its
/// table leaves without one (LlamaConfig, MistralConfig, Qwen2Config in transformers).
const std::map<std::string, json>& text_class_defaults() {
  static const std::map<std::string, json> d = {
      {"llama",
       {{"vocab", 32000}, {"hidden", 4096}, {"intermediate", 11008}, {"layers", 32},
        {"heads", 32}}},
      {"mistral",
       {{"vocab", 32000}, {"hidden", 4096}, {"intermediate", 14336}, {"layers", 32},
        {"heads", 32}}},
      {"qwen2",
       {{"vocab", 151936}, {"hidden", 4096}, {"intermediate", 22016}, {"layers", 32},
        {"heads", 32}}},
  };
  return d;
}

/// Text model_types a wrapper's configuration class names its own text class by, with the
/// table that reads that layout: Glm4vMoeTextConfig (`glm4v_moe_text`) builds Glm4Moe's layers
/// (GLM-4.5V's module tree: the same attention with Q/K/V biases, dense first layer, routed and
/// shared experts, two norms a layer), M-RoPE changing no count.
const std::map<std::string, std::string>& text_aliases() {
  static const std::map<std::string, std::string> a = {{"glm4v_moe_text", "glm4_moe"}};
  return a;
}

/// A wrapper whose text_config defaults to `text` and whose tower is `vision`.
family wrapper(std::string model_type, std::string architecture, std::string text,
               vision_family vision) {
  return {.model_type = std::move(model_type),
          .architectures = {std::move(architecture)},
          .scope = "text_config",
          .not_counted = "the vision tower and its projector (vision_config)",
          .vision = vision,
          .text_family = std::move(text)};
}

}  // namespace

std::vector<family> wrapper_families() {
  return {
      // LlavaConfig: a CLIP vision tower, LlavaMultiModalProjector, text_config default llama.
      wrapper("llava", "LlavaForConditionalGeneration", "llama", vision_family::llava),
      // LlavaNextConfig: the same tower and projector and the image_newline vector.
      wrapper("llava_next", "LlavaNextForConditionalGeneration", "llama",
              vision_family::llava_next),
      // Glm4vMoeConfig (GLM-4.5V): the Glm4vMoe vision tower, a GLM-4.5-Air text model.
      wrapper("glm4v_moe", "Glm4vMoeForConditionalGeneration", "glm4_moe",
              vision_family::glm4v),
  };
}

family wrapped_text_family(const family& w, const hf_object& root) {
  std::string type = w.text_family;
  std::optional<hf_object> text;
  if (root.has(w.scope)) text = root.object(w.scope);
  if (text && text->has("model_type")) type = text->text("model_type");
  if (auto a = text_aliases().find(type); a != text_aliases().end()) type = a->second;
  const family* f = find_family(type, {});
  if (!f || !f->refused.empty() || !f->scope.empty() || !f->text_family.empty()) {
    std::string why = fmt::format(
        "{} wraps a text model calc reads as a plain text family (llama, mistral, qwen2, ...); "
        "'{}' is not one",
        w.model_type, type);
    if (text && text->has("model_type")) text->fail("model_type", why);
    root.fail(w.scope, why);
  }
  family out = *f;
  out.scope = w.scope;
  out.vision = w.vision;
  out.vision_unquantised_method = w.vision_unquantised_method;
  out.not_counted = w.not_counted;
  out.wrapper = w.model_type;
  if (auto d = text_class_defaults().find(out.model_type); d != text_class_defaults().end())
    for (const auto& [role, value] : d->second.items())
      if (!out.defaults.contains(role)) out.defaults[role] = value;
  return out;
}

}  // namespace calc::hf
