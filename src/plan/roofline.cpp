#include "plan/roofline.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace calc {

namespace {

roofline_call bound(checked flops, checked bytes, double peak_flops, double bandwidth) {
  roofline_call r;
  r.flops = flops;
  r.bytes = bytes;
  r.compute_s = flops.to_double() / peak_flops;
  r.memory_s = bytes.to_double() / bandwidth;
  r.bound_s = std::max(r.compute_s, r.memory_s);
  r.regime = r.compute_s >= r.memory_s ? "compute" : "memory";
  return r;
}

}  // namespace

roofline_plan plan_roofline(const graph& g, const gpu_spec& gpu, std::int64_t gpus,
                            std::int64_t batch, std::int64_t context, std::int64_t prompt,
                            bool fp8) {
  const model_spec& s = *g.spec;
  double peak = (fp8 ? gpu.fp8_tflops : gpu.bf16_tflops) * 1e12 * static_cast<double>(gpus);
  double bandwidth = static_cast<double>(gpu.bandwidth) * static_cast<double>(gpus);
  std::int64_t h = context + prompt;

  // Prefill: weights once, the cached history read once, the new state written.
  forward_tally pf = tally_forward(g, make_call(s, batch, context, prompt));
  state_tally before = tally_state(g, context, batch), after = tally_state(g, h, batch);
  checked prefill_bytes = pf.weight_read_bytes + pf.embedding_read_bytes + pf.engram_read_bytes +
                          before.decode_read + (after.growing - before.growing) +
                          after.decode_state_rw;
  // Decode: weights once per batch; each request reads its history and rewrites its state.
  forward_tally dc = tally_forward(g, make_call(s, batch, h, 1));
  state_tally next = tally_state(g, h + 1, batch);
  checked decode_bytes = dc.weight_read_bytes + dc.embedding_read_bytes + dc.engram_read_bytes +
                         after.decode_read + after.decode_state_rw +
                         (next.growing - after.growing) + after.window_write;
  roofline_plan r;
  r.prefill = bound(pf.flops, prefill_bytes, peak, bandwidth);
  r.decode = bound(dc.flops, decode_bytes, peak, bandwidth);
  r.decode_tokens_per_s = static_cast<double>(batch) / r.decode.bound_s;
  r.ttft_s = r.prefill.bound_s;
  return r;
}

roofline_result answer_roofline(const graph& g, const roofline_request& q) {
  if (q.fp8 && q.gpu.fp8_tflops <= 0)
    throw spec_error("fp8", fmt::format("{} has no FP8 tensor peak", q.gpu.name));
  roofline_result r;
  r.model = g.spec->name;
  r.asked = q;
  r.peak = q.fp8 ? "fp8" : "bf16";
  r.bounds = plan_roofline(g, q.gpu, q.tp, q.batch, q.context, q.prompt, q.fp8);
  return r;
}

}  // namespace calc
