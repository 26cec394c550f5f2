// Side-by-side and sweep views: `calc compare` (Tables 2-A, 2-C and 2-E for several models at
// once) and `calc sweep` (a model's state and decode cost over a range of lengths, for plots).
#include <fmt/format.h>

#include <iterator>

#include "cli/support.h"
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
  return {j, fmt::format("calc compare: prefill of {0} tokens, decode and state at {0} cached",
                         o.length)};
}

namespace {

/// Parses FROM:TO:xFACTOR (geometric) or FROM:TO:+STEP (arithmetic) into lengths.
std::vector<std::int64_t> parse_range(const std::string& text) {
  auto fail = [&] {
    throw spec_error("--lengths",
                     fmt::format("'{}' is not FROM:TO:xFACTOR or FROM:TO:+STEP", text));
  };
  auto a = text.find(':'), b = text.find(':', a == std::string::npos ? 0 : a + 1);
  if (a == std::string::npos || b == std::string::npos || b + 2 > text.size()) fail();
  std::int64_t from = 0, to = 0, step = 0;
  try {
    from = std::stoll(text.substr(0, a));
    to = std::stoll(text.substr(a + 1, b - a - 1));
    step = std::stoll(text.substr(b + 2));
  } catch (const std::logic_error&) {
    fail();
  }
  bool geometric = text[b + 1] == 'x';
  if ((!geometric && text[b + 1] != '+') || from < 1 || to < from || step < (geometric ? 2 : 1))
    fail();
  check_count("--lengths", to, 1);
  std::vector<std::int64_t> out;
  for (std::int64_t n = from; n <= to && out.size() < 10'000'000;
       n = geometric ? n * step : n + step)
    out.push_back(n);
  return out;
}

}  // namespace

namespace {

/// One point of a sweep: state and one decode step of one request at a length.
struct sweep_point {
  std::int64_t length;
  checked state, decode_read, decode_state_rw, decode_flops, decode_interaction;
};

sweep_point sweep_at(const closed_form& cf, const loaded_model& m, std::int64_t n) {
  forward_totals d = cf.forward(make_call(*m.spec, 1, n, 1));
  state_totals st = cf.state(n);
  return {n, st.total, st.decode_read, st.decode_state_rw, d.flops, d.interaction_flops};
}

sweep_point sweep_itemised(const loaded_model& m, std::int64_t n) {
  state_tally st = tally_state(m.g, n);
  forward_tally d = tally_forward(m.g, make_call(*m.spec, 1, n, 1));
  return {n, st.total, st.decode_read, st.decode_state_rw, d.flops, d.interaction_flops};
}

void append_exact(fmt::memory_buffer& out, const checked& v) {
  if (v.fits_int64()) {
    fmt::format_to(std::back_inserter(out), ",{}", v.value());
  } else {
    fmt::format_to(std::back_inserter(out), ",{}", exact(v).get<std::string>());
  }
}

constexpr const char* kSweepColumns[] = {"length",
                                         "state_bytes",
                                         "decode_read_bytes",
                                         "decode_state_rw_bytes",
                                         "decode_flops",
                                         "decode_interaction_flops"};

/// The CSV render() would print for the sweep's JSON, written row by row without the tree.
std::string sweep_csv(const std::string& model, const std::vector<sweep_point>& points) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "key,value\nmodel,{}\n\npoints", csv_escape(model));
  for (const char* c : kSweepColumns) fmt::format_to(std::back_inserter(out), ",{}", c);
  out.push_back('\n');
  for (const sweep_point& p : points) {
    fmt::format_to(std::back_inserter(out), "points,{}", p.length);
    for (const checked& v :
         {p.state, p.decode_read, p.decode_state_rw, p.decode_flops, p.decode_interaction})
      append_exact(out, v);
    out.push_back('\n');
  }
  return fmt::to_string(out);
}

}  // namespace

result run_sweep(const options& o) {
  std::vector<std::int64_t> lengths = parse_range(o.range);
  loaded_model m = load(o);
  // The closed form evaluates a point in a few multiplications; the itemised tallies stay for a
  // layer kind it has no evaluator for yet.
  closed_form cf(m.g);
  std::vector<sweep_point> points;
  points.reserve(lengths.size());
  for (std::int64_t n : lengths)
    points.push_back(cf.complete() ? sweep_at(cf, m, n) : sweep_itemised(m, n));
  std::string title = fmt::format("calc sweep: {} over {} lengths", m.spec->name, lengths.size());
  if (o.format == "csv") {
    result r;
    r.title = title;
    r.text = sweep_csv(m.spec->name, points);
    return r;
  }
  ojson rows = ojson::array();
  for (const sweep_point& p : points)
    rows.push_back({{kSweepColumns[0], p.length},
                    {kSweepColumns[1], exact(p.state)},
                    {kSweepColumns[2], exact(p.decode_read)},
                    {kSweepColumns[3], exact(p.decode_state_rw)},
                    {kSweepColumns[4], exact(p.decode_flops)},
                    {kSweepColumns[5], exact(p.decode_interaction)}});
  ojson j;
  j["model"] = m.spec->name;
  j["points"] = rows;
  return {j, title};
}

}  // namespace calc::cli
