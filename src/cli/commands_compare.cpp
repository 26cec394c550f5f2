// Side-by-side and sweep views: `calc compare` (Tables 2-A, 2-C and 2-E for several models at
// once) and `calc sweep` (a model's state and decode cost over a range of lengths, for plots).
#include <fmt/format.h>

#include "cli/support.h"
#include "common/limits.h"
#include "spec/model_reader.h"
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
  // Steps are checked: a factor near 2^63 once wrapped to negative lengths.
  std::vector<std::int64_t> out;
  for (checked n = from; n <= to; n = geometric ? n * step : n + step) {
    if (static_cast<std::int64_t>(out.size()) == limits::sweep_rows)
      throw spec_error("--lengths", fmt::format("'{}' gives more than the limit of {} points; "
                                                "use a larger step",
                                                text, limits::sweep_rows));
    out.push_back(n.value());
  }
  return out;
}

}  // namespace

result run_sweep(const options& o) {
  std::vector<std::int64_t> lengths = parse_range(o.range);
  loaded_model m = load(o);
  ojson rows = ojson::array();
  for (std::int64_t n : lengths) {
    state_tally st = tally_state(m.g, n);
    forward_tally d = tally_forward(m.g, make_call(*m.spec, 1, n, 1));
    rows.push_back({{"length", n},
                    {"state_bytes", exact(st.total)},
                    {"decode_read_bytes", exact(st.decode_read)},
                    {"decode_state_rw_bytes", exact(st.decode_state_rw)},
                    {"decode_flops", exact(d.flops)},
                    {"decode_interaction_flops", exact(d.interaction_flops)}});
  }
  ojson j;
  j["model"] = m.spec->name;
  j["points"] = rows;
  return {j, fmt::format("calc sweep: {} over {} lengths", m.spec->name, lengths.size())};
}

}  // namespace calc::cli
