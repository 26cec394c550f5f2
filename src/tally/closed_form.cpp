#include "tally/closed_form.h"

#include <algorithm>

#include "tally/tally.h"

namespace calc {

namespace {

/// GEMM weights one row of the tensor's row source multiplies: the whole tensor, or the top-k
/// share of routed experts (no token drops: sum_e t_e = m * k).
checked weights_per_row(const tensor& t) {
  return t.per_token == 0 ? t.params : checked(t.per_token) * (t.params / t.instances);
}

}  // namespace

closed_form::closed_form(const graph& g) : closed_form(g, g.spec->execution) {}

closed_form::closed_form(const graph& g, const execution_spec& exec)
    : g_(&g),
      exec_(exec),
      m_{g.spec->hidden, &g.spec->precision, &g.spec->connection, g.spec->layer_norm} {
  compile_layers();
  compile_head();
}

void closed_form::compile_layers() {
  const model_spec& s = *g_->spec;
  for (const layer_group& grp : g_->groups) {
    const layer& first = g_->layers[static_cast<std::size_t>(grp.indices.front())];
    // Under CED the decoder layers of a group replay a fresh prompt's tail; the encoder's do not.
    std::int64_t decoder = 0;
    for (std::int64_t i : grp.indices)
      if (s.ced && i >= s.ced->encoder_layers) ++decoder;
    std::int64_t encoder = static_cast<std::int64_t>(grp.indices.size()) - decoder;

    layer_run run;
    run.attention = &first.attention;
    std::vector<tensor> ts;
    layer_tensors(first, m_, ts);
    for (const tensor& t : ts) {
      if (t.gemm) {
        checked w = weights_per_row(t);
        if (t.rows == row_source::processed) run.processed_weights += w;
        if (t.rows == row_source::new_positions) run.new_row_weights += w;
        if (t.rows == row_source::new_entries) {
          auto it = std::find_if(run.entry.begin(), run.entry.end(),
                                 [&](const auto& e) { return e.ratio == t.entry_ratio; });
          if (it == run.entry.end()) {
            run.entry.push_back({t.entry_ratio, w});
          } else {
            it->weights += w;
          }
        }
      }
      if (t.per_token == 0) {
        run.fixed_read_bytes += t.read_bytes(call{});  // whole, or nothing for a lookup table
      } else {
        // Reads depend on the rows: at most m * k distinct experts can be touched.
        run.experts.push_back({t, t.instance_bytes()});
      }
    }
    if (encoder > 0) {
      runs_.push_back(run);
      runs_.back().count = encoder;
    }
    if (decoder > 0) {
      runs_.push_back(run);
      runs_.back().count = decoder;
      runs_.back().ced_replay = s.ced->replay;
    }

    // State: every component of the kind, fixed + per_entry * min(floor(N / r), cap / r).
    checked n = static_cast<std::int64_t>(grp.indices.size());
    auto comps =
        std::visit([&](const auto& a) { return calc::state(a, m_, exec_); }, first.attention);
    for (const state_component& sc : comps) {
      length_series bytes;
      bytes.add(sc.fixed);
      bytes.add(floor_term{sc.per_entry, 0, sc.ratio, sc.cap ? *sc.cap / sc.ratio : -1});
      state_.add(bytes, n);
      state_fixed_ += sc.fixed * n;
      if (sc.read_write_each_step) state_rw_.add(bytes, n * 2);
    }

    // One decode step at context h (B = P = 1): one processed row and one new position; an
    // entry projection runs when the step completes a block, floor((h+1)/r) - floor(h/r).
    attention_form f = compile_attention(first.attention, m_, exec_);
    decode_read_.add(f.decode_read, n);
    length_series step;
    step.add(checked(2) * (run.processed_weights + run.new_row_weights));
    for (const auto& e : run.entry) {
      step.add(floor_term{checked(2) * e.weights, 1, e.ratio, -1});
      step.add(floor_term{checked(0) - checked(2) * e.weights, 0, e.ratio, -1});
    }
    step.add(f.step_work);
    step_flops_.add(step, n);
    step_interaction_.add(f.step_interaction, n);
    step_state_.add(f.step_work, n);  // step work less its interaction part
    step_state_.add(f.step_interaction, checked(0) - n);
    window_write_ += n * window_write(first.attention, m_);
  }
  if (s.token_history) {  // one id per token per request
    length_series ids;
    ids.add(floor_term{s.precision.token_history.bytes(1), 0, 1, -1});
    state_.add(ids);
  }
}

void closed_form::compile_head() {
  const model_spec& s = *g_->spec;
  vocab_weights_ = checked(s.vocab) * s.hidden;  // §2.1.4: 2 * m_out * d * V
  std::vector<tensor> ts;
  model_level_tensors(s, m_, ts);
  for (const tensor& t : ts) {
    head_read_bytes_ += t.read_bytes(call{});  // none of these depends on the call's rows
    if (t.module == "connection" && t.gemm) head_row_flops_ += checked(2) * weights_per_row(t);
  }
  head_row_flops_ += connection_mix_flops_per_row(s);        // AttnRes mixes
  head_row_flops_ += checked(2) * s.rope_table_frequencies;  // positions x frequencies
  embedding_row_bytes_ = s.precision.embedding.bytes(s.hidden);
  // A decode step's head: one vocabulary row, one new row.
  step_flops_.add(checked(2) * vocab_weights_ + head_row_flops_);
}

state_totals closed_form::state(std::int64_t length, std::int64_t batch) const {
  state_totals t;
  checked b = batch, n = length;
  t.total = b * state_.at(n);
  t.fixed = b * state_fixed_;
  t.growing = t.total - t.fixed;
  t.decode_read = b * decode_read_.at(n);
  t.decode_state_rw = b * state_rw_.at(n);
  t.window_write = b * window_write_;
  return t;
}

forward_totals closed_form::forward(const call& c) const {
  forward_totals f;
  checked b = c.batch;
  for (const layer_run& r : runs_) {
    call lc = c;
    if (r.ced_replay >= 0 && c.exec.ced && c.context == 0) {
      // §2.3.6: a decoder layer of a fresh prompt replays only the last `replay` positions.
      lc.first = std::max<std::int64_t>(0, c.end_position() - r.ced_replay);
      lc.window_floor = lc.first;
    }
    checked weights = r.processed_weights * lc.rows() + r.new_row_weights * lc.new_rows();
    for (const auto& e : r.entry)  // entries completed by this call: n/r - S/r per request
      weights +=
          e.weights * b * (checked(c.end_position()) / e.ratio - checked(c.context) / e.ratio);
    work w = std::visit([&](const auto& a) { return flops(a, m_, lc); }, *r.attention);
    f.flops += r.count * (checked(2) * weights + w.interaction + w.state);
    f.interaction_flops += r.count * w.interaction;
    f.state_flops += r.count * w.state;
    checked read = r.fixed_read_bytes;
    for (const auto& e : r.experts)
      read += min(e.experts.instances, e.experts.rows_in(lc) * e.experts.per_token) * e.bytes_each;
    f.weight_read_bytes += r.count * read;
  }
  f.vocab_flops = checked(2) * c.vocab_rows() * vocab_weights_;
  f.flops += f.vocab_flops + head_row_flops_ * c.new_rows();
  f.weight_read_bytes += head_read_bytes_;
  f.embedding_read_bytes = c.new_rows() * embedding_row_bytes_;
  return f;
}

forward_totals closed_form::decode(std::int64_t batch, std::int64_t context) const {
  forward_totals f;
  checked b = batch;
  // Every row count of a decode call is `batch` times one request's, so F is too.
  f.flops = b * step_flops_.at(context);
  f.interaction_flops = b * step_interaction_.at(context);
  f.state_flops = b * step_state_.at(context);
  f.vocab_flops = b * (checked(2) * vocab_weights_);  // one vocabulary row per request
  f.embedding_read_bytes = b * embedding_row_bytes_;
  call c;
  c.batch = batch;
  c.context = context;
  c.exec = exec_;
  for (const layer_run& r : runs_) {
    checked read = r.fixed_read_bytes;
    for (const auto& e : r.experts)
      read += min(e.experts.instances, e.experts.rows_in(c) * e.experts.per_token) * e.bytes_each;
    f.weight_read_bytes += r.count * read;
  }
  f.weight_read_bytes += head_read_bytes_;
  return f;
}

checked closed_form::decode_flops(checked context) const { return step_flops_.at(context); }

checked closed_form::decode_interaction(checked context) const {
  return step_interaction_.at(context);
}

checked closed_form::decode_flops_sum(checked lo, checked hi) const {
  return step_flops_.sum(lo, hi);
}

checked closed_form::decode_read_sum(checked lo, checked hi) const {
  return decode_read_.sum(lo, hi);
}

}  // namespace calc
