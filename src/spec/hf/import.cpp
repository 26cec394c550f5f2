#include "spec/hf/import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/limits.h"
#include "spec/hf/checkpoint.h"
#include "spec/hf/families.h"
#include "spec/hf/hf_json.h"
#include "spec/hf/hub.h"
#include "spec/hf/nas.h"
#include "spec/hf/quant.h"
#include "spec/hf/vision.h"

namespace calc::hf {

namespace {

using nlohmann::json;

// ---- model YAML with a comment per value -----------------------------------------------------

/// One line of the YAML being written: a scalar, or a mapping of further nodes.
struct ynode {
  std::string key;
  std::string value;  // scalar text; empty for a mapping
  std::string comment;
  std::vector<ynode> kids;
};

ynode scalar(std::string key, std::string value, std::string comment) {
  return {std::move(key), std::move(value), std::move(comment), {}};
}

/// `annotate` false writes the same lines without their comments: what `--model` reads, since
/// yaml-cpp spends as long on a comment as on a value (line numbers stay those `calc import`
/// prints).
void emit(std::string& out, const ynode& n, int indent, bool annotate) {
  std::string line = std::string(static_cast<std::size_t>(indent), ' ') + n.key + ":";
  if (!n.value.empty()) line += " " + n.value;
  if (annotate && !n.comment.empty()) {
    line.resize(std::max<std::size_t>(line.size() + 2, 36), ' ');
    line += "# " + n.comment;
  }
  out += line + "\n";
  for (const ynode& k : n.kids) emit(out, k, indent + 2, annotate);
}

/// Emits a list of flow mappings ("- {at: [0, 1], variant: dense}  # why").
void emit_list(std::string& out, const std::string& key, const std::vector<ynode>& items,
               int indent, bool annotate) {
  out += std::string(static_cast<std::size_t>(indent), ' ') + key + ":\n";
  for (const ynode& item : items) {
    std::string line = std::string(static_cast<std::size_t>(indent + 2), ' ') + "- " + item.value;
    if (annotate && !item.comment.empty()) line += "  # " + item.comment;
    out += line + "\n";
  }
}

/// A scalar node of an integer read before its origin is taken (argument order is unspecified).
ynode numbered(std::string key, std::int64_t value, const std::string& origin) {
  return {std::move(key), std::to_string(value), origin, {}};
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

std::string int_list(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// ---- reading a family's roles ----------------------------------------------------------------

/// A value read for a role, and where it came from (a config field or the family default).
struct valued {
  json value;
  std::string origin;
};

class family_reader {
 public:
  family_reader(const family& f, hf_object cfg) : f_(f), cfg_(std::move(cfg)) {}

  const hf_object& cfg() const { return cfg_; }
  const family& fam() const { return f_; }

  /// The config field of a role in this family; "" when the family has none. Its alias
  /// (family::aliases) when the config gives only that; both, with different values, an error.
  std::string field(const std::string& role) const {
    auto it = f_.names.find(role);
    const std::string own = it != f_.names.end() ? it->second : common_names().at(role);
    auto al = f_.aliases.find(role);
    if (al == f_.aliases.end() || !cfg_.has(al->second)) return own;
    // The configuration class maps the alternative onto the role's own field (attribute_map).
    if (!cfg_.has(own)) return al->second;
    if (cfg_.value(own) != cfg_.value(al->second))
      cfg_.fail(al->second, fmt::format("differs from {} ({} here); {} reads one value for both",
                                        own, cfg_.value(own).dump(), f_.model_type));
    return own;
  }

  /// The object holding a field and the key within it: "a.b" is field b of the nested object a
  /// (linear_attn_config.num_heads); a missing outer object leaves the field absent.
  std::pair<hf_object, std::string> at(const std::string& fld) const {
    auto dot = fld.find('.');
    if (dot == std::string::npos) return {cfg_, fld};
    std::string outer = fld.substr(0, dot);
    if (!cfg_.has(outer) || !cfg_.value(outer).is_object()) return {cfg_, fld};
    return {cfg_.object(outer), fld.substr(dot + 1)};
  }

  /// True when the config gives the role's field (present and not null).
  bool given(const std::string& role) const {
    std::string fld = field(role);
    if (fld.empty()) return false;
    auto [o, k] = at(fld);
    return o.has(k);
  }

  /// Raises a located error about a role's field.
  [[noreturn]] void fail(const std::string& role, const std::string& message) const {
    std::string fld = field(role);
    auto [o, k] = at(fld.empty() ? role : fld);
    o.fail(k, message);
  }

  /// The role's value: the config field when given, else the family's documented default.
  valued get(const std::string& role) const {
    std::string fld = field(role);
    if (given(role)) {
      auto [o, k] = at(fld);
      return {o.value(k), fld};
    }
    if (!f_.defaults.contains(role))
      fail(role, fmt::format("missing required field ({} has no default for it)", f_.model_type));
    const json& d = f_.defaults.at(role);
    if (d.is_string() && d.get<std::string>().starts_with("=")) return derived(role, d);
    std::string origin = fld.empty() ? fmt::format("fixed in {}", f_.model_type)
                                     : fmt::format("default of {} ({} absent)", f_.model_type, fld);
    return {d, origin};
  }

  std::int64_t integer(const std::string& role, std::string& origin) const {
    valued v = get(role);
    origin = v.origin;
    if (given(role)) {  // located type check
      auto [o, k] = at(field(role));
      if (o.value(k).is_array() && per_layer(role)) return uniform_entry(o, k, origin);
      return o.integer(k);
    }
    return v.value.get<std::int64_t>();
  }

  /// A width that must be positive (heads, dimensions, counts).
  std::int64_t positive(const std::string& role, std::string& origin) const {
    std::int64_t v = integer(role, origin);
    if (v == 0) fail(role, "must be positive, got 0");
    return v;
  }

  bool flag(const std::string& role, std::string& origin) const {
    valued v = get(role);
    origin = v.origin;
    if (given(role)) {
      auto [o, k] = at(field(role));
      return o.boolean(k);
    }
    return v.value.get<bool>();
  }

  std::vector<std::int64_t> integers(const std::string& role, std::string& origin) const {
    valued v = get(role);
    origin = v.origin;
    if (given(role)) {
      auto [o, k] = at(field(role));
      return o.integers(k);
    }
    return v.value.get<std::vector<std::int64_t>>();
  }

  /// An optional value: none when the config gives null and the default is null too.
  std::optional<std::int64_t> optional_integer(const std::string& role, std::string& origin) const {
    std::string fld = field(role);
    auto [o, k] = at(fld);
    if (!fld.empty() && o.is_null(k)) {
      origin = fld;
      return std::nullopt;
    }
    if (!fld.empty() && o.has(k)) {
      origin = fld;
      return o.integer(k);
    }
    valued v = get(role);
    origin = v.origin;
    if (v.value.is_null()) return std::nullopt;
    return v.value.get<std::int64_t>();
  }

 private:
  /// Whether the family reads the role's field as a per-layer list (families.h).
  bool per_layer(const std::string& role) const {
    return std::find(f_.per_layer_lists.begin(), f_.per_layer_lists.end(), role) !=
           f_.per_layer_lists.end();
  }

  /// A per-layer list read as its one value: every entry the same integer, else an error there.
  std::int64_t uniform_entry(const hf_object& o, const std::string& k, std::string& origin) const {
    std::vector<std::int64_t> v = o.integers(k);
    if (v.empty()) o.fail(k, "an empty per-layer list");
    for (std::int64_t x : v)
      if (x != v.front())
        o.fail(k, fmt::format("per-layer values differ ({} and {}); calc reads one value for "
                              "every layer of {}",
                              v.front(), x, f_.model_type));
    origin = fmt::format("{} (the same in all {} per-layer entries)", origin, v.size());
    return v.front();
  }

  /// "=a/b" or "=a": a default computed from other roles (head_dim = hidden / heads); "=n*a":
  /// a whole multiple of one (GPT-2's n_inner null: 4 x n_embd).
  valued derived(const std::string& role, const json& d) const {
    std::string expr = d.get<std::string>().substr(1);
    if (auto star = expr.find('*'); star != std::string::npos) return multiple(role, expr, star);
    auto slash = expr.find('/');
    std::string a = expr.substr(0, slash);
    std::string b = slash == std::string::npos ? "" : expr.substr(slash + 1);
    std::string fld = field(role);
    std::string rule = b.empty() ? field(a) : fmt::format("{} / {}", field(a), field(b));
    auto need = [&](const std::string& r) -> std::int64_t {
      std::string o;
      std::string rf = field(r);
      if (given(r)) {
        auto [ro, rk] = at(rf);
        return ro.integer(rk);
      }
      if (f_.defaults.contains(r) && f_.defaults.at(r).is_number_integer())
        return f_.defaults.at(r).get<std::int64_t>();
      cfg_.fail(fld, fmt::format("missing, and the {} default {} needs {}", f_.model_type, rule,
                                 rf.empty() ? r : rf));
    };
    std::int64_t va = need(a);
    std::int64_t value = va;
    if (!b.empty()) {
      std::int64_t vb = need(b);
      if (vb == 0 || va % vb != 0)
        cfg_.fail(fld, fmt::format("missing, and the {} default {} is not a whole number ({} / {})",
                                   f_.model_type, rule, va, vb));
      value = va / vb;
    }
    if (fld.empty()) return {value, fmt::format("{} (rule of {})", rule, f_.model_type)};
    return {value, fmt::format("{} (default of {}, {} absent)", rule, f_.model_type, fld)};
  }

  /// "=n*a": n (an integer, or a role such as MPT's expansion_ratio) times role a, each from
  /// the config or its integer default.
  valued multiple(const std::string& role, const std::string& expr, std::size_t star) const {
    const std::string fld = field(role);
    // One factor: an integer literal, else a role's value; each kept far inside int64.
    auto factor = [&](const std::string& f, std::string& name) -> std::int64_t {
      if (!f.empty() && f.find_first_not_of("0123456789") == std::string::npos) {
        name = f;
        return std::stoll(f);
      }
      std::string ff = field(f);
      name = ff.empty() ? f : ff;
      std::int64_t v = 0;
      if (given(f)) {
        auto [fo, fk] = at(ff);
        v = fo.integer(fk);
      } else if (f_.defaults.contains(f) && f_.defaults.at(f).is_number_integer()) {
        v = f_.defaults.at(f).get<std::int64_t>();
      } else {
        cfg_.fail(fld, fmt::format("missing, and the {} default {} needs {}", f_.model_type,
                                   expr, name));
      }
      if (v > limits::tokens)
        cfg_.fail(ff.empty() ? fld : ff, fmt::format("{} is too large", v));
      return v;
    };
    std::string nn, an;
    const std::int64_t n = factor(expr.substr(0, star), nn);
    const std::int64_t va = factor(expr.substr(star + 1), an);
    if (n > 0 && va > limits::tokens / n)  // a width past any model's, and past int64 soon
      cfg_.fail(fld.empty() ? expr : fld,
                fmt::format("{} x {} = {} x {} is too large", nn, an, n, va));
    std::string rule = fmt::format("{} x {}", nn, an);
    if (fld.empty()) return {n * va, fmt::format("{} (rule of {})", rule, f_.model_type)};
    return {n * va, fmt::format("{} (default of {}, {} absent)", rule, f_.model_type, fld)};
  }

  const family& f_;
  hf_object cfg_;
};

// ---- layers ----------------------------------------------------------------------------------

enum class attn_kind { full, sliding, linear, mamba, none, parallel, chunked, block_sparse };
enum class ffn_kind { dense, moe, none };

/// Names of the kinds in variant names ("sliding", "mamba_dense", ...).
const char* attn_name(attn_kind k) {
  switch (k) {
    case attn_kind::full:
      return "full";
    case attn_kind::sliding:
      return "sliding";
    case attn_kind::linear:
      return "linear";
    case attn_kind::mamba:
      return "mamba";
    case attn_kind::none:
      return "no_mixer";
    case attn_kind::parallel:
      return "parallel";
    case attn_kind::chunked:
      return "chunked";
    case attn_kind::block_sparse:
      return "block_sparse";
  }
  return "full";
}

/// The name of a layer kind in a family's variant names: LFM2's mixer layers are "conv".
std::string mixer_name(const family& f, attn_kind k) {
  if (k == attn_kind::mamba && f.ssm == ssm_family::short_conv) return "conv";
  return attn_name(k);
}

const char* ffn_name(ffn_kind k) {
  switch (k) {
    case ffn_kind::dense:
      return "dense";
    case ffn_kind::moe:
      return "moe";
    case ffn_kind::none:
      return "no_ffn";
  }
  return "dense";
}

// ---- quantisation ----------------------------------------------------------------------------

/// Checks that the self_attn projections a checkpoint leaves unquantised (quant_formats::
/// kept_attention_inputs) are, in every layer, exactly the attention's input projections, so
/// that `attention` (the inputs) and `attention_out` (o_proj) are exact; any other set would
/// need a format per module.
void check_attention_inputs(const family_reader& r, const quant_formats& q,
                            const std::vector<attn_kind>& attn) {
  auto kept = q.kept_roles.find("attention_in");
  if (kept == q.kept_roles.end()) return;
  const quant_formats::kept_role& k = kept->second;
  auto fail = [&](const std::string& why) {
    throw spec_error(k.where, k.field,
                     fmt::format("{}; calc keeps one format for the attention inputs and one for "
                                 "o_proj, not per module",
                                 why));
  };
  if (q.kept_roles.count("attention"))
    fail("some layers leave all of self_attn unquantised, others only its input projections");
  for (attn_kind a : attn)
    if (a != attn_kind::full && a != attn_kind::sliding && a != attn_kind::chunked &&
        a != attn_kind::block_sparse)
      fail(fmt::format("self_attn input projections stay unquantised on a model with {} layers",
                       attn_name(a)));
  std::string o;
  bool mla = r.fam().attention == attention_family::mla;
  if (r.flag("output_gate", o) || (mla && r.flag("mla_gate", o)))
    fail("self_attn input projections stay unquantised on attention with an output gate");
  std::set<std::string> want = {"q_proj", "k_proj", "v_proj"};
  if (mla)
    want = r.optional_integer("q_rank", o)
               ? std::set<std::string>{"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}
               : std::set<std::string>{"q_proj", "kv_a_proj_with_mqa", "kv_b_proj"};
  for (const auto& [layer, got] : q.kept_attention_inputs)
    if (got != want)
      fail(
          fmt::format("layer {} leaves self_attn.{{{}}} unquantised, but the input projections of "
                      "its {} attention are self_attn.{{{}}}",
                      layer, fmt::join(got, ", "), mla ? "MLA" : "GQA", fmt::join(want, ", ")));
}

/// The state-space hybrids' layer rules (families_ssm.cpp): Jamba's periods and offsets, Bamba's
/// list of attention layers. False for any other rule.
bool ssm_hybrid_kinds(const family_reader& r, std::int64_t count, std::vector<attn_kind>& attn,
                      std::vector<ffn_kind>& ffn, std::string& origin) {
  const hf_object& cfg = r.cfg();
  const layer_rule rule = r.fam().layers;
  if (rule != layer_rule::period_hybrid && rule != layer_rule::indexed_hybrid &&
      rule != layer_rule::conv_hybrid)
    return false;
  if (rule == layer_rule::conv_hybrid && cfg.has("layer_types")) {
    // LFM2: "conv" a short convolution, "full_attention" attention; the feed-forward on each.
    origin = "layer_types";
    const json& v = cfg.value("layer_types");
    if (!v.is_array() || static_cast<std::int64_t>(v.size()) != count)
      cfg.fail("layer_types",
               fmt::format("expected a list of {} layer types (num_hidden_layers)", count));
    attn.assign(v.size(), attn_kind::mamba);
    ffn.assign(v.size(), ffn_kind::dense);
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string t = v[i].is_string() ? v[i].get<std::string>() : v[i].dump();
      if (t == "full_attention") {
        attn[i] = attn_kind::full;
      } else if (t != "conv") {
        throw spec_error(cfg.doc().where(fmt::format("{}/layer_types/{}", cfg.pointer(), i)),
                         fmt::format("{}[{}]", cfg.path_of("layer_types"), i),
                         fmt::format("unknown layer type '{}' for {} (calc reads conv, "
                                     "full_attention)",
                                     t, r.fam().model_type));
      }
    }
    return true;
  }
  // Neither family's attention slides in calc's reading: a window would change the cache, so it
  // is an error rather than ignored.
  for (const std::string& f : {std::string("sliding_window"), std::string("layer_types")})
    if (cfg.has(f) && rule != layer_rule::conv_hybrid)
      cfg.fail(f, fmt::format("not read for {} (its attention is full; expected null or absent)",
                              r.fam().model_type));
  attn.assign(static_cast<std::size_t>(count), attn_kind::mamba);
  ffn.assign(static_cast<std::size_t>(count), ffn_kind::dense);
  std::string o;
  if (rule == layer_rule::indexed_hybrid || rule == layer_rule::conv_hybrid) {
    // Bamba, LFM2 without layer_types: attention on the listed 0-based layers. None listed:
    // BambaConfig makes every layer a mixer, Lfm2Config every layer attention (its
    // full_attn_idxs defaults to range(num_hidden_layers)).
    origin = r.field("attn_layers");
    if (!r.given("attn_layers") && rule == layer_rule::conv_hybrid)
      attn.assign(static_cast<std::size_t>(count), attn_kind::full);
    if (r.given("attn_layers"))
      for (std::int64_t i : r.integers("attn_layers", o)) {
        if (i < 0 || i >= count)
          r.fail("attn_layers",
                 fmt::format("layer {} is outside 0..{} (num_hidden_layers)", i, count - 1));
        attn[static_cast<std::size_t>(i)] = attn_kind::full;
      }
    return true;
  }
  // Jamba: attention where i % period == offset, MoE where i % expert period == expert offset
  // (JambaConfig.layers_block_type and layers_num_experts), a dense MLP when num_experts is 1.
  std::string po, oo, eo, fo, no;
  std::int64_t period = r.positive("attn_period", po), offset = r.integer("attn_offset", oo);
  std::int64_t eperiod = r.positive("expert_period", eo), eoffset = r.integer("expert_offset", fo);
  if (offset >= period)
    r.fail("attn_offset", fmt::format("{} is not below {} ({})", offset, period, po));
  if (eoffset >= eperiod)
    r.fail("expert_offset", fmt::format("{} is not below {} ({})", eoffset, eperiod, eo));
  const bool moe = r.positive("experts", no) > 1;
  origin = fmt::format(
      "attention where layer % {} == {} ({}, {}), a Mamba mixer elsewhere; MoE "
      "where layer % {} == {} ({}, {})",
      period, offset, po, oo, eperiod, eoffset, eo, fo);
  for (std::int64_t i = 0; i < count; ++i) {
    if (i % period == offset) attn[static_cast<std::size_t>(i)] = attn_kind::full;
    if (moe && i % eperiod == eoffset) ffn[static_cast<std::size_t>(i)] = ffn_kind::moe;
  }
  return true;
}

/// Layers whose kinds one string spells, a character per layer (Nemotron-H's
/// hybrid_override_pattern: M Mamba2 mixer, * attention, - MLP, E MoE; each layer has only one).
bool hybrid_kinds(const family_reader& r, std::int64_t count, std::vector<attn_kind>& attn,
                  std::vector<ffn_kind>& ffn, std::string& origin) {
  const hf_object& cfg = r.cfg();
  if (r.fam().layers == layer_rule::mixer_only) {
    origin = fmt::format("every {} layer is a {} mixer", r.fam().model_type,
                         r.fam().ssm == ssm_family::mamba1 ? "Mamba" : "Mamba2");
    attn.assign(static_cast<std::size_t>(count), attn_kind::mamba);
    ffn.assign(static_cast<std::size_t>(count), ffn_kind::none);
    return true;
  }
  if (r.fam().layers == layer_rule::parallel_hybrid) {
    // Falcon-H1: attention and the mixer in every layer. A list of attention layers would make
    // the others mixer-only, which calc does not read from this family: say so, never guess.
    std::string fld = r.field("attn_layers");
    if (cfg.has(fld))
      cfg.fail(fld, fmt::format("attention on only the listed layers is not read (calc reads {} "
                                "with attention and the Mamba2 mixer in every layer; expected "
                                "null)",
                                r.fam().model_type));
    // Nor does this family's attention slide or vary by layer: a value here would change the
    // cache, so it is an error rather than ignored.
    for (const std::string& f : {r.field("window"), std::string("layer_types")})
      if (cfg.has(f))
        cfg.fail(f, fmt::format("not read for {} (its attention is full on every layer; "
                                "expected null or absent)",
                                r.fam().model_type));
    origin = fmt::format("every {} layer runs attention and a Mamba2 mixer in parallel",
                         r.fam().model_type);
    attn.assign(static_cast<std::size_t>(count), attn_kind::parallel);
    ffn.assign(static_cast<std::size_t>(count), ffn_kind::dense);
    return true;
  }
  if (r.fam().layers == layer_rule::typed_hybrid) {
    // Granite 4.0-H: layer_types names each layer's mixer; the feed-forward follows every mixer,
    // MoE (with the shared MLP as its shared expert) when the config has routed experts, else
    // the shared MLP alone.
    origin = "layer_types";
    if (!cfg.has("layer_types") || !cfg.value("layer_types").is_array() ||
        static_cast<std::int64_t>(cfg.value("layer_types").size()) != count)
      cfg.fail("layer_types",
               fmt::format("expected a list of {} layer types (num_hidden_layers)", count));
    std::string eo;
    ffn_kind f = r.integer("experts", eo) > 0 ? ffn_kind::moe : ffn_kind::dense;
    const json& v = cfg.value("layer_types");
    attn.resize(v.size());
    ffn.assign(v.size(), f);
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string t = v[i].is_string() ? v[i].get<std::string>() : v[i].dump();
      if (t == "mamba") {
        attn[i] = attn_kind::mamba;
      } else if (t == "attention") {
        attn[i] = attn_kind::full;
      } else {
        throw spec_error(cfg.doc().where(fmt::format("{}/layer_types/{}", cfg.pointer(), i)),
                         fmt::format("{}[{}]", cfg.path_of("layer_types"), i),
                         fmt::format("unknown layer type '{}' for {} (calc reads mamba, attention)",
                                     t, r.fam().model_type));
      }
    }
    return true;
  }
  if (ssm_hybrid_kinds(r, count, attn, ffn, origin)) return true;
  if (r.fam().layers != layer_rule::hybrid_pattern) return false;
  std::string o;
  std::string pattern = r.get("hybrid").value.get<std::string>();
  origin = r.field("hybrid");
  if (static_cast<std::int64_t>(pattern.size()) != count)
    cfg.fail(origin,
             fmt::format("{} characters for {} layers (num_hidden_layers)", pattern.size(), count));
  attn.resize(pattern.size());
  ffn.resize(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    switch (pattern[i]) {
      case 'M':
        attn[i] = attn_kind::mamba, ffn[i] = ffn_kind::none;
        break;
      case '*':
        attn[i] = attn_kind::full, ffn[i] = ffn_kind::none;
        break;
      case '-':
        attn[i] = attn_kind::none, ffn[i] = ffn_kind::dense;
        break;
      case 'E':
        attn[i] = attn_kind::none, ffn[i] = ffn_kind::moe;
        break;
      default:
        cfg.fail(origin, fmt::format("layer {}: unknown block '{}' (calc reads M, *, - and E)", i,
                                     pattern[i]));
    }
  }
  return true;
}

/// Each layer's attention kind, from layer_types where given, else from the family's rule.
std::vector<attn_kind> attention_kinds(const family_reader& r, std::int64_t count, bool has_window,
                                       std::string& origin) {
  const hf_object& cfg = r.cfg();
  std::vector<attn_kind> kinds(static_cast<std::size_t>(count), attn_kind::full);
  if (cfg.has("layer_types")) {
    origin = "layer_types";
    const json& v = cfg.value("layer_types");
    if (!v.is_array() || static_cast<std::int64_t>(v.size()) != count)
      cfg.fail("layer_types",
               fmt::format("expected a list of {} layer types (num_hidden_layers)", count));
    const bool linear_ok =
        r.fam().layers == layer_rule::linear_interval || r.fam().layers == layer_rule::type_list;
    const bool chunked_ok = r.fam().layers == layer_rule::chunked_nope;
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string t = v[i].is_string() ? v[i].get<std::string>() : v[i].dump();
      std::string where = fmt::format("{}/layer_types/{}", cfg.pointer(), i);
      std::string path = fmt::format("{}[{}]", cfg.path_of("layer_types"), i);
      if (t == "full_attention") {
        kinds[i] = attn_kind::full;
      } else if (t == "sliding_attention") {
        if (!has_window)
          throw spec_error(cfg.doc().where(where), path,
                           "a sliding layer needs sliding_window, which is not set");
        kinds[i] = attn_kind::sliding;
      } else if (t == "linear_attention" && linear_ok) {
        kinds[i] = attn_kind::linear;
      } else if (t == "chunked_attention" && chunked_ok) {
        kinds[i] = attn_kind::chunked;
      } else {
        throw spec_error(
            cfg.doc().where(where), path,
            fmt::format("unknown layer type '{}' for {} (calc reads {})", t, r.fam().model_type,
                        linear_ok    ? "full_attention, sliding_attention, linear_attention"
                        : chunked_ok ? "full_attention, chunked_attention"
                                     : "full_attention, sliding_attention"));
      }
    }
    return kinds;
  }
  std::string o;
  switch (r.fam().layers) {
    case layer_rule::uniform:
      origin = has_window ? r.field("window") : "";
      if (has_window) std::fill(kinds.begin(), kinds.end(), attn_kind::sliding);
      break;
    case layer_rule::window_from: {
      bool on = r.flag("window_switch", o);
      origin = o;
      std::int64_t from = r.integer("window_from", o);
      if (on && has_window) {
        origin += ", " + o;
        for (std::int64_t i = from; i < count; ++i)
          kinds[static_cast<std::size_t>(i)] = attn_kind::sliding;
      }
      break;
    }
    case layer_rule::alternate_sliding:
      origin = fmt::format("even layers slide (rule of {})", r.fam().model_type);
      for (std::int64_t i = 0; i < count; i += 2)
        kinds[static_cast<std::size_t>(i)] = attn_kind::sliding;
      break;
    case layer_rule::sliding_pattern: {
      if (!has_window) break;  // no window (EXAONE-4.0-1.2B): every layer full
      if (valued v = r.get("sliding_pattern"); v.value.is_string()) {
        // EXAONE 4 spells the period as letters, "LLLG": L a local (sliding) layer, G a global
        // (full) one, repeated over the layers.
        std::string p = v.value.get<std::string>();
        if (p.empty() || p.find_first_not_of("LG") != std::string::npos)
          r.fail("sliding_pattern",
                 fmt::format("expected a period or letters L and G, got \"{}\"", p));
        origin = fmt::format("{} = \"{}\" (L sliding, G full)", v.origin, p);
        for (std::int64_t i = 0; i < count; ++i)
          if (p[static_cast<std::size_t>(i) % p.size()] == 'L')
            kinds[static_cast<std::size_t>(i)] = attn_kind::sliding;
        break;
      }
      std::int64_t p = r.positive("sliding_pattern", o);
      origin = fmt::format("full every {} layers: {}", p, o);
      for (std::int64_t i = 0; i < count; ++i)
        if ((i + 1) % p != 0) kinds[static_cast<std::size_t>(i)] = attn_kind::sliding;
      break;
    }
    case layer_rule::linear_interval: {
      std::int64_t p = r.positive("full_interval", o);
      origin = fmt::format("full every {} layers: {}", p, o);
      for (std::int64_t i = 0; i < count; ++i)
        if ((i + 1) % p != 0) kinds[static_cast<std::size_t>(i)] = attn_kind::linear;
      break;
    }
    case layer_rule::layer_lists: {
      // 1-based layer numbers (Kimi Linear): the full-attention list, and the linear list that,
      // where given, must name every other layer.
      std::fill(kinds.begin(), kinds.end(), attn_kind::linear);
      origin = r.field("full_layers");
      for (std::int64_t n : r.integers("full_layers", o)) {
        if (n < 1 || n > count)
          r.fail("full_layers",
                 fmt::format("layer {} is outside 1..{} (num_hidden_layers)", n, count));
        kinds[static_cast<std::size_t>(n - 1)] = attn_kind::full;
      }
      if (r.given("linear_layers")) {
        std::vector<std::int64_t> linear = r.integers("linear_layers", o);
        std::vector<bool> seen(static_cast<std::size_t>(count), false);
        for (std::int64_t n : linear) {
          if (n < 1 || n > count)
            r.fail("linear_layers",
                   fmt::format("layer {} is outside 1..{} (num_hidden_layers)", n, count));
          if (kinds[static_cast<std::size_t>(n - 1)] == attn_kind::full)
            r.fail("linear_layers", fmt::format("layer {} is also in {}", n, origin));
          seen[static_cast<std::size_t>(n - 1)] = true;
        }
        for (std::int64_t i = 0; i < count; ++i)
          if (kinds[static_cast<std::size_t>(i)] == attn_kind::linear &&
              !seen[static_cast<std::size_t>(i)])
            r.fail("linear_layers", fmt::format("layer {} is in neither {} nor {}", i + 1, origin,
                                                r.field("linear_layers")));
        origin += ", " + r.field("linear_layers");
      }
      break;
    }
    case layer_rule::type_list: {
      // MiniMax's attn_type_list: one code per layer, 0 lightning (linear) attention, 1 softmax.
      std::vector<std::int64_t> codes = r.integers("type_list", o);
      if (static_cast<std::int64_t>(codes.size()) != count)
        r.fail("type_list",
               fmt::format("expected {} entries (num_hidden_layers), got {}", count, codes.size()));
      origin = fmt::format("{} (0: lightning, 1: softmax attention)", o);
      for (std::int64_t i = 0; i < count; ++i) {
        std::int64_t v = codes[static_cast<std::size_t>(i)];
        if (v != 0 && v != 1)
          r.fail("type_list", fmt::format("entry {} is {}, expected 0 or 1", i, v));
        if (v == 0) kinds[static_cast<std::size_t>(i)] = attn_kind::linear;
      }
      break;
    }
    case layer_rule::sliding_flags: {
      // MiMo-V2-Flash's hybrid_layer_pattern: one entry per layer, 1 a sliding layer, 0 full.
      std::vector<std::int64_t> flags = r.integers("sliding_flags", o);
      if (static_cast<std::int64_t>(flags.size()) != count)
        r.fail("sliding_flags",
               fmt::format("expected {} entries (num_hidden_layers), got {}", count, flags.size()));
      origin = fmt::format("{} (1: sliding, 0: full attention)", o);
      for (std::int64_t i = 0; i < count; ++i) {
        std::int64_t v = flags[static_cast<std::size_t>(i)];
        if (v != 0 && v != 1)
          r.fail("sliding_flags", fmt::format("entry {} is {}, expected 0 or 1", i, v));
        if (v == 1) {
          if (!has_window)
            r.fail("sliding_flags",
                   fmt::format("layer {} slides, but no sliding window is set ({})", i,
                               r.field("window")));
          kinds[static_cast<std::size_t>(i)] = attn_kind::sliding;
        }
      }
      break;
    }
    case layer_rule::chunked_nope: {
      // Llama 4: no_rope_layers[i] = 1 keeps RoPE and attends within a chunk, 0 is a NoPE layer
      // over the whole history; without the list, every no_rope_layer_interval-th layer is NoPE
      // (Llama4TextConfig's default list).
      if (r.given("nope_layers")) {
        std::vector<std::int64_t> rope = r.integers("nope_layers", o);
        if (static_cast<std::int64_t>(rope.size()) < count)
          r.fail("nope_layers", fmt::format("expected {} entries (num_hidden_layers), got {}",
                                            count, rope.size()));
        origin = fmt::format("{} (1: RoPE, chunked; 0: NoPE, full)", o);
        for (std::int64_t i = 0; i < count; ++i) {
          std::int64_t v = rope[static_cast<std::size_t>(i)];
          if (v != 0 && v != 1)
            r.fail("nope_layers", fmt::format("entry {} is {}, expected 0 or 1", i, v));
          if (v == 1) kinds[static_cast<std::size_t>(i)] = attn_kind::chunked;
        }
      } else {
        std::int64_t p = r.positive("nope_interval", o);
        origin = fmt::format("NoPE (full) every {} layers, the others chunked: {}", p, o);
        for (std::int64_t i = 0; i < count; ++i)
          if ((i + 1) % p != 0) kinds[static_cast<std::size_t>(i)] = attn_kind::chunked;
      }
      break;
    }
    case layer_rule::dense_every: {
      // Phi-3-small: layer i is dense when (i + 1) % n == 0, block-sparse otherwise; n = 0 (or
      // null) makes every layer block-sparse, as the modeling code's falsy test does.
      std::int64_t n = r.optional_integer("dense_every", o).value_or(0);
      origin = n > 0 ? fmt::format("block-sparse, dense where (i + 1) % {} == 0: {}", n, o)
                     : fmt::format("block-sparse everywhere: {} is {}", o, n);
      for (std::int64_t i = 0; i < count; ++i)
        if (n == 0 || (i + 1) % n != 0)
          kinds[static_cast<std::size_t>(i)] = attn_kind::block_sparse;
      break;
    }
    case layer_rule::hybrid_pattern:
    case layer_rule::mixer_only:
    case layer_rule::parallel_hybrid:
    case layer_rule::typed_hybrid:
    case layer_rule::period_hybrid:
    case layer_rule::indexed_hybrid:
    case layer_rule::conv_hybrid:
      break;  // hybrid_kinds() reads these
  }
  return kinds;
}

/// Each layer's feed-forward: MoE from first_k_dense_replace on, every moe_layer_freq-th and
/// every decoder_sparse_step-th layer, except mlp_only_layers (the rules of DeepSeek and Qwen).
std::vector<ffn_kind> ffn_kinds(const family_reader& r, std::int64_t count, std::string& origin) {
  std::vector<ffn_kind> kinds(static_cast<std::size_t>(count), ffn_kind::dense);
  if (r.fam().ffn == ffn_family::dense) return kinds;
  if (r.fam().names.count("moe_flags") > 0 && r.given("moe_flags")) {
    // One entry per layer, 1 MoE and 0 dense (MiMo-V2-Flash's moe_layer_freq list), decides
    // alone.
    std::vector<std::int64_t> flags = r.integers("moe_flags", origin);
    if (static_cast<std::int64_t>(flags.size()) != count)
      r.fail("moe_flags",
             fmt::format("expected {} entries (num_hidden_layers), got {}", count, flags.size()));
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t v = flags[static_cast<std::size_t>(i)];
      if (v != 0 && v != 1) r.fail("moe_flags", fmt::format("entry {} is {}, expected 0 or 1", i, v));
      kinds[static_cast<std::size_t>(i)] = v == 1 ? ffn_kind::moe : ffn_kind::dense;
    }
    origin += " (1: MoE, 0: dense)";
    return kinds;
  }
  if (r.given("moe_layers")) {
    // An explicit list of 0-based MoE layers (Llama 4's moe_layers) decides alone.
    for (std::int64_t i : r.integers("moe_layers", origin)) {
      if (i < 0 || i >= count)
        r.fail("moe_layers",
               fmt::format("layer {} is outside 0..{} (num_hidden_layers)", i, count - 1));
      kinds[static_cast<std::size_t>(i)] = ffn_kind::moe;
    }
    return kinds;
  }
  std::string o1, o2, o3, o4;
  std::int64_t first = r.integer("first_dense", o1);
  std::int64_t freq = r.positive("moe_freq", o2);
  std::int64_t step = r.positive("sparse_step", o3);
  std::vector<std::int64_t> only = r.integers("mlp_only", o4);
  for (const std::string& o : {o1, o2, o3, o4})
    if (!o.starts_with("fixed") && !o.starts_with("default"))
      origin += (origin.empty() ? "" : ", ") + o;
  // The last MoE layer where a family names it (ERNIE 4.5's moe_layer_end_index; negative:
  // none, every layer from the first on).
  std::int64_t last = count - 1;
  if (std::string lf = r.field("last_moe"); !lf.empty() && r.cfg().has(lf)) {
    const json& v = r.cfg().value(lf);
    if (!(v.is_number_integer() && v.get<std::int64_t>() < 0)) last = r.cfg().integer(lf);
    origin += (origin.empty() ? "" : ", ") + lf;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    bool moe = i >= first && i <= last && i % freq == 0 && (i + 1) % step == 0 &&
               std::find(only.begin(), only.end(), i) == only.end();
    kinds[static_cast<std::size_t>(i)] = moe ? ffn_kind::moe : ffn_kind::dense;
  }
  return kinds;
}

struct combo {
  attn_kind attn;
  ffn_kind ffn;
  bool operator==(const combo&) const = default;
  bool operator<(const combo& o) const { return std::pair(attn, ffn) < std::pair(o.attn, o.ffn); }
};

// ---- the translation -------------------------------------------------------------------------

std::string dtype_of(const std::string& torch_dtype, const hf_object& where,
                     const std::string& key) {
  if (torch_dtype == "bfloat16") return "bf16";
  if (torch_dtype == "float16") return "fp16";
  if (torch_dtype == "float32") return "fp32";
  where.fail(
      key, fmt::format("unknown dtype '{}' (calc reads bfloat16, float16, float32)", torch_dtype));
}

/// The Mamba2 inner width of a family that spells it (Falcon-H1's mamba_d_ssm; null there means
/// mamba_expand x hidden_size), and where it came from.
std::int64_t mamba_inner(const family_reader& r, std::int64_t hidden, std::string& origin) {
  if (auto inner = r.optional_integer("mamba_inner", origin)) return *inner;
  std::string eo;
  std::int64_t expand = r.positive("mamba_expand", eo);
  origin = fmt::format("{} x {} ({} = null)", eo, r.field("hidden"), r.field("mamba_inner"));
  return expand * hidden;
}

/// A Mamba-1 (S6) mixer (`kind: mamba`): its inner width, state, dt's rank ("auto":
/// ceil(hidden / 16), as the config classes derive it), convolution and biases.
ynode mamba1_node(const family_reader& r, std::int64_t hidden) {
  ynode a{"attention", "", "", {}};
  std::string o, io;
  a.kids.push_back(scalar("kind", "mamba", "Mamba-1 (S6) mixer layers"));
  std::int64_t inner = mamba_inner(r, hidden, io);
  if (r.field("mamba_inner").empty())  // Jamba: no field for the width itself
    io = fmt::format("{} x {}", r.field("mamba_expand"), r.field("hidden"));
  // A stale expand beside the stored width is said, not read (Falcon-Mamba-7B: expand 16 beside
  // intermediate_size 8192 = 2 x 4096, the width its weights have).
  if (!r.field("mamba_inner").empty() && r.given("mamba_inner") && r.given("mamba_expand")) {
    std::string eo;
    std::int64_t expand = r.integer("mamba_expand", eo);
    if (expand * hidden != inner)
      io += fmt::format(" ({} x {} = {} is not read: the mixer is sized by {})", eo,
                        r.field("hidden"), expand * hidden, r.field("mamba_inner"));
  }
  a.kids.push_back(numbered("inner", inner, io));
  a.kids.push_back(numbered("state_dim", r.positive("state_dim", o), o));
  std::int64_t rank = 0;
  if (valued v = r.get("dt_rank"); v.value.is_string()) {
    if (v.value.get<std::string>() != "auto")
      r.fail("dt_rank", fmt::format("expected an integer or \"auto\", got \"{}\"",
                                    v.value.get<std::string>()));
    rank = (hidden + 15) / 16;
    o = fmt::format("ceil({} / 16) ({} = auto)", r.field("hidden"), v.origin);
  } else {
    rank = r.positive("dt_rank", o);
  }
  a.kids.push_back(numbered("dt_rank", rank, o));
  std::int64_t kernel = r.positive("conv_kernel", o);
  a.kids.push_back(numbered("conv_kernel", kernel, o));
  bool conv_bias = r.flag("conv_bias", o);
  a.kids.push_back(scalar("conv_bias", bool_text(conv_bias), o));
  bool proj_bias = r.flag("proj_bias", o);
  a.kids.push_back(scalar("proj_bias", bool_text(proj_bias), o));
  if (r.flag("dt_norms", o))
    a.kids.push_back(scalar("dt_norms", "true", o + ": RMSNorms on dt, B and C"));
  return a;
}

/// Phi-3-small's block pattern (block_sparse_spec), each field checked at the config's field:
/// at least 1 (a query must see its own block; a stride of 0 has no blocks) and within
/// limits::max_block_sparse.
ynode block_sparse_node(const family_reader& r) {
  ynode b{"block_sparse", "", "block-sparse attention: local blocks and every vert_stride-th", {}};
  std::string o;
  for (auto [role, key] : {std::pair{"bs_block", "block"}, std::pair{"bs_local", "local_blocks"},
                           std::pair{"bs_vert", "vert_stride"}}) {
    std::int64_t v = r.positive(role, o);
    if (v > limits::max_block_sparse)
      r.fail(role, fmt::format("{} exceeds the limit of {}", v, limits::max_block_sparse));
    b.kids.push_back(numbered(key, v, o));
  }
  bool homo = r.flag("bs_homo", o);
  b.kids.push_back(
      scalar("homo_heads", bool_text(homo),
             o + (homo ? ": every head alike" : ": head h's vertical blocks shifted by h x step")));
  return b;
}

ynode attention_node(const family_reader& r, attn_kind kind, std::int64_t hidden,
                     std::optional<std::int64_t> window, const std::string& window_origin) {
  ynode a{"attention", "", "", {}};
  std::string o;
  if (kind == attn_kind::none) return scalar("attention", "none", "a feed-forward-only layer");
  if (kind == attn_kind::parallel) {
    a.kids.push_back(scalar("kind", "parallel", "attention and a Mamba2 mixer side by side"));
    ynode at = attention_node(r, attn_kind::full, hidden, window, window_origin);
    ynode mx = attention_node(r, attn_kind::mamba, hidden, window, window_origin);
    mx.key = "mixer";
    a.kids.push_back(at);
    a.kids.push_back(mx);
    return a;
  }
  if (kind == attn_kind::mamba && r.fam().ssm == ssm_family::mamba1) return mamba1_node(r, hidden);
  if (kind == attn_kind::mamba && r.fam().ssm == ssm_family::short_conv) {
    a.kids.push_back(scalar("kind", "short_conv", "gated short-convolution layers"));
    std::int64_t channels = r.positive("conv_channels", o);
    a.kids.push_back(numbered("channels", channels, o));
    std::int64_t kernel = r.positive("conv_kernel", o);
    a.kids.push_back(numbered("conv_kernel", kernel, o));
    if (r.flag("conv_bias", o)) a.kids.push_back(scalar("bias", "true", o));
    return a;
  }
  if (kind == attn_kind::mamba) {
    a.kids.push_back(scalar("kind", "mamba2", "Mamba2 (SSD) mixer layers"));
    std::int64_t heads = r.positive("mamba_heads", o);
    a.kids.push_back(numbered("heads", heads, o));
    std::int64_t head_dim = 0;
    if (valued hd = r.get("mamba_head_dim"); hd.value.is_string()) {
      // "auto" (Falcon-H1): the inner width over the heads, as the config class derives it.
      std::string fld = r.field("mamba_head_dim");
      if (hd.value.get<std::string>() != "auto")
        r.cfg().fail(fld, fmt::format("expected an integer or \"auto\", got \"{}\"",
                                      hd.value.get<std::string>()));
      std::string io;
      std::int64_t inner = mamba_inner(r, hidden, io);
      if (inner % heads != 0)
        r.cfg().fail(fld, fmt::format("\"auto\", but the {} inner channels ({}) do not split "
                                      "into {} heads",
                                      inner, io, heads));
      head_dim = inner / heads;
      o = fmt::format("{} / {} ({} = auto)", io, r.field("mamba_heads"), fld);
    } else {
      head_dim = r.positive("mamba_head_dim", o);
    }
    // expand, where given, may say another inner width (expand x hidden); the reference
    // mixers size in_proj and out_proj by heads x head_dim (Nemotron-3-Nano: 64 x 64 = 4096
    // beside expand 2 x 2688), so that is the width read, and a stale expand is said, not read.
    if (r.cfg().has("expand") && r.cfg().integer("expand") * hidden != heads * head_dim)
      o += fmt::format("; inner = heads x head_dim = {} (expand x hidden_size = {} x {} is not "
                       "read: the mixer is sized by its heads)",
                       heads * head_dim, r.cfg().integer("expand"), hidden);
    a.kids.push_back(numbered("head_dim", head_dim, o));
    if (!r.field("mamba_inner").empty()) {
      std::string io;
      std::int64_t inner = mamba_inner(r, hidden, io);
      if (inner != heads * head_dim)
        r.cfg().fail(r.field("mamba_heads"),
                     fmt::format("{} heads x {} channels = {}, but the inner width is {} ({})",
                                 heads, head_dim, heads * head_dim, inner, io));
    }
    a.kids.push_back(numbered("state_dim", r.positive("state_dim", o), o));
    a.kids.push_back(numbered("groups", r.positive("groups", o), o));
    a.kids.push_back(numbered("conv_kernel", r.positive("conv_kernel", o), o));
    bool conv_bias = r.flag("conv_bias", o);
    a.kids.push_back(scalar("conv_bias", bool_text(conv_bias), o));
    bool proj_bias = r.flag("proj_bias", o);
    a.kids.push_back(scalar("proj_bias", bool_text(proj_bias), o));
    if (!r.field("out_proj_bias").empty()) {
      // Falcon-H1 spells in_proj's bias and out_proj's apart; calc's mamba2 has one flag. The
      // error sits at whichever of the two the config gives (out_proj's when both).
      std::string oo;
      bool out = r.flag("out_proj_bias", oo);
      if (out != proj_bias) {
        std::string at =
            r.cfg().has(r.field("out_proj_bias")) ? r.field("out_proj_bias") : r.field("proj_bias");
        r.cfg().fail(at, fmt::format("in_proj's bias is {} ({}) but out_proj's is {} ({}); "
                                     "calc's mamba2 has one proj_bias for both",
                                     bool_text(proj_bias), o, bool_text(out), oo));
      }
    }
    if (!r.field("gated_norm").empty()) {
      bool norm = r.flag("gated_norm", o);
      a.kids.push_back(scalar("gated_norm", bool_text(norm), o));
    }
    return a;
  }
  if (kind == attn_kind::linear && r.fam().linear == linear_family::kda) {
    a.kids.push_back(scalar("kind", "kda", "Kimi Delta Attention layers"));
    a.kids.push_back(numbered("heads", r.positive("kda_heads", o), o));
    std::int64_t head_dim = r.positive("kda_head_dim", o);
    a.kids.push_back(scalar("key_dim", std::to_string(head_dim), o));
    a.kids.push_back(scalar("value_dim", std::to_string(head_dim), o));
    const std::string rank_rule =
        fmt::format("rank = {} (rule of {})", r.field("kda_head_dim"), r.fam().model_type);
    a.kids.push_back(scalar("decay_rank", std::to_string(head_dim), "f_a/f_b, " + rank_rule));
    a.kids.push_back(numbered("conv_kernel", r.positive("linear_conv", o), o));
    a.kids.push_back(scalar("output_gate", "true", "gated output (o_norm x sigmoid(g))"));
    if (!r.flag("kda_full_gate", o))
      a.kids.push_back(scalar(
          "gate_rank", std::to_string(head_dim),
          fmt::format("g_a/g_b, {}; full rank only with {}", rank_rule, r.field("kda_full_gate"))));
    return a;
  }
  if (kind == attn_kind::linear && r.fam().linear == linear_family::lightning) {
    a.kids.push_back(scalar("kind", "lightning", "lightning attention layers"));
    a.kids.push_back(numbered("heads", r.positive("heads", o), o));
    a.kids.push_back(numbered("head_dim", r.positive("head_dim", o), o));
    std::int64_t block = r.positive("lightning_block", o);
    a.kids.push_back(numbered("block_size", block, o + ": tokens per block of the prefill"));
    return a;
  }
  if (kind == attn_kind::linear) {
    a.kids.push_back(scalar("kind", "gated_deltanet", "linear_attention layers"));
    a.kids.push_back(numbered("qk_heads", r.positive("linear_qk_heads", o), o));
    a.kids.push_back(numbered("v_heads", r.positive("linear_v_heads", o), o));
    a.kids.push_back(numbered("key_dim", r.positive("linear_key_dim", o), o));
    a.kids.push_back(numbered("value_dim", r.positive("linear_value_dim", o), o));
    a.kids.push_back(numbered("conv_kernel", r.integer("linear_conv", o), o));
    return a;
  }
  if (r.fam().attention == attention_family::mla) {
    a.kids.push_back(scalar("kind", "mla", fmt::format("{} attention", r.fam().model_type)));
    a.kids.push_back(numbered("heads", r.positive("heads", o), o));
    auto q = r.optional_integer("q_rank", o);
    a.kids.push_back(scalar("q_rank", std::to_string(q.value_or(0)),
                            q ? o : o + " = null: no query compression"));
    a.kids.push_back(numbered("kv_rank", r.positive("kv_rank", o), o));
    a.kids.push_back(numbered("qk_nope", r.positive("qk_nope", o), o));
    a.kids.push_back(numbered("qk_rope", r.integer("qk_rope", o), o));
    a.kids.push_back(numbered("v_head", r.positive("v_head", o), o));
    if (r.flag("mla_nope", o))
      a.kids.push_back(
          scalar("rope_branch", "false", o + ": NoPE, the qk_rope branch is still cached"));
    if (r.flag("mla_gate", o)) a.kids.push_back(scalar("output_gate", "true", o));
    if (r.fam().defaults.contains("index_heads")) {  // DeepSeek sparse attention's indexer
      ynode x{"indexer", "", "lightning indexer: main attention reads the top_k tokens", {}};
      x.kids.push_back(numbered("heads", r.positive("index_heads", o), o));
      x.kids.push_back(numbered("dim", r.positive("index_dim", o), o));
      x.kids.push_back(numbered("top_k", r.positive("index_top_k", o), o));
      a.kids.push_back(x);
    }
    return a;
  }
  a.kids.push_back(scalar("kind", "gqa", fmt::format("{} attention", r.fam().model_type)));
  // A family whose sliding layers have their own shape (MiMo-V2-Flash's swa_num_key_value_heads
  // and the other swa_* fields) reads them under the swa_ roles there; the table names them.
  const bool own_swa = kind == attn_kind::sliding && r.fam().names.count("swa_kv_heads") > 0;
  auto role = [&](const std::string& base) { return own_swa ? "swa_" + base : base; };
  std::int64_t heads = r.positive(role("heads"), o);
  a.kids.push_back(scalar("q_heads", std::to_string(heads), o));
  std::int64_t kv = r.fam().kv_heads_rule ? r.fam().kv_heads_rule(r.cfg(), heads, o)
                                          : r.positive(role("kv_heads"), o);
  if (kv <= 0 || kv > heads)
    r.cfg().fail(r.field(role("kv_heads")),
                 fmt::format("{} KV heads for {} query heads", kv, heads));
  if (heads % kv != 0)
    r.cfg().fail(r.field(role("kv_heads")),
                 fmt::format("{} KV heads do not divide {} query heads", kv, heads));
  a.kids.push_back(scalar("kv_heads", std::to_string(kv), o));
  std::int64_t head_dim = r.positive(role("head_dim"), o);
  a.kids.push_back(numbered("head_dim", head_dim, o));
  // A value width apart from the key width (v_head_dim), where the family names the field.
  if (r.fam().names.count("v_head_dim") > 0) {
    std::string vo;
    std::int64_t v = r.positive(role("v_head_dim"), vo);
    if (v != head_dim)
      a.kids.push_back(numbered("v_head_dim", v, vo + ": values narrower than the keys"));
  }
  (void)hidden;
  if (r.flag("qk_norm", o)) {
    a.kids.push_back(scalar("qk_norm", "true", o));
    if (r.flag("qk_norm_full", o))
      a.kids.push_back(scalar("qk_norm_full", "true", o + ": the norms span all heads"));
  }
  if (r.flag("output_gate", o)) a.kids.push_back(scalar("output_gate", "true", o));
  if (r.flag("qkv_bias", o)) a.kids.push_back(scalar("qkv_bias", "true", o));
  if (r.flag("o_bias", o)) a.kids.push_back(scalar("o_bias", "true", o));
  // Sinks on the sliding layers by their own flag where the family names one (MiMo-V2-Flash's
  // add_swa_attention_sink_bias against add_full_attention_sink_bias).
  const bool swa_sinks = kind == attn_kind::sliding && r.fam().names.count("swa_sinks") > 0;
  if (r.flag(swa_sinks ? "swa_sinks" : "sinks", o)) a.kids.push_back(scalar("sinks", "true", o));
  if (kind == attn_kind::sliding)
    a.kids.push_back(scalar("window", std::to_string(*window), window_origin));
  if (kind == attn_kind::chunked) {
    std::int64_t chunk = r.positive("chunk", o);
    a.kids.push_back(
        numbered("chunk", chunk, o + ": chunked local attention, keys from the chunk's start"));
  }
  if (kind == attn_kind::block_sparse) a.kids.push_back(block_sparse_node(r));
  return a;
}

/// LFM2's MLP width (Lfm2MLP): with block_auto_adjust_ff_dim, int(2f / 3), times
/// block_ffn_dim_multiplier (int() of the float product, as Python computes it), rounded up to a
/// multiple of block_multiple_of; `origin` grows by the rule.
std::int64_t adjusted_ff(const family_reader& r, std::int64_t f, std::string& origin) {
  std::string ao, mo, qo;
  if (!r.flag("ff_auto_adjust", ao)) return f;
  std::int64_t width = 2 * f / 3;
  valued mult = r.get("ff_multiplier");
  std::string rule = fmt::format("int(2 x {} / 3)", f);
  if (!mult.value.is_null()) {
    if (!mult.value.is_number())
      r.fail("ff_multiplier", fmt::format("expected a number, got {}", mult.value.dump()));
    double m = mult.value.get<double>();
    if (m <= 0) r.fail("ff_multiplier", fmt::format("must be positive, got {}", m));
    width = static_cast<std::int64_t>(m * static_cast<double>(width));
    rule = fmt::format("int({} x {})", mult.value.dump(), rule);
  }
  std::int64_t q = r.positive("ff_multiple_of", qo);
  width = (width + q - 1) / q * q;
  origin = fmt::format("{}: {} rounded up to a multiple of {} ({}, {}, {})", origin, rule, q, ao,
                       mult.origin, qo);
  return width;
}

ynode ffn_node(const family_reader& r, ffn_kind kind) {
  ynode f{"ffn", "", "", {}};
  std::string o;
  if (kind == ffn_kind::none) return scalar("ffn", "none", "a mixer-only layer");
  if (kind == ffn_kind::dense && r.fam().dense_mlp) {
    f.kids.push_back(
        scalar("kind", "mlp", fmt::format("up and down, no gate ({})", r.fam().model_type)));
    f.kids.push_back(numbered("intermediate", r.positive("intermediate", o), o));
    bool bias = r.flag("mlp_bias", o);
    if (bias) f.kids.push_back(scalar("bias", "true", o));
    // Learned scalars of the activation (Apertus' xIELU: alpha_p and alpha_n).
    if (r.fam().defaults.contains("activation_params"))
      if (std::int64_t n = r.integer("activation_params", o); n > 0)
        f.kids.push_back(numbered("activation_params", n, o));
    return f;
  }
  if (kind == ffn_kind::dense) {
    f.kids.push_back(scalar("kind", "swiglu", "gated MLP (gate, up, down)"));
    std::int64_t width = r.positive("intermediate", o);
    if (r.fam().names.count("ff_multiple_of")) width = adjusted_ff(r, width, o);  // LFM2
    f.kids.push_back(numbered("intermediate", width, o));
    // A family whose gated MLP carries biases (Phi-3-small's gegelu: up_proj 2f and down_proj).
    if (r.fam().defaults.contains("gated_bias") && r.flag("gated_bias", o))
      f.kids.push_back(scalar("bias", "true", o + ": biases on gate/up (2f) and down (d)"));
    return f;
  }
  f.kids.push_back(scalar("kind", "moe", fmt::format("{} experts", r.fam().model_type)));
  // A family whose MLP is ungated (Nemotron-H's relu2) has ungated experts too, routed and
  // shared: up and down only, two matrices each where SwiGLU has three.
  if (r.fam().dense_mlp)
    f.kids.push_back(scalar("gated", "false",
                            fmt::format("up and down only, no gate ({})", r.fam().model_type)));
  std::int64_t experts = r.positive("experts", o);
  f.kids.push_back(scalar("experts", std::to_string(experts), o));
  std::int64_t top_k = r.positive("top_k", o);
  if (top_k > experts)
    r.cfg().fail(r.field("top_k"), fmt::format("top_k {} exceeds the {} experts", top_k, experts));
  f.kids.push_back(scalar("top_k", std::to_string(top_k), o));
  f.kids.push_back(numbered("intermediate", r.positive("moe_intermediate", o), o));
  std::int64_t shared = r.integer("shared_experts", o);
  if (shared > 0) {
    f.kids.push_back(scalar("shared_experts", std::to_string(shared), o));
    f.kids.push_back(numbered("shared_intermediate", r.positive("shared_intermediate", o), o));
    if (r.flag("shared_gate", o)) f.kids.push_back(scalar("shared_gate", "true", o));
  }
  if (r.flag("router_bias", o)) f.kids.push_back(scalar("router_bias", "true", o));
  if (r.flag("expert_bias", o)) f.kids.push_back(scalar("expert_bias", "true", o));
  return f;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Whether any layer's mixer has a depthwise convolution's taps (Mamba, short conv, Gated
/// DeltaNet or KDA with a kernel; a parallel hybrid's Mamba2 side).
bool has_conv_taps(const family_reader& r, const std::vector<attn_kind>& attn) {
  std::string o;
  for (attn_kind k : attn) {
    if (k == attn_kind::mamba || k == attn_kind::parallel) return true;
    if (k == attn_kind::linear && r.fam().linear == linear_family::kda) return true;
    if (k == attn_kind::linear && r.fam().linear == linear_family::gated_deltanet)
      return r.integer("linear_conv", o) > 0;
  }
  return false;
}

/// What the safetensors headers beside a config say about formats; empty strings when the
/// folder holds no headers (the config and the family's defaults then decide).
struct stored_formats {
  std::string block_scale;  // FP8 block or row scales (`*.weight_scale_inv`, compressed-tensors'
                            // `*.weight_scale` [out, 1]): "fp32", "bf16", "fp16"
  std::string stored_scale;  // compressed-tensors' weight_scale of any strategy
  std::string dtype;        // the dtype of most unquantised weight-matrix bytes
  std::string router_bias;  // the MoE routing bias (`*.e_score_correction_bias`)
  std::string router;       // the MoE router (`*mlp.gate.weight`, `*block_sparse_moe.gate.weight`)
  std::string ssm_params;   // `A_log` and `D` (Mamba2), `A_log` and the gated norm (GDN)
  std::string conv_taps;    // a depthwise convolution's taps (`*conv1d.weight` [C, 1, K])
  std::string zero_point;   // compressed-tensors' `*.weight_zero_point`, as stored ("I32", ...)
  std::string dtype_why;    // how many bytes in which dtype, for the YAML comment
};

/// The formats the headers show. The headers decide over the config and the family's default:
/// they are what the checkpoint holds. Matrices of a vision tower or MTP layers are left out.
stored_formats formats_in_headers(const std::string& config_path) {
  stored_formats out;
  std::optional<checkpoint> c = read_checkpoint(config_path);
  if (!c) return out;
  static const std::map<std::string, std::string> calc_name = {
      {"F32", "fp32"}, {"BF16", "bf16"}, {"F16", "fp16"}};
  std::map<std::string, std::int64_t> bytes;  // "bf16" -> bytes of 2-D .weight tensors
  for (const stored_tensor& t : c->tensors) {
    auto name = calc_name.find(t.dtype);
    if (t.name.ends_with(".weight_scale_inv") && out.block_scale.empty()) {
      if (name == calc_name.end())
        throw spec_error(source_location{c->folder, 0, 0}, t.name,
                         fmt::format("an FP8 block scale stored as {}, which calc does not read "
                                     "(F32, BF16, F16)",
                                     t.dtype));
      out.block_scale = name->second;
    }
    // compressed-tensors' per-row scales (weight_scale [out, 1]), when no block scale said it.
    // compressed-tensors' scales of any strategy (weight_scale [out, 1] per row, [out, groups]
    // per group, [rows / R, columns / C] per block), when no block scale said it.
    if (t.name.ends_with(".weight_scale") && t.shape.size() == 2 && out.block_scale.empty() &&
        name != calc_name.end()) {
      out.block_scale = name->second;
      out.stored_scale = name->second;
    }
    // The vectors some checkpoints keep wider than their norms, as the first one stored says:
    // a Mamba2 mixer's A_log and D, a Gated DeltaNet layer's A_log and gated norm
    // (linear_attn.norm.weight), calc's ssm_params role.
    bool ssm_vector = t.name.ends_with(".A_log") || t.name.ends_with(".D") ||
                      t.name.ends_with("linear_attn.norm.weight");
    bool router = t.shape.size() == 2 && (t.name.ends_with("mlp.gate.weight") ||
                                          t.name.ends_with("block_sparse_moe.gate.weight"));
    if (t.name.ends_with(".weight_zero_point") && out.zero_point.empty())
      out.zero_point = t.dtype;
    // Mamba's, Gated DeltaNet's and KDA's conv1d, LFM2's conv.conv: [channels, 1, kernel].
    bool conv = t.shape.size() == 3 && !t.name.starts_with("mtp.") &&
                (t.name.ends_with("conv1d.weight") || t.name.ends_with(".conv.conv.weight"));
    for (auto [wanted, slot] :
         {std::pair{t.name.ends_with(".e_score_correction_bias"), &out.router_bias},
          std::pair{ssm_vector, &out.ssm_params}, std::pair{router, &out.router},
          std::pair{conv, &out.conv_taps}})
      if (wanted && slot->empty() && name != calc_name.end()) *slot = name->second;
    bool language_matrix = t.name.ends_with(".weight") && t.shape.size() == 2 &&
                           !t.name.starts_with("mtp.") &&
                           t.name.find("visual") == std::string::npos &&
                           t.name.find("vision") == std::string::npos;
    if (language_matrix && name != calc_name.end()) bytes[name->second] += t.bytes;
  }
  std::int64_t best = 0, total = 0;
  for (const auto& [d, b] : bytes) {
    total += b;
    if (b > best) best = b, out.dtype = d;
  }
  if (!out.dtype.empty())
    out.dtype_why = fmt::format("safetensors headers: {} of {} bytes of weight matrices are {}",
                                best, total, out.dtype);
  return out;
}

/// `stored`: the formats the checkpoint's safetensors headers show (empty when there are none).
imported translate(const hf_json& doc, const std::string& name, const std::string& repo,
                   const hf_json* modelopt, const stored_formats& stored) {
  hf_object root(doc, "");
  std::string model_type = root.has("model_type") ? root.text("model_type") : "";
  if (model_type == block_configs_model_type) {  // per-layer blocks: their own translator
    if (modelopt) root.fail("model_type", "nemotron-nas: a ModelOpt checkpoint is not mapped");
    return translate_block_configs(doc, name, repo);
  }
  std::vector<std::string> archs;
  if (root.has("architectures") && root.value("architectures").is_array())
    for (const json& a : root.value("architectures"))
      if (a.is_string()) archs.push_back(a.get<std::string>());
  const family* fam = find_family(model_type, archs);
  std::string read_as;  // said in the YAML when the family came from `architectures`
  if (!fam && !model_type.empty()) {
    std::string cls;
    fam = find_family_by_architecture(archs, cls);
    if (fam)
      read_as = fmt::format(
          "model_type '{}' is not a family calc knows; read as {} because architectures names {}",
          model_type, fam->model_type, cls);
  }
  if (!fam) {
    if (model_type.empty())
      throw spec_error(doc.where(""), "model_type",
                       fmt::format("missing, and no known architecture in architectures "
                                   "(supported families: {})",
                                   family_names()));
    root.fail("model_type", fmt::format("unknown model_type '{}' (supported families: {})",
                                        model_type, family_names()));
  }
  // A wrapper's text model is read by the table its text_config names (families_wrappers.cpp).
  family wrapped;
  if (!fam->text_family.empty()) {
    wrapped = wrapped_text_family(*fam, root);
    fam = &wrapped;
  }
  // The text model's object (text_config); a flattened copy that has none keeps the text
  // model's fields at the top, where they are read instead.
  hf_object cfg = fam->scope.empty() || !root.has(fam->scope) ? root : root.object(fam->scope);
  if (!fam->refused.empty()) {
    for (const std::string& f : fam->refused_at)
      if (cfg.has(f)) cfg.fail(f, fmt::format("{}: {}", fam->model_type, fam->refused));
    root.fail("model_type", fmt::format("{}: {}", fam->model_type, fam->refused));
  }
  for (const auto& pinned : fam->only) {  // no structured binding: a lambda captures the value
    const std::string& field = pinned.first;
    const json& want = pinned.second;
    if (!cfg.has(field)) continue;
    const json& got = cfg.value(field);
    bool ok = got.is_array() ? std::all_of(got.begin(), got.end(),
                                           [&want](const json& e) { return e == want; })
                             : got == want;
    if (!ok)
      cfg.fail(field, fmt::format("{} is read only with {}{} (got {})", fam->model_type,
                                  got.is_array() ? "every entry " : "", want.dump(), got.dump()));
  }
  family_reader r(*fam, cfg);
  std::string o;

  std::vector<ynode> top;
  top.push_back(scalar("schema", "1", ""));
  top.push_back(scalar("name", quoted(name), ""));
  top.push_back(scalar("source",
                      quoted(repo.empty()
                                 ? fmt::format("calc import of {}", doc.file())
                                 : fmt::format("{} config.json (calc import of {})", repo,
                                               doc.file())),
                      ""));
  top.push_back(numbered("vocab", r.positive("vocab", o), o));
  std::int64_t hidden = r.positive("hidden", o);
  top.push_back(scalar("hidden", std::to_string(hidden), o));
  bool tie = r.flag("tie", o);
  if (!fam->scope.empty() && !r.given("tie") && root.has(r.field("tie"))) {
    // A multimodal wrapper may say it once for the whole model (Qwen3-VL-2B: true at the top,
    // absent in text_config); the wrapper's value is the one its loader ties by.
    tie = root.boolean(r.field("tie"));
    o = root.path_of(r.field("tie"));
  }
  top.push_back(scalar("tie_embeddings", bool_text(tie), o));
  if (r.flag("layer_norm", o))
    top.push_back(scalar("norm", "layernorm", o + ": LayerNorm, a weight and a bias per norm"));
  if (r.flag("head_bias", o)) {
    if (tie) cfg.fail(r.field("tie"), "a tied head cannot carry the family's lm_head bias");
    top.push_back(scalar("head_bias", "true", o + ": lm_head has a bias"));
  }
  if (auto limit = r.optional_integer("max_positions", o)) {
    if (*limit <= 0) r.fail("max_positions", fmt::format("must be positive, got {}", *limit));
    top.push_back(numbered("max_position_embeddings", *limit, o));
  }
  if (fam->defaults.contains("positions")) {
    // A learned absolute position table (GPT-2's wpe, OPT's embed_positions): its rows are
    // weights, looked up like the token table; `position_offset` rows past the positions
    // (OPT's 2).
    std::string po;
    std::int64_t rows = r.positive("positions", o);
    std::int64_t offset = r.integer("position_offset", po);
    if (rows > limits::tokens)
      r.fail("positions", fmt::format("{} exceeds the limit of {}", rows, limits::tokens));
    top.push_back(numbered("position_embeddings", rows + offset,
                           offset == 0 ? o + ": a learned position table"
                                       : fmt::format("{} + {} ({}): a learned position table",
                                                     o, offset, po)));
  }
  if (fam->defaults.contains("embed_proj") && r.given("embed_proj") &&
      r.integer("embed_proj", o) != hidden)
    r.fail("embed_proj", fmt::format("{} differs from {} ({}): the embedding's projections in "
                                     "and out (project_in, project_out) are not read",
                                     r.integer("embed_proj", o), r.field("hidden"), hidden));
  if (fam->defaults.contains("embedding_norm") && r.flag("embedding_norm", o))
    top.push_back(
        scalar("embedding_norm", "true", o + ": a norm right after the token embedding"));
  if (fam->defaults.contains("final_norm") && !r.flag("final_norm", o))
    top.push_back(scalar("final_norm", "false",
                         o + ": no final norm with parameters (one without weights, or none)"));
  if (!fam->dense_mlp && r.flag("mlp_bias", o))
    cfg.fail(r.field("mlp_bias"), "biases on the gated MLP are not in calc's schema");

  // Precision: the checkpoint dtype for weights and (as engines do by default) the KV cache.
  ynode precision{"precision", "", "", {}};
  std::string dtype = "bf16", dtype_origin = "default: bf16 (no torch_dtype)";
  for (const char* key : {"torch_dtype", "dtype"}) {
    for (const hf_object* obj : {&cfg, &root}) {
      if (obj->has(key) && dtype_origin.starts_with("default")) {
        dtype = dtype_of(obj->text(key), *obj, key);
        dtype_origin = obj->path_of(key);
      }
    }
  }
  if (!stored.dtype.empty() && stored.dtype != dtype) {
    dtype_origin = fmt::format("{} ({} says {})", stored.dtype_why, dtype_origin, dtype);
    dtype = stored.dtype;
  }
  std::optional<quant_formats> quant =
      read_quant(root, modelopt, /*has_routers=*/fam->ffn == ffn_family::moe,
                 stored.block_scale.empty() ? fam->fp8_block_scale : stored.block_scale,
                 stored.stored_scale, dtype, stored.zero_point);
  if (!quant) {
    precision.kids.push_back(scalar("weights", dtype, dtype_origin));
    precision.kids.push_back(
        scalar("kv", dtype, dtype_origin + " (the cache keeps the model dtype)"));
  } else if (quant->kept_roles.count("router")) {
    // The router keeps the model dtype: it is part of `weights`, so the quantised matrices are
    // named by role (schema roles attention, experts, shared_experts, dense_ffn).
    const std::string& why = quant->kept_roles.at("router").why;
    // Whole roles an ignore pattern keeps in `weights` too (Kimi-K2.5: self_attn, the shared
    // experts, the dense layer's MLP), each with the entry that says so.
    std::string also;
    for (const char* role : {"attention", "shared_experts", "dense_ffn"})
      if (auto k = quant->kept_roles.find(role); k != quant->kept_roles.end())
        also += fmt::format("; {} excluded: {}", role, k->second.field);
    std::string kept =
        dtype_origin + (why.empty() ? " (router not quantised" + also + ")"
                                    : fmt::format(" (router not quantised: {}{})", why, also));
    // A family whose quantised checkpoints leave the router the only matrix in `weights` and
    // store it wider (MiniMax-M2's F32 gate): `weights` is the router's format, as the headers
    // show it, else as the family documents it. Not when another role stays in `weights`.
    std::string router = stored.router.empty() ? fam->router_dtype : stored.router;
    if (!fam->router_dtype.empty() && !router.empty() && router != dtype && also.empty() &&
        !quant->kept_roles.count("attention_in"))
      precision.kids.push_back(scalar(
          "weights", router,
          stored.router.empty()
              ? fmt::format("{}'s checkpoints store the router (gate.weight) as {}, the only "
                            "matrix left in weights ({})",
                            fam->model_type, router, kept)
              : fmt::format("safetensors headers store the router (gate.weight) as {}, the only "
                            "matrix left in weights ({})",
                            router, kept)));
    else
      precision.kids.push_back(scalar("weights", dtype, kept));
    if (quant->kept_roles.count("attention_in"))  // the inputs keep `weights`, o_proj is converted
      precision.kids.push_back(scalar("attention_out", quant->weights, quant->origin));
    else if (!quant->kept_roles.count("attention"))
      precision.kids.push_back(scalar("attention", quant->weights, quant->origin));
    for (const char* role : {"experts", "shared_experts", "dense_ffn"})
      if (!quant->kept_roles.count(role))  // a role the ignore list keeps stays in `weights`
        precision.kids.push_back(scalar(role, quant->weights, quant->origin));
  } else {
    precision.kids.push_back(scalar("weights", quant->weights, quant->origin));
    if (quant->kept_roles.count("attention"))
      precision.kids.push_back(scalar("attention", dtype, dtype_origin + " (self_attn excluded)"));
    for (const char* role : {"shared_experts", "dense_ffn"})
      if (quant->kept_roles.count(role))
        precision.kids.push_back(
            scalar(role, dtype, dtype_origin + " (" + quant->kept_roles.at(role).field + ")"));
    if (quant->kept_roles.count("attention_in")) {
      precision.kids.push_back(
          scalar("attention", dtype, dtype_origin + " (self_attn input projections excluded)"));
      precision.kids.push_back(
          scalar("attention_out", quant->weights, quant->origin + " (self_attn.o_proj converted)"));
    }
  }
  if (quant) {
    // The embedding table and the head stay in the model dtype unless the checkpoint converts
    // them; the exclusion lists name the head explicitly, the embedding is never converted.
    precision.kids.push_back(scalar("embedding", dtype, dtype_origin + " (not quantised)"));
    precision.kids.push_back(scalar("head", dtype,
                                    std::find(quant->kept_dtype.begin(), quant->kept_dtype.end(),
                                              "head") != quant->kept_dtype.end()
                                        ? dtype_origin + " (lm_head excluded)"
                                        : dtype_origin + " (lm_head not converted)"));
    if (!quant->kv.empty())
      precision.kids.push_back(scalar("kv", quant->kv, quant->kv_origin));
    else
      precision.kids.push_back(
          scalar("kv", dtype, dtype_origin + " (the cache keeps the model dtype)"));
  }
  if (fam->defaults.contains("index_heads"))
    // The reference inference code and the engines cache each index key as FP8 (e4m3) with one
    // FP32 scale per 128 values (DeepSeek-V3.2-Exp inference/model.py, Indexer k_cache and
    // k_scale_cache; vLLM's and LightLLM's indexer caches alike), whatever the weights' dtype.
    precision.kids.push_back(
        scalar("index", "fp8:g128:fp32", "the indexer's key cache: FP8 plus an FP32 scale per 128"));
  if (dtype != "bf16")  // calc's norms default to bf16; a checkpoint keeps them in its dtype
    precision.kids.push_back(
        scalar("norms", dtype, dtype_origin + " (norm weights are stored in the model dtype)"));
  // The routing bias, and A_log with D (Mamba2) or the gated norm (Gated DeltaNet): the headers'
  // dtype, else the family's documented one, said only where it differs from the norms'.
  for (auto [role, from_headers, from_family, what] :
       {std::tuple{"router_bias", stored.router_bias, fam->router_bias_dtype,
                   "the routing bias (e_score_correction_bias)"},
        std::tuple{"ssm_params", stored.ssm_params, fam->ssm_params_dtype,
                   fam->layers == layer_rule::linear_interval
                       ? "A_log and the gated norm (Gated DeltaNet)"
                       : "A_log and D"}}) {
    std::string format = from_headers.empty() ? from_family : from_headers;
    if (format.empty() || format == dtype) continue;
    precision.kids.push_back(scalar(
        role, format,
        from_headers.empty()
            ? fmt::format("{}'s checkpoints store {} as {}", fam->model_type, what, format)
            : fmt::format("safetensors headers store {} as {}", what, format)));
  }
  top.push_back(precision);
  // A multimodal wrapper's vision tower: a component of its own, or why it is not counted.
  std::optional<vision_read> vision;
  if (fam->vision != vision_family::none)
    vision = read_vision(*fam, root, hidden, dtype, dtype_origin, modelopt);
  if (!r.field("ssm_chunk").empty()) {
    // The SSD chunk the reference forward pads a prompt to: it sets the chunked-prefill FLOPs.
    ynode exec{"execution", "", "", {}};
    exec.kids.push_back(numbered("linear_chunk", r.positive("ssm_chunk", o), o));
    top.push_back(exec);
  }

  // Layers.
  std::int64_t count = r.positive("layers", o);
  ynode layers{"layers", "", "", {}};
  layers.kids.push_back(scalar("count", std::to_string(count), o));
  if (quant)
    for (const auto& [role, k] : quant->kept_roles)
      if (!k.all && role != "router" && role != "mixer_gates" &&
          static_cast<std::int64_t>(k.layers.size()) != count)
        throw spec_error(k.where, k.field,
                         fmt::format("the {} of {} of the {} layers stays unquantised; calc keeps "
                                     "one format per role",
                                     role == "attention_in" ? "attention input projections" : role,
                                     k.layers.size(), count));
  if (quant && quant->excluded_from_layer >= 0 && quant->excluded_from_layer < count)
    throw spec_error(quant->excluded_where, quant->excluded_field,
                     fmt::format("layers from {} on stay unquantised, but calc keeps one format "
                                 "for all weight matrices",
                                 quant->excluded_from_layer));
  std::string window_origin;
  std::optional<std::int64_t> window;
  if (!r.field("window").empty() || fam->defaults.contains("window"))
    window = r.optional_integer("window", window_origin);
  if (window && *window == 0) window.reset();
  std::string attn_origin, ffn_origin;
  std::vector<attn_kind> attn;
  std::vector<ffn_kind> ffn;
  if (!hybrid_kinds(r, count, attn, ffn, attn_origin)) {
    attn = attention_kinds(r, count, window.has_value(), attn_origin);
    ffn = ffn_kinds(r, count, ffn_origin);
  }
  if (quant) check_attention_inputs(r, *quant, attn);
  ynode* precision_node = nullptr;
  for (ynode& n : top)
    if (n.key == "precision") precision_node = &n;
  bool conv_stored_apart = !stored.conv_taps.empty() && stored.conv_taps != dtype;
  if (has_conv_taps(r, attn) && (quant || conv_stored_apart)) {
    // Every quantiser calc reads converts Linear layers only, and a depthwise convolution's
    // taps (conv1d) are not one: compressed-tensors' groups target Linear, ModelOpt disables
    // *mixer.conv1d* and *linear_attn.conv1d*, Qwen's FP8 lists each conv1d in
    // modules_to_not_convert, GPTQ and AWQ quantise Linear layers. They keep the model dtype,
    // or what the safetensors headers store for them.
    if (!stored.conv_taps.empty())
      precision_node->kids.push_back(
          scalar("conv_taps", stored.conv_taps, "safetensors headers store conv1d as " +
                                                    stored.conv_taps));
    else
      precision_node->kids.push_back(scalar(
          "conv_taps", dtype, dtype_origin + " (conv1d taps: not a Linear, never quantised)"));
  }
  if (quant && quant->kept_roles.count("mixer_gates")) {
    // The decay and beta projections, listed layer by layer (Qwen3-Next-FP8: in_proj_ba of
    // each Gated DeltaNet layer): every such layer's, or some would be quantised and others not.
    const quant_formats::kept_role& k = quant->kept_roles.at("mixer_gates");
    std::set<std::int64_t> listed, linear;
    for (std::int64_t l : k.layers)
      if (l < count) listed.insert(l);
    for (std::size_t i = 0; i < attn.size(); ++i)
      if (attn[i] == attn_kind::linear) linear.insert(static_cast<std::int64_t>(i));
    if (!k.all && listed != linear)
      throw spec_error(k.where, k.field,
                       fmt::format("the decay and beta projections of {} of the {} Gated "
                                   "DeltaNet layers stay unquantised; calc keeps one format per "
                                   "role",
                                   listed.size(), linear.size()));
    precision_node->kids.push_back(scalar(
        "mixer_gates", dtype,
        fmt::format("{} (in_proj_a and in_proj_b not converted: {})", dtype_origin, k.field)));
  }
  if (quant && quant->kept_roles.count("router") && !quant->kept_roles.at("router").all) {
    // Routers listed layer by layer: every MoE layer's, or some routers would be quantised
    // and others not. Layers past num_hidden_layers are the MTP block's, not counted.
    const quant_formats::kept_role& k = quant->kept_roles.at("router");
    std::set<std::int64_t> listed, moe;
    for (std::int64_t l : k.layers)
      if (l < count) listed.insert(l);
    for (std::size_t i = 0; i < ffn.size(); ++i)
      if (ffn[i] == ffn_kind::moe) moe.insert(static_cast<std::int64_t>(i));
    if (listed != moe)
      throw spec_error(k.where, k.field,
                       fmt::format("the routers of {} of the {} MoE layers stay unquantised; calc "
                                   "keeps one format per role",
                                   listed.size(), moe.size()));
  }

  std::vector<combo> layer(static_cast<std::size_t>(count));
  std::map<combo, std::int64_t> freq;
  for (std::size_t i = 0; i < layer.size(); ++i) {
    layer[i] = {attn[i], ffn[i]};
    ++freq[layer[i]];
  }
  combo base = layer[0];
  for (const auto& [c, n] : freq)
    if (n > freq[base]) base = c;
  // The repeating pattern: the period p with the least p + 2 x exceptions (an exception is an
  // override, longer to read than a pattern entry); each position takes the most frequent kind
  // among its layers, exceptions become overrides.
  std::size_t best_p = 1;
  std::vector<combo> best_pattern;
  std::int64_t best_cost = -1;
  for (std::size_t p = 1; p <= std::min<std::size_t>(layer.size(), 32); ++p) {
    std::vector<combo> pattern(p);
    std::int64_t misses = 0;
    for (std::size_t j = 0; j < p; ++j) {
      std::map<combo, std::int64_t> f;
      for (std::size_t i = j; i < layer.size(); i += p) ++f[layer[i]];
      combo c = layer[j];
      for (const auto& [k, n] : f)
        if (n > f[c]) c = k;
      pattern[j] = c;
      for (std::size_t i = j; i < layer.size(); i += p) misses += layer[i] == c ? 0 : 1;
    }
    std::int64_t cost = static_cast<std::int64_t>(p) + 2 * misses;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_p = p;
      best_pattern = pattern;
    }
  }
  auto variant_name = [&](const combo& c) {
    std::string n;
    if (c.attn != base.attn) n = mixer_name(*fam, c.attn);
    if (c.ffn != base.ffn) n += std::string(n.empty() ? "" : "_") + ffn_name(c.ffn);
    return c == base ? std::string("base") : n;
  };
  // Overrides, grouped by kind; a variant also sets a part equal to the base when an override
  // puts it on a layer whose pattern entry has another.
  std::map<combo, std::vector<std::int64_t>> exceptions;
  std::map<combo, std::pair<bool, bool>> sets;  // combo -> (sets attention, sets ffn)
  for (std::size_t i = 0; i < layer.size(); ++i) {
    const combo& want = layer[i];
    const combo& pat = best_pattern[i % best_p];
    if (want == pat) continue;
    exceptions[want].push_back(static_cast<std::int64_t>(i));
    if (want.attn != pat.attn) sets[want].first = true;
    if (want.ffn != pat.ffn) sets[want].second = true;
  }
  auto block_of = [&](attn_kind a) { return attention_node(r, a, hidden, window, window_origin); };

  ynode base_attention = block_of(base.attn);
  if ((base.attn == attn_kind::sliding || base.attn == attn_kind::chunked ||
       base.attn == attn_kind::block_sparse) &&
      !attn_origin.empty())
    base_attention.comment = attn_origin;
  layers.kids.push_back(base_attention);
  layers.kids.push_back(ffn_node(r, base.ffn));
  // Norms per layer: a family's rule where flags decide (Falcon), else the role; 0 for a
  // non-parametric norm (OLMo-1), which stores nothing.
  std::int64_t norms = fam->norms_rule ? fam->norms_rule(cfg, o) : r.integer("norms", o);
  layers.kids.push_back(scalar("norms", std::to_string(norms), o));

  std::map<combo, bool> used;
  for (const combo& c : best_pattern)
    if (!(c == base)) used[c] = true;
  for (const auto& [c, at] : exceptions)
    if (!(c == base)) used[c] = true;
  if (!used.empty()) {
    ynode variants{"variants", "", "", {}};
    for (const auto& [c, u] : used) {
      ynode v{variant_name(c), "", "", {}};
      if (c.attn != base.attn || sets[c].first) {
        ynode a = block_of(c.attn);
        a.comment = c.attn == attn_kind::full ? std::string("full-attention layers") : attn_origin;
        v.kids.push_back(a);
      }
      if (c.ffn != base.ffn || sets[c].second) {
        ynode f = ffn_node(r, c.ffn);
        f.comment = ffn_origin;
        v.kids.push_back(f);
      }
      variants.kids.push_back(v);
    }
    layers.kids.push_back(variants);
  }
  // A layer of the base kind where the pattern puts another (Nemotron-3-Nano's tail) needs a
  // variant of its own: an override names a variant, and `base` is none. It spells the base's
  // kinds in full, so no variant named from a difference to the base can take its name.
  const std::string base_again = mixer_name(*fam, base.attn) + "_" + ffn_name(base.ffn);
  if (exceptions.count(base)) {
    ynode v{base_again, "", "", {}};
    ynode a = block_of(base.attn);
    a.comment = "the base kind, where the pattern has another";
    v.kids.push_back(a);
    v.kids.push_back(ffn_node(r, base.ffn));
    if (used.empty()) layers.kids.push_back(ynode{"variants", "", "", {v}});
    else layers.kids.back().kids.push_back(v);
  }
  if (best_p > 1 || !(best_pattern[0] == base)) {
    std::string p;
    for (const combo& c : best_pattern) p += (p.empty() ? "" : ", ") + variant_name(c);
    std::string why = attn_origin;
    if (!ffn_origin.empty()) why += (why.empty() ? "" : "; ") + ffn_origin;
    layers.kids.push_back(scalar("pattern", "[" + p + "]", why));
  }
  std::vector<ynode> overrides;
  for (auto& [c, at] : exceptions) {
    std::string why = c.ffn != best_pattern[static_cast<std::size_t>(at[0]) % best_p].ffn
                          ? ffn_origin
                          : attn_origin;
    overrides.push_back({"",
                         fmt::format("{{at: {}, variant: {}}}", int_list(at),
                                     c == base ? base_again : variant_name(c)),
                         why,
                         {}});
  }

  std::int64_t mtp = r.integer("mtp_layers", o);
  auto write = [&](bool annotate) {
    std::string header =
        fam->wrapper.empty()
            ? fmt::format("# Imported by `calc import` from {} (model_type {}: the {} table in "
                          "src/spec/hf/{}).\n",
                          doc.file(), fam->model_type, fam->model_type,
                          family_table_file(fam->model_type))
            : fmt::format("# Imported by `calc import` from {} (model_type {}: the {} wrapper in "
                          "src/spec/hf/{}, its text_config read by the {} table in "
                          "src/spec/hf/{}).\n",
                          doc.file(), fam->wrapper, fam->wrapper,
                          family_table_file(fam->wrapper), fam->model_type,
                          family_table_file(fam->model_type));
    header += "# Each value names the config field it came from, or the family default it took.\n";
    if (vision && vision->not_counted.empty())
      header += "# Counted apart: the vision tower and projector (vision_config), as "
                "components[0]; not in the text model's totals or state.\n";
    else if (vision)
      header += fmt::format("# Not counted: {}.\n", vision->not_counted);
    else if (!fam->not_counted.empty())
      header += fmt::format("# Not counted: {}.\n", fam->not_counted);
    if (!read_as.empty()) header += fmt::format("# Family: {}.\n", read_as);
    std::string out =
        annotate
            ? header
            : std::string(static_cast<std::size_t>(std::count(header.begin(), header.end(), '\n')),
                          '\n');
    for (const ynode& n : top) emit(out, n, 0, annotate);
    emit(out, ynode{"layers", "", "", {}}, 0, annotate);
    for (const ynode& n : layers.kids) emit(out, n, 2, annotate);
    if (!overrides.empty()) emit_list(out, "overrides", overrides, 2, annotate);
    if (mtp > 0)
      out += fmt::format("mtp: {{layers: {}, variant: base}}", mtp) +
             (annotate ? fmt::format("  # {} (excluded from totals)", o) : "") + "\n";
    if (vision) out += emit_vision(*vision, annotate);
    return out;
  };
  return {write(true), write(false), fam->model_type, doc.file()};
}

bool is_commit(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isxdigit(c) != 0;
         });
}

