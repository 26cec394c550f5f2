#include "spec/model_reader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <set>
#include <variant>

#include "common/limits.h"
#include "common/names.h"
#include "spec/component_reader.h"
#include "spec/hf/hub.h"
#include "spec/hf/import.h"
#include "spec/yaml_reader.h"

namespace calc {

namespace {

const std::vector<std::string> kAttentionKinds = {
    "gqa", "mla",    "gated_deltanet", "lightning",  "kda",
    "dsa", "mamba2", "mamba",          "short_conv", "parallel"};
const std::vector<std::string> kFfnKinds = {"swiglu", "moe", "mlp"};

std::string kind_of(yaml_map& m, const std::vector<std::string>& known) {
  std::string kind = m.text("kind");
  if (std::find(known.begin(), known.end(), kind) == known.end()) {
    std::string message = fmt::format("unknown kind '{}'", kind);
    if (auto guess = closest(kind, known)) message += fmt::format(" (did you mean '{}'?)", *guess);
    m.fail("kind", message);
  }
  return kind;
}

attention_spec read_gqa(yaml_map& m) {
  attention_gqa a;
  a.q_heads = m.integer("q_heads");
  a.kv_heads = m.integer("kv_heads");
  a.head_dim = m.integer("head_dim");
  a.qk_norm = m.boolean("qk_norm", false);
  a.qk_norm_full = m.boolean("qk_norm_full", false);
  if (a.qk_norm_full && !a.qk_norm) m.fail("qk_norm_full", "needs qk_norm: true");
  a.output_gate = m.boolean("output_gate", false);
  a.qkv_bias = m.boolean("qkv_bias", false);
  a.o_bias = m.boolean("o_bias", false);
  a.window = m.optional_integer("window");
  a.chunk = m.optional_integer("chunk");
  if (a.window && a.chunk)
    m.fail("chunk", "a layer attends within a sliding window or within a chunk, not both");
  if (m.has("block_sparse")) {
    if (a.window || a.chunk)
      m.fail("block_sparse", "a block-sparse layer has no sliding window or chunk");
    yaml_map b = m.map("block_sparse");
    block_sparse_spec bs;
    bs.block = b.integer("block");
    bs.local_blocks = b.integer("local_blocks");
    bs.vert_stride = b.integer("vert_stride");
    bs.homo_heads = b.boolean("homo_heads", false);
    for (auto [key, v] : {std::pair{"block", bs.block}, std::pair{"vert_stride", bs.vert_stride}})
      if (v > limits::max_block_sparse)
        b.fail(key, fmt::format("{} exceeds the limit of {}", v, limits::max_block_sparse));
    if (bs.local_blocks > limits::max_block_sparse)
      b.fail("local_blocks",
             fmt::format("{} exceeds the limit of {}", bs.local_blocks, limits::max_block_sparse));
    b.finish({"block", "local_blocks", "vert_stride", "homo_heads"});
    a.block_sparse = bs;
  }
  a.sinks = m.boolean("sinks", false);
  a.k_is_v = m.boolean("k_is_v", false);
  a.kv_source = m.optional_integer("kv_source", 0);
  a.v_head_dim = m.optional_integer("v_head_dim");
  if (a.v_head_dim && a.k_is_v)
    m.fail("v_head_dim", "values that are the keys (k_is_v) have the key width");
  if (a.q_heads % a.kv_heads != 0)
    m.fail("kv_heads",
           fmt::format("{} KV heads do not divide {} query heads", a.kv_heads, a.q_heads));
  m.finish({"kind", "q_heads", "kv_heads", "head_dim", "qk_norm", "qk_norm_full", "output_gate",
            "qkv_bias", "o_bias", "window", "chunk", "block_sparse", "sinks", "k_is_v",
            "kv_source", "v_head_dim"});
  return a;
}

attention_spec read_mla(yaml_map& m) {
  attention_mla a;
  a.heads = m.integer("heads");
  a.q_rank = m.optional_integer("q_rank", 0).value_or(0);
  a.kv_rank = m.integer("kv_rank");
  a.qk_nope = m.integer("qk_nope");
  a.qk_rope = m.optional_integer("qk_rope", 0).value_or(0);
  a.v_head = m.integer("v_head");
  a.rope_branch = m.boolean("rope_branch", true);
  a.output_gate = m.boolean("output_gate", false);
  if (m.has("indexer")) {
    yaml_map x = m.map("indexer");
    mla_indexer ix;
    ix.heads = x.integer("heads");
    ix.dim = x.integer("dim");
    ix.top_k = x.integer("top_k");
    x.finish({"heads", "dim", "top_k"});
    a.indexer = ix;
  } else {
    m.optional("indexer");
  }
  m.finish({"kind", "heads", "q_rank", "kv_rank", "qk_nope", "qk_rope", "v_head", "rope_branch",
            "output_gate", "indexer"});
  return a;
}

attention_spec read_gdn(yaml_map& m) {
  attention_gdn a;
  a.qk_heads = m.integer("qk_heads");
  a.v_heads = m.integer("v_heads");
  a.key_dim = m.integer("key_dim");
  a.value_dim = m.integer("value_dim");
  a.conv_kernel = m.optional_integer("conv_kernel", 0).value_or(0);
  if (a.v_heads % a.qk_heads != 0)
    m.fail("qk_heads",
           fmt::format("{} query/key heads do not divide {} value heads", a.qk_heads, a.v_heads));
  m.finish({"kind", "qk_heads", "v_heads", "key_dim", "value_dim", "conv_kernel"});
  return a;
}

/// A chunked scan's block (lightning's block_size, a linear kind's linear_chunk): every block is
/// padded to its size and costs a block x block product (the tally's block scheme and the
/// executor's reference alike), so a size past any scan kernel's is refused at its field.
constexpr std::int64_t max_scan_block = 4096;
std::int64_t scan_block(yaml_map& m, const std::string& key, std::int64_t fallback) {
  std::int64_t block = m.optional_integer(key).value_or(fallback);
  if (block > max_scan_block)
    m.fail(key, fmt::format("{} tokens is past the largest scan block calc models ({})", block,
                            max_scan_block));
  return block;
}

/// Lightning attention (MiniMax): read into the Gated DeltaNet struct as its lightning rule,
/// one head count for queries, keys and values, key and value widths equal, no convolution.
attention_spec read_lightning(yaml_map& m) {
  attention_gdn a;
  a.rule = attention_gdn::rule_kind::lightning;
  a.qk_heads = a.v_heads = m.integer("heads");
  a.key_dim = a.value_dim = m.integer("head_dim");
  a.block = scan_block(m, "block_size", 256);  // MiniMax's published default
  m.finish({"kind", "heads", "head_dim", "block_size"});
  return a;
}

attention_spec read_kda(yaml_map& m) {
  attention_kda a;
  a.heads = m.integer("heads");
  a.key_dim = m.integer("key_dim");
  a.value_dim = m.integer("value_dim");
  a.decay_rank = m.integer("decay_rank");
  a.conv_kernel = m.optional_integer("conv_kernel", 0).value_or(0);
  a.output_gate = m.boolean("output_gate", true);
  a.gate_rank = m.optional_integer("gate_rank", 0).value_or(0);
  if (a.gate_rank > 0 && !a.output_gate)
    m.fail("gate_rank", "a low-rank gate needs output_gate: true");
  m.finish({"kind", "heads", "key_dim", "value_dim", "decay_rank", "conv_kernel", "output_gate",
            "gate_rank"});
  return a;
}

attention_spec read_mamba2(yaml_map& m) {
  attention_mamba2 a;
  a.heads = m.integer("heads");
  a.head_dim = m.integer("head_dim");
  a.state_dim = m.integer("state_dim");
  a.groups = m.optional_integer("groups").value_or(1);
  a.conv_kernel = m.optional_integer("conv_kernel").value_or(4);
  a.conv_bias = m.boolean("conv_bias", true);
  a.proj_bias = m.boolean("proj_bias", false);
  a.gated_norm = m.boolean("gated_norm", true);
  if (a.heads % a.groups != 0)
    m.fail("groups", fmt::format("{} groups do not divide {} heads", a.groups, a.heads));
  m.finish({"kind", "heads", "head_dim", "state_dim", "groups", "conv_kernel", "conv_bias",
            "proj_bias", "gated_norm"});
  return a;
}

/// A Mamba-1 (S6) mixer: read into the Mamba2 struct as its selective form, one head per inner
/// channel (model_spec.h).
attention_spec read_mamba(yaml_map& m) {
  attention_mamba2 a;
  a.scan = attention_mamba2::scan_kind::selective;
  a.heads = m.integer("inner");
  a.head_dim = 1;
  a.groups = 1;
  a.state_dim = m.integer("state_dim");
  a.dt_rank = m.integer("dt_rank");
  a.conv_kernel = m.optional_integer("conv_kernel").value_or(4);
  a.conv_bias = m.boolean("conv_bias", true);
  a.proj_bias = m.boolean("proj_bias", false);
  a.gated_norm = false;
  a.dt_norms = m.boolean("dt_norms", false);
  m.finish({"kind", "inner", "state_dim", "dt_rank", "conv_kernel", "conv_bias", "proj_bias",
            "dt_norms"});
  return a;
}

/// A gated short convolution (LFM2's conv layers): read into the Mamba2 struct as its short_conv
/// form, one head per channel and no state matrix (model_spec.h).
attention_spec read_short_conv(yaml_map& m) {
  attention_mamba2 a;
  a.scan = attention_mamba2::scan_kind::short_conv;
  a.heads = m.integer("channels");
  a.head_dim = 1;
  a.groups = 1;
  a.state_dim = 0;
  a.conv_kernel = m.integer("conv_kernel");
  a.conv_bias = m.boolean("bias", false);
  a.proj_bias = a.conv_bias;
  a.gated_norm = false;
  m.finish({"kind", "channels", "conv_kernel", "bias"});
  return a;
}

attention_spec read_dsa(yaml_map& m) {
  attention_dsa a;
  a.heads = m.integer("heads");
  a.head_dim = m.integer("head_dim");
  a.q_rank = m.integer("q_rank");
  a.o_groups = m.optional_integer("o_groups").value_or(1);
  a.o_rank = m.integer("o_rank");
  a.window = m.integer("window");
  a.sink = m.boolean("sink", true);
  if ((checked(a.heads) * a.head_dim).wide() % a.o_groups != 0)
    m.fail("o_groups",
           fmt::format("{} output groups do not divide {} x {}", a.o_groups, a.heads, a.head_dim));
  if (m.has("global")) {
    yaml_map g = m.map("global");
    dsa_global gl;
    gl.ratio = g.integer("ratio");
    gl.top_k = g.optional_integer("top_k", 0).value_or(0);
    gl.source = g.optional_integer("source", 0).value_or(-1);
    gl.overlap = g.boolean("overlap", false);
    gl.gate = g.boolean("gate", gl.ratio > 1);
    gl.position_bias = g.boolean("position_bias", false);
    g.finish({"ratio", "top_k", "source", "overlap", "gate", "position_bias"});
    a.global = gl;
  } else {
    m.optional("global");
  }
  if (m.has("indexer")) {
    yaml_map x = m.map("indexer");
    if (!a.global) x.fail("heads", "an indexer needs a global branch to index");
    dsa_indexer ix;
    ix.heads = x.integer("heads");
    ix.dim = x.integer("dim");
    ix.top_k = x.integer("top_k");
    std::string keys = x.optional_text("keys").value_or("compressor");
    if (keys == "compressor") {
      ix.keys = dsa_indexer::keys_kind::compressor;
    } else if (keys == "projection") {
      ix.keys = dsa_indexer::keys_kind::projection;
    } else if (keys == "shared") {
      ix.keys = dsa_indexer::keys_kind::shared;
    } else {
      x.fail("keys", fmt::format("expected compressor, projection or shared, got '{}'", keys));
    }
    ix.candidates = x.optional_integer("candidates", 0).value_or(0);
    x.finish({"heads", "dim", "top_k", "keys", "candidates"});
    a.indexer = ix;
  } else {
    m.optional("indexer");
  }
  m.finish({"kind", "heads", "head_dim", "q_rank", "o_groups", "o_rank", "window", "sink", "global",
            "indexer"});
  return a;
}

/// A parallel hybrid: `attention` (a gqa block) and `mixer` (a mamba2 block) side by side.
attention_spec read_parallel(yaml_map& m) {
  attention_parallel a;
  yaml_map at = m.map("attention");
  if (kind_of(at, kAttentionKinds) != "gqa")
    at.fail("kind", "the attention branch of a parallel block must be gqa");
  a.attention = std::get<attention_gqa>(read_gqa(at));
  if (a.attention.kv_source)
    at.fail("kv_source", "the attention branch of a parallel block keeps its own cache");
  yaml_map mx = m.map("mixer");
  if (kind_of(mx, kAttentionKinds) != "mamba2")
    mx.fail("kind", "the mixer branch of a parallel block must be mamba2");
  a.mixer = std::get<attention_mamba2>(read_mamba2(mx));
  m.finish({"kind", "attention", "mixer"});
  return a;
}

/// The reader of each attention kind by its schema name (the names kAttentionKinds accepts): a
/// table, not a chain whose last reader takes whatever is left, so no kind is read as another.
const std::pair<const char*, attention_spec (*)(yaml_map&)> kAttentionReaders[] = {
    {"gqa", read_gqa},
    {"mla", read_mla},
    {"gated_deltanet", read_gdn},
    {"lightning", read_lightning},
    {"kda", read_kda},
    {"dsa", read_dsa},
    {"mamba2", read_mamba2},
    {"mamba", read_mamba},
    {"short_conv", read_short_conv},
    {"parallel", read_parallel}};
// Every alternative of attention_spec but attention_none (`attention: none`) has a reader; the
// mamba2 alternative has three (mamba2, mamba for its Mamba-1 form, short_conv), the gated
// DeltaNet one two (gated_deltanet, lightning).
static_assert(std::size(kAttentionReaders) == std::variant_size_v<attention_spec> + 2);

attention_spec read_attention(yaml_map m) {
  std::string kind = kind_of(m, kAttentionKinds);
  for (const auto& [name, read] : kAttentionReaders)
    if (kind == name) return read(m);
  m.fail("kind", fmt::format("no reader for kind '{}'", kind));  // kAttentionKinds lists none
}

ffn_spec read_moe(yaml_map& m) {
  ffn_moe f;
  f.experts = m.integer("experts");
  f.top_k = m.integer("top_k");
  f.intermediate = m.integer("intermediate");
  f.shared_experts = m.optional_integer("shared_experts", 0).value_or(0);
  f.shared_intermediate = m.optional_integer("shared_intermediate").value_or(f.intermediate);
  f.shared_gate = m.boolean("shared_gate", false);
  f.router = m.boolean("router", true);
  f.router_bias = m.boolean("router_bias", false);
  f.expert_bias = m.boolean("expert_bias", false);
  f.latent = m.optional_integer("latent", 0).value_or(0);
  f.latent_norm = m.boolean("latent_norm", false);
  f.gated = m.boolean("gated", true);
  if (f.top_k > f.experts)
    m.fail("top_k", fmt::format("top_k {} exceeds the {} experts", f.top_k, f.experts));
  m.finish({"kind", "experts", "top_k", "intermediate", "shared_experts", "shared_intermediate",
            "shared_gate", "router", "router_bias", "expert_bias", "latent", "latent_norm", "gated"});
  return f;
}

ffn_spec read_mlp(yaml_map& m) {
  ffn_mlp f;
  f.intermediate = m.integer("intermediate");
  f.bias = m.boolean("bias", false);
  f.activation_params = m.optional_integer("activation_params", 0).value_or(0);
  m.finish({"kind", "intermediate", "bias", "activation_params"});
  return f;
}

ffn_spec read_swiglu(yaml_map& m) {
  ffn_swiglu f;
  f.intermediate = m.integer("intermediate");
  f.bias = m.boolean("bias", false);
  m.finish({"kind", "intermediate", "bias"});
  return f;
}

/// The reader of each feed-forward kind by its schema name, as kAttentionReaders.
const std::pair<const char*, ffn_spec (*)(yaml_map&)> kFfnReaders[] = {
    {"swiglu", read_swiglu}, {"moe", read_moe}, {"mlp", read_mlp}};
// Every alternative of ffn_spec but ffn_none (`ffn: none`) has a reader.
static_assert(std::size(kFfnReaders) + 1 == std::variant_size_v<ffn_spec>);

ffn_spec read_ffn(yaml_map m) {
  std::string kind = kind_of(m, kFfnKinds);
  for (const auto& [name, read] : kFfnReaders)
    if (kind == name) return read(m);
  m.fail("kind", fmt::format("no reader for kind '{}'", kind));  // kFfnKinds lists none
}

engram_spec read_engram(yaml_map m) {
  engram_spec e;
  e.table_rows = m.integer("table_rows");
  e.buckets = m.integer("buckets");
  e.bucket_dim = m.integer("bucket_dim");
  e.ways = m.integer("ways");
  m.finish({"table_rows", "buckets", "bucket_dim", "ways"});
  return e;
}

/// Whether `key` holds the scalar `none` (a layer without that block); any other scalar is an
/// error naming the choices.
bool is_none(yaml_map& m, const std::string& key) {
  YAML::Node node = m.optional(key);
  if (!node.IsScalar()) return false;
  if (node.Scalar() == "none") return true;
  m.fail(key, fmt::format("expected a mapping with a kind, or none, got '{}'", node.Scalar()));
}

/// Reads attention/ffn/norms/engram from a map that may hold other keys (the caller finishes it).
block_spec read_block(yaml_map& m) {
  block_spec b;
  if (m.has("attention"))
    b.attention = is_none(m, "attention") ? attention_spec(attention_none{})
                                          : read_attention(m.map("attention"));
  if (m.has("ffn")) b.ffn = is_none(m, "ffn") ? ffn_spec(ffn_none{}) : read_ffn(m.map("ffn"));
  b.norms = m.optional_integer("norms", 0);
  if (m.has("engram")) b.engram = read_engram(m.map("engram"));
  return b;
}

dtype read_dtype(yaml_map& m, const std::string& key, const std::string& fallback) {
  auto text = m.optional_text(key);
  try {
    return parse_dtype(text.value_or(fallback));
  } catch (const std::invalid_argument& e) {
    m.fail(key, e.what());
  }
}

precision_spec read_precision(yaml_map& parent) {
  YAML::Node node = parent.optional("precision");
  if (!node.IsDefined()) node = YAML::Node(YAML::NodeType::Map);
  yaml_map m(node, parent.path_of("precision"), parent.file());
  precision_spec p;
  p.weights = read_dtype(m, "weights", "bf16");
  // Module roles stay absent unless given, so `--weights` (set_weights) still sets them all.
  if (m.has("attention")) p.attention = read_dtype(m, "attention", "");
  if (m.has("attention_out")) p.attention_out = read_dtype(m, "attention_out", "");
  if (m.has("experts")) p.experts = read_dtype(m, "experts", "");
  if (m.has("shared_experts")) p.shared_experts = read_dtype(m, "shared_experts", "");
  if (m.has("dense_ffn")) p.dense_ffn = read_dtype(m, "dense_ffn", "");
  if (m.has("conv_taps")) p.conv_taps = read_dtype(m, "conv_taps", "");
  if (m.has("mixer_gates")) p.mixer_gates = read_dtype(m, "mixer_gates", "");
  p.embedding = read_dtype(m, "embedding", p.weights.name);
  p.head = read_dtype(m, "head", p.weights.name);
  p.norms = read_dtype(m, "norms", "bf16");
  // Absent unless given: they follow `norms` (and a --norms override) otherwise.
  if (m.has("router_bias")) p.router_bias = read_dtype(m, "router_bias", "");
  if (m.has("ssm_params")) p.ssm_params = read_dtype(m, "ssm_params", "");
  p.kv = read_dtype(m, "kv", "bf16");
  p.recurrent = read_dtype(m, "recurrent", "fp32");
  p.conv = read_dtype(m, "conv", "bf16");
  p.index = read_dtype(m, "index", p.kv.name);
  p.window = read_dtype(m, "window", p.kv.name);
  p.compressor = read_dtype(m, "compressor", "fp32");
  p.token_history = read_dtype(m, "token_history", "int64");
  p.activations = read_dtype(m, "activations", "bf16");
  if (m.has("production")) {
    yaml_map prod = m.map("production");
    YAML::Node given = m.optional("production");
    const std::vector<std::string> roles = {"kv",        "index", "window",       "compressor",
                                            "recurrent", "conv",  "token_history"};
    for (auto it = given.begin(); it != given.end(); ++it) {
      std::string role = key_text(it->first, prod.path_of("?"), parent.file());
      if (!p.state_role(role)) continue;  // finish() names the unknown role
      p.production[role] = read_dtype(prod, role, "bf16");
    }
    prod.finish(roles);
  }
  // A per-row term (rowidx, GPTQ's g_idx) belongs to weight matrices; state and vectors have
  // no matrix rows to count it over.
  for (const auto& [key, t] :
       std::vector<std::pair<std::string, const dtype*>>{{"norms", &p.norms},
                                                         {"kv", &p.kv},
                                                         {"recurrent", &p.recurrent},
                                                         {"conv", &p.conv},
                                                         {"index", &p.index},
                                                         {"window", &p.window},
                                                         {"compressor", &p.compressor},
                                                         {"token_history", &p.token_history},
                                                         {"activations", &p.activations}})
    // A per-row format (block_rows 1, block_cols 0: a scale per output row) likewise.
    if (bool per_row = t->block_rows == 1 && t->block_cols == 0; t->row_bits > 0 || per_row)
      m.fail(key, fmt::format("'{}' stores a value per {} row of a weight matrix ({}), "
                              "which the {} role does not have",
                              t->name, per_row ? "output" : "input",
                              per_row ? "row scales" : "rowidx", key));
  // Convolution taps are no Linear: a layout only a Linear stores (pack-quantized's per-matrix
  // record, GPTQ's g_idx per input row) has nothing to count there.
  if (p.conv_taps && (p.conv_taps->matrix_bits > 0 || p.conv_taps->row_bits > 0))
    m.fail("conv_taps", fmt::format("'{}' is a layout of Linear weights ({}); convolution taps "
                                    "are not a Linear and no quantiser stores them so",
                                    p.conv_taps->name,
                                    p.conv_taps->matrix_bits > 0 ? "a record per matrix"
                                                                 : "a value per input row"));
  m.finish({"weights", "attention", "attention_out", "experts", "shared_experts", "dense_ffn",
            "conv_taps", "mixer_gates", "embedding", "head", "norms", "router_bias",
            "ssm_params", "kv", "recurrent", "conv", "index", "window", "compressor",
            "token_history", "activations", "production"});
  return p;
}

/// Reads an optional key that names one of a few choices; keeps `value` when absent.
template <typename T>
void read_choice(yaml_map& m, const std::string& key,
                 const std::vector<std::pair<std::string, T>>& choices, T& value) {
  auto text = m.optional_text(key);
  if (!text) return;
  std::string names;
  for (const auto& [name, v] : choices) {
    if (*text == name) {
      value = v;
      return;
    }
    names += (names.empty() ? "" : " or ") + name;
  }
  m.fail(key, fmt::format("expected {}, got '{}'", names, *text));
}

execution_spec read_execution(yaml_map& parent) {
  execution_spec e;
  YAML::Node node = parent.optional("execution");
  if (!node.IsDefined()) node = YAML::Node(YAML::NodeType::Map);
  yaml_map m(node, parent.path_of("execution"), parent.file());
  const std::vector<std::pair<std::string, pair_counting>> pairs = {
      {"causal", pair_counting::causal}, {"rectangular", pair_counting::rectangular}};
  read_choice(m, "attention_pairs", pairs, e.pairs);
  read_choice<bool>(m, "vocab_rows", {{"last", false}, {"all", true}}, e.vocab_all_rows);
  read_choice<mla_path>(m, "mla_path",
                        {{"compact", mla_path::compact}, {"expanded", mla_path::expanded}}, e.mla);
  read_choice<linear_prefill>(
      m, "linear_prefill",
      {{"chunked", linear_prefill::chunked}, {"recurrent", linear_prefill::recurrent}}, e.linear);
  e.chunk = scan_block(m, "linear_chunk", e.chunk);
  read_choice<chunk_rule>(m, "linear_chunk_flops",
                          {{"padded_gemms", chunk_rule::padded_gemms},
                           {"valid_triangles", chunk_rule::valid_triangles}},
                          e.chunk_flops);
  e.step_state_gemms = m.boolean("linear_step_flops", e.step_state_gemms);
  e.conv_flops = m.boolean("conv_flops", e.conv_flops);
  read_choice(m, "index_scan", pairs, e.index_scan);
  e.ced = m.boolean("ced", false);
  m.finish({"attention_pairs", "vocab_rows", "mla_path", "linear_prefill", "linear_chunk",
            "linear_chunk_flops", "linear_step_flops", "conv_flops", "index_scan", "ced"});
  return e;
}

connection_spec read_connection(yaml_map& parent) {
  connection_spec c;
  YAML::Node node = parent.optional("connection");
  if (!node.IsDefined()) return c;
  yaml_map m(node, parent.path_of("connection"), parent.file());
  std::string kind = m.text("kind");
  if (kind == "residual") {
    c.type = connection_spec::kind::residual;
  } else if (kind == "attnres") {
    c.type = connection_spec::kind::attnres;
    c.block_layers = m.integer("block_layers");
  } else if (kind == "mhc") {
    c.type = connection_spec::kind::mhc;
    c.ways = m.integer("ways");
    c.sinkhorn_iters = m.integer("sinkhorn_iters");
    c.head_mix = m.boolean("head_mix", false);
  } else {
    std::string message = fmt::format("unknown kind '{}'", kind);
    if (auto guess = closest(kind, {"residual", "attnres", "mhc"}))
      message += fmt::format(" (did you mean '{}'?)", *guess);
    m.fail("kind", message);
  }
  m.finish({"kind", "block_layers", "ways", "sinkhorn_iters", "head_mix"});
  return c;
}

/// A pattern entry "name" or "name*N": the name and its repeat count (not yet expanded).
std::pair<std::string, std::int64_t> pattern_entry(const YAML::Node& node, const std::string& field,
                                                   const std::string& file) {
  if (!node.IsScalar()) throw spec_error(location_of(node, file), field, "expected a variant name");
  std::string entry = node.Scalar();
  std::int64_t times = 1;
  if (auto star = entry.find('*'); star != std::string::npos) {
    try {
      times = std::stoll(entry.substr(star + 1));
    } catch (const std::logic_error&) {
      times = 0;
    }
    if (times <= 0 || times > limits::layers)
      throw spec_error(location_of(node, file), field,
                       fmt::format("'{}': repeat count must be a positive integer up to {} (the "
                                   "layer limit)",
                                   entry, limits::layers));
    entry = entry.substr(0, star);
  }
  return {entry, times};
}

layers_spec read_layers(yaml_map m) {
  layers_spec l;
  l.count = m.integer("count");
  if (l.count > limits::layers)
    m.fail("count", fmt::format("{} layers is more than the limit of {}", l.count, limits::layers));
  l.base = read_block(m);
  if (!l.base.attention)
    throw spec_error(m.where(), m.path_of("attention"), "missing required field");
  if (!l.base.ffn) throw spec_error(m.where(), m.path_of("ffn"), "missing required field");
  if (!l.base.norms) l.base.norms = 2;

  if (m.has("variants")) {
    yaml_map vars = m.map("variants");
    YAML::Node node = m.optional("variants");
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = key_text(it->first, vars.path_of("?"), m.file());
      yaml_map v(it->second, vars.path_of(name), m.file());
      l.variants[name] = read_block(v);
      v.finish({"attention", "ffn", "norms", "engram"});
    }
  }
  if (m.has("pattern")) {
    YAML::Node node = m.required("pattern");
    l.pattern_where = location_of(node, m.file());
    if (!node.IsSequence() || node.size() == 0)
      throw spec_error(l.pattern_where, m.path_of("pattern"), "expected a list of variant names");
    // The expanded length is checked before expanding (name*1000000 x 20 is 20 million names).
    std::vector<std::pair<std::string, std::int64_t>> entries;
    std::int64_t expanded = 0;
    for (std::size_t i = 0; i < node.size(); ++i) {
      entries.push_back(
          pattern_entry(node[i], fmt::format("{}[{}]", m.path_of("pattern"), i), m.file()));
      expanded += entries.back().second;  // at most limits::layers per entry: no overflow
    }
    if (expanded > l.count)
      throw spec_error(
          l.pattern_where, m.path_of("pattern"),
          fmt::format("pattern of {} layers is longer than count {}", expanded, l.count));
    for (const auto& [name, times] : entries) l.pattern.insert(l.pattern.end(), times, name);
    for (std::size_t i = 0; i < node.size(); ++i) {
      const std::string& name = entries[i].first;
      if (name != "base" && !l.variants.count(name)) {
        std::vector<std::string> known = {"base"};
        for (const auto& [k, v] : l.variants) known.push_back(k);
        std::string message = fmt::format("unknown variant '{}'", name);
        if (auto guess = closest(name, known))
          message += fmt::format(" (did you mean '{}'?)", *guess);
        throw spec_error(location_of(node[i], m.file()),
                         fmt::format("{}[{}]", m.path_of("pattern"), i), message);
      }
    }
  }
  if (m.has("overrides")) {
    YAML::Node node = m.required("overrides");
    if (!node.IsSequence())
      throw spec_error(location_of(node, m.file()), m.path_of("overrides"), "expected a list");
    for (std::size_t i = 0; i < node.size(); ++i) {
      yaml_map o(node[i], fmt::format("{}[{}]", m.path_of("overrides"), i), m.file());
      override_spec ov;
      ov.where = o.where();
      YAML::Node at = o.required("at");
      if (!at.IsSequence())
        throw spec_error(location_of(at, m.file()), o.path_of("at"),
                         "expected a list of layer indices");
      for (std::size_t j = 0; j < at.size(); ++j) {
        std::string field = fmt::format("{}[{}]", o.path_of("at"), j);
        std::int64_t index = read_integer(at[j], field, m.file(), 0);
        if (index >= l.count)
          throw spec_error(
              location_of(at[j], m.file()), field,
              fmt::format("layer {} is out of range (the model has {} layers)", index, l.count));
        ov.at.push_back(index);
      }
      if (auto variant = o.optional_text("variant")) {
        if (!l.variants.count(*variant))
          o.fail("variant", fmt::format("unknown variant '{}'", *variant));
        ov.block = l.variants.at(*variant);
      }
      block_spec own = read_block(o);
      if (own.attention) ov.block.attention = own.attention;
      if (own.ffn) ov.block.ffn = own.ffn;
      if (own.norms) ov.block.norms = own.norms;
      if (own.engram) ov.block.engram = own.engram;
      o.finish({"at", "variant", "attention", "ffn", "norms", "engram"});
      l.overrides.push_back(std::move(ov));
    }
  }
  m.finish({"count", "attention", "ffn", "norms", "engram", "variants", "pattern", "overrides"});
  return l;
}

/// A key of a mapping node, or an undefined node (never throws, never inserts).
YAML::Node child(const YAML::Node& node, const std::string& key) {
  if (!node.IsDefined() || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node map = node;
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
  return YAML::Node(YAML::NodeType::Undefined);
}

/// An element of a sequence node, or an undefined node.
YAML::Node element(const YAML::Node& node, std::size_t i) {
  if (!node.IsDefined() || !node.IsSequence() || i >= node.size())
    return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node seq = node;
  return seq[i];
}

/// Where a layer's attention block was written: its field path and its YAML node.
struct attention_origin {
  std::string path;
  YAML::Node node;
};

/// A GQA layer that reads another layer's KV cache (kv_source) must name an earlier GQA layer
/// that stores one of the same shape: KV heads, head_dim, value width, window and k_is_v.
void validate_kv_sources(const model_spec& spec, const std::vector<const attention_spec*>& at,
                         const std::vector<attention_origin>& origin, const std::string& file) {
  for (std::int64_t i = 0; i < spec.layers.count; ++i) {
    const auto* a = std::get_if<attention_gqa>(at[static_cast<std::size_t>(i)]);
    if (!a || !a->kv_source) continue;
    const attention_origin& o = origin[static_cast<std::size_t>(i)];
    const YAML::Node node = child(o.node, "kv_source");
    source_location where = node.IsDefined()     ? location_of(node, file)
                            : o.node.IsDefined() ? location_of(o.node, file)
                                                 : source_location{file, 0, 0};
    auto fail = [&](const std::string& why) {
      throw spec_error(where, o.path + ".kv_source", fmt::format("layer {}: {}", i, why));
    };
    std::int64_t src = *a->kv_source;
    if (src >= i) fail(fmt::format("the source layer {} must come before it", src));
    const auto* s = std::get_if<attention_gqa>(at[static_cast<std::size_t>(src)]);
    if (!s || s->kv_source) fail(fmt::format("layer {} stores no GQA cache of its own", src));
    if (s->kv_heads != a->kv_heads || s->head_dim != a->head_dim ||
        s->value_dim() != a->value_dim() || s->window != a->window ||
        s->chunk != a->chunk || s->block_sparse != a->block_sparse || s->k_is_v != a->k_is_v) {
      auto shape = [](const attention_gqa& g) {
        std::string t = fmt::format("{} KV heads x {}", g.kv_heads, g.head_dim);
        if (g.v_head_dim) t += fmt::format(" (values x {})", *g.v_head_dim);
        if (g.window) t += fmt::format(", window {}", *g.window);
        if (g.chunk) t += fmt::format(", chunk {}", *g.chunk);
        if (g.k_is_v) t += ", k_is_v";
        return t;
      };
      fail(fmt::format("layer {} caches {}, not the {} this layer reads", src, shape(*s),
                       shape(*a)));
    }
  }
}

/// A layer that reads another layer's global entries must name one that stores them.
void validate_sources(const model_spec& spec, yaml_map& m, const YAML::Node& root) {
  std::vector<const attention_spec*> at(static_cast<std::size_t>(spec.layers.count));
  std::vector<attention_origin> origin(static_cast<std::size_t>(spec.layers.count));
  const YAML::Node layers = child(root, "layers");
  for (std::int64_t i = 0; i < spec.layers.count; ++i) {
    at[static_cast<std::size_t>(i)] = &*spec.layers.base.attention;
    origin[static_cast<std::size_t>(i)] = {"layers.attention", child(layers, "attention")};
    if (!spec.layers.pattern.empty()) {
      const std::string& v =
          spec.layers.pattern[static_cast<std::size_t>(i) % spec.layers.pattern.size()];
      if (v != "base" && spec.layers.variants.at(v).attention) {
        at[static_cast<std::size_t>(i)] = &*spec.layers.variants.at(v).attention;
        origin[static_cast<std::size_t>(i)] = {
            fmt::format("layers.variants.{}.attention", v),
            child(child(child(layers, "variants"), v), "attention")};
      }
    }
  }
  for (std::size_t j = 0; j < spec.layers.overrides.size(); ++j) {
    const override_spec& ov = spec.layers.overrides[j];
    const YAML::Node node = element(child(layers, "overrides"), j);
    attention_origin o = {fmt::format("layers.overrides[{}].attention", j),
                          child(node, "attention")};
    YAML::Node variant = child(node, "variant");
    if (!o.node.IsDefined() && variant.IsDefined() && variant.IsScalar()) {
      std::string v = variant.Scalar();
      o = {fmt::format("layers.variants.{}.attention", v),
           child(child(child(layers, "variants"), v), "attention")};
    }
    for (std::int64_t i : ov.at)
      if (ov.block.attention) {
        at[static_cast<std::size_t>(i)] = &*ov.block.attention;
        origin[static_cast<std::size_t>(i)] = o;
      }
  }
  validate_kv_sources(spec, at, origin, m.file());
  for (std::int64_t i = 0; i < spec.layers.count; ++i) {
    const auto* a = std::get_if<attention_dsa>(at[static_cast<std::size_t>(i)]);
    if (!a || !a->global || a->global->source < 0) continue;
    std::int64_t src = a->global->source;
    const attention_dsa* s = src < spec.layers.count
                                 ? std::get_if<attention_dsa>(at[static_cast<std::size_t>(src)])
                                 : nullptr;
    if (src >= i || !s || !s->global || s->global->source >= 0)
      throw spec_error(
          m.where(), fmt::format("layers[{}].attention.global.source", i),
          fmt::format("layer {} does not store global entries before layer {}", src, i));
  }
}

model_spec read_model(const YAML::Node& root, const std::string& file) {
  yaml_map m(root, "", file);
  model_spec spec;
  spec.file = file;
  std::int64_t schema = m.optional_integer("schema").value_or(1);
  if (schema != 1)
    m.fail("schema", fmt::format("schema version {} is not supported (this calc reads 1)", schema));
  spec.name = m.text("name");
  spec.source = m.optional_text("source").value_or("");
  spec.vocab = m.integer("vocab");
  spec.hidden = m.integer("hidden");
  spec.tie_embeddings = m.boolean("tie_embeddings", false);
  spec.final_norm = m.boolean("final_norm", true);
  spec.embedding_norm = m.boolean("embedding_norm", false);
  spec.head_bias = m.boolean("head_bias", false);
  if (spec.head_bias && spec.tie_embeddings)
    m.fail("head_bias", "a tied head has no bias of its own (set tie_embeddings: false)");
  read_choice<bool>(m, "norm", {{"rmsnorm", false}, {"layernorm", true}}, spec.layer_norm);
  spec.position_embeddings = m.optional_integer("position_embeddings", 0).value_or(0);
  spec.max_position_embeddings = m.optional_integer("max_position_embeddings", 1);
  if (spec.max_position_embeddings && *spec.max_position_embeddings > limits::tokens)
    m.fail("max_position_embeddings",
           fmt::format("{} positions is more than the limit of {} tokens",
                       *spec.max_position_embeddings, limits::tokens));
  spec.precision = read_precision(m);
  spec.execution = read_execution(m);
  spec.connection = read_connection(m);
  spec.rope_table_frequencies = m.optional_integer("rope_table_frequencies", 0).value_or(0);
  spec.token_history = m.boolean("token_history", false);
  spec.layers = read_layers(m.map("layers"));
  // Parts beside the text model (a vision tower): checked here, reported by the commands that
  // read them (component_reader.h); model_spec stays the text model's.
  read_components(m, spec.precision.embedding);
  if (m.has("ced")) {
    yaml_map c = m.map("ced");
    ced_spec ced;
    ced.encoder_layers = c.integer("encoder_layers");
    ced.replay = c.integer("replay");
    if (ced.encoder_layers >= spec.layers.count)
      c.fail("encoder_layers",
             fmt::format("the encoder must leave decoder layers (the model has {})",
                         spec.layers.count));
    c.finish({"encoder_layers", "replay"});
    spec.ced = ced;
  } else {
    m.optional("ced");
  }
  if (spec.execution.ced && !spec.ced)
    m.fail("execution", "execution.ced needs a ced block (encoder_layers, replay)");
  if (m.has("mtp")) {
    yaml_map t = m.map("mtp");
    mtp_spec mtp;
    mtp.layers = t.integer("layers");
    if (mtp.layers > limits::layers)
      t.fail("layers",
             fmt::format("{} layers is more than the limit of {}", mtp.layers, limits::layers));
    mtp.variant = t.optional_text("variant").value_or("base");
    if (mtp.variant != "base" && !spec.layers.variants.count(mtp.variant))
      t.fail("variant", fmt::format("unknown variant '{}'", mtp.variant));
    t.finish({"layers", "variant"});
    spec.mtp = mtp;
  } else {
    m.optional("mtp");
  }
  validate_sources(spec, m, root);
  m.finish({"schema", "name", "source", "vocab", "hidden", "tie_embeddings", "final_norm",
            "embedding_norm",
            "head_bias", "norm",
            "position_embeddings", "max_position_embeddings", "precision", "execution", "connection", "rope_table_frequencies",
            "token_history", "ced", "mtp", "layers", "components"});
  spec.defaulted = m.defaulted();
  return spec;
}

}  // namespace

namespace {

/// Applies every --set in order, refusing a key set twice: the first would be silently ignored,
/// as the reader refuses a key given twice in a file.
void apply_sets(YAML::Node& root, const std::vector<std::string>& sets, const std::string& file) {
  std::set<std::string> keys;
  for (const auto& s : sets) {
    std::string key = s.substr(0, s.find('='));
    if (!keys.insert(key).second)
      throw spec_error("--set", fmt::format("{} is set twice; the first would be silently "
                                            "ignored",
                                            key));
    apply_set(root, s, file);
  }
}

}  // namespace

model_spec read_model_text(const std::string& yaml, const std::string& file,
                           const std::vector<std::string>& sets) {
  YAML::Node root = load_yaml_text(yaml, file);
  apply_sets(root, sets, file);
  return read_model(root, file);
}

model_spec read_model_file(const std::string& path, const std::vector<std::string>& sets) {
  // A Hugging Face config reads through the YAML it translates to: the same reader, the same
  // model_spec. Errors the translation did not catch are located in that YAML (`calc import`).
  if (hf::is_hf_config(path))
    return read_model_text(hf::import_config(path).plain, path + " (as imported)", sets);
  YAML::Node root = load_yaml_file(path);
  apply_sets(root, sets, path);
  return read_model(root, path);
}

std::string models_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("CALC_MODELS")) return env;
  // An installed calc (bin/calc) finds share/calc/models beside its own folder.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "calc" / "models";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return std::string(CALC_SOURCE_DIR) + "/models";
}

