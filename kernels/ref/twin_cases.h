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
  std::string kernel;  // gqa_decode, gqa_decode_paged, mla_decode, delta_step,
                       // delta_chunk_then_step, sparse_decode, moe_gemm
  int batch = 1;
  int q_heads = 0, kv_heads = 0, head_dim = 0, length = 0, page_tokens = 0;  // GQA
  int heads = 0, rank = 0, rope = 0;                                         // MLA, sparse, delta
  int dk = 0, dv = 0, tokens = 0, chunk = 0;                                 // delta rule
  int width = 0, window = 0, n_entries = 0, selected = 0;                    // sparse
  int experts = 0, top_k = 0, in = 0, out = 0;                               // MoE
  int split_blocks = 264;  // GQA: blocks wanted over the GPU (2 x 132 SMs on an H200)
};

/// An output tensor with the tolerance it is checked at and why (the rounding model of
/// twin_cases.cpp: each element is a sum of terms, each term off by a relative `unit` between
/// the two implementations compared).
struct checked_output {
  std::string name;
  std::vector<float> values;
  std::vector<float> sigma;  // per element: modelled RMS of got - ref (unit/sqrt 3 x |terms|)
  double nmse_max = 0;       // whole tensor: 2 x the modelled NMSE
  double unit = 0;           // the model's relative error per term
  std::string why;           // which rounding the unit stands for
};

/// Per element, got - ref within this many modelled standard deviations.
constexpr double kSigmas = 8;

/// The relative error per term between two implementations of an output (twin_cases.cpp):
/// FP32 sums of `sum` terms whose weights come from `dot`-long FP32 dot products; `exp` when
/// the weights pass through exp (a GPU's __expf); `bf16_weights` when one side rounds the
/// weights to BF16 before the last sum (MLA's second GEMM).
double rounding_unit(long dot, long sum, bool exp, bool bf16_weights);

/// The tolerance of `values` from their rounding energy (decode_ref.h) and the model's unit.
checked_output with_tolerance(std::string name, std::vector<float> values,
                              const std::vector<float>& energy, double unit, std::string why);

/// The plain twins' outputs with their tolerances, as the GPU module and make_case use them.
checked_output gqa_reference(const bf16_bits* q, const bf16_bits* k, const bf16_bits* v,
                             const gqa_decode_params& p);
checked_output mla_reference(const bf16_bits* q, const bf16_bits* cache,
                             const mla_decode_params& p);
checked_output sparse_reference(const bf16_bits* q, const bf16_bits* window,
                                const bf16_bits* entries, const int* selected,
                                const sparse_decode_params& p);
checked_output moe_reference(const bf16_bits* x, const bf16_bits* w, const moe_gemm_params& p);
/// {out, state}; `state` is the state before the step and is advanced. `unit` 0: the step's
/// own model; else the unit of the prefill that produced the state, whose energy
/// `state_energy` carries (empty: an exact state).
std::vector<checked_output> delta_step_reference(const float* q, const float* k, const float* v,
                                                 const float* log_decay, const float* beta,
                                                 std::vector<float>& state,
                                                 const delta_step_params& p, double unit = 0,
                                                 std::vector<float> state_energy = {});

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

/// A kernel bug the checks must catch, emulated on the blocked twin's run (kernels_test.cpp
/// injects each and asserts the check fails).
enum class fault {
  none,
  drop_token,  // the last token (record, selected entry, prefill position, routed row) skipped
  swap_heads,  // heads 0 and 1 of request 0 exchanged (MoE: experts' weights exchanged)
  skip_decay,  // one position's decay not applied (delta rule)
  unwritten,   // one output element never written (left as the NaN poison)
};
const char* fault_name(fault f);
/// The faults that apply to a kernel kind.
std::vector<fault> faults_of(const std::string& kernel);

/// The blocked twins' outputs (decode_blocked.h), in the order of `reference`, with `f`
/// emulated.
std::vector<std::vector<float>> blocked_outputs(const case_data& c, fault f = fault::none);

/// Per element |got - ref| <= kSigmas x sigma, NMSE over the tensor <= nmse_max, non-finite
/// values counted apart (a NaN-poisoned output the kernel never wrote fails here).
struct comparison {
  double max_abs_error = 0;
  double max_sigmas = 0;  // the largest |got - ref| / sigma
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
