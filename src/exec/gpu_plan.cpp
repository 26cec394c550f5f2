// The plan of a CUDA run (gpu_plan.h). Timed shapes come from the layers of the models the
// caller loaded, and their predictions from the same tally rules `calc state` and `calc
// forward` use; the kernels' own traffic is priced by the same byte rule, so a kernel byte count
// that differs from the prediction is a finding about the kernel's design (more: it re-reads or
// round-trips data) or about the tally (fewer: the rule counts bytes the kernel never needs).
#include "exec/gpu_plan.h"

#include <fmt/format.h>

#include <type_traits>
#include <variant>

#include "common/dtype.h"
#include "common/error.h"
#include "decode_blocked.h"
#include "exec/gpu_shape.h"
#include "graph/graph.h"
#include "tally/rules.h"
#include "twin_cases.h"

namespace calc::gpu {

namespace {

using nlohmann::ordered_json;
using namespace calc::kernels;

ordered_json check_case(const std::string& id, const case_shape& s) {
  return {{"id", id}, {"role", "check"}, {"shape", shape_json(s)}};
}

/// A model's spec and graph, and the call context of its layers.
struct model_view {
  model_spec spec;  // a copy: the plan sets the execution path the kernel runs
  graph g;
  model_context ctx() const {
    return {spec.hidden, &spec.precision, &spec.connection, spec.layer_norm};
  }
  /// The first layer whose attention is an A that `accept` takes, or null.
  template <typename A, typename Accept>
  const layer* first(Accept accept) const {
    for (const layer& l : g.layers)
      if (const auto* a = std::get_if<A>(&l.attention); a && accept(*a)) return &l;
    return nullptr;
  }
};

/// The kernel's traffic priced by the dtype byte rule, per class.
struct priced {
  ordered_json streams = ordered_json::array();
  checked state = 0, activation = 0, scratch = 0;
};

priced price(const std::vector<traffic>& t) {
  priced p;
  for (const traffic& x : t) {
    checked bytes = checked(x.times) * parse_dtype(x.format).bytes(checked(x.values));
    const std::string cls = x.cls;
    (cls == "state" ? p.state : cls == "scratch" ? p.scratch : p.activation) += bytes;
    p.streams.push_back({{"what", x.what},
                         {"values", x.values},
                         {"format", x.format},
                         {"times", x.times},
                         {"bytes", bytes.value()},
                         {"class", x.cls}});
  }
  return p;
}

/// The traffic of a case's kernel at its shape (kernels/ref/decode_blocked.h).
std::vector<traffic> traffic_of(const case_shape& s) {
  if (s.kernel == "gqa_decode")
    return gqa_decode_traffic({s.batch, s.q_heads, s.kv_heads, s.head_dim, s.length, 0, 0, nullptr,
                               split_tokens_for(s.batch, s.kv_heads, s.length, s.split_blocks)});
  if (s.kernel == "mla_decode")
    return mla_decode_traffic({s.batch, s.heads, s.rank, s.rope, s.length});
  if (s.kernel == "delta_step") return delta_step_traffic({s.batch, s.heads, s.dk, s.dv});
  if (s.kernel == "sparse_decode")
    return sparse_decode_traffic({s.batch, s.heads, s.width, s.window, s.n_entries, s.selected});
  if (s.kernel == "moe_gemm") {
    std::vector<int> off = disjoint_routing(s.batch, s.top_k, s.experts);
    return moe_gemm_traffic({s.experts, s.in, s.out, off.data()}, off.back());
  }
  throw std::invalid_argument("no traffic model for kernel " + s.kernel);
}

ordered_json timed_case(const std::string& id, const std::string& source, const case_shape& s,
                        ordered_json predicted) {
  priced k = price(traffic_of(s));
  return {{"id", id},
          {"role", "timed"},
          {"source", source},
          {"shape", shape_json(s)},
          {"predicted", std::move(predicted)},
          {"kernel_traffic", k.streams},
          {"kernel_bytes",
           {{"state", k.state.value()},
            {"activation", k.activation.value()},
            {"scratch", k.scratch.value()}}}};
}

int as_int(std::int64_t v, const std::string& what) {
  if (v <= 0 || v > 0x7fffffff)
    throw spec_error("cuda", fmt::format("{} = {} is outside a kernel's range", what, v));
  return static_cast<int>(v);
}

/// Interaction (QK, AV) FLOPs of one layer's attention `a` for a decode call over `length`
/// cached tokens: context length - 1 plus the new token, which attends to all `length`.
template <typename A>
checked decode_interaction(const model_view& m, const A& a, std::int64_t batch,
                           std::int64_t length) {
  call c = make_call(m.spec, batch, length - 1, 1);
  return flops(a, m.ctx(), c).interaction;
}

void add_model(ordered_json& cases, const timed_model& t) {
  model_view m{*t.spec, {}};
  m.spec.execution.mla = mla_path::compact;  // the MLA kernel reads the compact (absorbed) cache
  m.g = build_graph(m.spec);
  const std::string& name = t.name;
  const std::size_t before = cases.size();
  // GQA decode: the first full-attention layer (the kernel reads the whole history; a window,
  // a chunk or a block pattern would read less).
  if (const layer* l = m.first<attention_gqa>([](const attention_gqa& a) {
        return !a.window && !a.chunk && !a.block_sparse && !a.v_head_dim;  // the kernel: V = K wide
      })) {
    const auto& a = std::get<attention_gqa>(l->attention);
    for (auto [B, L] : t.decode) {
      case_shape s{.kernel = "gqa_decode",
                   .batch = as_int(B, "batch"),
                   .q_heads = as_int(a.q_heads, "q_heads"),
                   .kv_heads = as_int(a.kv_heads, "kv_heads"),
                   .head_dim = as_int(a.head_dim, "head_dim"),
                   .length = as_int(L, "context")};
      checked bytes = checked(B) * decode_read(a, m.ctx(), m.spec.execution, L);
      cases.push_back(
          timed_case(fmt::format("gqa_decode {} B={} L={}", name, B, L),
                     fmt::format("{} layer {}: decode_read x B (tally)", name, l->index), s,
                     {{"bytes", bytes.value()},
                      {"flops", decode_interaction(m, a, B, L).value()},
                      {"unit", "cuda_core_fp32"}}));
    }
  }
  // Absorbed MLA decode over the compact [latent, rope] records.
  if (const layer* l = m.first<attention_mla>([](const attention_mla&) { return true; })) {
    const auto& a = std::get<attention_mla>(l->attention);
    for (auto [B, L] : t.decode) {
      case_shape s{.kernel = "mla_decode",
                   .batch = as_int(B, "batch"),
                   .length = as_int(L, "context"),
                   .heads = as_int(a.heads, "heads"),
                   .rank = as_int(a.kv_rank, "kv_rank"),
                   .rope = as_int(a.qk_rope, "qk_rope")};
      checked bytes = checked(B) * decode_read(a, m.ctx(), m.spec.execution, L);
      cases.push_back(timed_case(
          fmt::format("mla_decode {} B={} L={}", name, B, L),
          fmt::format("{} layer {}: decode_read x B (tally, compact path)", name, l->index), s,
          {{"bytes", bytes.value()},
           {"flops", decode_interaction(m, a, B, L).value()},
           {"unit", "cuda_core_fp32"}}));  // the fused kernel multiplies on CUDA cores
    }
  }
  // Sparse decode: the first layer that selects top-k compressed entries. The kernel is main
  // attention only (the indexer is another kernel), so the prediction is the tally's rule for
  // the same layer without its indexer, in the record formats the spec stores and the kernel
  // reads (BF16 reference records).
  if (const layer* l = m.first<attention_dsa>(
          [](const attention_dsa& a) { return a.global && a.global->top_k > 0; })) {
    attention_dsa a = std::get<attention_dsa>(l->attention);
    a.indexer.reset();
    const precision_spec& p = m.spec.precision;
    if (p.window.name != "bf16" || p.kv.name != "bf16")
      throw spec_error("cuda",
                       fmt::format("{}: the sparse kernel reads BF16 records; the spec stores "
                                   "window {} and entries {}",
                                   name, p.window.name, p.kv.name));
    for (auto [B, L] : t.decode) {
      const std::int64_t entries = L / a.global->ratio;
      case_shape s{.kernel = "sparse_decode",
                   .batch = as_int(B, "batch"),
                   .heads = as_int(a.heads, "heads"),
                   .width = as_int(a.head_dim, "head_dim"),
                   .window = as_int(std::min(L, a.window), "window"),
                   .n_entries = as_int(entries, "entries"),
                   .selected = as_int(std::min(entries, a.global->top_k), "top_k")};
      checked bytes = checked(B) * decode_read(a, m.ctx(), m.spec.execution, L);
      cases.push_back(timed_case(
          fmt::format("sparse_decode {} B={} L={}", name, B, L),
          fmt::format("{} layer {}: decode_read x B without the indexer (tally)", name, l->index),
          s,
          {{"bytes", bytes.value()},
           {"flops", decode_interaction(m, a, B, L).value()},
           {"unit", "cuda_core_fp32"}}));
    }
  }
  // Delta-rule decode step: the recurrent state read and written once per step.
  auto delta = [&](const layer& l, const auto& a, std::int64_t heads) {
    checked per_request = 0;
    for (const state_component& c : state(a, m.ctx(), m.spec.execution))
      if (c.name == "recurrent") per_request = c.bytes(1);
    for (std::int64_t B : t.state_batches) {
      case_shape s{.kernel = "delta_step",
                   .batch = as_int(B, "batch"),
                   .heads = as_int(heads, "heads"),
                   .dk = as_int(a.key_dim, "key_dim"),
                   .dv = as_int(a.value_dim, "value_dim")};
      cases.push_back(timed_case(
          fmt::format("delta_step {} B={}", name, B),
          fmt::format("{} layer {}: recurrent state read + write x B (tally)", name, l.index), s,
          {{"bytes", (checked(2) * B * per_request).value()}, {"unit", "cuda_core_fp32"}}));
    }
  };
  if (const layer* l = m.first<attention_kda>([](const attention_kda&) { return true; }))
    delta(*l, std::get<attention_kda>(l->attention), std::get<attention_kda>(l->attention).heads);
  // Lightning layers run no delta rule: the delta_step kernel does not time them.
  else if (const layer* g =
               m.first<attention_gdn>([](const attention_gdn& a) { return !a.lightning(); }))
    delta(*g, std::get<attention_gdn>(g->attention), std::get<attention_gdn>(g->attention).v_heads);
  // Routed experts at decode: the three expert matrices as one [d, 3f] GEMM (the same weight
  // bytes and FLOPs per row as gate, up and down); [d, 2f] for ungated experts (up, down).
  if (!t.moe_batches.empty())
    for (const layer& l : m.g.layers) {
      const auto* f = std::get_if<ffn_moe>(&l.ffn);
      if (!f) continue;
      std::vector<tensor> ts;
      add_tensors(*f, m.ctx(), ts);
      for (std::int64_t B : t.moe_batches) {
        call c = make_call(m.spec, B, 4095, 1);
        checked bytes = 0, fl = 0;
        for (const tensor& x : ts)
          if (x.name == "routed_experts")
            bytes = x.read_bytes(c), fl = checked(2) * x.gemm_weight_rows(c);
        case_shape s{.kernel = "moe_gemm",
                     .batch = as_int(B, "batch"),
                     .experts = as_int(f->experts, "experts"),
                     .top_k = as_int(f->top_k, "top_k"),
                     .in = as_int(f->latent ? f->latent : m.spec.hidden, "hidden"),
                     .out = as_int((f->gated ? 3 : 2) * f->intermediate,
                                   "matrices x intermediate")};
        cases.push_back(timed_case(
            fmt::format("moe_gemm {} B={}", name, B),
            fmt::format("{} layer {}: routed_experts read bytes (tally)", name, l.index), s,
            {{"bytes", bytes.value()},
             {"flops", fl.value()},
             {"unit", "tensor_core_bf16"}}));  // cuBLAS grouped GEMM
      }
      break;
    }
  if (cases.size() == before)
    throw spec_error("cuda",
                     fmt::format("{} has no layer of a kind the CUDA kernels run at the shapes "
                                 "asked (full GQA, MLA, sparse top-k, KDA, Gated DeltaNet, MoE)",
                                 name));
}

}  // namespace

nlohmann::ordered_json make_plan(const plan_options& o) {
  ordered_json plan;
  plan["seed"] = o.seed;
  plan["correctness_only"] = o.correctness_only;
  plan["repeats"] = std::max(20, o.repeats);
  plan["catalogue"] = {{"gpu", o.gpu.name},
                       {"bf16_flops", o.gpu.bf16_tflops * 1e12},
                       {"bandwidth", double(o.gpu.bandwidth)},
                       {"source", o.gpu.source}};
  ordered_json cases = ordered_json::array();
  // Small cases (odd sizes, several splits and passes) and one production width per kernel.
  cases.push_back(check_case("gqa_decode small (d 64, 2 splits)", {.kernel = "gqa_decode",
                                                                   .batch = 2,
                                                                   .q_heads = 8,
                                                                   .kv_heads = 2,
                                                                   .head_dim = 64,
                                                                   .length = 300,
                                                                   .split_blocks = 8}));
  cases.push_back(check_case("gqa_decode d 128 group 4", {.kernel = "gqa_decode",
                                                          .batch = 2,
                                                          .q_heads = 32,
                                                          .kv_heads = 8,
                                                          .head_dim = 128,
                                                          .length = 1000}));
  cases.push_back(check_case("gqa_decode d 256 group 8", {.kernel = "gqa_decode",
                                                          .batch = 1,
                                                          .q_heads = 16,
                                                          .kv_heads = 2,
                                                          .head_dim = 256,
                                                          .length = 777}));
  cases.push_back(
      check_case("gqa_decode paged (16-token pages, shuffled)", {.kernel = "gqa_decode_paged",
                                                                 .batch = 2,
                                                                 .q_heads = 32,
                                                                 .kv_heads = 8,
                                                                 .head_dim = 128,
                                                                 .length = 1000,
                                                                 .page_tokens = 16}));
  cases.push_back(check_case(
      "mla_decode small",
      {.kernel = "mla_decode", .batch = 2, .length = 200, .heads = 4, .rank = 64, .rope = 16}));
  cases.push_back(check_case(
      "mla_decode latent 512 + rope 64",
      {.kernel = "mla_decode", .batch = 2, .length = 300, .heads = 16, .rank = 512, .rope = 64}));
  cases.push_back(check_case("delta_step small",
                             {.kernel = "delta_step", .batch = 3, .heads = 4, .dk = 32, .dv = 24}));
  cases.push_back(
      check_case("delta_step 128 x 128",
                 {.kernel = "delta_step", .batch = 2, .heads = 4, .dk = 128, .dv = 128}));
  cases.push_back(check_case("delta_chunk prefill then step (final state consumed)",
                             {.kernel = "delta_chunk_then_step",
                              .batch = 1,
                              .heads = 4,
                              .dk = 32,
                              .dv = 24,
                              .tokens = 150,
                              .chunk = 64}));
  cases.push_back(
      check_case("delta_chunk prefill then step 128 x 128", {.kernel = "delta_chunk_then_step",
                                                             .batch = 1,
                                                             .heads = 2,
                                                             .dk = 128,
                                                             .dv = 128,
                                                             .tokens = 200,
                                                             .chunk = 64}));
  cases.push_back(check_case("sparse_decode small", {.kernel = "sparse_decode",
                                                     .batch = 2,
                                                     .heads = 4,
                                                     .width = 64,
                                                     .window = 128,
                                                     .n_entries = 300,
                                                     .selected = 32}));
  cases.push_back(check_case("sparse_decode width 512 top-k 512", {.kernel = "sparse_decode",
                                                                   .batch = 1,
                                                                   .heads = 8,
                                                                   .width = 512,
                                                                   .window = 128,
                                                                   .n_entries = 4096,
                                                                   .selected = 512}));
  cases.push_back(check_case("sparse_decode width 512 top-k 2048", {.kernel = "sparse_decode",
                                                                    .batch = 1,
                                                                    .heads = 8,
                                                                    .width = 512,
                                                                    .window = 128,
                                                                    .n_entries = 8192,
                                                                    .selected = 2048}));
  cases.push_back(check_case(
      "moe_gemm small (13+ rows per expert, column tail)",
      {.kernel = "moe_gemm", .batch = 20, .experts = 3, .top_k = 2, .in = 100, .out = 264}));
  cases.push_back(check_case(
      "moe_gemm 256 experts top-8",
      {.kernel = "moe_gemm", .batch = 4, .experts = 256, .top_k = 8, .in = 512, .out = 384}));
  for (const timed_model& t : o.models) add_model(cases, t);
  plan["cases"] = cases;
  return plan;
}

namespace {

/// One output's comparison as a row field.
ordered_json output_json(const checked_output& ref, const comparison& r) {
  return {{"output", ref.name},         {"max_abs_error", r.max_abs_error},
          {"max_sigmas", r.max_sigmas}, {"nmse", r.nmse},
          {"nmse_max", ref.nmse_max},   {"out_of_tolerance", r.out_of_tolerance},
          {"non_finite", r.non_finite}, {"verdict", r.pass ? "pass" : "FAIL"}};
}

/// Whether every output of `got` passes.
bool all_pass(const case_data& d, const std::vector<std::vector<float>>& got) {
  if (got.size() != d.reference.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!compare_outputs(got[i], d.reference[i]).pass) return false;
  return true;
}

/// "exact", or how the kernel's state traffic differs from the tally's prediction.
std::string bytes_verdict(std::int64_t predicted, std::int64_t kernel) {
  if (kernel == predicted) return "exact";
  if (kernel > predicted)
    return fmt::format("kernel reads {:.2f}x the tally's bytes (kernel design)",
                       double(kernel) / double(predicted));
  return "MISMATCH";  // the kernel needs fewer bytes than the rule counts: a tally finding
}

}  // namespace

void run_cpu_side(const nlohmann::ordered_json& plan,
                  const std::function<void(const nlohmann::ordered_json&)>& on_row) {
  const std::uint64_t seed = plan.at("seed");
  const bool correctness_only = plan.value("correctness_only", false);
  on_row({{"row", "device"}, {"gpu", "skipped"}, {"why", "dry run: no GPU is used"}});
  for (const ordered_json& c : plan.at("cases")) {
    const std::string id = c.at("id"), role = c.at("role");
    if (role == "timed" && correctness_only) continue;
    case_shape s = shape_of(c.at("shape"));
    if (role == "check") {
      // The same seed the module uses for this case.
      case_data d = make_case(s, seed ^ std::hash<std::string>{}(id));
      std::vector<std::vector<float>> got = blocked_outputs(d);
      ordered_json outs = ordered_json::array();
      bool pass = got.size() == d.reference.size();
      for (std::size_t i = 0; i < d.reference.size() && i < got.size(); ++i) {
        comparison r = compare_outputs(got[i], d.reference[i]);
        pass = pass && r.pass;
        outs.push_back(output_json(d.reference[i], r));
      }
      // The check must be able to fail: each fault the kernel could have, emulated.
      ordered_json faults = ordered_json::array();
      for (fault f : faults_of(s.kernel)) {
        const bool caught = !all_pass(d, blocked_outputs(d, f));
        pass = pass && caught;
        faults.push_back({{"fault", fault_name(f)}, {"caught", caught}});
      }
      on_row({{"row", "twin"},
              {"id", id},
              {"kernel", s.kernel},
              {"shape", c.at("shape")},
              {"compared", "blocked twin vs plain twin"},
              {"outputs", outs},
              {"faults", faults},
              {"verdict", pass ? "pass" : "FAIL"}});
      on_row({{"row", "check"},
              {"id", id},
              {"kernel", s.kernel},
              {"shape", c.at("shape")},
              {"gpu", "skipped"},
              {"verdict", "skipped"}});
      continue;
    }
    // Timed: the kernel's own traffic against the tally's prediction, no GPU needed.
    const ordered_json& pred = c.at("predicted");
    const ordered_json& kb = c.at("kernel_bytes");
    const std::int64_t state = kb.at("state"), predicted = pred.at("bytes");
    on_row({{"row", "bytes"},
            {"id", id},
            {"kernel", s.kernel},
            {"shape", c.at("shape")},
            {"source", c.value("source", "")},
            {"predicted_bytes", predicted},
            {"kernel_state_bytes", state},
            {"kernel_scratch_bytes", kb.at("scratch")},
            {"kernel_activation_bytes", kb.at("activation")},
            {"kernel_traffic", c.at("kernel_traffic")},
            {"verdict", bytes_verdict(predicted, state)}});
    on_row({{"row", "timed"},
            {"id", id},
            {"kernel", s.kernel},
            {"shape", c.at("shape")},
            {"gpu", "skipped"},
            {"verdict", "skipped"}});
  }
}

}  // namespace calc::gpu
