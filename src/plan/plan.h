// Planning answers built from the tallies: a full request (§2.2.3), how many requests fit on a
// card and the weight budget (§2.6.2), and crossovers (§2.2.2, §2.3.5).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"

namespace calc {

struct request_plan {
  std::int64_t prefill_calls = 0;
  std::int64_t decode_calls = 0;  // n_d = G - 1
  checked flops;                  // prefill + every decode
  checked prefill_flops;
  checked decode_flops;
  checked kv_written_bytes;      // state written by this request: prefill plus decodes
  checked decode_written_bytes;  // state added during generation
  checked final_state_bytes;     // state kept at the end: S + P + G - 1 positions
  std::int64_t final_positions = 0;
  checked cumulative_read_bytes;   // history read by all decode steps: sum_j read(H + j)
  checked cumulative_read_tokens;  // sum_j (H + j)
};

/// One request of B=1: prefill (S cached, P new), then G-1 decodes at history S+P+j. The decode
/// steps are summed in closed form (tally/closed_form.h): the cost does not grow with G.
request_plan plan_request(const graph& g, std::int64_t cached, std::int64_t prompt,
                          std::int64_t generate);

/// The same, step by step through the itemised tallies: the oracle the closed form is tested
/// against (every layer kind has a closed form, so plan_request never falls back to it).
request_plan plan_request_stepwise(const graph& g, std::int64_t cached, std::int64_t prompt,
                                   std::int64_t generate);

struct capacity_plan {
  std::int64_t length = 0;
  checked memory;  // all cards together
  checked weight_bytes;
  checked workspace_bytes;
  checked per_request_bytes;  // whole state of one request at `length`
  checked free_bytes;         // memory - weights - workspace (negative: weights do not fit)
  std::int64_t requests = 0;  // floor(free / per_request), never a partial request
  bool weights_fit = true;
};

capacity_plan plan_capacity(const graph& g, const gpu_spec& gpu, std::int64_t gpus,
                            std::int64_t length, checked workspace, checked weight_bytes);

/// The one format every weight-matrix kind of `p` is stored in (attention, its output, routed
/// and shared experts, dense FFNs), or nullptr where they differ (gpt-oss: BF16 attention,
/// MXFP4 experts). DeepSeek-V3's is its FP8 blocks, though its `weights` default is BF16.
const dtype* matrices_format(const precision_spec& p);

/// Bytes of `params` weight parameters of the model: in the matrices' one format where they
/// share one (scales included), else at the model's own bytes per parameter (floor).
checked budget_bytes(const graph& g, checked params);

/// §2.6.2 inverted: the most parameters whose weights fit beside `requests` requests of
/// `length` tokens and the workspace, at the model's weight format. Negative free space gives 0.
checked max_params(const graph& g, const gpu_spec& gpu, std::int64_t gpus, std::int64_t length,
                   checked workspace, std::int64_t requests);

struct crossover_plan {
  std::optional<fraction> state_crossover_tokens;  // H*: fixed state / growth per token
  std::int64_t length = 0;
  checked weight_read_bytes;   // R_W: shared weights read once per batch
  checked context_read_bytes;  // one request's history read per decode step at `length`
  std::optional<std::int64_t> batch_read_crossover;  // smallest B with B*context > R_W
};

crossover_plan plan_crossover(const graph& g, std::int64_t length);

/// The longest context whose whole state fits in `budget` bytes; nullopt when the fixed state
/// alone does not fit. With no growing state, any length fits (returns INT64_MAX).
std::optional<std::int64_t> max_tokens_within(const graph& g, checked budget);

/// How routed tokens spread over experts (Example 2-4).
struct routing {
  enum class kind { uniform, concentrated, zipf } type = kind::uniform;
  double zipf_s = 1.0;  // popularity of the i-th expert ~ i^-s
};

/// Parses `uniform`, `concentrated` or `zipf:S`; throws spec_error naming --routing.
routing parse_routing(const std::string& text);

struct experts_plan {
  std::int64_t moe_layers = 0;
  std::int64_t experts = 0;            // E of the first MoE layer
  std::int64_t top_k = 0;              // k
  checked tokens;                      // m rows this call
  checked dispatches;                  // m*k token-to-expert assignments per layer
  double distinct_experts = 0;         // U: experts touched per layer
  double rows_per_expert = 0;          // t_e of a touched expert: m*k / U
  checked expert_params;               // one routed expert: 3 * d_e * f
  checked expert_bytes;                // at the weights' format
  checked layer_expert_bytes;          // all E experts of one layer
  checked all_routed_bytes;            // every routed expert of the model
  double layer_weight_read_bytes = 0;  // U * expert_bytes
  double weight_read_bytes = 0;        // over every MoE layer
  checked uniform_layer_read_bytes;    // the two extremes, for comparison
  checked concentrated_layer_read_bytes;
  checked flops;  // routed-expert matrix FLOPs over every MoE layer
};

/// Routed-expert work and weight reads for a batch of `tokens` rows (one decode step of B
/// requests has B rows). Throws spec_error when the model has no MoE layer.
experts_plan plan_experts(const graph& g, std::int64_t tokens, const routing& r);

/// plan_experts compiled once for a model and a routing: the routed GEMMs of every MoE layer
/// and the experts' popularities, so that each token count (a serving step's batch) costs one
/// pass over numbers. plan_experts is this form built and evaluated once.
class experts_form {
 public:
  /// Throws spec_error when the model has no MoE layer, or zipf routing over too many experts.
  experts_form(const graph& g, const routing& r);
  experts_plan at(std::int64_t tokens) const;

 private:
  struct shape {  // an expert count and top-k (routed GEMMs of one shape touch the same experts)
    std::int64_t instances;
    std::int64_t per_token;
    // zipf: log(1 - P(a token's k experts include the i-th)), so that m tokens' miss
    // probability is one exp, not one pow: the sum runs per expert per step shape, and pow was a
    // third of a DeepSeek-V3 serve point.
    std::vector<double> log_miss;
  };
  struct gemm {  // one routed GEMM of one MoE layer, in layer order
    std::size_t shape;
    double bytes;  // one instance at its format
  };
  routing r_;
  std::vector<shape> shapes_;
  std::vector<gemm> gemms_;
  checked flops_per_token_;   // sum over the GEMMs of 2 k x one expert's parameters
  checked all_routed_bytes_;  // every routed expert of the model
  checked first_one_;         // the first GEMM: one expert's parameters, bytes, all experts'
  checked first_bytes_;
  checked first_layer_bytes_;
};

}  // namespace calc
