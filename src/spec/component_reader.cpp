// Reads `components` (docs/model-schema.md, "Components"): so far `kind: vit`, a vision encoder
// and its projector, described by its shapes so the parameter count follows from them.
#include "spec/component_reader.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "common/limits.h"
#include "spec/hf/import.h"

namespace calc {

namespace {

/// Reads a yes/no choice spelt as one of two words (`mlp: gated|plain`); `fallback` when absent.
bool read_word(yaml_map& m, const std::string& key, const char* yes, const char* no,
               bool fallback) {
  auto text = m.optional_text(key);
  if (!text) return fallback;
  if (*text == yes) return true;
  if (*text == no) return false;
  m.fail(key, fmt::format("expected {} or {}, got '{}'", yes, no, *text));
}

projector_part read_part(yaml_map& p) {
  projector_part part;
  const bool linear = p.has("linear"), norm = p.has("norm"), vector = p.has("vector");
  if (linear + norm + vector != 1)
    p.fail(linear ? (norm ? "norm" : "vector") : norm ? "vector" : "linear",
           "give one of linear: [in, out], norm: width or vector: width");
  if (linear) {
    YAML::Node sides = p.required("linear");
    if (!sides.IsSequence() || sides.size() != 2)
      throw spec_error(location_of(sides, p.file()), p.path_of("linear"),
                       "expected [in, out], two widths");
    part.in = read_integer(sides[0], p.path_of("linear") + "[0]", p.file(), 1);
    part.out = read_integer(sides[1], p.path_of("linear") + "[1]", p.file(), 1);
    for (std::size_t i = 0; i < 2; ++i)
      if (std::int64_t w = i == 0 ? part.in : part.out; w > limits::max_vision_size)
        throw spec_error(location_of(sides[i], p.file()),
                         fmt::format("{}[{}]", p.path_of("linear"), i),
                         fmt::format("{} is above the limit of {} for a vision width", w,
                                     limits::max_vision_size));
  } else if (norm) {
    part.norm = p.integer("norm");
    if (part.norm > limits::max_vision_size)
      p.fail("norm", fmt::format("{} is above the limit of {} for a vision width", part.norm,
                                 limits::max_vision_size));
  } else {
    part.vector = p.integer("vector");
    if (part.vector > limits::max_vision_size)
      p.fail("vector", fmt::format("{} is above the limit of {} for a vision width", part.vector,
                                   limits::max_vision_size));
  }
  part.bias = p.boolean("bias", false);
  if (vector && part.bias) p.fail("bias", "a learned vector has no bias");
  part.count = p.optional_integer("count", 1).value_or(1);
  if (part.count > limits::layers)
    p.fail("count", fmt::format("{} is more than the limit of {}", part.count, limits::layers));
  p.finish({"linear", "norm", "vector", "bias", "count"});
  return part;
}

vit_spec read_vit(yaml_map& c) {
  vit_spec v;
  v.channels = c.optional_integer("channels", 1).value_or(3);
  v.patch = c.integer("patch");
  v.temporal_patch = c.optional_integer("temporal_patch", 1).value_or(1);
  v.patch_bias = c.boolean("patch_bias", false);
  v.positions = c.optional_integer("positions", 0).value_or(0);
  v.class_token = c.boolean("class_token", false);
  v.layers = c.integer("layers");
  if (v.layers > limits::layers)
    c.fail("layers", fmt::format("{} layers is more than the limit of {}", v.layers, limits::layers));
  v.hidden = c.integer("hidden");
  v.intermediate = c.integer("intermediate");
  v.heads = c.integer("heads");
  if (v.hidden % v.heads != 0)
    c.fail("heads", fmt::format("{} heads do not divide hidden {}", v.heads, v.hidden));
  v.gated_mlp = read_word(c, "mlp", "gated", "plain", false);
  v.layer_norm = read_word(c, "norm", "layernorm", "rmsnorm", true);
  v.attention_bias = c.boolean("attention_bias", false);
  v.mlp_bias = c.boolean("mlp_bias", false);
  v.pre_norm = c.boolean("pre_norm", false);
  v.post_norm = c.boolean("post_norm", false);
  YAML::Node parts = c.optional("projector");
  if (parts.IsDefined()) {
    if (!parts.IsSequence())
      throw spec_error(location_of(parts, c.file()), c.path_of("projector"), "expected a list");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      yaml_map p(parts[i], fmt::format("{}[{}]", c.path_of("projector"), i), c.file());
      v.projector.push_back(read_part(p));
    }
  }
  return v;
}

}  // namespace

std::vector<component_spec> read_components(yaml_map& model, const dtype& model_dtype) {
  std::vector<component_spec> out;
  YAML::Node list = model.optional("components");
  if (!list.IsDefined()) return out;
  if (!list.IsSequence())
    throw spec_error(location_of(list, model.file()), model.path_of("components"),
                     "expected a list of components");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    yaml_map c(list[i], fmt::format("{}[{}]", model.path_of("components"), i), model.file());
    component_spec s;
    s.name = c.text("name");
    if (!names.insert(s.name).second) c.fail("name", fmt::format("'{}' is given twice", s.name));
    std::string kind = c.text("kind");
    if (kind != "vit") c.fail("kind", fmt::format("expected vit, got '{}'", kind));
    std::string format = c.optional_text("weights").value_or(model_dtype.name);
    // A component's tensors are counted in one plain format: a scaled or packed format would
    // need each matrix's sides, which the projector's parts have but the blocks do not list.
    if (format != "bf16" && format != "fp16" && format != "fp32")
      c.fail("weights", fmt::format("expected bf16, fp16 or fp32, got '{}'", format));
    s.weights = parse_dtype(format);
    s.vit = read_vit(c);
    c.finish({"name", "kind", "weights", "channels", "patch", "temporal_patch", "patch_bias",
              "positions", "class_token", "layers", "hidden", "intermediate", "heads", "mlp",
              "norm", "attention_bias", "mlp_bias", "pre_norm", "post_norm", "projector"});
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<component_spec> read_model_components_text(const std::string& yaml,
                                                       const std::string& file,
                                                       const dtype& model_dtype) {
  YAML::Node root = load_yaml_text(yaml, file);
  yaml_map m(root, "", file);
  return read_components(m, model_dtype);
}

std::vector<component_spec> read_model_components(const std::string& path,
                                                  const dtype& model_dtype,
                                                  const std::vector<std::string>& sets) {
  // The same document the model reader reads: an import's YAML is named as that reader names it.
  std::string file = path;
  YAML::Node root;
  if (hf::is_hf_config(path)) {
    file = path + " (as imported)";
    root = load_yaml_text(hf::import_config(path).plain, file);
  } else {
    root = load_yaml_file(path);
  }
  for (const std::string& s : sets) apply_set(root, s, file);
  yaml_map m(root, "", file);
  return read_components(m, model_dtype);
}

}  // namespace calc
