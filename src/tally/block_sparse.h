// Block-sparse attention's pattern (model_spec.h block_sparse_spec) in exact integers: the keys
// one query head sees, their sums over positions in O(1) per head, and the same as series in the
// context for the closed form. The mask itself is stated once (block_sparse_sees), for the
// executor; everything else here counts it.
#pragma once

#include <cstdint>

#include "common/checked.h"
#include "spec/model_spec.h"
#include "tally/call.h"
#include "tally/series.h"

namespace calc {

/// Query head `head`'s vertical phase c in [1, vert_stride]: it sees every block kb with
/// (kb + c) mod vert_stride == 0. c = (head * step) mod vert_stride + 1, step =
/// max(1, vert_stride / q_heads), or 0 with homo_heads (every head c = 1).
std::int64_t block_sparse_phase(const block_sparse_spec& b, std::int64_t q_heads,
                                std::int64_t head);

/// The mask: whether a head of phase c scores, from the query at 0-based position t, the key at
/// position k (causal: k <= t; then its block is local or vertical).
bool block_sparse_sees(const block_sparse_spec& b, std::int64_t phase, std::int64_t t,
                       std::int64_t k);

/// Whole blocks below the query's own block qb that a head of phase c sees: min(qb, L - 1)
/// local ones, plus the vertical ones among the blocks before the local band.
checked block_sparse_blocks(const block_sparse_spec& b, std::int64_t phase, checked qb);

/// Keys the query at position t sees, itself included, one head: (t mod block) + 1 of its own
/// block and block_sparse_blocks(t / block) whole blocks.
checked block_sparse_keys(const block_sparse_spec& b, std::int64_t phase, checked t);

/// sum over t in [0, n) of block_sparse_keys: the causal pairs of the first n positions of one
/// head, in closed form over blocks (O(1)).
checked block_sparse_pairs_prefix(const block_sparse_spec& b, std::int64_t phase, checked n);

/// Query-key pairs of a call summed over the query heads: B * sum_h [prefix_h(S+P) -
/// prefix_h(S)] when causal; the rectangle scores every key for every head, n_rect * q_heads.
checked block_sparse_head_pairs(const call& c, const attention_gqa& a);

/// Records one decode query at position `length` reads, summed over KV heads: each KV head reads
/// the keys any query head of its group sees, earlier ones only (the query's own K/V are
/// computed, not read), as full attention's history is read once per KV head.
checked block_sparse_read_records(const attention_gqa& a, checked length);

/// block_sparse_keys summed over heads, times `per_head_pair`, as a series in the context h (the
/// decode query sits at position h): the closed form's step interaction.
length_series block_sparse_step_series(const attention_gqa& a, checked per_head_pair);

/// block_sparse_read_records times `per_record`, as a series in the context h.
length_series block_sparse_read_series(const attention_gqa& a, checked per_record);

}  // namespace calc
