#include "spec/hf/quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace calc::hf {

using nlohmann::json;

namespace {

/// A module name as the text model's own config spells it: a multimodal wrapper's prefix
/// (`language_model.model.`, `model.language_model.`) becomes `model.`, `language_model.lm_head`
/// is `lm_head`, and a glob closing a module name (`model.layers.3.self_attn*`) is that module.
/// "" for the modules of a vision tower or projector, which calc does not count.
std::string module_of_text_model(std::string m) {
  for (const char* p : {"vision_tower", "mm_projector", "multi_modal_projector", "model.visual",
                        "visual.", "vision_model"})
    if (m.starts_with(p)) return "";
  for (const char* p : {"language_model.model.", "model.language_model."})
    if (m.starts_with(p)) m = "model." + m.substr(std::string(p).size());
  if (m == "language_model.lm_head") m = "lm_head";
  if (m.ends_with("*") && m.starts_with("model.layers.")) {
    // model.layers.N* (every layer from N on) stays as it is; model.layers.N.module* is module.
    std::string rest = m.substr(13);
    if (rest.find('.') != std::string::npos && !rest.ends_with(".*")) m.pop_back();
  }
  return m;
}

/// The scale format a compressed-tensors weight scheme names (`scale_dtype`, written by
/// compressed-tensors 0.12 on), or "" when it names none.
std::string scale_of(const hf_object& w) {
  if (!w.has("scale_dtype")) return "";
  static const std::map<std::string, std::string> names = {
      {"torch.float32", "fp32"}, {"float32", "fp32"},   {"torch.bfloat16", "bf16"},
      {"bfloat16", "bf16"},      {"torch.float16", "fp16"}, {"float16", "fp16"}};
  auto it = names.find(w.text("scale_dtype"));
  if (it == names.end())
    w.fail("scale_dtype", fmt::format("scale dtype '{}' is not mapped (calc reads float32, "
                                      "bfloat16, float16)",
                                      w.text("scale_dtype")));
  return it->second;
}

/// compressed-tensors' integer weights (llm-compressor's W4A16, W8A16 and W8A8; Kimi-K2's
/// int4 release): every quantised Linear of `in` inputs and `out` outputs stores, as
/// pack-quantized, weight_packed int32 [out, in * bits / 32] (eight int4 or four int8 a word),
/// weight_scale [out, ceil(in / group)] ("group") or [out, 1] ("channel") in the scale dtype,
/// and weight_shape int32 [2]; as int-quantized (W8A8), weight int8 [out, in] and weight_scale
/// [out, 1]. actorder "group" adds weight_g_idx int32 [in]. Symmetric weights store no zero
/// point. Asymmetric pack-quantized ones store weight_zero_point per group (or row), laid out
/// differently across compressed-tensors versions: early releases kept it int8 [out, groups]
/// and dropped a matrix's when all were zero; later ones pack it int32 along the output rows,
/// [ceil(out * bits / 32), groups] (pack_to_int32(zero_point, bits, packed_dim=0)), `bits` a
/// zero. The safetensors headers say which (`stored_zero`: the dtype of weight_zero_point);
/// calc reads the packed layout and refuses the others. Activations (dynamic per token, or a
/// static scalar) store no bytes that count.
std::string int_weights(const hf_object& w, const std::string& container, const std::string& s,
                        const std::string& stored_zero, std::string& said) {
  std::int64_t bits = w.integer("num_bits");
  if (bits != 4 && bits != 8)
    w.fail("num_bits", fmt::format("integer weights of {} bits are not mapped (calc reads 4 and "
                                   "8)",
                                   bits));
  if (container == "int-quantized" && bits != 8)
    w.fail("num_bits", "int-quantized stores 8-bit integers; 4-bit ones are pack-quantized");
  if (w.has("symmetric") && !w.value("symmetric").is_null() && !w.value("symmetric").is_boolean())
    w.fail("symmetric", "expected true or false");
  std::string elem = bits == 4 ? "int4" : "int8";
  bool packed = container == "pack-quantized";
  // A zero point per group (or row) of asymmetric weights, packed as the headers show.
  std::string zero, zero_said;
  if (w.has("symmetric") && w.value("symmetric").is_boolean() && !w.boolean("symmetric")) {
    if (!packed)
      w.fail("symmetric", "asymmetric int-quantized weights (a weight_zero_point per row) are "
                          "not mapped (calc reads asymmetric pack-quantized ones)");
    if (stored_zero.empty())
      w.fail("symmetric",
             "asymmetric integer weights store a weight_zero_point per group, laid out "
             "differently across compressed-tensors versions (int8, dropped when all zero, in "
             "early releases; int32 packed along the output rows since): calc reads the layout "
             "from the safetensors headers, and there are none beside this config");
    if (stored_zero != "I32")
      w.fail("symmetric",
             fmt::format("the safetensors headers store weight_zero_point as {}, the unpacked "
                         "layout of early compressed-tensors releases, which drop a matrix's "
                         "zero points when all are zero: one format per role cannot state that "
                         "(calc reads the packed I32 layout)",
                         stored_zero));
    zero = ":zero:" + elem;
    zero_said = fmt::format(" and an {} zero point (packed in int32 along the output rows)", elem);
  }
  // pack-quantized keeps each matrix's original shape beside it: two int32, 8 bytes a matrix.
  std::string record = packed ? ":matrix:int32x2" : "";
  std::string record_said = packed ? ", its shape (2 int32) per matrix" : "";
  std::string strategy = w.has("strategy") ? w.text("strategy") : "tensor";
  // compressed-tensors reads actorder true as "group" and false as none.
  std::string actorder;
  if (w.has("actorder") && w.value("actorder").is_string()) actorder = w.text("actorder");
  else if (w.has("actorder") && w.value("actorder").is_boolean())
    actorder = w.boolean("actorder") ? "group" : "";
  else if (w.has("actorder") && !w.value("actorder").is_null())
    w.fail("actorder", "expected group, weight, static, true, false or null");
  if (!actorder.empty() && actorder != "group" && actorder != "weight" && actorder != "static")
    w.fail("actorder", fmt::format("actorder '{}' is not mapped (calc reads group, weight, "
                                   "static and null)",
                                   actorder));
  if (strategy == "group") {
    if (!w.has("group_size") || !w.value("group_size").is_number_integer() ||
        w.integer("group_size") <= 0 || w.integer("group_size") > 4096)
      w.fail("group_size", "strategy group needs a group_size of 1 to 4096 (inputs per scale)");
    std::int64_t group = w.integer("group_size");
    // actorder "group" stores the group of each input row (weight_g_idx int32 [in]); "weight"
    // and "static" reorder nothing that is stored.
    bool g_idx = actorder == "group";
    said = fmt::format("{} {} values, a {} scale{} per {} inputs of each output row{}{}",
                       container, elem, s, zero_said, group, record_said,
                       g_idx ? ", an int32 g_idx per input row" : "");
    return fmt::format("{}:g{}:{}{}{}{}", elem, group, s, zero, record,
                       g_idx ? ":rowidx:int32" : "");
  }
  if (strategy == "channel") {
    if (actorder == "group")
      w.fail("actorder", "actorder group with strategy channel is not mapped");
    said = fmt::format("{} {} values, a {} scale{} per output row{}", container, elem, s,
                       zero_said, record_said);
    return fmt::format("{}:row:{}{}{}", elem, s, zero, record);
  }
  w.fail("strategy", fmt::format("integer weight strategy '{}' is not mapped (calc reads group "
                                 "and channel)",
                                 strategy));
}

/// compressed-tensors' quantised weights, one format for all config groups (groups that differ
/// would need a format per module):
/// - float-quantized FP8 (llm-compressor, and zai-org's GLM-4.5-FP8): 8-bit float over the
///   Linear targets, one scale per tensor ("tensor"), per output row ("channel": weight_scale
///   [out, 1]) or per block ("block", block_structure [rows, columns]); activations (dynamic
///   per-token, or static) hold no stored bytes.
/// - pack-quantized and int-quantized integers (int_weights).
/// The scale dtype: what the safetensors headers store (`stored_scale`), else the config's
/// `scale_dtype` (compressed-tensors 0.12 on), else, for FP8, `scale` (the family's documented
/// default) and, for integers, `model_dtype` (compressed-tensors keeps an integer scheme's
/// scales in the dtype of the weights it quantised: Kimi-K2.5's BF16 weight_scale).
std::string compressed_tensors_weights(const hf_object& q, const std::string& scale,
                                       const std::string& stored_scale,
                                       const std::string& model_dtype,
                                       const std::string& stored_zero, std::string& origin) {
  std::string container = q.has("format") ? q.text("format") : "float-quantized";
  if (container != "float-quantized" && container != "pack-quantized" &&
      container != "int-quantized")
    q.fail("format", fmt::format("compressed-tensors format '{}' is not mapped (calc reads "
                                 "float-quantized, pack-quantized and int-quantized)",
                                 container));
  // A sparsity_config (2:4 bitmask and the like) stores other bytes than dense matrices.
  if (q.has("sparsity_config") && q.value("sparsity_config").is_object() &&
      !q.value("sparsity_config").empty() && q.object("sparsity_config").has("format") &&
      q.object("sparsity_config").text("format") != "dense")
    q.fail("sparsity_config", fmt::format("sparse weights ('{}') are not mapped (calc reads "
                                          "dense compressed-tensors checkpoints)",
                                          q.object("sparsity_config").text("format")));
  hf_object groups = q.object("config_groups");
  std::string weights, said;
  for (const auto& item : q.value("config_groups").items()) {
    hf_object g = groups.object(item.key());
    if (g.has("targets")) {
      const json& targets = g.value("targets");
      if (!targets.is_array() || targets.size() != 1 || targets[0] != "Linear")
        g.fail("targets", "calc reads one config group over [\"Linear\"] (every linear layer "
                          "not ignored)");
    }
    if (g.has("format") && g.value("format").is_string() && g.text("format") != container)
      g.fail("format", fmt::format("this group stores '{}' beside the config's '{}'; calc keeps "
                                   "one format for the quantised matrices",
                                   g.text("format"), container));
    hf_object w = g.object("weights");
    std::string type = w.has("type") ? w.text("type") : "int";
    std::string s = stored_scale.empty() ? scale_of(w) : stored_scale;
    std::string format;
    if (type == "int") {
      if (container == "float-quantized")
        w.fail("num_bits", "integer weights stored float-quantized are not mapped (calc reads "
                           "integers pack-quantized or int-quantized)");
      if (s.empty()) s = model_dtype.empty() ? "bf16" : model_dtype;
      format = int_weights(w, container, s, stored_zero, said);
    } else {
      bool fp8 = w.has("num_bits") && w.integer("num_bits") == 8 && type == "float";
      if (!fp8 || container != "float-quantized")
        w.fail("num_bits", "float weights other than 8-bit float-quantized are not mapped (calc "
                           "reads FP8)");
      if (s.empty()) s = scale;
      std::string strategy = w.has("strategy") ? w.text("strategy") : "tensor";
      if (strategy == "channel") {
        format = "fp8:row:" + s;
        said = fmt::format("FP8 with one {} scale per output row (strategy channel)", s);
      } else if (strategy == "block") {
        std::vector<std::int64_t> block = w.integers("block_structure");
        if (block.size() != 2 || block[0] == 0 || block[1] == 0 || block[0] > 4096 ||
            block[1] > 4096)
          w.fail("block_structure", "expected two block sides of 1 to 4096, e.g. [128, 128]");
        format = fmt::format("fp8:b{}x{}:{}", block[0], block[1], s);
        said = fmt::format("FP8 with one {} scale per block of {}x{}", s, block[0], block[1]);
      } else if (strategy == "tensor") {
        format = "fp8";
        said = "FP8 with one scale per tensor (a few bytes a matrix, not counted)";
      } else {
        w.fail("strategy", fmt::format("FP8 weight strategy '{}' is not mapped (calc reads "
                                       "channel, block, tensor)",
                                       strategy));
      }
    }
    if (!weights.empty() && weights != format)
      w.fail("strategy", fmt::format("config groups quantise to {} and {}; calc keeps one "
                                     "format for the quantised matrices",
                                     weights, format));
    weights = format;
  }
  if (weights.empty()) groups.fail("config_groups", "no config group: nothing is quantised");
  origin += " = compressed-tensors, " + said;
  return weights;
}

/// A compressed-tensors ignore entry written as a regular expression ("re:.*mlp.gate$"), as
/// the plain module name it stands for in every layer ("mlp.gate"), or "" when it is no pattern.
std::string pattern_module(const std::string& m) {
  if (!m.starts_with("re:")) return "";
  std::string p = m.substr(3);
  if (p.starts_with(".*")) p = p.substr(2);
  if (p.ends_with("$")) p.pop_back();
  std::string out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size() && p[i + 1] == '.') continue;  // "\." is "."
    out += p[i];
  }
  if (out.starts_with(".")) out = out.substr(1);
  return out;
}

}  // namespace

