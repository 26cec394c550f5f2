// Parts of a checkpoint beside the text model (`components:` in the model YAML): a vision tower
// and its projector, so far. Kept out of model_spec, which is the text model the graph, the tallies
// and the engine rules read: a component enters none of its totals, FLOPs or state, and is
// counted on its own (src/tally/component.h) and reported apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace calc {

/// One step of a component's projector: a linear map `in` x `out` (with `out` biases when
/// `bias`), a norm of `norm` values (a LayerNorm's bias beside its weight when `bias`), or a
/// learned vector of `vector` values (LLaVA-NeXT's image_newline); `count` alike steps
/// (Qwen3-VL's DeepStack mergers).
struct projector_part {
  std::int64_t in = 0;      // linear: input width
  std::int64_t out = 0;     // linear: output width
  std::int64_t norm = 0;    // a norm of this width instead of a linear map; 0 = a linear map
  std::int64_t vector = 0;  // a learned vector of this width instead; 0 = none
  bool bias = false;
  std::int64_t count = 1;

  bool operator==(const projector_part&) const = default;
};

/// A vision encoder (ViT) beside the text model: a patch embedding, a learned position table,
/// `layers` blocks of attention (Q, K, V, O, each hidden x hidden) and an MLP with two norms,
/// optional norms before and after the blocks, then the projector onto the text model. It has
/// no KV cache: a request's state is the text model's alone.
struct vit_spec {
  std::int64_t channels = 3;        // input channels of a patch
  std::int64_t patch = 0;           // patch side in pixels
  std::int64_t temporal_patch = 1;  // frames per patch (Qwen's 3-D patch embedding: 2)
  bool patch_bias = false;          // a bias on the patch embedding
  std::int64_t positions = 0;       // rows of a learned position table; 0 = none (RoPE)
  bool class_token = false;         // a learned class embedding of `hidden` (Llama 4)
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t heads = 0;           // divides hidden; changes no count
  bool gated_mlp = false;           // gate, up and down (SwiGLU); false: fc1 and fc2
  bool layer_norm = true;           // LayerNorm (weight and bias); false: RMSNorm (weight)
  bool attention_bias = false;      // biases on Q, K, V and O
  bool mlp_bias = false;            // biases on the MLP's projections
  bool pre_norm = false;            // a norm before the blocks (Pixtral's ln_pre)
  bool post_norm = false;           // a norm after the blocks (SigLIP's post_layernorm)
  std::vector<projector_part> projector;

  bool operator==(const vit_spec&) const = default;
};

/// A part of the checkpoint beside the text model, counted and reported apart from its totals
/// (`components` in the schema): so far a vision tower with its projector (`kind: vit`).
struct component_spec {
  std::string name;  // "vision_tower"
  vit_spec vit;
  dtype weights;     // storage format of every tensor (a plain bf16, fp16 or fp32)
};

}  // namespace calc
