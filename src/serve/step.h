// The time of one engine step (the decode tokens of the running requests plus the prefill chunk
// admitted with them), as a sum over op classes. Each op's F and R come from the tallies
// (tally_forward, tally_state, plan_experts, tally_params); only efficiencies and latencies come
// from the calibration table (serve/calibration.h). Work is per rank of the layout.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "plan/plan.h"
#include "serve/calibration.h"
#include "spec/gpu_spec.h"
#include "tally/closed_form.h"

namespace calc::serve {

/// One serving instance: tp ranks share heads and matrix columns, dp attention-data-parallel
/// groups each hold their own requests, the routed experts spread over all tp x dp ranks of a
/// stage (ep of them hold whole experts, the rest slice them), pp stages run layers in turn.
struct serve_layout {
  std::int64_t tp = 1;  // tensor parallel ranks of one attention group
  std::int64_t ep = 1;  // expert parallel ranks (whole experts per rank)
  std::int64_t dp = 1;  // attention data parallel groups (each tp ranks)
  std::int64_t pp = 1;  // pipeline stages
  std::int64_t gpus() const { return tp * dp * pp; }
  // The engines' and calc's --tp: the cards of one tp group, whose dp attention groups each
  // split heads over `tp` of them (SGLang's --tp 8 --dp 8 is tp 1 per attention group).
  std::int64_t tp_group() const { return tp * dp; }
};

/// "tp 8 dp 8 ep 8 pp 1": a layout in calc's flags (--tp is the tp group, as SGLang counts it).
std::string layout_flags(const serve_layout& l);

/// The layout in the launch flags of `engine` (vllm, sglang, trtllm), which count it
/// differently: vLLM's --tensor-parallel-size is one attention group's and its
/// --data-parallel-size multiplies the cards, where SGLang's --tp-size is the whole tp group.
std::string launch_flags(const std::string& engine, const serve_layout& l);

/// Why a layout cannot run the model ("" when it can): placement's layout_problem on the same
/// cards (plan/placement.h): a degree below 1, more stages than layers, an ep that does not
/// divide the tp group or the routed experts (or ep > 1 without them), or an attention tp that
/// does not divide a layer's heads (vLLM and SGLang refuse such a --tp at start-up).
std::string layout_problem(const graph& g, const serve_layout& l);

/// Bytes per second a collective spanning `cards` runs at (a tp group's all-reduce and
/// all-to-all span tp x dp cards; a pp hand-off, every stage's): the card's `interconnect` within
/// its NVLink domain; past it, over the server's PCIe, the slower of the two where the catalogue
/// records the card's `pcie` (a ring all-reduce goes at its slowest hop).
double collective_link(const gpu_spec& gpu, std::int64_t cards);

/// Why the layout's tp group cannot run on `gpu` ("" when it can): wider than tp_domain. An
/// aggregated engine can run a tp group across nodes, but its all-reduces and all-to-alls then
/// cross the inter-node network, whose bandwidth the catalogue does not record: calc refuses the
/// layout rather than cost those collectives at the NVLink bandwidth.
std::string domain_problem(const gpu_spec& gpu, const serve_layout& l, std::int64_t server_gpus);

/// The op classes a step is summed over.
enum class op_class {
  dense_gemm,         // every weight GEMM but routed experts and the head
  attention_prefill,  // QK^T and AV of the prefill chunk, its state written
  attention_decode,   // QK^T and AV of the decode tokens, the state they read
  moe_gemm,           // routed expert GEMMs (experts touched by this step's tokens)
  embed_head,         // embedding rows looked up, the vocabulary head
  tp_allreduce,       // two all-reduces per layer of the activations, tp > 1
  ep_alltoall,        // dispatch and combine of routed tokens, dp x tp > 1 with MoE
  pp_handoff,         // activations passed between stages, pp > 1
  count_
};
inline constexpr std::size_t op_classes = static_cast<std::size_t>(op_class::count_);
/// JSON / table name of an op class ("dense_gemm", ...).
const char* op_name(op_class c);

/// F and R of one op class on one rank for one step.
struct op_cost {
  double flops = 0;        // F per rank
  double bytes = 0;        // R per rank: HBM bytes (compute ops) or bytes sent (communication)
  double collectives = 0;  // communication ops launched (each pays the latency term)
  double rows = 0;         // GEMM rows (M) of one matrix: tokens, or tokens per touched expert
};

/// One step's shape on one attention rank.
struct step_shape {
  std::int64_t decode = 0;            // running requests taking one decode token each
  std::int64_t decode_context = 0;    // tokens cached per decode request (mean)
  std::int64_t prefill = 0;           // prefill tokens admitted this step, per prefilled request
  std::int64_t prefill_context = 0;   // tokens already cached for each prefilled request
  std::int64_t prefill_requests = 1;  // requests prefilled together, `prefill` tokens each
};

/// F and R per op class of one step, plus the request count the per-request overhead scales by.
struct step_costs {
  std::array<op_cost, op_classes> ops{};
  std::int64_t requests = 0;  // decode requests (sampling and scheduling per request)
  bool prefills = false;      // the step carries prompt tokens (launched without CUDA graphs)
};

/// The tallies a step needs, compiled once per model (they do not depend on the layout or the
/// GPU): the closed form of tally_forward / tally_state (tally/closed_form.h) and plan_experts
/// under serving's routing. Both are tested equal to the itemised tallies; shared, not copied,
/// by every deployment of the model.
struct model_forms {
  std::shared_ptr<const closed_form> tallies;
  std::shared_ptr<const experts_form> experts;  // null without MoE layers
  // The popularity `experts` was compiled under.
  double expert_zipf_s = coefficients{}.expert_zipf_s;
};

/// Compiles the forms of a model, its experts counted under a Zipf popularity of exponent
/// `expert_zipf_s` (the calibration's, coefficients::expert_zipf_s; serve/step.cpp says why).
model_forms compile_forms(const graph& g, double expert_zipf_s = coefficients{}.expert_zipf_s);

/// The same forms with the experts counted under another popularity (the tallies are shared).
model_forms with_expert_popularity(const graph& g, const model_forms& f, double expert_zipf_s);

/// A model on a layout of one GPU kind: what does not change from step to step, tallied once.
struct deployment {
  const graph* g = nullptr;
  gpu_spec gpu;
  serve_layout layout;
  // Tensor-core peaks per GPU at the element width of the matrices a GEMM multiplies (FP8 / FP4
  // where the GPU has such units): the attention projections' format for dense GEMMs, the
  // routed experts' for expert GEMMs (an FP8 checkpoint keeps `weights` BF16 and names its
  // quantised roles).
  double peak_flops = 0;
  double moe_peak_flops = 0;
  double kv_share = 1;    // fraction of a request's state one rank reads (engine rules)
  double dense_weight_bytes = 0;     // weights every step reads, routed experts excluded
  double routed_weight_bytes = 0;    // all routed experts of the model
  double weight_bytes_per_rank = 0;  // what one rank stores
  std::int64_t moe_layers = 0;
  std::int64_t top_k = 0;
  std::int64_t layers = 0;
  std::int64_t mla_layers = 0;        // layers with latent attention (MLA)
  std::int64_t activation_bytes = 2;  // bytes of one activation value sent between ranks
  model_forms forms;                  // the compiled tallies cost_step evaluates
};

/// Tallies what a step needs once; throws spec_error when the layout cannot run the model.
/// `compute_bits`: the width the tensor cores multiply at (0: the weights' width; 16 for
/// weight-only quantisation such as w4a16). `forms`: the model's compiled tallies when the
/// caller already has them (a search over layouts, or a calibration's expert popularity),
/// compiled here under the built-in popularity when empty.
deployment make_deployment(const graph& g, const gpu_spec& gpu, const serve_layout& l,
                           int compute_bits = 0, model_forms forms = {});

/// F and R per op class of one step on one rank, from the compiled tallies (no allocation).
step_costs cost_step(const deployment& d, const step_shape& s);

/// The same through the itemised tallies (tally_forward, tally_state, plan_experts): the oracle
/// tests hold cost_step to, exactly.
step_costs cost_step_itemised(const deployment& d, const step_shape& s);

/// Milliseconds of one step, split the way `serve` reports them.
struct step_time {
  std::array<double, op_classes> op_ms{};
  double weights_ms = 0;        // memory-bound time reading weights (dense, experts, head)
  double kv_ms = 0;             // memory-bound time reading and writing request state
  double compute_ms = 0;        // compute-bound time
  double communication_ms = 0;  // collectives: bytes over the interconnect plus latency
  double overhead_ms = 0;       // per step and per request
  double total_ms = 0;
};

/// max(F / (peak x compute efficiency), R / (bandwidth x memory efficiency)) per op, plus
/// bytes / (interconnect x efficiency) + collectives x latency, plus the overheads.
step_time time_step(const deployment& d, const step_costs& c, const coefficients& k);

}  // namespace calc::serve
