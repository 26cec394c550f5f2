// Mixture of experts (§2.4, §2.5.1). Routed experts are one tensor of E instances of which each
// token uses top_k: with no dropped tokens, sum_e t_e = m*k rows pass through 3*d_e*f weights
// (2*d_e*f when the experts are ungated: up and down only).
#include "tally/rules.h"

namespace calc {

void add_tensors(const ffn_moe& f, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = &m.precision->weights;  // router and latent projections
  const dtype* norms = &m.precision->norms;
  checked d = m.hidden;
  checked width = f.latent > 0 ? checked(f.latent) : d;  // d_e: where the experts compute
  // Matrices taking d_e inputs per expert: gate and up when gated, up alone otherwise.
  checked in_mats = f.gated ? 2 : 1;
  if (f.router) {
    tensor router = matrix("router", "gate", category::other, d, f.experts, w);
    router.shards = 1;  // every card routes its own tokens
    out.push_back(router);
  }
  if (f.router_bias)
    out.push_back({"router", "e_score_correction_bias", category::other, f.experts,
                   m.precision->router_bias_format()});
  if (f.latent > 0) {
    out.push_back(matrix("latent", "latent_in", category::other, d, f.latent, w));
    out.push_back(matrix("latent", "latent_out", category::other, f.latent, d, w));
    if (f.latent_norm) out.push_back({"norms", "latent_norm", category::other, f.latent, norms});
  }
  tensor experts{"experts",
                 "routed_experts",
                 category::routed_experts,
                 checked(f.experts) * (in_mats + 1) * width * f.intermediate,
                 m.precision->expert_weights(),
                 true};
  // Each expert stores gate and up (width inputs each; up alone when ungated) and down
  // (intermediate inputs).
  experts.inputs = checked(f.experts) * (in_mats * width + f.intermediate);
  experts.shapes = {{width, checked(f.intermediate), checked(f.experts) * in_mats},
                    {checked(f.intermediate), width, checked(f.experts)}};
  experts.instances = f.experts;
  experts.per_token = f.top_k;
  out.push_back(experts);
  if (f.expert_bias) {
    // gpt-oss: gate_up_proj_bias [E, 2f] and down_proj_bias [E, d]; added, not multiplied, and
    // read only for the experts a call touches.
    tensor bias{"experts", "expert_biases", category::routed_experts,
                checked(f.experts) * (in_mats * f.intermediate + width), norms};
    bias.instances = f.experts;
    bias.per_token = f.top_k;
    out.push_back(bias);
  }
  if (f.shared_experts > 0) {
    // Stored as one MLP of intermediate shared_experts * shared_intermediate (Qwen2-MoE's
    // shared_expert, DeepSeek's shared_experts): gate and up take d inputs, down the rest;
    // ungated shared experts (Nemotron-H) have up and down only, as the routed ones.
    checked inter = checked(f.shared_experts) * f.shared_intermediate;
    tensor shared{"shared_experts",
                  "shared_experts",
                  category::dense_shared_ffn,
                  (in_mats + 1) * d * inter,
                  m.precision->shared_expert_weights(),
                  true};
    shared.inputs = in_mats * d + inter;
    shared.shapes = {{d, inter, in_mats}, {inter, d, 1}};
    out.push_back(shared);
  }
  if (f.shared_gate)
    out.push_back(matrix("shared_experts", "shared_expert_gate", category::other, d, 1, w));
}

}  // namespace calc
