// The plan of a CUDA run (gpu_plan.h). Timed shapes come from bundled models' layers, and their
// predictions from the same tally rules `calc state` and `calc forward` use, so a measured byte
// count that differs from the prediction is a finding about the tally or the kernel.
#include "exec/gpu_plan.h"

#include <fmt/format.h>

#include <type_traits>
#include <variant>

#include "common/error.h"

#include "decode_blocked.h"
#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/rules.h"
#include "twin_cases.h"

namespace calc::gpu {

namespace {

using nlohmann::ordered_json;
using namespace calc::kernels;

ordered_json shape_json(const case_shape& s) {
  ordered_json j = {{"kernel", s.kernel}, {"batch", s.batch}};
  auto put = [&](const char* k, int v) {
    if (v) j[k] = v;
  };
  put("q_heads", s.q_heads), put("kv_heads", s.kv_heads), put("head_dim", s.head_dim);
  put("length", s.length), put("page_tokens", s.page_tokens), put("heads", s.heads);
  put("rank", s.rank), put("rope", s.rope), put("dk", s.dk), put("dv", s.dv);
  put("tokens", s.tokens), put("chunk", s.chunk), put("width", s.width), put("window", s.window);
  put("n_entries", s.n_entries), put("selected", s.selected), put("experts", s.experts);
  put("top_k", s.top_k), put("in", s.in), put("out", s.out);
  if (s.kernel.rfind("gqa", 0) == 0) j["split_blocks"] = s.split_blocks;
  return j;
}

case_shape shape_from(const ordered_json& j) {
  case_shape s;
  s.kernel = j.at("kernel");
  auto get = [&](const char* k, int& v) { v = j.value(k, v); };
  get("batch", s.batch), get("q_heads", s.q_heads), get("kv_heads", s.kv_heads);
  get("head_dim", s.head_dim), get("length", s.length), get("page_tokens", s.page_tokens);
  get("heads", s.heads), get("rank", s.rank), get("rope", s.rope), get("dk", s.dk);
  get("dv", s.dv), get("tokens", s.tokens), get("chunk", s.chunk), get("width", s.width);
  get("window", s.window), get("n_entries", s.n_entries), get("selected", s.selected);
  get("experts", s.experts), get("top_k", s.top_k), get("in", s.in), get("out", s.out);
  get("split_blocks", s.split_blocks);
  return s;
}

ordered_json check_case(const std::string& id, const case_shape& s) {
  return {{"id", id}, {"role", "check"}, {"shape", shape_json(s)}};
}

/// A bundled model, its graph and the first layer a predicate accepts.
struct model_layer {
  model_spec spec;
  graph g;
  const layer* l = nullptr;
  model_context ctx() const {
    return {spec.hidden, &spec.precision, &spec.connection, spec.layer_norm};
  }
};

template <typename Attention>
model_layer find_attention(const std::string& model) {
  model_layer m{read_model_file(resolve_model_path(model)), {}, nullptr};
  m.g = build_graph(m.spec);
  for (const layer& l : m.g.layers)
    if (const auto* a = std::get_if<Attention>(&l.attention)) {
      if constexpr (std::is_same_v<Attention, attention_gqa>)
        if (a->window) continue;  // full attention: the kernel reads the whole history
      m.l = &l;
      break;
    }
  if (!m.l) throw spec_error("--device cuda", model + " has no layer of the kind a timed case needs");
  return m;
}

ordered_json timed_case(const std::string& id, const std::string& source, const case_shape& s,
                        ordered_json predicted) {
  return {{"id", id}, {"role", "timed"}, {"source", source}, {"shape", shape_json(s)},
          {"predicted", std::move(predicted)}};
}

/// Interaction (QK, AV) FLOPs of one layer for a decode call over `length` cached tokens:
/// context length - 1 plus the new token, which attends to all `length`.
checked decode_interaction(const model_layer& m, std::int64_t batch, std::int64_t length) {
  call c = make_call(m.spec, batch, length - 1, 1);
  return std::visit([&](const auto& a) { return flops(a, m.ctx(), c).interaction; },
                    m.l->attention);
}

void add_timed(ordered_json& cases) {
  {  // GQA decode: Qwen3-8B (head_dim 128, group 4) and Qwen3.6's full layers (256, group 8).
    for (const auto& [model, shapes] :
         std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>>{
             {"qwen3-8b", {{1, 65536}, {8, 16384}, {32, 8192}, {64, 8192}}},
             {"qwen3.6-35b-a3b", {{8, 16384}}}}) {
      model_layer m = find_attention<attention_gqa>(model);
      const auto& a = std::get<attention_gqa>(m.l->attention);
      for (auto [B, L] : shapes) {
        case_shape s{.kernel = "gqa_decode", .batch = B, .q_heads = int(a.q_heads),
                     .kv_heads = int(a.kv_heads), .head_dim = int(a.head_dim), .length = L};
        checked bytes = checked(B) * decode_read(a, m.ctx(), m.spec.execution, L);
        cases.push_back(timed_case(
            fmt::format("gqa_decode {} B={} L={}", model, B, L),
            fmt::format("{} layer {}: decode_read x B (tally)", model, m.l->index), s,
            {{"bytes", bytes.value()},
             {"flops", decode_interaction(m, B, L).value()},
             {"unit", "cuda_core_fp32"}}));
      }
    }
  }
  {  // Absorbed MLA decode: Kimi K3's MLA layers (96 heads over a 512 + 64 record).
    model_layer m = find_attention<attention_mla>("kimi-k3");
    const auto& a = std::get<attention_mla>(m.l->attention);
    m.spec.execution.mla = mla_path::compact;  // the kernel reads the compact (absorbed) cache
    const execution_spec& e = m.spec.execution;
    for (auto [B, L] : std::vector<std::pair<int, int>>{{8, 32768}, {32, 8192}}) {
      case_shape s{.kernel = "mla_decode", .batch = B, .length = L, .heads = int(a.heads),
                   .rank = int(a.kv_rank), .rope = int(a.qk_rope)};
      checked bytes = checked(B) * decode_read(a, m.ctx(), e, L);
      cases.push_back(timed_case(
          fmt::format("mla_decode kimi-k3 B={} L={}", B, L),
          fmt::format("kimi-k3 layer {}: decode_read x B (tally, {} path)", m.l->index,
                      "compact"),
          s,
          {{"bytes", bytes.value()},
           {"flops", decode_interaction(m, B, L).value()},
           {"unit", "tensor_core_bf16"}}));
    }
  }
  // Delta-rule decode step: Kimi K3's KDA (96 heads) and Qwen3.6's Gated DeltaNet (32 heads).
  auto delta = [&](const std::string& model, int heads, int dk, int dv, const model_layer& m,
                   const std::vector<state_component>& comps, int B) {
    checked rw = 0;
    for (const state_component& c : comps)
      if (c.name == "recurrent") rw = checked(2) * B * c.bytes(1);  // read + written each step
    case_shape s{.kernel = "delta_step", .batch = B, .heads = heads, .dk = dk, .dv = dv};
    cases.push_back(timed_case(
        fmt::format("delta_step {} B={}", model, B),
        fmt::format("{} layer {}: recurrent state read + write x B (tally)", model, m.l->index),
        s, {{"bytes", rw.value()}, {"unit", "cuda_core_fp32"}}));
  };
  {
    model_layer m = find_attention<attention_kda>("kimi-k3");
    const auto& a = std::get<attention_kda>(m.l->attention);
    auto comps = state(a, m.ctx(), m.spec.execution);
    for (int B : {64, 256}) delta("kimi-k3", int(a.heads), int(a.key_dim), int(a.value_dim), m, comps, B);
  }
  {
    model_layer m = find_attention<attention_gdn>("qwen3.6-35b-a3b");
    const auto& a = std::get<attention_gdn>(m.l->attention);
    auto comps = state(a, m.ctx(), m.spec.execution);
    delta("qwen3.6-35b-a3b", int(a.v_heads), int(a.key_dim), int(a.value_dim), m, comps, 256);
  }
  // Sparse decode at V4's widths (64 heads, 512-wide records, window 128). The model stores
  // 584-byte FP8/BF16 records; this kernel reads BF16 records, so there is no tally prediction
  // of the same format: the row reports the kernel's own bytes.
  for (auto [B, entries, top_k] :
       std::vector<std::tuple<int, int, int>>{{64, 16384, 512}, {32, 16384, 2048}}) {
    case_shape s{.kernel = "sparse_decode", .batch = B, .heads = 64, .width = 512, .window = 128,
                 .n_entries = entries, .selected = top_k};
    cases.push_back(timed_case(fmt::format("sparse_decode V4 widths B={} top-k {}", B, top_k),
                               "V4 widths, BF16 records (no tally prediction: formats differ)", s,
                               {{"unit", "cuda_core_fp32"}}));
  }
  {  // MoE decode: Qwen3.6's 256 experts, top-8, the three expert matrices as one [d, 3f] GEMM
     // (the same weight bytes and FLOPs per row as gate, up and down).
    model_layer m{read_model_file(resolve_model_path("qwen3.6-35b-a3b")), {}, nullptr};
    m.g = build_graph(m.spec);
    m.l = &m.g.layers.front();
    const auto& f = std::get<ffn_moe>(m.l->ffn);
    std::vector<tensor> ts;
    add_tensors(f, m.ctx(), ts);
    for (int B : {1, 8, 32}) {
      call c = make_call(m.spec, B, 4095, 1);
      checked bytes = 0, fl = 0;
      for (const tensor& t : ts)
        if (t.name == "routed_experts") bytes = t.read_bytes(c), fl = checked(2) * t.gemm_weight_rows(c);
      const int d = int(f.latent ? f.latent : m.spec.hidden);
      case_shape s{.kernel = "moe_gemm", .batch = B, .experts = int(f.experts),
                   .top_k = int(f.top_k), .in = d, .out = 3 * int(f.intermediate)};
      cases.push_back(timed_case(
          fmt::format("moe_gemm qwen3.6-35b-a3b B={}", B),
          fmt::format("qwen3.6-35b-a3b layer 0: routed_experts read bytes (tally)"), s,
          {{"bytes", bytes.value()}, {"flops", fl.value()}, {"unit", "cuda_core_fp32"}}));
    }
  }
}

}  // namespace

nlohmann::ordered_json make_plan(const plan_options& o) {
  ordered_json plan;
  plan["seed"] = o.seed;
  plan["correctness_only"] = o.correctness_only;
  plan["repeats"] = std::max(20, o.repeats);
  gpu_spec g = find_gpu(o.gpu);
  plan["catalogue"] = {{"gpu", g.name},
                       {"bf16_flops", g.bf16_tflops * 1e12},
                       {"bandwidth", double(g.bandwidth)},
                       {"source", g.source}};
  ordered_json cases = ordered_json::array();
  // Small cases (odd sizes, several splits and passes) and one production width per kernel.
  cases.push_back(check_case("gqa_decode small (d 64, 2 splits)",
                             {.kernel = "gqa_decode", .batch = 2, .q_heads = 8, .kv_heads = 2,
                              .head_dim = 64, .length = 300, .split_blocks = 8}));
  cases.push_back(check_case("gqa_decode d 128 group 4",
                             {.kernel = "gqa_decode", .batch = 2, .q_heads = 32, .kv_heads = 8,
                              .head_dim = 128, .length = 1000}));
  cases.push_back(check_case("gqa_decode d 256 group 8",
                             {.kernel = "gqa_decode", .batch = 1, .q_heads = 16, .kv_heads = 2,
                              .head_dim = 256, .length = 777}));
  cases.push_back(check_case("gqa_decode paged (16-token pages, shuffled)",
                             {.kernel = "gqa_decode_paged", .batch = 2, .q_heads = 32,
                              .kv_heads = 8, .head_dim = 128, .length = 1000, .page_tokens = 16}));
  cases.push_back(check_case("mla_decode small", {.kernel = "mla_decode", .batch = 2, .length = 200,
                                                  .heads = 4, .rank = 64, .rope = 16}));
  cases.push_back(check_case("mla_decode latent 512 + rope 64",
                             {.kernel = "mla_decode", .batch = 2, .length = 300, .heads = 16,
                              .rank = 512, .rope = 64}));
  cases.push_back(check_case("delta_step small", {.kernel = "delta_step", .batch = 3, .heads = 4,
                                                  .dk = 32, .dv = 24}));
  cases.push_back(check_case("delta_step 128 x 128", {.kernel = "delta_step", .batch = 2,
                                                      .heads = 4, .dk = 128, .dv = 128}));
  cases.push_back(check_case("delta_chunk prefill then step (final state consumed)",
                             {.kernel = "delta_chunk_then_step", .batch = 1, .heads = 4, .dk = 32,
                              .dv = 24, .tokens = 150, .chunk = 64}));
  cases.push_back(check_case("delta_chunk prefill then step 128 x 128",
                             {.kernel = "delta_chunk_then_step", .batch = 1, .heads = 2,
                              .dk = 128, .dv = 128, .tokens = 200, .chunk = 64}));
  cases.push_back(check_case("sparse_decode small",
                             {.kernel = "sparse_decode", .batch = 2, .heads = 4, .width = 64,
                              .window = 128, .n_entries = 300, .selected = 32}));
  cases.push_back(check_case("sparse_decode width 512 top-k 512",
                             {.kernel = "sparse_decode", .batch = 1, .heads = 8, .width = 512,
                              .window = 128, .n_entries = 4096, .selected = 512}));
  cases.push_back(check_case("sparse_decode width 512 top-k 2048",
                             {.kernel = "sparse_decode", .batch = 1, .heads = 8, .width = 512,
                              .window = 128, .n_entries = 8192, .selected = 2048}));
  cases.push_back(check_case("moe_gemm small (13+ rows per expert, column tail)",
                             {.kernel = "moe_gemm", .batch = 20, .experts = 3, .top_k = 2,
                              .in = 100, .out = 264}));
  cases.push_back(check_case("moe_gemm 256 experts top-8",
                             {.kernel = "moe_gemm", .batch = 4, .experts = 256, .top_k = 8,
                              .in = 512, .out = 384}));
  add_timed(cases);
  plan["cases"] = cases;
  return plan;
}

void run_cpu_side(const nlohmann::ordered_json& plan,
                  const std::function<void(const nlohmann::ordered_json&)>& on_row) {
  const std::uint64_t seed = plan.at("seed");
  const bool correctness_only = plan.value("correctness_only", false);
  on_row({{"row", "device"}, {"gpu", "skipped"}, {"why", "dry run: no GPU is used"}});
  for (const ordered_json& c : plan.at("cases")) {
    const std::string id = c.at("id"), role = c.at("role");
    if (role == "timed" && correctness_only) continue;
    case_shape s = shape_from(c.at("shape"));
    if (role == "check") {
      // The same seed the module uses for this case.
      case_data d = make_case(s, seed ^ std::hash<std::string>{}(id));
      std::vector<std::vector<float>> got = blocked_outputs(d);
      ordered_json outs = ordered_json::array();
      bool pass = got.size() == d.reference.size();
      for (std::size_t i = 0; i < d.reference.size() && i < got.size(); ++i) {
        comparison r = compare_outputs(got[i], d.reference[i]);
        pass = pass && r.pass;
        outs.push_back({{"output", d.reference[i].name}, {"max_abs_error", r.max_abs_error},
                        {"nmse", r.nmse}, {"out_of_tolerance", r.out_of_tolerance},
                        {"non_finite", r.non_finite}, {"verdict", r.pass ? "pass" : "FAIL"}});
      }
      on_row({{"row", "twin"}, {"id", id}, {"kernel", s.kernel},
              {"compared", "blocked twin vs plain twin"}, {"outputs", outs},
              {"verdict", pass ? "pass" : "FAIL"}});
      on_row({{"row", "check"}, {"id", id}, {"kernel", s.kernel}, {"gpu", "skipped"},
              {"verdict", "skipped"}});
      continue;
    }
    // Timed: the kernel's own byte count against the tally's prediction, no GPU needed.
    kernel_bytes kb;
    if (s.kernel == "gqa_decode")
      kb = gqa_decode_bytes({s.batch, s.q_heads, s.kv_heads, s.head_dim, s.length, 0, 0, nullptr,
                             split_tokens_for(s.batch, s.kv_heads, s.length, s.split_blocks)});
    else if (s.kernel == "mla_decode")
      kb = mla_decode_bytes({s.batch, s.heads, s.rank, s.rope, s.length});
    else if (s.kernel == "delta_step")
      kb = delta_step_bytes({s.batch, s.heads, s.dk, s.dv});
    else if (s.kernel == "sparse_decode")
      kb = sparse_decode_bytes({s.batch, s.heads, s.width, s.window, s.n_entries, s.selected});
    else if (s.kernel == "moe_gemm") {
      std::vector<int> off = disjoint_routing(s.batch, s.top_k, s.experts);
      kb = moe_gemm_bytes({s.experts, s.in, s.out, off.data()}, off.back());
    }
    const double moved = kb.state_read + kb.state_write + kb.weights;
    const ordered_json& pred = c.at("predicted");
    ordered_json row = {{"row", "bytes"}, {"id", id}, {"kernel", s.kernel},
                        {"source", c.value("source", "")}, {"kernel_bytes", moved},
                        {"predicted_bytes", pred.value("bytes", ordered_json())}};
    if (pred.contains("bytes"))
      row["verdict"] = double(pred.at("bytes").get<std::int64_t>()) == moved ? "exact" : "MISMATCH";
    else
      row["verdict"] = "no prediction";
    on_row(row);
    on_row({{"row", "timed"}, {"id", id}, {"kernel", s.kernel}, {"gpu", "skipped"},
            {"verdict", "skipped"}});
  }
}

}  // namespace calc::gpu
