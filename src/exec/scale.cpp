#include "exec/scale.h"

#include <algorithm>
#include <numeric>

namespace calc {

namespace {

std::int64_t down(std::int64_t v, std::int64_t k) { return std::max<std::int64_t>(1, v / k); }

struct scaler {
  std::int64_t k;

  void operator()(attention_gqa& a) const {
    a.q_heads = down(a.q_heads, k);
    a.kv_heads = std::gcd(a.q_heads, down(a.kv_heads, k));  // keeps kv_heads | q_heads
    a.head_dim = down(a.head_dim, k);
    if (a.v_head_dim) a.v_head_dim = down(*a.v_head_dim, k);
  }
  void operator()(attention_mla& a) const {
    a.heads = down(a.heads, k);
    if (a.q_rank > 0) a.q_rank = down(a.q_rank, k);
    a.kv_rank = down(a.kv_rank, k);
    a.qk_nope = down(a.qk_nope, k);
    if (a.qk_rope > 0) a.qk_rope = down(a.qk_rope, k);
    a.v_head = down(a.v_head, k);
  }
  void operator()(attention_gdn& a) const {
    a.qk_heads = down(a.qk_heads, k);
    a.v_heads = std::max(a.qk_heads, down(a.v_heads, k) / a.qk_heads * a.qk_heads);
    a.key_dim = down(a.key_dim, k);
    a.value_dim = down(a.value_dim, k);
  }
  void operator()(attention_kda& a) const {
    a.heads = down(a.heads, k);
    a.key_dim = down(a.key_dim, k);
    a.value_dim = down(a.value_dim, k);
    a.decay_rank = down(a.decay_rank, k);
    if (a.gate_rank > 0) a.gate_rank = down(a.gate_rank, k);
  }
  void operator()(attention_dsa& a) const {
    a.heads = down(a.heads, k);
    a.head_dim = down(a.head_dim, k);
    a.q_rank = down(a.q_rank, k);
    a.o_groups = std::gcd(a.o_groups, a.heads * a.head_dim);
    a.o_rank = down(a.o_rank, k);
    if (a.indexer) {
      a.indexer->heads = down(a.indexer->heads, k);
      a.indexer->dim = down(a.indexer->dim, k);
    }
  }
  void operator()(attention_mamba2& a) const {
    a.heads = down(a.heads, k);
    a.head_dim = down(a.head_dim, k);
    if (a.state_dim > 0) a.state_dim = down(a.state_dim, k);  // a short conv keeps none
    a.groups = std::gcd(a.groups, a.heads);  // keeps groups | heads
    if (a.dt_rank > 0) a.dt_rank = down(a.dt_rank, k);  // Mamba-1's low-rank dt
  }
  void operator()(attention_none&) const {}
  void operator()(attention_parallel& a) const {
    (*this)(a.attention);
    (*this)(a.mixer);
  }
  void operator()(ffn_none&) const {}
  void operator()(ffn_swiglu& f) const { f.intermediate = down(f.intermediate, k); }
  void operator()(ffn_mlp& f) const { f.intermediate = down(f.intermediate, k); }
  void operator()(ffn_moe& f) const {
    f.experts = std::max(f.top_k, down(f.experts, k));
    f.intermediate = down(f.intermediate, k);
    f.shared_intermediate = down(f.shared_intermediate, k);
    if (f.latent > 0) f.latent = down(f.latent, k);
  }
  void block(block_spec& b) const {
    if (b.attention) std::visit(*this, *b.attention);
    if (b.ffn) std::visit(*this, *b.ffn);
    if (b.engram) {
      b.engram->table_rows = std::min<std::int64_t>(4096, down(b.engram->table_rows, k));
      b.engram->bucket_dim = down(b.engram->bucket_dim, k);
    }
  }
};

}  // namespace

model_spec scale_spec(const model_spec& spec, std::int64_t k) {
  model_spec s = spec;
  if (k <= 1) return s;
  scaler sc{k};
  s.name = spec.name + "/" + std::to_string(k);
  s.hidden = down(spec.hidden, k);
  s.vocab = down(spec.vocab, k);
  if (s.position_embeddings > 0)
    s.position_embeddings = std::max<std::int64_t>(1, spec.position_embeddings / k);
  sc.block(s.layers.base);
  for (auto& [name, v] : s.layers.variants) sc.block(v);
  for (override_spec& o : s.layers.overrides) sc.block(o.block);
  return s;
}

}  // namespace calc
