#include "plan/plan.h"

namespace calc {

request_plan plan_request(const graph& g, std::int64_t cached, std::int64_t prompt,
                          std::int64_t generate) {
  const model_spec& s = *g.spec;
  request_plan r;
  r.prefill_calls = 1;
  r.decode_calls = generate - 1;
  checked h = checked(cached) + prompt;  // H = S + P
  r.prefill_flops = tally_forward(g, make_call(s, 1, cached, prompt)).flops;
  // §2.2.3: decode j (0-based) sees H + j cached positions and adds one token.
  for (std::int64_t j = 0; j < r.decode_calls; ++j) {
    checked history = h + j;
    r.decode_flops += tally_forward(g, make_call(s, 1, history.value(), 1)).flops;
    r.cumulative_read_bytes += tally_state(g, history.value()).decode_read;
    r.cumulative_read_tokens += history;
  }
  r.flops = r.prefill_flops + r.decode_flops;
  r.final_positions = (h + r.decode_calls).value();
  checked before = tally_state(g, cached).growing;
  checked after_prefill = tally_state(g, h.value()).growing;
  r.final_state_bytes = tally_state(g, r.final_positions).total;
  checked final_growing = tally_state(g, r.final_positions).growing;
  r.kv_written_bytes = final_growing - before;
  r.decode_written_bytes = final_growing - after_prefill;
  return r;
}

capacity_plan plan_capacity(const graph& g, const gpu_spec& gpu, std::int64_t gpus,
                            std::int64_t length, checked workspace, checked weight_bytes) {
  capacity_plan c;
  c.length = length;
  c.memory = checked(gpu.memory) * gpus;
  c.weight_bytes = weight_bytes;
  c.workspace_bytes = workspace;
  c.per_request_bytes = tally_state(g, length).total;
  c.free_bytes = c.memory - weight_bytes - workspace;
  c.weights_fit = c.free_bytes >= 0;
  // §2.6.2: a partial state holds no request, so round down.
  if (c.weights_fit && c.per_request_bytes > 0)
    c.requests = (c.free_bytes / c.per_request_bytes).value();
  return c;
}

checked max_params(const graph& g, const gpu_spec& gpu, std::int64_t gpus, std::int64_t length,
                   checked workspace, std::int64_t requests) {
  checked available = checked(gpu.memory) * gpus - workspace -
                      tally_state(g, length).total * requests;
  if (available <= 0) return 0;
  // The largest n whose weights, scales included, fit: bytes(n) is monotone, so bisect.
  const dtype& w = g.spec->precision.weights;
  checked lo = 0, hi = available * 8 / w.bits + 1;
  while (hi - lo > 1) {
    checked mid = lo + (hi - lo) / 2;
    if (w.bytes(mid) <= available) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

crossover_plan plan_crossover(const graph& g, std::int64_t length) {
  crossover_plan c;
  c.length = length;
  state_tally st = tally_state(g, length);
  if (st.fixed > 0 && st.per_token > 0) c.state_crossover_tokens = ratio{st.fixed, st.per_token};
  c.weight_read_bytes = tally_params(g).shared_read_bytes;
  c.context_read_bytes = st.decode_read + st.decode_state_rw;
  // WE 2-2: the smallest integer B with B * context > R_W.
  if (c.context_read_bytes > 0)
    c.batch_read_crossover = (c.weight_read_bytes / c.context_read_bytes + 1).value();
  return c;
}

}  // namespace calc