std::optional<quant_formats> read_quant(const hf_object& root, const hf_json* modelopt,
                                        bool has_routers, const std::string& block_scale,
                                        const std::string& stored_scale,
                                        const std::string& model_dtype,
                                        const std::string& stored_zero) {
  std::optional<hf_object> q;
  if (modelopt) {
    q = hf_object(*modelopt, "").object("quantization");
  } else if (root.has("quantization_config")) {
    q = root.object("quantization_config");
  } else {
    return std::nullopt;
  }
  // Hugging Face names the method quant_method and the unconverted modules
  // modules_to_not_convert; ModelOpt writes quant_algo and exclude_modules (or ignore), in
  // hf_quant_config.json or in config.json under quant_method "modelopt".
  std::string key = q->has("quant_method") ? "quant_method" : "quant_algo";
  bool from_modelopt = modelopt != nullptr;
  if (key == "quant_method" && q->value(key).is_string() && q->text(key) == "modelopt") {
    key = "quant_algo";
    from_modelopt = true;
  }
  std::string method = q->text(key);
  // vLLM's own FP8 config (Fp8Config) and llm-compressor name the list ignored_layers: read it
  // as the same list rather than let a config that keeps modules unconverted pass unread.
  std::string list_key = "modules_to_not_convert";
  for (const char* k : {"exclude_modules", "ignore", "ignored_layers"})
    if (q->has(k)) list_key = k;
  quant_formats f;
  f.origin = q->path_of(key);
  if (modelopt) f.origin = q->doc().file() + ": " + f.origin;
  if (method == "fp8" && q->has("weight_block_size")) {
    std::vector<std::int64_t> block = q->integers("weight_block_size");
    if (block.size() != 2 || block[0] == 0 || block[1] == 0 || block[0] > 4096 || block[1] > 4096)
      q->fail("weight_block_size", "expected two block sides of 1 to 4096, e.g. [128, 128]");
    // One scale per block of rows x columns (weight_scale_inv [ceil(out/rows), ceil(in/cols)]),
    // stored as `block_scale`; the grid is rounded up on each side of each matrix.
    f.weights = fmt::format("fp8:b{}x{}:{}", block[0], block[1], block_scale);
    f.origin += fmt::format(" = fp8, weight_block_size {}x{}, {} scales", block[0], block[1],
                            block_scale);
  } else if (method == "FP8" || method == "fp8") {
    f.weights = "fp8";
    f.origin += " = FP8 with one scale per tensor (a few bytes a matrix, not counted)";
  } else if (method == "NVFP4" || method == "nvfp4") {
    if (q->has("group_size") && q->integer("group_size") != 16)
      q->fail("group_size", "NVFP4 keeps one FP8 scale per 16 values");
    f.weights = "nvfp4";
    f.origin += " = NVFP4: FP4 values, an FP8 scale per 16 (per-tensor scales not counted)";
  } else if (method == "mxfp4") {
    f.weights = "mxfp4";
    f.origin += " = MXFP4: FP4 values, an E8M0 scale per 32";
  } else if (method == "awq") {
    // AutoAWQ's GEMM layout, as the files store each quantised Linear: qweight (eight int4 per
    // int32), scales (fp16, one per group of group_size inputs and output column) and, with
    // zero_point, qzeros (int4 per group, packed the same way).
    if (q->has("bits") && q->integer("bits") != 4)
      q->fail("bits",
              fmt::format("AWQ with {} bits is not mapped (calc reads 4)", q->integer("bits")));
    if (q->has("version") && q->text("version") != "gemm")
      q->fail("version",
              fmt::format("AWQ version '{}' is not mapped (calc reads gemm, whose packing it "
                          "counts)",
                          q->text("version")));
    if (!q->has("group_size") || q->integer("group_size") == 0)
      q->fail("group_size", "AWQ needs a positive group_size (inputs per scale)");
    std::int64_t group = q->integer("group_size");
    bool zero = !q->has("zero_point") || q->boolean("zero_point");
    f.weights = fmt::format("int4:g{}:fp16{}", group, zero ? ":zero:int4" : "");
    f.origin += fmt::format(" = awq: int4 values, an fp16 scale{} per {} inputs",
                            zero ? " and an int4 zero" : "", group);
  } else if (method == "gptq") {
    // AutoGPTQ / GPTQModel's layout, as the files store each quantised Linear of `in` inputs and
    // `out` outputs: qweight int32 [in * bits / 32, out], scales fp16 [in / group, out], qzeros
    // int32 [in / group, out * bits / 32] (kept even when sym is true) and g_idx int32 [in], the
    // group of each input row (stored whether or not desc_act reorders the rows).
    if (q->has("checkpoint_format") && q->value("checkpoint_format").is_string() &&
        q->text("checkpoint_format") != "gptq" && q->text("checkpoint_format") != "gptq_v2")
      q->fail("checkpoint_format",
              fmt::format("GPTQ checkpoint format '{}' is not mapped (calc reads gptq and "
                          "gptq_v2, whose packing it counts)",
                          q->text("checkpoint_format")));
    std::int64_t bits = q->integer("bits");
    if (bits != 4 && bits != 8)
      q->fail("bits", fmt::format("GPTQ with {} bits is not mapped (calc reads 4 and 8)", bits));
    if (q->has("group_size") && q->value("group_size").is_number_integer() &&
        q->value("group_size").get<std::int64_t>() == -1)
      q->fail("group_size",
              "GPTQ group_size -1 (one scale per output column over all inputs) is not mapped "
              "(calc reads a positive group size)");
    std::int64_t group = q->integer("group_size");
    if (group <= 0) q->fail("group_size", "GPTQ needs a positive group_size (inputs per scale)");
    if (q->has("modules_in_block_to_quantize"))
      q->fail("modules_in_block_to_quantize",
              "a list of the modules quantised is not mapped: calc keeps one format per role");
    if (q->has("lm_head") && q->value("lm_head").is_boolean() && q->boolean("lm_head"))
      q->fail("lm_head", "a quantised lm_head is not mapped (calc reads GPTQ heads in 16 bits)");
    std::string elem = bits == 4 ? "int4" : "int8";
    f.weights = fmt::format("{}:g{}:fp16:zero:{}:rowidx:int32", elem, group, elem);
    f.origin += fmt::format(
        " = gptq: {} values, an fp16 scale and an {} zero per {} inputs, an int32 g_idx per input "
        "row",
        elem, elem, group);
    // The router (mlp.gate) and the shared-expert gate are not among the Linear layers GPTQ
    // quantises: they keep the model dtype in `weights`, the matrices are named by role.
    quant_formats::kept_role& k = f.kept_roles["router"];
    k.all = true;
    k.field = f.origin;
  } else if (method == "compressed-tensors") {
    f.weights = compressed_tensors_weights(*q, block_scale, stored_scale, model_dtype,
                                           stored_zero, f.origin);
  } else {
    q->fail(key, fmt::format("quantisation '{}' is not mapped (calc reads fp8, FP8, NVFP4, "
                             "mxfp4, awq, gptq, compressed-tensors)",
                             method));
  }
  for (const char* k : {"kv_cache_quant_algo", "kv_cache_scheme"}) {
    if (q->has(k) && q->value(k).is_object()) {
      // compressed-tensors' form (ModelOpt writes it in config.json): {num_bits, type}.
      hf_object kv = q->object(k);
      bool fp8 = kv.has("num_bits") && kv.integer("num_bits") == 8 && kv.has("type") &&
                 kv.text("type") == "float";
      if (!fp8) q->fail(k, "a cache scheme other than 8-bit float is not mapped (calc reads FP8)");
      f.kv = "fp8";
      f.kv_origin = q->path_of(k) + " (8-bit float)";
      continue;
    }
    if (!q->has(k) || !q->value(k).is_string()) continue;
    std::string kv = q->text(k);
    if (kv != "FP8") q->fail(k, fmt::format("'{}' is not mapped (calc reads FP8)", kv));
    f.kv = "fp8";
    f.kv_origin = q->path_of(k);
  }
  if (q->has(list_key)) {
    const json& list = q->value(list_key);
    if (!list.is_array()) q->fail(list_key, "expected a list of module names");
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string m = module_of_text_model(
          list[i].is_string() ? list[i].get<std::string>() : list[i].dump());
      if (m.empty()) continue;  // a vision tower or projector module: not counted
      // compressed-tensors' patterns: one module of every layer ("re:.*mlp.gate$") reads as
      // that module listed for all layers ("model.layers.*.mlp.gate"); the head as lm_head.
      if (std::string p = pattern_module(m); !p.empty()) {
        // A pattern over a whole role of every layer (Kimi-K2.5's int4 release keeps
        // "re:.*self_attn.*", "re:.*shared_experts.*" and the dense layer's
        // "re:.*mlp\\.(gate|up|gate_up|down)_proj.*" in BF16, quantising the routed experts).
        static const std::map<std::string, std::string> role_patterns = {
            {"self_attn", "attention"},
            {"self_attn.*", "attention"},
            {"shared_experts", "shared_experts"},
            {"shared_experts.*", "shared_experts"},
            {"mlp.shared_experts.*", "shared_experts"},
            {"mlp.(gate|up|down)_proj", "dense_ffn"},
            {"mlp.(gate|up|down)_proj.*", "dense_ffn"},
            {"mlp.(gate|up|gate_up|down)_proj", "dense_ffn"},
            {"mlp.(gate|up|gate_up|down)_proj.*", "dense_ffn"}};
        // The vision tower and projector (K2.5-derived releases list "re:.*vision_tower.*" and
        // "re:.*mm_projector.*") are not counted; norms and the embedding are never converted.
        bool vision = false;
        for (const char* v : {"vision_tower", "mm_projector", "multi_modal_projector", "visual",
                              "vision_model"})
          vision = vision || p.starts_with(v);
        if (vision || p == "norm.*" || p == "embed.*" || p == "embed_tokens") continue;
        if (p == "lm_head.*") p = "lm_head";
        if (auto role = role_patterns.find(p); role != role_patterns.end()) {
          quant_formats::kept_role& k = f.kept_roles[role->second];
          if (k.field.empty()) {
            k.where = q->doc().where(fmt::format("{}/{}/{}", q->pointer(), list_key, i));
            k.field = fmt::format("{}[{}]", q->path_of(list_key), i);
          }
          k.all = true;
          continue;
        }
        bool known = p == "lm_head" || p == "gate" || p == "mlp.gate" ||
                     p.ends_with("layernorm") || p.ends_with("_norm") ||
                     p.ends_with("e_score_correction_bias");
        if (!known)
          throw spec_error(q->doc().where(fmt::format("{}/{}/{}", q->pointer(), list_key, i)),
                           fmt::format("{}[{}]", q->path_of(list_key), i),
                           fmt::format("the pattern '{}' is not mapped (calc reads patterns of "
                                       "the head, the router, norms and the routing bias)",
                                       m));
        m = p == "lm_head" ? p : p == "gate" ? "mlp.gate" : "model.layers.*." + p;
      }
      // A Linear's bias (compressed-tensors lists q_proj.bias, ...) is a vector, never
      // quantised: calc counts biases in the norms' format already.
      if (m.ends_with("_proj.bias")) continue;
      // A norm's bias (the indexer's LayerNorm k_norm.bias) is the norm's, in its format too.
      std::string base = m.ends_with(".bias") ? m.substr(0, m.size() - 5) : m;
      bool norm = base.ends_with("layernorm") || base.ends_with("_norm") || base.ends_with(".norm");
      // The MTP layer's own modules (DeepSeek/GLM: eh_proj, enorm, hnorm, its embedding and
      // shared head) are not counted in totals, whatever their format.
      bool mtp = false;
      for (const char* t : {".eh_proj", ".enorm", ".hnorm", ".embed_tokens", ".shared_head.head"})
        mtp = mtp || (m.starts_with("model.layers.") && m.ends_with(t));
      // The lightning indexer's weights_proj (GLM-5.x names it indexers_proj) stays unconverted
      // in every FP8 release: calc counts it at `weights` always (tally/attention_mla.cpp).
      bool index_weights = m.ends_with("self_attn.indexers_proj") ||
                           m.ends_with("self_attn.indexer.weights_proj");
      // Qwen3-Next's MTP block sits apart from the layers (mtp.fc, mtp.layers.0.*, mtp.norm,
      // listed by its FP8 release): not counted in totals.
      mtp = mtp || m == "mtp" || m.starts_with("mtp.");
      // A mixer's vectors and convolution taps (A_log, D, dt_bias, conv1d; Qwen's FP8 releases
      // list each Gated DeltaNet layer's) are never converted: no quantiser calc reads converts
      // a vector or a Conv1d, and a quantised import keeps the taps in the model dtype
      // (precision.conv_taps) whether listed or not.
      bool mixer_kept = false;
      for (const char* t : {".A_log", ".D", ".dt_bias", "conv1d"})
        mixer_kept = mixer_kept || (m.starts_with("model.layers.") && m.ends_with(t));
      if (mtp || index_weights || mixer_kept) continue;
      if (m == "lm_head") {
        f.kept_dtype.push_back("head");
      } else if (m == "model.embed_tokens") {
        f.kept_dtype.push_back("embedding");
      } else if (norm) {
        continue;  // norms have their own format already
      } else if (m == "e_score_correction_bias" || m.ends_with(".e_score_correction_bias")) {
        continue;  // the routing bias is a vector, never converted (MiniMax-M2 lists it anyway)
      } else if (m == "gate" || m == "mlp.gate") {
        // AutoAWQ's short form: every layer's router (mlp.gate) stays unquantised.
        quant_formats::kept_role& k = f.kept_roles["router"];
        if (k.field.empty()) {
          k.where = q->doc().where(fmt::format("{}/{}/{}", q->pointer(), list_key, i));
          k.field = fmt::format("{}[{}]", q->path_of(list_key), i);
        }
        k.all = true;
      } else if (m.ends_with("*") && m.starts_with("model.layers.")) {
        // A layer past num_hidden_layers is the MTP block, not counted in totals; checked
        // against the layer count by the caller.
        f.excluded_from_layer = std::atoll(m.substr(13).c_str());
        f.excluded_where = q->doc().where(fmt::format("{}/{}/{}", q->pointer(), list_key, i));
        f.excluded_field = fmt::format("{}[{}]", q->path_of(list_key), i);
      } else {
        // model.layers.<i or *>.self_attn | mlp.gate | mlp.router: a whole role of a layer.
        source_location where = q->doc().where(fmt::format("{}/{}/{}", q->pointer(), list_key, i));
        std::string field = fmt::format("{}[{}]", q->path_of(list_key), i);
        std::string rest = m.starts_with("model.layers.") ? m.substr(13) : "";
        auto dot = rest.find('.');
        std::string index = rest.substr(0, dot);
        std::string module = dot == std::string::npos ? "" : rest.substr(dot + 1);
        // An input projection of self_attn (everything that reads the hidden state; o_proj
        // writes it back): the set each layer lists is checked against the attention kind.
        static const std::set<std::string> inputs = {"q_proj",   "k_proj",   "v_proj",
                                                     "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa",
                                                     "kv_b_proj"};
        std::string sub = module.starts_with("self_attn.") ? module.substr(10) : "";
        // The router's module: mlp.gate (Qwen, DeepSeek), mlp.router, block_sparse_moe.gate
        // (Mixtral, MiniMax; ModelOpt lists it per layer).
        // The shared expert's gate (Qwen's mlp.shared_expert_gate, d x 1) sits with the router
        // in `weights`, and is kept with it.
        static const std::set<std::string> routers = {"mlp.gate", "mlp.router",
                                                      "block_sparse_moe.gate",
                                                      "mlp.shared_expert_gate"};
        // A Gated DeltaNet layer's decay and beta projections (Qwen3-Next's fused in_proj_ba,
        // Qwen3.5's in_proj_a and in_proj_b), kept by Qwen's FP8 releases: role mixer_gates.
        static const std::set<std::string> gates = {
            "linear_attn.in_proj_ba", "linear_attn.in_proj_a", "linear_attn.in_proj_b"};
        std::string role = module == "self_attn"   ? "attention"
                           : routers.count(module) ? "router"
                           : gates.count(module)   ? "mixer_gates"
                           : inputs.count(sub)     ? "attention_in"
                                                   : "";
        bool number = !index.empty() && std::all_of(index.begin(), index.end(), ::isdigit);
        if (role.empty() || (!number && index != "*"))
          throw spec_error(
              where, field,
              fmt::format("'{}' stays unquantised, but calc keeps formats per role "
                          "(attention, attention_out, router, head, embedding), not per "
                          "module",
                          m));
        quant_formats::kept_role& k = f.kept_roles[role];
        if (k.field.empty()) k.where = where, k.field = field;
        if (index == "*")
          k.all = true;
        else
          k.layers.insert(std::atoll(index.c_str()));
        if (role == "attention_in") f.kept_attention_inputs[index].insert(sub);
      }
    }
  }
  // Hugging Face's FP8 block quantisation (quant_method fp8 with weight_block_size) converts
  // nn.Linear modules only; a MoE router is never converted in the published checkpoints:
  // DeepSeek's gate is a bare weight Parameter (DeepSeek-V3.1, R1 and V3.2 store mlp.gate.weight
  // BF16 beside FP8 experts without listing it), and Qwen3, MiniMax-M2.5 and GLM-5.1 list theirs
  // in modules_to_not_convert.
  if (method == "compressed-tensors" && f.kept_roles.count("router")) {
    // compressed-tensors lists each MoE layer's router (GLM-4.5-FP8: model.layers.3.mlp.gate
    // to model.layers.92.mlp.gate, the MTP layer included); a dense layer has none to list. The
    // caller checks the listed layers against the model's MoE layers: every router kept, or an
    // error (one format per role).
    quant_formats::kept_role& k = f.kept_roles["router"];
    if (!k.all && !k.layers.empty())
      k.why = fmt::format("the ignore list names the routers of layers {} to {}",
                          *k.layers.begin(), *k.layers.rbegin());
  }
  if (method == "compressed-tensors" && has_routers && !f.weights.starts_with("fp8") &&
      !f.kept_roles.count("router")) {
    // compressed-tensors converts the Linear modules its groups target: DeepSeek's router
    // (Kimi-K2.5's mlp.gate) is a bare weight Parameter and stays in the model dtype unlisted,
    // as Kimi-K2.5's tensor listing shows (mlp.gate.weight BF16 beside int4 experts); the
    // llm-compressor recipes list the others (re:.*mlp.gate$), and vLLM builds every MoE
    // router without a quantisation method.
    quant_formats::kept_role& k = f.kept_roles["router"];
    k.field = f.origin;
    k.why = "compressed-tensors' integer releases keep MoE routers unquantised";
    k.all = true;
  }
  bool block_fp8 = (method == "fp8" || method == "FP8") && q->has("weight_block_size");
  if ((from_modelopt || block_fp8) && has_routers) {
    // ModelOpt never quantises a MoE router: its default configs disable the quantizers of
    // *router*, *mlp.gate.*, *block_sparse_moe.gate* and *mlp.shared_expert_gate.* (so a list
    // may name them), and a router that is no Linear (DeepSeek's Gate, a bare weight Parameter)
    // gets no quantizer at all and so is not listed either. The router keeps the model dtype
    // in `weights`; the quantised roles are named. A list entry, when there is one, is cited.
    quant_formats::kept_role& k = f.kept_roles["router"];
    if (k.field.empty()) {
      k.field = f.origin;
      k.why = from_modelopt ? "ModelOpt never quantises MoE routers"
                            : "FP8 block quantisation converts Linear layers, never the router";
    }
    k.all = true;
  }
  return f;
}

}  // namespace calc::hf
