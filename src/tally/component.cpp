// A vision encoder's parameters from its shapes: the patch embedding, the position table, the
// blocks and the projector, each tensor on its own line.
#include "tally/component.h"

namespace calc {

namespace {

/// A norm of `width` values: RMSNorm a weight, LayerNorm a weight and a bias.
checked norm(checked width, bool layer_norm) { return layer_norm ? 2 * width : width; }

}  // namespace

component_tally tally_component(const component_spec& c) {
  const vit_spec& v = c.vit;
  const checked h = v.hidden, f = v.intermediate;
  component_tally t;
  t.name = c.name;
  checked embed = checked(v.channels) * v.temporal_patch * v.patch * v.patch * h;  // patch conv
  if (v.patch_bias) embed += h;                       // its bias
  if (v.class_token) embed += h;                      // class embedding
  embed += checked(v.positions) * h;                  // learned position table
  if (v.pre_norm) embed += norm(h, v.layer_norm);     // norm before the blocks
  t.parts.push_back({"patch and position embedding", embed});

  checked block = 4 * h * h;                          // Q, K, V and O
  if (v.attention_bias) block += 4 * h;               // their biases
  if (v.gated_mlp) {
    block += 3 * h * f;                               // gate, up (h -> f), down (f -> h)
    if (v.mlp_bias) block += 2 * f + h;
  } else {
    block += 2 * h * f;                               // fc1 (h -> f), fc2 (f -> h)
    if (v.mlp_bias) block += f + h;
  }
  block += 2 * norm(h, v.layer_norm);                 // before attention and before the MLP
  checked blocks = block * v.layers;
  if (v.post_norm) blocks += norm(h, v.layer_norm);   // norm after the blocks
  t.parts.push_back({"blocks", blocks});

  checked projector;
  for (const projector_part& p : v.projector) {
    checked one = p.vector > 0 ? checked(p.vector)                                 // vector
                  : p.norm > 0 ? (p.bias ? 2 * checked(p.norm) : checked(p.norm))  // norm
                               : checked(p.in) * p.out + (p.bias ? p.out : 0);     // linear
    projector += one * p.count;
  }
  t.parts.push_back({"projector", projector});
  for (const component_part& p : t.parts) t.params += p.params;
  t.bytes = c.weights.bytes(t.params);
  return t;
}

checked component_bytes(const std::vector<component_spec>& components) {
  checked bytes;
  for (const component_spec& c : components) bytes += tally_component(c).bytes;
  return bytes;
}

}  // namespace calc
