// What each layer kind is, stated once: its by-kind name, what one query-key pair costs, the
// shape of the record it caches per token or of the fixed recurrent state it keeps, and the heads
// tensor parallelism splits. The tally rules (attention_*.cpp), the closed form
// (closed_form_kinds.cpp), placement (plan/placement.cpp) and the engine rules
// (engine/engine.cpp) read these instead of re-deriving them, so a consumer cannot drift from the
// rule: tests/unit/kinds_test.cpp checks every bundled model against each consumer.
//
// Every dispatch over the kinds is a std::visit over a visitor with one overload per alternative
// (no generic fallback), so a new kind in model_spec.h does not compile until each place that
// dispatches on kinds handles it.
#pragma once

#include <cstdint>
#include <string>

#include "common/checked.h"
#include "common/dtype.h"
#include "spec/model_spec.h"

namespace calc {

/// The by-kind key of a layer's mixer ("gqa", "mla", "gated_deltanet", "lightning", "kda", "dsa",
/// "mamba2", "mamba" (Mamba-1), "none", "parallel") or feed-forward ("swiglu", "moe", "mlp", "none").
std::string kind_name(const attention_spec& a);
std::string kind_name(const ffn_spec& f);

/// How a layer attends, as `calc layers` reports it: "gqa" or "swa" (a window) or "chunked"
/// (chunked local attention) or "block_sparse" (Phi-3-small's block pattern), "mla" (or
/// "mla_sparse" with a lightning indexer),
/// "gated_deltanet", "lightning", "kda", "mamba2", "mamba" (Mamba-1), "none", a parallel hybrid's
/// "gqa+mamba2" / "swa+mamba2", and sparse attention's "window" (no global branch), "full"
/// (stores its own entries), "reindex" or "reuse" (reads a source's entries, with or without its
/// own indexer; §2.3.6).
std::string attention_mode(const attention_spec& a);

/// What one query-key pair costs (§2.1.3): per query head, 2 FLOPs per value of the score
/// (QK^T over score_dim) and of the aggregation (AV over aggregate_dim).
struct pair_shape {
  std::int64_t query_heads = 0;  // heads that score every pair
  checked score_dim;             // width of the query-key dot product
  checked aggregate_dim;         // width of the value summed per pair; 0 = no aggregation

  /// Interaction FLOPs per pair: 2 * heads * (score_dim + aggregate_dim).
  checked flops() const { return checked(2) * query_heads * (score_dim + aggregate_dim); }
};

/// GQA: n_Q heads score over d_h and aggregate d_v-wide values (2 * n_Q * (d_h + d_v) per pair;
/// d_v = d_h unless v_head_dim says otherwise).
pair_shape pair_of(const attention_gqa& a);
/// MLA: compact scores over kv_rank + qk_rope and aggregates kv_rank; expanded scores over
/// qk_nope + qk_rope and aggregates v_head (§2.3.2).
pair_shape pair_of(const attention_mla& a, mla_path path);
/// An MLA layer's lightning indexer (DeepSeek-V3.2, GLM-5): the score of one earlier token, index
/// heads dot products of index dim, no aggregation.
pair_shape pair_of(const mla_indexer& x);
/// DeepSeek sparse attention: QK and PV over the one shared record (Table 2-4), for window and
/// selected global pairs alike.
pair_shape pair_of(const attention_dsa& a);
/// The indexer's score of one scanned entry: index heads dot products of index dim, no
/// aggregation.
pair_shape pair_of(const dsa_indexer& x);

/// A record cached per token (or per compressed entry): keys of heads x key_dim values and values
/// of heads x value_dim, each stored as its own tensor; value_dim 0 when the keys are the values
/// (one tensor).
struct record_shape {
  std::int64_t heads = 1;  // heads it splits into under tensor parallelism; 1 = one shared record
  checked key_dim;         // key values per head
  checked value_dim;       // value values per head; 0 = none stored apart

