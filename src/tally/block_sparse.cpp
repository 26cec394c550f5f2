// Block-sparse attention's counts (block_sparse.h). Notation: B the block, L the local band in
// blocks (m = L - 1 whole blocks before the query's own), v the vertical stride, c a head's
// phase in [1, v]. A block below the band is seen when (kb + c) mod v == 0, so the vertical
// blocks among the first n are the multiples of v in [c, n + c - 1]: floor((n + c - 1) / v)
// (c - 1 < v, so nothing is subtracted).
#include "tally/block_sparse.h"

#include <algorithm>
#include <set>

namespace calc {

namespace {

/// Vertical blocks among blocks [0, n) for phase c.
checked vertical(checked n, std::int64_t c, std::int64_t v) { return (n + c - 1) / v; }

/// sum over i in [0, n) of floor(i / v): q whole runs of v (0, 1, ..., q-1 each v times), then
/// r values of q.
checked floor_prefix(checked n, std::int64_t v) {
  checked q = n / v, r = n - q * v;
  return checked(v) * q * (q - 1) / 2 + q * r;
}

/// sum over blocks qb in [0, nq) of block_sparse_blocks(qb).
checked blocks_prefix(const block_sparse_spec& b, std::int64_t c, checked nq) {
  const checked m = b.local_blocks - 1;
  // Local: min(qb, m) rises 0, 1, ..., m and then stays at m.
  checked a = min(nq, m + 1);
  checked local = a * (a - 1) / 2 + (nq - a) * m;
  // Vertical: block qb > m sees vertical(qb - m) of the blocks before its band; qb - m runs over
  // 1 .. nq - 1 - m, and sum_{j=1..J} floor((j + c - 1) / v) = F(J + c) - F(c).
  checked j = nq - 1 - m;
  checked vert = 0;
  if (j > 0) vert = floor_prefix(j + c, b.vert_stride) - floor_prefix(checked(c), b.vert_stride);
  return local + vert;
}

/// The phases of a KV head's query group, each once (their vertical residues are disjoint).
std::set<std::int64_t> group_phases(const attention_gqa& a, std::int64_t kv_head) {
  const std::int64_t group = a.q_heads / a.kv_heads;
  std::set<std::int64_t> phases;
  for (std::int64_t h = kv_head * group; h < (kv_head + 1) * group; ++h)
    phases.insert(block_sparse_phase(*a.block_sparse, a.q_heads, h));
  return phases;
}

/// Adds coef * vertical(max(0, floor(x / B) - m), c) as floor terms in x: with K = m / v + 1 and
/// off = c - 1 - m + K v >= 0, T = floor((x + B off) / (B v)) = y + K where y =
/// floor((floor(x / B) - m + c - 1) / v), and T - min(T, K) = max(0, y), which is the vertical
/// count past the band and 0 inside it (there y <= 0).
void add_vertical(length_series& s, const block_sparse_spec& b, std::int64_t c, checked coef) {
  const std::int64_t m = b.local_blocks - 1, v = b.vert_stride;
  const std::int64_t k = m / v + 1;
  const std::int64_t off = c - 1 - m + k * v;
  s.add(floor_term{coef, b.block * off, b.block * v, -1});
  s.add(floor_term{checked(0) - coef, b.block * off, b.block * v, k});
}

/// Adds coef * [(x mod B) + B * min(floor(x / B), m)] as floor terms in x (without the query's
/// own key, which the caller adds when it counts).
void add_band(length_series& s, const block_sparse_spec& b, checked coef) {
  const std::int64_t m = b.local_blocks - 1;
  s.add(floor_term{coef, 0, 1, -1});
  s.add(floor_term{checked(0) - coef * b.block, 0, b.block, -1});
  if (m > 0) s.add(floor_term{coef * b.block, 0, b.block, m});
}

}  // namespace

std::int64_t block_sparse_phase(const block_sparse_spec& b, std::int64_t q_heads,
                                std::int64_t head) {
  // head_sliding_step: vert_stride / q_heads in integers, at least 1 (Python's int() of the
  // positive quotient); a homogeneous pattern does not slide.
  const std::int64_t step = b.homo_heads ? 0 : std::max<std::int64_t>(1, b.vert_stride / q_heads);
  // Both factors reduced first: each below vert_stride <= 2^20, the product fits.
  const std::int64_t v = b.vert_stride;
  return (head % v) * (step % v) % v + 1;
}

bool block_sparse_sees(const block_sparse_spec& b, std::int64_t phase, std::int64_t t,
                       std::int64_t k) {
  if (k > t) return false;
  const std::int64_t qb = t / b.block, kb = k / b.block;
  return qb - kb < b.local_blocks || (kb + phase) % b.vert_stride == 0;
}

checked block_sparse_blocks(const block_sparse_spec& b, std::int64_t phase, checked qb) {
  const checked m = b.local_blocks - 1;
  return min(qb, m) + vertical(max(checked(0), qb - m), phase, b.vert_stride);
}

checked block_sparse_keys(const block_sparse_spec& b, std::int64_t phase, checked t) {
  checked qb = t / b.block;
  return t - qb * b.block + 1 + checked(b.block) * block_sparse_blocks(b, phase, qb);
}

checked block_sparse_pairs_prefix(const block_sparse_spec& b, std::int64_t phase, checked n) {
  // Own block: (t mod B) + 1, as a chunk of B (call.h); earlier blocks: B keys per block seen,
  // Q whole query blocks of B queries each and r queries of the last.
  const checked bs = b.block;
  checked q = n / bs, r = n - q * bs;
  checked own = chunked_pairs_prefix(n, b.block);
  return own + bs * (bs * blocks_prefix(b, phase, q) + r * block_sparse_blocks(b, phase, q));
}

checked block_sparse_head_pairs(const call& c, const attention_gqa& a) {
  if (c.exec.pairs == pair_counting::rectangular) return n_rect(c) * a.q_heads;
  checked s = c.context, end = s + c.tokens, sum = 0;
  for (std::int64_t h = 0; h < a.q_heads; ++h) {
    std::int64_t phase = block_sparse_phase(*a.block_sparse, a.q_heads, h);
    sum += block_sparse_pairs_prefix(*a.block_sparse, phase, end) -
           block_sparse_pairs_prefix(*a.block_sparse, phase, s);
  }
  return checked(c.batch) * sum;
}

checked block_sparse_read_records(const attention_gqa& a, checked length) {
  const block_sparse_spec& b = *a.block_sparse;
  const checked m = b.local_blocks - 1, bs = b.block;
  checked qb = length / bs;
  // Earlier keys of the own block and of the band: every head of every group sees them.
  checked band = length - qb * bs + bs * min(qb, m);
  checked total = band * a.kv_heads;
  checked below = max(checked(0), qb - m);
  for (std::int64_t g = 0; g < a.kv_heads; ++g)
    for (std::int64_t c : group_phases(a, g)) total += bs * vertical(below, c, b.vert_stride);
  return total;
}

length_series block_sparse_step_series(const attention_gqa& a, checked per_head_pair) {
  const block_sparse_spec& b = *a.block_sparse;
  length_series s;
  for (std::int64_t h = 0; h < a.q_heads; ++h) {
    s.add(per_head_pair);  // the query's own key
    add_band(s, b, per_head_pair);
    add_vertical(s, b, block_sparse_phase(b, a.q_heads, h), per_head_pair * b.block);
  }
  return s;
}

length_series block_sparse_read_series(const attention_gqa& a, checked per_record) {
  const block_sparse_spec& b = *a.block_sparse;
  length_series s;
  for (std::int64_t g = 0; g < a.kv_heads; ++g) {
    add_band(s, b, per_record);
    for (std::int64_t c : group_phases(a, g)) add_vertical(s, b, c, per_record * b.block);
  }
  return s;
}

}  // namespace calc
