#include "spec/hf/nas.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace calc::hf {

using nlohmann::json;

namespace {

/// One layer as its block_configs entry states it.
struct nas_layer {
  std::int64_t kv_heads = 0;      // 0: no attention (attention.no_op)
  std::int64_t intermediate = 0;  // 0: no feed-forward (ffn.no_op)
  std::int64_t norms() const { return (kv_heads > 0 ? 1 : 0) + (intermediate > 0 ? 1 : 0); }
  auto key() const { return std::tie(kv_heads, intermediate); }
  bool operator<(const nas_layer& o) const { return key() < o.key(); }
  bool operator==(const nas_layer& o) const { return key() == o.key(); }
};

/// The SwiGLU width of an ffn_mult, as DeciLM sizes it (_ffn_mult_to_intermediate_size):
/// int(2 * ffn_mult * hidden / 3), rounded up to a multiple of 256. Ultra's ffn_mult values
/// (0.4875, 1.95, 3.4125, ...) are not binary fractions, so the product is not a whole number;
/// the reference evaluates that expression in Python floats (IEEE doubles, left to right) and
/// truncates, and the same double expression here truncates to the same integer.
std::int64_t swiglu_width(const hf_object& ffn, std::int64_t hidden) {
  const json& v = ffn.value("ffn_mult");
  if (!v.is_number() || v.get<double>() <= 0)
    ffn.fail("ffn_mult", "expected a positive number (the SwiGLU width over the hidden size)");
  double width_f = 2.0 * v.get<double>() * static_cast<double>(hidden) / 3.0;
  if (!(width_f < 1e15))
    ffn.fail("ffn_mult",
             fmt::format("2 x ffn_mult x hidden_size / 3 = {} is out of range", width_f));
  std::int64_t width = static_cast<std::int64_t>(width_f);  // int() truncates
  return (width + 255) / 256 * 256;
}

/// Fails at a field a layer sets to something calc has no kind for.
void refuse_if(const hf_object& block, const std::string& key, bool set, const std::string& why) {
  if (block.has(key) && set) block.fail(key, fmt::format("nemotron-nas: {}", why));
}

std::string dtype_name(const hf_object& root, const std::string& key) {
  std::string t = root.text(key);
  if (t == "bfloat16") return "bf16";
  if (t == "float16") return "fp16";
  if (t == "float32") return "fp32";
  root.fail(key, fmt::format("dtype '{}' is not mapped (bfloat16, float16, float32)", t));
}

/// "key: value" padded to the comment column of the other imports.
std::string line(int indent, const std::string& kv, const std::string& comment) {
  std::string s = std::string(static_cast<std::size_t>(indent), ' ') + kv;
  if (comment.empty()) return s + "\n";
  if (s.size() < 36) s.resize(36, ' ');
  else s += ' ';
  return s + "# " + comment + "\n";
}

}  // namespace