/// The repository a config's folder names: a Hugging Face cache snapshot
/// (models--Org--Name/snapshots/<commit>/config.json) or a folder named Org--Name, as the hub's
/// cache and published copies spell it; "" otherwise.
std::string repo_of(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  if (file.filename() != "config.json") return "";
  fs::path dir = fs::absolute(file).parent_path();
  std::string folder = dir.filename().string();
  if (is_commit(folder) && dir.parent_path().filename() == "snapshots") {
    folder = dir.parent_path().parent_path().filename().string();
    if (!folder.starts_with("models--")) return "";
    folder = folder.substr(8);
  }
  auto sep = folder.find("--");
  if (sep == std::string::npos || sep == 0 || sep + 2 >= folder.size()) return "";
  std::string id = folder.substr(0, sep) + "/" + folder.substr(sep + 2);
  return looks_like_repo_id(id) ? id : "";
}

/// The model's name: the file's own name unless it is config.json; else the repository's name
/// from the folder (a Hugging Face cache snapshot models--Org--Name/snapshots/<commit>, or a
/// folder named Org--Name, gives Name; any other folder its own name); else the last part of
/// the config's `_name_or_path`; "model" when nothing names it.
std::string model_name(const std::filesystem::path& file, const hf_json& doc) {
  namespace fs = std::filesystem;
  std::string stem = file.stem().string();
  if (stem != "config") return stem;
  fs::path dir = fs::absolute(file).parent_path();
  std::string folder = dir.filename().string();
  auto repo_name = [](const std::string& f) {
    auto sep = f.find("--");
    return sep == std::string::npos ? f : f.substr(sep + 2);
  };
  if (is_commit(folder) && dir.parent_path().filename() == "snapshots") {
    std::string repo = dir.parent_path().parent_path().filename().string();
    if (repo.starts_with("models--")) return repo_name(repo.substr(8));
  }
  if (!folder.empty() && !is_commit(folder)) return repo_name(folder);
  const json& root = doc.root();
  if (root.contains("_name_or_path") && root["_name_or_path"].is_string()) {
    std::string n = root["_name_or_path"].get<std::string>();
    while (!n.empty() && n.back() == '/') n.pop_back();
    if (auto slash = n.rfind('/'); slash != std::string::npos) n = n.substr(slash + 1);
    if (!n.empty()) return n;
  }
  return "model";
}

}  // namespace

bool is_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.ends_with(".json")) return true;
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "config.json", ec);
}

imported import_config(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "config.json";
  hf_json doc = hf_json::load(file.string());
  stored_formats stored = formats_in_headers(file.string());
  fs::path quant = file.parent_path() / "hf_quant_config.json";
  if (fs::exists(quant, ec)) {
    hf_json q = hf_json::load(quant.string());
    return translate(doc, model_name(file, doc), repo_of(file), &q, stored);
  }
  return translate(doc, model_name(file, doc), repo_of(file), nullptr, stored);
}

imported import_text(const std::string& json_text, const std::string& file,
                     const std::string& name) {
  hf_json doc = hf_json::parse(json_text, file);
  return translate(doc, name, "", nullptr, stored_formats{});
}

}  // namespace calc::hf
