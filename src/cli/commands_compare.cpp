// Side-by-side and sweep views: `calc compare` (Tables 2-A, 2-C and 2-E for several models at
// once) and `calc sweep` (a model's state and decode cost over a range of lengths, for plots).
#include <fmt/format.h>

#include "cli/support.h"
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
  std::string n = human_tokens(o.length);
  result r{j, fmt::format("calc compare: prefill of {0} tokens, then decode and state at {0}", n)};
  // The length is in the title: the document is the one table, with a line on what it shows.
  r.markdown = fmt::format(
      "## {}\n\nParameters, weight bytes in BF16, FLOPs of a {} prefill and of one decode step "
      "at {} cached tokens, and state per request at {}.\n{}",
      r.title, n, n, n, markdown_table("models", rows));
  return r;
}

result run_sweep(const options& o) {
  const std::vector<std::int64_t>& lengths = o.lengths;  // --length: a range or a list
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