imported translate_block_configs(const hf_json& doc, const std::string& name,
                                 const std::string& repo) {
  hf_object root(doc, "");
  if (root.has("quantization_config"))
    root.fail("quantization_config", "nemotron-nas: a quantised checkpoint is not mapped");
  std::int64_t hidden = root.integer("hidden_size");
  std::int64_t heads = root.integer("num_attention_heads");
  if (hidden <= 0 || heads <= 0 || hidden % heads != 0)
    root.fail("num_attention_heads", "expected a positive divisor of hidden_size");
  std::int64_t head_dim = root.has("head_dim") ? root.integer("head_dim") : hidden / heads;
  std::int64_t count = root.integer("num_hidden_layers");
  const json& blocks = root.value("block_configs");
  if (!blocks.is_array() || static_cast<std::int64_t>(blocks.size()) != count)
    root.fail("block_configs", fmt::format("expected one entry per layer ({})", count));

  std::vector<nas_layer> layer(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    hf_object b(doc, fmt::format("/block_configs/{}", i));
    hf_object a = b.object("attention");
    hf_object f = b.object("ffn");
    refuse_if(a, "replace_with_linear", a.has("replace_with_linear") && a.boolean("replace_with_linear"),
              "an attention replaced by one hidden x hidden linear has no layer kind in calc");
    refuse_if(f, "replace_with_linear", f.has("replace_with_linear") && f.boolean("replace_with_linear"),
              "a feed-forward replaced by one hidden x hidden linear has no layer kind in calc");
    refuse_if(a, "sparsify", a.has("sparsify"), "sparsified attention is not mapped");
    refuse_if(f, "sparsify", f.has("sparsify"), "a sparsified feed-forward is not mapped");
    refuse_if(a, "window_length", a.has("window_length"),
              "a windowed attention block is not mapped (Super and Ultra set none)");
    refuse_if(a, "num_sink_tokens", a.has("num_sink_tokens"), "sink tokens are not mapped");
    refuse_if(a, "unshifted_sink", a.has("unshifted_sink") && a.boolean("unshifted_sink"),
              "sink tokens are not mapped");
    nas_layer& l = layer[static_cast<std::size_t>(i)];
    if (!(a.has("no_op") && a.boolean("no_op"))) {
      std::int64_t group = a.integer("n_heads_in_group");
      if (group <= 0 || heads % group != 0)
        a.fail("n_heads_in_group", fmt::format("expected a divisor of num_attention_heads ({})",
                                               heads));
      l.kv_heads = heads / group;
    }
    if (!(f.has("no_op") && f.boolean("no_op"))) l.intermediate = swiglu_width(f, hidden);
  }

  // The most frequent layer is the base; every other one is a variant named by what it has.
  std::map<nas_layer, std::vector<std::int64_t>> at;
  for (std::int64_t i = 0; i < count; ++i) at[layer[static_cast<std::size_t>(i)]].push_back(i);
  nas_layer base = layer[0];
  for (const auto& [l, where] : at)
    if (where.size() > at[base].size()) base = l;
  auto variant = [](const nas_layer& l) {
    std::string a = l.kv_heads > 0 ? fmt::format("gqa{}", l.kv_heads) : "no_attention";
    std::string f = l.intermediate > 0 ? fmt::format("ffn{}", l.intermediate) : "no_ffn";
    return a + "_" + f;
  };
  auto blocks_of = [&](const nas_layer& l, int indent) {
    std::string s;
    if (l.kv_heads > 0) {
      s += line(indent, "attention:", "block_configs[].attention (n_heads_in_group)");
      s += line(indent + 2, "kind: gqa", "");
      s += line(indent + 2, fmt::format("q_heads: {}", heads), "num_attention_heads");
      s += line(indent + 2, fmt::format("kv_heads: {}", l.kv_heads),
                "num_attention_heads / n_heads_in_group");
      s += line(indent + 2, fmt::format("head_dim: {}", head_dim),
                root.has("head_dim") ? "head_dim" : "hidden_size / num_attention_heads");
    } else {
      s += line(indent, "attention: none", "block_configs[].attention.no_op");
    }
    if (l.intermediate > 0) {
      s += line(indent, "ffn:", "block_configs[].ffn (ffn_mult)");
      s += line(indent + 2, "kind: swiglu", "");
      s += line(indent + 2, fmt::format("intermediate: {}", l.intermediate),
                "int(2 x ffn_mult x hidden_size / 3), up to a multiple of 256");
    } else {
      s += line(indent, "ffn: none", "block_configs[].ffn.no_op");
    }
    s += line(indent, fmt::format("norms: {}", l.norms()),
              "an RMSNorm before each block the layer has");
    return s;
  };

  std::string y;
  y += fmt::format(
      "# Imported by `calc import` from {} (model_type nemotron-nas: each layer's block_configs "
      "entry, read by src/spec/hf/nas.cpp).\n",
      doc.file());
  y += "# Each value names the config field it came from, or the rule that derived it.\n";
  y += line(0, "schema: 1", "");
  y += line(0, fmt::format("name: \"{}\"", name), "");
  y += line(0,
            fmt::format("source: \"{}\"", repo.empty() ? fmt::format("calc import of {}", doc.file())
                                                       : fmt::format("{} config.json (calc import of {})",
                                                                     repo, doc.file())),
            "");
  y += line(0, fmt::format("vocab: {}", root.integer("vocab_size")), "vocab_size");
  y += line(0, fmt::format("hidden: {}", hidden), "hidden_size");
  bool tie = root.has("tie_word_embeddings") && root.boolean("tie_word_embeddings");
  y += line(0, fmt::format("tie_embeddings: {}", tie ? "true" : "false"),
            root.has("tie_word_embeddings") ? "tie_word_embeddings"
                                            : "default of nemotron-nas (tie_word_embeddings absent)");
  if (root.has("max_position_embeddings"))
    y += line(0, fmt::format("max_position_embeddings: {}", root.integer("max_position_embeddings")),
              "max_position_embeddings");
  std::string dtype = "bf16", origin = "default: bf16 (no torch_dtype)";
  for (const char* key : {"torch_dtype", "dtype"})
    if (root.has(key) && origin.starts_with("default")) dtype = dtype_name(root, key), origin = key;
  y += "precision:\n";
  y += line(2, fmt::format("weights: {}", dtype), origin);
  y += line(2, fmt::format("kv: {}", dtype), origin + " (the cache keeps the model dtype)");
  if (dtype != "bf16")
    y += line(2, fmt::format("norms: {}", dtype), origin + " (norm weights in the model dtype)");
  y += "layers:\n";
  y += line(2, fmt::format("count: {}", count), "num_hidden_layers");
  y += blocks_of(base, 2);
  if (at.size() > 1) {
    y += "  variants:\n";
    for (const auto& [l, where] : at) {
      if (l == base) continue;
      y += fmt::format("    {}:\n", variant(l));
      y += blocks_of(l, 6);
    }
    y += "  overrides:\n";
    for (const auto& [l, where] : at) {
      if (l == base) continue;
      std::string list;
      for (std::int64_t i : where) list += (list.empty() ? "" : ", ") + std::to_string(i);
      y += fmt::format("    - {{at: [{}], variant: {}}}\n", list, variant(l));
    }
  }
  imported out;
  out.yaml = y;
  out.model_type = block_configs_model_type;
  out.file = doc.file();
  // The same lines without comments (a '#' never occurs in a value here).
  std::string plain, cur;
  for (char c : y) {
    cur += c;
    if (c != '\n') continue;
    auto hash = cur.find('#');
    if (hash == 0) {
      cur.clear();
      continue;
    }
    if (hash != std::string::npos) {
      cur.erase(hash);
      while (!cur.empty() && cur.back() == ' ') cur.pop_back();
      cur += '\n';
    }
    plain += cur;
    cur.clear();
  }
  out.plain = plain;
  return out;
}

}  // namespace calc::hf
