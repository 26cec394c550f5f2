// Side-by-side and sweep views: `calc compare` (Tables 2-A, 2-C and 2-E for several models at
// once) and `calc sweep` (a model's state and decode cost over a range of lengths, for plots).
#include <fmt/format.h>

#include "cli/result_units.h"
#include "cli/support.h"
#include "common/limits.h"
#include "spec/context_limit.h"
#include "spec/model_reader.h"
#include "tally/closed_form.h"
#include "tally/tally.h"

namespace calc::cli {

result run_compare(const options& o) {
  check_count("--length", o.length, 1);
  std::vector<std::string> names = o.models.empty() ? bundled_models() : o.models;
  ojson rows = ojson::array();
  for (const std::string& name : names) {
    options one = o;
    one.model = name;
    loaded_model m = load(one);
    params_tally p = tally_params(m.g);
    forward_tally prefill = tally_forward(m.g, make_call(*m.spec, 1, 0, o.length));
    forward_tally decode = tally_forward(m.g, make_call(*m.spec, 1, o.length, 1));
    state_tally st = tally_state(m.g, o.length);
    rows.push_back({{"model", m.spec->name},
                    {"layers", m.spec->layers.count},
                    {"total_params", exact(p.total)},
                    {"active_params", exact(p.active)},
                    {"bf16_bytes", exact(p.bf16_bytes)},
                    {"prefill_flops", exact(prefill.flops)},
                    {"decode_flops", exact(decode.flops)},
                    {"decode_interaction_flops", exact(decode.interaction_flops)},
                    {"state_bytes", exact(st.total)},
                    {"selected_expert_bytes", exact(p.selected_expert_bytes_per_token)}});
  }
  ojson j;
  j["length"] = o.length;
  j["models"] = rows;
  std::string n = human_tokens(o.length);
  result r{j, fmt::format("calc compare: prefill of {0} tokens, then decode and state at {0}", n)};
  // The length is in the title: the document is the one table, with a line on what it shows.
  r.markdown = fmt::format(
      "## {}\n\nParameters, weight bytes in BF16, FLOPs of a {} prefill and of one decode step "
      "at {} cached tokens, and state per request at {}.\n{}",
      r.title, n, n, n, markdown_table("models", rows, units_of("compare")));
  return r;
}

namespace {

/// One point of a sweep: state and one decode step of one request at a length.
struct sweep_point {
  std::int64_t length;
  checked state, decode_read, decode_state_rw, decode_flops, decode_interaction;
};

/// Through the compiled series: a few multiplications per point (lengths are >= 1, so the step
/// is a decode step over n cached tokens).
sweep_point sweep_at(const closed_form& cf, std::int64_t n) {
  state_totals st = cf.state(n);
  return {n,
          st.total,
          st.decode_read,
          st.decode_state_rw,
          cf.decode_flops(n),
          cf.decode_interaction(n)};
}

constexpr const char* kSweepColumns[] = {"length",
                                         "state_bytes",
                                         "decode_read_bytes",
                                         "decode_state_rw_bytes",
                                         "decode_flops",
                                         "decode_interaction_flops"};

void append_exact(std::string& out, const checked& v) {
  out += ',';
  if (v.fits_int64()) {
    fmt::format_int digits(v.value());
    out.append(digits.data(), digits.size());
  } else {
    out += exact(v).get<std::string>();
  }
}

/// The CSV render() would print for the sweep's JSON, written point by point without the tree.
template <typename point_at>
std::string sweep_csv(const std::string& model, const std::vector<std::int64_t>& lengths,
                      const point_at& at) {
  // Tidy: one header, one row per length, the model named on each row (tidy_csv's form).
  std::string out = "model";
  for (const char* c : kSweepColumns) out += fmt::format(",{}", c);
  out += '\n';
  std::string name = csv_escape(model);
  out.reserve(out.size() + lengths.size() * (120 + name.size()));  // 6 numbers of <= 20 digits
  for (std::int64_t n : lengths) {
    sweep_point p = at(n);
    out += name;
    append_exact(out, p.length);
    for (const checked& v :
         {p.state, p.decode_read, p.decode_state_rw, p.decode_flops, p.decode_interaction})
      append_exact(out, v);
    out += '\n';
  }
  return out;
}

}  // namespace

result run_sweep(const options& o) {
  loaded_model m = load(o);
  // --length: a range or a list; by default up to the model's context limit.
  const std::vector<std::int64_t> lengths =
      o.lengths.empty() ? default_lengths(default_length_end({m.spec.get()})) : o.lengths;
  closed_form cf(m.g);
  auto at = [&](std::int64_t n) { return sweep_at(cf, n); };
  std::string title = fmt::format("calc sweep: {} over {} lengths", m.spec->name, lengths.size());
  if (o.format == "csv") {
    result r;
    r.title = title;
    r.text = sweep_csv(m.spec->name, lengths, at);
    return r;
  }
  ojson rows = ojson::array();
  for (std::int64_t n : lengths) {
    sweep_point p = at(n);
    rows.push_back({{kSweepColumns[0], p.length},
                    {kSweepColumns[1], exact(p.state)},
                    {kSweepColumns[2], exact(p.decode_read)},
                    {kSweepColumns[3], exact(p.decode_state_rw)},
                    {kSweepColumns[4], exact(p.decode_flops)},
                    {kSweepColumns[5], exact(p.decode_interaction)}});
  }
  ojson j;
  j["model"] = m.spec->name;
  j["points"] = rows;
  return {j, title};
}

}  // namespace calc::cli
