// Dense feed-forward: SwiGLU (§2.1.4: 3*d*f parameters, 6*m*d*f FLOPs) and the two-matrix MLP
// of GPT-2 (2*d*f parameters, 4*m*d*f FLOPs).
#include "tally/rules.h"

namespace calc {

void add_tensors(const ffn_swiglu& f, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->dense_ffn_weights();
  checked d = m.hidden;
  out.push_back(matrix("ffn", "gate_proj", category::dense_shared_ffn, d, f.intermediate, w));
  out.push_back(matrix("ffn", "up_proj", category::dense_shared_ffn, d, f.intermediate, w));
  out.push_back(matrix("ffn", "down_proj", category::dense_shared_ffn, f.intermediate, d, w));
  if (f.bias) {  // Phi-3-small: up_proj's 2f-wide bias (both halves) and down_proj's
    out.push_back({"norms", "gate_bias", category::other, f.intermediate, &m.precision->norms});
    out.push_back({"norms", "up_bias", category::other, f.intermediate, &m.precision->norms});
    out.push_back({"norms", "down_bias", category::other, d, &m.precision->norms});
  }
}

void add_tensors(const ffn_mlp& f, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = m.precision->dense_ffn_weights();
  checked d = m.hidden;
  out.push_back(matrix("ffn", "up_proj", category::dense_shared_ffn, d, f.intermediate, w));
  out.push_back(matrix("ffn", "down_proj", category::dense_shared_ffn, f.intermediate, d, w));
  if (f.bias) {
    out.push_back({"norms", "up_bias", category::other, f.intermediate, &m.precision->norms});
    out.push_back({"norms", "down_bias", category::other, d, &m.precision->norms});
  }
  if (f.activation_params > 0)  // xIELU's alpha_p and alpha_n: scalars, stored like the norms
    out.push_back({"norms", "activation_params", category::other, f.activation_params,
                   &m.precision->norms});
}

}  // namespace calc
