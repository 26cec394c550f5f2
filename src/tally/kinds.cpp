// The per-kind statements of kinds.h: each kind's name, pair cost, cached record, recurrent state
// and split heads, in one place.
#include "tally/kinds.h"

#include <numeric>

namespace calc {

namespace {

/// The by-kind key of each alternative: one overload per kind, no fallback.
struct name_of {
  const char* operator()(const attention_gqa&) const { return "gqa"; }
  const char* operator()(const attention_mla&) const { return "mla"; }
  const char* operator()(const attention_gdn& a) const {
    return a.lightning() ? "lightning" : "gated_deltanet";
  }
  const char* operator()(const attention_kda&) const { return "kda"; }
  const char* operator()(const attention_dsa&) const { return "dsa"; }
  const char* operator()(const attention_mamba2& a) const {
    return a.short_conv() ? "short_conv" : a.selective() ? "mamba" : "mamba2";
  }
  const char* operator()(const attention_none&) const { return "none"; }
  const char* operator()(const attention_parallel&) const { return "parallel"; }
  const char* operator()(const ffn_swiglu&) const { return "swiglu"; }
  const char* operator()(const ffn_moe&) const { return "moe"; }
  const char* operator()(const ffn_mlp&) const { return "mlp"; }
  const char* operator()(const ffn_none&) const { return "none"; }
};

/// The heads tensor parallelism splits in each mixer kind.
struct heads_of {
  std::int64_t operator()(const attention_gqa& a) const { return a.q_heads; }
  std::int64_t operator()(const attention_mla& a) const { return a.heads; }
  std::int64_t operator()(const attention_gdn& a) const { return a.v_heads; }
  std::int64_t operator()(const attention_kda& a) const { return a.heads; }
  std::int64_t operator()(const attention_dsa& a) const { return a.heads; }
  std::int64_t operator()(const attention_mamba2& a) const { return a.heads; }
  std::int64_t operator()(const attention_none&) const { return 0; }
  std::int64_t operator()(const attention_parallel& a) const {
    return std::gcd(a.attention.q_heads, a.mixer.heads);
  }
};

/// How each kind attends (attention_mode).
struct mode_of {
  std::string operator()(const attention_gqa& a) const {
    return a.window ? "swa" : a.chunk ? "chunked" : a.block_sparse ? "block_sparse" : "gqa";
  }
  std::string operator()(const attention_mla& a) const { return a.indexer ? "mla_sparse" : "mla"; }
  std::string operator()(const attention_gdn& a) const {
    return a.lightning() ? "lightning" : "gated_deltanet";
  }
  std::string operator()(const attention_kda&) const { return "kda"; }
  std::string operator()(const attention_mamba2& a) const {
    return a.short_conv() ? "short_conv" : a.selective() ? "mamba" : "mamba2";
  }
  std::string operator()(const attention_none&) const { return "none"; }
  std::string operator()(const attention_parallel& a) const {
    return (*this)(a.attention) + "+" + (*this)(a.mixer);
  }
  std::string operator()(const attention_dsa& d) const {
    if (!d.global) return "window";
    if (d.global->source < 0) return "full";  // stores its own entries
    return d.indexer ? "reindex" : "reuse";   // reads a source's entries
  }
};

}  // namespace

std::string attention_mode(const attention_spec& a) { return std::visit(mode_of{}, a); }

std::string kind_name(const attention_spec& a) { return std::visit(name_of{}, a); }
std::string kind_name(const ffn_spec& f) { return std::visit(name_of{}, f); }

pair_shape pair_of(const attention_gqa& a) {
  return {a.q_heads, a.head_dim, a.value_dim()};  // QK^T over d_h, AV over d_v
}

pair_shape pair_of(const attention_mla& a, mla_path path) {
  if (path == mla_path::compact)  // W_UK absorbed into the query, W_UV into the output
    return {a.heads, checked(a.kv_rank) + a.qk_rope, a.kv_rank};
  return {a.heads, checked(a.qk_nope) + a.qk_rope, a.v_head};
}

pair_shape pair_of(const attention_dsa& a) {
  return {a.heads, a.head_dim, a.head_dim};  // K = V: one record scored and summed
}

pair_shape pair_of(const dsa_indexer& x) { return {x.heads, x.dim, 0}; }

pair_shape pair_of(const mla_indexer& x) { return {x.heads, x.dim, 0}; }

record_shape record_of(const attention_gqa& a) {
  // §2.2.1: one K (d_h) and one V (d_v) vector per KV head; one tensor when the keys are the
  // values.
  return {a.kv_heads, a.head_dim, a.k_is_v ? 0 : a.value_dim()};
}

std::optional<std::int64_t> kv_cap(const attention_gqa& a) { return a.window ? a.window : a.chunk; }

record_shape record_of(const attention_mla& a, mla_path path) {
  if (path == mla_path::compact)  // the shared latent plus the positional branch
    return {1, checked(a.kv_rank) + a.qk_rope, 0};
  return {a.heads, checked(a.qk_nope) + a.qk_rope, a.v_head};  // per-head K and V restored
}

record_shape record_of(const attention_dsa& a) { return {1, a.head_dim, 0}; }

record_shape record_of(const dsa_indexer& x) { return {1, x.dim, 0}; }

record_shape record_of(const mla_indexer& x) { return {1, x.dim, 0}; }

recurrent_shape recurrent_of(const attention_gdn& a) {
  recurrent_shape r;
  r.heads = a.v_heads;
  r.key_dim = a.key_dim;
  r.value_dim = a.value_dim;
  r.conv_channels =
      checked(2) * a.qk_heads * a.key_dim + checked(a.v_heads) * a.value_dim;  // Q, K, V
  r.conv_kernel = a.conv_kernel;
  r.step_products = 3;
  if (a.lightning()) {
    // S = e^-s S + k^T v and y = q S: SSD's recurrence with B = k, x = v, C = q, and its
    // chunked form over the model's blocks (the lightning block scheme).
    r.step_products = 2;
    r.chunks = recurrent_shape::scan::ssd;
    r.chunk = a.block;
  }
  return r;
}

recurrent_shape recurrent_of(const attention_kda& a) {
  recurrent_shape r;
  r.heads = a.heads;
  r.key_dim = a.key_dim;
  r.value_dim = a.value_dim;
  r.conv_channels = checked(2) * a.heads * a.key_dim + checked(a.heads) * a.value_dim;  // Q, K, V
  r.conv_kernel = a.conv_kernel;
  r.step_products = 3;
  return r;
}

checked mamba2_conv_channels(const attention_mamba2& a, std::int64_t groups) {
  checked inner = checked(a.heads) * a.head_dim;
  // Mamba-1 convolves x alone (B and C come after, from x_proj); a short convolution its gated
  // input B x.
  if (a.selective() || a.short_conv()) return inner;
  return inner + checked(2) * groups * a.state_dim;  // x, then B and C
}

recurrent_shape recurrent_of(const attention_mamba2& a) {
  recurrent_shape r;
  r.heads = a.heads;
  r.key_dim = a.head_dim;
  r.value_dim = a.state_dim;
  r.conv_channels = mamba2_conv_channels(a, a.groups);
  r.conv_kernel = a.conv_kernel;
  r.step_products = 2;  // h += (dt x) (x) B and y = h C
  r.chunks = a.scan == attention_mamba2::scan_kind::ssd ? recurrent_shape::scan::ssd
                                                        : recurrent_shape::scan::none;
  return r;
}

std::int64_t split_heads(const attention_spec& a) { return std::visit(heads_of{}, a); }

}  // namespace calc