  checked key_values() const { return checked(heads) * key_dim; }
  /// Bytes of one record in `format`: the keys, plus the values when stored apart.
  checked bytes(const dtype& format) const {
    checked b = format.bytes(key_values());
    if (value_dim > 0) b += format.bytes(checked(heads) * value_dim);
    return b;
  }
};

/// GQA's KV record: kv_heads keys and values of head_dim each (one tensor when k_is_v).
record_shape record_of(const attention_gqa& a);
/// Tokens of GQA records one request keeps at most: the window, or the chunk of chunked local
/// attention (the live part is the current chunk, (N-1) mod chunk + 1 of N tokens; calc counts
/// the chunk buffer an engine reserves, min(N, chunk), which bounds it and is its peak); none:
/// the whole history.
std::optional<std::int64_t> kv_cap(const attention_gqa& a);
/// MLA's cached record: compact, one latent of kv_rank plus the qk_rope branch shared by every
/// head; expanded, per-head K (qk_nope + qk_rope) and V (v_head).
record_shape record_of(const attention_mla& a, mla_path path);
/// An MLA indexer's key: one dim-wide vector per token, shared by the index heads.
record_shape record_of(const mla_indexer& x);
/// DeepSeek sparse attention's record, the key that is also the value (window records and
/// compressed entries alike).
record_shape record_of(const attention_dsa& a);
/// An index key: one dim-wide vector per completed entry.
record_shape record_of(const dsa_indexer& x);

/// The fixed state of a recurrent mixer: a key_dim x value_dim matrix per head, read and
/// rewritten by every decode step, and a short convolution keeping `conv_kernel` slots per
/// channel.
struct recurrent_shape {
  std::int64_t heads = 0;        // heads, each with its own state matrix
  std::int64_t key_dim = 0;      // d_k (Mamba2: head_dim P)
  std::int64_t value_dim = 0;    // d_v (Mamba2: state_dim N)
  checked conv_channels;         // channels of the short convolution
  std::int64_t conv_kernel = 0;  // convolution width; 0 = none
  /// key_dim x value_dim products per head in one recurrent step: the delta rule's S^T k,
  /// k (x) delta and S^T q (3); SSD's state update and readout (2).
  std::int64_t step_products = 0;
  /// How a chunked prefill runs: the delta rule's chunks (chunk_work) or SSD's (ssd_chunk_work);
  /// none: the scan has no chunked form (Mamba-1's S6) and every token is a recurrent step.
  enum class scan { delta_rule, ssd, none } chunks = scan::delta_rule;
  /// Tokens per chunk when the kind fixes its own (lightning attention's block_size); 0 = the
  /// call's linear_chunk.
  std::int64_t chunk = 0;

  /// Values of the state matrices, all heads.
  checked state_values() const { return checked(heads) * key_dim * value_dim; }
  /// Matrix FLOPs of one recurrent step of one token, all heads.
  checked step_flops() const { return checked(2) * step_products * heads * key_dim * value_dim; }
};

recurrent_shape recurrent_of(const attention_gdn& a);     // v_heads states; Q, K, V convolved
                                                          // (lightning: SSD's scan, no conv)
recurrent_shape recurrent_of(const attention_kda& a);     // heads states; Q, K, V convolved
recurrent_shape recurrent_of(const attention_mamba2& a);  // heads x P x N; x, B, C convolved
                                                          // (Mamba-1: inner x N; x convolved)

/// Mamba2's convolution channels (x, B and C) when B and C come in `groups` groups: the model's
/// own groups, or more where an engine replicates them over its ranks. A Mamba-1 mixer convolves
/// x alone (inner channels), whatever the groups.
checked mamba2_conv_channels(const attention_mamba2& a, std::int64_t groups);

/// Heads that tensor parallelism splits in a layer's mixer (tp must divide them); 0 for a layer
/// without a mixer (nothing to split). A parallel hybrid splits both branches over the same
/// cards: the gcd of its query heads and its SSM heads.
std::int64_t split_heads(const attention_spec& a);

}  // namespace calc
