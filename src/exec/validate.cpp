#include "exec/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/error.h"
#include "common/limits.h"
#include "common/numbers.h"
#include "exec/scale.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "tally/tally.h"

namespace calc {

namespace {

void add(validation& v, const std::string& quantity, const std::string& kind, checked predicted,
         std::int64_t measured) {
  validation_row r{quantity, kind, predicted.value(), measured, predicted.value() == measured};
  v.pass = v.pass && r.pass;
  v.rows.push_back(r);
}

}  // namespace

validation validate_model(const model_spec& spec, std::int64_t k, std::int64_t length,
                          std::int64_t decode_steps, std::uint64_t seed) {
  validation v;
  v.scaled = scale_spec(spec, k);
  graph g = build_graph(v.scaled);

  // Predicted: the tally of the same calls on the same scaled spec.
  forward_tally total;
  std::vector<call> calls = {make_call(v.scaled, 1, 0, length)};
  for (std::int64_t j = 0; j < decode_steps; ++j)
    calls.push_back(make_call(v.scaled, 1, length + j, 1));
  for (const call& c : calls) {
    forward_tally f = tally_forward(g, c);
    total.linear_flops += f.linear_flops;
    total.interaction_flops += f.interaction_flops;
    total.state_flops += f.state_flops;
    total.connection_flops += f.connection_flops;
    total.rope_flops += f.rope_flops;
    total.vocab_flops += f.vocab_flops;
    total.flops += f.flops;
    total.attention_pairs += f.attention_pairs;
    total.index_scans += f.index_scans;
    for (const auto& [kind, flops] : f.by_kind) total.by_kind[kind] += flops;
  }
  state_tally st = tally_state(g, length + decode_steps);

  // The twins hold every weight in FP32 plus the state: refuse before allocating, naming the size
  // (--scale 1 on a large model, or a --set width, would otherwise end in bad_alloc).
  checked weights_fp32 = checked(4) * tally_params(g).total;
  checked need = weights_fp32 + st.total;
  if (need > limits::executor_bytes)
    throw spec_error(
        "scale",
        fmt::format("the scaled model needs {} B ({:.1f} GiB) of executor memory (FP32 weights {} "
                    "B + state {} B), more than the limit of {} GiB; use a larger scale",
                    decimal_digits(need.wide()), need.to_double() / (1LL << 30),
                    decimal_digits(weights_fp32.wide()), decimal_digits(st.total.wide()),
                    limits::executor_bytes >> 30));

  // Measured: the executor's own counts and allocations.
  measured_run run = execute(v.scaled, length, decode_steps, seed);
  const exec::counters& w = run.work;

  for (const auto& [kind, flops] : total.by_kind) {
    auto it = w.by_kind.find(kind);
    add(v, "matrix FLOPs", kind, flops, it == w.by_kind.end() ? 0 : it->second);
  }
  for (const auto& [kind, flops] : w.by_kind)
    if (!total.by_kind.count(kind)) add(v, "matrix FLOPs", kind, 0, flops);
  add(v, "matrix FLOPs", "weight GEMMs", total.linear_flops, w.linear);
  add(v, "matrix FLOPs", "interaction (QK, AV, index)", total.interaction_flops, w.interaction);
  add(v, "matrix FLOPs", "linear-attention state and conv", total.state_flops, w.state);
  add(v, "matrix FLOPs", "connections", total.connection_flops, w.connection);
  add(v, "matrix FLOPs", "rope table", total.rope_flops, w.rope);
  add(v, "matrix FLOPs", "vocabulary head", total.vocab_flops, w.vocab);
  add(v, "matrix FLOPs", "total", total.flops,
      w.linear + w.interaction + w.state + w.connection + w.rope + w.vocab);

  // The tally lists windowed and global rows of one component apart (same name, two classes);
  // the executor allocates one buffer set per name, so compare per name.
  std::map<std::string, checked> predicted;
  for (const state_item& i : st.items) predicted[i.name] += i.bytes;
  for (const auto& [name, bytes] : predicted) {
    auto it = run.state.find(name);
    add(v, "state bytes", name, bytes, it == run.state.end() ? 0 : it->second);
  }
  for (const auto& entry : run.state) {  // clang 14 (the fuzz build) cannot capture a binding
    bool known = std::any_of(st.items.begin(), st.items.end(),
                             [&](const state_item& i) { return i.name == entry.first; });
    if (!known) add(v, "state bytes", entry.first, 0, entry.second);
  }
  add(v, "state bytes", "total", st.total, [&] {
    std::int64_t s = 0;
    for (const auto& [name, bytes] : run.state) s += bytes;
    return s;
  }());

  if (has_attention<attention_dsa>(g)) {
    add(v, "entries", "attention pairs (window + selected)", total.attention_pairs,
        w.attention_pairs);
    add(v, "entries", "index entries scanned", total.index_scans, w.index_scans);
    add(v, "entries", "top-k selections differing from brute force", 0, w.selection_mismatches);
  }
  if (has_ffn<ffn_moe>(g)) {
    // The executor routes uniformly, so the first MoE layer of the prefill touches exactly what
    // uniform routing predicts.
    experts_plan e = plan_experts(g, length, routing{});
    add(v, "experts", "touched by the prefill (first MoE layer)",
        static_cast<std::int64_t>(e.distinct_experts), w.experts_touched);
  }

  v.equivalences = check_equivalences(v.scaled, length, decode_steps, seed);
  for (const equivalence& e : v.equivalences) v.pass = v.pass && e.pass;
  return v;
}

}  // namespace calc
