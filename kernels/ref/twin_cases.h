// One kernel call as data: its shape, seeded random inputs, the plain twin's outputs (the
// reference) and the blocked twin's. The CUDA module uploads the same inputs and compares the
// kernel's outputs with the same reference; CI compares the blocked twin with it (no GPU).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "decode_params.h"

namespace calc::kernels {

/// The shape of one kernel call; the fields a kernel does not use stay 0.
struct case_shape {
  std::string kernel;  // gqa_decode, gqa_decode_paged, mla_decode, delta_step, delta_chunk_then_step,
                       // sparse_decode, moe_gemm
  int batch = 1;
  int q_heads = 0, kv_heads = 0, head_dim = 0, length = 0, page_tokens = 0;  // GQA
  int heads = 0, rank = 0, rope = 0;                                          // MLA, sparse, delta
  int dk = 0, dv = 0, tokens = 0, chunk = 0;                                  // delta rule
  int width = 0, window = 0, n_entries = 0, selected = 0;                     // sparse
  int experts = 0, top_k = 0, in = 0, out = 0;                                // MoE
  int split_blocks = 264;  // GQA: blocks wanted over the GPU (2 x 132 SMs on an H200)
};

/// An output tensor with the tolerance it is checked at and why.
struct checked_output {
  std::string name;
  std::vector<float> values;
  double atol = 0;      // per element: |got - ref| <= atol + |ref| * 2^-8
  double nmse_max = 0;  // whole tensor
  std::string why;      // how the tolerance was chosen
};

/// Host inputs of a case, by tensor name, and the parameter structs (pointers unset).
struct case_data {
  case_shape shape;
  std::map<std::string, std::vector<bf16_bits>> bf16;
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<int>> i32;
  gqa_decode_params gqa{};
  mla_decode_params mla{};
  delta_step_params delta{};
  delta_chunk_params chunk{};
  sparse_decode_params sparse{};
  moe_gemm_params moe{};
  int moe_rows = 0;
  std::vector<checked_output> reference;  // the plain twins' outputs (decode_ref.h)
};

/// Seeded inputs (uniform, BF16-rounded where BF16) and the reference outputs. Throws
/// std::invalid_argument for an unknown kernel or an inconsistent shape.
case_data make_case(const case_shape& s, std::uint64_t seed);

/// The blocked twins' outputs (decode_blocked.h), in the order of `reference`.
std::vector<std::vector<float>> blocked_outputs(const case_data& c);

/// Per element `atol + |ref| * 2^-8`, NMSE over the tensor, non-finite values counted apart
/// (a NaN-poisoned output the kernel never wrote fails here).
struct comparison {
  double max_abs_error = 0;
  double nmse = 0;
  long out_of_tolerance = 0;
  long non_finite = 0;
  bool pass = false;
};
comparison compare_outputs(const std::vector<float>& got, const checked_output& ref);

/// Routing of `tokens` tokens to `top_k` distinct experts each: token t takes experts
/// (t * top_k + j) mod experts, so tokens touch min(tokens * top_k, experts) experts, the most
/// the tally allows; returns offsets [experts + 1] over rows sorted by expert.
std::vector<int> disjoint_routing(int tokens, int top_k, int experts);

}  // namespace calc::kernels