std::string resolve_model_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  if (static_cast<std::int64_t>(name_or_path.size()) > limits::path_chars)
    throw spec_error("model", fmt::format("a path of {} characters is longer than the limit of {}",
                                          name_or_path.size(), limits::path_chars));
  std::error_code ec;  // an unusable name is simply not found
  if (name_or_path.ends_with(".yaml") || name_or_path.ends_with(".json") ||
      fs::exists(name_or_path, ec))
    return name_or_path;
  // A bundled name, possibly in a subfolder ("examples/seed000-gqa").
  fs::path bundled = fs::path(models_dir()) / (name_or_path + ".yaml");
  if (fs::exists(bundled, ec)) return bundled.string();
  std::vector<std::string> known = bundled_models();
  if (auto name = find_ignoring_case(name_or_path, known))  // `Qwen3-8B` is qwen3-8b
    return (fs::path(models_dir()) / (*name + ".yaml")).string();
  // A Hugging Face id (Org/Name): the bundled model whose source names that repository, else
  // its snapshot in the local Hugging Face cache; no network.
  std::vector<std::string> looked;
  if (hf::looks_like_repo_id(name_or_path) &&
      !fs::is_directory(fs::path(models_dir()) / name_or_path.substr(0, name_or_path.find('/')),
                        ec)) {  // "examples/..." is a bundled subfolder, not an organisation
    if (auto name = hf::bundled_with_repo(name_or_path, models_dir(), known))
      return (fs::path(models_dir()) / (*name + ".yaml")).string();
    if (auto snapshot = hf::cached_snapshot(name_or_path, looked)) return *snapshot;
    throw spec_error("model", fmt::format("unknown model '{}': no bundled model's source names "
                                          "that repository, and the Hugging Face cache has no "
                                          "{} (no network is used)",
                                          name_or_path, looked.back()));
  }
  std::string message = fmt::format("unknown model '{}'", name_or_path);
  message += did_you_mean(suggest(name_or_path, known));
  message +=
      "; `calc models` lists the bundled ones, or give a path to a YAML file or a Hugging Face "
      "config.json";
  throw spec_error("model", message);
}

std::vector<std::string> bundled_models() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(models_dir(), ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace calc
