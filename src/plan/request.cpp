// A whole request (§2.2.3): one prefill of P tokens over S cached, then G - 1 decode steps, the
// j-th over H + j cached tokens (H = S + P). The decode sums close over the model's compiled
// series, so a million generated tokens cost as little as ten.
#include "plan/plan.h"
#include "tally/closed_form.h"

namespace calc {

namespace {

/// Prefill, final state and what the request wrote: the same whichever way decodes are summed.
template <typename state_at>
void fill_request_ends(request_plan& r, std::int64_t cached, checked h, const state_at& growing) {
  r.flops = r.prefill_flops + r.decode_flops;
  r.final_positions = (h + r.decode_calls).value();
  checked before = growing(cached);
  checked after_prefill = growing(h.value());
  checked final_growing = growing(r.final_positions);
  r.kv_written_bytes = final_growing - before;
  r.decode_written_bytes = final_growing - after_prefill;
}

}  // namespace

request_plan plan_request(const graph& g, std::int64_t cached, std::int64_t prompt,
                          std::int64_t generate) {
  closed_form cf(g);  // every layer kind has an evaluator (compile_attention's dispatch)
  const model_spec& s = *g.spec;
  request_plan r;
  r.prefill_calls = 1;
  r.decode_calls = generate - 1;
  checked h = checked(cached) + prompt;  // H = S + P
  r.prefill_flops = cf.forward(make_call(s, 1, cached, prompt)).flops;
  checked n_d = r.decode_calls;
  if (n_d > 0) {
    checked lo = h, hi = h + n_d - 1;  // decode j sees H + j cached positions
    if (lo == 0) {
      // With nothing cached the first step is a one-token prefill, not a decode step.
      r.decode_flops += cf.forward(make_call(s, 1, 0, 1)).flops;
      r.cumulative_read_bytes += cf.state(0).decode_read;
      lo = 1;
    }
    r.decode_flops += cf.decode_flops_sum(lo, hi);
    r.cumulative_read_bytes += cf.decode_read_sum(lo, hi);
    r.cumulative_read_tokens = n_d * h + n_d * (n_d - 1) / 2;  // sum_j (H + j)
  }
  fill_request_ends(r, cached, h, [&](std::int64_t n) { return cf.state(n).growing; });
  r.final_state_bytes = cf.state(r.final_positions).total;
  return r;
}

request_plan plan_request_stepwise(const graph& g, std::int64_t cached, std::int64_t prompt,
                                   std::int64_t generate) {
  const model_spec& s = *g.spec;
  request_plan r;
  r.prefill_calls = 1;
  r.decode_calls = generate - 1;
  checked h = checked(cached) + prompt;
  r.prefill_flops = tally_forward(g, make_call(s, 1, cached, prompt)).flops;
  for (std::int64_t j = 0; j < r.decode_calls; ++j) {
    checked history = h + j;
    r.decode_flops += tally_forward(g, make_call(s, 1, history.value(), 1)).flops;
    r.cumulative_read_bytes += tally_state(g, history.value()).decode_read;
    r.cumulative_read_tokens += history;
  }
  fill_request_ends(r, cached, h, [&](std::int64_t n) { return tally_state(g, n).growing; });
  r.final_state_bytes = tally_state(g, r.final_positions).total;
  return r;
}

}  // namespace calc
