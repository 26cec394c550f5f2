#include "serve/step.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "engine/engine.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "tally/kinds.h"
#include "tally/tally.h"

namespace calc::serve {

namespace {

/// Per-rank share of a request's cache under TP, from the engines' per-rank layer caches (GQA
/// heads split down to one per rank, MLA latents replicated on every rank); 1/tp for a kind
/// the engine rules do not cover.
double cache_share(const graph& g, std::int64_t tp) {
  if (tp == 1) return 1;
  try {
    auto sum = [&](std::int64_t t) {
      engine::engine_config c;
      c.tensor_parallel = t;
      double s = 0;
      for (const engine::layer_cache& l : engine::layer_caches(g, c))
        s += l.token_bytes.to_double() + l.state_bytes.to_double();
      return s;
    };
    double whole = sum(1);
    return whole > 0 ? sum(tp) / whole : 1.0 / static_cast<double>(tp);
  } catch (const spec_error&) {
    return 1.0 / static_cast<double>(tp);
  }
}

/// The experts a step touches are expected distinct experts over independent draws from a Zipf
/// popularity (the i-th most used expert of a layer taken with probability ~ i^-s), between
/// `uniform` (every dispatch a new expert, s = 0) and `concentrated`. A router's experts are not
/// equally popular over the tokens of one step: with every expert equally likely a decode step
/// of 32 requests was costed as reading 81 of gpt-oss-120b's 128 experts per layer, and only
/// compute-bound expert GEMMs with a large padding (`gemm_half_rows`) fitted the measured steps.
/// s is one number for every model (a property of learnt routers, not of one model), fitted by
/// `calc calibrate` with the other coefficients (serve/fit.cpp) and read from the calibration.
routing serving_routing(double s) { return {routing::kind::zipf, s}; }

}  // namespace

const char* op_name(op_class c) {
  switch (c) {
    case op_class::dense_gemm:
      return "dense_gemm";
    case op_class::attention_prefill:
      return "attention_prefill";
    case op_class::attention_decode:
      return "attention_decode";
    case op_class::moe_gemm:
      return "moe_gemm";
    case op_class::embed_head:
      return "embed_head";
    case op_class::tp_allreduce:
      return "tp_allreduce";
    case op_class::ep_alltoall:
      return "ep_alltoall";
    case op_class::pp_handoff:
      return "pp_handoff";
    case op_class::count_:
      break;
  }
  return "?";
}

std::string layout_flags(const serve_layout& l) {
  return fmt::format("tp {} dp {} ep {} pp {}", l.tp_group(), l.dp, l.ep, l.pp);
}

std::string launch_flags(const std::string& engine, const serve_layout& l) {
  std::string f;
  auto add = [&](bool when, std::string flag) {
    if (when) f += (f.empty() ? "" : " ") + flag;
  };
  if (engine == "vllm") {
    // vLLM's expert parallelism spans every tp x dp rank of a stage (--enable-expert-parallel).
    add(true, fmt::format("--tensor-parallel-size {}", l.tp));
    add(l.dp > 1, fmt::format("--data-parallel-size {}", l.dp));
    add(l.ep > 1, "--enable-expert-parallel");
    add(l.pp > 1, fmt::format("--pipeline-parallel-size {}", l.pp));
    if (l.ep > 1 && l.ep != l.tp_group())
      f += fmt::format(" (vLLM splits experts over all {} ranks, not {})", l.tp_group(), l.ep);
  } else if (engine == "sglang") {
    add(true, fmt::format("--tp-size {}", l.tp_group()));
    add(l.dp > 1, fmt::format("--dp-size {} --enable-dp-attention", l.dp));
    add(l.ep > 1, fmt::format("--ep-size {}", l.ep));
    add(l.pp > 1, fmt::format("--pp-size {}", l.pp));
  } else {
    add(true, fmt::format("--tp_size {}", l.tp_group()));
    add(l.ep > 1, fmt::format("--ep_size {}", l.ep));
    add(l.pp > 1, fmt::format("--pp_size {}", l.pp));
    add(l.dp > 1, "(enable_attention_dp: true in --extra_llm_api_options)");
  }
  return f;
}

std::string layout_problem(const graph& g, const serve_layout& l) {
  // The same cards in placement's terms, where tp counts the whole tp group: plan, capacity,
  // report and serve refuse a layout by one rule, in the same words.
  return calc::layout_problem(g, layout{l.tp_group(), l.pp, l.ep, l.dp});
}

double collective_link(const gpu_spec& gpu, std::int64_t cards) {
  std::int64_t link = gpu.interconnect;
  if (cards > gpu.nvlink_domain && gpu.pcie > 0) link = std::min(link, gpu.pcie);
  return static_cast<double>(link);
}

std::string domain_problem(const gpu_spec& gpu, const serve_layout& l, std::int64_t server_gpus) {
  std::int64_t domain = tp_domain(gpu, server_gpus);
  if (l.tp_group() <= domain) return "";
  std::string where;
  if (domain == gpu.nvlink_domain && domain > 1)  // HGX, NVL72: the network lies past it
    where = fmt::format("{}'s NVLink domain of {}", gpu.name, domain);
  else if (domain == 1)
    where = fmt::format(
        "one {} node, which holds one card (server_gpus; --node-gpus N for a "
        "node of N)",
        gpu.name);
  else
    where = fmt::format(
        "one server of {} {} cards ({}; --node-gpus N for a server of N)", domain, gpu.name,
        gpu.nvlink_domain > 1
            ? fmt::format("its tp crosses PCIe past a {}-card NVLink bridge", gpu.nvlink_domain)
            : std::string("no NVLink: its tp crosses PCIe"));
  return fmt::format(
      "the tp group of {} cards exceeds {}; across nodes its collectives would cross a network "
      "the catalogue has no bandwidth for: use --pp for more cards, or replicas (`calc plan "
      "--sla`)",
      l.tp_group(), where);
}

model_forms compile_forms(const graph& g, double expert_zipf_s) {
  model_forms f;
  f.tallies = std::make_shared<const closed_form>(g);
  return with_expert_popularity(g, f, expert_zipf_s);
}

model_forms with_expert_popularity(const graph& g, const model_forms& f, double expert_zipf_s) {
  model_forms out = f;
  out.expert_zipf_s = expert_zipf_s;
  out.experts.reset();
  if (has_ffn<ffn_moe>(g))
    out.experts = std::make_shared<const experts_form>(g, serving_routing(expert_zipf_s));
  return out;
}

deployment make_deployment(const graph& g, const gpu_spec& gpu, const serve_layout& l,
                           int compute_bits, model_forms forms) {
  if (std::string why = layout_problem(g, l); !why.empty())
    throw spec_error("deployment.layout", why);
  deployment d;
  d.g = &g;
  d.gpu = gpu;
  d.layout = l;
  d.forms = forms.tallies ? std::move(forms) : compile_forms(g);
  const precision_spec& p = g.spec->precision;
  // The tensor cores run at the matrices' element width where the GPU has such units. Integer
  // formats (AWQ, GPTQ) are weight-only: their GEMMs dequantise to BF16. A 4-bit float format
  // on a GPU without FP4 units multiplies at the FP8 peak where there is one, as `calc
  // calibrate` costs the measured rows (its `compute_bits`): the fitted efficiencies of those
  // rows (MXFP4 experts on Hopper, W4A8 in TensorRT-LLM, dequantising kernels in vLLM) are
  // relative to that peak, and a deployment costed otherwise would not be the one calibrated.
  auto peak_at = [&](const dtype& f) {
    int bits = compute_bits > 0 ? compute_bits : f.bits;
    bool weight_only = compute_bits <= 0 && f.name.starts_with("int");
    double tflops = gpu.bf16_tflops;
    if (!weight_only && bits <= 8 && gpu.fp8_tflops > 0) tflops = gpu.fp8_tflops;
    if (!weight_only && bits <= 4 && gpu.fp4_tflops > 0) tflops = gpu.fp4_tflops;
    return tflops * 1e12;
  };
  d.peak_flops = peak_at(*p.attention_weights());
  d.moe_peak_flops = peak_at(*p.expert_weights());
  d.kv_share = cache_share(g, l.tp);
  params_tally pt = tally_params(g);
  d.layers = static_cast<std::int64_t>(g.layers.size());
  d.mla_layers = std::count_if(g.layers.begin(), g.layers.end(), [](const layer& ly) {
    return std::holds_alternative<attention_mla>(ly.attention);
  });
  double routed = 0;
  if (d.forms.experts) {
    experts_plan e = d.forms.experts->at(1);
    routed = e.all_routed_bytes.to_double();
    d.moe_layers = e.moe_layers;
    d.top_k = e.top_k;
  }
  d.routed_weight_bytes = routed;
  d.dense_weight_bytes = pt.shared_read_bytes.to_double() - routed;
  double stage = 1.0 / static_cast<double>(l.pp);
  d.weight_bytes_per_rank = ((pt.weight_bytes.to_double() - routed) / static_cast<double>(l.tp) +
                             routed / static_cast<double>(l.tp * l.dp)) *
                            stage;
  d.activation_bytes = std::max<std::int64_t>(1, p.activations.bits / 8);
  return d;
}

namespace {

/// What a step takes from the tallies: a call's work, a length's state, the experts' work.
struct call_work {
  checked flops, interaction_flops, state_flops, vocab_flops, embedding_read_bytes;
};
struct state_work {
  checked growing, decode_read, decode_state_rw, window_write;
};

/// The tallies compiled once (closed_form, experts_form).
struct compiled_tallies {
  const deployment& d;
  call_work forward(std::int64_t batch, std::int64_t context, std::int64_t tokens) const {
    forward_totals f = d.forms.tallies->forward(make_call(*d.g->spec, batch, context, tokens));
    return {f.flops, f.interaction_flops, f.state_flops, f.vocab_flops, f.embedding_read_bytes};
  }
  state_work state(std::int64_t length, std::int64_t batch) const {
    state_totals t = d.forms.tallies->state(length, batch);
    return {t.growing, t.decode_read, t.decode_state_rw, t.window_write};
  }
  experts_plan experts(std::int64_t tokens) const { return d.forms.experts->at(tokens); }
};

/// The itemised tallies, built per call.
struct itemised_tallies {
  const deployment& d;
  call_work forward(std::int64_t batch, std::int64_t context, std::int64_t tokens) const {
    forward_tally f = tally_forward(*d.g, make_call(*d.g->spec, batch, context, tokens));
    return {f.flops, f.interaction_flops, f.state_flops, f.vocab_flops, f.embedding_read_bytes};
  }
  state_work state(std::int64_t length, std::int64_t batch) const {
    state_tally t = tally_state(*d.g, length, batch);
    return {t.growing, t.decode_read, t.decode_state_rw, t.window_write};
  }
  experts_plan experts(std::int64_t tokens) const {
    return plan_experts(*d.g, tokens, serving_routing(d.forms.expert_zipf_s));
  }
};

/// F and R per op class from either source: one formula, whichever way the tallies are read.
template <typename tallies>
step_costs cost_step_with(const deployment& d, const step_shape& s, const tallies& t) {
  const model_spec& spec = *d.g->spec;
  const serve_layout& l = d.layout;
  double tp = static_cast<double>(l.tp);
  double pp = static_cast<double>(l.pp);
  step_costs c;
  c.requests = s.decode;
  c.prefills = s.prefill > 0;
  auto at = [&](op_class k) -> op_cost& { return c.ops[static_cast<std::size_t>(k)]; };
  double dense_flops = 0, head_flops = 0, embed_bytes = 0;
  // Per rank: a stage holds 1/pp of the layers; its tp ranks split heads and columns.
  double share = 1.0 / (tp * pp);
  if (s.decode > 0) {
    call_work f = t.forward(s.decode, s.decode_context, 1);
    state_work st = t.state(s.decode_context, s.decode);
    dense_flops += (f.flops - f.interaction_flops - f.state_flops - f.vocab_flops).to_double();
    head_flops += f.vocab_flops.to_double();
    embed_bytes += f.embedding_read_bytes.to_double();
    op_cost& a = at(op_class::attention_decode);
    a.flops = (f.interaction_flops + f.state_flops).to_double() * share;
    a.bytes = (st.decode_read + st.decode_state_rw + st.window_write).to_double() * d.kv_share / pp;
  }
  if (s.prefill > 0) {
    std::int64_t n = std::max<std::int64_t>(1, s.prefill_requests);
    call_work f = t.forward(n, s.prefill_context, s.prefill);
    state_work before = t.state(s.prefill_context, n);
    state_work after = t.state(s.prefill_context + s.prefill, n);
    dense_flops += (f.flops - f.interaction_flops - f.state_flops - f.vocab_flops).to_double();
    head_flops += f.vocab_flops.to_double();
    embed_bytes += f.embedding_read_bytes.to_double();
    op_cost& a = at(op_class::attention_prefill);
    a.flops = (f.interaction_flops + f.state_flops).to_double() * share;
    // The cached history read once, the new state written.
    a.bytes = (before.decode_read + (after.growing - before.growing) + after.decode_state_rw)
                  .to_double() *
              d.kv_share / pp;
  }
  std::int64_t tokens =  // rows of this attention group
      s.decode + (s.prefill > 0 ? s.prefill * std::max<std::int64_t>(1, s.prefill_requests) : 0);
  if (tokens == 0) return c;
  // Routed experts: every attention group's tokens meet at the experts of a stage, which the
  // tp x dp ranks of the stage hold in equal parts.
  double expert_ranks = tp * static_cast<double>(l.dp);
  if (d.moe_layers > 0) {
    experts_plan e = t.experts(tokens * l.dp);
    dense_flops -= e.flops.to_double() / static_cast<double>(l.dp);
    op_cost& m = at(op_class::moe_gemm);
    m.flops = e.flops.to_double() / expert_ranks / pp;
    m.bytes = e.weight_read_bytes / expert_ranks / pp;
    m.rows = e.rows_per_expert;
  }
  op_cost& dense = at(op_class::dense_gemm);
  dense.flops = dense_flops * share;
  dense.bytes = d.dense_weight_bytes * share;
  dense.rows = static_cast<double>(tokens);
  op_cost& head = at(op_class::embed_head);
  head.flops = head_flops / tp;  // the head is vocabulary-parallel over tp; on the last stage
  head.bytes = embed_bytes / tp;
  double hidden = static_cast<double>(spec.hidden);
  double act = static_cast<double>(d.activation_bytes);
  double rows = static_cast<double>(tokens);
  double stage_layers = static_cast<double>(d.layers) / pp;
  if (l.tp > 1) {
    // Ring all-reduce: each rank sends 2 (tp-1)/tp of the tensor; after attention and after the
    // feed-forward of every layer.
    op_cost& ar = at(op_class::tp_allreduce);
    ar.collectives = 2 * stage_layers;
    ar.bytes = ar.collectives * 2 * (tp - 1) / tp * rows * hidden * act;
  }
  if (d.moe_layers > 0 && expert_ranks > 1 && (l.dp > 1 || l.ep > 1)) {
    // Dispatch and combine: each routed copy of a token leaves the rank unless its expert lives
    // there ((n-1)/n of them under random routing).
    op_cost& a2a = at(op_class::ep_alltoall);
    double moe_layers = static_cast<double>(d.moe_layers) / pp;
    a2a.collectives = 2 * moe_layers;
    a2a.bytes = 2 * moe_layers * rows * static_cast<double>(d.top_k) * hidden * act *
                (expert_ranks - 1) / expert_ranks;
  }
  if (l.pp > 1) {
    op_cost& h = at(op_class::pp_handoff);
    // pp - 1 hand-offs per step; every cost here is per stage and multiplied back by pp.
    h.collectives = (pp - 1) / pp;
    h.bytes = h.collectives * rows * hidden * act / tp;
  }
  return c;
}

}  // namespace

step_costs cost_step(const deployment& d, const step_shape& s) {
  return cost_step_with(d, s, compiled_tallies{d});
}

step_costs cost_step_itemised(const deployment& d, const step_shape& s) {
  return cost_step_with(d, s, itemised_tallies{d});
}

step_time time_step(const deployment& d, const step_costs& c, const coefficients& k) {
  step_time t;
  double bw = static_cast<double>(d.gpu.bandwidth);
  double bf16 = d.gpu.bf16_tflops * 1e12;
  double group_link = collective_link(d.gpu, d.layout.tp_group());
  double stages_link = collective_link(d.gpu, d.layout.tp_group() * d.layout.pp);
  double pp = static_cast<double>(d.layout.pp);
  for (std::size_t i = 0; i < op_classes; ++i) {
    auto cls = static_cast<op_class>(i);
    const op_cost& o = c.ops[i];
    double ms = 0;
    switch (cls) {
      case op_class::tp_allreduce:
      case op_class::ep_alltoall:
      case op_class::pp_handoff: {
        double link = cls == op_class::pp_handoff ? stages_link : group_link;
        double wire = link > 0 ? o.bytes / (link * k.comm_bandwidth) : 0;
        ms = (wire + o.collectives * k.collective_latency_us * 1e-6) * 1e3;
        t.communication_ms += ms;
        break;
      }
      default: {
        double peak = d.peak_flops, ce = k.gemm_compute, me = k.gemm_memory;
        if (cls == op_class::moe_gemm) {
          peak = d.moe_peak_flops;
          ce = k.moe_compute;
          me = k.moe_memory;
        }
        if (cls == op_class::attention_decode || cls == op_class::attention_prefill) {
          peak = bf16;  // attention runs on BF16 tensor cores (FP8 attention is the exception)
          ce = k.attention_compute;
          me = k.attention_memory;
        }
        // A GEMM of M rows fills the tensor cores only in part: efficiency M / (M + M_half)
        // of its large-M value (tiles of 64-128 rows; small-M GEMMs run at a fraction of peak).
        if (cls == op_class::dense_gemm || cls == op_class::moe_gemm)
          ce *= o.rows / (o.rows + k.gemm_half_rows + 1e-9);
        double compute = ce > 0 ? o.flops / (peak * ce) * 1e3 : 0;
        double memory = o.bytes / (bw * me) * 1e3;
        ms = std::max(compute, memory);
        if (compute >= memory)
          t.compute_ms += ms;
        else if (cls == op_class::attention_decode || cls == op_class::attention_prefill)
          t.kv_ms += ms;
        else
          t.weights_ms += ms;
      }
    }
    // A pipeline runs its stages in turn: a token's step passes every stage.
    t.op_ms[i] = ms * pp;
  }
  t.weights_ms *= pp;
  t.kv_ms *= pp;
  t.compute_ms *= pp;
  t.communication_ms *= pp;
  // Every layer's kernels run one after another, each with a floor however small its work; a
  // MoE layer launches more of them (router, top-k, token permutation, the expert GEMMs and
  // their combine) than a dense feed-forward, and a latent-attention layer more than a
  // grouped-query one. Engines capture decode batches in CUDA graphs and replay them; a step
  // with prompt tokens launches its layers' kernels from the host, and a latent-attention layer
  // pays a floor of its own there (coefficients says why, and what the rows cannot tell).
  t.overhead_ms =
      k.step_overhead_ms + static_cast<double>(c.requests) * k.request_overhead_us * 1e-3 +
      static_cast<double>(d.layers) * k.layer_latency_us * 1e-3 +
      static_cast<double>(d.moe_layers) * k.moe_layer_latency_us * 1e-3 +
      static_cast<double>(d.mla_layers) * k.mla_layer_latency_us * 1e-3 +
      (c.prefills ? (static_cast<double>(d.layers) * k.prefill_layer_latency_us +
                     static_cast<double>(d.mla_layers) * k.mla_prefill_layer_latency_us) *
                        1e-3
                  : 0);
  t.total_ms = t.weights_ms + t.kv_ms + t.compute_ms + t.communication_ms + t.overhead_ms;
  return t;
}

}  // namespace calc::serve
