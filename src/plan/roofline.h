// A lower bound on time (Chapter 1's method): a call cannot finish faster than its FLOPs at the
// accelerator's peak, nor faster than its bytes at the memory bandwidth.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"

namespace calc {

struct roofline_call {
  checked flops;         // F
  checked bytes;         // R: weights read, state read and written, embedding rows
  double compute_s = 0;  // F / peak FLOP/s
  double memory_s = 0;   // R / bandwidth
  double bound_s = 0;    // max of the two: no kernel can beat it
  std::string regime;    // "compute" or "memory"
};

/// Prefill of B requests (S cached, P new) and one decode step at S + P, on `gpus` cards whose
/// peaks and bandwidth add up; `fp8` uses the FP8 peak.
struct roofline_plan {
  roofline_call prefill;
  roofline_call decode;
  double decode_tokens_per_s = 0;  // B / decode bound: an upper bound on generation speed
  double ttft_s = 0;               // time to first token >= the prefill bound
};

roofline_plan plan_roofline(const graph& g, const gpu_spec& gpu, std::int64_t gpus,
                            std::int64_t batch, std::int64_t context, std::int64_t prompt,
                            bool fp8);

/// The roofline question: B requests of P new tokens over S cached on tp cards.
struct roofline_request {
  gpu_spec gpu;
  std::int64_t tp = 1;       // cards sharing the work: peaks and bandwidth add
  std::int64_t batch = 1;    // B
  std::int64_t context = 0;  // S
  std::int64_t prompt = 1;   // P
  bool fp8 = false;          // the FP8 tensor peak instead of BF16
};

struct roofline_result {
  std::string model;
  roofline_request asked;
  std::string peak;  // "fp8" or "bf16"
  roofline_plan bounds;
};

/// Throws spec_error naming `fp8` when the card has no FP8 peak.
roofline_result answer_roofline(const graph& g, const roofline_request& q);

}  // namespace calc
