#include "tally/call.h"

namespace calc {

call make_call(const model_spec& spec, std::int64_t batch, std::int64_t context,
               std::int64_t tokens) {
  call c;
  c.batch = batch;
  c.context = context;
  c.tokens = tokens;
  c.exec = spec.execution;
  return c;
}

checked n_pair(const call& c) {
  checked p = c.tokens;
  return checked(c.batch) * (p * c.context + p * (p + 1) / 2);
}

checked n_rect(const call& c) {
  return checked(c.batch) * c.tokens * (checked(c.context) + c.tokens);
}

checked attention_pairs(const call& c, std::optional<std::int64_t> window) {
  if (c.exec.pairs == pair_counting::rectangular) return n_rect(c);
  if (!window) return n_pair(c);
  // Sum over k = t+1 in [S+1, S+P] of min(k, W): a triangle up to W, then W per query.
  checked w = *window;
  checked first = checked(c.context) + 1;
  checked last = checked(c.context) + c.tokens;
  checked tri_last = min(last, w);
  checked sum = 0;
  if (first <= tri_last) sum = (first + tri_last) * (tri_last - first + 1) / 2;
  checked flat_from = max(first, w + 1);
  if (flat_from <= last) sum += (last - flat_from + 1) * w;
  return checked(c.batch) * sum;
}

checked chunked_pairs_prefix(checked n, std::int64_t chunk) {
  // q whole chunks of 1 + 2 + ... + C, then the r positions of the last one: 1 + ... + r.
  checked c = chunk;
  checked q = n / c, r = n - q * c;
  return q * (c * (c + 1) / 2) + r * (r + 1) / 2;
}

checked chunked_attention_pairs(const call& c, std::int64_t chunk) {
  if (c.exec.pairs == pair_counting::rectangular) return n_rect(c);
  // The new positions are S .. S+P-1: the prefix up to S+P less the prefix up to S.
  checked s = c.context;
  return checked(c.batch) *
         (chunked_pairs_prefix(s + c.tokens, chunk) - chunked_pairs_prefix(s, chunk));
}

}  // namespace calc
